"""Settings → connection: the one place a provider kind picks its core."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest

from huxleyd.errors import ConfigError
from huxleyd.providers.apikey import read_api_key
from huxleyd.providers.base import InterruptAcceptance
from huxleyd.providers.cascade.provider import CascadeConnection
from huxleyd.providers.factory import (
    VALID_KINDS,
    capabilities_of,
    create_connection,
    create_core,
    protocol_for,
)
from huxleyd.providers.gemini_core import GeminiLiveCore
from huxleyd.providers.openai_core import OpenAIRealtimeCore
from huxleyd.providers.settings import KIND_DEFAULTS, ProviderKind, ProviderSettings
from huxleyd.providers.transport import ProviderConnection
from huxleyd.providers.xai_core import XaiRealtimeCore
from huxleyd.schema import build


def test_openai_and_sim_kinds_speak_openai_ga() -> None:
    for kind in ("openai", "sim"):
        settings = build(
            ProviderSettings,
            {"kind": kind, "transcription_model": "gpt-4o-mini-transcribe"},
            file="t.toml",
        )
        conn = create_connection(settings, api_key=None, on_event=lambda e: None)
        assert isinstance(conn, ProviderConnection)
        assert isinstance(conn.core, OpenAIRealtimeCore)
        caps = capabilities_of(settings)
        assert caps.truncate and caps.response_cancel
        assert caps.interrupt_acceptance is InterruptAcceptance.IMMEDIATE_PROVIDER_ACK


def test_the_url_can_be_overridden_for_the_simulator() -> None:
    conn = create_connection(
        ProviderSettings(),
        api_key=None,
        on_event=lambda e: None,
        url="ws://127.0.0.1:1/v1/realtime",
    )
    assert conn.url == "ws://127.0.0.1:1/v1/realtime"
    assert not conn.connected
    assert create_connection(ProviderSettings(), api_key=None, on_event=print).url == (
        "wss://api.openai.com/v1/realtime"
    )


# ---------------------------------------------------------------- kinds


def test_each_kind_gets_its_core_and_its_defaults() -> None:
    expected = {
        "openai": OpenAIRealtimeCore,
        "xai": XaiRealtimeCore,
        "gemini": GeminiLiveCore,
    }
    for kind, core in expected.items():
        settings = build(ProviderSettings, {"kind": kind}, file="t.toml")
        assert isinstance(create_core(settings), core)
        defaults = KIND_DEFAULTS[kind]  # type: ignore[index]
        assert (settings.url, settings.model, settings.voice) == (
            defaults.url,
            defaults.model,
            defaults.voice,
        )
        assert create_connection(settings, api_key=None, on_event=print).url == defaults.url


def test_the_simulator_speaks_the_dialect_it_is_told() -> None:
    for dialect, core in (("xai", XaiRealtimeCore), ("gemini", GeminiLiveCore)):
        settings = build(ProviderSettings, {"kind": "sim", "sim_dialect": dialect}, file="t.toml")
        assert settings.dialect == dialect
        assert isinstance(create_core(settings), core)
        assert settings.voice == KIND_DEFAULTS[settings.dialect].voice
    assert build(ProviderSettings, {"kind": "sim"}, file="t.toml").dialect == "openai"


def test_a_wrong_kind_fails_listing_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as error:
        build(ProviderSettings, {"kind": "grok"}, file="/etc/huxleyd/huxleyd.toml")
    message = str(error.value)
    assert "kind" in message and "huxleyd.toml" in message
    for kind in VALID_KINDS:
        assert repr(kind) in message
    assert set(VALID_KINDS) == set(typing.get_args(ProviderKind))


def test_another_kinds_leftover_default_is_refused_at_start() -> None:
    table = {"kind": "gemini", "url": KIND_DEFAULTS["openai"].url, "model": "gemini-x"}
    with pytest.raises(ConfigError, match=r"provider\.url .* openai default.*kind is 'gemini'"):
        build(ProviderSettings, table, file="h.toml")
    with pytest.raises(ConfigError, match="voice"):
        build(ProviderSettings, {"kind": "xai", "voice": "marin"}, file="h.toml")
    custom = build(ProviderSettings, {"kind": "xai", "voice": "rex"}, file="h.toml")
    assert custom.voice == "rex"


def test_a_missing_key_file_fails_at_start_naming_it(tmp_path: Path) -> None:
    settings = build(
        ProviderSettings, {"kind": "xai", "key_file": str(tmp_path / "xai.key")}, file="h.toml"
    )
    assert settings.key_file is not None
    with pytest.raises(ConfigError, match=r"xai\.key"):
        read_api_key(settings.key_file)


def test_protocol_for_names_the_valid_dialects() -> None:
    with pytest.raises(ValueError, match="openai, xai, gemini"):
        protocol_for("grok")  # type: ignore[arg-type]


def test_cascade_kind_gets_a_cascade_connection() -> None:
    settings = build(
        ProviderSettings,
        {"kind": "cascade", "cascade": {"native_tools": False, "tts": "command"}},
        file="t.toml",
    )
    conn = create_connection(settings, api_key="sk-test", on_event=lambda e: None)
    assert isinstance(conn, CascadeConnection)
    assert capabilities_of(settings).text_input
