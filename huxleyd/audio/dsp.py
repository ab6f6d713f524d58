"""Which arithmetic the audio thread runs: the C kernel (``_dsp``) or the numpy reference.

``huxleyd.audio._dsp`` (built from ``_dsp.c`` by ``pip install``) does each
period's mixing, limiting, resampling and PCM conversion in a handful of calls
that keep the GIL throughout. The numpy code it replaces stays beside it, in
the same classes, as the reference the property tests compare it with and as
the fallback where no compiler built the extension (slower, and under a busy
Python thread each large ufunc releases and re-acquires the GIL).

Classes take ``kernel=`` (default :data:`KERNEL`): pass ``None`` for numpy.
"""

from __future__ import annotations

from types import ModuleType

try:
    from huxleyd.audio import _dsp

    KERNEL: ModuleType | None = _dsp
except ImportError:  # no compiler at install time: the numpy path
    KERNEL = None


def describe(kernel: ModuleType | None = KERNEL) -> str:
    """For logs and status: which path runs."""
    return "C kernel (_dsp)" if kernel is not None else "numpy (the C kernel is not built)"
