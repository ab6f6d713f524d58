"""What the listener hears: provider × fault × moment of a turn, as data.

The contract (``docs/providers.md``, "What the listener hears"), checked for
every cell against the real daemon (WAV sound card on a lockstep virtual
clock, the simulator on loopback in the provider's dialect):

- whatever arrived of a reply plays, sample for sample, to its last sample;
- a turn that loses anything ends ``failed`` with exactly one error cue,
  after the last sample that plays; a turn that loses nothing ends
  ``answered`` with none;
- the next turn works.

A fault is a row of :data:`FAULTS`, a moment a row of :data:`MOMENTS`; a cell
that does not apply says why (:func:`not_applicable`). One daemon per
provider runs all of its cells, one turn each, in order: what the speaker
played in a cell is the recording from its press to the next cell's press.
"""

from __future__ import annotations

import asyncio
import itertools
import wave
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from huxleyd.pcm import RATE_HZ
from huxleyd.sim.scenario import (
    FaultKind,
    FaultSpec,
    ResponseSpec,
    Scenario,
    ToolCallSpec,
    TurnSpec,
)
from huxleyd.sim.server import SimDialect
from huxleyd.sim.speech import tone
from huxleyd.turns.news import TurnEnded, TurnNews
from tests.e2e.harness import SPEED, Rig, until

Provider = str
PROVIDERS: tuple[Provider, ...] = ("openai", "xai", "gemini", "cascade")
RUN: tuple[SimDialect, ...] = ("openai", "xai", "gemini")

REPLY_HZ = 440.0
REPLY_MS = 800
LEAD_HZ = 330.0
LEAD_MS = 200
"""The words before a tool call ("Let me check."), finished before the call."""
CUE_HZ = 1500.0
OFFLINE_HZ = 1800.0
CUE_MS = 100
"""The error and offline earcons of the matrix's sound set: tones found by
their pitch. Either counts as the lost turn's cue (one, not one of each)."""
MID_DELTAS = 3
"""Mid-reply: after this many audio chunks (40 ms each)."""
ZERO_SLACK = 1
"""Samples a count may be off by: where a reply stops on a zero sample of its
tone, the silence after it matches one more."""
WINDOW = RATE_HZ // 100
"""10 ms analysis windows."""

RIG_SPEED = SPEED * 2
SIM_SPEED = RIG_SPEED * 8
"""A reply arrives eight times faster than it plays, as from the real services."""
PROVIDER_LINES = "stall_timeout_s = 0.5\ntool_timeout_s = 0.5\nsilent_response_timeout_s = 20.0\n"


# ---------------------------------------------------------------- the rows


@dataclass(frozen=True, slots=True)
class Fault:
    """A row: what goes wrong, and whether it takes the connection with it."""

    name: str
    label: str
    kind: FaultKind | None
    """The peer's fault (None: not the peer's: a tool that never answers)."""
    code: int = 1011
    time_left_s: float = 60.0
    ends_connection: bool = True
    """A turn still running when it strikes loses what had not arrived."""
    only: frozenset[Provider] | None = None
    """The providers it exists for (None: all)."""
    why_not: str = ""
    """Why it does not exist for the others."""
    moments: frozenset[str] | None = None
    """The moments it can strike at (None: all), and why not the others."""
    why_not_moment: str = ""

    def spec(self, after_deltas: int | None) -> FaultSpec | None:
        if self.kind is None:
            return None
        return FaultSpec(
            kind=self.kind, after_deltas=after_deltas, code=self.code, time_left_s=self.time_left_s
        )


GEMINI = frozenset({"gemini"})
OPENAI_XAI = frozenset({"openai", "xai"})
TOOL_WAIT = "tool_wait"
AFTER_REPLY = "after_reply"

FAULTS: tuple[Fault, ...] = (
    Fault("drop", "socket drop (no close frame)", "drop"),
    Fault("close_1000", "close 1000", "close", code=1000),
    Fault("close_1001", "close 1001", "close", code=1001),
    Fault("close_1011", "close 1011", "close", code=1011),
    Fault(
        "go_away_short",
        "`goAway`, short `timeLeft` (50 ms)",
        "go_away",
        time_left_s=0.05,
        only=GEMINI,
        why_not="Gemini's message only",
    ),
    Fault(
        "go_away_long",
        "`goAway`, long `timeLeft` (60 s)",
        "go_away",
        time_left_s=60.0,
        ends_connection=False,
        only=GEMINI,
        why_not="Gemini's message only",
    ),
    Fault(
        "session_expired",
        "session expiry (`session_expired`, close 1001)",
        "session_expired",
        only=OPENAI_XAI,
        why_not=(
            "OpenAI's and xAI's 60-minute cap; Gemini's cap is `goAway` then a close"
            " (rows above); the cascade has no session to expire"
        ),
    ),
    Fault(
        "refused_resume",
        "close 1011, then the resume refused (1007)",
        "refuse_resume",
        only=GEMINI,
        why_not="only Gemini resumes a session with a handle",
    ),
    Fault(
        "tool_timeout",
        "tool timeout (the skill never answers)",
        None,
        ends_connection=False,
        moments=frozenset({TOOL_WAIT}),
        why_not_moment="a tool runs only in the tool wait",
    ),
    Fault(
        "stall",
        "stalled socket (open, silent)",
        "stall",
        moments=frozenset({"before_audio", "mid_reply", TOOL_WAIT, "second_response"}),
        why_not_moment="nothing is due: the keepalive finds a silent socket (tests/faults/test_stalled_provider.py)",
    ),
)


def reply(fault: FaultSpec | None = None) -> ResponseSpec:
    return ResponseSpec(say="the answer", tone_hz=REPLY_HZ, duration_ms=REPLY_MS, fault=fault)


def lead_then(tool: str, fault: FaultSpec | None = None) -> ResponseSpec:
    """Words that finish before a tool call, then the call ("Let me check.")."""
    return ResponseSpec(
        say="let me check",
        tone_hz=LEAD_HZ,
        duration_ms=LEAD_MS,
        tool_calls=(ToolCallSpec(name=tool),),
        fault=fault,
    )


@dataclass(frozen=True, slots=True)
class Moment:
    """A column: when in the turn the fault strikes."""

    name: str
    label: str
    turn: Callable[[Fault], TurnSpec]


def _tool(fault: Fault) -> str:
    return "hang" if fault.name == "tool_timeout" else "slow"


MOMENTS: tuple[Moment, ...] = (
    Moment(
        "before_audio", "before the first audio", lambda f: TurnSpec(responses=(reply(f.spec(0)),))
    ),
    Moment("mid_reply", "mid-reply", lambda f: TurnSpec(responses=(reply(f.spec(MID_DELTAS)),))),
    Moment(
        AFTER_REPLY,
        "after the whole reply arrived",
        lambda f: TurnSpec(responses=(reply(f.spec(None)),)),
    ),
    Moment(
        TOOL_WAIT,
        "during the tool wait",
        lambda f: TurnSpec(responses=(lead_then(_tool(f), f.spec(None)), reply())),
    ),
    Moment(
        "second_response",
        "mid-reply of the response after a tool",
        lambda f: TurnSpec(responses=(lead_then("slow"), reply(f.spec(MID_DELTAS)))),
    ),
)

NOT_RUN: dict[Provider, str] = {
    "cascade": (
        "the cascade's peers (the recogniser and chat HTTP stages, the TTS socket) have no"
        " fault script at a moment of a turn yet, and its speech is synthesised, not a tone"
        " the judge can match sample for sample; its stage failures are tested in"
        " tests/providers/cascade and tests/e2e/test_cascade_runtime.py"
    ),
}
"""Providers whose cells apply but are not run yet, and why (said in the table)."""


def not_applicable(provider: Provider, fault: Fault, moment: Moment) -> str | None:
    """Why the cell does not apply (None: it does)."""
    if fault.only is not None and provider not in fault.only:
        return fault.why_not
    if fault.moments is not None and moment.name not in fault.moments:
        return fault.why_not_moment
    return None


def loses(fault: Fault, moment: Moment) -> bool:
    """The contract's verdict: the turn loses something (a reply not arrived,
    a tool output never received) when the connection ends before it is over."""
    return fault.ends_connection and moment.name != AFTER_REPLY


@dataclass(frozen=True, slots=True)
class Cell:
    provider: Provider
    fault: Fault
    moment: Moment

    @property
    def key(self) -> str:
        return f"{self.provider}/{self.fault.name}/{self.moment.name}"


def cells(provider: Provider) -> list[Cell]:
    """The cells that run for ``provider``, in the order its daemon runs them."""
    if provider in NOT_RUN:
        return []
    return [
        Cell(provider, f, m)
        for f in FAULTS
        for m in MOMENTS
        if not_applicable(provider, f, m) is None
    ]


# ---------------------------------------------------------------- the judge


@dataclass(slots=True)
class Heard:
    """What one cell's turn did, from the speaker and the turn's news."""

    outcome: str | None = None
    cues: float = 0.0
    cue_at: int | None = None
    """First sample of the first cue (cell-relative)."""
    speech_end: int = 0
    """One past the last reply sample that played (cell-relative)."""
    played: int = 0
    """Reply samples that played, exact and in order."""
    arrived: int = 0
    """Reply samples the daemon received."""
    sent: int = 0
    """Reply samples the peer meant to send (the whole script)."""
    reached_peer: bool = False
    struck: bool = True
    """The peer injected the cell's fault (or the fault is not the peer's)."""
    problems: list[str] = field(default_factory=list)


def write_sounds(directory: Path) -> Path:
    """A sound set where every earcon is a short tone of its own pitch."""
    directory.mkdir(parents=True, exist_ok=True)
    pitches = {
        "listen_start": 900.0,
        "listen_stop": 950.0,
        "thinking": 1100.0,
        "error": CUE_HZ,
        "offline": OFFLINE_HZ,
        "timer": 2000.0,
        "too_short": 2200.0,
    }
    for name, hz in pitches.items():
        with wave.open(str(directory / f"{name}.wav"), "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(RATE_HZ)
            out.writeframes(tone(hz, CUE_MS))
    return directory


def _pitch_windows(samples: np.ndarray, hz: float, share: float = 0.3) -> np.ndarray:
    count = len(samples) // WINDOW
    if count == 0:
        return np.zeros(0, dtype=bool)
    blocks = samples[: count * WINDOW].reshape(count, WINDOW)
    t = np.arange(WINDOW) / RATE_HZ
    re = blocks @ np.cos(2 * np.pi * hz * t)
    im = blocks @ np.sin(2 * np.pi * hz * t)
    power = (re**2 + im**2) * 2 / WINDOW
    energy = np.sum(blocks**2, axis=1)
    found: np.ndarray = (energy > WINDOW * 300.0**2) & (power >= share * np.maximum(energy, 1.0))
    return found


def exact_prefix(out: np.ndarray, sent: np.ndarray) -> tuple[int, int]:
    """(samples of ``sent`` found in ``out`` in order and exact from its start,
    index one past the last of them); (0, 0) when its start never played."""
    starts = np.flatnonzero(out == sent[1]) - 1  # sample 0 of a tone is 0
    best = (0, 0)
    for start in starts[starts >= 0]:
        window = out[start : start + len(sent)]
        if len(window) > 8 and np.array_equal(window[:8], sent[:8]):
            same = window == sent[: len(window)]
            n = int(np.argmin(same)) if not same.all() else len(window)
            if n > best[0]:
                best = (n, int(start) + n)
    return best


def _pcm(hz: float, ms: int) -> np.ndarray:
    return np.frombuffer(tone(hz, ms), dtype="<i2").astype(np.float64)


def judge(cell: Cell, out: np.ndarray, heard: Heard) -> Heard:
    """Read the cell's recording; name every way it breaks the contract."""
    cue = _pitch_windows(out, CUE_HZ) | _pitch_windows(out, OFFLINE_HZ)
    heard.cues = round(float(cue.sum()) * WINDOW * 1000 / RATE_HZ / CUE_MS, 1)
    hits = np.flatnonzero(cue)
    heard.cue_at = int(hits[0]) * WINDOW if len(hits) else None
    tones = [(LEAD_HZ, LEAD_MS)] if cell.moment.name in (TOOL_WAIT, "second_response") else []
    tones.append((REPLY_HZ, REPLY_MS))
    heard.sent = sum(ms * RATE_HZ // 1000 for _, ms in tones)
    for hz, ms in tones:
        n, end = exact_prefix(out, _pcm(hz, ms))
        heard.played += n
        heard.speech_end = max(heard.speech_end, end)
    lost = loses(cell.fault, cell.moment)
    want = "failed" if lost else "answered"
    if heard.outcome != want:
        heard.problems.append(f"outcome {heard.outcome}, not {want}")
    if abs(heard.played - heard.arrived) > ZERO_SLACK:
        heard.problems.append(
            f"played {heard.played} of the {heard.arrived} samples that arrived "
            f"({ms_of(heard.played)} of {ms_of(heard.arrived)} ms)"
        )
    if not lost and abs(heard.arrived - heard.sent) > ZERO_SLACK:
        heard.problems.append(f"{ms_of(heard.arrived)} of {ms_of(heard.sent)} ms arrived")
    cues_wanted = 1 if lost else 0
    if abs(heard.cues - cues_wanted) >= 0.5:
        heard.problems.append(f"{heard.cues:g} cues, not {cues_wanted}")
    if heard.cue_at is not None and heard.cue_at + WINDOW < heard.speech_end:
        heard.problems.append(
            f"cue at {ms_of(heard.cue_at)} ms, before the last sample ({ms_of(heard.speech_end)} ms)"
        )
    if not heard.reached_peer:
        heard.problems.append("the turn never reached the peer (the turn before broke it)")
    if not heard.struck:
        heard.problems.append("the peer never injected the fault")
    return heard


def ms_of(samples: int) -> int:
    return samples * 1000 // RATE_HZ


# ---------------------------------------------------------------- the run


def scenario(provider: Provider) -> Scenario:
    """A warm-up turn, every cell's turn in order, then a plain last turn."""
    plain = TurnSpec(responses=(reply(),))
    turns = [plain, *(c.moment.turn(c.fault) for c in cells(provider)), plain]
    return Scenario(turns=tuple(turns))


def quick_backoff() -> itertools.repeat[float]:
    return itertools.repeat(0.02)


class Run:
    """One provider's daemon, running its cells one turn at a time."""

    def __init__(self, rig: Rig) -> None:
        self.rig = rig
        rig.skill("scenario").slow_s = 0.1  # the tool wait a fault strikes in (real time)
        self.ended: list[str] = []
        rig.coordinator.subscribe(self._news)

    def _news(self, news: TurnNews) -> None:
        if isinstance(news, TurnEnded) and news.turn.outcome is not None:
            self.ended.append(news.turn.outcome.value)

    async def settled(self) -> None:
        """Connected, no turn, nothing left to play (speech or earcon)."""
        rig = self.rig
        engine = rig.rt.parts.engine
        await until(lambda: rig.rt.connection_state == "connected", "connected")
        await until(lambda: rig.idle() and rig.coordinator.turn is None, "idle")
        await engine.source("speech").drained()
        await engine.source("earcon").drained()

    async def press_and_speak(self) -> None:
        """Hold the button while the mic hears 300 ms of a tone, then release
        (waiting on the turn's state and what was sent, never on a timer)."""
        rig = self.rig
        t = np.arange(RATE_HZ * 3 // 10) / RATE_HZ
        pcm = (np.sin(2 * np.pi * 300.0 * t) * 8000).astype("<i2").tobytes()
        rig.rt.parts.button.press()
        await until(lambda: rig.coordinator.listening, "listening")
        rig.backend.feed_mic(pcm)
        await until(lambda: rig.backend.mic_queued_frames() == 0, "mic consumed")
        turn = rig.coordinator.turn
        await until(lambda: turn is not None and turn.audio_sent_ms >= 250, "the words sent")
        rig.rt.parts.button.release()

    async def turn(self) -> tuple[str | None, int, bool]:
        """Press, speak, release; wait for the turn to end and everything it
        plays (its cue too) to play. (outcome, audio arrived, reached the peer)."""
        rig = self.rig
        ended, commits = len(self.ended), len(rig.sim.record.committed_audio)
        received = rig.coordinator.reply_audio_received_bytes
        await self.press_and_speak()
        await until(lambda: len(self.ended) > ended, "the turn ended", timeout_s=30.0)
        await self.settled()
        await asyncio.sleep(0)
        arrived = (rig.coordinator.reply_audio_received_bytes - received) // 2
        reached = len(rig.sim.record.committed_audio) > commits
        return self.ended[ended], arrived, reached

    async def run(self, provider: Provider) -> dict[str, Heard]:
        """Every cell of ``provider``, judged (cell key → what was heard)."""
        rig = self.rig
        await self.settled()
        outcome, _, _ = await self.turn()
        assert outcome == "answered", f"the warm-up turn: {outcome}"
        ran: list[tuple[Cell, int, Heard]] = []
        for cell in cells(provider):
            start, faults = len(rig.speaker()), len(rig.sim.record.faults)
            outputs = len(rig.sim.record.tool_outputs)
            outcome, arrived, reached = await self.turn()
            if cell.fault.kind is None:  # the tool timed out: the model was told so
                told = list(rig.sim.record.tool_outputs.values())[outputs:]
                struck = any("did not answer within" in o for o in told)
            else:
                struck = rig.sim.record.faults[faults:] == [cell.fault.kind]
            heard = Heard(outcome=outcome, arrived=arrived, reached_peer=reached, struck=struck)
            ran.append((cell, start, heard))
        last = len(rig.speaker())
        outcome, _, reached = await self.turn()
        out = rig.speaker()
        ends = [start for _, start, _ in ran[1:]] + [last]
        judged = [judge(c, out[s:e], h) for (c, s, h), e in zip(ran, ends, strict=True)]
        for before, after in itertools.pairwise(judged):
            if not after.reached_peer:
                before.problems.append("the next turn never reached the peer")
        if judged and not (outcome == "answered" and reached):
            judged[-1].problems.append(f"the next turn: {outcome}")
        return {c.key: h for (c, _, _), h in zip(ran, judged, strict=True)}


# ---------------------------------------------------------------- the table

TABLE_START = "<!-- listener-matrix:start (generated by tests/providers/listener_matrix.py) -->"
TABLE_END = "<!-- listener-matrix:end -->"


def expected(cell: Cell) -> str:
    return "failed, 1 cue" if loses(cell.fault, cell.moment) else "answered, 0 cues"


def table_markdown() -> str:
    """The matrix's size and, per fault and moment, what each provider must do."""
    run = {p: len(cells(p)) for p in PROVIDERS}
    total = len(PROVIDERS) * len(FAULTS) * len(MOMENTS)
    applies = sum(
        not_applicable(p, f, m) is None for p in PROVIDERS for f in FAULTS for m in MOMENTS
    )
    na: dict[str, str] = {}
    lines = [
        f"{len(PROVIDERS)} providers × {len(FAULTS)} faults × {len(MOMENTS)} moments = "
        f"{total} cells; {applies} apply, {total - applies} do not (n/a, why below the "
        f"table); {sum(run.values())} run, every one passing "
        f"({', '.join(f'{p} {n}' for p, n in run.items() if n)}); "
        f"{applies - sum(run.values())} apply but are not run yet "
        f"({', '.join(p for p in NOT_RUN)}: why below the table). A cell says what "
        "the contract wants and the suite checks: the turn's outcome and how many "
        "error cues (and always: everything that arrived played, the cue after it, "
        "the next turn works).",
        "",
        "| fault | moment | " + " | ".join(PROVIDERS) + " |",
        "| --- | --- | " + " | ".join("---" for _ in PROVIDERS) + " |",
    ]
    for fault in FAULTS:
        for moment in MOMENTS:
            row = []
            for provider in PROVIDERS:
                why = not_applicable(provider, fault, moment)
                if why is None and provider in NOT_RUN:
                    row.append(f"not run ({expected(Cell(provider, fault, moment))})")
                elif why is None:
                    row.append(expected(Cell(provider, fault, moment)))
                else:
                    mark = na.setdefault(why, f"n/a{len(na) + 1}")
                    row.append(mark)
            lines.append(f"| {fault.label} | {moment.label} | " + " | ".join(row) + " |")
    lines.append("")
    lines += [f"- {mark}: {why}." for why, mark in na.items()]
    lines += [f"- not run ({p}): {why}." for p, why in NOT_RUN.items()]
    return "\n".join(lines)


def with_table(doc: str) -> str:
    head, _, rest = doc.partition(TABLE_START)
    _, _, tail = rest.partition(TABLE_END)
    return f"{head}{TABLE_START}\n{table_markdown()}\n{TABLE_END}{tail}"
