"""The power-cut test's VM scripts (image/powercut-test/), checked without a VM:
heard.py counts the book's seconds and nothing else, and the simulator's two
scripts load and call the audiobooks tool as the skill defines it.
`make image-test-powercut` boots them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from huxleyd.sim.scenario import load_scenario
from huxleyd.skills.audiobooks import AudiobooksSkill

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "image" / "powercut-test"
RATE = 48_000


def tone(hz: float, seconds: float, gain: float) -> np.ndarray:
    t = np.arange(round(seconds * RATE)) / RATE
    return gain * 32767 * np.sin(2 * np.pi * hz * t)


def heard(pcm: np.ndarray, start_s: str = "0") -> list[str]:
    """heard.py's lines for ``pcm`` played into it (as arecord pipes it)."""
    raw = pcm.astype("<i2").tobytes()
    out = subprocess.run(
        [sys.executable, str(SCRIPTS / "heard.py"), start_s],
        input=raw,
        capture_output=True,
        check=True,
        timeout=120,
    ).stdout.decode()
    return out.splitlines()


def test_heard_counts_the_books_seconds_and_nothing_else() -> None:
    pcm = np.concatenate(
        [
            np.zeros(RATE // 2),  # before the book
            tone(1000, 1.5, 0.5),
            np.zeros(RATE // 4),  # an underrun: silence at the speaker
            tone(550, 0.4, 0.5),  # the simulator speaks
            tone(1000, 2.0, 0.5 / 1000),  # the volume at -60 dB
            tone(1000, 0.5, 0.25) + tone(550, 0.5, 0.25),  # a mix is not the book
        ]
    )
    lines = heard(pcm, "12.5")
    assert lines[0] == "POWERCUT recorder up"
    assert lines[-1] == "POWERCUT heard 16.00 s"  # 12.5 + 1.5 + 2.0
    steps = [float(line.split()[2]) for line in lines[1:]]
    assert steps == sorted(steps) and len(steps) == len(set(steps))


def test_heard_says_what_the_blocks_were_when_the_book_is_not_heard() -> None:
    """The console's evidence when the count stops: a book that fell silent reads
    silent, one chopped by underruns in every 10 ms block reads other."""
    chopped = tone(1000, 5.0, 0.5)
    chopped.reshape(-1, 480)[:, :120] = 0  # 2.5 ms of each 10 ms block: an underrun's gap
    pcm = np.concatenate([tone(1000, 5.0, 0.5), np.zeros(5 * RATE), chopped])
    out = subprocess.run(
        [sys.executable, str(SCRIPTS / "heard.py")],
        input=pcm.astype("<i2").tobytes(),
        capture_output=True,
        check=True,
        timeout=120,
    )
    assert out.stderr.decode().splitlines() == [
        "POWERCUT blocks book 500 silent 0 other 0",
        "POWERCUT blocks book 0 silent 500 other 0",
        "POWERCUT blocks book 0 silent 0 other 500",
    ]
    assert out.stdout.decode().splitlines()[-1] == "POWERCUT heard 5.00 s"


def test_the_simulators_scripts_call_the_skills_tool() -> None:
    tools = {t.name: t for t in AudiobooksSkill().tools}
    play = load_scenario(SCRIPTS / "play.toml")
    resume = load_scenario(SCRIPTS / "resume.toml")
    (first,) = play.turns[0].responses[0].tool_calls
    (again,) = resume.turns[0].responses[0].tool_calls
    assert first.name == again.name == "play_audiobook" and "play_audiobook" in tools
    assert set(first.arguments) <= set(tools["play_audiobook"].parameters["properties"])
    assert again.arguments == {}  # "resume the book": the last book, from what survived the cut
