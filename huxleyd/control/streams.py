"""Reading a control connection's request lines, and answering with a stream.

Adapter layer: asyncio streams around :mod:`~huxleyd.control.protocol`, for
:class:`~huxleyd.control.server.ControlServer`. :func:`read_line` reads one
request line (or says the line was too long, or the client left);
:func:`stream` answers ``levels`` and ``watch``: a result line per item, then
``done``, listening to the client meanwhile. ::

    line = await read_line(reader)          # bytes, None at EOF, or TOO_LONG
    after = await stream(request, reader, samples, send=send, failure=failure,
                         timeout_s=None)    # the line that ended it, or GONE
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Protocol

from huxleyd.control.protocol import DoneReply, ErrorReply, LevelsArgs, Reply, Request, ResultReply

TOO_LONG = object()
"""A line longer than the reader's limit, discarded up to its newline."""
GONE = object()
"""The client closed its end while a stream ran."""


class Encodable(Protocol):
    """An item of a streamed answer (a levels sample, a watch event)."""

    def to_dict(self) -> Mapping[str, Any]: ...


Send = Callable[[Reply], Awaitable[None]]
"""Writes one reply to the client (raises when the client is gone)."""
Failure = Callable[[Exception], ErrorReply]
"""The error reply for what the stream's source raised (a TimeoutError included)."""


async def stream(
    request: Request,
    reader: asyncio.StreamReader,
    samples: AsyncIterator[Encodable],
    *,
    send: Send,
    failure: Failure,
    timeout_s: float | None,
) -> bytes | object | None:
    """Send each item of ``samples`` as a result line, then ``done``.

    ``timeout_s``: how long each item may take; None when the stream may say
    nothing for a long time (``watch``). The client is listened to meanwhile:
    when it leaves, the stream ends at once (a ``watch`` nobody reads must not
    count as a client, nor hold a place) and :data:`GONE` is returned; a line
    it sends ends the stream too, and is returned to be answered.
    """
    listen = asyncio.ensure_future(read_line(reader))
    try:
        final = await _pump(request, samples, listen, send, failure, timeout_s)
    finally:
        aclose = getattr(samples, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()
        if not listen.done():
            await _cancelled(listen)
    after = None if listen.cancelled() else listen.result()
    if after is None and not listen.cancelled():
        return GONE  # EOF: nobody is there to read the final line
    await send(final)
    return after


async def _pump(
    request: Request,
    samples: AsyncIterator[Encodable],
    listen: asyncio.Future[Any],
    send: Send,
    failure: Failure,
    timeout_s: float | None,
) -> Reply:
    """Send the items until the count, the end, a failure or the client's next
    line; the reply that ends the stream."""
    assert isinstance(request.args, LevelsArgs)
    count = request.args.count
    sent = 0
    while count is None or sent < count:
        item = asyncio.ensure_future(_next(samples))
        done, _ = await asyncio.wait(
            {item, listen}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        if item not in done:
            await _cancelled(item)
            if listen in done:
                break
            return failure(TimeoutError())
        try:
            sample = item.result()
        except StopAsyncIteration:
            break
        except Exception as exc:
            return failure(exc)
        # A send error (client gone) ends the stream, not the server.
        await send(ResultReply(request.id, sample.to_dict()))
        sent += 1
    return DoneReply(request.id)


async def _next(samples: AsyncIterator[Encodable]) -> Encodable:
    return await anext(samples)


async def _cancelled(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and wait for it; whatever it raised is of no interest now."""
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise  # we are being cancelled ourselves: pass it on
    except Exception:
        pass


async def read_line(reader: asyncio.StreamReader) -> bytes | object | None:
    """One line (newline included); None at EOF; :data:`TOO_LONG` after
    discarding a line longer than the reader's limit up to its newline."""
    too_long = False
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.LimitOverrunError as exc:
            try:
                await reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                return None
            too_long = True
            continue
        except asyncio.IncompleteReadError:
            return None  # EOF; an unterminated last line is not a request
        return TOO_LONG if too_long else line
