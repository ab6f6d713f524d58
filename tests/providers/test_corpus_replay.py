"""Every core fed the frame corpus (tests/providers/corpus, sources in its README).

Nothing raises, nothing is reported as a protocol error, no frame type is
logged as unknown, and what each file contains that the coordinator needs
(audio, transcripts, tool calls, ends of responses, errors) comes out as
events. The simulator's validators accept the same frames.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from huxleyd.providers.base import RealtimeCore
from huxleyd.providers.events import (
    AudioChunk,
    Event,
    ItemTruncated,
    ProviderErrorEvent,
    ResponseDone,
    ResponseStarted,
    Role,
    SessionReady,
    ToolCall,
    TranscriptDelta,
    TranscriptDone,
)
from huxleyd.providers.factory import protocol_for
from huxleyd.sim.gemini_validate import HAVE_GENAI, validate_gemini_server_message
from huxleyd.sim.validate import validate_server_event

ROOT = Path(__file__).resolve().parents[2]

CORPUS = Path(__file__).parent / "corpus"
TOOLS = [{"name": "get_current_time", "description": "The time.", "parameters": {}}]


def frames(dialect: str) -> list[str]:
    lines = (CORPUS / f"{dialect}.jsonl").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip()]


def replay(dialect: str) -> tuple[RealtimeCore, list[Event]]:
    core = protocol_for(dialect)  # type: ignore[arg-type]
    core.configure(instructions="Be brief.", tools=TOOLS, voice="marin")
    core.connection_url("wss://example.invalid/", "model")
    core.connection_opened()
    events: list[Event] = []
    for frame in frames(dialect):
        core.receive(frame)
        events += core.events_received()
        core.messages_to_send()
    return core, events


def kinds(events: list[Event]) -> set[type]:
    return {type(e) for e in events}


@pytest.mark.parametrize("dialect", ["openai", "xai", "gemini"])
def test_the_corpus_replays_through_every_core_without_a_protocol_error(
    dialect: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    core, events = replay(dialect)
    protocol_errors = [
        e for e in events if isinstance(e, ProviderErrorEvent) and e.code == "protocol_error"
    ]
    assert protocol_errors == []
    assert getattr(core, "protocol_errors", 0) == 0
    unknown = [r.getMessage() for r in caplog.records if "_unknown" in r.getMessage()]
    assert unknown == []
    must = {SessionReady, ResponseStarted, AudioChunk, ToolCall, ResponseDone, TranscriptDelta}
    assert must <= kinds(events), must - kinds(events)


@pytest.mark.parametrize("dialect", ["openai", "xai", "gemini"])
def test_every_core_ends_each_spoken_reply_with_one_final_transcript(dialect: str) -> None:
    # One path for what the device said: the watch feed reads the final
    # transcript, whichever provider (Gemini sends none: its core makes it).
    _, events = replay(dialect)
    spoken = {
        e.item_id for e in events if isinstance(e, TranscriptDelta) and e.role is Role.ASSISTANT
    }
    done = [e.item_id for e in events if isinstance(e, TranscriptDone) and e.role is Role.ASSISTANT]
    assert spoken, "the corpus has no spoken reply"
    assert sorted(done) == sorted(spoken)


def test_openai_corpus_events_in_detail() -> None:
    _, events = replay("openai")
    assert TranscriptDone(Role.USER, "item_user1", "what time is it") in events
    assert TranscriptDone(Role.ASSISTANT, "item_a1", "It is ten past three.") in events
    assert ItemTruncated("item_a3", 640) in events
    [call] = [e for e in events if isinstance(e, ToolCall)]
    assert (call.call_id, call.name, call.arguments_json) == (
        "call_Xk2v9",
        "get_current_time",
        "{}",
    )
    errors = [e for e in events if isinstance(e, ProviderErrorEvent)]
    assert [(e.code, e.recoverable) for e in errors] == [
        ("response_cancel_not_active", True),
        ("session_expired", False),
    ]
    done = [e for e in events if isinstance(e, ResponseDone)]
    assert [d.response_id for d in done] == ["resp_A1", "resp_A2", "resp_A3", "resp_B1"]


def test_xai_corpus_events_in_detail() -> None:
    _, events = replay("xai")
    assert TranscriptDone(Role.USER, "msg_u1", "what time is it") in events
    assert TranscriptDone(Role.ASSISTANT, "msg_a3", "Sure.") in events
    [call] = [e for e in events if isinstance(e, ToolCall)]
    assert call.call_id == "call_x1"


def test_gemini_corpus_events_in_detail() -> None:
    core, events = replay("gemini")
    assert TranscriptDone(Role.USER, "gemini-user-1", " is it") in events
    starts = [e.response_id for e in events if isinstance(e, ResponseStarted)]
    done = [e.response_id for e in events if isinstance(e, ResponseDone)]
    # turn 1 (audio), the tool call's turn, the continuation that spans an
    # IN_PROGRESS turnComplete (one response, not two), and the interrupted one.
    assert len(starts) == 4
    assert done[:3] == starts[:3]
    audio_of_continuation = [
        e for e in events if isinstance(e, AudioChunk) and e.response_id == starts[2]
    ]
    assert len(audio_of_continuation) == 2
    assert core.resumption_handle == "CiQ5YjE3ZGM4Zi1hMzc0LTQ1"  # type: ignore[attr-defined]


def test_the_simulators_openai_validator_accepts_every_real_frame() -> None:
    for frame in frames("openai"):
        validate_server_event(frame)


def test_the_simulators_openai_validator_still_refuses_unknown_keys() -> None:
    from huxleyd.errors import ProviderProtocolError

    frame = json.loads(frames("openai")[0])
    frame["session"]["made_up"] = 1
    with pytest.raises(ProviderProtocolError, match="made_up"):
        validate_server_event(frame)


def test_the_simulators_xai_check_accepts_every_real_frame() -> None:
    from huxleyd.sim.xai_session import check_server_event

    for frame in frames("xai"):
        event = json.loads(frame)
        if event["type"] not in ("session.created", "session.updated"):  # the flat session
            check_server_event(event)


@pytest.mark.skipif(not HAVE_GENAI, reason="google-genai is not installed")
def test_every_gemini_frame_validates_as_a_live_server_message() -> None:
    for frame in frames("gemini"):
        validate_gemini_server_message(json.loads(frame))


def _pinned(package: str) -> str:
    """The exact version pyproject.toml pins `package` to (it must pin one)."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + project["optional-dependencies"]["dev"]
    for line in requirements:
        requirement = Requirement(line)
        if requirement.name == package:
            pins = [s.version for s in requirement.specifier if s.operator == "=="]
            assert len(pins) == 1, f"pyproject.toml: {line!r} is not one exact pin (==)"
            return pins[0]
    raise AssertionError(f"pyproject.toml does not require {package}")


@pytest.mark.parametrize("package", ["openai", "google-genai"])
def test_the_corpus_is_cited_against_the_pinned_sdk_and_that_is_installed(package: str) -> None:
    # The corpus is checked against one SDK release: pyproject pins it, the
    # README cites it, and the venv has it (a newer SDK is taken on purpose).
    from importlib.metadata import PackageNotFoundError, version

    pinned = _pinned(package)
    readme = (Path(__file__).parent / "corpus" / "README.md").read_text()
    assert f"`{package}` {pinned} package" in readme, (
        f"tests/providers/corpus/README.md does not cite `{package}` {pinned} package"
        " (the version pyproject.toml pins)"
    )
    try:
        installed = version(package)
    except PackageNotFoundError:
        pytest.skip(f"{package} is not installed")
    assert installed == pinned, (
        f"{package} {installed} is installed but pyproject.toml pins {pinned}: run make setup"
    )
