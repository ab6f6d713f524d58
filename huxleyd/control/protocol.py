"""The control socket's wire format: line-delimited JSON over a unix stream socket.

Pure data and parsing; no I/O. One request per line, UTF-8 JSON, ``\\n``
terminated, at most :data:`MAX_LINE_BYTES` bytes::

    → {"id": 7, "cmd": "volume", "args": {"level": 30}}
    ← {"id": 7, "ok": true, "result": {"volume": 30}}
    ← {"id": 8, "ok": false, "error": "bad args for volume: 'level' expected ..."}

``levels`` and ``watch`` stream: several ``{"id": n, "ok": true, "result": {...}}`` lines,
then ``{"id": n, "ok": true, "done": true}`` (or an error line). Requests on
one connection are answered in order; replies carry the request's id (or
``null`` when the id could not be read).

Commands and their args (all optional unless marked):

==========  =====================================================
status      none
volume      ``level``: integer 0-100 (absent: read the volume)
say         ``text`` (required): non-empty string, ≤ MAX_SAY_CHARS
stop        none
skills      none
ptt         ``action`` (required): "press", "release" or "tap"
levels      ``count``: integer ≥ 1, stop after that many samples
doctor      none
event       ``key`` (required): a client event name; ``data``: an object
watch       ``count``: integer ≥ 1, stop after that many events
mute        ``muted``: true or false (absent: read the mute)
announce    ``text`` (required): ≤ MAX_SAY_CHARS; ``room``: a room (absent: every speaker)
==========  =====================================================

:func:`parse_request` (server side) and :func:`parse_reply` (client side)
turn a line into a frozen dataclass or raise
:class:`~huxleyd.control.errors.ControlProtocolError` with one line that
says what was wrong and what was expected.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeAlias

from huxleyd.control.errors import ControlProtocolError

MAX_LINE_BYTES = 64 * 1024
"""Longest accepted line, newline included. Longer lines get an error reply."""

MAX_SAY_CHARS = 2000
"""Longest ``say`` text: a spoken request, not a document."""

MAX_NESTING = 100
"""Deepest nesting of arrays and objects in a line (an event's data included)."""

MAX_ERROR_CHARS = 300
"""Error messages are cut to this many characters (one readable line)."""


class Command(StrEnum):
    """The commands the daemon answers."""

    STATUS = "status"
    VOLUME = "volume"
    SAY = "say"
    STOP = "stop"
    SKILLS = "skills"
    PTT = "ptt"
    LEVELS = "levels"
    DOCTOR = "doctor"
    EVENT = "event"
    """A Huxley ``client_event`` for the skills subscribed to its key (docs/skills.md)."""
    WATCH = "watch"
    MUTE = "mute"
    """The microphone mute (the wake word and the button stop listening)."""
    ANNOUNCE = "announce"
    """Speak a text on the household's speakers in a room, or on all (docs/home.md)."""


STREAMING_COMMANDS = frozenset({Command.LEVELS, Command.WATCH})
"""Commands answered by several result lines and a final ``done`` line."""


class PttAction(StrEnum):
    """What ``ptt`` does to the (virtual) push-to-talk button."""

    PRESS = "press"
    RELEASE = "release"
    TAP = "tap"
    """Press, then release: a turn with whatever the mic heard meanwhile."""


@dataclass(frozen=True, slots=True)
class NoArgs:
    """Args of a command that takes none."""


@dataclass(frozen=True, slots=True)
class VolumeArgs:
    level: int | None = None
    """0-100 to set; None to read."""


@dataclass(frozen=True, slots=True)
class MuteArgs:
    muted: bool | None = None
    """True/False to set; None to read."""


@dataclass(frozen=True, slots=True)
class SayArgs:
    text: str


@dataclass(frozen=True, slots=True)
class PttArgs:
    action: PttAction


@dataclass(frozen=True, slots=True)
class LevelsArgs:
    """Args of a streaming command (``levels``, ``watch``)."""

    count: int | None = None
    """Stop after this many samples/events; None streams until the client hangs up."""


@dataclass(frozen=True, slots=True)
class EventArgs:
    key: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AnnounceArgs:
    text: str
    room: str | None = None
    """None: every speaker of the household."""


MAX_EVENT_KEY_CHARS = 100

Args: TypeAlias = (
    NoArgs | VolumeArgs | MuteArgs | SayArgs | PttArgs | LevelsArgs | EventArgs | AnnounceArgs
)


@dataclass(frozen=True, slots=True)
class Request:
    """One parsed, checked request."""

    id: int
    cmd: Command
    args: Args = field(default_factory=NoArgs)

    def encode(self) -> bytes:
        """The request as one wire line (client side)."""
        args = {k: v for k, v in _args_dict(self.args).items() if v is not None}
        return _dump({"id": self.id, "cmd": self.cmd.value, "args": args})


@dataclass(frozen=True, slots=True)
class ResultReply:
    """A successful answer (or one sample of a stream)."""

    id: int | None
    result: Mapping[str, Any]

    def encode(self) -> bytes:
        return _dump({"id": self.id, "ok": True, "result": dict(self.result)})


@dataclass(frozen=True, slots=True)
class DoneReply:
    """The end of a streamed answer."""

    id: int | None

    def encode(self) -> bytes:
        return _dump({"id": self.id, "ok": True, "done": True})


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """A refused or failed request; ``error`` is one line."""

    id: int | None
    error: str

    def encode(self) -> bytes:
        return _dump({"id": self.id, "ok": False, "error": one_line(self.error)})


Reply: TypeAlias = ResultReply | DoneReply | ErrorReply


def one_line(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """Collapse whitespace runs (newlines included) and cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _dump(obj: Mapping[str, Any]) -> bytes:
    # allow_nan=False: NaN/Infinity are not JSON; a client in another
    # language would choke on them, so refuse at the source.
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError as exc:  # a lone surrogate: from argv bytes, or a bug
        raise ControlProtocolError(
            f"a string holds a lone UTF-16 surrogate at character {exc.start} "
            "(not Unicode text: was it typed in a non-UTF-8 locale?)"
        ) from None


def _args_dict(args: Args) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fld in dataclasses.fields(args):
        value = getattr(args, fld.name)
        out[fld.name] = value.value if isinstance(value, StrEnum) else value
    return out


def _show(value: Any) -> str:
    """A short repr of a bad value, for messages."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:39] + "…"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _decode_object(line: bytes | str, what: str) -> dict[str, Any]:
    if isinstance(line, bytes):
        if len(line) > MAX_LINE_BYTES:
            raise ControlProtocolError(f"{what} longer than {MAX_LINE_BYTES} bytes")
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            raise ControlProtocolError(f"{what} is not UTF-8") from None
    else:
        text = line
    if not text.strip():
        raise ControlProtocolError(f"empty {what} (expected a JSON object)")
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except (json.JSONDecodeError, ValueError) as exc:
        msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise ControlProtocolError(f"{what} is not JSON: {msg}") from None
    except RecursionError:
        raise ControlProtocolError(_too_deep(what)) from None
    _check_depth(obj, what)
    if not isinstance(obj, dict):
        raise ControlProtocolError(f"{what} is {_json_type(obj)}, expected a JSON object")
    return obj


def _too_deep(what: str) -> str:
    return f"{what} nests arrays or objects too deeply (more than {MAX_NESTING} levels)"


def _check_depth(obj: Any, what: str) -> None:
    """Refuse nesting past :data:`MAX_NESTING`. The parser's own limit is the
    interpreter's recursion limit, which differs between versions (3.11 stops
    near 1,000 levels, 3.13 parses 5,000): a limit of our own is one rule."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        )
        if children and depth >= MAX_NESTING:
            raise ControlProtocolError(_too_deep(what))
        stack.extend((child, depth + 1) for child in children)


def _check_unicode(obj: Any, what: str) -> None:
    """Refuse a lone surrogate (``"\\ud800"``) anywhere: JSON allows the escape,
    but the text cannot be encoded, so it would break whatever sends it on
    (the provider's websocket, a reply, the journal)."""
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ControlProtocolError(
                    f"{what} has a lone UTF-16 surrogate at character {exc.start} of a "
                    "string (expected Unicode text)"
                ) from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _read_id(obj: Mapping[str, Any]) -> int:
    if "id" not in obj:
        raise ControlProtocolError("missing 'id' (expected an integer)")
    rid = obj["id"]
    if isinstance(rid, bool) or not isinstance(rid, int):
        raise ControlProtocolError(f"'id' expected an integer, got {_show(rid)}")
    return rid


_REQUEST_KEYS = ("id", "cmd", "args")


def parse_request(line: bytes | str) -> Request:
    """Parse one request line. Raises :class:`ControlProtocolError` (one line,
    with ``request_id`` set when the id was readable)."""
    obj = _decode_object(line, "request")
    rid = _read_id(obj)
    try:
        _check_unicode(obj, "request")
        for key in obj:
            if key not in _REQUEST_KEYS:
                raise ControlProtocolError(
                    f"unknown field {_show(key)} (expected {', '.join(_REQUEST_KEYS)})"
                )
        raw_cmd = obj.get("cmd")
        if not isinstance(raw_cmd, str):
            raise ControlProtocolError(f"'cmd' expected a command name, got {_show(raw_cmd)}")
        try:
            cmd = Command(raw_cmd)
        except ValueError:
            known = ", ".join(c.value for c in Command)
            raise ControlProtocolError(
                f"unknown cmd {_show(raw_cmd)} (expected one of: {known})"
            ) from None
        raw_args = obj.get("args", {})
        if not isinstance(raw_args, dict):
            raise ControlProtocolError(
                f"bad args for {cmd}: expected an object, got {_json_type(raw_args)}"
            )
        return Request(rid, cmd, _parse_args(cmd, raw_args))
    except ControlProtocolError as exc:
        raise ControlProtocolError(str(exc), request_id=rid) from None


def _bad(cmd: Command, message: str) -> ControlProtocolError:
    return ControlProtocolError(f"bad args for {cmd}: {message}")


def _only(cmd: Command, raw: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    for key in raw:
        if key not in allowed:
            expected = ", ".join(repr(a) for a in allowed) if allowed else "none"
            raise _bad(cmd, f"unknown arg {_show(key)} (expected {expected})")


def _int_arg(cmd: Command, raw: Mapping[str, Any], name: str, lo: int, hi: int | None) -> int:
    value = raw[name]
    span = f"{lo}-{hi}" if hi is not None else f"≥ {lo}"
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise _bad(cmd, f"{name!r} expected an integer {span}, got {_show(value)}")
    if hi is not None and value > hi:
        raise _bad(cmd, f"{name!r} expected an integer {span}, got {_show(value)}")
    return value


def _volume_args(cmd: Command, raw: Mapping[str, Any]) -> Args:
    _only(cmd, raw, ("level",))
    if raw.get("level") is None:
        return VolumeArgs()
    return VolumeArgs(_int_arg(cmd, raw, "level", 0, 100))


def _mute_args(cmd: Command, raw: Mapping[str, Any]) -> Args:
    _only(cmd, raw, ("muted",))
    muted = raw.get("muted")
    if muted is not None and not isinstance(muted, bool):
        raise _bad(cmd, f"'muted' expected true or false, got {_show(muted)}")
    return MuteArgs(muted)


def _say_args(cmd: Command, raw: Mapping[str, Any]) -> Args:
    _only(cmd, raw, ("text",))
    text = raw.get("text")
    if not isinstance(text, str) or not text.strip():
        got = "nothing" if "text" not in raw else _show(text)
        raise _bad(cmd, f"'text' expected a non-empty string, got {got}")
    if len(text) > MAX_SAY_CHARS:
        raise _bad(cmd, f"'text' longer than {MAX_SAY_CHARS} characters")
    return SayArgs(text.strip())


def _announce_args(cmd: Command, raw: Mapping[str, Any]) -> Args:
    _only(cmd, raw, ("text", "room"))
    text = _say_args(cmd, {"text": raw.get("text")}) if "text" in raw else None
    if not isinstance(text, SayArgs):
        raise _bad(cmd, "'text' expected a non-empty string, got nothing")
    room = raw.get("room")
    if room is not None and (not isinstance(room, str) or not room.strip() or len(room) > 64):
        raise _bad(cmd, f"'room' expected a room name, got {_show(room)}")
    return AnnounceArgs(text.text, room.strip() if isinstance(room, str) else None)


def _ptt_args(cmd: Command, raw: Mapping[str, Any]) -> Args:
    _only(cmd, raw, ("action",))
    try:
        return PttArgs(PttAction(str(raw["action"])))
    except (KeyError, ValueError):
        got = "nothing" if "action" not in raw else _show(raw.get("action"))
        expected = ", ".join(repr(a.value) for a in PttAction)
        raise _bad(cmd, f"'action' expected one of {expected}, got {got}") from None


def _event_args(cmd: Command, raw: Mapping[str, Any]) -> Args:
    _only(cmd, raw, ("key", "data"))
    key = raw.get("key")
    if not isinstance(key, str) or not key.strip() or len(key) > MAX_EVENT_KEY_CHARS:
        got = "nothing" if "key" not in raw else _show(key)
        raise _bad(
            cmd, f"'key' expected an event name (1-{MAX_EVENT_KEY_CHARS} characters), got {got}"
        )
    data = raw.get("data", {})
    if not isinstance(data, dict):
        raise _bad(cmd, f"'data' expected an object, got {_json_type(data)}")
    return EventArgs(key.strip(), dict(data))


def _levels_args(cmd: Command, raw: Mapping[str, Any]) -> Args:
    _only(cmd, raw, ("count",))
    if raw.get("count") is None:
        return LevelsArgs()
    return LevelsArgs(_int_arg(cmd, raw, "count", 1, None))


def _no_args(cmd: Command, raw: Mapping[str, Any]) -> Args:
    _only(cmd, raw, ())
    return NoArgs()


ARG_PARSERS: Mapping[Command, Callable[[Command, Mapping[str, Any]], Args]] = {
    Command.VOLUME: _volume_args,
    Command.MUTE: _mute_args,
    Command.SAY: _say_args,
    Command.PTT: _ptt_args,
    Command.EVENT: _event_args,
    Command.ANNOUNCE: _announce_args,
    **dict.fromkeys(STREAMING_COMMANDS, _levels_args),
}
"""The commands that take arguments, each with its parser; every other takes none."""


def _parse_args(cmd: Command, raw: Mapping[str, Any]) -> Args:
    return ARG_PARSERS.get(cmd, _no_args)(cmd, raw)


def parse_reply(line: bytes | str) -> Reply:
    """Parse one reply line (client side). Raises :class:`ControlProtocolError`."""
    obj = _decode_object(line, "reply")
    rid = obj.get("id")
    if rid is not None and (isinstance(rid, bool) or not isinstance(rid, int)):
        raise ControlProtocolError(f"reply 'id' expected an integer or null, got {_show(rid)}")
    ok = obj.get("ok")
    if ok is False:
        error = obj.get("error")
        if not isinstance(error, str):
            raise ControlProtocolError(f"error reply without an 'error' string: {_show(obj)}")
        return ErrorReply(rid, error)
    if ok is not True:
        raise ControlProtocolError(f"reply 'ok' expected true or false, got {_show(ok)}")
    if obj.get("done") is True:
        return DoneReply(rid)
    result = obj.get("result")
    if not isinstance(result, dict):
        raise ControlProtocolError(f"reply 'result' expected an object, got {_show(result)}")
    return ResultReply(rid, result)
