"""No renewal cuts what the user is hearing.

The real daemon (WAV sound card on a lockstep clock, the simulator on
loopback) per provider. A reply arrives faster than it plays, so when the
provider's last frame has come the listener may still have most of it
ahead. Two endings in that window:

- the server closes right after the reply's last frame (a session cap, a
  restart): what arrived still plays out, and the turn is ``answered``;
- the server says it will end the connection in the middle of the reply
  (Gemini's ``goAway``; for OpenAI and xAI, the daemon's own renewal falling
  due): the renewal waits until the reply has been heard.

What the listener heard is read from the speaker: the reply's tone, window
by window, against the audio the provider sent.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from huxleyd.sim.scenario import ResponseSpec, Scenario, TurnSpec
from huxleyd.sim.server import SimDialect
from huxleyd.sim.speech import tone
from tests.e2e.harness import RATE, SPEED, Rig, scenario_skill_installed, tone_windows, until

KINDS: list[SimDialect] = ["openai", "xai", "gemini"]
REPLY_HZ = 440.0
REPLY_MS = 1200
REPLY_SAMPLES = RATE * REPLY_MS // 1000
WINDOW = RATE // 50
EDGE_MS = 60
"""The tone's first and last windows may hold its fade and a period boundary."""


@pytest.fixture(autouse=True)
def scenario_skill(tmp_path: Path) -> Iterator[None]:
    with scenario_skill_installed(tmp_path):
        yield


def reply(**more: Any) -> ResponseSpec:
    return ResponseSpec(say="the whole answer", tone_hz=REPLY_HZ, duration_ms=REPLY_MS, **more)


def heard_ms(rig: Rig) -> int:
    """How much of the reply's tone reached the speaker (20 ms windows)."""
    return len(tone_windows(rig.speaker(), REPLY_HZ, window=WINDOW)) * 1000 // 50


def samples_heard(rig: Rig) -> int:
    """How many of the reply's samples reached the speaker, in order and exact
    (the speaker plays at 0 dB: a sample out is the sample the provider sent)."""
    sent = np.frombuffer(tone(REPLY_HZ, REPLY_MS), dtype="<i2").astype(np.float64)
    out = rig.speaker()
    starts = np.flatnonzero(out == sent[1]) - 1  # sample 0 of a tone is 0
    for start in starts[starts >= 0]:
        window = out[start : start + len(sent)]
        if len(window) > 8 and np.array_equal(window[:8], sent[:8]):
            same = window == sent[: len(window)]
            return int(np.argmin(same)) if not same.all() else len(window)
    return 0


async def answered(rig: Rig) -> str:
    """Wait for the first turn to end; its outcome."""
    await until(lambda: rig.coordinator.last_turn is not None, "the turn ended")
    last = rig.coordinator.last_turn
    assert last is not None and last.outcome is not None
    return last.outcome.value


async def next_turn_works(rig: Rig) -> None:
    await until(lambda: rig.rt.connection_state == "connected", "connected again")
    await until(rig.idle, "idle")
    await rig.say_into_mic()
    await until(lambda: rig.sim.record.responses_done >= 2, "the next turn is answered")


@pytest.mark.parametrize("kind", KINDS)
async def test_a_close_right_after_the_last_frame_plays_everything_that_arrived(
    tmp_path: Path, kind: SimDialect
) -> None:
    scenario = Scenario(
        turns=(TurnSpec(responses=(reply(close_after=1001),)), TurnSpec(responses=(reply(),)))
    )
    # math.inf: the whole reply arrives in one burst, as from the real services.
    async with Rig(tmp_path, scenario, kind=kind, sim_speed=math.inf) as rig:
        await rig.say_into_mic()
        assert await answered(rig) == "answered"
        assert rig.sim.record.closes_sent[:1] == [(1001, "going away")]
        assert heard_ms(rig) >= REPLY_MS - EDGE_MS, f"heard {heard_ms(rig)} of {REPLY_MS} ms"
        assert samples_heard(rig) == REPLY_SAMPLES
        await next_turn_works(rig)
        assert rig.sim.violations == []


@pytest.mark.parametrize("kind", KINDS)
async def test_a_renewal_due_in_the_middle_of_a_reply_waits_until_it_was_heard(
    tmp_path: Path, kind: SimDialect
) -> None:
    # Gemini: the server's goAway after the third chunk (60 s left). OpenAI and
    # xAI have no goAway: the daemon's own renewal falls due mid-reply.
    first = reply(go_away_after_deltas=3, go_away_s=60.0) if kind == "gemini" else reply()
    scenario = Scenario(turns=(TurnSpec(responses=(first,)), TurnSpec(responses=(reply(),))))
    # The reply still arrives faster than it plays (8x), but not in one burst.
    async with Rig(tmp_path, scenario, kind=kind, sim_speed=SPEED * 8) as rig:
        await rig.say_into_mic()
        if kind != "gemini":
            turn = rig.coordinator.turn
            await until(lambda: turn is not None and turn.first_audio_at is not None, "speaking")
            rig.rt.parts.connection.renew("session cap near")
        assert await answered(rig) == "answered"
        assert heard_ms(rig) >= REPLY_MS - EDGE_MS, f"heard {heard_ms(rig)} of {REPLY_MS} ms"
        assert samples_heard(rig) == REPLY_SAMPLES
        await until(lambda: rig.sim.connection_count >= 2, "renewed once it was heard")
        if kind == "gemini":
            assert rig.sim.record.gemini.go_away_expired == 0, "we left before the server cut"
        await next_turn_works(rig)
        assert rig.sim.violations == []
