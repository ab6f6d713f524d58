"""The link's wire: every message survives a frame; the wrong side's and oversized frames are refused."""

from __future__ import annotations

import asyncio
import socket

import pytest

from huxleyd.skillhost.hostpath.huxley_skillhost import link

EXAMPLES: list[link.Message] = [
    link.Load(1, "probe", "huxley-skill-probe"),
    link.Setup(2, {"a": [1, 2]}, "es", "Europe/Madrid", "/data"),
    link.Reconfigure(3, {"b": True}, "en", "UTC"),
    link.Call(4, "echo", {"text": "héllo"}),
    link.Cancel(4),
    link.Invoke(5, 7, ["natural"], b"\x01\x02"),
    link.StreamOpen(9, 8),
    link.Credit(9, 1),
    link.StreamClose(9),
    link.Reply(6, None, [["k", "v"]]),
    link.Ping(7),
    link.Teardown(8),
    link.Done(4, None, {"output": "{}"}, b"\x00" * 960),
    link.Chunk(9, b"\x7f" * 960),
    link.StreamEnd(9, "RuntimeError: x"),
    link.Request(1, "storage.get", {"key": "k"}),
    link.Log("info", "probe_ready", {"a": "1"}),
    link.Pong(7, "context"),
]


async def _through(frames: bytes, allowed: tuple[type, ...]) -> list[link.Message]:
    reader = asyncio.StreamReader()
    reader.feed_data(frames)
    reader.feed_eof()
    out = []
    while True:
        try:
            out.append(await link.read(reader, allowed))
        except link.LinkError:
            return out


async def test_every_message_survives_a_frame() -> None:
    frames = b"".join(link.encode(m) for m in EXAMPLES)
    assert await _through(frames, (*link.TO_HOST, *link.TO_DAEMON)) == EXAMPLES


async def test_a_host_may_not_send_what_only_the_daemon_sends() -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(link.encode(link.Call(1, "echo", {})))
    with pytest.raises(link.LinkError, match="Call may not be sent"):
        await link.read(reader, link.TO_DAEMON)


async def test_an_oversized_frame_is_refused_before_it_is_read() -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(link.HEADER.pack(10, link.MAX_FRAME_BYTES))  # no body follows
    with pytest.raises(link.LinkError, match="a frame of"):
        await link.read(reader, link.TO_DAEMON)


def test_the_gate_admits_the_limit_and_no_more_in_one_second() -> None:
    gate = link.RateGate(limit_per_s=3)
    assert [gate.admit(10.0 + i * 0.1) for i in range(4)] == [True, True, True, False]
    assert gate.admit(11.5)  # a new second


async def test_a_peer_that_resets_the_socket_closed_the_link() -> None:
    ours, theirs = socket.socketpair()
    ours.sendall(b"unread")  # closing with bytes unread resets the connection
    theirs.close()
    reader, writer = await asyncio.open_unix_connection(sock=ours)
    with pytest.raises(link.LinkError, match="the link closed"):
        await link.read(reader, link.TO_DAEMON)
    writer.close()
