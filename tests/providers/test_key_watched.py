"""The key file is watched, not assumed (issue 41, point 3).

Before: a deleted key file gave ``key_refused`` ("the provider refused the
API key") though nothing was sent, and a key put back was not tried for
302 s, SIGHUP included. Now a missing key is ``key_missing``, and a key that
comes back, or a refused key that changes, is used within one poll of the
file (injected here: 50 ms) without a signal. Real sockets: the simulator on
loopback checks the key at the handshake.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from pathlib import Path

import pytest

from huxleyd.app.build import key_source
from huxleyd.config.preflight import KeySource
from huxleyd.providers.base import ConnectionState
from huxleyd.providers.events import SessionReady
from huxleyd.sim.server import SimServer
from tests.fakes.provider_callbacks import Recorder

POLL_S = 0.05


async def test_a_missing_key_is_key_missing_and_used_within_a_poll_of_coming_back(
    tmp_path: Path,
) -> None:
    key = tmp_path / "openai.key"
    rec = Recorder()
    async with SimServer(None, speed=math.inf, synth="tone", api_key="sk-right") as server:
        conn = rec.connection(
            server.url,
            api_key=None,
            key_source=key_source(KeySource(key, "provider.key_file", "huxleyd.toml")),
            key_poll_s=POLL_S,
        )
        task = asyncio.create_task(conn.run())
        await rec.wait_until(lambda: ConnectionState.KEY_MISSING in rec.state_names(), 10)
        missing = rec.states[rec.state_names().index(ConnectionState.KEY_MISSING)]
        assert "cannot read the API key file" in (missing.detail or "")
        assert ConnectionState.KEY_REFUSED not in rec.state_names()
        assert server.handshakes == [], "nothing was sent without a key"
        key.write_text("sk-right\n")
        key.chmod(0o600)
        put_back = time.monotonic()
        await rec.wait_for(SessionReady)
        assert time.monotonic() - put_back < 2.0
        await conn.close()
        await task


async def test_a_refused_key_that_changes_is_tried_within_a_poll(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    key = tmp_path / "openai.key"
    key.write_text("sk-wrong-secret\n")
    key.chmod(0o600)
    rec = Recorder()
    async with SimServer(None, speed=math.inf, synth="tone", api_key="sk-right") as server:
        conn = rec.connection(
            server.url,
            api_key=None,
            key_source=key_source(KeySource(key, "provider.key_file", "huxleyd.toml")),
            key_poll_s=POLL_S,
            key_retry_s=300.0,
        )
        with caplog.at_level(logging.DEBUG):
            task = asyncio.create_task(conn.run())
            await rec.wait_until(lambda: ConnectionState.KEY_REFUSED in rec.state_names(), 10)
            await asyncio.sleep(5 * POLL_S)  # unchanged: no new try, no log line per poll
            assert [h.status for h in server.handshakes] == [401]
            key.write_text("sk-right\n")
            changed = time.monotonic()
            await rec.wait_for(SessionReady)
            assert time.monotonic() - changed < 2.0, "not 300 s: the file is watched"
            await conn.close()
            await task
    assert [h.status for h in server.handshakes][-1] == 101
    assert "sk-wrong-secret" not in caplog.text and "sk-right" not in caplog.text
    assert caplog.text.count("provider_key_changed") == 1
