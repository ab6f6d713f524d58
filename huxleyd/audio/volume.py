"""User volume: the ALSA hardware mixer, or the engine's software gain when a card has none.

Three small interfaces (conventions rule 3, docs/conventions.md):

- :class:`VolumeControl` — ``set_level(percent)`` returns the level read
  back from the control; ``get_level()``. Implemented by
  :class:`AlsaMixerVolume` (drives ``amixer`` as a subprocess) and
  :class:`SoftwareVolume` (the engine's master gain stage).
- :class:`LevelStore` — where the level persists (the daemon backs it with
  SQLite); :class:`PersistentVolume` saves every change and restores the
  last level at start; its :meth:`~PersistentVolume.change` says what a
  change really did (:class:`LevelChange`: the level read back, and whether
  it was saved or a restart returns to another).
- :func:`open_volume` picks the hardware control when one is found.

Percent maps to decibels on a perceptual (cubic) curve: ``dB = 60 ·
log10(percent / 100)`` — 100 % is 0 dB, 50 % −18 dB, 25 % −36 dB, 0 %
mute — the curve ALSA's own "mapped volume" uses for wide ranges, so equal
steps sound like equal steps. Ducking is a mixer gain on one source and
never goes through here: the user's level is never changed by it.
"""

from __future__ import annotations

import asyncio
import math
import os
import re
from dataclasses import dataclass
from typing import Protocol

from huxleyd.audio.settings import AudioSettings
from huxleyd.errors import AudioDeviceError
from huxleyd.logs import get_logger
from huxleyd.pcm import db_to_gain

log = get_logger("huxleyd.audio")

CURVE_RANGE_DB = 60.0
"""dB per decade of percent: 100 % → 0 dB, 10 % → −60 dB, 1 % → −120 dB (0 % mutes)."""

PREFERRED_CONTROLS = ("Master", "PCM", "Speaker", "Playback", "Headphone", "Digital")
"""Scanned in this order when ``audio.mixer_control`` is not set."""


def percent_to_db(percent: int) -> float:
    """The perceptual curve: 100 → 0 dB, 50 → −18 dB, 0 → −inf."""
    if percent <= 0:
        return -math.inf
    return CURVE_RANGE_DB * math.log10(min(percent, 100) / 100.0)


def db_to_percent(db: float) -> int:
    """Inverse of :func:`percent_to_db`, rounded and clamped to 0..100."""
    if db == -math.inf:
        return 0
    return max(0, min(100, round(100.0 * math.pow(10.0, db / CURVE_RANGE_DB))))


def _clamp(percent: int) -> int:
    if not isinstance(percent, int) or isinstance(percent, bool):
        raise TypeError(f"volume level must be an int percent, got {percent!r}")
    return max(0, min(100, percent))


class VolumeControl(Protocol):
    """The user's volume, 0-100."""

    async def set_level(self, percent: int) -> int:
        """Set the level; return the level actually in effect (read back)."""
        ...

    async def get_level(self) -> int: ...


class LevelStore(Protocol):
    """Persistence for the volume level (SQLite in the daemon, memory in tests)."""

    async def load(self) -> int | None: ...

    async def save(self, level: int) -> None: ...


class GainStage(Protocol):
    """What :class:`SoftwareVolume` drives: ``AudioEngine.set_master_gain``."""

    def set_master_gain(self, gain: float) -> None: ...


class SoftwareVolume:
    """Volume as the engine's master gain (for cards without a hardware control)."""

    def __init__(self, stage: GainStage, *, level: int = 100) -> None:
        self._stage = stage
        self._level = _clamp(level)
        stage.set_master_gain(db_to_gain(percent_to_db(self._level)))

    async def set_level(self, percent: int) -> int:
        self._level = _clamp(percent)
        self._stage.set_master_gain(db_to_gain(percent_to_db(self._level)))
        return self._level

    async def get_level(self) -> int:
        return self._level


@dataclass(frozen=True, slots=True)
class MixerReading:
    """One control as ``amixer sget`` shows it."""

    name: str
    db: float | None
    """The first channel's gain in dB, or None when the control has no dB scale."""
    percent: int
    """amixer's own (raw, linear) percent of the first channel."""
    switch_on: bool | None
    """The mute switch (None when the control has none)."""


_CHANNEL_LINE = re.compile(
    r"^\s+[^:]+:\s*(?:Playback\s+)?-?\d+\s+\[(\d+)%\](?:\s+\[(-?[\d.]+|-inf)dB\])?(?:\s+\[(on|off)\])?"
)
_CONTROL_LINE = re.compile(r"^Simple mixer control '(.+)',(\d+)")


def parse_sget(name: str, text: str) -> MixerReading:
    """Parse ``amixer sget`` output (the first channel line that has a level)."""
    for line in text.splitlines():
        match = _CHANNEL_LINE.match(line)
        if match:
            db_text = match.group(2)
            db = None if db_text is None else (-math.inf if db_text == "-inf" else float(db_text))
            switch = match.group(3)
            return MixerReading(
                name, db, int(match.group(1)), None if switch is None else switch == "on"
            )
    raise AudioDeviceError(
        f"amixer: no level found for control {name!r} in: {text.strip()[:200]!r}"
    )


def parse_playback_controls(text: str) -> list[str]:
    """Names of controls in ``amixer scontents`` output that have a playback volume."""
    names: list[str] = []
    current: str | None = None
    for line in text.splitlines():
        match = _CONTROL_LINE.match(line)
        if match:
            current = match.group(1) if match.group(2) == "0" else None
            continue
        if current and line.strip().startswith("Capabilities:"):
            caps = line.split(":", 1)[1].split()
            if "pvolume" in caps or ("volume" in caps and "cvolume" not in caps):
                names.append(current)
    return names


class AlsaMixerVolume:
    """Volume on an ALSA mixer control, through the ``amixer`` command.

    ``card`` is ``audio.mixer_card`` (``default``, a card id such as
    ``seeed2micvoicec``, or an index); ``control`` is ``audio.mixer_control``
    or None to scan (:data:`PREFERRED_CONTROLS` first, then any control with
    a playback volume).
    """

    def __init__(
        self,
        *,
        card: str = "default",
        control: str | None = None,
        amixer: str = "amixer",
        timeout_s: float = 5.0,
    ) -> None:
        self.card = card
        self._control = control
        self._amixer = amixer
        self._timeout_s = timeout_s
        self._checked = False

    @property
    def control_name(self) -> str | None:
        """The control in use once :meth:`find_control` ran (None before a scan)."""
        return self._control

    async def find_control(self) -> str:
        """The control to drive (checked or scanned once); AudioDeviceError if none."""
        if self._control is not None and self._checked:
            return self._control
        if self._control is not None:
            await self._run("sget", self._control)  # raises, naming it, if it does not exist
            self._checked = True
            return self._control
        found = parse_playback_controls(await self._run("scontents"))
        if not found:
            raise AudioDeviceError(
                f"mixer card {self.card!r} has no control with a playback volume"
            )
        ranked = [name for name in PREFERRED_CONTROLS if name in found] + found
        self._control = ranked[0]
        self._checked = True
        log.info(
            "volume_control_found",
            card=self.card,
            control=self._control,
            candidates=",".join(found),
        )
        return self._control

    async def set_level(self, percent: int) -> int:
        level = _clamp(percent)
        control = await self.find_control()
        before = await self._read(control)
        if level == 0:
            args = ["0%"] + (["mute"] if before.switch_on is not None else [])
        elif before.db is not None:
            args = [f"{percent_to_db(level):.2f}dB"] + (
                ["unmute"] if before.switch_on is not None else []
            )
        else:  # no dB scale: the raw percent is all we have
            args = [f"{level}%"] + (["unmute"] if before.switch_on is not None else [])
        await self._run("sset", control, "--", *args)
        return self._level_of(await self._read(control))

    async def get_level(self) -> int:
        return self._level_of(await self._read(await self.find_control()))

    async def _read(self, control: str) -> MixerReading:
        return parse_sget(control, await self._run("sget", control))

    @staticmethod
    def _level_of(reading: MixerReading) -> int:
        if reading.switch_on is False:
            return 0
        if reading.db is not None:
            return db_to_percent(reading.db) if reading.percent > 0 else 0
        return reading.percent

    async def _run(self, *args: str) -> str:
        where = (
            ["-D", self.card] if self.card == "default" or ":" in self.card else ["-c", self.card]
        )
        argv = [self._amixer, *where, *args]
        env = dict(os.environ, LC_ALL="C")  # amixer's output is parsed: no translations
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env
            )
            out, err = await asyncio.wait_for(proc.communicate(), self._timeout_s)
        except FileNotFoundError as exc:
            raise AudioDeviceError(
                f"{self._amixer!r} not found (install alsa-utils): {exc}"
            ) from exc
        except TimeoutError as exc:
            proc.kill()
            raise AudioDeviceError(f"{' '.join(argv)}: no answer in {self._timeout_s} s") from exc
        if proc.returncode != 0:
            raise AudioDeviceError(
                f"{' '.join(argv)} failed ({proc.returncode}): {err.decode(errors='replace').strip()}"
            )
        return out.decode(errors="replace")


@dataclass(frozen=True, slots=True)
class LevelChange:
    """What one change of the level really did (:meth:`PersistentVolume.change`)."""

    level: int
    """The level the speaker has now, read back (a mixer's step, not the one asked)."""
    saved: bool = True
    """False: the store refused it; the speaker has it, a restart will not."""
    why: str = ""
    """Why the save failed, one line (empty when it did not)."""
    restart_level: int | None = None
    """When not saved: the level a restart would restore (None: not known)."""


class PersistentVolume:
    """A :class:`VolumeControl` that saves each level and restores the last one."""

    def __init__(
        self, control: VolumeControl, store: LevelStore, *, default_level: int = 50
    ) -> None:
        self.control = control
        self._store = store
        self._default = _clamp(default_level)
        self._kept: int | None = None
        """The level the store holds as far as we know (None before :meth:`restore`)."""
        self._restored = False
        self.unsaved = False
        """The last level set could not be saved (it will not survive a restart)."""
        self.unsaved_why = ""
        """Why the last save failed (empty when it did not)."""

    async def restore(self) -> int:
        """Apply the stored level (or the default); return the level read back."""
        stored = await self._store.load()
        self._restored = True
        if stored is None:
            # Saved, so the system skill's get_volume reads the level in effect.
            return await self.set_level(self._default)
        self._kept = _clamp(stored)
        return await self.control.set_level(self._kept)

    async def set_level(self, percent: int) -> int:
        """Apply, then save; the level the speaker has (:meth:`change` says more)."""
        return (await self.change(percent)).level

    async def change(self, percent: int) -> LevelChange:
        """Apply, then save. The level returned is the one the speaker has: a
        save that fails (a full disk) is logged, not raised as a failed change,
        since the change happened; it only will not survive a restart, which
        the answer says (with the level a restart would bring back)."""
        level = await self.control.set_level(percent)
        try:
            await self._store.save(level)
        except Exception as exc:
            why = " ".join(str(exc).split()) or type(exc).__name__
            log.error("volume_save_failed", level=level, error=f"{type(exc).__name__}: {exc}")
            self.unsaved, self.unsaved_why = True, why
            return LevelChange(level, saved=False, why=why, restart_level=self._restart_level())
        self._kept = level
        self.unsaved, self.unsaved_why = False, ""
        return LevelChange(level)

    def _restart_level(self) -> int | None:
        """What :meth:`restore` would apply at the next start, if we know."""
        if self._kept is not None:
            return self._kept
        # Restored with nothing stored (and the default never saved): the default.
        return self._default if self._restored else None

    async def get_level(self) -> int:
        return await self.control.get_level()


async def open_volume(
    settings: AudioSettings, stage: GainStage, *, amixer: str = "amixer"
) -> VolumeControl:
    """The hardware control of ``audio.mixer_card`` when it has one, else software gain."""
    if settings.backend == "wav":
        return SoftwareVolume(stage)
    mixer = AlsaMixerVolume(card=settings.mixer_card, control=settings.mixer_control, amixer=amixer)
    try:
        await mixer.find_control()
    except AudioDeviceError as exc:
        log.info("volume_software", reason=str(exc))
        return SoftwareVolume(stage)
    return mixer
