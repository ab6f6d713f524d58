"""The cascade never reads code-prompt markup aloud (issue 14 item 9).

What the speech stage drops must be exactly what the parser treats as a
block: a ``</code>`` inside a string argument does not end it, and the tags
count in any case (``<CODE>``), so such a call is run, not read.
"""

from __future__ import annotations

import itertools

import pytest

from huxleyd.providers.cascade.codeprompt import parse_reply
from huxleyd.providers.cascade.sentences import SentenceSplitter

TOOLS = {"note": {"type": "object", "properties": {"text": {"type": "string"}}}}


def spoken(text: str, step: int) -> str:
    splitter = SentenceSplitter()
    out: list[str] = []
    for i in range(0, len(text), step):
        out += splitter.feed(text[i : i + step])
    return " ".join(out + splitter.flush())


REPLIES = [
    "Saving it. <code>note(text='a</code>b')</code> Done.",
    'Saving it. <code>note(text="x </code> y")</code> Done.',
    "Saving it. <CODE>note(text='plain')</CODE> Done.",
    "Saving it. <Code>note(text='it\\'s </code> ok')</Code> Done.",
]


@pytest.mark.parametrize(("reply", "step"), list(itertools.product(REPLIES, (1, 3, 7, 1000))))
def test_markup_is_never_spoken_and_the_call_runs(reply: str, step: int) -> None:
    said = spoken(reply, step)
    assert said == "Saving it. Done."
    parsed = parse_reply(reply, TOOLS, lambda: "call_1")
    assert parsed.errors == ()
    assert parsed.call is not None and parsed.call.name == "note"
    assert parsed.speech == "Saving it. Done."


def test_open_quote_follows_python_strings() -> None:
    from huxleyd.providers.cascade.sentences import open_quote

    assert open_quote("note(text='a") == "'"
    assert open_quote("note(text='a')") is None
    assert open_quote('note(text="it\\"s') == '"'
    assert open_quote("note(text='''a ' b") == "'''"
    assert open_quote("note(text='''a''')") is None
