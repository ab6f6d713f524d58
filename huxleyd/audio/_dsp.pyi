# The C kernel's signatures (huxleyd/audio/csrc/_dsp.c); buffers are C-contiguous numpy arrays.
from typing import Any

def mix_source(
    mix: Any,
    ring: Any,
    start: int,
    count: int,
    offset: int,
    g0: float,
    g1: float,
    unit: Any,
    fade: Any | None,
    /,
) -> None: ...
def gain(buf: Any, unit: Any, g0: float, g1: float, /) -> None: ...
def limit(
    mix: Any,
    gain: float,
    threshold: float,
    release_step: float,
    knee: float,
    attack: Any,
    unit: Any,
    /,
) -> tuple[float, int]: ...
def resample(ext: Any, block: Any, taps: Any, out: Any, up: int, down: int, /) -> None: ...
def play(
    mix: Any, ext: Any | None, taps: Any | None, up: int, down: int, device: Any, out: Any, /
) -> tuple[float, float]: ...
def capture(
    buffer: Any,
    channel: int,
    mono: Any,
    ext: Any | None,
    taps: Any | None,
    up: int,
    down: int,
    resampled: Any | None,
    pcm: Any | None,
    /,
) -> tuple[float, float]: ...

# The mixer core (csrc/_dspmix.c): the struct Python packs (huxleyd/audio/corestate.py).
SOURCE_ORDER: tuple[str, str, str, str]
STATE_SIZE: int
MIXER_FIELDS: tuple[tuple[str, int, str], ...]
"""(core field, byte offset in mc_mixer, struct code: Q, d or i)."""
SOURCE_FIELDS: tuple[tuple[str, int, str], ...]
"""(core field, byte offset in mc_source, struct code)."""
SOURCE_OFFSETS: tuple[int, int, int, int]
"""Where each source's mc_source starts in mc_mixer, in SOURCE_ORDER."""

def mix_period(
    out: Any,
    state: bytearray,
    rings: tuple[Any, ...],
    unit: Any,
    fade_out: Any,
    fade_in: Any,
    attack: Any,
    /,
) -> None: ...
