"""``python -m huxleyd.sim`` on its own: it says where it listens (the URL
for the dialect asked), serves the protocol there, stops cleanly on SIGTERM,
and refuses a broken scenario in one line."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from huxleyd.sim import __main__ as sim_command
from huxleyd.sim.server import PATHS
from tests.fakes.root_logging import root_logging_kept

ROOT = Path(__file__).resolve().parents[2]


def test_the_dialects_offered_are_the_ones_served() -> None:
    dialect = next(a for a in sim_command._parser()._actions if a.dest == "dialect")
    assert tuple(dialect.choices or ()) == tuple(PATHS)


def test_a_broken_scenario_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "broken.toml"
    scenario.write_text("[[turns]]\nhear = 3\n")
    with root_logging_kept():  # main installs its own log handler
        assert sim_command.main(["--scenario", str(scenario), "--log-level", "ERROR"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"huxleyd.sim: {scenario}: ") and "\n" not in err


async def test_it_serves_where_it_says_and_stops_on_sigterm() -> None:
    dialect = "xai"  # not the default: --dialect picks the URL it prints
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "huxleyd.sim", "--port", "0", "--speed", "0", "--synth", "tone"),
        *("--dialect", dialect, "--log-level", "WARNING"),
        cwd=ROOT,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    try:
        async with asyncio.timeout(30):
            line = (await process.stderr.readline()).decode()
        found = re.search(r"listening on (ws://127\.0\.0\.1:\d+(/\S*))", line)
        assert found is not None, line
        assert "not an AI" in line
        url, path = found.group(1), found.group(2)
        assert path == PATHS["xai"]
        async with connect(url) as ws:
            first = json.loads(await ws.recv())
        assert first["type"] == "session.created"  # xAI's first event, as xAI sends it
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
