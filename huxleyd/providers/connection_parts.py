"""What a :class:`~huxleyd.providers.transport.ProviderConnection` is built from.

Layer: value types (no I/O). Three named parts instead of a long list of
keywords: :class:`Endpoint` (where it connects, with which key),
:class:`SocketLimits` (the websocket's timeouts and bounds) and
:class:`Timing` (how it waits: the backoff, the key's retry and poll
periods, the clock and the sleeps, all inputs so a test drives them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field

from huxleyd.clock import Clock, MonotonicClock
from huxleyd.providers.retry import KEY_POLL_S, KEY_RETRY_S, backoff_delays

CLOSE_TIMEOUT_S = 1.5
"""Wait this long for the peer's close frame, then drop the socket (a peer that
never answers the close must not hold a shutdown or a renewal)."""

STALL_TIMEOUT_S = 8.0
"""While a reply is due, this long without one complete frame is a stalled
socket (see :attr:`SocketLimits.stall_timeout_s`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint:
    """Where the session connects, and the key it sends."""

    url: str
    model: str
    api_key: str | None = None
    key_source: Callable[[], str | None] | None = None
    """Called before every try when given: it re-reads the key file, so a fixed
    key is picked up without a restart (raises ConfigError when the file is
    gone or empty)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SocketLimits:
    """The websocket's timeouts and bounds."""

    open_timeout_s: float = 10.0
    """The handshake's budget (``[provider] connect_timeout_s``)."""
    ping_interval_s: float = 20.0
    ping_timeout_s: float = 30.0
    max_message_bytes: int = 16 * 1024 * 1024
    max_queued_messages: int = 1000
    """Frames waiting to be sent (about 20 s of mic audio); the newest is dropped past it."""
    close_timeout_s: float = CLOSE_TIMEOUT_S
    stall_timeout_s: float = STALL_TIMEOUT_S
    """While a reply is due, this long without a complete frame is a stalled socket."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    """How the connection waits, every part an input."""

    backoff: Callable[[], Iterator[float]] = backoff_delays
    """A fresh schedule of delays between failed tries."""
    key_retry_s: float = KEY_RETRY_S
    """A refused key is tried again after this long (sooner when the file changes)."""
    key_poll_s: float = KEY_POLL_S
    """How often the key file is looked at while waiting for a key."""
    clock: Clock = field(default_factory=MonotonicClock)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    stall_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    """The stall watch's sleep (a test keeps it real while ``sleep`` is instant)."""
