"""The huxley_sdk surface: shapes, the palette loader, the test context."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import wave
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

import huxley_sdk
from huxley_sdk import (
    AudioStream,
    CancelMedia,
    ClaimBusyError,
    ClaimEndReason,
    ContentType,
    InjectPriority,
    InputClaim,
    PlaySound,
    SetVolume,
    Skill,
    ToolDefinition,
    ToolResult,
    load_pcm_palette,
)
from huxley_sdk.audio import PaletteError, read_palette, silence
from huxley_sdk.testing import ctx_recorder, make_test_context


def test_tool_definition_api_format() -> None:
    tool = ToolDefinition("get_time", "Get the time.")
    assert tool.to_api_format() == {
        "type": "function",
        "name": "get_time",
        "description": "Get the time.",
        "parameters": {"type": "object", "properties": {}},
    }


def test_side_effects_are_frozen_and_tagged() -> None:
    async def factory() -> object:  # pragma: no cover - never iterated
        yield b""

    effects = [
        PlaySound(b"\0\0"),
        AudioStream(factory=factory),  # type: ignore[arg-type]
        CancelMedia(),
        SetVolume(10),
        InputClaim(on_mic_frame=lambda b: asyncio.sleep(0)),
    ]
    assert [e.kind for e in effects] == [
        "play_sound",
        "audio_stream",
        "cancel_media",
        "set_volume",
        "input_claim",
    ]
    for effect in effects:
        assert isinstance(effect, huxley_sdk.SideEffect)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(effect, "label", "x")  # noqa: B010 - the point is to try
    stream = effects[1]
    assert isinstance(stream, AudioStream)
    assert stream.content_type is ContentType.NONMIXABLE and stream.completion_silence_ms == 0
    assert stream.patience is None and stream.on_complete_prompt is None
    assert ToolResult("x").side_effect is None


def test_enums_match_huxley() -> None:
    assert [m.name for m in ClaimEndReason] == ["NATURAL", "USER_PTT", "PREEMPTED", "ERROR"]
    assert [m.name for m in InjectPriority] == ["NORMAL", "BLOCK_BEHIND_COMMS", "PREEMPT"]
    assert [m.name for m in ContentType] == ["MIXABLE", "NONMIXABLE"]
    assert AudioStream(factory=lambda: None, patience=timedelta(minutes=5)).patience  # type: ignore[arg-type,return-value]


def test_skill_protocol_defaults_are_huxleys() -> None:
    # A class that subclasses the protocol inherits Huxley's optional members.
    class Minimal(Skill):
        name = "minimal"
        tools: ClassVar[list[ToolDefinition]] = []

        async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
            return ToolResult("{}")

    skill = Minimal()
    assert skill.prompt_context() == "" and Minimal.config_schema is None
    assert Minimal.data_schema_version == 1
    assert asyncio.run(skill.teardown()) is None


def write_wav(path: Path, samples: np.ndarray, rate: int, width: int = 2) -> None:
    channels = 1 if samples.ndim == 1 else samples.shape[1]
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(channels)
        wav.setsampwidth(width)
        wav.setframerate(rate)
        if width == 2:
            wav.writeframes(samples.astype("<i2").tobytes())
        elif width == 1:
            wav.writeframes(((samples.astype(np.int32) >> 8) + 128).astype(np.uint8).tobytes())


def tone(rate: int, freq: float = 440.0, seconds: float = 0.5, amp: float = 0.5) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (np.sin(2 * math.pi * freq * t) * amp * 32767).astype(np.int16)


def dominant_hz(pcm: bytes, rate: int = 24_000) -> float:
    x = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.fft.rfftfreq(len(x), 1 / rate)[np.argmax(spectrum)])


def test_read_palette_loads_and_converts(tmp_path: Path) -> None:
    write_wav(tmp_path / "chime.wav", tone(24_000), 24_000)
    stereo = np.stack([tone(48_000, 1000), tone(48_000, 1000)], axis=1)
    write_wav(tmp_path / "ding.wav", stereo, 48_000)
    write_wav(tmp_path / "low.wav", tone(16_000, 300), 16_000, width=1)
    palette = read_palette(tmp_path)
    assert set(palette) == {"chime", "ding", "low"}
    assert len(palette["chime"]) == 24_000  # 0.5 s * 24 kHz * 2 bytes
    assert len(palette["ding"]) == 24_000  # 48 kHz stereo → 24 kHz mono, same duration
    assert abs(dominant_hz(palette["ding"]) - 1000) < 5
    assert abs(dominant_hz(palette["low"]) - 300) < 5
    assert len(read_palette(tmp_path, roles=["chime"])) == 1


def test_read_palette_names_missing_roles_and_bad_files(tmp_path: Path) -> None:
    write_wav(tmp_path / "chime.wav", tone(24_000), 24_000)
    with pytest.raises(PaletteError, match="missing sounds news_start"):
        read_palette(tmp_path, roles=["chime", "news_start"])
    (tmp_path / "float.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt ")
    with pytest.raises(PaletteError, match=r"float\.wav: not a PCM WAV"):
        read_palette(tmp_path)
    with pytest.raises(PaletteError, match="not found"):
        read_palette(tmp_path / "nope")


def test_load_pcm_palette_skips_like_huxley(tmp_path: Path) -> None:
    # Huxley's loader never raises: only PCM16 24 kHz mono files load.
    write_wav(tmp_path / "chime.wav", tone(24_000), 24_000)
    write_wav(tmp_path / "ding.wav", tone(48_000), 48_000)
    (tmp_path / "junk.wav").write_bytes(b"not a wav")
    assert set(load_pcm_palette(tmp_path, ["chime", "ding", "junk", "absent"])) == {"chime"}
    assert set(load_pcm_palette(tmp_path)) == {"chime"}  # roles=None: every *.wav
    assert load_pcm_palette(tmp_path / "nope", ["chime"]) == {}


def test_silence_length() -> None:
    assert silence(100) == bytes(4800)


async def test_make_test_context_records_and_runs() -> None:
    ctx = make_test_context(name="timers", config={"a": 1}, language="es", live_claims=True)
    recorder = ctx_recorder(ctx)
    await ctx.inject_turn("time is up", dedup_key="t1", priority=InjectPriority.BLOCK_BEHIND_COMMS)
    assert recorder.injected[0].priority is InjectPriority.BLOCK_BEHIND_COMMS
    ran = asyncio.Event()

    async def job() -> None:
        ran.set()

    ctx.background_task("tick", job)
    await asyncio.wait_for(ran.wait(), 1)
    ended: list[ClaimEndReason] = []

    async def on_end(reason: ClaimEndReason) -> None:
        ended.append(reason)

    async def on_frame(pcm: bytes) -> None:
        pass

    handle = await ctx.start_input_claim(InputClaim(on_mic_frame=on_frame, on_claim_end=on_end))
    with pytest.raises(ClaimBusyError):
        await ctx.start_input_claim(InputClaim(on_mic_frame=on_frame))
    assert await ctx.cancel_active_claim(reason=ClaimEndReason.USER_PTT) is True
    assert await handle.wait_end() is ClaimEndReason.USER_PTT
    assert await ctx.cancel_active_claim() is False
    assert ended == [ClaimEndReason.USER_PTT]
    handle.cancel()  # idempotent
    await ctx.storage.set_setting("k", "v")
    assert await ctx.storage.list_settings() == [("k", "v")]


async def test_a_bare_context_is_a_no_op_like_huxleys(tmp_path: Path) -> None:
    ctx = huxley_sdk.SkillContext(
        huxley_sdk.testing.mock_logger(),
        huxley_sdk.testing.MemoryStorage(),
        huxley_sdk.testing.MemorySecrets(),
        tmp_path,
        {},
    )
    await ctx.inject_turn("hello")
    assert await ctx.cancel_active_claim() is False
    handle = await ctx.start_input_claim(InputClaim(on_mic_frame=lambda b: asyncio.sleep(0)))
    assert await handle.wait_end() is ClaimEndReason.NATURAL
    ran = asyncio.Event()

    async def job() -> None:
        ran.set()

    task = ctx.background_task("job", job)
    await asyncio.wait_for(ran.wait(), 5)
    assert task.name == "job"
    ctx.subscribe_client_event("button", lambda data: asyncio.sleep(0))
    await ctx.emit_server_event("hello")
    assert len(ctx.catalog()) == 0 and ctx.catalog() is not ctx.catalog()


async def test_make_test_context_follows_huxley() -> None:
    ctx = make_test_context(config={"_language": "ES"})
    assert ctx.language == "es"
    assert make_test_context(config={"language_code": "fr"}).language == "fr"
    await ctx.logger.ainfo("event", k=1)
    ctx.logger.ainfo.assert_awaited_once_with("event", k=1)  # type: ignore[attr-defined]
    handle = await ctx.start_input_claim(InputClaim(on_mic_frame=lambda b: asyncio.sleep(0)))
    assert await handle.wait_end() is ClaimEndReason.NATURAL
    assert len(ctx_recorder(ctx).requested_claims) == 1
    secrets = huxley_sdk.testing._NoopSkillSecrets({"token": "t"})
    assert await make_test_context(secrets=secrets).secrets.get("token") == "t"


def test_set_volume_carries_the_level_as_given() -> None:
    # Huxley's SetVolume validates nothing; the runtime clamps when it applies it.
    assert SetVolume(140).level == 140 and SetVolume(42.5).level == 42.5  # type: ignore[arg-type]
