"""The websocket transport: thin asyncio glue around a sans-I/O provider core.

Layer: adapter (websockets 15 asyncio client). It connects, hands frames
both ways through a :class:`~huxleyd.providers.base.RealtimeCore`,
delivers the core's events to a callback, and reconnects with backoff
(:mod:`huxleyd.providers.retry`). All protocol decisions live in the core.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, NoReturn
from urllib.parse import urlsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from huxleyd.errors import ConfigError, ProviderConnectionError
from huxleyd.logs import EventLogger, get_logger
from huxleyd.providers.apikey import KeyKeeper
from huxleyd.providers.base import (
    Capabilities,
    ConnectionState,
    ConnectionStatus,
    ReplyListener,
    SessionReports,
    failure_state,
)
from huxleyd.providers.closes import (
    CloseAction,
    CloseVerdict,
    handshake_verdict,
)
from huxleyd.providers.connection_parts import Endpoint, SocketLimits, Timing
from huxleyd.providers.core import ConnectionCore
from huxleyd.providers.events import Event, ProviderErrorEvent, SessionReady
from huxleyd.providers.renewal import HeardGate
from huxleyd.providers.retry import (
    FATAL,
    ReconnectPolicy,
    being_cancelled,
    classify,
    key_refused,
)
from huxleyd.providers.stall import StallClock

SECRET_HEADERS = frozenset({"authorization", "x-goog-api-key", "api-key", "xi-api-key"})


class _RedactSecretHeaders(logging.Filter):
    """websockets logs every handshake header at DEBUG; keys must not reach a log."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 2 and str(args[0]).lower() in SECRET_HEADERS:
            record.args = (args[0], "<redacted>")
        return True


def websocket_logger(name: str = "huxleyd.providers.websocket") -> logging.Logger:
    """The logger to hand websockets: its handshake DEBUG lines have secrets redacted."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, _RedactSecretHeaders) for f in logger.filters):
        logger.addFilter(_RedactSecretHeaders())
    return logger


def _is_loopback(url: str) -> bool:
    return (urlsplit(url).hostname or "") in {"127.0.0.1", "localhost", "::1"}


class ProviderConnection(SessionReports):
    """One provider session kept alive: connect, configure, pump, reconnect.

    Call the :class:`~huxleyd.providers.base.ProviderCommands` methods on it
    (``configure``, ``append_audio``, ``request_response``…) from the event
    loop; they go through the core and out on the socket in order. Read
    events in ``on_event`` and the connection state in ``on_state`` (both
    plain callbacks, called on the loop; exceptions in them are logged).

    While disconnected, commands still update the core (a ``configure`` is
    kept and sent in full on the next connect) but the frames they produce
    are dropped and counted in ``dropped_messages``: a new connection is a
    new conversation, so old audio, commits and tool outputs mean nothing
    there. Outgoing frames wait in a queue of at most ``max_queued_messages``
    (about 20 s of mic audio); when it is full the newest frame is dropped and
    counted — the socket is stalled and the keepalive will close it.

    Built from the core and three named parts
    (:mod:`huxleyd.providers.connection_parts`): the :class:`Endpoint`, the
    :class:`SocketLimits` and the :class:`Timing`. What a provider offers
    around the socket (a close frame it reads, a reconnect it asks for, the
    time left the server gave, its reading of a close) the core declares
    (:class:`~huxleyd.providers.core.ConnectionCore`).

    Lifecycle: ``task = create_task(conn.run())``; ``conn.renew()`` between
    turns before the provider's session cap; ``await conn.close()`` to stop.

    Renewals wait for the listener: with :meth:`hold_renewals_until` given
    (the daemon hands the turn layer), a renewal the core asks for or
    :meth:`renew` closes the socket only once the last reply has been heard,
    or when the time the server gave runs out (:mod:`huxleyd.providers.renewal`).
    The server may still close first; what was received plays out anyway
    (the turn layer does not cut it).
    ``run`` returns after ``close`` and raises
    :class:`~huxleyd.errors.ProviderConnectionError` on a fatal error.

    Reconnecting follows a :class:`~huxleyd.providers.retry.ReconnectPolicy`:
    a session that became ready and then dropped starts the backoff over; only
    failed tries in a row climb it (and from the fourth report OFFLINE).
    While a reply is due (the core's ``response_active``), a socket that
    delivers no complete frame for ``stall_timeout_s`` is STALLED: aborted and
    tried again (:meth:`_watch_stall`; ``stalls`` counts them). A
    refused key (HTTP 401/403) is the KEY_REFUSED state, retried every
    ``key_retry_s``; ``key_source``, when given, is called before every try
    (it re-reads the key file, so a fixed key is picked up without a restart).
    """

    def __init__(
        self,
        core: ConnectionCore,
        endpoint: Endpoint,
        *,
        on_event: Callable[[Event], None],
        on_state: Callable[[ConnectionStatus], None] | None = None,
        limits: SocketLimits | None = None,
        timing: Timing | None = None,
        logger: EventLogger | None = None,
    ) -> None:
        super().__init__(
            url=endpoint.url,
            on_event=on_event,
            on_state=on_state,
            logger=logger or get_logger("huxleyd.providers"),
        )
        self._core = core
        self._model = endpoint.model
        self._limits = limits or SocketLimits()
        timing = timing or Timing()
        self._timing = timing
        self._clock = timing.clock
        self._gate = HeardGate(clock=self._clock, sleep=timing.sleep)
        self._keys = KeyKeeper(
            endpoint,
            timing,
            log=self._log,
            report=self._report,
            pause=self._sleep_or_wake,
            stopping=self._stopping,
        )
        self._renewal: asyncio.Future[None] | None = None
        """A renewal waiting for the listener (ended when its connection does)."""
        self._last_close: tuple[int | None, str] = (None, "")
        self._ws: ClientConnection | None = None
        self._outbox: asyncio.Queue[str | bytes] | None = None
        self._connected_at: float | None = None
        self._closing = False
        self._renewing = False
        self._session_ready = False
        self._stall_clock = StallClock(self._clock)
        self._stall: str | None = None
        """Why the current socket was given up as stalled (None: it was not)."""
        self._wake = asyncio.Event()
        self._background: set[asyncio.Task[Any]] = set()
        self.dropped_messages = 0
        """Frames not sent: produced while disconnected, or the send queue was full."""
        self.connects = 0
        """Successful connects so far."""

    # ------------------------------------------------------------ state

    @property
    def core(self) -> ConnectionCore:
        return self._core

    @property
    def limits(self) -> SocketLimits:
        return self._limits

    @property
    def capabilities(self) -> Capabilities:
        return self._core.capabilities

    @property
    def connected(self) -> bool:
        """A command given now reaches the current session (not while a renewal
        is closing it: what is sent then would be lost with it)."""
        return self._outbox is not None and not self._renewing

    @property
    def unlogged_notes(self) -> int:
        """The core's notes past its "logged once" bound (counted, not logged)."""
        return self._core.unlogged_notes

    def session_age_s(self) -> float | None:
        """Seconds since the current socket opened; None while disconnected."""
        if self._connected_at is None:
            return None
        return self._clock.monotonic() - self._connected_at

    # ------------------------------------------------------------ lifecycle

    # longer than 50 lines: the reconnect loop whole: every way a try or a session ends, and what follows it
    async def run(self) -> None:
        """Connect and keep connected until :meth:`close`. See the class docstring."""
        policy = ReconnectPolicy(self._timing.backoff)
        self._report(ConnectionStatus(ConnectionState.CONNECTING))
        try:
            while not self._stopping():
                try:
                    self._keys.refresh()
                    ws = await self._open()
                except Exception as exc:
                    if being_cancelled():  # the cancel, raised as the handshake's error
                        raise asyncio.CancelledError from exc
                    if isinstance(exc, ConfigError):  # the file: gone, empty, unreadable
                        await self._keys.wait_for_file(exc)
                        policy.reset()
                        continue
                    if key_refused(exc):
                        await self._keys.wait_after_refusal(_describe(exc))
                        policy.reset()
                        continue
                    if classify(exc) is FATAL:
                        self._fail(exc)
                    delay = policy.attempt_failed()
                    await self._wait_after_failure(policy.failures, delay, exc)
                    continue
                if self._stopping():  # close() was called while the handshake ran
                    await ws.close(1000, "closing")
                    break
                was_ready = await self._serve(ws)
                if self._stopping():
                    break
                if self._renewing:
                    self._renewing = False
                    policy.reset()
                    self._report(ConnectionStatus(ConnectionState.CONNECTING, detail="renew"))
                    continue
                # A stalled socket was ours to drop: no close frame to judge.
                verdict = None if self._stall else self._judge_close(was_ready)
                if verdict is not None and verdict.action is CloseAction.FATAL:
                    self._fail_verdict(verdict)
                if verdict is not None and verdict.action is CloseAction.RENEW:
                    # The provider ended the session on purpose: a fresh one now,
                    # and it counts as no failure.
                    self._log.info(
                        "provider_session_renew", why=verdict.reason, problem=verdict.detail
                    )
                    self._report(
                        ConnectionStatus(
                            ConnectionState.CONNECTING, detail=verdict.reason, ended=verdict.reason
                        )
                    )
                    policy.reset()
                    continue
                # A ready session that dropped (however it closed) is not a failed
                # try: the schedule starts over. Dropped before ready: one more failure.
                delay = policy.session_ended(was_ready=was_ready)
                await self._wait_after_failure(policy.failures, delay, None, self._stall)
        finally:
            if self._status.state is not ConnectionState.FAILED:
                self._report(ConnectionStatus(ConnectionState.CLOSED))

    def _stopping(self) -> bool:
        return self._closing

    def hold_renewals_until(self, listener: ReplyListener) -> None:
        """Every renewal waits until ``listener`` has heard the reply (bounded;
        see the class docstring)."""
        self._gate.hold_for(listener)

    def renew(self, why: str = "session renewal") -> None:
        """Open a fresh session once the last reply has been heard; instructions
        and tools are re-sent.

        A core with session resumption (Gemini) resumes the conversation;
        others start a new one.
        """
        self._request_renewal(why, asked_by_core=False)

    def _request_renewal(self, why: str, *, asked_by_core: bool) -> None:
        ws = self._ws
        if ws is None or self._closing or self._renewing or self._gate.pending:
            return
        if self._gate.closes_now():
            self._close_for_renewal(ws, why)
        else:
            self._renewal = asyncio.ensure_future(self._renew_when_heard(ws, why, asked_by_core))
            self._background.add(self._renewal)
            self._renewal.add_done_callback(self._background.discard)

    async def _renew_when_heard(self, ws: ClientConnection, why: str, asked_by_core: bool) -> None:
        waited_s = self._gate.bound_s()
        in_time = await self._gate.wait()
        if self._ws is not ws or self._closing or self._renewing:
            return  # the server closed first, or we are stopping anyway
        if asked_by_core and self._core.reconnect_wanted is None:
            return  # a new turn began meanwhile: the core asks again once idle
        if not in_time:
            self._log.warning("provider_renew_before_heard", why=why, waited_s=round(waited_s, 1))
        self._close_for_renewal(ws, why)

    def _close_for_renewal(self, ws: ClientConnection, why: str) -> None:
        self._renewing = True
        self._log.info(
            "provider_session_renew", why=why, age_s=round(self.session_age_s() or 0.0, 1)
        )
        self._spawn(ws.close(1000, why))

    async def close(self) -> None:
        """Stop: close the socket, end ``run``. Idempotent."""
        self._closing = True
        self._wake.set()
        ws = self._ws
        if ws is not None:
            await ws.close(1000, "closing")

    def _judge_close(self, healthy: bool) -> CloseVerdict | None:
        """The core's reading of how the last connection ended (None: no opinion)."""
        code, reason = self._last_close
        verdict = self._core.close_verdict(code, reason, ready=healthy)
        if verdict is None:
            return None
        self._log.info(
            "provider_close_classified",
            code=code,
            action=verdict.action.value,
            why=verdict.reason,
        )
        return verdict

    def _fail_verdict(self, verdict: CloseVerdict) -> NoReturn:
        detail = f"{verdict.reason}: {verdict.detail}"
        self._report(ConnectionStatus(ConnectionState.FAILED, detail=detail, ended=verdict.reason))
        self._log.error(
            "provider_session_refused", url=self._url, why=verdict.reason, problem=verdict.detail
        )
        raise ProviderConnectionError(f"cannot use provider at {self._url}: {detail}")

    def _fail(self, exc: Exception) -> NoReturn:
        detail = _describe(exc)
        self._report(ConnectionStatus(ConnectionState.FAILED, detail=detail))
        self._log.error("provider_connect_fatal", url=self._url, problem=detail)
        raise ProviderConnectionError(f"cannot use provider at {self._url}: {detail}") from exc

    async def _wait_after_failure(
        self, failures: int, delay_s: float, exc: Exception | None, why: str | None = None
    ) -> None:
        state = failure_state(failures)
        detail = _describe(exc) if exc is not None else why or "connection lost"
        self._report(ConnectionStatus(state, failures, round(delay_s, 3), detail))
        self._log.info(
            "provider_retry",
            state=state.value,
            attempt=failures,
            retry_in_s=round(delay_s, 1),
            problem=detail,
        )
        await self._sleep_or_wake(delay_s)

    async def _sleep_or_wake(self, delay_s: float) -> None:
        """Sleep ``delay_s``, or less if :meth:`close` is called meanwhile."""
        sleeper = asyncio.ensure_future(self._timing.sleep(delay_s))
        waker = asyncio.ensure_future(self._wake.wait())
        _, pending = await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    async def _open(self) -> ClientConnection:
        url = self._core.connection_url(self._url, self._model)
        return await connect(
            url,
            additional_headers=self._core.connection_headers(self._keys.key),
            open_timeout=self._limits.open_timeout_s,
            ping_interval=self._limits.ping_interval_s,
            ping_timeout=self._limits.ping_timeout_s,
            max_size=self._limits.max_message_bytes,
            close_timeout=self._limits.close_timeout_s,
            proxy=None if _is_loopback(url) else True,
            user_agent_header="huxleyd",
            logger=websocket_logger(),
        )

    # ------------------------------------------------------------ one connection

    async def _serve(self, ws: ClientConnection) -> bool:
        """Pump one socket until it ends; True if the session became ready."""
        self._ws = ws
        self._outbox = asyncio.Queue(self._limits.max_queued_messages)
        self._connected_at = self._clock.monotonic()
        if self._renewal is not None:
            self._renewal.cancel()  # it was for the connection that ended
        self._gate.new_connection()
        self.connects += 1
        self._core.connection_opened()
        self._report(ConnectionStatus(ConnectionState.CONNECTED))
        self._log.info(
            "provider_connected", url=self._url, model=self._model, connects=self.connects
        )
        self._stall = None
        self._stall_clock.reset(self._connected_at)
        self._flush()
        writer = asyncio.create_task(self._write(ws, self._outbox))
        watchdog = asyncio.create_task(self._watch_stall(ws))
        self._session_ready = False
        try:
            await self._read(ws)
        except ConnectionClosed as exc:
            close = exc.rcvd or exc.sent
            self._log.info(
                "provider_connection_lost",
                code=close.code if close else None,
                reason=close.reason if close else "no close frame",
            )
        finally:
            writer.cancel()
            watchdog.cancel()
            await asyncio.gather(writer, watchdog, return_exceptions=True)
            self.dropped_messages += self._outbox.qsize()
            self._ws, self._outbox, self._connected_at = None, None, None
            self._last_close = (ws.close_code, ws.close_reason or "")
            self._core.connection_closed(ws.close_code, ws.close_reason or "")
            self._core.connection_lost()
            self._deliver(self._core.events_received())
            await ws.close()
        return self._session_ready

    async def _read(self, ws: ClientConnection) -> None:
        """Feed frames to the core until the socket ends (an abnormal close raises
        ConnectionClosed; whether the session got ready is kept either way)."""
        async for frame in ws:
            self._stall_clock.frame_received()
            self._core.receive(frame)
            if (left_s := self._core.take_time_left_s()) is not None:
                self._gate.server_time_left(left_s)
            events = self._core.events_received()
            if any(isinstance(e, SessionReady) for e in events):
                self._session_ready = True
            self._deliver(events)
            self._stall_clock.note(self._core.response_active, peer_spoke=True)
            self._flush()
            fatal = next(
                (e for e in events if isinstance(e, ProviderErrorEvent) and not e.recoverable),
                None,
            )
            if fatal is not None:
                self._log.warning("provider_session_ended", code=fatal.code)
                break

    def quiet_for_s(self) -> float | None:
        """Seconds a due reply has gone without one complete frame (None: none is due)."""
        return None if self._outbox is None else self._stall_clock.quiet_for_s()

    async def _watch_stall(self, ws: ClientConnection) -> None:
        """Give up a socket that delivers no complete frame while a reply is due
        (:mod:`huxleyd.providers.stall`): aborted (a stalled peer would not answer
        a close either), the state says STALLED, and the run loop reconnects."""
        timeout_s = self._limits.stall_timeout_s
        quiet = await self._stall_clock.stalled(timeout_s, self._timing.stall_sleep)
        self._stalls += 1
        self._stall = (
            f"stalled: no complete frame for {quiet:.1f} s while a reply was due "
            f"(provider.stall_timeout_s = {timeout_s:g})"
        )
        self._log.warning(
            "provider_stalled",
            quiet_s=round(quiet, 1),
            stall_timeout_s=timeout_s,
            stalls=self._stalls,
        )
        self._report(ConnectionStatus(ConnectionState.STALLED, detail=self._stall))
        ws.transport.abort()

    async def _write(self, ws: ClientConnection, outbox: asyncio.Queue[str | bytes]) -> None:
        with contextlib.suppress(ConnectionClosed):
            while True:
                await ws.send(await outbox.get())

    def _flush(self) -> None:
        self._stall_clock.note(self._core.response_active)
        messages = self._core.messages_to_send()
        if self._outbox is not None:
            reason = self._core.reconnect_wanted
            if reason:
                self._request_renewal(reason, asked_by_core=True)
        if not messages:
            return
        outbox = self._outbox
        if outbox is None:
            self.dropped_messages += len(messages)
            return
        for message in messages:
            try:
                outbox.put_nowait(message)
            except asyncio.QueueFull:
                self.dropped_messages += 1
                self._log.warning("provider_send_queue_full", dropped=self.dropped_messages)

    def _deliver(self, events: list[Event]) -> None:
        for event in events:
            self._emit(event)

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ------------------------------------------------------------ commands

    def configure(
        self, *, instructions: str, tools: Sequence[Mapping[str, Any]], voice: str
    ) -> None:
        self._core.configure(instructions=instructions, tools=tools, voice=voice)
        self._flush()

    def start_turn(self) -> None:
        self._core.start_turn()
        self._flush()

    def append_audio(self, pcm: bytes) -> None:
        self._core.append_audio(pcm)
        self._flush()

    def end_turn(self) -> None:
        self._core.end_turn()
        self._flush()

    def send_user_text(self, text: str) -> None:
        self._core.send_user_text(text)
        self._flush()

    def send_tool_output(self, call_id: str, output: str) -> None:
        self._core.send_tool_output(call_id, output)
        self._flush()

    def request_response(
        self,
        *,
        instructions: str | None = None,
        out_of_band: bool = False,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        self._core.request_response(
            instructions=instructions, out_of_band=out_of_band, metadata=metadata
        )
        self._flush()

    def cancel_response(self) -> bool:
        sent = self._core.cancel_response()
        self._flush()
        return sent and self.connected

    def truncate(self, item_id: str, audio_end_ms: int) -> None:
        self._core.truncate(item_id, audio_end_ms)
        self._flush()

    def read_aloud(self, text: str, *, instructions: str) -> None:
        """Forward SpeakVerbatim to a core with ``capabilities.verbatim_reader``."""
        reader = getattr(self._core, "read_aloud", None)
        if reader is None:
            raise NotImplementedError(f"{type(self._core).__name__} has no verbatim reader")
        reader(text, instructions=instructions)
        self._flush()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, InvalidStatus):
        verdict = handshake_verdict(exc.response.status_code)
        return f"{verdict.reason}: {verdict.detail}"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if str(exc) else text
