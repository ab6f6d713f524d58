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
