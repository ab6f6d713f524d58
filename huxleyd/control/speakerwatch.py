"""The speaker in the degraded record: a device that will not open, or whose writes fail.

Layer: control (what admins are told), over the engine's own facts. The
engine reopens a lost or failing device by itself every
``audio.reopen_interval_s`` and counts each failure (``EngineStats.faults``,
``open_error``); that alone let ``doctor`` say "open (recovered from 40
faults)" about a speaker that failed every write, and nothing at all about one
that never opened (``/dev/full``). :class:`SpeakerWatch` listens to the
engine's device state and keeps one ``speaker`` part in the record status,
doctor and the journal read: reported when the device is lost (why: the last
fault, or why it did not open), cleared only after it stayed open
``calm_s`` without a new fault. The advice fits the error (:func:`speaker_fix`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from huxleyd.audio.types import DeviceState, EngineStats
from huxleyd.degraded import Degraded

PART = "speaker"


class Engine(Protocol):
    """What the watch needs of :class:`~huxleyd.audio.engine.AudioEngine`."""

    def stats(self) -> EngineStats: ...

    def on_device_state(self, listener: Callable[[DeviceState], None]) -> None: ...


def speaker_fix(error: str, *, file: str) -> str:
    """What the admin does about ``error`` (the device's words); ``file`` is the
    configuration, where the device is named."""
    words = error.lower()
    if "no space left" in words or "errno 28" in words:
        return (
            "the speaker's device takes no data (a file on a full disk, or /dev/full): "
            f"check audio.playback_device / audio.speaker_wav in {file} and the disk it writes to"
        )
    if "permission denied" in words or "errno 13" in words:
        return "add the service user to the audio group (`sudo usermod -aG audio huxley`)"
    if "busy" in words:
        return "another program holds the card: `fuser -v /dev/snd/*` names it; stop it"
    if "no such" in words or "unknown pcm" in words or "not found" in words:
        return (
            f"the device named in {file} (or the board profile) does not exist: "
            "`aplay -L` lists the names"
        )
    return (
        "`dmesg` and `aplay -l` say what the card does; check its cable and the board "
        "profile's device names (the daemon retries by itself)"
    )


class SpeakerWatch:
    """Keeps the ``speaker`` part of ``degraded`` in step with the engine (see the module)."""

    def __init__(
        self,
        engine: Engine,
        degraded: Degraded,
        *,
        calm_s: float,
        reopen_s: float,
        config_file: str,
        call_later: Callable[[float, Callable[[], None]], object] | None = None,
    ) -> None:
        self._engine = engine
        self._degraded = degraded
        self._calm_s = calm_s
        self._reopen_s = reopen_s
        self._file = config_file
        self._call_later = call_later
        self._faults_seen = 0
        self._opened = 0
        """Bumped at each open: a calm check of an older open does nothing."""

    def attach(self) -> None:
        """Listen to the engine (before it starts: a device that never opens counts)."""
        self._engine.on_device_state(self.on_state)

    def on_state(self, state: DeviceState) -> None:
        stats = self._engine.stats()
        if state is DeviceState.LOST:
            self._lost(stats)
        elif state is DeviceState.OPEN and self._degraded.get(PART) is not None:
            self._opened += 1
            opened, faults = self._opened, stats.faults
            self._later(self._calm_s, lambda: self._calm(opened, faults))

    def _lost(self, stats: EngineStats) -> None:
        every = f"tried again every {self._reopen_s:g} s"
        if stats.faults > self._faults_seen and stats.last_fault:
            error = stats.last_fault
            what = f"writes failing: {error} ({stats.faults} failure(s) since start); {every}"
        elif stats.open_error:
            error = stats.open_error
            what = f"cannot open the device: {error}; {every}"
        else:
            error = "lost"
            what = f"the device was lost; {every}"
        self._faults_seen = stats.faults
        fix = speaker_fix(error, file=self._file)
        self._degraded.report(PART, what, file=self._file, cue=False, fix=fix)

    def _calm(self, opened: int, faults: int) -> None:
        """``calm_s`` after an open: still that open, still open, no new fault: it works."""
        stats = self._engine.stats()
        if (
            opened == self._opened
            and stats.device_state is DeviceState.OPEN
            and stats.faults == faults
        ):
            self._degraded.clear(PART)

    def _later(self, delay_s: float, callback: Callable[[], None]) -> None:
        if self._call_later is not None:
            self._call_later(delay_s, callback)
        else:
            asyncio.get_running_loop().call_later(delay_s, callback)


def watch_speaker(engine: Engine, degraded: Degraded, *, reopen_s: float, file: str) -> None:
    """Attach a :class:`SpeakerWatch` to ``engine`` (before it starts): cleared once the
    device stayed open three retry intervals (at least 1 s) without a new fault."""
    SpeakerWatch(
        engine, degraded, calm_s=max(3 * reopen_s, 1.0), reopen_s=reopen_s, config_file=file
    ).attach()
