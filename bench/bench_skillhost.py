"""Skill host: what running a third-party skill in a process of its own costs.

The probe skill (``tests/skillhost/probe_skill.py``) runs twice in one bench
run: in the daemon's process (a plain :class:`SkillHost` of the skill) and
through its skill host process (:class:`RemoteSkill`, the skills environment
of ``tests/skillhost/envs.py``, as the skill user when root). Rows:

- a tool call's round trip (``echo``): median and max of
  :data:`CALLS` calls, beside the in-process call; budget ≤ 5 ms added;
- the host process's memory (VmRSS of the probe's host, SDK and
  interpreter included);
- an AudioStream through the host at a Pi 4's CPU share: the host process
  in a CPU cgroup of 25 % of one core (``bench_pispeed.cpu_group``), a busy
  Python thread in the daemon, and a reader that does what the media runner
  does: the speaker plays from the first chunk on, the reader keeps at most
  the runner's lookahead (200 ms) unplayed. A chunk that arrives after all
  before it has played is a silence. This is the link's share of the speaker
  path; the card's own path at a Pi's share is ``bench_pispeed``'s. Without
  a cgroup (not root) the row says why.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import cast

from bench import Row
from huxley_sdk import AudioStream, Skill
from huxley_sdk.testing import make_test_context
from huxleyd.skillhost.host import SkillHost
from huxleyd.turns.media import LOOKAHEAD_MS
from tests.fakes.cpu_share import NoCgroup, cpu_group
from tests.skillhost.envs import ensure_skill_user, probe_wheel, skills_env_with
from tests.skillhost.probe_skill import ProbeSkill
from tests.skillhost.rig import probe_rig

AREA = "skill host"
CALLS = 500
STREAM_S = 10.0
CHUNK_MS = 20
PI4_SHARE = 0.25


async def _round_trips(host: SkillHost) -> list[float]:
    args = json.dumps({"text": "hello"})
    times: list[float] = []
    for i in range(CALLS):
        start = time.perf_counter()
        outcome = await host.call(f"c{i}", "echo", args)
        times.append((time.perf_counter() - start) * 1000)
        assert outcome.ok, outcome
    return times


async def _in_process() -> list[float]:
    skill = ProbeSkill()
    host = SkillHost([cast(Skill, skill)])
    context = make_test_context(name="probe")
    await host.setup_all(lambda name, config: context, {})
    return await _round_trips(host)


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _stream_late_chunks(host: SkillHost) -> tuple[int, int]:
    """(silences, chunks read): the stream read as the media runner does, busy thread here."""
    chunks = int(STREAM_S * 1000 / CHUNK_MS)
    outcome = await host.call("s", "stream", json.dumps({"chunks": chunks, "record": False}))
    stream = outcome.side_effect
    assert isinstance(stream, AudioStream)
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            sum(range(2000))

    spinner = threading.Thread(target=busy, daemon=True)
    spinner.start()
    late = read = 0
    try:
        # The media runner's model: the speaker plays from the first chunk on; the
        # runner keeps at most LOOKAHEAD_MS unplayed. A chunk arriving after the
        # audio before it has all played is a silence (the speaker then resumes).
        first = 0.0
        delivered_ms = 0.0
        async for _chunk in stream.factory():
            now = time.perf_counter()
            if read == 0:
                first = now
            played_ms = (now - first) * 1000
            if played_ms > delivered_ms:
                late += 1
                first += (played_ms - delivered_ms) / 1000
            read += 1
            delivered_ms += CHUNK_MS
            ahead_ms = delivered_ms - (time.perf_counter() - first) * 1000
            if ahead_ms > LOOKAHEAD_MS:
                await asyncio.sleep((ahead_ms - LOOKAHEAD_MS) / 1000)
    finally:
        stop.set()
        spinner.join()
    return late, read


async def _measure(tmp: Path) -> list[Row]:
    local = await _in_process()
    env = skills_env_with([probe_wheel(tmp / "wheels")])
    rows: list[Row] = []
    async with probe_rig(env, tmp) as rig:
        remote = await _round_trips(rig.host)
        pid = rig.skill.pid
        assert pid is not None
        rss = _rss_mb(pid)
        rows += [
            Row(AREA, "tool call round trip, median", statistics.median(remote), "ms",
                statistics.median(local), "in the daemon's process", "≤ 5 ms added"),
            Row(AREA, f"tool call round trip, max of {CALLS}", max(remote), "ms",
                max(local), "in the daemon's process", "≤ 5 ms added"),
            Row(AREA, "host process memory (VmRSS, probe skill)", rss, "MB"),
        ]  # fmt: skip
        try:
            with cpu_group(PI4_SHARE, 10_000) as procs:
                procs.write_text(str(pid))
                try:
                    late, read = await _stream_late_chunks(rig.host)
                finally:  # out again, or the group cannot be removed
                    (procs.parent.parent / "cgroup.procs").write_text(str(pid))
            what = (
                f"AudioStream through the host ({read} chunks of 20 ms), host at 25 % of a core "
                "(a Pi 4), busy Python thread in the daemon: speaker silences"
            )
            rows.append(Row(AREA, what, late, "", budget="0"))
        except NoCgroup as exc:
            rows.append(Row(AREA, f"AudioStream at a Pi 4's share: NOT MEASURED: {exc}",
                            float("nan"), ""))  # fmt: skip
    return rows


def run() -> list[Row]:
    ensure_skill_user()
    with tempfile.TemporaryDirectory() as tmp:
        return asyncio.run(_measure(Path(tmp)))
