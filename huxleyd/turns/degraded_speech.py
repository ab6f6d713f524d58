"""Saying aloud why the "something is wrong" cue played.

Layer: turns. The coordinator plays the cue on the first press after a part
degraded and publishes :class:`~huxleyd.turns.news.DegradedPress`;
:class:`DegradedSpeech` subscribes to it and queues an announcement (an
inject, never a turn of its own): the inject rule speaks it once the user's
turn has ended, never over it. The persona's words come from ``string``
(its ``degraded`` string, which follows a reload).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from huxleyd.degraded import Problem
from huxleyd.turns.news import DegradedPress, TurnNews

DEGRADED_SPEECH_TTL_S = 120.0
"""What went wrong is said after the reply to the press that cued it; if the
provider is away longer than this, it is dropped (the cue, status and doctor stay)."""


def degraded_prompt(string: str, problems: Sequence[Problem]) -> str | None:
    """The announcement that says why the "something is wrong" cue played, or None.

    The persona's ``degraded`` string up to its first colon is its words for
    "something is wrong" (what follows points an admin at doctor: text
    surfaces only); each problem adds its reason in plain words. A persona
    whose string has no such lead says nothing aloud: the cue is the signal."""
    lead = string.split(":", 1)[0].strip() if ":" in string else ""
    if not lead or not problems:
        return None
    reasons = "; ".join(p.spoken() for p in problems)
    return (
        "Tell the user this now, in one or two short sentences in the language you "
        f"speak with them, adding nothing else: {lead}: {reasons}."
    )


class DegradedSpeech:
    """Subscribe :meth:`on_news` to the coordinator: a degraded press is said aloud."""

    def __init__(
        self,
        spawn: Callable[[Coroutine[Any, Any, Any], str], Any],
        inject_turn: Callable[..., Coroutine[Any, Any, Any]],
        *,
        string: Callable[[], str],
    ) -> None:
        self._spawn = spawn
        self._inject_turn = inject_turn
        self._string = string

    def on_news(self, news: TurnNews) -> None:
        if isinstance(news, DegradedPress):
            self.say(news.problems)

    def say(self, problems: Sequence[Problem]) -> None:
        """Queue the announcement of :func:`degraded_prompt`, if the persona has words
        for it. While offline it waits for the connection at most
        :data:`DEGRADED_SPEECH_TTL_S`, then is dropped: nothing queues forever."""
        prompt = degraded_prompt(self._string(), problems)
        if prompt is None:
            return
        self._spawn(
            self._inject_turn(prompt, dedup_key="degraded", ttl_s=DEGRADED_SPEECH_TTL_S),
            "degraded-speech",
        )
