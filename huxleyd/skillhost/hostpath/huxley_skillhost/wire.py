"""This side of the host's socket: the link, and the context members that are requests over it.

:class:`Link` sends messages to the daemon and awaits its replies; storage,
secrets and the logger a skill is given are each a thin client of it, so
what a skill keeps lives in the daemon's database, never in this process.
The standard library and :mod:`.link` only (see :mod:`.child`).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from . import link

REQUEST_DEADLINE_S = 10.0
"""How long a storage or secrets request waits for the daemon's Reply."""


class Link:
    """This side of the socket: send messages, await the daemon's replies."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._seq = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}

    def send(self, message: link.Message) -> None:
        if not self._writer.is_closing():
            self._writer.write(link.encode(message))

    async def drain(self) -> None:
        await self._writer.drain()

    def ask(self, op: str, **args: Any) -> tuple[int, asyncio.Future[Any]]:
        """Send a Request now (in order with what follows); its seq and future answer."""
        self._seq += 1
        seq = self._seq
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[seq] = future
        self.send(link.Request(seq, op, args))
        return seq, future

    async def request(
        self, op: str, deadline_s: float | None = REQUEST_DEADLINE_S, **args: Any
    ) -> Any:
        """Ask the daemon; its Reply's value, or the error it names raised as RuntimeError."""
        seq, future = self.ask(op, **args)
        try:
            return await asyncio.wait_for(future, deadline_s)
        finally:
            self._pending.pop(seq, None)

    def replied(self, reply: link.Reply) -> None:
        future = self._pending.pop(reply.seq, None)
        if future is None or future.done():
            return
        if reply.error is not None:
            future.set_exception(RuntimeError(reply.error))
        else:
            future.set_result(reply.value)


class LinkStorage:
    """``ctx.storage``: the daemon keeps the database; every call is a Request."""

    def __init__(self, wire: Link, prefix: str = "storage") -> None:
        self._wire = wire
        self._op = prefix

    async def get_setting(self, key: str, default: str | None = None) -> str | None:
        value = await self._wire.request(f"{self._op}.get", key=key)
        return default if value is None else str(value)

    async def set_setting(self, key: str, value: str) -> None:
        await self._wire.request(f"{self._op}.set", key=key, value=value)

    async def list_settings(self, prefix: str = "") -> list[tuple[str, str]]:
        rows = await self._wire.request(f"{self._op}.list", prefix=prefix)
        return [(str(k), str(v)) for k, v in rows]

    async def delete_setting(self, key: str) -> None:
        await self._wire.request(f"{self._op}.delete", key=key)


class LinkSecrets:
    """``ctx.secrets``: the daemon reads the skill's secrets file; it is not readable here."""

    def __init__(self, wire: Link) -> None:
        self._wire = wire

    async def get(self, key: str) -> str | None:
        value = await self._wire.request("secrets.get", key=key)
        return None if value is None else str(value)

    async def set(self, key: str, value: str) -> None:
        await self._wire.request("secrets.set", key=key, value=value)

    async def delete(self, key: str) -> None:
        await self._wire.request("secrets.delete", key=key)

    async def keys(self) -> list[str]:
        return [str(k) for k in await self._wire.request("secrets.keys")]


class LinkLogger:
    """``ctx.logger``: each event is a Log message; the daemon writes the journal."""

    def __init__(self, wire: Link) -> None:
        self._wire = wire

    def _log(self, level: str, event: str, kwargs: dict[str, Any]) -> None:
        fields = {k: str(v) for k, v in kwargs.items()}
        self._wire.send(link.Log(level, str(event), fields))

    def debug(self, event: str, /, **kwargs: Any) -> None:
        self._log("debug", event, kwargs)

    def info(self, event: str, /, **kwargs: Any) -> None:
        self._log("info", event, kwargs)

    def warning(self, event: str, /, **kwargs: Any) -> None:
        self._log("warning", event, kwargs)

    def error(self, event: str, /, **kwargs: Any) -> None:
        self._log("error", event, kwargs)

    def exception(self, event: str, /, **kwargs: Any) -> None:
        self._log("error", event, {**kwargs, "exception": repr(sys.exc_info()[1])})

    async def adebug(self, event: str, **kwargs: Any) -> None:
        self.debug(event, **kwargs)

    async def ainfo(self, event: str, **kwargs: Any) -> None:
        self.info(event, **kwargs)

    async def awarning(self, event: str, **kwargs: Any) -> None:
        self.warning(event, **kwargs)

    async def aerror(self, event: str, **kwargs: Any) -> None:
        self.error(event, **kwargs)

    async def aexception(self, event: str, **kwargs: Any) -> None:
        self.exception(event, **kwargs)
