"""``make demo``: a scripted conversation that plays by itself, narrated.

Runs the real daemon (the same runtime as ``make run``) against the
built-in simulator, presses the (virtual) button itself, and tells in the
terminal what happens at each step, from the daemon's own ``watch`` feed:

1. the button, the listen chime, a question, a tool (the clock), the answer;
2. a question that starts music (a local file as a radio station);
3. a question while the music plays: it ducks under the answer and comes back;
4. "stop the music".

Sound goes to the sound card when one opens, else to a WAV file that is
valid while it grows (``var/demo/speaker.wav``: play it during or after).
While it runs, ``huxleyctl --config var/demo/huxleyd.toml watch`` shows the
same events. Nothing here is an AI: the simulator pretends to hear the
scripted question whatever the microphone gets.

Usage: ``python -m huxleyd.app.demo [--dir var/demo] [--speed 1]``
(``--speed`` > 1 runs the clock and the simulator faster, on the WAV file.)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

from huxleyd.app.control import RuntimeControl
from huxleyd.app.parts import Overrides
from huxleyd.app.runtime import Runtime
from huxleyd.audio.backends.growing_wav import GrowingWavWriter
from huxleyd.config.load import load_config
from huxleyd.control.render import watch_text
from huxleyd.control.server import ControlServer
from huxleyd.control.watch import WatchEvent
from huxleyd.errors import HuxleydError
from huxleyd.logs import add_log_file, setup
from huxleyd.pcm import RATE_HZ
from huxleyd.providers.base import ConnectionState
from huxleyd.turns.outputs import Activity

ROOT = Path(__file__).resolve().parents[2]
MUSIC_S = 40

STEPS: tuple[tuple[str, str], ...] = (
    ("what time is it", "You press the button and ask the time: a tool answers, then the voice."),
    ("play some music", "You ask for music: a local file plays as a radio station."),
    (
        "how are you today",
        "You ask something while the music plays: it ducks under the answer, then comes back.",
    ),
    ("stop the music", "You ask to stop the music."),
)

SCENARIO = """\
name = "make demo"
default_reply = "That is all the demo knows. This is the simulator, not an AI."

[[turns]]
hear = "what time is it"
[[turns.responses]]
tool_calls = [{ name = "get_current_time" }]
[[turns.responses]]
say = "Here is the time, as your clock tells it."

[[turns]]
hear = "play some music"
[[turns.responses]]
tool_calls = [{ name = "play_radio", arguments = { station = "demo" } }]
[[turns.responses]]
say = "Here is some music."

[[turns]]
hear = "how are you today"
[[turns.responses]]
say = "I am well, thank you. Listen: the music is quieter while I talk, and comes back after."

[[turns]]
hear = "stop the music"
[[turns.responses]]
tool_calls = [{ name = "stop_radio" }]
[[turns.responses]]
say = "The music is off. That was the demo."
"""


def write_demo(directory: Path, *, speed: float) -> Path:
    """The demo's config, persona, scenario and music under ``directory``; the config path."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "personas").mkdir(exist_ok=True)
    write_music(directory / "music.wav")
    (directory / "scenario.toml").write_text(SCENARIO, encoding="utf-8")
    (directory / "personas" / "demo.toml").write_text(
        'name = "Huxley"\n'
        'instructions = "Be brief."\n'
        "[skills.system]\n"
        "[skills.radio]\n"
        "[skills.radio.stations]\n"
        f'demo = "{directory.resolve() / "music.wav"}"\n',
        encoding="utf-8",
    )
    config = directory / "huxleyd.toml"
    config.write_text(
        f"""# Written by `make demo` (huxleyd/app/demo.py); rewritten on every run.
[daemon]
persona = "demo"
personas_dir = "personas"
sounds_dir = "{ROOT / "sounds"}"
[storage]
state_dir = "state"
[provider]
kind = "sim"
sim_scenario = "scenario.toml"
sim_speed = {speed}
# The script answers each question once; a slow machine must not make the
# daemon ask again (a retry would move the script on).
silent_response_timeout_s = 60.0
transcription_model = "gpt-4o-mini-transcribe"
[audio]
backend = "{"wav" if speed != 1 else "auto"}"
speaker_wav = "speaker.wav"
[hardware]
board = "gpio-basic"
boards_dir = "{ROOT / "hw"}"
[control]
socket_path = "control.sock"
socket_group = ""
""",
        encoding="utf-8",
    )
    return config


def write_music(path: Path) -> None:
    """A few gentle chords: something to hear duck (generated, no file shipped)."""
    t = np.arange(MUSIC_S * RATE_HZ) / RATE_HZ
    chords = ((220.0, 277.2, 329.6), (196.0, 246.9, 293.7), (174.6, 220.0, 261.6))
    wave = np.zeros_like(t)
    for i, chord in enumerate(chords):
        mask = (t // 2).astype(int) % len(chords) == i
        for hz in chord:
            wave[mask] += np.sin(2 * math.pi * hz * t[mask])
    wave *= 0.12 * (0.6 + 0.4 * np.sin(2 * math.pi * 0.25 * t))
    pcm = (wave * 32767).astype("<i2").tobytes()
    writer = GrowingWavWriter(path, channels=1, rate_hz=RATE_HZ)
    writer.write(pcm)
    writer.close()


class Narrator:
    """Prints the steps and what the daemon reports, as a person reads them."""

    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out or sys.stdout
        self.seen: list[WatchEvent] = []
        self.turn_ended = asyncio.Event()
        self.media_started = asyncio.Event()
        self.music_playing = False
        self._ducked = False
        self.connected = asyncio.Event()
        self.settled = asyncio.Event()
        """The device went back to idle (or to its music) after a turn."""

    def say(self, text: str) -> None:
        print(text, file=self._out, flush=True)

    def on_event(self, event: WatchEvent) -> None:
        self.seen.append(event)
        labels = {
            "heard": "  you said  ",
            "said": "  it says   ",
            "tool": "  tool      ",
            "result": "  result    ",
            "media": "  media     ",
            "volume": "  volume    ",
            "notice": "  note      ",
        }
        state = event.fields.get("state") if event.kind == "state" else None
        if state in (Activity.LISTENING, Activity.SPEAKING) and self.music_playing:
            self._ducked = True
        if state == Activity.LISTENING:
            ducks = "; the music ducks" if self.music_playing else ""
            self.say(f"  (chime: it listens; the LEDs show listening{ducks})")
        elif state == Activity.SPEAKING and self.music_playing:
            self.say("  (the music stays ducked under the voice)")
        elif event.kind in labels:
            self.say(labels[event.kind] + watch_text(event))
        if event.kind == "turn":
            self.say(f"  (turn {event.turn} {event.fields.get('outcome')})")
            self.turn_ended.set()
        if event.kind == "media":
            self.music_playing = event.fields.get("action") == "started"
            if self.music_playing:
                self.media_started.set()
        if state in (Activity.IDLE, Activity.MEDIA):
            self.settled.set()
            if self._ducked and self.music_playing:
                self.say("  (the music comes back to full level)")
            self._ducked = False
        if event.kind == "connection" and event.fields.get("state") == "connected":
            self.connected.set()


async def play(config_path: Path, *, speed: float, narrator: Narrator) -> int:
    config = load_config(config_path)
    parts = Overrides()
    if speed != 1:
        from huxleyd.audio.pacing import ScaledClock

        parts = Overrides(clock=ScaledClock(speed))
    runtime = Runtime(config, parts)
    try:
        async with ControlServer(RuntimeControl(runtime), config.control):
            await runtime.start()
            narrator.say(
                f"huxleyd demo: the built-in simulator (not an AI), {runtime.parts.audio_description}"
            )
            narrator.say(f"  follow along: huxleyctl --config {config_path} watch")
            narrator.say(f"  its log: {config_path.parent / 'huxleyd.log'}\n")
            listener = asyncio.create_task(_listen(runtime, narrator))
            try:
                await _wait_connected(runtime, narrator)
                for number, (_question, what) in enumerate(STEPS, 1):
                    narrator.say(f"Step {number}: {what}")
                    await _turn(runtime, narrator, speed=speed)
                    if number == 2:
                        await asyncio.wait_for(narrator.media_started.wait(), 30)
                        await asyncio.sleep(3 / speed)  # let the music be heard first
                    narrator.say("")
            finally:
                listener.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await listener
    finally:
        await runtime.close()
    speaker = config.audio.speaker_wav
    if speaker is not None and runtime.parts.audio_description.startswith("wav"):
        narrator.say(f"The whole conversation is in {speaker}: aplay {speaker}")
    return 0


async def _listen(runtime: Runtime, narrator: Narrator) -> None:
    async for event in runtime.feed.subscribe():
        narrator.on_event(event)


async def _wait_connected(runtime: Runtime, narrator: Narrator, timeout_s: float = 30.0) -> None:
    if runtime.connection_state is not ConnectionState.CONNECTED:
        await asyncio.wait_for(narrator.connected.wait(), timeout_s)


async def _turn(runtime: Runtime, narrator: Narrator, *, speed: float) -> None:
    """Press, hold for a second of audio, release; wait for the turn and its speech."""
    button = runtime.parts.button
    narrator.turn_ended.clear()
    narrator.settled.clear()
    button.press()
    await asyncio.sleep(1.0 / speed)  # a second of talking
    button.release()
    # The turn ends once its speech has played out; then the device settles.
    await asyncio.wait_for(narrator.turn_ended.wait(), 60)
    await asyncio.wait_for(narrator.settled.wait(), 60)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="huxleyd-demo", description=__doc__.split("\n")[0])
    parser.add_argument("--dir", type=Path, default=Path("var/demo"), help="where to write")
    parser.add_argument("--speed", type=float, default=1.0, help="clock speed (WAV only)")
    args = parser.parse_args(argv)
    # INFO, for the media lines of the feed; to the demo's log file only: the
    # narration is the terminal's output, and only errors join it.
    setup("INFO").setLevel(logging.ERROR)
    add_log_file(args.dir / "huxleyd.log")
    config = write_demo(args.dir, speed=args.speed)
    try:
        return asyncio.run(play(config, speed=args.speed, narrator=Narrator()))
    except HuxleydError as exc:
        print(f"huxleyd demo: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
