"""Which provider response is the turn's reply, and how to ask for one.

The provider answers with responses that start, stream audio and tool calls,
and end. :class:`ReplyTracker` keeps the bookkeeping its owner
(:class:`~huxleyd.turns.replies.Replies`) needs to tell the reply from
everything else: the id of the response it adopted, the ids it gave up
(whose late audio and tool calls must not act), and the out-of-band reader
it asked for (SpeakVerbatim). It also asks for responses
(a normal one, one with instructions, or the verbatim reader) and remembers
the last request, so a reply that stays silent can be asked for again.

It is bookkeeping only: no timer (the owner's
:class:`~huxleyd.turns.watchdog.SilenceWatchdog` decides "silent" and
"stale"), no tasks, nothing awaited.

It may touch: the provider's ``request_response``, ``read_aloud`` (when
``capabilities.verbatim_reader``) and ``cancel_response``. It never changes
the turn's state.
"""

from __future__ import annotations

from collections.abc import Callable

from huxleyd.providers.base import ProviderCommands
from huxleyd.providers.events import ResponseDone, ResponseStarted

READ_VERBATIM = (
    "Read the following text aloud exactly as written, word for word, in your "
    "usual voice. Do not add, drop, explain or comment on anything."
)
"""The in-band instruction used for SpeakVerbatim when the provider has no reader."""

MAX_GIVEN_UP = 64
"""Given-up response ids remembered (their late audio and calls are refused). A
response's late events come within seconds; 64 is many turns of barge-ins."""


class ReplyTracker:
    """The reply of the current turn, from request to ``response.done``.

    The owner asks with :meth:`request` or :meth:`read_aloud` (and
    :meth:`retry`), reports :meth:`started` / :meth:`finished` for each
    response, checks :meth:`owns` / :meth:`gave_up` for audio and tool calls,
    and calls :meth:`abandon` to drop the reply and :meth:`end_turn` when the
    turn ends.
    """

    def __init__(self, provider: ProviderCommands, *, instructions: str) -> None:
        self._provider = provider
        self._instructions = instructions
        self.response_id: str | None = None
        """The response adopted as the reply, until it ends or is abandoned."""
        self._gave_up: dict[str, None] = {}
        """Ids given up, oldest first; forgotten at their ``response.done`` or, for
        those whose done never comes (a lost connection), past :data:`MAX_GIVEN_UP`."""
        self._retry_request: Callable[[], None] = provider.request_response
        self._retry_in_band = True
        """How to ask again when a reply stays silent (a normal reply, or the reader)."""
        self._reader_pending = False
        self._unstarted = 0
        """In-band requests sent whose response has not started yet."""
        self._stale_starts = 0
        """Responses still to start that answer requests given up before they started
        (a quick re-press on a slow link): the next that many starts are not the reply."""

    @property
    def running(self) -> bool:
        """A response was adopted and has not ended."""
        return self.response_id is not None

    # ------------------------------------------------------------ asking

    def request(self, *, instructions: str | None = None) -> None:
        """Ask for a reply (``instructions`` override the session's for it only)."""

        def request() -> None:
            self._provider.request_response(instructions=instructions)

        self._send(request)

    def read_aloud(self, text: str) -> None:
        """Ask for ``text`` read verbatim in the assistant's voice (SpeakVerbatim).

        Outside the conversation with tools off when the provider can
        (``verbatim_reader``); else an in-band response told to read it.
        The caller cuts speech still queued first: it is stale.
        """
        self._reader_pending = True
        if self._provider.capabilities.verbatim_reader:
            read_aloud = getattr(self._provider, "read_aloud")  # noqa: B009 - capability-gated
            self._send(lambda: read_aloud(text, instructions=self._instructions), in_band=False)
        else:
            self.request(instructions=f"{READ_VERBATIM}\n\n{text}")

    def retry(self) -> None:
        """Send the last request again (after :meth:`abandon`)."""
        self._send(self._retry_request, in_band=self._retry_in_band)

    def _send(self, request: Callable[[], None], *, in_band: bool = True) -> None:
        self._retry_request = request
        self._retry_in_band = in_band
        if in_band:
            self._unstarted += 1
        request()

    # ------------------------------------------------------------ responses

    def started(self, event: ResponseStarted, *, wanted: bool) -> bool:
        """A response started. True: it is adopted as the reply (``wanted`` says
        the turn waits for one). An unwanted one is given up; someone else's
        out-of-band response is left alone."""
        if event.out_of_band and not self._reader_pending:
            return False  # someone else's side conversation
        if not event.out_of_band:
            self._unstarted = max(0, self._unstarted - 1)
            if self._stale_starts > 0:
                # It answers a request given up before it started: not this reply.
                self._stale_starts -= 1
                self._give_up(event.response_id)
                return False
        self._reader_pending = False
        if wanted:
            self.response_id = event.response_id
            return True
        self._give_up(event.response_id)  # we cancelled it, or it is stale
        return False

    def _give_up(self, response_id: str) -> None:
        self._gave_up[response_id] = None
        while len(self._gave_up) > MAX_GIVEN_UP:
            del self._gave_up[next(iter(self._gave_up))]  # the oldest: its events are long past

    def owns(self, response_id: str) -> bool:
        """Audio of ``response_id`` belongs to the reply (else it is dropped)."""
        return response_id not in self._gave_up and response_id == self.response_id

    def gave_up(self, response_id: str) -> bool:
        """``response_id`` was cut or unwanted: its tool calls are declined."""
        return response_id in self._gave_up

    def finished(self, done: ResponseDone) -> bool:
        """A response ended. True: it was the reply (now over)."""
        if done.out_of_band and done.response_id != self.response_id:
            return False
        if done.response_id in self._gave_up or done.response_id != self.response_id:
            self._gave_up.pop(done.response_id, None)
            return False
        self.response_id = None
        return True

    def abandon(self, *, late_start_is_stale: bool = True) -> None:
        """Drop the reply: its later events are ignored; the provider is told to stop.

        Requests whose response has not started yet will still start (the
        provider answers them in order, then sees the cancel): those starts
        are not the next reply. ``late_start_is_stale=False`` (a silent
        retry asks the same again) lets a late start be adopted instead.
        """
        if late_start_is_stale:
            self._stale_starts += self._unstarted
        self._unstarted = 0
        if self.response_id is not None:
            self._give_up(self.response_id)
            self.response_id = None
        if self._provider.capabilities.response_cancel:
            self._provider.cancel_response()

    def request_refused(self) -> None:
        """The provider refused a request (an error instead of a start)."""
        if self._unstarted > 0:
            self._unstarted -= 1
        elif self._stale_starts > 0:
            self._stale_starts -= 1

    def end_turn(self) -> None:
        """The turn ended: no reader awaited, and its reply is over.

        A reply that never finished (a fatal error, a lost connection) is
        given up without a cancel: whoever ended the turn already stopped it
        or the session it belonged to is gone, so a later barge-in has
        nothing to cancel (a stale ``response.cancel`` only earns an error).
        """
        self._reader_pending = False
        if self.response_id is not None:
            self._give_up(self.response_id)
            self.response_id = None
