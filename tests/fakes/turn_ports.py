"""Recording fakes of the turn layer's ports: provider, audio engine, volume, and
the coordinator as its parts see it (:class:`RecordingTurn` for ``TurnControl``,
:class:`RecordingConversation` for ``ConversationPort``).

Each fake keeps its own record (``RecordingProvider.commands``,
``RecordingAudio.log``); given one shared ``timeline`` list, both also append
to it, so a test can assert the order of a provider command against an audio
action (a request, then the silence that overlaps the model's latency).
Earcons are recorded by name, looked up in the registry the rig gave the
coordinator: a PCM that is in no registry (a skill's PlaySound) is ``"sound"``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from huxley_sdk import Skill, SkillContext, ToolDefinition, ToolResult
from huxleyd.audio.types import MicFrame, SourceName
from huxleyd.audio.volume import LevelChange
from huxleyd.errors import AudioError
from huxleyd.providers.base import Capabilities, InterruptAcceptance
from huxleyd.turns.state import TurnOutcome, TurnRecord, TurnState

OPENAI_LIKE = Capabilities(
    text_input=True,
    mid_session_instructions=True,
    mid_session_tools=True,
    response_cancel=True,
    truncate=True,
    interrupt_acceptance=InterruptAcceptance.IMMEDIATE_PROVIDER_ACK,
    input_rate_hz=24_000,
    output_rate_hz=24_000,
    verbatim_reader=True,
)


class RecordingProvider:
    """Records every command as ``(name, args)``; no network."""

    def __init__(
        self,
        capabilities: Capabilities = OPENAI_LIKE,
        *,
        timeline: list[tuple[str, Any]] | None = None,
    ) -> None:
        self._caps = capabilities
        self.commands = Record(timeline)
        self.appended_bytes = 0
        self.response_active = False
        self.connected = True

    async def wait_until(
        self, check: Callable[[], bool], what: str, *, safety_s: float = 30.0
    ) -> None:
        """Return once ``check()`` holds, re-checked at each command sent (the
        ``safety_s`` only turns a hang into a failure naming ``what``)."""
        await wait_on(self.commands, check, what, safety_s)

    def share_timeline(self, timeline: list[tuple[str, Any]]) -> None:
        """From now on, also copy each command to ``timeline``."""
        self.commands.timeline = timeline

    @property
    def capabilities(self) -> Capabilities:
        return self._caps

    def names(self) -> list[str]:
        """Command names, consecutive appends folded into one."""
        out: list[str] = []
        for name, _ in self.commands:
            if name == "append_audio" and out and out[-1] == "append_audio":
                continue
            out.append(name)
        return out

    def configure(
        self, *, instructions: str, tools: Sequence[Mapping[str, Any]], voice: str
    ) -> None:
        self.commands.append(("configure", instructions))

    def start_turn(self) -> None:
        self.commands.append(("start_turn", None))

    def append_audio(self, pcm: bytes) -> None:
        self.appended_bytes += len(pcm)
        self.commands.append(("append_audio", len(pcm)))

    def end_turn(self) -> None:
        self.commands.append(("end_turn", None))

    def send_user_text(self, text: str) -> None:
        self.commands.append(("send_user_text", text))

    def send_tool_output(self, call_id: str, output: str) -> None:
        self.commands.append(("send_tool_output", (call_id, output)))

    def request_response(
        self,
        *,
        instructions: str | None = None,
        out_of_band: bool = False,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        self.response_active = True
        self.commands.append(("request_response", instructions))

    def cancel_response(self) -> bool:
        sent = self.response_active
        self.response_active = False
        self.commands.append(("cancel_response", sent))
        return sent

    def truncate(self, item_id: str, audio_end_ms: int) -> None:
        self.commands.append(("truncate", (item_id, audio_end_ms)))

    def read_aloud(self, text: str, *, instructions: str) -> None:
        self.response_active = True
        self.commands.append(("read_aloud", text))

    def outputs(self) -> dict[str, str]:
        return {
            cid: out
            for name, (cid, out) in ((n, a) for n, a in self.commands if n == "send_tool_output")
        }


class Record(list[tuple[str, Any]]):
    """A list of what a fake did; it also copies each entry to a shared
    ``timeline`` (itself a :class:`Record`, or any list) and wakes waiters."""

    def __init__(self, timeline: list[tuple[str, Any]] | None) -> None:
        super().__init__()
        self.timeline = timeline
        self.changed = asyncio.Event()

    def append(self, entry: tuple[str, Any]) -> None:
        super().append(entry)
        if self.timeline is not None:
            self.timeline.append(entry)
        self.changed.set()


async def wait_on(
    record: Record, check: Callable[[], bool], what: str, safety_s: float = 30.0
) -> None:
    """Return once ``check()`` holds, re-checked whenever ``record`` grows (the
    ``safety_s`` only turns a hang into a failure naming ``what``)."""
    try:
        async with asyncio.timeout(safety_s):
            while not check():
                record.changed.clear()
                await record.changed.wait()
    except TimeoutError:
        raise AssertionError(f"gave up after {safety_s:g} s waiting for {what}") from None


@dataclass
class RecordingSource:
    """One source port: logs its controls as ``(op, name)`` into the shared log."""

    name: str
    log: list[tuple[str, Any]]
    played: dict[str, int] = field(default_factory=dict)
    """Milliseconds heard per item (the test sets them: the playout clock)."""
    drained_event: asyncio.Event = field(default_factory=asyncio.Event)
    """Set: everything written has played (clear it to hold ``drained``)."""
    writes: list[tuple[str | None, int]] = field(default_factory=list)

    position: int = 0
    """Samples written so far; this fake's speaker plays everything at once."""

    async def write(self, pcm: bytes, *, item_id: str | None = None) -> None:
        self.writes.append((item_id, len(pcm)))
        self.position += len(pcm) // 2
        self.log.append((f"write:{self.name}", (item_id, len(pcm))))
        await asyncio.sleep(0)

    def queued_ms(self) -> float:
        return 0.0

    @property
    def write_pos(self) -> int:
        return self.position

    async def wait_played(self, position: int) -> None:
        return None  # played the moment it was written

    async def drained(self) -> None:
        await self.drained_event.wait()

    def played_ms(self, item_id: str) -> int:
        return self.played.get(item_id, 0)

    def flush(self) -> None:
        self.log.append(("flush", self.name))

    def duck(self) -> None:
        self.log.append(("duck", self.name))

    def unduck(self) -> None:
        self.log.append(("unduck", self.name))

    def pause(self) -> None:
        self.log.append(("pause", self.name))

    def resume(self) -> None:
        self.log.append(("resume", self.name))


class RecordingAudio:
    """Accepts everything at once; ``played`` says how much of each item was heard."""

    def __init__(
        self,
        *,
        earcons: Mapping[str, bytes] | None = None,
        timeline: list[tuple[str, Any]] | None = None,
    ) -> None:
        self.log = Record(timeline)
        self._earcons = earcons or {}
        """The registry the coordinator plays from: an earcon is logged by its name."""
        self.played: dict[str, int] = {}
        """Milliseconds heard per speech item (shared with the speech source)."""
        self.sources = {
            n: RecordingSource(n, self.log, self.played if n == "speech" else {})
            for n in ("speech", "earcon", "content", "comms")
        }
        for source in self.sources.values():
            source.drained_event.set()
        self.speech_drained = self.sources["speech"].drained_event
        self.content_drained = self.sources["content"].drained_event
        self.mic: asyncio.Queue[MicFrame] = asyncio.Queue()
        self.capture_rate_hz = 24_000
        self.earcons: list[tuple[bytes, bool]] = []
        """Every earcon played: its PCM and ``before_speech``."""
        self.capture_log: list[tuple[str, object]] = []
        """``("capture", on)`` and ``("drain_mic", frames)``, in order (apart from ``log``)."""

    def source(self, name: SourceName) -> RecordingSource:
        return self.sources[name]

    def play_earcon(self, pcm: bytes, *, before_speech: bool = True) -> None:
        self.log.append(("earcon", self.earcon_name(pcm)))
        self.earcons.append((pcm, before_speech))

    def earcon_name(self, pcm: bytes) -> str:
        """The registry's name for ``pcm``; ``"sound"`` for a PCM of no registry."""
        return next((name for name, known in self._earcons.items() if known == pcm), "sound")

    def earcon_names(self) -> list[str]:
        """The names of the earcons played, in order."""
        return [str(arg) for name, arg in self.log if name == "earcon"]

    async def wait_until(
        self, check: Callable[[], bool], what: str, *, safety_s: float = 30.0
    ) -> None:
        """Return once ``check()`` holds, re-checked at each audio action."""
        await wait_on(self.log, check, what, safety_s)

    async def read_mic(self) -> MicFrame:
        return await self.mic.get()

    def set_capture_active(self, active: bool) -> None:
        self.capture_active = active
        self.capture_log.append(("capture", active))

    capture_active = True

    def drain_mic(self) -> int:
        n = 0
        while not self.mic.empty():
            self.mic.get_nowait()
            n += 1
        self.capture_log.append(("drain_mic", n))
        return n

    def set_capture_rate(self, rate_hz: int) -> None:
        self.capture_rate_hz = rate_hz

    def names(self) -> list[str]:
        return [name for name, _ in self.log]


class RecordingVolume:
    """``VolumePort``: records each level asked; every change applies and saves."""

    def __init__(self, level: int = 50) -> None:
        self.level = level
        self.sets: list[int] = []

    async def change(self, percent: int) -> LevelChange:
        self.sets.append(percent)
        self.level = percent
        return LevelChange(percent)

    async def get_level(self) -> int:
        return self.level


@dataclass
class HeldSource(RecordingSource):
    """A source whose speaker the test drives: ``play_to`` moves the played
    position; ``hold()`` makes writes wait (a full ring) until ``release()``."""

    played_pos: int = 0
    closed: bool = False
    _room: asyncio.Event = field(default_factory=asyncio.Event)
    _progress: asyncio.Condition = field(default_factory=asyncio.Condition)

    def __post_init__(self) -> None:
        self._room.set()

    def hold(self) -> None:
        self._room.clear()

    def release(self) -> None:
        self._room.set()

    async def write(self, pcm: bytes, *, item_id: str | None = None) -> None:
        await self._room.wait()
        self.writes.append((item_id, len(pcm)))
        self.position += len(pcm) // 2
        self.log.append((f"write:{self.name}", item_id))

    def queued_ms(self) -> float:
        return (self.position - self.played_pos) / 24

    async def play_to(self, position: int) -> None:
        """The speaker has played up to ``position``: wake who waits for it."""
        async with self._progress:
            self.played_pos = position
            self._progress.notify_all()

    async def close(self) -> None:
        async with self._progress:
            self.closed = True
            self._progress.notify_all()

    async def wait_played(self, position: int) -> None:
        async with self._progress:
            await self._progress.wait_for(lambda: self.played_pos >= position or self.closed)
        if self.played_pos < position:
            raise AudioError("engine closed")


class HeldSpeechAudio(RecordingAudio):
    """:class:`RecordingAudio` whose ``speech`` source is a :class:`HeldSource`."""

    def __init__(self) -> None:
        super().__init__()
        self.speech = HeldSource("speech", self.log, self.played)
        self.speech.drained_event = self.speech_drained
        self.sources["speech"] = self.speech


class RecordingTurn:
    """``TurnControl``: the turn and its state, and every move asked of it."""

    def __init__(self, state: TurnState = TurnState.COMMITTING) -> None:
        self._state = state
        self._turn: TurnRecord | None = TurnRecord()
        self.moves: list[tuple[str, object]] = []

    @property
    def state(self) -> TurnState:
        return self._state

    @property
    def turn(self) -> TurnRecord | None:
        return self._turn

    def set_state(self, state: TurnState) -> None:
        self._state = state
        self.moves.append(("state", state))

    def after_speech(self, outcome: TurnOutcome, *, terminal: bool = False) -> None:
        self.moves.append(("after_speech", (outcome, terminal)))

    def finish_turn(self, outcome: TurnOutcome) -> None:
        self.moves.append(("finish_turn", outcome))
        self._turn = None
        self._state = TurnState.IDLE

    def fail(self) -> None:
        self.moves.append(("fail", None))

    def ends(self) -> list[tuple[str, object]]:
        return [m for m in self.moves if m[0] != "state"]


class RecordingConversation:
    """``ConversationPort``: the conversation's flags, set by the test; what was asked."""

    def __init__(self) -> None:
        self.provider_connected = True
        self.turn_active = False
        self.listening = False
        self.content_in_foreground = False
        self.calls: list[tuple[str, object]] = []
        self.comms: list[bytes] = []

    def begin_inject(self, inject_id: str, prompt: str) -> None:
        self.calls.append(("begin_inject", prompt))
        self.turn_active = True

    def suspend_for_claim(self) -> None:
        self.calls.append(("suspend_for_claim", None))

    def resume_after_claim(self) -> None:
        self.calls.append(("resume_after_claim", None))

    async def comms_write(self, pcm: bytes) -> None:
        self.comms.append(pcm)

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


class Spawner:
    """``Spawn``: runs tasks and keeps them, so a test can cancel what is left."""

    def __init__(self) -> None:
        self.tasks: list[asyncio.Task[Any]] = []

    def __call__(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.tasks.append(task)
        return task

    def names(self) -> list[str]:
        return [t.get_name() for t in self.tasks]

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


class GatedSkill(Skill):
    """A skill whose tools answer what the test set in :attr:`results`, each
    waiting for its gate in :attr:`gates` first (if any); an exception raises."""

    name = "gated"

    def __init__(self, *tools: str) -> None:
        self._tool_names = tools
        self.results: dict[str, ToolResult | Exception] = {}
        self.gates: dict[str, asyncio.Event] = {}
        self.calls: list[str] = []

    @property
    def tools(self) -> list[ToolDefinition]:
        return [ToolDefinition(n, n) for n in self._tool_names]

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        self.calls.append(tool_name)
        gate = self.gates.get(tool_name)
        if gate is not None:
            await gate.wait()
        result = self.results.get(tool_name, ToolResult("{}"))
        if isinstance(result, Exception):
            raise result
        return result

    async def setup(self, ctx: SkillContext) -> None:
        pass

    async def teardown(self) -> None:
        pass
