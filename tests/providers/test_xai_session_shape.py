"""xAI's flat session: instructions, voice and a typed-null turn detection at
the top, 24 kHz PCM both ways, and only what changed on an update. xAI has no
typed SDK: its field sets (``huxleyd.sim.xai_validate``) stand in for one."""

from __future__ import annotations

import json
from typing import Any

from huxleyd.providers import openai_wire, xai_wire
from huxleyd.sim.xai_validate import validate_xai_client_event

CONFIG = openai_wire.SessionConfig(
    "Be brief.", openai_wire.function_tools([{"name": "get_time"}]), "Ara"
)


def update(session: dict[str, Any]) -> dict[str, Any]:
    frame = json.dumps({"type": "session.update", "event_id": "e1", "session": session})
    checked: dict[str, Any] = validate_xai_client_event(frame)["session"]
    return checked


def test_the_full_session_is_flat_push_to_talk_at_24_khz() -> None:
    session = update(xai_wire.full_session(CONFIG))
    assert "type" not in session  # no GA ``session.type``
    assert session["turn_detection"] == {"type": None}  # manual turns: a null type
    assert session["voice"] == "Ara" and session["instructions"] == "Be brief."
    assert session["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 24_000}
    assert session["audio"]["output"]["format"] == {"type": "audio/pcm", "rate": 24_000}
    assert [t["name"] for t in session["tools"]] == ["get_time"]


def test_an_update_carries_only_the_changed_top_level_keys() -> None:
    assert xai_wire.changed_session(CONFIG, {}) is None
    assert xai_wire.changed_session(CONFIG, {"voice": True, "tools": False}) == {"voice": "Ara"}
    both = xai_wire.changed_session(CONFIG, {"instructions": True, "tools": True})
    assert both is not None and set(both) == {"instructions", "tools"}
    update(both)


def test_the_events_it_ignores_include_the_servers_ping() -> None:
    assert "ping" in xai_wire.IGNORED_EVENTS
    assert "ping" not in openai_wire.IGNORED_EVENTS  # OpenAI never pings in JSON
