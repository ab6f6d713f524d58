"""The cascade's stages on their own: local programs, ElevenLabs quirks, settings, wiring."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

from huxleyd.errors import ConfigError, ProviderError
from huxleyd.pcm import wav_bytes
from huxleyd.providers.cascade.asr import CommandTranscriber
from huxleyd.providers.cascade.factory import create_cascade_connection, create_chat_model
from huxleyd.providers.cascade.llm import token_limit_parameter
from huxleyd.providers.cascade.settings import CascadeSettings
from huxleyd.providers.cascade.tts import CommandSynthesizer, ElevenLabsSynthesizer, TextQueue
from huxleyd.schema import build

PY = sys.executable


def queue_of(*texts: str) -> TextQueue:
    queue: TextQueue = asyncio.Queue()
    for text in texts:
        queue.put_nowait(text)
    queue.put_nowait(None)
    return queue


async def collect(
    speak: Callable[[TextQueue, Any], Awaitable[None]], *texts: str
) -> list[tuple[bytes, str]]:
    out: list[tuple[bytes, str]] = []
    await speak(queue_of(*texts), lambda pcm, text: out.append((pcm, text)))
    return out


# ---------------------------------------------------------------- local programs


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed")
async def test_espeak_ng_speaks_each_chunk_at_24_khz() -> None:
    tts = CommandSynthesizer(("espeak-ng", "--stdout", "--stdin", "-v", "{voice}"), voice="en")
    out = await collect(tts.speak, "Hello there.", "How are you?")
    assert [text for _, text in out] == ["Hello there. ", "How are you? "]
    for pcm, _ in out:
        assert len(pcm) % 2 == 0 and len(pcm) > 24_000 * 2 // 5  # more than 200 ms of speech
        assert max(abs(s) for s in memoryview(pcm).cast("h")) > 1000  # not silence


async def test_raw_output_is_resampled_from_the_programs_rate() -> None:
    script = "import sys; sys.stdin.read(); sys.stdout.buffer.write(b'\\x00\\x10' * 22050)"
    tts = CommandSynthesizer((PY, "-c", script), output="raw", rate_hz=22_050)
    ((pcm, text),) = await collect(tts.speak, "One second of tone.")
    assert text == "One second of tone. "
    assert abs(len(pcm) // 2 - 24_000) <= 2


async def test_a_failing_or_missing_program_is_a_provider_error() -> None:
    failing = CommandSynthesizer(
        (PY, "-c", "import sys; sys.stderr.write('no voice'); sys.exit(3)")
    )
    with pytest.raises(ProviderError, match="exited with 3: no voice"):
        await collect(failing.speak, "x")
    missing = CommandSynthesizer(("/nonexistent/tts",))
    with pytest.raises(ProviderError, match="cannot start the TTS command"):
        await collect(missing.speak, "x")
    not_wav = CommandSynthesizer((PY, "-c", "print('hello')"))
    with pytest.raises(ProviderError, match=r"TTS command .* is not a WAV file"):
        await collect(not_wav.speak, "x")


async def test_cancelling_kills_the_program(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = (
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    )
    tts = CommandSynthesizer((PY, "-c", script))
    task = asyncio.ensure_future(collect(tts.speak, "x"))
    async with asyncio.timeout(10):
        while not pid_file.exists() or not pid_file.read_text():  # noqa: ASYNC110 - a file
            await asyncio.sleep(0.01)
    pid = int(pid_file.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_local_recogniser_gets_a_16_khz_wav_file() -> None:
    script = (
        "import sys, wave; w = wave.open(sys.argv[1]); "
        "print(' rate', w.getframerate(), 'ms', w.getnframes() * 1000 // w.getframerate())"
    )
    asr = CommandTranscriber((PY, "-c", script, "{wav}"), rate_hz=16_000)
    assert await asr.transcribe(bytes(24_000), 24_000) == "rate 16000 ms 500"


async def test_a_recogniser_without_a_file_argument_reads_the_wav_on_stdin() -> None:
    script = "import sys; data = sys.stdin.buffer.read(); print(data[:4].decode(), len(data))"
    asr = CommandTranscriber((PY, "-c", script), rate_hz=24_000)
    assert (
        await asr.transcribe(bytes(4800), 24_000) == f"RIFF {len(wav_bytes(bytes(4800), 24_000))}"
    )


async def test_a_program_writing_stereo_wav_is_a_provider_error() -> None:
    stereo = bytearray(wav_bytes(bytes(8), 8000))
    stereo[22] = 2  # channels
    script = f"import sys; sys.stdin.read(); sys.stdout.buffer.write({bytes(stereo)!r})"
    tts = CommandSynthesizer((PY, "-c", script))
    with pytest.raises(ProviderError, match=r"2 channel.*expected mono 16-bit"):
        await collect(tts.speak, "x")


# ---------------------------------------------------------------- ElevenLabs quirks


@asynccontextmanager
async def fake_elevenlabs(
    answer: Callable[[ServerConnection], Awaitable[None]],
) -> AsyncIterator[str]:
    async with serve(answer, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}"


async def test_audio_without_alignment_is_paired_with_text_at_the_assumed_rate() -> None:
    async def answer(ws: ServerConnection) -> None:
        await ws.recv()  # opening message
        await ws.recv()  # "Hello there. "
        for _ in range(2):  # 2 x 400 ms at 15 chars/s → 6 chars each
            audio = base64.b64encode(bytes(2 * 24 * 400)).decode()
            await ws.send(json.dumps({"audio": audio}))
        await ws.recv()  # end of input
        await ws.send(json.dumps({"isFinal": True}))

    async with fake_elevenlabs(answer) as url:
        tts = ElevenLabsSynthesizer(api_key=None, voice_id="v", base_url=url)
        out = await collect(tts.speak, "Hello there.")
    assert [(len(pcm), text) for pcm, text in out] == [
        (2 * 24 * 400, "Hello "),
        (2 * 24 * 400, "there."),
    ]


async def test_an_elevenlabs_error_message_is_a_provider_error() -> None:
    async def answer(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send(json.dumps({"message": "Quota exceeded", "error": "quota_exceeded"}))
        await ws.close()

    async with fake_elevenlabs(answer) as url:
        tts = ElevenLabsSynthesizer(api_key="k", voice_id="v", base_url=url)
        with pytest.raises(ProviderError, match="Quota exceeded"):
            await collect(tts.speak, "Hi.")


async def test_a_stream_closed_before_is_final_is_a_provider_error() -> None:
    async def answer(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.close()

    async with fake_elevenlabs(answer) as url:
        tts = ElevenLabsSynthesizer(api_key="k", voice_id="v", base_url=url)
        with pytest.raises(ProviderError, match="before isFinal"):
            await collect(tts.speak, "Hi.")


async def test_an_unreachable_elevenlabs_is_a_provider_error() -> None:
    tts = ElevenLabsSynthesizer(api_key="k", voice_id="v", base_url="ws://127.0.0.1:9")
    with pytest.raises(ProviderError, match="ElevenLabs stream-input failed"):
        await collect(tts.speak, "Hi.")


# ---------------------------------------------------------------- settings and wiring


def test_settings_come_from_toml_with_errors_naming_the_key() -> None:
    settings = build(
        CascadeSettings,
        {"native_tools": False, "tts": "command", "tts_command": ["piper", "--output_raw"]},
        file="huxleyd.toml",
        prefix="provider.cascade",
    )
    assert settings.tts_command == ("piper", "--output_raw") and not settings.native_tools
    with pytest.raises(ConfigError, match=r"provider\.cascade\.llm_modle: unknown key"):
        build(CascadeSettings, {"llm_modle": "x"}, file="huxleyd.toml", prefix="provider.cascade")
    with pytest.raises(ConfigError, match=r"provider\.cascade\.tts: expected one of"):
        build(CascadeSettings, {"tts": "festival"}, file="huxleyd.toml", prefix="provider.cascade")


def test_cloud_endpoints_without_a_key_fail_at_start() -> None:
    with pytest.raises(ConfigError, match="llm_key_file"):
        create_cascade_connection(
            CascadeSettings(asr="command", asr_command=("x",), tts="command"),
            api_key=None,
            on_event=lambda e: None,
        )
    with pytest.raises(ConfigError, match="elevenlabs_key_file"):
        create_cascade_connection(CascadeSettings(), api_key="sk", on_event=lambda e: None)
    with pytest.raises(ConfigError, match="asr_command"):
        create_cascade_connection(
            CascadeSettings(asr="command", tts="command"), api_key="sk", on_event=lambda e: None
        )


def test_a_local_pipeline_needs_no_key_and_never_sends_the_environment_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    conn = create_cascade_connection(
        CascadeSettings(
            llm_url="http://192.168.1.20:8080/v1",
            asr="command",
            asr_command=("whisper-cli", "-f", "{wav}"),
            tts="command",
        ),
        api_key=None,
        on_event=lambda e: None,
    )
    assert create_chat_model(
        CascadeSettings(llm_url="http://10.0.0.2/v1"), None
    ).client.api_key == ("no-key")
    assert conn.capabilities.input_rate_hz == conn.capabilities.output_rate_hz == 24_000


def test_the_token_limit_parameter_follows_the_server() -> None:
    assert token_limit_parameter("https://api.openai.com/v1") == "max_completion_tokens"
    assert token_limit_parameter("http://127.0.0.1:8080/v1") == "max_tokens"
