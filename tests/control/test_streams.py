"""A control connection's lines, and the streamed answers (``levels``, ``watch``).

Real asyncio stream readers fed as the socket would feed them; the server's own
use is in test_server.py and test_socket_watch.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from huxleyd.control.protocol import Command, ErrorReply, LevelsArgs, Reply, Request
from huxleyd.control.streams import GONE, TOO_LONG, read_line, stream


@dataclass
class Sample:
    n: int

    def to_dict(self) -> Mapping[str, Any]:
        return {"n": self.n}


async def test_a_line_over_the_limit_is_discarded_and_the_next_one_read() -> None:
    reader = asyncio.StreamReader(limit=16)
    reader.feed_data(b"x" * 40 + b"\n" + b'{"id": 1}\n')
    reader.feed_eof()
    assert await read_line(reader) is TOO_LONG
    assert await read_line(reader) == b'{"id": 1}\n'
    assert await read_line(reader) is None


async def test_a_quiet_stream_ends_at_once_when_the_client_leaves() -> None:
    quiet = asyncio.Event()
    sent: list[Reply] = []

    async def nothing() -> AsyncIterator[Sample]:
        await quiet.wait()
        yield Sample(0)

    async def send(reply: Reply) -> None:
        sent.append(reply)

    reader = asyncio.StreamReader()
    reader.feed_eof()
    request = Request(7, Command.WATCH, LevelsArgs())
    after = await stream(
        request,
        reader,
        nothing(),
        send=send,
        failure=lambda e: ErrorReply(7, str(e)),
        timeout_s=None,
    )
    assert after is GONE
    assert sent == []


async def test_a_line_from_the_client_ends_the_stream_with_done_and_is_handed_back() -> None:
    sent: list[bytes] = []
    reader = asyncio.StreamReader()

    async def counting() -> AsyncIterator[Sample]:
        for n in range(2):
            yield Sample(n)
        reader.feed_data(b'{"id": 8, "cmd": "status"}\n')
        await asyncio.Event().wait()
        yield Sample(99)

    async def send(reply: Reply) -> None:
        sent.append(reply.encode())

    request = Request(7, Command.LEVELS, LevelsArgs())
    after = await stream(
        request,
        reader,
        counting(),
        send=send,
        failure=lambda e: ErrorReply(7, str(e)),
        timeout_s=5.0,
    )
    assert after == b'{"id": 8, "cmd": "status"}\n'
    assert [json.loads(line) for line in sent][:2] == [
        {"id": 7, "ok": True, "result": {"n": 0}},
        {"id": 7, "ok": True, "result": {"n": 1}},
    ]
    assert len(sent) == 3 and json.loads(sent[2]).get("done") is True
