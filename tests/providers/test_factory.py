"""Settings → connection: the one place a provider kind picks its core."""

from __future__ import annotations

from huxleyd.providers.base import InterruptAcceptance
from huxleyd.providers.factory import capabilities_of, create_connection
from huxleyd.providers.openai_protocol import OpenAIRealtimeProtocol
from huxleyd.providers.settings import ProviderSettings
from huxleyd.settings_schema import build


def test_openai_and_sim_kinds_speak_openai_ga() -> None:
    for kind in ("openai", "sim"):
        settings = build(
            ProviderSettings,
            {"kind": kind, "transcription_model": "gpt-4o-mini-transcribe"},
            file="t.toml",
        )
        conn = create_connection(settings, api_key=None, on_event=lambda e: None)
        assert isinstance(conn.protocol, OpenAIRealtimeProtocol)
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
