"""Every provider connection is a Session, and its states keep their words.

The structural check reads the Protocol's own members, so a method removed
from (or renamed in) either connection fails here, and ``make lint``'s mypy
fails on the typed assignments below as well.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Protocol

import pytest

from huxleyd.control.handler import StatusReport
from huxleyd.control.render import status_table
from huxleyd.providers.base import (
    OFFLINE_AFTER_FAILURES,
    ConnectionState,
    ConnectionStatus,
    Session,
    failure_state,
)
from huxleyd.providers.cascade.provider import CascadeConnection
from huxleyd.providers.cascade.settings import CascadeSettings
from huxleyd.providers.factory import create_connection
from huxleyd.providers.settings import ProviderSettings
from huxleyd.providers.transport import ProviderConnection

CONNECTION_TYPES = [ProviderConnection, CascadeConnection]


def session_members() -> dict[str, Any]:
    """The Session protocol's members (its own and inherited), by name."""
    members: dict[str, Any] = {}
    for cls in reversed(Session.__mro__):
        if cls in (object, Protocol) or cls.__name__ == "Generic":
            continue
        for name, value in vars(cls).items():
            if not name.startswith("_"):
                members[name] = value
    return members


def test_the_session_protocol_names_what_the_daemon_uses() -> None:
    assert {
        "run",
        "close",
        "renew",
        "status",
        "url",
        "session_age_s",
        "connected",
        "capabilities",
        "configure",
        "append_audio",
        "request_response",
        "cancel_response",
        "truncate",
        "read_aloud",
    } <= set(session_members())


@pytest.mark.parametrize("cls", CONNECTION_TYPES, ids=lambda c: c.__name__)
def test_each_connection_has_every_session_member_with_its_signature(cls: type) -> None:
    for name, member in session_members().items():
        assert hasattr(cls, name), f"{cls.__name__} lacks Session.{name}"
        theirs = inspect.getattr_static(cls, name)
        if isinstance(member, property):
            assert isinstance(theirs, property), f"{cls.__name__}.{name} is not a property"
            continue
        wanted = list(inspect.signature(member).parameters)
        got = list(inspect.signature(theirs).parameters)
        assert got == wanted, f"{cls.__name__}.{name}{got} != Session.{name}{wanted}"
        assert inspect.iscoroutinefunction(theirs) == inspect.iscoroutinefunction(member), name


async def test_both_built_connections_are_sessions_at_run_time() -> None:
    websocket: Session = create_connection(
        ProviderSettings(kind="openai"), api_key=None, on_event=lambda e: None
    )
    local_voice = CascadeSettings(tts="command", tts_command=("espeak-ng", "--stdout"))
    cascade: Session = create_connection(
        ProviderSettings(kind="cascade", cascade=local_voice),
        api_key="sk-test",
        on_event=lambda e: None,
    )
    assert isinstance(websocket, ProviderConnection) and isinstance(cascade, CascadeConnection)
    for session in (websocket, cascade):
        assert isinstance(session, Session)
        assert session.status.state is ConnectionState.CONNECTING  # before run()


# ---------------------------------------------------------------- the states' words


CONTROL_WORDS = [
    "connecting",
    "connected",
    "stalled",
    "reconnecting",
    "offline",
    "key_refused",
    "key_missing",
    "failed",
    "setup_failed",
    "closed",
]
"""What ``huxleyctl status`` prints and the control socket sends as
``provider_state`` (and ``watch`` as the connection event's ``state``)."""


def test_the_states_are_the_words_the_control_socket_sends() -> None:
    assert [state.value for state in ConnectionState] == CONTROL_WORDS


@pytest.mark.parametrize("state", list(ConnectionState))
def test_a_state_round_trips_through_the_control_socket(state: ConnectionState) -> None:
    report = StatusReport(
        state="idle",
        provider_state=state.value,
        media=None,
        volume=50,
        uptime_s=1.0,
        persona="Test",
        provider_kind="openai",
        is_simulator=False,
    )
    wire = json.loads(json.dumps(report.to_dict()))
    assert wire["provider_state"] == state.value
    assert ConnectionState(StatusReport.from_dict(wire).provider_state) is state
    table = status_table(StatusReport.from_dict(wire))
    provider_row = [str(cell) for cell in table.columns[1].cells][1]
    assert provider_row.startswith(f"openai, {state.value}")


def test_link_down_and_unreachable_split_the_states_as_the_turns_need() -> None:
    down = {s for s in ConnectionState if s.link_down}
    assert down == {
        "stalled",
        "reconnecting",
        "offline",
        "key_refused",
        "key_missing",
        "failed",
        "setup_failed",
        "closed",
    }
    assert {s for s in ConnectionState if s.unreachable} == {
        "offline",
        "key_refused",
        "key_missing",
        "setup_failed",
    }


def test_failures_turn_offline_from_the_fourth_in_a_row() -> None:
    states = [failure_state(n) for n in range(1, OFFLINE_AFTER_FAILURES + 2)]
    assert states == [ConnectionState.RECONNECTING] * 3 + [ConnectionState.OFFLINE] * 2
    assert ConnectionStatus(ConnectionState.OFFLINE).attempt == 0
