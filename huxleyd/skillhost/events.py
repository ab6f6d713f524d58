"""Huxley's client events, on a device that is its own client.

In Huxley a *client* (the browser page, the ESP32 walkie-talkie) holds a
WebSocket to the server: it sends ``client_event`` messages that skills
subscribe to (``ctx.subscribe_client_event(key, handler)``) and receives
the ``server_event`` messages skills emit (``ctx.emit_server_event``).

huxleyd has no such remote client: the speaker, the button and the LEDs
are the daemon's own. What stands in for the client here is the admin's
side of the device, ``huxleyctl``:

- inbound: ``huxleyctl event KEY [JSON]`` delivers ``client_event`` ``KEY``
  with the JSON object as ``data`` to every skill that subscribed to it
  (concurrently, each handler's exception logged and isolated, as in
  Huxley). The push-to-talk button is not a client: its presses are turns.
- outbound: ``emit_server_event`` writes one journal line
  (``server_event``, ``HUXLEY_SERVER_EVENT=KEY``) that ``huxleyctl logs
  HUXLEY_SERVER_EVENT=KEY`` follows. With no client to push to, that is the
  whole delivery, as Huxley's is a no-op when no client is connected.

Subscriptions live as long as the skill: they are dropped at teardown.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from huxley_sdk.types import EmitServerEvent, SubscribeClientEvent
from huxleyd.logs import get_logger

log = get_logger("huxleyd.skills")

ClientEventHandler = Callable[[dict[str, Any]], Awaitable[None]]


class ClientEvents:
    """Subscriptions of skills to client events, and their server events."""

    def __init__(self) -> None:
        self._subs: dict[str, list[tuple[str, ClientEventHandler]]] = {}
        self.emitted: list[tuple[str, str, dict[str, Any]]] = []
        """``(skill, event, data)`` of the last server events (for ``status`` and tests)."""

    def subscriber(self, skill: str) -> SubscribeClientEvent:
        """``ctx.subscribe_client_event`` of ``skill``."""

        def subscribe(key: str, handler: ClientEventHandler, /) -> None:
            self._subs.setdefault(key, []).append((skill, handler))
            log.debug("client_event_subscribed", skill=skill, event_key=key)

        return subscribe

    def emitter(self, skill: str) -> EmitServerEvent:
        """``ctx.emit_server_event`` of ``skill``."""

        async def emit(event: str, data: dict[str, Any] | None = None, /) -> None:
            payload = dict(data or {})
            self.emitted = [*self.emitted[-31:], (skill, event, payload)]
            log.info(
                "server_event",
                skill=skill,
                server_event=event,
                data=json.dumps(payload, default=str, ensure_ascii=False),
            )

        return emit

    def keys(self) -> dict[str, list[str]]:
        """Event key → the skills subscribed to it."""
        return {key: [skill for skill, _ in subs] for key, subs in self._subs.items() if subs}

    async def deliver(self, key: str, data: Any = None) -> list[str]:
        """Run every handler of ``key`` with ``data`` (a dict; anything else → ``{}``).

        Returns the skills whose handlers ran without raising.
        """
        subs = list(self._subs.get(key, []))
        payload = data if isinstance(data, dict) else {}
        results = await asyncio.gather(
            *(handler(dict(payload)) for _, handler in subs), return_exceptions=True
        )
        ok: list[str] = []
        for (skill, _), result in zip(subs, results, strict=True):
            if isinstance(result, BaseException):
                log.error(
                    "client_event_handler_failed",
                    skill=skill,
                    event_key=key,
                    error=f"{type(result).__name__}: {result}",
                )
            else:
                ok.append(skill)
        log.info("client_event", event_key=key, delivered=",".join(ok) or "nobody")
        return ok

    def drop(self, skill: str) -> None:
        """Forget ``skill``'s subscriptions (at its teardown)."""
        for key in list(self._subs):
            self._subs[key] = [(s, h) for s, h in self._subs[key] if s != skill]
