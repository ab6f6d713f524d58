"""The wake-word model: microWakeWord through ``pymicro-wakeword``, when installed.

``pymicro-wakeword`` ships its TensorFlow Lite runtime and four models in
its wheel (x86_64 and aarch64, manylinux 2.35); where it has no wheel
(32-bit Raspberry Pi OS) the import fails and :func:`load_detector` says so
in one line the daemon shows (status, doctor, journal): the button still
works, only the wake word is off.

The model wants 16 kHz PCM16 in 10 ms chunks; the mic frames arrive at the
provider's rate (24 kHz, or 16 kHz), so :class:`MicroWakeDetector` resamples
them with the engine's own streaming polyphase filter, here on the
listener's thread, never on the audio thread. With ``cancel_echo`` the
16 kHz mic goes through Speex's echo canceller first, its far end the
engine's played periods (:meth:`MicroWakeDetector.played`) resampled the
same way: the wake word is then heard over the device's own voice.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np

from huxleyd.audio.echo import EchoCanceller, FarEnd
from huxleyd.audio.resample import StreamResampler
from huxleyd.handsfree.settings import BUILTIN_MODELS
from huxleyd.pcm import RATE_HZ, pcm16_view

MODEL_RATE_HZ = 16_000
ECHO_BAND = 0.9
"""With the echo canceller, the mic and its far end are resampled to 16 kHz keeping
this much of the 8 kHz band (to 7.2 kHz at -6 dB): the usual filter folds what
lies just above 8 kHz into 7-8 kHz, and the mic's folded part, having crossed
the room at another frequency, cannot be cancelled. On the clocked card that
band held nearly all the residual echo (ERLE there 1-14 dB, 36-52 dB below
7 kHz) and kept the whole at 20-24 dB."""
REFRACTORY_S = 1.0
"""After a detection, the model is reset and hears nothing for this long: one
phrase is one detection (its probability stays high for several windows)."""


class WakeDetector(Protocol):
    """Fed mic PCM16 at its input rate, in any lengths; says when it heard the wake word."""

    name: str

    def feed(self, pcm: bytes, captured_at: float) -> bool:
        """True when the wake word ended within ``pcm`` (first sample captured at
        ``captured_at``, the engine clock)."""
        ...

    def played(self, pcm: bytes, dac_at: float) -> None:
        """What the speaker played (PCM16, 24 kHz), first sample at the DAC at ``dac_at``:
        the echo canceller's far end (ignored without one)."""
        ...

    def reset(self) -> None:
        """Forget what was heard (a turn began another way, the mic was off)."""
        ...


class WakeUnavailable(Exception):
    """The wake word cannot run here; the message is the line status and doctor show."""


class MicroWakeDetector:
    """A microWakeWord model fed from ``input_rate_hz`` PCM16."""

    def __init__(self, model: str, input_rate_hz: int, *, cancel_echo: bool = False) -> None:
        from pymicro_wakeword import MicroWakeWord, MicroWakeWordFeatures, Model

        if model in BUILTIN_MODELS:
            self._model = MicroWakeWord.from_builtin(Model(model))
        else:
            self._model = MicroWakeWord.from_config(Path(model))
        self._new_features: Callable[[], MicroWakeWordFeatures] = MicroWakeWordFeatures
        self._features = self._new_features()
        self.name = self._model.wake_word
        self._block_in = input_rate_hz // 100
        # one design on both of the canceller's paths: the same delay and the same band
        # (where the mic comes at 16 kHz already, it carries the engine's full band)
        band = ECHO_BAND if cancel_echo and input_rate_hz != MODEL_RATE_HZ else 1.0
        self._resampler = StreamResampler(input_rate_hz, MODEL_RATE_HZ, self._block_in, band=band)
        self._pending = np.zeros(0, dtype=np.float32)
        self._out = np.zeros(self._resampler.block_out, dtype=np.float32)
        self._deaf_samples = 0
        """Model-rate samples still to ignore after a detection (:data:`REFRACTORY_S`)."""
        self._input_rate = input_rate_hz
        self._pending_at = 0.0
        """The capture time of the first pending sample."""
        self.echo: EchoCanceller | None = None
        """The canceller the mic goes through (``cancel_echo``), or None."""
        self.echo_tap: Callable[[np.ndarray, np.ndarray], None] | None = None
        """Called with each 16 kHz block before and after the canceller: what a
        measurement of the canceller on the daemon's own path reads (ERLE)."""
        if cancel_echo:
            # the same resampler design on both paths: the same delay, so the
            # far end's DAC times and the mic's capture times stay comparable
            self.echo = EchoCanceller(FarEnd(MODEL_RATE_HZ), suppress=False)
            self._far_resampler = StreamResampler(RATE_HZ, MODEL_RATE_HZ, RATE_HZ // 100, band=band)
            self._far_out = np.zeros(MODEL_RATE_HZ // 100, dtype=np.float32)

    def played(self, pcm: bytes, dac_at: float) -> None:
        if self.echo is None:
            return
        samples = pcm16_view(pcm[: len(pcm) // 2 * 2]).astype(np.float32)
        block = RATE_HZ // 100
        for start in range(0, len(samples) - block + 1, block):
            self._far_resampler.process(samples[start : start + block], self._far_out)
            out = np.clip(np.rint(self._far_out), -32768, 32767).astype("<i2")
            self.echo.far.played(out.tobytes(), dac_at + start / RATE_HZ)

    def feed(self, pcm: bytes, captured_at: float = 0.0) -> bool:
        samples = pcm16_view(pcm[: len(pcm) // 2 * 2]).astype(np.float32)
        self._pending_at = captured_at - len(self._pending) / self._input_rate
        self._pending = np.concatenate((self._pending, samples))
        heard = False
        while len(self._pending) >= self._block_in:
            block, self._pending = (
                self._pending[: self._block_in],
                self._pending[self._block_in :],
            )
            self._resampler.process(block, self._out)
            chunk = np.clip(np.rint(self._out), -32768, 32767).astype("<i2")
            if self.echo is not None:
                clean = np.frombuffer(
                    self.echo.process(chunk.tobytes(), self._pending_at), dtype="<i2"
                )
                if self.echo_tap is not None:
                    self.echo_tap(chunk, clean)
                chunk = clean
            self._pending_at += self._block_in / self._input_rate
            heard = self._chunk(chunk) or heard
        return heard

    def _chunk(self, chunk: np.ndarray) -> bool:
        if self._deaf_samples > 0:
            self._deaf_samples -= len(chunk)
            return False
        for features in self._features.process_streaming(chunk.tobytes()):
            if self._model.process_streaming(features):
                self._forget()
                self._deaf_samples = int(REFRACTORY_S * MODEL_RATE_HZ)
                return True
        return False

    def reset(self) -> None:
        self._forget()
        self._pending = np.zeros(0, dtype=np.float32)
        self._resampler.reset()
        self._deaf_samples = 0

    def _forget(self) -> None:
        self._model.reset()
        self._features = self._new_features()


def load_detector(model: str, input_rate_hz: int, *, cancel_echo: bool = False) -> WakeDetector:
    """The detector for ``model`` (checked by the configuration), or :class:`WakeUnavailable`."""
    try:
        import pymicro_wakeword  # noqa: F401
    except ImportError:
        raise WakeUnavailable(
            "wake word off: pymicro-wakeword is not installed (no wheel for this "
            "platform?); the button works"
        ) from None
    try:
        return MicroWakeDetector(model, input_rate_hz, cancel_echo=cancel_echo)
    except (OSError, ValueError, KeyError) as exc:
        raise WakeUnavailable(f"wake word off: model {model!r} did not load: {exc}") from exc
