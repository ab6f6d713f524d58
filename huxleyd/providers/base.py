"""The provider-neutral interface: capabilities, the sans-I/O protocol shape,
the session every connection offers and the states it reports.

Layer: pure logic, no I/O, no asyncio. A provider core implements
:class:`RealtimeCore`; the transport (:mod:`huxleyd.providers.transport`)
moves its frames over a websocket; the coordinator speaks only the commands
of :class:`ProviderCommands` and reads :mod:`~huxleyd.providers.events`, and
branches on :class:`Capabilities`, never on a provider's name. The daemon
(:mod:`huxleyd.app`) holds any connection as a :class:`Session` and follows
it through :class:`ConnectionStatus` reports.

Who implements what::

    RealtimeCore  (sans-I/O cores: openai, xai, gemini)
    Session           transport.ProviderConnection   (websocket + a core)
                      cascade.provider.CascadeConnection (ASR → LLM → TTS)
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from huxleyd.bus import Bus
from huxleyd.providers.events import Event

if TYPE_CHECKING:  # typing only: the logger is handed in by each session
    from huxleyd.logs import EventLogger

Dialect = Literal["openai", "xai", "gemini"]
"""A wire protocol: the real providers, and what the simulator can speak."""

DIALECTS: tuple[Dialect, ...] = ("openai", "xai", "gemini")


class InterruptAcceptance(enum.StrEnum):
    """How a barge-in is known to have taken effect."""

    IMMEDIATE_PROVIDER_ACK = "immediate_provider_ack"
    """``response.cancel`` + ``conversation.item.truncate`` exist; the provider
    confirms the cut (OpenAI)."""
    LOCAL_CUT_ASYNC_CONFIRMATION = "local_cut_async_confirmation"
    """No cancel/truncate: the daemon cuts its speaker locally and keeps its own
    record of what was heard; the provider confirms later, if at all (Gemini)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Capabilities:
    """What a provider can do. The coordinator adapts to these flags."""

    text_input: bool
    """A user turn may be text (``send_user_text``)."""
    mid_session_instructions: bool
    """Instructions can change without reconnecting."""
    mid_session_tools: bool
    """Tools can change without reconnecting."""
    response_cancel: bool
    """``cancel_response`` reaches the provider."""
    truncate: bool
    """``truncate`` reaches the provider (else it is a local record only)."""
    interrupt_acceptance: InterruptAcceptance
    input_rate_hz: int
    """Sample rate of the PCM16 mono audio ``append_audio`` expects."""
    output_rate_hz: int
    """Sample rate of the PCM16 mono audio in ``AudioChunk``."""
    verbatim_reader: bool = False
    """``read_aloud(text, instructions=…)`` exists: a response outside the
    conversation, tools off, that reads ``text`` word for word (SpeakVerbatim).
    Without it the coordinator asks for an in-band response told to read it."""


class VerbatimReader(Protocol):
    """The optional command behind ``Capabilities.verbatim_reader``."""

    def read_aloud(self, text: str, *, instructions: str) -> None:
        """Speak ``text`` verbatim, out of band; its events come flagged ``out_of_band``."""


class ProviderCommands(Protocol):
    """The commands the coordinator gives, in its own terms.

    Implemented by every provider core and by the transport's
    :class:`~huxleyd.providers.transport.ProviderConnection`, which forwards to
    the core and sends what it produced. None of these block or raise on a
    dead connection (see the connection's docstring for what is dropped).
    """

    @property
    def capabilities(self) -> Capabilities: ...

    def configure(
        self, *, instructions: str, tools: Sequence[Mapping[str, Any]], voice: str
    ) -> None:
        """Set instructions, tools and voice. Only what changed is re-sent.

        ``tools`` are provider-neutral function declarations: mappings with
        ``name``, ``description`` and ``parameters`` (a JSON schema). A change
        a provider cannot apply mid-session takes effect at the next connect.
        """

    def start_turn(self) -> None:
        """The user starts speaking: clear any half-sent input."""

    def append_audio(self, pcm: bytes) -> None:
        """Mic audio, PCM16 LE mono at ``capabilities.input_rate_hz``."""

    def end_turn(self) -> None:
        """The user stopped: commit the input. Does NOT ask for a response."""

    def send_user_text(self, text: str) -> None:
        """A user turn as text (when ``capabilities.text_input``). No response yet."""

    def send_tool_output(self, call_id: str, output: str) -> None:
        """Answer a :class:`~huxleyd.providers.events.ToolCall`. Every call needs one."""

    def request_response(
        self,
        *,
        instructions: str | None = None,
        out_of_band: bool = False,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        """Ask the model to answer now (after ``end_turn``, text or tool output).

        ``instructions`` override the session's for this response only;
        ``out_of_band`` answers outside the conversation (may run in parallel).
        """

    def cancel_response(self) -> bool:
        """Stop the active response. Sends nothing (returns False) when none is active.

        After this, audio of the cancelled response is no longer reported.
        """

    def truncate(self, item_id: str, audio_end_ms: int) -> None:
        """Tell the provider the user heard ``item_id`` only up to ``audio_end_ms``.

        Later audio of that item is no longer reported.
        """


class ProviderSession(ProviderCommands, Protocol):
    """What the coordinator holds: the commands plus whether a session is up.

    Implemented by the transport's ``ProviderConnection`` and by the
    cascade's connection; the sans-I/O cores know no connection.
    """

    @property
    def connected(self) -> bool:
        """A session is up: a request made now reaches the provider."""
        ...


@runtime_checkable
class RealtimeCore(ProviderCommands, Protocol):
    """A sans-I/O provider core: frames in, events and frames out.

    The transport drives it::

        core.connection_opened()            # after the socket opened; queues setup
        send(core.messages_to_send())
        for frame in socket: core.receive(frame); deliver(core.events_received());
                             send(core.messages_to_send())
        core.connection_lost()              # socket gone; may report ResponseDone(FAILED)

    ``receive`` never raises: a malformed frame is logged and reported as a
    recoverable :class:`~huxleyd.providers.events.ProviderErrorEvent`.
    """

    def connection_url(self, base_url: str, model: str) -> str:
        """The websocket URL for ``model`` at ``base_url``."""

    def connection_headers(self, api_key: str | None) -> dict[str, str]:
        """Handshake headers; the only place the key goes. Never log them."""

    def connection_opened(self) -> None:
        """A new socket: forget per-connection state, queue the full configuration."""

    def connection_lost(self) -> None:
        """The socket is gone: end what was running (reported as events)."""

    def receive(self, frame: str | bytes) -> None:
        """Feed one received websocket message."""

    def events_received(self) -> list[Event]:
        """Events understood since the last call, oldest first."""

    def messages_to_send(self) -> list[str | bytes]:
        """Frames to send since the last call, in order."""

    @property
    def response_active(self) -> bool:
        """A response was requested or started and has not ended."""

    @property
    def active_response_id(self) -> str | None:
        """The id of the in-conversation response running now, if any."""

    @property
    def pending_tool_calls(self) -> frozenset[str]:
        """Call ids reported as ToolCall on this connection that have no output yet."""


# ---------------------------------------------------------------- the session


class ConnectionState(enum.StrEnum):
    """Where a provider connection stands (the LEDs and earcons follow this).

    The values are the words ``huxleyctl status`` prints and the control
    socket sends as ``provider_state``: renaming one changes that contract.
    """

    CONNECTING = "connecting"
    """First try, or a renewal in progress."""
    CONNECTED = "connected"
    """Session up, configuration sent. Reported once per successful connect."""
    STALLED = "stalled"
    """The socket is open but a due reply delivered no complete frame for
    ``provider.stall_timeout_s``: it is being dropped and tried again."""
    RECONNECTING = "reconnecting"
    """Lost or refused; waiting ``retry_in_s`` before the next try."""
    OFFLINE = "offline"
    """:data:`OFFLINE_AFTER_FAILURES` or more tries failed in a row: play the earcon."""
    KEY_REFUSED = "key_refused"
    """The provider refused the API key (HTTP 401/403 at the handshake): the
    device says so, and the connection retries every ``KEY_RETRY_S``,
    re-reading the key file first."""
    KEY_MISSING = "key_missing"
    """The key file is missing, empty or unreadable: nothing was sent to the
    provider. The file is watched (every ``KEY_POLL_S``) and a key that comes
    back is used within seconds, without a signal."""
    FAILED = "failed"
    """A fatal error (bad URL, wrong model); ``run`` raises."""
    SETUP_FAILED = "setup_failed"
    """The image's first boot could not apply the setup file: no connection
    is tried; the device says so on every press (:mod:`huxleyd.config.setupreport`)."""
    CLOSED = "closed"
    """``close`` was called; ``run`` returned."""

    @property
    def link_down(self) -> bool:
        """A turn cannot reach the provider (a reply in progress is lost).

        CONNECTING is not down: a session renewal keeps the old socket until
        the new one is up."""
        return self not in (ConnectionState.CONNECTING, ConnectionState.CONNECTED)

    @property
    def unreachable(self) -> bool:
        """The user should know: the device shows OFFLINE (LEDs, ``say`` refused)."""
        return self in (
            ConnectionState.OFFLINE,
            ConnectionState.KEY_REFUSED,
            ConnectionState.KEY_MISSING,
            ConnectionState.SETUP_FAILED,
        )


OFFLINE_AFTER_FAILURES = 4
"""From the fourth failed try in a row the state is OFFLINE (docs/reliability.md)."""


def failure_state(failures: int) -> ConnectionState:
    """RECONNECTING after a failed try; OFFLINE from :data:`OFFLINE_AFTER_FAILURES` in a row."""
    if failures >= OFFLINE_AFTER_FAILURES:
        return ConnectionState.OFFLINE
    return ConnectionState.RECONNECTING


class EndReason(enum.StrEnum):
    """Why the provider ended a session (or refused to start one), as the
    provider's core understood it (:mod:`huxleyd.providers.closes`). The text is
    the journal's ``why=`` field. What the user hears about it is the turn
    layer's choice (:func:`huxleyd.turns.cues.failure_cue`), never the provider's."""

    SESSION_CAP = "session_cap"
    KEY_REFUSED = "key_refused"
    MODEL_REFUSED = "model_refused"
    QUOTA_EXHAUSTED = "quota_exhausted"
    SERVER_GOING_AWAY = "server_going_away"
    CONNECTION_LOST = "connection_lost"
    GO_AWAY = "go_away"
    RESUMPTION_REFUSED = "resumption_refused"
    SERVER_REFUSED_FOR_NOW = "server_refused_for_now"
    NOT_FOUND_FOR_NOW = "not_found_for_now"
    SETUP_REFUSED = "setup_refused"
    SERVER_ERROR = "server_error"
    NOT_FOUND = "not_found"
    RATE_LIMITED = "rate_limited"
    REQUEST_REFUSED = "request_refused"


@dataclass(frozen=True, slots=True)
class ConnectionStatus:
    """One report of the connection state.

    ``attempt`` counts the tries that failed in a row (0 once connected);
    ``retry_in_s`` is the wait before the next try; ``detail`` says why, in
    words; ``ended`` is why the provider ended the last session when its core
    could tell (a FAILED or a renewing CONNECTING report), else None.
    """

    state: ConnectionState
    attempt: int = 0
    retry_in_s: float | None = None
    detail: str = ""
    ended: EndReason | None = None


class ReplyListener(Protocol):
    """The turn layer, as a renewal sees it: has the last reply been heard?"""

    @property
    def reply_heard_now(self) -> bool:
        """No turn runs, so nothing is on its way to the speaker."""
        ...

    async def reply_heard(self) -> None:
        """Return once no turn runs and the reply's speech has played out."""


@runtime_checkable
class Session(ProviderSession, VerbatimReader, Protocol):
    """A provider connection as the daemon holds it, whatever is behind it.

    Implemented by :class:`~huxleyd.providers.transport.ProviderConnection`
    (a websocket around a sans-I/O core) and
    :class:`~huxleyd.providers.cascade.provider.CascadeConnection`. Events
    go to the ``on_event`` callback given at construction and to each handler
    added by :meth:`subscribe` (the coordinator: nothing relays them), states
    to ``on_state`` (:class:`ConnectionStatus`); all are called on the loop.

    Lifecycle: ``task = create_task(session.run())``; commands from the
    loop; ``renew()`` between turns when ``session_age_s()`` nears the
    provider's cap; ``await session.close()`` ends ``run``.
    """

    @property
    def url(self) -> str:
        """Where the session goes (the journal names it as "the provider")."""
        ...

    @property
    def status(self) -> ConnectionStatus:
        """The last state reported to ``on_state``."""
        ...

    def subscribe(self, on_event: Callable[[Event], None]) -> None:
        """Also hand every event to ``on_event``, after the handlers before it."""

    def report_states_to(self, on_state: Callable[[ConnectionStatus], None]) -> None:
        """Report each state from now on to ``on_state`` (in place of the one given
        at construction): how the composition root wires the coordinator once it
        exists, with nothing of its own in between. Call it before :meth:`run`."""

    async def run(self) -> None:
        """Connect and stay connected until :meth:`close`; raises on a fatal error."""

    async def close(self) -> None:
        """Stop: end ``run``. Idempotent."""

    def renew(self, why: str = "session renewal") -> None:
        """Open a fresh session between turns, once the last reply has been heard;
        a no-op where there is none to renew."""

    def hold_renewals_until(self, listener: ReplyListener) -> None:
        """Every renewal waits until ``listener`` has heard the reply, bounded by
        the time the server gave; a no-op where nothing is renewed."""

    def session_age_s(self) -> float | None:
        """Seconds since the current session opened; None: disconnected or never capped."""

    @property
    def stalls(self) -> int:
        """Connections given up because a due reply stalled."""
        ...

    @property
    def unlogged_notes(self) -> int:
        """Provider notes counted past the "logged once" bound."""
        ...


class SessionReports:
    """What every :class:`Session` shares: its URL, its last status, and
    callbacks that cannot break it (an exception in an event handler or in
    ``on_state`` is logged, and the session and the other handlers go on)."""

    def __init__(
        self,
        *,
        url: str,
        on_event: Callable[[Event], None],
        on_state: Callable[[ConnectionStatus], None] | None,
        logger: EventLogger,
    ) -> None:
        self._url = url
        self._events: Bus[Event] = Bus(logger, failed="provider_event_handler_failed")
        self._events.subscribe(on_event)
        self._on_state = on_state
        self._log = logger
        self._status = ConnectionStatus(ConnectionState.CONNECTING)
        self._stalls = 0

    @property
    def url(self) -> str:
        return self._url

    @property
    def stalls(self) -> int:
        """Connections given up because a due reply stalled (0 where none can)."""
        return self._stalls

    @property
    def unlogged_notes(self) -> int:
        """Provider notes (unknown event types…) counted but not logged; 0 where
        nothing is ever held back."""
        return 0

    @property
    def status(self) -> ConnectionStatus:
        return self._status

    def subscribe(self, on_event: Callable[[Event], None]) -> None:
        self._events.subscribe(on_event)

    def report_states_to(self, on_state: Callable[[ConnectionStatus], None]) -> None:
        self._on_state = on_state

    def _emit(self, event: Event) -> None:
        self._events.publish(event)

    def _report(self, status: ConnectionStatus) -> None:
        self._status = status
        if self._on_state is None:
            return
        try:
            self._on_state(status)
        except Exception:
            self._log.exception("provider_state_handler_failed", state=status.state.value)
