"""What the daemon answers on the control socket: :class:`ControlHandler`.

The daemon implements the protocol; :class:`~huxleyd.control.server.ControlServer`
calls it, one coroutine per request, under a timeout. The reports are frozen
dataclasses with ``to_dict()`` (what goes on the wire) and ``from_dict()``
(what ``huxleyctl`` reads back, checked field by field).

Error contract for implementations: raise
:class:`~huxleyd.control.errors.CommandFailedError` (or any
:class:`~huxleyd.errors.HuxleydError`) with a one-line message the admin
can act on; the client sees that message. Any other exception is reported
as an internal error and logged by the server with its traceback. Never
return or raise anything that contains a secret: the socket is readable by
the whole ``huxley`` group.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from huxleyd.control.errors import ControlProtocolError
from huxleyd.control.protocol import PttAction
from huxleyd.control.watch import WatchEvent

DBFS_FLOOR = -120.0
"""Levels below this (digital silence is -inf) are sent as this value."""

SkillState = Literal["ready", "failed"]
SKILL_STATES: tuple[SkillState, ...] = ("ready", "failed")

T = TypeVar("T")


def _get(d: Mapping[str, Any], key: str, kind: type[T], what: str) -> T:
    """``d[key]`` checked against ``kind``; a bool never passes for an int."""
    if key not in d:
        raise ControlProtocolError(f"{what}: missing {key!r}")
    value = d[key]
    if (kind is int and isinstance(value, bool)) or not isinstance(value, kind):
        raise ControlProtocolError(f"{what}: {key!r} has the wrong type ({value!r})")
    return value


def _number(d: Mapping[str, Any], key: str, what: str) -> float:
    if key not in d:
        raise ControlProtocolError(f"{what}: missing {key!r}")
    value = d[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ControlProtocolError(f"{what}: {key!r} expected a number ({value!r})")
    return float(value)


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ControlProtocolError(f"{what}: expected an object, got {value!r}")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class XrunCounts:
    """Audio engine trouble counters since start."""

    underruns: int = 0
    """Output periods the device wanted but the engine could not fill in time."""
    overruns: int = 0
    """Capture periods the device dropped because we read too late."""
    late_periods: int = 0
    """Periods the engine produced after their deadline (audible risk)."""
    dropped_mic_frames: int = 0
    """Mic frames dropped because the capture ring was full."""
    card_underruns: int = 0
    """Of ``underruns``: the card's own (its callback was late: the CPU)."""
    speaker_dropouts: int = 0
    """Of ``underruns``: periods the speaker was fed silence while audio was queued
    (what feeds it was late)."""
    source_gaps: int = 0
    """Of ``underruns``: a source ran dry inside an item (its producer was late)."""
    silences: Mapping[str, float] = field(default_factory=dict)
    """Every silence heard inside a reply, by cause, counted once
    (:class:`huxleyd.audio.types.Silences` as a dict: ``card_xruns``, ``dry_ring``
    and ``dry_ring_ms``, ``late_source`` and ``late_source_ms``, ``reopens`` and
    ``reopen_ms``); empty from an older daemon."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "silences": dict(self.silences),
            "underruns": self.underruns,
            "overruns": self.overruns,
            "late_periods": self.late_periods,
            "dropped_mic_frames": self.dropped_mic_frames,
            "card_underruns": self.card_underruns,
            "speaker_dropouts": self.speaker_dropouts,
            "source_gaps": self.source_gaps,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> XrunCounts:
        what = "status xruns"
        # an older daemon sends no breakdown of its underruns: none is claimed
        parts = {k: _get(d, k, int, what) for k in SPLIT_UNDERRUNS if k in d}
        raw = _get(d, "silences", dict, what) if "silences" in d else {}
        silences = {str(k): _number(raw, k, f"{what} silences") for k in raw}
        return cls(
            silences=silences,
            underruns=_get(d, "underruns", int, what),
            overruns=_get(d, "overruns", int, what),
            late_periods=_get(d, "late_periods", int, what),
            dropped_mic_frames=_get(d, "dropped_mic_frames", int, what),
            **parts,
        )


SPLIT_UNDERRUNS = ("card_underruns", "speaker_dropouts", "source_gaps")
"""What ``XrunCounts.underruns`` is made of, each its own field."""


UNKNOWN_BUSY = "the daemon does not say whether it is idle (an older huxleyd)"


@dataclass(frozen=True, slots=True, kw_only=True)
class StatusReport:
    """What ``huxleyctl status`` shows."""

    state: str
    """The turn coordinator's state (``idle``, ``listening``, ``speaking``…)."""
    provider_state: str
    """The provider connection (``connected``, ``connecting``, ``offline``…)."""
    media: str | None
    """What is playing (a book title, a station), or None."""
    volume: int
    """User volume, 0-100; -1 while the daemon starts (the volume is not open yet)."""
    uptime_s: float
    xruns: XrunCounts = field(default_factory=XrunCounts)
    last_turn_timings_ms: Mapping[str, float] = field(default_factory=dict)
    """The last turn's timings, name → milliseconds (``release_to_commit``…)."""
    last_turn_id: str | None = None
    persona: str
    provider_kind: str
    """``openai``, ``sim``…"""
    is_simulator: bool
    """True when the daemon talks to the built-in protocol peer: not an AI."""
    provider_attempt: int = 0
    """Connection tries that failed in a row (0 when connected)."""
    provider_detail: str = ""
    """Why the last try failed (one line), or ''."""
    provider_retry_in_s: float | None = None
    """Seconds until the next try, when one is scheduled."""
    problems: tuple[str, ...] = ()
    """Parts running degraded, one line each (the database moved aside, a skill
    left out…): what, which file, since when."""
    provider_stalls: int = 0
    """Connections dropped since start because a due reply stalled."""
    provider_unlogged_notes: int = 0
    """Provider notes (new unknown event types) counted past the logged-once bound."""
    busy: tuple[str, ...] = ()
    """Why the device is not idle, one reason each (speaking, a timer due in 3 min…);
    empty = idle. What a reboot for security updates waits on (control/reboot.py)."""
    reboot_pending: bool = False
    """An installed update waits for a reboot (``/run/reboot-required``)."""
    reboot_policy: str = "when_idle"
    """The persona's ``[updates] reboot``."""
    home: tuple[str, ...] = ()
    """The home integration (docs/home.md), one line per MCP server and the broker."""
    version: str = ""
    """The daemon's huxleyd version ('' from an older daemon)."""
    release: str = ""
    """The release it runs from (``/opt/huxleyd/releases/<release>``), '' when
    it is not in that layout: ``huxleyctl update`` switches releases."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "provider_state": self.provider_state,
            "media": self.media,
            "volume": self.volume,
            "uptime_s": self.uptime_s,
            "xruns": self.xruns.to_dict(),
            "last_turn_timings_ms": dict(self.last_turn_timings_ms),
            "last_turn_id": self.last_turn_id,
            "persona": self.persona,
            "provider_kind": self.provider_kind,
            "is_simulator": self.is_simulator,
            "provider_attempt": self.provider_attempt,
            "provider_detail": self.provider_detail,
            "provider_retry_in_s": self.provider_retry_in_s,
            "problems": list(self.problems),
            "provider_stalls": self.provider_stalls,
            "provider_unlogged_notes": self.provider_unlogged_notes,
            "busy": list(self.busy),
            "reboot_pending": self.reboot_pending,
            "reboot_policy": self.reboot_policy,
            "home": list(self.home),
            "version": self.version,
            "release": self.release,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StatusReport:
        """Read a ``status`` result back; raises ControlProtocolError naming the field."""
        what = "status"
        timings = _mapping(d.get("last_turn_timings_ms", {}), "status last_turn_timings_ms")
        timings_ms = {k: _number(timings, k, "status last_turn_timings_ms") for k in timings}
        media = d.get("media")
        turn = d.get("last_turn_id")
        if media is not None and not isinstance(media, str):
            raise ControlProtocolError(f"status: 'media' has the wrong type ({media!r})")
        if turn is not None and not isinstance(turn, str):
            raise ControlProtocolError(f"status: 'last_turn_id' has the wrong type ({turn!r})")
        return cls(
            state=_get(d, "state", str, what),
            provider_state=_get(d, "provider_state", str, what),
            media=media,
            volume=_get(d, "volume", int, what),
            uptime_s=_number(d, "uptime_s", what),
            xruns=XrunCounts.from_dict(_mapping(d.get("xruns", {}), "status xruns")),
            last_turn_timings_ms=timings_ms,
            last_turn_id=turn,
            persona=_get(d, "persona", str, what),
            provider_kind=_get(d, "provider_kind", str, what),
            is_simulator=_get(d, "is_simulator", bool, what),
            # Optional: an older daemon does not send them.
            provider_attempt=_get(d, "provider_attempt", int, what)
            if "provider_attempt" in d
            else 0,
            provider_detail=_get(d, "provider_detail", str, what) if "provider_detail" in d else "",
            provider_retry_in_s=None
            if d.get("provider_retry_in_s") is None
            else _number(d, "provider_retry_in_s", what),
            problems=_strings(d, "problems", what) if "problems" in d else (),
            provider_stalls=_get(d, "provider_stalls", int, what) if "provider_stalls" in d else 0,
            provider_unlogged_notes=_get(d, "provider_unlogged_notes", int, what)
            if "provider_unlogged_notes" in d
            else 0,
            # An older daemon says nothing of these: never read that as "idle".
            busy=_strings(d, "busy", what) if "busy" in d else (UNKNOWN_BUSY,),
            reboot_pending=_get(d, "reboot_pending", bool, what)
            if "reboot_pending" in d
            else False,
            reboot_policy=_get(d, "reboot_policy", str, what)
            if "reboot_policy" in d
            else "unknown",
            home=_strings(d, "home", what) if "home" in d else (),
            version=_get(d, "version", str, what) if "version" in d else "",
            release=_get(d, "release", str, what) if "release" in d else "",
        )


def _strings(d: Mapping[str, Any], key: str, what: str) -> tuple[str, ...]:
    items = _get(d, key, list, what)
    if not all(isinstance(t, str) for t in items):
        raise ControlProtocolError(f"{what}: {key!r} expected strings, got {items!r}")
    return tuple(items)


@dataclass(frozen=True, slots=True)
class SkillInfo:
    """A skill of the persona: where it came from, whether it runs, its tools.

    ``state`` is ``ready``, or ``failed`` with the ``reason`` (a skill that
    did not set up); the daemon fills it from what the skill host knows."""

    name: str
    tools: tuple[str, ...] = ()
    distribution: str = ""
    """The installed distribution that provides it (``huxley-skill-timers``)."""
    version: str = ""
    state: SkillState = "ready"
    reason: str = ""
    """Why it failed (empty when ready)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "tools": list(self.tools),
            "distribution": self.distribution,
            "version": self.version,
            "state": self.state,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SkillInfo:
        tools = _get(d, "tools", list, "skill")
        if not all(isinstance(t, str) for t in tools):
            raise ControlProtocolError(f"skill: 'tools' expected strings, got {tools!r}")
        state = d.get("state", "ready")
        if state not in SKILL_STATES:
            raise ControlProtocolError(
                f"skill: 'state' expected one of {SKILL_STATES}, got {state!r}"
            )
        # An older daemon sends name and tools only.
        extra = {
            k: _get(d, k, str, "skill") for k in ("distribution", "version", "reason") if k in d
        }
        return cls(_get(d, "name", str, "skill"), tuple(tools), state=state, **extra)


@dataclass(frozen=True, slots=True)
class LevelsSample:
    """Peak levels over the last sampling interval, in dBFS (0 = full scale)."""

    mic_dbfs: float
    output_dbfs: float
    silences: int = 0
    """Silences heard inside replies since start, every cause (see ``XrunCounts.silences``)."""

    def to_dict(self) -> dict[str, float]:
        return {
            "mic_dbfs": _clamp_dbfs(self.mic_dbfs),
            "output_dbfs": _clamp_dbfs(self.output_dbfs),
            "silences": self.silences,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LevelsSample:
        what = "levels sample"
        return cls(
            _number(d, "mic_dbfs", what),
            _number(d, "output_dbfs", what),
            _get(d, "silences", int, what) if "silences" in d else 0,
        )


def _clamp_dbfs(value: float) -> float:
    # -inf (digital silence) and NaN are not JSON; silence reads as the floor.
    if value != value or value < DBFS_FLOOR:
        return DBFS_FLOOR
    return min(float(value), 0.0)


DoctorStatus = Literal["ok", "warn", "fail", "skipped"]
"""``ok``: looked and found well; ``warn``: works, but should be fixed (a key
file others can read, mock pins); ``fail``: broken; ``skipped``: not looked
at, and ``detail`` says why (never shown as a pass)."""

_STATUSES: tuple[DoctorStatus, ...] = ("ok", "warn", "fail", "skipped")


@dataclass(frozen=True, slots=True)
class DoctorCheck:
    """One diagnosis: what was checked, what was found, and how to fix it.

    ``ok`` is False only for ``fail`` (``huxleyctl doctor`` exits 1); it is
    kept on the wire for older clients.
    """

    name: str
    ok: bool
    detail: str
    """What was looked at and found (never a secret), or why it was skipped."""
    fix: str = ""
    """What to do when it is not ``ok``."""
    status: DoctorStatus | None = None
    """None: ``ok`` or ``fail`` from ``ok``."""

    def __post_init__(self) -> None:
        if self.status is None:
            object.__setattr__(self, "status", "ok" if self.ok else "fail")
        elif self.ok != (self.status != "fail"):
            raise ValueError(f"doctor check {self.name!r}: ok={self.ok} but status={self.status}")

    @classmethod
    def passed(cls, name: str, detail: str) -> DoctorCheck:
        return cls(name, True, detail, "", "ok")

    @classmethod
    def failed(cls, name: str, detail: str, fix: str) -> DoctorCheck:
        return cls(name, False, detail, fix, "fail")

    @classmethod
    def warning(cls, name: str, detail: str, fix: str) -> DoctorCheck:
        return cls(name, True, detail, fix, "warn")

    @classmethod
    def skipped(cls, name: str, why: str, fix: str = "") -> DoctorCheck:
        return cls(name, True, f"skipped: {why}", fix, "skipped")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ok": self.ok,
            "status": self.status,
            "detail": self.detail,
            "fix": self.fix,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DoctorCheck:
        what = "doctor check"
        ok = _get(d, "ok", bool, what)
        status = d.get("status", "ok" if ok else "fail")
        if status not in _STATUSES:
            raise ControlProtocolError(
                f"{what}: 'status' expected one of {_STATUSES}, got {status!r}"
            )
        if ok != (status != "fail"):
            raise ControlProtocolError(f"{what}: 'ok' is {ok} but 'status' is {status!r}")
        return cls(
            _get(d, "name", str, what),
            ok,
            _get(d, "detail", str, what),
            _get(d, "fix", str, what),
            status,
        )


@runtime_checkable
class ControlHandler(Protocol):
    """The daemon side of the control socket. Every method may be called
    concurrently with the others (several clients); each call runs under the
    server's request timeout."""

    async def status(self) -> StatusReport:
        """A snapshot of the daemon's state."""
        ...

    async def get_volume(self) -> int:
        """The user volume, 0-100."""
        ...

    async def set_volume(self, level: int) -> int:
        """Set (and persist) the user volume; ``level`` is 0-100. Returns the level now in effect."""
        ...

    async def get_muted(self) -> bool:
        """Whether the microphone is muted."""
        ...

    async def set_muted(self, muted: bool) -> bool:
        """Mute (or unmute) the microphone at the source, persisted. Returns the mute now."""
        ...

    async def say(self, text: str) -> str:
        """Start a text turn (a user text item + a response). Returns the turn id
        at once; the answer plays as for a spoken turn."""
        ...

    async def stop(self) -> bool:
        """Cancel media (bookmarks saved). True if something was playing."""
        ...

    async def skills(self) -> list[SkillInfo]:
        """The loaded skills, in load order."""
        ...

    async def ptt(self, action: PttAction) -> None:
        """Drive the push-to-talk button as if pressed by hand."""
        ...

    def levels(self) -> AsyncIterator[LevelsSample]:
        """Mic and output levels, one sample per interval (~50-100 ms), forever.

        The server closes the iterator (``aclose``) when the client leaves, so
        an async generator's ``finally`` is the place to stop metering.
        """
        ...

    async def doctor(self) -> list[DoctorCheck]:
        """Run the checks of :mod:`huxleyd.control.doctor` for this configuration."""
        ...

    async def client_event(self, key: str, data: dict[str, Any]) -> list[str]:
        """Deliver a Huxley client event to the skills subscribed to ``key``;
        returns the skills whose handler ran without raising."""
        ...

    def watch(self) -> AsyncIterator[WatchEvent]:
        """What happens from now on (:mod:`huxleyd.control.watch`), forever.

        Quiet for as long as nothing happens; closed (``aclose``) when the
        client leaves.
        """
        ...


@runtime_checkable
class Announcer(Protocol):
    """A daemon with a household (``[mqtt]``, docs/home.md): ``huxleyctl announce``.

    Apart from :class:`ControlHandler`, so a handler without it answers that
    it has no household instead of failing to type-check."""

    async def announce(self, text: str, room: str | None) -> list[str]:
        """Send ``text`` to ``room``'s speaker (None: every speaker); one line per
        room saying what became of it. Raises CommandFailedError when it cannot
        be sent (no broker, no such room)."""
        ...
