"""ReplyTracker: which response is the reply, asking for one, giving one up.

Pure bookkeeping over the provider's commands: no timer, no loop needed.
"""

from __future__ import annotations

import dataclasses

from huxleyd.providers.events import ResponseDone, ResponseStarted, ResponseStatus
from huxleyd.turns.reply_tracker import MAX_GIVEN_UP, READ_VERBATIM, ReplyTracker
from tests.fakes.turn_ports import OPENAI_LIKE, RecordingProvider


def tracker(
    *, verbatim_reader: bool = True, response_cancel: bool = True
) -> tuple[ReplyTracker, RecordingProvider]:
    caps = dataclasses.replace(
        OPENAI_LIKE, verbatim_reader=verbatim_reader, response_cancel=response_cancel
    )
    provider = RecordingProvider(caps)
    return ReplyTracker(provider, instructions="Be brief."), provider


def running(t: ReplyTracker) -> bool:
    """Read fresh (mypy keeps an earlier assert's narrowing of the property)."""
    return t.running


def done(rid: str, *, out_of_band: bool = False) -> ResponseDone:
    return ResponseDone(rid, ResponseStatus.COMPLETED, out_of_band=out_of_band)


def test_a_wanted_start_is_adopted_and_owns_its_audio() -> None:
    t, provider = tracker()
    t.request(instructions="Say hi.")
    assert provider.commands == [("request_response", "Say hi.")]
    assert t.started(ResponseStarted("r1"), wanted=True)
    assert running(t) and t.response_id == "r1"
    assert t.owns("r1") and not t.owns("r2")
    assert t.finished(done("r1"))
    assert not running(t) and not t.owns("r1")


def test_an_unwanted_start_is_given_up_and_its_done_forgotten() -> None:
    t, _ = tracker()
    assert not t.started(ResponseStarted("r9"), wanted=False)
    assert t.gave_up("r9") and not t.owns("r9")
    assert not t.finished(done("r9"))
    assert not t.gave_up("r9")  # forgotten once it ended: the set does not grow


def test_someone_elses_out_of_band_response_is_left_alone() -> None:
    t, _ = tracker()
    assert not t.started(ResponseStarted("oob", out_of_band=True), wanted=True)
    assert not t.gave_up("oob") and not running(t)
    assert not t.finished(done("oob", out_of_band=True))


def test_the_verbatim_reader_is_used_when_the_provider_has_one() -> None:
    t, provider = tracker(verbatim_reader=True)
    t.read_aloud("Exactly this.")
    assert provider.commands == [("read_aloud", "Exactly this.")]
    # Its response is out of band, and it is the reply.
    assert t.started(ResponseStarted("rd", out_of_band=True), wanted=True)
    assert t.owns("rd")


def test_without_a_reader_an_in_band_response_is_told_to_read() -> None:
    t, provider = tracker(verbatim_reader=False)
    t.read_aloud("Exactly this.")
    assert provider.commands == [("request_response", f"{READ_VERBATIM}\n\nExactly this.")]


def test_retry_sends_the_last_request_again() -> None:
    t, provider = tracker(verbatim_reader=True)
    t.read_aloud("Again.")
    t.abandon(late_start_is_stale=False)
    t.retry()
    assert [n for n, _ in provider.commands] == ["read_aloud", "cancel_response", "read_aloud"]


def test_a_start_answering_a_request_given_up_before_it_started_is_stale() -> None:
    # A quick re-press on a slow link: request, barge in, request again.
    t, provider = tracker()
    t.request()
    t.abandon()
    t.request()
    assert not t.started(ResponseStarted("old"), wanted=True)  # answers the first request
    assert t.gave_up("old")
    assert t.started(ResponseStarted("new"), wanted=True)
    assert t.response_id == "new"
    assert provider.names() == ["request_response", "cancel_response", "request_response"]


def test_a_silent_retry_adopts_a_late_start() -> None:
    t, _ = tracker()
    t.request()
    t.abandon(late_start_is_stale=False)  # nothing came: ask the same again
    t.retry()
    assert t.started(ResponseStarted("late"), wanted=True)


def test_a_refused_request_expects_no_start() -> None:
    t, _ = tracker()
    t.request()
    t.request_refused()  # conversation_already_has_active_response
    t.abandon()  # nothing unstarted is left to be stale
    assert t.started(ResponseStarted("r2"), wanted=True)


def test_abandon_cancels_only_when_the_provider_can() -> None:
    t, provider = tracker(response_cancel=False)
    t.request()
    t.started(ResponseStarted("r1"), wanted=True)
    t.abandon()
    assert provider.names() == ["request_response"]
    assert t.gave_up("r1") and not running(t)


def test_end_turn_gives_the_reply_up_without_a_cancel() -> None:
    t, provider = tracker(verbatim_reader=True)
    t.read_aloud("Never read.")
    t.started(ResponseStarted("r1", out_of_band=True), wanted=True)
    t.end_turn()
    assert t.gave_up("r1") and not running(t)
    assert "cancel_response" not in provider.names()
    # No reader is awaited any more: the next out-of-band start is someone else's.
    assert not t.started(ResponseStarted("r2", out_of_band=True), wanted=True)
    assert not t.gave_up("r2")


def test_given_up_ids_are_bounded_oldest_forgotten_first() -> None:
    t, _ = tracker()
    for n in range(MAX_GIVEN_UP + 10):  # done never comes: the connection was lost
        t.started(ResponseStarted(f"r{n}"), wanted=False)
    assert not t.gave_up("r0") and not t.gave_up("r9")
    assert t.gave_up("r10") and t.gave_up(f"r{MAX_GIVEN_UP + 9}")
