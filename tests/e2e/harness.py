"""End-to-end rig: the real daemon runtime with a WAV sound card, mock pins,
and the simulator on loopback, all running faster than real time.

Everything is real except where a Pi would have hardware: gpiozero's
MockFactory stands for the button and LEDs, a lockstep :class:`WavBackend` for the
sound card (driven by a :class:`ScaledClock`), ``huxleyd.sim`` for OpenAI.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from gpiozero.pins.mock import MockFactory, MockPWMPin

from huxleyd.app.parts import Overrides
from huxleyd.app.runtime import Runtime
from huxleyd.audio.pacing import ScaledClock
from huxleyd.config.load import load_config
from huxleyd.sim.scenario import ResponseSpec, Scenario, ToolCallSpec, TurnSpec
from huxleyd.sim.server import SimDialect, SimServer
from huxleyd.turns.coordinator import Coordinator
from tests.fakes.audio_backends import LockstepWavBackend
from tests.fakes.distributions import installed_skill
from tests.fakes.notify import RecordingNotifier

ROOT = Path(__file__).resolve().parents[2]
RATE = 24_000
SPEED = 4.0
"""The audio clock and the simulator run this many times faster than real time."""

TEST_SKILL = '''
"""Skills for the end-to-end scenarios; written against huxley_sdk only."""
import asyncio, json
from array import array
from datetime import timedelta
from huxley_sdk import (
    AudioStream, ContentType, InputClaim, PlaySound, ToolDefinition, ToolResult,
)

CHIME = (b"\\x00\\x40" * 2400)  # 100 ms of a constant +0.5 full-scale level: easy to find
COUNTER_BASE = 1000
COUNTER_PERIOD = 20000
RADIO_LEVEL = 8000
CHUNK = 2400  # samples: 100 ms


def counter_pcm(start, count):
    """Samples ``start``..``start+count`` of a slow sawtooth: each one says where it is."""
    return array("h", (COUNTER_BASE + (start + i) % COUNTER_PERIOD for i in range(count))).tobytes()


class ScenarioSkill:
    name = "scenario"

    def __init__(self):
        self.slow_s = 0.3
        self.events = []
        self.mic = bytearray()
        self.counter_s = 3.0
        self.radio_s = 6.0
        self.patience_s = 0.3
        self.claim_handle = None

    @property
    def tools(self):
        names = ("news", "song", "explode", "hang", "counter", "radio", "impatient",
                 "claim", "bad_claim", "slow")
        return [ToolDefinition(n, n) for n in names]

    async def setup(self, ctx):
        self.ctx = ctx

    async def handle(self, tool_name, args):
        if tool_name == "news":
            return ToolResult(json.dumps({"headline": "all quiet"}), PlaySound(CHIME))
        if tool_name == "song":
            return ToolResult("{}", AudioStream(factory=self._song, on_complete_prompt="Say the song ended.", label="song"))
        if tool_name == "counter":
            # NONMIXABLE, patient: pauses under speech and resumes where it was.
            stream = AudioStream(factory=lambda: self._counter("counter", self.counter_s),
                                 label="counter", patience=timedelta(minutes=1))
            return ToolResult("{}", stream)
        if tool_name == "radio":
            stream = AudioStream(factory=self._radio, content_type=ContentType.MIXABLE, label="radio")
            return ToolResult("{}", stream)
        if tool_name == "impatient":
            stream = AudioStream(factory=lambda: self._counter("impatient", 30.0), label="impatient",
                                 patience=timedelta(seconds=self.patience_s),
                                 on_patience_expired=self._expired)
            return ToolResult("{}", stream)
        if tool_name in ("claim", "bad_claim"):
            return ToolResult("{}", self.make_claim(fail=tool_name == "bad_claim"))
        if tool_name == "hang":
            await asyncio.sleep(3600)
        if tool_name == "slow":  # a tool that takes a while (real time), then answers
            await asyncio.sleep(self.slow_s)
            return ToolResult(json.dumps({"done": True}))
        raise RuntimeError("the skill exploded")

    def make_claim(self, fail=False):
        async def on_mic_frame(pcm):
            if fail:
                raise RuntimeError("the claim exploded")
            self.mic.extend(pcm)

        async def on_claim_end(reason):
            self.events.append("claim:" + reason.value)

        return InputClaim(on_mic_frame=on_mic_frame, on_claim_end=on_claim_end, title="test claim")

    async def start_claim(self, fail=False):
        """Take the microphone now (``ctx.start_input_claim``); the handle is kept."""
        self.claim_handle = await self.ctx.start_input_claim(self.make_claim(fail))
        return self.claim_handle

    async def _song(self):
        self.events.append("song:start")
        try:
            for _ in range(10):  # 1 s of a -6 dBFS square-ish level
                yield b"\\x00\\x40\\x00\\xc0" * 1200
            self.events.append("song:end")
        finally:
            self.events.append("song:finally")

    async def _counter(self, label, seconds):
        self.events.append(label + ":start")
        try:
            total = int(seconds * 24000)
            for start in range(0, total, CHUNK):
                yield counter_pcm(start, min(CHUNK, total - start))
            self.events.append(label + ":end")
        finally:
            self.events.append(label + ":finally")

    async def _radio(self):
        self.events.append("radio:start")
        try:
            for _ in range(int(self.radio_s * 10)):
                yield array("h", [RADIO_LEVEL] * CHUNK).tobytes()
            self.events.append("radio:end")
        finally:
            self.events.append("radio:finally")

    async def _expired(self):
        self.events.append("impatient:expired")

    async def teardown(self):
        pass
'''
COUNTER_BASE = 1000
COUNTER_PERIOD = 20000
RADIO_LEVEL = 8000
"""Mirrors of the test skill's constants, for the assertions."""

SPEECH_HZ = 330.0
"""The pitch a scripted reply is spoken at (:func:`speech`)."""
ANNOUNCE = "ding ding"
ANNOUNCE_HZ = 550.0
"""The simulator's tone speech says "ding" at 550 Hz: an announcement easy to find."""


def turn(*responses: ResponseSpec) -> TurnSpec:
    """One user turn of a scenario: its responses in order."""
    return TurnSpec(responses=responses)


def speech(ms: int = 200, hz: float = SPEECH_HZ) -> ResponseSpec:
    """A reply that speaks a tone of ``hz`` for ``ms``."""
    return ResponseSpec(say="words", tone_hz=hz, duration_ms=ms)


def call(tool: str, /, **arguments: object) -> ResponseSpec:
    """A response that only calls ``tool`` with ``arguments``."""
    return ResponseSpec(tool_calls=(ToolCallSpec(name=tool, arguments=dict(arguments)),))


@contextmanager
def scenario_skill_installed(tmp: Path) -> Iterator[None]:
    """Register ``scenario`` under ``huxley.skills`` through a real dist-info."""
    with installed_skill(
        tmp / "site",
        "e2e-scenario-skill",
        "scenario = e2e_scenario_skill:ScenarioSkill",
        TEST_SKILL,
    ):
        yield


def write_config(
    tmp: Path,
    *,
    skills: tuple[str, ...] = ("system", "scenario"),
    sounds_dir: Path | None = None,
    skill_config: Mapping[str, str] | None = None,
    provider_kind: str = "openai",
    provider_lines: str = "",
    extra_tables: str = "",
    persona_lines: str = "",
) -> Path:
    """Write ``huxleyd.toml`` and the persona; ``skill_config`` maps a skill to
    the TOML lines of its table (``{"memos": "max_seconds = 5"}``);
    ``extra_tables`` are whole tables appended (``[wake]``…); ``persona_lines``
    are more persona tables (``[updates]\nreboot = "never"``)."""
    (tmp / "personas").mkdir(exist_ok=True)
    extra = skill_config or {}
    skill_tables = "\n".join(f"[skills.{s}]\n{extra.get(s, '')}" for s in skills)
    (tmp / "personas" / "default.toml").write_text(
        f'name = "Test"\ntimezone = "Europe/Madrid"\ninstructions = "Be brief."\n{skill_tables}\n'
        f"{persona_lines}\n"
    )
    path = tmp / "huxleyd.toml"
    if "silent_response_timeout_s" not in provider_lines:
        provider_lines = f"silent_response_timeout_s = 20.0\n{provider_lines}"
    path.write_text(
        f"""
[daemon]
sounds_dir = "{sounds_dir or ROOT / "sounds"}"
[storage]
state_dir = "{tmp / "state"}"
[provider]
kind = "{provider_kind}"
{provider_lines}
[audio]
backend = "wav"
[hardware]
boards_dir = "{ROOT / "hw"}"
[control]
socket_path = "{tmp / "control.sock"}"
socket_group = ""
{extra_tables}
"""
    )
    return path


class Rig:
    """A running daemon; use as ``async with Rig(tmp, scenario) as rig``."""

    def __init__(
        self,
        tmp: Path,
        scenario: Scenario,
        *,
        skills: tuple[str, ...] = ("system", "scenario"),
        earcons: bool = True,
        speed: float = SPEED,
        skill_config: Mapping[str, str] | None = None,
        kind: SimDialect = "openai",
        provider_lines: str = "",
        sim_speed: float | None = None,
        skill_retry_delays_s: tuple[float, ...] | None = None,
        extra_tables: str = "",
        persona_lines: str = "",
        reboot_flag: Path | None = None,
        sounds_dir: Path | None = None,
        provider_backoff: Callable[[], Iterator[float]] | None = None,
        update_state: Path | None = None,
    ) -> None:
        """``sounds_dir``: the earcons to play (default: the shipped ones);
        ``provider_backoff``: the waits between the provider's tries.
        ``sim_speed``: the simulator's own pace (default: the clock's ``speed``;
        ``math.inf`` sends each reply's audio in one burst, as a fast link does)."""
        self.tmp = tmp
        self.kind = kind
        """The provider kind the daemon is configured with; the sim speaks its dialect."""
        self.earcons = earcons
        self.sounds_dir = sounds_dir
        self.provider_backoff = provider_backoff
        self.scenario = scenario
        self.skills = skills
        self.skill_config = skill_config
        self.skill_retry_delays_s = skill_retry_delays_s
        self.provider_lines = provider_lines
        """Extra TOML lines of ``[provider]`` (``transcription_model = "…"``)."""
        self.extra_tables = extra_tables
        self.persona_lines = persona_lines
        self.reboot_flag = reboot_flag or tmp / "no-reboot-required"
        """The daemon's ``/run/reboot-required`` (never the host's)."""
        self.update_state = update_state or tmp / "no-update-state.json"
        """``huxleyctl update``'s record (never the host's)."""
        self.clock = ScaledClock(speed, start_s=1000.0)
        # Lockstep: a loaded machine must not leave gaps a Pi would not.
        self.backend = LockstepWavBackend(keep_speaker=True)
        self.sim = SimServer(
            scenario, speed=speed if sim_speed is None else sim_speed, synth="tone", dialect=kind
        )
        self.notifier = RecordingNotifier()
        self.pins = MockFactory(pin_class=MockPWMPin)
        self.runtime: Runtime | None = None

    def hold_lockstep(self, loop: asyncio.AbstractEventLoop) -> None:
        """The WAV backend waits for ``loop`` after each period (a real card keeps its own time)."""
        self.backend.bind(loop)

    def release_lockstep(self) -> None:
        self.backend.release()

    async def __aenter__(self) -> Rig:
        self.hold_lockstep(asyncio.get_running_loop())
        await self.sim.__aenter__()
        no_sounds = self.tmp / "no-sounds"
        no_sounds.mkdir(exist_ok=True)
        sounds = self.sounds_dir if self.earcons else no_sounds
        config = load_config(
            write_config(
                self.tmp,
                skills=self.skills,
                sounds_dir=sounds,
                skill_config=self.skill_config,
                provider_kind=self.kind,
                provider_lines=self.provider_lines,
                extra_tables=self.extra_tables,
                persona_lines=self.persona_lines,
            )
        )
        self.runtime = Runtime(
            config,
            Overrides(
                backend=self.backend,
                clock=self.clock,
                pin_factory=self.pins,
                provider_url=self.sim.url,
                notifier=self.notifier,
                env={},
                skill_retry_delays_s=self.skill_retry_delays_s,
                reboot_flag=self.reboot_flag,
                provider_backoff=self.provider_backoff,
                update_state=self.update_state,
            ),
        )
        await self.runtime.start()
        # Full volume: 0 dB software gain, so output samples equal what was queued.
        await self.runtime.parts.volume.set_level(100)
        await until(lambda: self.rt.connection_state == "connected", "provider connected")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release_lockstep()  # close() joins the audio thread from this loop
        if self.runtime is not None:
            await self.runtime.close()
        self.pins.close()
        await self.sim.__aexit__(None, None, None)

    @property
    def rt(self) -> Runtime:
        assert self.runtime is not None
        return self.runtime

    def speaker(self) -> np.ndarray:
        return self.backend.speaker_samples()[:, 0].astype(np.float64)

    async def say_into_mic(self, seconds: float = 0.6, freq: float = 300.0) -> None:
        """Hold the button while the mic hears a tone, then release."""
        t = np.arange(int(RATE * seconds)) / RATE
        tone = (np.sin(2 * np.pi * freq * t) * 8000).astype("<i2").tobytes()
        button = self.rt.parts.button
        button.press()
        await asyncio.sleep(0.05)
        self.backend.feed_mic(tone)
        await until(lambda: self.backend.mic_queued_frames() == 0, "mic consumed")
        await asyncio.sleep(0.1)
        button.release()

    def sent_types(self) -> list[str]:
        """Event types (OpenAI, xAI) or message labels (Gemini) the sim received."""
        return self.sim.record.types_received()

    def skill(self, name: str) -> Any:
        """The loaded skill instance called ``name`` (to read what it recorded)."""
        assert self.runtime is not None
        return next(s for s in self.runtime.parts.host.skills if s.name == name)

    @property
    def coordinator(self) -> Coordinator:
        return self.rt.parts.coordinator

    def media_playing(self) -> bool:
        return self.rt.parts.coordinator.media.playing

    def idle(self) -> bool:
        coordinator = self.rt.parts.coordinator
        return coordinator is not None and coordinator.state.value == "idle"

    def announced(self, prompt: str) -> int:
        """How many ``response.create`` carried ``prompt`` (an inject, a completion prompt)."""
        return sum(
            1
            for e in self.sim.received
            if e.type == "response.create"
            and e.response is not None
            and (e.response.instructions or "").endswith(prompt)
        )

    def appends(self) -> int:
        return sum(1 for e in self.sim.received if e.type == "input_audio_buffer.append")


async def until(predicate: Callable[[], Any], what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        await asyncio.sleep(0.01)


async def until_async(
    predicate: Callable[[], Awaitable[Any]], what: str, timeout_s: float = 60.0
) -> None:
    """:func:`until` for a check that must await (a storage read)."""
    deadline = time.monotonic() + timeout_s
    while not await predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        await asyncio.sleep(0.01)


def level_dbfs(samples: np.ndarray) -> float:
    rms = float(np.sqrt(np.mean(np.square(samples)))) if len(samples) else 0.0
    return -120.0 if rms == 0 else float(20 * np.log10(rms / 32768.0))


def first_nonsilent(samples: np.ndarray, start: int = 0, threshold: float = 200.0) -> int | None:
    hits = np.flatnonzero(np.abs(samples[start:]) > threshold)
    return None if len(hits) == 0 else int(start + hits[0])


def silent_run_samples(samples: np.ndarray, min_run: int = 4) -> int:
    """How many samples lie in runs of at least ``min_run`` exact zeros."""
    zero = np.concatenate(([0], (samples == 0).astype(np.int8), [0]))
    edges = np.flatnonzero(np.diff(zero))
    runs = edges[1::2] - edges[::2]
    return int(runs[runs >= min_run].sum())


def tone_windows(
    samples: np.ndarray, hz: float, *, window: int = RATE // 50, share: float = 0.6
) -> np.ndarray:
    """Start indices of the ``window``-sample blocks where a sine at ``hz`` carries
    at least ``share`` of the energy (and the block is not near-silent)."""
    count = len(samples) // window
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    blocks = samples[: count * window].reshape(count, window)
    t = np.arange(window) / RATE
    re = blocks @ np.cos(2 * np.pi * hz * t)
    im = blocks @ np.sin(2 * np.pi * hz * t)
    power = (re**2 + im**2) * 2 / window
    energy = np.sum(blocks**2, axis=1)
    loud = energy > window * 200.0**2
    return np.flatnonzero(loud & (power >= share * np.maximum(energy, 1.0))) * window


def counter_runs(samples: np.ndarray) -> list[tuple[int, int, int]]:
    """``(output index, first value, length)`` of each run of consecutive counter samples.

    The test skill's counter stream steps by exactly +1 (wrapping from the
    top of its period back to its base); any other step ends a run, so a
    fade, a gap, a skipped or a repeated sample shows as a new run.
    """
    values = samples.astype(np.int64)
    steps = np.diff(values)
    wrap = -(COUNTER_PERIOD - 1)
    inside = (values[:-1] >= COUNTER_BASE) & (values[:-1] < COUNTER_BASE + COUNTER_PERIOD)
    ok = inside & ((steps == 1) | (steps == wrap))
    runs: list[tuple[int, int, int]] = []
    start: int | None = None
    for i, good in enumerate(ok.tolist()):
        if good and start is None:
            start = i
        elif not good and start is not None:
            runs.append((start, int(values[start]), i - start + 1))
            start = None
    if start is not None:
        runs.append((start, int(values[start]), len(values) - start))
    return runs
