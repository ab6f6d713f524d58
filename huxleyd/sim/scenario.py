"""Simulator scenarios: what the sim pretends to hear and how it answers.

Layer: pure data + a loader. A scenario file (TOML, or JSON with the same
shape) lists user turns; each turn has the transcript the sim "hears" and
the responses it gives, one per ``response.create`` of that turn::

    name = "what time is it"

    [[turns]]
    hear = "what time is it"

    [[turns.responses]]               # answers the response.create after the commit
    say = "Let me look."
    tool_calls = [{ name = "get_current_time", arguments = {} }]

    [[turns.responses]]               # answers the one after the tool output
    say = "It is ten past three."

A new user turn (audio committed, or a user text item) moves to the next
``[[turns]]``. When the turns, or a turn's responses, run out, the sim says
``default_reply``, which tells the listener it is a simulator.
Errors name the file and the key (``turns[0].responses[1].tone_hz``).
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from huxleyd.errors import ConfigError
from huxleyd.schema import bounds, build

DEFAULT_REPLY = (
    "This is the huxleyd simulator, not an AI. My script has nothing more for this turn."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallSpec:
    """One function call the sim makes."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    """The call's arguments; sent as JSON text."""
    arguments_json: str | None = None
    """Raw argument text instead of ``arguments`` (to send invalid JSON on purpose)."""

    def arguments_text(self) -> str:
        if self.arguments_json is not None:
            return self.arguments_json
        return json.dumps(self.arguments, separators=(",", ":"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorSpec:
    """An ``error`` event sent instead of a response (no response.created follows)."""

    code: str
    message: str = "simulated error"
    type: str = "invalid_request_error"


FaultKind = Literal["drop", "close", "stall", "session_expired", "go_away", "refuse_resume"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FaultSpec:
    """A fault the peer injects into one response, at one moment of it.

    - ``drop``: the socket is cut with no close frame;
    - ``close``: a close frame with ``code``;
    - ``stall``: the socket stays open and nothing more is sent on it;
    - ``session_expired`` (OpenAI, xAI): the 60-minute cap's ``error``, then close 1001;
    - ``go_away`` (Gemini): ``goAway`` with ``time_left_s``, the close when it runs out;
      the response goes on meanwhile;
    - ``refuse_resume`` (Gemini): close ``code``, and the next setup that resumes
      is refused (1007) before ``setupComplete``.
    """

    kind: FaultKind
    after_deltas: int | None = field(default=None, metadata=bounds(0, 1_000_000))
    """After this many audio chunks (0: before the first); None: after the
    response's last frame (``response.done``, ``turnComplete`` or ``toolCall``)."""
    code: int = field(default=1011, metadata=bounds(1000, 4999))
    time_left_s: float = field(default=60.0, metadata=bounds(0.01, 3600.0))


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseSpec:
    """One response: speech, then tool calls, then ``response.done``.

    Speech is ``say`` synthesised (espeak-ng, or tones without it), or a pure
    tone when ``tone_hz`` is set (``duration_ms`` long; ``say`` is then only
    the transcript). A response with neither speech nor calls is silent.
    """

    say: str = ""
    tone_hz: float | None = field(default=None, metadata=bounds(20.0, 12_000.0))
    duration_ms: int | None = field(default=None, metadata=bounds(1, 600_000))
    tool_calls: tuple[ToolCallSpec, ...] = ()
    delay_ms: int = field(default=0, metadata=bounds(0, 600_000))
    """Wait after response.created before any output (first-token latency)."""
    error: ErrorSpec | None = None
    drop_after_deltas: int | None = field(default=None, metadata=bounds(0, 1_000_000))
    """Drop the connection (no close frame) after this many audio deltas."""
    status: Literal["completed", "incomplete", "failed"] = "completed"
    go_away_s: float | None = field(default=None, metadata=bounds(0.1, 3600.0))
    """Gemini: after this response, send ``goAway`` with this much time left and
    close the socket when it runs out (at the sim's speed). Other dialects
    have no goAway and ignore it."""
    go_away_after_deltas: int | None = field(default=None, metadata=bounds(1, 1_000_000))
    """Gemini: send that ``goAway`` (``go_away_s`` left, default 60 s) after this
    many audio chunks, in the middle of the reply, instead of after it."""
    close_after: int | None = field(default=None, metadata=bounds(1000, 4999))
    """Close the socket with this code right after the response's last frame
    (``response.done``, or Gemini's ``turnComplete``): a session cap, a restart."""
    fault: FaultSpec | None = None
    """A fault at one moment of this response (:class:`FaultSpec`)."""

    def __post_init__(self) -> None:
        if self.tone_hz is not None and self.duration_ms is None:
            raise ValueError("tone_hz needs duration_ms (how long the tone lasts)")
        if self.error is not None and (self.say or self.tool_calls or self.tone_hz):
            raise ValueError("a response with 'error' sends nothing else; remove say/tool_calls")

    @property
    def speaks(self) -> bool:
        return bool(self.say) or self.tone_hz is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnSpec:
    """One user turn: what the sim hears, and its responses in order."""

    hear: str = ""
    responses: tuple[ResponseSpec, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """A whole script. ``Scenario()`` is the empty one: every answer is the default reply."""

    name: str = "default"
    default_reply: str = DEFAULT_REPLY
    turns: tuple[TurnSpec, ...] = ()

    @property
    def default_response(self) -> ResponseSpec:
        return ResponseSpec(say=self.default_reply)


def load_scenario(path: Path) -> Scenario:
    """Read a TOML (``.toml``) or JSON (``.json``) scenario; ConfigError names file and key."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read scenario ({exc.strerror})") from exc
    try:
        table = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(str(path), "", f"not valid {path.suffix[1:] or 'TOML'}: {exc}") from exc
    if not isinstance(table, dict):
        raise ConfigError(str(path), "", "expected a table at the top level")
    return build(Scenario, table, file=str(path))


def scenario_from_dict(table: dict[str, Any], *, name: str = "<scenario>") -> Scenario:
    """Build a scenario from a mapping already in memory (tests)."""
    return build(Scenario, table, file=name)
