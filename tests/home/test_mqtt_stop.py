"""The MQTT link ends when it is cancelled, even when the cancel comes out as
an MQTT error (no broker needed: the connection is the part replaced)."""

from __future__ import annotations

import asyncio

import aiomqtt

from huxleyd.degraded import Degraded
from huxleyd.home.discovery import Topics
from huxleyd.home.mqtt import MqttLink
from huxleyd.home.settings import MqttSettings


async def test_a_cancel_raised_as_a_failed_disconnect_still_ends_the_link() -> None:
    """aiomqtt's ``Client.__aexit__`` waits for the disconnect and raises its
    failure: a daemon stopping while the broker drops gets an MqttError where
    its CancelledError was. Taken for a broken broker, the link would
    reconnect and the stop wait for ever."""
    link = MqttLink(
        MqttSettings(url="mqtt://127.0.0.1:9", room="kitchen"),
        speaker=None,  # type: ignore[arg-type]  # never reached: no connection is made
        topics=Topics(prefix="huxley", device="d1", room="kitchen"),
        degraded=Degraded(),
        version="test",
        delays=lambda: iter([0.0] * 1000),
    )
    tries = 0

    async def connect_and_serve() -> None:
        nonlocal tries
        tries += 1
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            if tries == 1:
                raise aiomqtt.MqttError("Disconnected during message iteration") from None
            raise

    link._connect_and_serve = connect_and_serve  # type: ignore[method-assign]
    task = asyncio.create_task(link.run())
    await asyncio.sleep(0.05)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=5.0)
    try:
        assert task in done, f"the link reconnected after its cancel ({link.state})"
        assert task.cancelled() and tries == 1
    finally:
        while not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=0.1)
