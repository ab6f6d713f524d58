"""systemd integration: sd_notify over ``$NOTIFY_SOCKET`` and a watchdog that
is fed only while both the asyncio loop and the audio thread make progress.

No systemd-python needed: the notify protocol is one datagram of
``KEY=value`` lines to the unix socket named in ``NOTIFY_SOCKET`` (a path,
or ``@name`` for the abstract namespace). Outside systemd the variable is
unset and every call here is a no-op, so the daemon calls them unconditionally::

    notify_status("opening audio devices")
    ...
    notify_ready()                      # skills set up, audio running
    watchdog = Watchdog.from_environment(audio_progress=lambda: engine.stats().periods)
    if watchdog:
        heartbeat = asyncio.create_task(watchdog.heartbeat())
        watchdog.start()
    ...
    notify_stopping(); watchdog.stop()

The unit sets ``WatchdogSec=``; systemd passes ``WATCHDOG_USEC`` and we ping
at half of it. A ping is withheld (and the reason logged once) when the
loop's heartbeat or the audio period counter has not moved since the last
check; two missed pings and systemd restarts the service.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Callable, Mapping
from typing import Protocol

from huxleyd.logs import get_logger
from huxleyd.providers.base import ConnectionState, ConnectionStatus
from huxleyd.turns.news import ActivityChanged, ConnectionChanged, TurnNews

log = get_logger("huxleyd.service")  # the journal's name for these lines; kept

__all__ = [
    "Notifier",
    "Watchdog",
    "notify_ready",
    "notify_status",
    "notify_stopping",
    "notify_watchdog",
    "watchdog_interval_s",
]


def _socket_address(raw: str) -> str | None:
    """``NOTIFY_SOCKET`` → an AF_UNIX address; ``@x`` is the abstract name ``\\0x``."""
    if raw.startswith("@"):
        return "\0" + raw[1:]
    if raw.startswith("/"):
        return raw
    return None  # vsock: and other transports systemd may hand a VM; not ours


class Notifier:
    """Sends sd_notify messages. Thread-safe (one datagram per message, no shared state).

    ``env`` defaults to ``os.environ`` read at each send, so a test (or a
    daemon that changed its environment) is seen at once.
    """

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = env
        self._warned = False

    @property
    def address(self) -> str | None:
        env = os.environ if self._env is None else self._env
        raw = env.get("NOTIFY_SOCKET", "")
        return _socket_address(raw) if raw else None

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, **fields: str) -> bool:
        """Send ``KEY=value`` lines (``READY="1"``); False when not under systemd or it failed."""
        address = self.address
        if address is None:
            return False
        # A newline inside a value would start a new, unintended assignment.
        message = "\n".join(f"{k}={' '.join(str(v).splitlines())}" for k, v in fields.items())
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                # Never block the event loop on a receiver that is not reading:
                # a full queue drops this message (and says so once) instead.
                sock.setblocking(False)
                sock.connect(address)
                sock.sendall(message.encode("utf-8"))
        except OSError as exc:
            if not self._warned:  # once: a broken socket would otherwise log every ping
                self._warned = True
                log.warning("sd_notify_failed", error=str(exc), message=message.split("=")[0])
            return False
        return True

    def ready(self, status: str | None = None) -> bool:
        """READY=1: start-up is done (skills set up, audio running)."""
        return self.send(READY="1", **({"STATUS": status} if status else {}))

    def status(self, text: str) -> bool:
        """STATUS=…: one line for ``systemctl status`` saying what the daemon is doing."""
        return self.send(STATUS=text)

    def stopping(self, status: str | None = None) -> bool:
        """STOPPING=1: shutdown has begun."""
        return self.send(STOPPING="1", **({"STATUS": status} if status else {}))

    def watchdog(self) -> bool:
        """WATCHDOG=1: still alive."""
        return self.send(WATCHDOG="1")

    def extend_timeout(self, seconds: float) -> bool:
        """EXTEND_TIMEOUT_USEC: ask for more start/stop time (a slow first model download)."""
        return self.send(EXTEND_TIMEOUT_USEC=str(int(seconds * 1_000_000)))


class StatusSink(Protocol):
    """Where the status line goes (:meth:`Notifier.status`)."""

    def status(self, text: str) -> bool: ...


class StatusLine:
    """systemd's ``STATUS=`` line, following the coordinator's typed events.

    Subscribe :meth:`on_news` to the coordinator. The line says the device's
    activity; while the provider is unreachable (offline, the key refused,
    the image's setup failed) it says that instead, and an activity change
    does not hide it until the connection is back."""

    def __init__(self, sink: StatusSink) -> None:
        self._sink = sink
        self._activity = "idle"
        self._unreachable = False

    def on_news(self, news: TurnNews) -> None:
        if isinstance(news, ActivityChanged):
            self._activity = news.activity.value
            if not self._unreachable:
                self._sink.status(self._activity)
        elif isinstance(news, ConnectionChanged):
            self._connection(news.status)

    def _connection(self, status: ConnectionStatus) -> None:
        text = unreachable_status(status)
        if text is not None:
            self._unreachable = True
            self._sink.status(text)
        elif self._unreachable and status.state is ConnectionState.CONNECTED:
            self._unreachable = False
            self._sink.status(self._activity)


def unreachable_status(status: ConnectionStatus) -> str | None:
    """The status line while the provider cannot be reached (``state.unreachable``,
    the rule the LEDs follow too); None when it can be."""
    state = status.state
    if not state.unreachable:
        return None
    if state is ConnectionState.KEY_REFUSED:
        every = f" every {status.retry_in_s:g} s" if status.retry_in_s is not None else ""
        return f"the provider refused the API key; retrying{every}"
    if state is ConnectionState.KEY_MISSING:
        return f"no API key: {status.detail or 'the key file is missing'}; watching the file"
    if state is ConnectionState.SETUP_FAILED:
        return status.detail or "setup failed"
    return f"offline, retrying (attempt {status.attempt})"


_default = Notifier()


def notify_ready(status: str | None = None) -> bool:
    """READY=1 to ``$NOTIFY_SOCKET``; a no-op (False) outside systemd."""
    return _default.ready(status)


def notify_status(text: str) -> bool:
    """STATUS=text to ``$NOTIFY_SOCKET``; a no-op (False) outside systemd."""
    return _default.status(text)


def notify_stopping(status: str | None = None) -> bool:
    """STOPPING=1 to ``$NOTIFY_SOCKET``; a no-op (False) outside systemd."""
    return _default.stopping(status)


def notify_watchdog() -> bool:
    """WATCHDOG=1 to ``$NOTIFY_SOCKET``; a no-op (False) outside systemd."""
    return _default.watchdog()


def watchdog_interval_s(env: Mapping[str, str] | None = None) -> float | None:
    """Half of ``WATCHDOG_USEC`` in seconds, or None when the watchdog is off for us.

    Like sd_watchdog_enabled(3): ``WATCHDOG_PID``, when set, must be our pid.
    """
    environ = os.environ if env is None else env
    raw = environ.get("WATCHDOG_USEC")
    if not raw:
        return None
    pid = environ.get("WATCHDOG_PID")
    if pid and pid != str(os.getpid()):
        return None
    try:
        usec = int(raw)
    except ValueError:
        log.warning("watchdog_usec_invalid", value=raw)
        return None
    return usec / 2_000_000 if usec > 0 else None


class Watchdog:
    """Feeds systemd's watchdog only while the loop and the audio thread both progress.

    Two counters are compared with their values at the previous check:

    - the loop's heartbeat, advanced by :meth:`heartbeat` (a task on the loop)
      every ``heartbeat_s``;
    - the audio engine's periods-processed counter, read through
      ``audio_progress`` (a plain int read: no lock, no call into the audio
      thread).

    :meth:`check` pings when both moved and withholds otherwise, logging the
    reason when it changes. :meth:`start` runs :meth:`check` every
    ``interval_s`` on a thread of its own, so a stalled loop cannot ping for
    itself, and the log says which side stalled even while the loop is stuck.
    """

    def __init__(
        self,
        *,
        audio_progress: Callable[[], int],
        interval_s: float,
        notifier: Notifier | None = None,
        heartbeat_s: float | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"watchdog interval must be positive, got {interval_s}")
        self._audio_progress = audio_progress
        self.interval_s = interval_s
        # Several beats per interval, so a healthy loop always shows movement.
        self.heartbeat_s = heartbeat_s if heartbeat_s is not None else interval_s / 4
        self._notifier = notifier or _default
        self._beats = 0
        self._seen_beats = -1
        self._seen_audio: int | None = None
        self._withheld_for: str | None = None
        self.pings = 0
        self.withheld = 0
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def from_environment(
        cls,
        *,
        audio_progress: Callable[[], int],
        env: Mapping[str, str] | None = None,
        notifier: Notifier | None = None,
    ) -> Watchdog | None:
        """A watchdog at half of ``WATCHDOG_USEC``, or None when systemd asked for none."""
        interval = watchdog_interval_s(env)
        if interval is None:
            return None
        return cls(audio_progress=audio_progress, interval_s=interval, notifier=notifier)

    # -- the loop side ----------------------------------------------------------

    def beat(self) -> None:
        """One heartbeat. Only the loop thread calls this (via :meth:`heartbeat`)."""
        self._beats += 1

    async def heartbeat(self) -> None:
        """Run as a task: proves the loop runs callbacks. Cancel it at shutdown."""
        while True:
            self.beat()
            await asyncio.sleep(self.heartbeat_s)

    # -- the checking side -------------------------------------------------------

    def check(self) -> bool:
        """Ping if both counters moved since the last check; returns whether it pinged."""
        beats, audio = self._beats, self._audio_progress()
        stalled = []
        if beats == self._seen_beats:
            stalled.append("loop")
        if audio == self._seen_audio:
            stalled.append("audio")
        self._seen_beats, self._seen_audio = beats, audio
        if stalled:
            self.withheld += 1
            reason = "+".join(stalled)
            if reason != self._withheld_for:
                self._withheld_for = reason
                log.warning(
                    "watchdog_withheld",
                    stalled=reason,
                    interval_s=self.interval_s,
                    hint="systemd restarts the service if this lasts two intervals",
                )
            return False
        if self._withheld_for is not None:
            log.info("watchdog_resumed", was_stalled=self._withheld_for)
            self._withheld_for = None
        self.pings += 1
        self._notifier.watchdog()
        return True

    def start(self) -> None:
        """Start the checking thread (idempotent)."""
        if self._thread is not None:
            return
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="huxleyd-watchdog", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.wait(self.interval_s):
            self.check()

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop the checking thread. Idempotent."""
        self._stopping.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout_s)
