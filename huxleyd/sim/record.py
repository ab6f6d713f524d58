"""What the simulator saw and where its script stands, shared by its connections.

Layer: plain data. Tests read it (``sim.received``, ``sim.violations``…) and
wait on it (``await sim.wait_until(lambda: …)``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from huxleyd.sim.scenario import ResponseSpec, Scenario, TurnSpec


class Changes:
    """What a test waits on: set on every change the sim records, and waited
    on with a predicate (no polling, no sleeps)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def set(self) -> None:
        self._event.set()

    async def wait_until(self, predicate: Callable[[], bool], timeout_s: float = 10.0) -> None:
        """Return once ``predicate()`` holds; TimeoutError after ``timeout_s``."""
        async with asyncio.timeout(timeout_s):
            while not predicate():
                self._event.clear()
                await self._event.wait()


@dataclass(frozen=True, slots=True)
class Violation:
    """A client event the real server would refuse, or that breaks the contract."""

    event: str
    """The event type, or an excerpt of the frame when it has none."""
    problem: str


@dataclass(frozen=True, slots=True)
class Truncation:
    """A ``conversation.item.truncate`` as received."""

    item_id: str
    audio_end_ms: int
    audio_sent_ms: float
    """How much audio of that item the sim had sent when the truncate arrived."""


class Script:
    """The cursor over a scenario: which turn, which of its responses.

    The cursor is shared by all connections, so a script goes on where it
    stopped after the client reconnects.
    """

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self._turn_index = -1
        self._response_index = 0

    @property
    def turn(self) -> TurnSpec | None:
        if 0 <= self._turn_index < len(self.scenario.turns):
            return self.scenario.turns[self._turn_index]
        return None

    @property
    def turns_started(self) -> int:
        return self._turn_index + 1

    def begin_turn(self, typed: str | None = None) -> str:
        """A new user turn; returns what the sim pretends to have heard.

        A spoken turn takes the script's next turn (the sim cannot understand
        audio). A ``typed`` text (``huxleyctl say``) that is some turn's ``hear``
        (case, spaces and end punctuation aside) takes that turn: the answer is
        to what was typed, wherever the script stands; any other text takes the
        next turn, as speech does."""
        wanted = _plain(typed) if typed else ""
        same = [i for i, t in enumerate(self.scenario.turns) if wanted and _plain(t.hear) == wanted]
        later = [i for i in same if i > self._turn_index]
        self._turn_index = (later or same or [self._turn_index + 1])[0]
        self._response_index = 0
        turn = self.turn
        return turn.hear if turn is not None else ""

    def next_response(self) -> ResponseSpec:
        """The next scripted response of this turn, or the default reply."""
        turn = self.turn
        if turn is not None and self._response_index < len(turn.responses):
            self._response_index += 1
            return turn.responses[self._response_index - 1]
        return self.default_response

    @property
    def default_response(self) -> ResponseSpec:
        return self.scenario.default_response


def _plain(text: str) -> str:
    """``What time is it?`` → ``what time is it``: how a typed text meets a ``hear``."""
    return " ".join(text.lower().strip().rstrip("?!. ").split())


@dataclass(slots=True)
class GeminiRecord:
    """What only the Gemini dialect has: setups, resumption, goAway."""

    setups: list[dict[str, Any]] = field(default_factory=list)
    """Every ``setup`` as received (camelCase or snake_case, as sent)."""
    resumed_handles: list[str] = field(default_factory=list)
    """Handles a setup resumed with (each was one the sim had handed out)."""
    handles_sent: dict[str, str] = field(default_factory=dict)
    """Every resumption handle handed out → the conversation it resumes."""
    go_aways_sent: int = 0
    go_away_expired: int = 0
    """goAways whose time ran out with the client still on the old socket."""
    history: dict[str, list[str]] = field(default_factory=dict)
    """conversation id → what happened in it, in order (``user:audio``,
    ``user:text``, ``model:speech``, ``model:call``, ``tool:output``…)."""
    history_replays: int = 0
    """clientContent turns with role ``model``: the client re-sent history."""
    refuse_next_resume: bool = False
    """A scripted ``refuse_resume`` fault: the next setup that resumes is refused."""
    resumes_refused: int = 0


@dataclass(slots=True)
class SimRecord:
    """Everything observed, in arrival order."""

    script: Script
    received: list[Any] = field(default_factory=list)
    """Validated client events (members of ``openai.types.realtime.RealtimeClientEvent``)."""
    raw: list[dict[str, Any]] = field(default_factory=list)
    """The same events as dicts (only the keys the client sent)."""
    violations: list[Violation] = field(default_factory=list)
    truncations: list[Truncation] = field(default_factory=list)
    tool_calls: list[tuple[str, str, str]] = field(default_factory=list)
    """(call_id, name, arguments) of every call the sim made."""
    tool_outputs: dict[str, str] = field(default_factory=dict)
    """call_id → output the client sent."""
    user_texts: list[str] = field(default_factory=list)
    read_aloud: list[str] = field(default_factory=list)
    """Texts an out-of-band response was asked to read (SpeakVerbatim), in order."""
    committed_audio: list[bytes] = field(default_factory=list)
    """The PCM of each committed user turn."""
    responses_done: int = 0
    connection_count: int = 0
    sim_errors: list[str] = field(default_factory=list)
    """Bugs in the sim itself (an event it built that failed validation…)."""
    labels: list[str] = field(default_factory=list)
    """What each received message was: the event type (OpenAI, xAI) or, for
    Gemini, its key path (``setup``, ``realtimeInput.audio``, ``toolResponse``…)."""
    errors_sent: list[str] = field(default_factory=list)
    """The code of every ``error`` event sent (OpenAI, xAI)."""
    committed_ms: list[float] = field(default_factory=list)
    """How long each committed user turn was, in ms, whatever the input rate."""
    closes_sent: list[tuple[int, str]] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    """Every scripted fault injected (its kind), in order."""
    """(code, reason) of every close the sim started (Gemini errors, goAway expiry)."""
    gemini: GeminiRecord = field(default_factory=lambda: GeminiRecord())
    _changes: Changes = field(default_factory=Changes)

    def received_event(self, event: Any, raw: dict[str, Any], label: str) -> None:
        self.received.append(event)
        self.raw.append(raw)
        self.labels.append(label)
        self.changed()

    def violation(self, event: str, problem: str) -> None:
        self.violations.append(Violation(event, problem))
        self.changed()

    def sim_error(self, problem: str) -> None:
        self.sim_errors.append(problem)
        self.changed()

    def types_received(self) -> list[str]:
        """The label of every received message (see :attr:`labels`)."""
        return list(self.labels)

    def changed(self) -> None:
        self._changes.set()

    async def wait_until(self, predicate: Callable[[], bool], timeout_s: float = 10.0) -> None:
        """Return once ``predicate()`` holds; TimeoutError after ``timeout_s``."""
        await self._changes.wait_until(predicate, timeout_s)
