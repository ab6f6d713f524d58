"""What the skill host asks of the daemon crosses the link as Requests.

The host keeps nothing of its own: ``ctx.storage`` and ``ctx.secrets`` are
messages to the daemon, answered by a Reply with the same seq; an error the
daemon names is raised in the skill, and a daemon that does not answer in
time is a timeout, not a hang. A skill that is not in the environment is one
line. Real frames on a real socket pair; the daemon side is this test.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pytest

from huxleyd.skillhost.hostpath.huxley_skillhost import child, link
from huxleyd.skillhost.hostpath.huxley_skillhost.wire import Link, LinkSecrets, LinkStorage


@dataclass
class Pair:
    wire: Link
    host_reader: asyncio.StreamReader
    daemon_reader: asyncio.StreamReader
    daemon_writer: asyncio.StreamWriter

    async def next_request(self) -> link.Request:
        message = await link.read(self.daemon_reader, link.TO_DAEMON)
        assert isinstance(message, link.Request)
        return message

    async def answer(self, reply: link.Reply) -> None:
        self.daemon_writer.write(link.encode(reply))
        await self.daemon_writer.drain()
        message = await link.read(self.host_reader, link.TO_HOST)
        assert isinstance(message, link.Reply)
        self.wire.replied(message)


@asynccontextmanager
async def linked() -> AsyncIterator[Pair]:
    host_sock, daemon_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    host_reader, host_writer = await asyncio.open_unix_connection(sock=host_sock)
    daemon_reader, daemon_writer = await asyncio.open_unix_connection(sock=daemon_sock)
    try:
        yield Pair(Link(host_writer), host_reader, daemon_reader, daemon_writer)
    finally:
        host_writer.close()
        daemon_writer.close()


async def test_a_storage_read_is_a_request_answered_by_its_reply() -> None:
    async with linked() as pair:
        storage = LinkStorage(pair.wire)
        asked = asyncio.ensure_future(storage.get_setting("city", default="Lisbon"))
        request = await pair.next_request()
        assert (request.op, request.args) == ("storage.get", {"key": "city"})
        await pair.answer(link.Reply(request.seq, value="Porto"))
        assert await asked == "Porto"

        asked = asyncio.ensure_future(storage.get_setting("unset", default="Lisbon"))
        request = await pair.next_request()
        await pair.answer(link.Reply(request.seq, value=None))
        assert await asked == "Lisbon"


async def test_each_request_has_its_own_seq_and_replies_may_come_out_of_order() -> None:
    async with linked() as pair:
        secrets = LinkSecrets(pair.wire)
        first = asyncio.ensure_future(secrets.get("a"))
        second = asyncio.ensure_future(secrets.get("b"))
        one, two = await pair.next_request(), await pair.next_request()
        assert one.seq != two.seq
        assert (one.op, two.op) == ("secrets.get", "secrets.get")
        await pair.answer(link.Reply(two.seq, value="B"))
        await pair.answer(link.Reply(one.seq, value="A"))
        assert (await first, await second) == ("A", "B")


async def test_an_error_the_daemon_names_is_raised_in_the_skill() -> None:
    async with linked() as pair:
        asked = asyncio.ensure_future(LinkStorage(pair.wire).set_setting("k", "v"))
        request = await pair.next_request()
        assert request.args == {"key": "k", "value": "v"}
        await pair.answer(link.Reply(request.seq, error="storage is read-only"))
        with pytest.raises(RuntimeError, match=r"^storage is read-only$"):
            await asked


async def test_a_daemon_that_does_not_answer_is_a_timeout() -> None:
    async with linked() as pair:
        with pytest.raises(TimeoutError):
            await pair.wire.request("storage.get", deadline_s=0.01, key="k")
        request = await pair.next_request()
        await pair.answer(link.Reply(request.seq, value="late"))  # dropped, no error


def test_a_skill_not_in_the_environment_is_one_line() -> None:
    with pytest.raises(ValueError, match=r"^no skill 'no_such_skill' in the skills environment$"):
        child.import_skill("no_such_skill", "nobody-ships-it")
