"""``make demo``'s pieces: the files it writes are a configuration the daemon
loads and a script that hears the steps it narrates, in order; the narrator
tells the music ducking and coming back from the daemon's own feed.
(tests/test_demo.py plays the whole demo.)"""

from __future__ import annotations

import io
import wave
from pathlib import Path

import numpy as np

from huxleyd.app.demo import MUSIC_S, STEPS, Narrator, write_demo
from huxleyd.config.load import load_config
from huxleyd.control.render import watch_text
from huxleyd.control.watch import WatchEvent
from huxleyd.pcm import RATE_HZ
from huxleyd.sim.scenario import load_scenario
from huxleyd.turns.news import Activity

AT = "2026-01-01T12:00:00.000+00:00"


def event(kind: str, turn: str | None = None, **fields: object) -> WatchEvent:
    return WatchEvent(kind, AT, turn, fields)


def test_the_files_are_a_config_the_daemon_loads(tmp_path: Path) -> None:
    path = write_demo(tmp_path / "demo", speed=4)
    config = load_config(path)
    assert config.provider.kind == "sim" and config.audio.backend == "wav"
    assert config.persona.name == "Huxley"
    stations = config.persona.skills["radio"]["stations"]
    assert Path(stations["demo"]) == (tmp_path / "demo" / "music.wav").resolve()
    at_real_speed = load_config(write_demo(tmp_path / "demo", speed=1))  # rewritten
    assert at_real_speed.audio.backend == "auto"


def test_the_script_hears_the_steps_in_the_order_they_are_told(tmp_path: Path) -> None:
    write_demo(tmp_path, speed=1)
    scenario = load_scenario(tmp_path / "scenario.toml")
    assert [turn.hear for turn in scenario.turns] == [question for question, _ in STEPS]
    tools = [call.name for turn in scenario.turns for r in turn.responses for call in r.tool_calls]
    assert tools == ["get_current_time", "play_radio", "stop_radio"]


def test_the_music_is_a_valid_wav_at_the_daemons_rate(tmp_path: Path) -> None:
    write_demo(tmp_path, speed=1)
    with wave.open(str(tmp_path / "music.wav"), "rb") as wav:
        assert (wav.getframerate(), wav.getnchannels()) == (RATE_HZ, 1)
        assert wav.getnframes() == MUSIC_S * RATE_HZ
        samples = np.frombuffer(wav.readframes(RATE_HZ), "<i2")
    assert 1000 < np.abs(samples).max() < 32767 * 0.4  # gentle: not silent, never clipped


def test_the_narrator_tells_the_music_ducking_and_coming_back() -> None:
    out = io.StringIO()
    narrator = Narrator(out)
    narrator.on_event(event("connection", state="connected"))
    assert narrator.connected.is_set()
    narrator.on_event(event("media", action="started", title="demo"))
    assert narrator.music_playing and narrator.media_started.is_set()
    heard = event("heard", "t3", text="how are you today")
    for e in (
        event("state", state=Activity.LISTENING),
        heard,
        event("state", state=Activity.SPEAKING),
        event("turn", "t3", outcome="answered"),
        event("state", state=Activity.MEDIA),
    ):
        narrator.on_event(e)
    assert out.getvalue().splitlines()[1:] == [
        "  (chime: it listens; the LEDs show listening; the music ducks)",
        "  you said  " + watch_text(heard),
        "  (the music stays ducked under the voice)",
        "  (turn t3 answered)",
        "  (the music comes back to full level)",
    ]
    assert narrator.turn_ended.is_set() and narrator.settled.is_set()
    assert len(narrator.seen) == 7


def test_without_music_nothing_ducks() -> None:
    out = io.StringIO()
    narrator = Narrator(out)
    for e in (event("state", state=Activity.LISTENING), event("state", state=Activity.IDLE)):
        narrator.on_event(e)
    assert out.getvalue() == "  (chime: it listens; the LEDs show listening)\n"
    assert narrator.settled.is_set() and not narrator.turn_ended.is_set()
