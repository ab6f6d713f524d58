"""The C kernel (``_dsp``): the audio thread's per-period arithmetic.

``huxleyd.audio._dsp`` (built from ``_dsp.c`` by ``pip install``; required since
issue 39) does each period's mixing (the mixer core: :mod:`huxleyd.audio.mixer`,
the only mixer), limiting, resampling and PCM conversion in a handful of calls
that keep the GIL throughout. The numpy resampling and conversions stay beside
it in their classes, as the reference the property tests compare it with (the
numpy mixer is the tests' oracle, ``tests/oracles/numpy_mixer.py``).

Classes take ``kernel=`` (default :data:`KERNEL`): ``None`` runs their numpy
path (the tests' comparisons); the mix is the C core whatever it says. An
install that lost the extension finds :data:`KERNEL` None and plays nothing
(:data:`huxleyd.audio.mixer.NOT_BUILT`).
"""

from __future__ import annotations

from types import ModuleType

try:
    from huxleyd.audio import _dsp

    KERNEL: ModuleType | None = _dsp
except ImportError:  # a broken install (setup requires it): nothing plays, said
    KERNEL = None


def describe(kernel: ModuleType | None = KERNEL) -> str:
    """For logs and status: which path runs."""
    return "C kernel (_dsp)" if kernel is not None else "numpy (the C kernel is not built)"
