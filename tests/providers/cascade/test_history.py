"""The chat history and the ms → text mapping of what was heard."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from huxleyd.providers.cascade.history import ChatHistory, SpokenLog


def log_of(*pieces: tuple[str, float]) -> SpokenLog:
    log = SpokenLog()
    for text, ms in pieces:
        log.add(text, ms)
    return log


def test_pieces_played_to_the_end_are_kept_whole() -> None:
    log = log_of(("Hello there. ", 1000), ("How are you today? ", 2000))
    assert log.heard(1000) == "Hello there."
    assert log.heard(3000) == "Hello there. How are you today?"
    assert log.heard(99_999) == log.voiced()
    assert log.heard(0) == ""


def test_the_piece_being_played_is_cut_by_its_share_back_to_a_whole_word() -> None:
    log = log_of(("Hello there. ", 1000), ("How are you today? ", 2000))
    # 1000 ms of 2000 into "How are you today? " (19 chars) → 9 chars "How are y" → "How are"
    assert log.heard(2000) == "Hello there. How are"
    assert log.heard(1100) == "Hello there."  # 0.95 chars: no whole word yet


def test_fine_pieces_split_mid_word_drop_the_partial_word() -> None:
    log = log_of(("Hel", 100), ("lo wo", 100), ("rld.", 100))
    assert log.heard(100) == ""  # "Hel" alone is not a word heard
    assert log.heard(200) == "Hello"
    assert log.heard(300) == "Hello world."


def test_silent_pieces_count_only_once_everything_before_was_played() -> None:
    log = log_of(("One. ", 500), ("two.", 0))
    assert log.heard(250) == ""
    assert log.heard(499) == "One."
    assert log.heard(500) == "One. two."


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(st.from_regex(r"[a-z]{1,8}", fullmatch=True), min_size=1, max_size=30),
    cuts=st.lists(st.integers(1, 5), max_size=10),
    at=st.floats(0, 5000),
)
def test_heard_text_is_a_whole_word_prefix_growing_with_time(
    words: list[str], cuts: list[int], at: float
) -> None:
    text = " ".join(words) + " "
    pieces, pos = [], 0
    for size in cuts:
        pieces.append(text[pos : pos + size])
        pos += size
    pieces.append(text[pos:])
    log = log_of(*[(p, 100.0) for p in pieces if p])
    heard = log.heard(at)
    assert (" ".join(words) + " ").startswith(heard + " ") or heard == ""
    assert len(log.heard(at + 100)) >= len(heard)
    assert log.heard(log.total_ms) == " ".join(words)


def test_history_keeps_native_calls_paired_with_outputs() -> None:
    history = ChatHistory()
    history.add_user("quieter")
    history.add_assistant("i1", "", tool_calls=[("c1", "set_volume", '{"level": 3}')])
    assert history.add_tool_output("c9", "{}") is False
    assert history.add_tool_output("c1", "{}") is True
    history.add_assistant("i2", "", tool_calls=[("c2", "get_volume", "{}")])
    history.add_user("next")  # c2 never answered: closed with an error first
    roles = [(m["role"], m.get("tool_call_id")) for m in history.messages]
    assert roles == [
        ("user", None),
        ("assistant", None),
        ("tool", "c1"),
        ("assistant", None),
        ("tool", "c2"),
        ("user", None),
    ]
    assert "no output" in history.messages[4]["content"]


def test_a_reply_cut_to_nothing_leaves_the_history() -> None:
    history = ChatHistory()
    history.add_user("hi")
    history.add_assistant("i1", "Hello, how can I help?")
    assert history.set_assistant_text("i1", "Hello,") is True
    assert history.messages[-1] == {"role": "assistant", "content": "Hello,"}
    assert history.set_assistant_text("i1", "") is True
    assert history.messages == [{"role": "user", "content": "hi"}]
    assert history.set_assistant_text("i1", "x") is False


def test_code_results_are_user_messages_the_model_can_read() -> None:
    history = ChatHistory()
    history.add_code_result("get_time()", '{"t": 1}', "Tool call error: extra")
    assert history.messages == [
        {
            "role": "user",
            "content": '[tool result] get_time() returned:\n{"t": 1}\n\nTool call error: extra',
        }
    ]


def test_old_turns_are_dropped_whole_when_the_history_grows() -> None:
    history = ChatHistory(max_messages=6)
    for n in range(5):
        history.add_user(f"q{n}")
        history.add_assistant(f"a{n}", "", tool_calls=[(f"c{n}", "f", "{}")])
        history.add_tool_output(f"c{n}", "{}")
        history.add_assistant(f"b{n}", f"answer {n}")
    assert len(history.messages) <= 6 + 3
    assert history.messages[0]["role"] == "user"
    tool_ids = [m["tool_call_id"] for m in history.messages if m["role"] == "tool"]
    call_ids = [m["tool_calls"][0]["id"] for m in history.messages if m.get("tool_calls")]
    assert tool_ids == call_ids  # no orphaned tool message at the front
    assert history.for_request("sys")[0] == {"role": "system", "content": "sys"}
    assert history.has_item("b4") and not history.has_item("b0")
