"""The end of the user's speech in a wake turn: a local energy detector.

Why local, not the provider's server VAD: it works the same with every
provider (OpenAI and xAI have a server VAD, Gemini's is configured apart,
the cascade has none), the turn then ends through the very path a button
release takes (commit + ``response.create``, or "too short"), and what the
provider hears stays bounded by this device's own rule, including
:attr:`WakeSettings.max_turn_s`.

The detector tracks the background's level (a slow follower of the quiet
frames' energy) and calls a frame speech when it stands clearly above it
and above an absolute floor. A turn ends after ``end_silence_ms`` of
non-speech once speech was heard, after ``no_speech_s`` with none (the turn
is dropped), or at ``max_turn_s``.
"""

from __future__ import annotations

import enum
import math

import numpy as np

from huxleyd.handsfree.settings import WakeSettings
from huxleyd.pcm import pcm16_view

SPEECH_OVER_NOISE_DB = 9.0
"""How far above the background's level a frame counts as speech."""
SPEECH_FLOOR_DBFS = -50.0
"""Never speech below this, however quiet the room."""
NOISE_START_DBFS = -60.0
NOISE_FOLLOW = 0.05
"""Per quiet frame, how much of the gap to the frame's level the background moves."""


class Verdict(enum.Enum):
    GOING_ON = "going_on"
    ENDED = "ended"
    """The user spoke and stopped (or talked until the maximum): commit."""
    NOTHING_SAID = "nothing_said"
    """No speech after the wake word: drop the turn."""


def level_dbfs(pcm: bytes) -> float:
    samples = pcm16_view(pcm[: len(pcm) // 2 * 2]).astype(np.float64)
    if len(samples) == 0:
        return -120.0
    rms = math.sqrt(float(np.mean(samples * samples)))
    return -120.0 if rms < 1.0 else 20.0 * math.log10(rms / 32768.0)


class EndOfSpeech:
    """One wake turn's end-of-speech detector; :meth:`frame` once per mic frame."""

    def __init__(self, settings: WakeSettings, *, noise_dbfs: float = NOISE_START_DBFS) -> None:
        self._settings = settings
        self._noise = noise_dbfs
        self._elapsed_ms = 0.0
        self._quiet_ms = 0.0
        self.speech_ms = 0.0

    @property
    def noise_dbfs(self) -> float:
        """The background level learned so far (carried into the next turn)."""
        return self._noise

    def frame(self, pcm: bytes, duration_ms: float) -> Verdict:
        level = level_dbfs(pcm)
        self._elapsed_ms += duration_ms
        if level >= max(self._noise + SPEECH_OVER_NOISE_DB, SPEECH_FLOOR_DBFS):
            self.speech_ms += duration_ms
            self._quiet_ms = 0.0
        else:
            self._quiet_ms += duration_ms
            self._noise += NOISE_FOLLOW * (level - self._noise)
        if self._elapsed_ms >= self._settings.max_turn_s * 1000.0:
            return Verdict.ENDED if self.speech_ms else Verdict.NOTHING_SAID
        if self.speech_ms and self._quiet_ms >= self._settings.end_silence_ms:
            return Verdict.ENDED
        if not self.speech_ms and self._elapsed_ms >= self._settings.no_speech_s * 1000.0:
            return Verdict.NOTHING_SAID
        return Verdict.GOING_ON
