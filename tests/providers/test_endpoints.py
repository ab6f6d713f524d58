"""Where each websocket core connects and how it presents the key, side by side."""

from __future__ import annotations

import pytest

from huxleyd.providers.base import RealtimeCore
from huxleyd.providers.gemini_core import GeminiLiveCore
from huxleyd.providers.openai_core import OpenAIRealtimeCore
from huxleyd.providers.xai_core import XaiRealtimeCore


@pytest.mark.parametrize(
    ("core", "base", "model", "url", "headers"),
    [
        (
            OpenAIRealtimeCore(),
            "wss://api.openai.com/v1/realtime",
            "gpt-realtime",
            "wss://api.openai.com/v1/realtime?model=gpt-realtime",
            {"Authorization": "Bearer k"},
        ),
        (
            XaiRealtimeCore(),
            "wss://api.x.ai/v1/realtime",
            "grok-voice-think-fast-1.0",
            "wss://api.x.ai/v1/realtime?model=grok-voice-think-fast-1.0",
            {"Authorization": "Bearer k"},
        ),
        # Gemini names the model in the setup message, not in the URL.
        (
            GeminiLiveCore(),
            "wss://example/ws",
            "m",
            "wss://example/ws",
            {"x-goog-api-key": "k"},
        ),
    ],
    ids=["openai", "xai", "gemini"],
)
def test_the_url_and_the_key_header(
    core: RealtimeCore, base: str, model: str, url: str, headers: dict[str, str]
) -> None:
    assert isinstance(core, RealtimeCore)
    assert core.connection_url(base, model) == url
    assert core.connection_headers("k") == headers
    assert core.connection_headers(None) == {}, "no key, no auth header"
