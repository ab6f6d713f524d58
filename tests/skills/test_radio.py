"""The radio skill with real ffmpeg: a file station, a failing one, and an HTTP one.

ffmpeg is called through a wrapper script that counts its starts, so the
reconnects are counted on real processes.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import AsyncGenerator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

import pytest

from huxley_sdk import AudioStream, CancelMedia, ContentType, InjectPriority, SkillContext
from huxley_sdk.testing import ctx_recorder, make_test_context
from huxleyd.skills.media import decode_command
from huxleyd.skills.radio import RadioSkill
from tests.fakes.executables import counting_program


@pytest.fixture(scope="module")
def tone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("radio") / "tone.wav"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi",
         "-i", "sine=frequency=440:sample_rate=24000:duration=1", str(path)],
        check=True,
    )  # fmt: skip
    return path


@pytest.fixture
def http_station(tone: Path) -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server that serves the 1 s tone, then closes (a dropping stream)."""
    body = tone.read_bytes()
    requests: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "audio/wav")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/live.wav", requests
    server.shutdown()
    server.server_close()


async def started(stations: dict[str, str], **config: Any) -> tuple[RadioSkill, SkillContext]:
    skill = RadioSkill()
    ctx = make_test_context(name="radio", config={"stations": stations, **config})
    await skill.setup(ctx)
    return skill, ctx


async def play(skill: RadioSkill, **args: Any) -> tuple[dict[str, Any], AudioStream]:
    result = await skill.handle("play_radio", args)
    assert isinstance(result.side_effect, AudioStream)
    return json.loads(result.output), result.side_effect


def open_stream(effect: AudioStream) -> AsyncGenerator[bytes, None]:
    return cast(AsyncGenerator[bytes, None], effect.factory())


async def test_a_file_station_plays_as_mixable_audio_and_ends_quietly(tone: Path) -> None:
    skill, ctx = await started({"Test FM": str(tone), "Jazz": "https://example.org/j.mp3"})
    data, effect = await play(skill, station="test")
    assert data == {"playing": "Test FM"}
    assert (effect.content_type, effect.label) == (ContentType.MIXABLE, "Test FM")
    assert effect.on_complete_prompt is None
    stream = open_stream(effect)
    first = await anext(stream)
    listed = json.loads((await skill.handle("list_radio_stations", {})).output)
    assert listed == {"stations": ["Test FM", "Jazz"], "playing": "Test FM"}
    pcm = first + b"".join([chunk async for chunk in stream])
    assert len(pcm) == 48_000  # the whole second, once
    assert ctx_recorder(ctx).injected == []
    assert json.loads((await skill.handle("list_radio_stations", {})).output)["playing"] is None


async def test_a_failing_station_is_retried_then_the_user_is_told(tmp_path: Path) -> None:
    ffmpeg = counting_program(tmp_path, "ffmpeg")
    skill, ctx = await started(
        {"Ghost FM": str(tmp_path / "missing.mp3")},
        ffmpeg=ffmpeg.path,
        reconnect_attempts=2,
        reconnect_delay_s=0.001,
    )
    _, effect = await play(skill, station="ghost")
    assert [chunk async for chunk in open_stream(effect)] == []
    assert ffmpeg.starts == 3  # the first try and two reconnects
    [turn] = ctx_recorder(ctx).injected
    assert "'Ghost FM' stopped and could not be reconnected" in turn.prompt
    assert turn.priority is InjectPriority.NORMAL


async def test_a_dropped_http_stream_reconnects(
    http_station: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, requests = http_station
    ffmpeg = counting_program(tmp_path, "ffmpeg")
    skill, ctx = await started(
        {"Local": url}, ffmpeg=ffmpeg.path, reconnect_attempts=2, reconnect_delay_s=0.001
    )
    _, effect = await play(skill)  # no name: the only (first) station
    pcm = b"".join([chunk async for chunk in open_stream(effect)])
    # The server ends each response after 1 s: three connections, then give up.
    assert len(pcm) == 3 * 48_000
    assert (ffmpeg.starts, len(requests)) == (3, 3)
    assert len(ctx_recorder(ctx).injected) == 1


async def test_a_long_healthy_run_resets_the_reconnect_budget(
    http_station: tuple[str, list[str]],
) -> None:
    url, requests = http_station
    skill, ctx = await started(
        {"Local": url}, reconnect_attempts=1, reconnect_delay_s=0.001, healthy_after_s=0.5
    )
    _, effect = await play(skill)
    stream = open_stream(effect)
    received = 0
    async for chunk in stream:
        received += len(chunk)
        if received >= 4 * 48_000:
            break
    await stream.aclose()
    # With one attempt and no reset it would have stopped after 2 connections.
    assert len(requests) >= 4
    assert ctx_recorder(ctx).injected == []


async def test_http_stations_get_ffmpeg_reconnect_options() -> None:
    cmd = decode_command("https://example.org/live.mp3")
    assert cmd[cmd.index("-reconnect") + 1] == "1"
    assert cmd[cmd.index("-reconnect_streamed") + 1] == "1"
    assert "-reconnect" not in decode_command("/srv/rain.ogg")


async def test_stop_cancels_media_only_while_playing(tone: Path) -> None:
    skill, _ = await started({"Test FM": str(tone)})
    stopped = await skill.handle("stop_radio", {})
    assert (json.loads(stopped.output)["error"], stopped.side_effect) == ("not_playing", None)
    _, effect = await play(skill, station="Test FM")
    stream = open_stream(effect)
    await anext(stream)
    result = await skill.handle("stop_radio", {})
    assert json.loads(result.output) == {"stopped": "Test FM"}
    assert isinstance(result.side_effect, CancelMedia)
    await stream.aclose()


async def test_the_last_station_is_played_again_without_a_name(tone: Path) -> None:
    skill, _ = await started({"One": str(tone), "Two": str(tone)})
    await play(skill, station="two")
    data, _ = await play(skill)
    assert data == {"playing": "Two"}


async def test_station_choice_errors_are_outputs(tone: Path) -> None:
    skill, _ = await started({"Radio One": str(tone), "Radio Two": str(tone)})
    for args, error in (
        ({"station": "jazz"}, "no_such_station"),
        ({"station": "radio"}, "ambiguous"),
    ):
        result = await skill.handle("play_radio", args)
        assert (json.loads(result.output)["error"], result.side_effect) == (error, None)
    empty, _ = await started({})
    result = await empty.handle("play_radio", {"station": "x"})
    assert json.loads(result.output)["error"] == "no_stations"


@pytest.fixture
def persona_with_rain(tmp_path: Path, tone: Path) -> Path:
    (tmp_path / "sounds").mkdir()
    (tmp_path / "sounds" / "rain.wav").write_bytes(tone.read_bytes())
    return tmp_path


async def test_relative_file_stations_are_under_the_persona_data_dir(
    persona_with_rain: Path,
) -> None:
    skill = RadioSkill()
    ctx = make_test_context(
        persona_data_dir=persona_with_rain, config={"stations": {"Rain": "sounds/rain.wav"}}
    )
    await skill.setup(ctx)
    _, effect = await play(skill, station="rain")
    assert len(b"".join([chunk async for chunk in open_stream(effect)])) == 48_000
    assert ctx_recorder(ctx).injected == []


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"stations": ["http://x"]}, "'stations'"),
        ({"stations": {"X": 5}}, "'stations.X'"),
        ({"stations": {}, "reconnect_attempts": -1}, "'reconnect_attempts'"),
    ],
)
async def test_bad_config_fails_setup_naming_the_key(config: dict[str, Any], key: str) -> None:
    with pytest.raises(ValueError, match=key):
        await RadioSkill().setup(make_test_context(config=config))
