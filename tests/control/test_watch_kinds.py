"""One list of watch kinds: what is published, what is documented, what is rendered.

``KINDS`` in ``control/watch.py`` is the list; every kind the feed writer or
the log tap publishes is in it, and ``huxleyctl watch`` has words for each
(``WATCH_WORDS``). A kind published but not listed (``mute`` was, once)
fails here rather than printing as bare ``key=value`` unnoticed.
"""

from __future__ import annotations

import ast
from pathlib import Path

from huxleyd.control import feedwriter
from huxleyd.control.render import WATCH_WORDS, watch_text
from huxleyd.control.watch import KINDS, LOGGED_EVENTS, WatchEvent


def published_kinds(source: str) -> set[str]:
    """The literal first argument of every ``….publish("kind", …)`` call in ``source``."""
    return {
        node.args[0].value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "publish"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    }


def test_every_published_kind_is_listed() -> None:
    written = published_kinds(Path(feedwriter.__file__).read_text(encoding="utf-8"))
    assert {"state", "tool", "turn", "mute", "connection"} <= written  # the scan sees them
    tapped = {kind for kind, _ in LOGGED_EVENTS.values()}
    assert (written | tapped) - set(KINDS) == set()


def test_the_scan_sees_an_unlisted_kind() -> None:
    assert published_kinds('feed.publish("shouted", text="x")\nfeed.publish(kind)') == {"shouted"}


def test_watch_has_words_for_every_listed_kind() -> None:
    assert set(WATCH_WORDS) == set(KINDS)
    event = WatchEvent("mute", "2026-11-27T16:00:00+00:00", None, {"muted": True})
    assert watch_text(event) == "muted=True"
