"""Household messages: what one speaker sends is what another reads back,
an announcement past its time to live is known as too late, and a payload
not of our shape raises BadMessage (logged and ignored, never spoken).
"""

from __future__ import annotations

import json

import pytest

from huxleyd.home.household import (
    CLOCK_SLACK_S,
    Announcement,
    BadMessage,
    Receipt,
    parse_roster,
    roster_payload,
)

NOW = 1_800_000_000.0


def announcement(ttl_s: float = 60.0) -> Announcement:
    return Announcement.new(
        "Dinner is ready", device="pi-k", room="living_room", now=NOW, ttl_s=ttl_s
    )


def test_an_announcement_round_trips() -> None:
    sent = announcement()
    assert Announcement.decode(sent.encode()) == sent
    assert json.loads(sent.encode())["sent_at"] == NOW


def test_each_announcement_has_its_own_id() -> None:
    assert announcement().id != announcement().id


@pytest.mark.parametrize("outcome", ["queued", "heard", "dropped"])
def test_a_receipt_round_trips(outcome: str) -> None:
    sent = Receipt("abc", "kitchen", "pi-2", outcome, "busy" if outcome == "dropped" else "")  # type: ignore[arg-type]
    assert Receipt.decode(sent.encode()) == sent


def test_a_receipt_reads_as_a_line() -> None:
    assert Receipt("a", "kitchen", "pi-2", "heard").line() == "kitchen: spoken"
    assert Receipt("a", "hall", "pi-3", "dropped", "too late").line() == "hall: dropped (too late)"


def test_a_fresh_announcement_has_its_whole_time_left() -> None:
    sent = announcement(ttl_s=60.0)
    assert sent.remaining_s(NOW) == 60.0
    # a receiver whose clock runs a little ahead still gets the whole time
    assert sent.remaining_s(NOW + CLOCK_SLACK_S) == 60.0


def test_an_expired_announcement_is_recognised_as_too_late() -> None:
    sent = Announcement.decode(announcement(ttl_s=60.0).encode())
    assert sent.remaining_s(NOW + CLOCK_SLACK_S + 30.0) == 30.0
    assert sent.remaining_s(NOW + CLOCK_SLACK_S + 60.0) <= 0
    assert sent.remaining_s(NOW + 3 * 3600) <= 0
    assert sent.age_s(NOW + 3 * 3600) == 3 * 3600


def test_the_prompt_carries_the_text_verbatim_and_the_room() -> None:
    prompt = announcement().prompt()
    assert "from the living room speaker" in prompt
    assert prompt.endswith("word for word, and nothing else: Dinner is ready")


GOOD = json.loads(announcement().encode())


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (b"not json", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "text"}).encode(), "without 'text'"),
        (json.dumps({**GOOD, "sent_at": "yesterday"}).encode(), "'sent_at' is not a number"),
        (json.dumps({**GOOD, "ttl_s": True}).encode(), "'ttl_s' is not a number"),
        (json.dumps({**GOOD, "from_room": 3}).encode(), "'from_room' is not a string"),
    ],
)
def test_a_bad_announcement_raises_bad_message(payload: bytes, why: str) -> None:
    with pytest.raises(BadMessage, match=why):
        Announcement.decode(payload)


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ({"id": "a", "room": "k", "device": "d", "outcome": "spoken"}, "receipt outcome 'spoken'"),
        ({"id": "a", "room": "k", "outcome": "heard"}, "receipt without 'device'"),
        ({"id": 1, "room": "k", "device": "d", "outcome": "heard"}, "'id' is not a string"),
    ],
)
def test_a_bad_receipt_raises_bad_message(raw: dict[str, object], why: str) -> None:
    with pytest.raises(BadMessage, match=why):
        Receipt.decode(json.dumps(raw).encode())


def test_the_roster_reads_a_member_and_an_empty_payload_as_removed() -> None:
    member = parse_roster("pi-2", roster_payload("kitchen", "Kitchen"), True)
    assert member is not None
    assert (member.device, member.room, member.name, member.online) == (
        "pi-2",
        "kitchen",
        "Kitchen",
        True,
    )
    assert parse_roster("pi-2", b"", False) is None
    with pytest.raises(BadMessage, match="not a JSON object"):
        parse_roster("pi-2", b"[]", True)


def test_a_roster_entry_without_a_room_raises_bad_message() -> None:
    with pytest.raises(BadMessage):
        parse_roster("pi-2", b"{}", True)


@pytest.mark.parametrize(
    ("outcome", "detail", "line"),
    [
        ("queued", "", "kitchen: will be spoken"),
        ("heard", "", "kitchen: spoken"),
        ("dropped", "too late: 3 h old", "kitchen: dropped (too late: 3 h old)"),
    ],
)
def test_a_receipt_reads_as_the_sender_is_told(outcome: str, detail: str, line: str) -> None:
    raw = {"id": "a1", "room": "kitchen", "device": "pi-2", "outcome": outcome}
    if detail:
        raw["detail"] = detail
    receipt = Receipt.decode(json.dumps(raw).encode())
    assert receipt.detail == detail  # absent means none, never the text "None"
    assert receipt.line() == line


def test_a_roster_entry_without_a_name_has_an_empty_one() -> None:
    member = parse_roster("pi-2", json.dumps({"room": "office"}).encode(), True)
    assert member is not None and (member.room, member.name, member.online) == ("office", "", True)


def test_a_roster_entry_without_a_room_names_what_is_missing() -> None:
    with pytest.raises(BadMessage, match=r"^roster entry without 'room'$"):
        parse_roster("pi-2", b'{"name": "x"}', True)
