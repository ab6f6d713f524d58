"""The ``huxleyctl watch`` feed, written from the typed events it subscribes to.

Layer: control, asyncio only. A :class:`FeedWriter` subscribes to the
session's events (:mod:`huxleyd.providers.events`: transcripts, tool calls)
and to the coordinator's (:mod:`huxleyd.turns.news`: activity, turns, tool
outcomes, the mute, the connection) and turns each into the feed's wire
form, ``EventFeed.publish(kind, **fields)`` (the kinds and fields of
:mod:`huxleyd.control.watch`). It is a subscriber, never a relay: the
coordinator gets its inputs before and without it, and a writer that raises
costs nobody an event (the bus logs it).

Bound and drop policy: the writer keeps nothing but the turn under way and,
per reply item whose transcript is still streaming, the turn it began in
(one entry per item, removed at its ``TranscriptDone``). What can fall behind
is a ``watch`` client: :class:`~huxleyd.control.watch.EventFeed` keeps at
most ``MAX_QUEUED`` events per client and drops the oldest.
"""

from __future__ import annotations

from collections.abc import Callable

from huxleyd.config.load import PersonaString
from huxleyd.control.watch import EventFeed
from huxleyd.providers.events import Event, Role, ToolCall, TranscriptDelta, TranscriptDone
from huxleyd.turns.news import (
    Activity,
    ActivityChanged,
    ConnectionChanged,
    DegradedPress,
    MuteChanged,
    ToolFinished,
    TurnBegan,
    TurnEnded,
    TurnNews,
)
from huxleyd.turns.state import TurnOutcome, TurnSource

__all__ = ["FeedWriter"]


class FeedWriter:
    """Writes the ``watch`` feed from the session's and the coordinator's events.

    ``strings`` gives a persona string in the persona's language (it follows
    a reload); ``setup_failure`` is the image's failed setup, said instead of
    "offline" when nothing can connect."""

    def __init__(
        self,
        feed: EventFeed,
        *,
        strings: Callable[[PersonaString], str],
        setup_failure: str | None = None,
    ) -> None:
        self._feed = feed
        self._strings = strings
        self._setup_failure = setup_failure
        self._turn: str | None = None
        """The turn under way: from its ``TurnBegan`` to its ``TurnEnded``."""
        self._said_turn: dict[str, str | None] = {}
        """The turn each reply item began in: a reply cut by a barge-in ends
        (its transcript, its response.done) when the next turn has begun."""

    def on_provider_event(self, event: Event) -> None:
        """What a person can follow of the session's events: transcripts, tool calls."""
        if isinstance(event, TranscriptDelta) and event.role is Role.ASSISTANT:
            self._said_turn.setdefault(event.item_id, self._turn)
        elif isinstance(event, TranscriptDone):
            # Every core ends a reply's transcript with one (Gemini's from its parts).
            turn = self._said_turn.pop(event.item_id, None) or self._turn
            if event.text.strip():
                kind = "heard" if event.role is Role.USER else "said"
                self._feed.publish(kind, turn=turn, text=event.text.strip())
        elif isinstance(event, ToolCall):
            self._feed.publish(
                "tool", turn=self._turn, name=event.name, arguments=event.arguments_json
            )

    def on_news(self, news: TurnNews) -> None:
        """The coordinator's events, each as its ``watch`` kind."""
        if isinstance(news, TurnBegan):
            self._turn = news.turn_id
        elif isinstance(news, TurnEnded):
            self._turn_ended(news)
        elif isinstance(news, ActivityChanged):
            self._activity(news.activity)
        elif isinstance(news, ToolFinished):
            self._tool_finished(news)
        elif isinstance(news, MuteChanged):
            self._feed.publish("mute", muted=news.muted)
        elif isinstance(news, DegradedPress):
            self._feed.publish(
                "notice",
                what=self._strings(PersonaString.DEGRADED),
                problems=" | ".join(p.line() for p in news.problems),
            )
        elif isinstance(news, ConnectionChanged):
            status = news.status
            self._feed.publish(
                "connection",
                state=status.state.value,
                attempt=status.attempt,
                retry_in_s=status.retry_in_s,
                detail=status.detail,
            )

    def _activity(self, activity: Activity) -> None:
        self._feed.publish("state", turn=self._turn, state=activity)
        if activity is Activity.OFFLINE:  # a press while offline
            what = self._setup_failure or self._strings(PersonaString.OFFLINE)
            self._feed.publish("notice", what=what)

    def _turn_ended(self, news: TurnEnded) -> None:
        turn = news.turn
        if self._turn == turn.turn_id:
            self._turn = None
        self._feed.publish(
            "turn",
            turn=turn.turn_id,
            outcome=turn.outcome.value if turn.outcome else None,
            tools=",".join(turn.tools) or None,
            source=turn.source,
        )
        if turn.outcome is TurnOutcome.TOO_SHORT and turn.source is not TurnSource.WAKE:
            # The earcon is the audible cue; text surfaces get the persona's words.
            self._feed.publish(
                "notice", turn=turn.turn_id, what=self._strings(PersonaString.TOO_SHORT)
            )

    def _tool_finished(self, news: ToolFinished) -> None:
        outcome = news.outcome
        effect = outcome.side_effect
        self._feed.publish(
            "result",
            turn=self._turn,
            name=outcome.tool,
            output=outcome.output,
            error=outcome.error,
            side_effect=effect.kind if effect is not None else None,
        )
