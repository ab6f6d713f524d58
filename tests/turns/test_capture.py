"""MicCapture: the one owner of the mic capture switch, and its rule."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

from huxleyd.turns.capture import MicCapture
from tests.fakes.turn_ports import RecordingAudio

ROOT = Path(__file__).resolve().parents[2]


def capture() -> tuple[MicCapture, RecordingAudio]:
    audio = RecordingAudio()
    audio.mic.put_nowait(None)  # type: ignore[arg-type]  # a stale frame, from before
    return MicCapture(audio), audio


def test_it_is_off_until_someone_listens() -> None:
    mic, audio = capture()
    mic.start()
    assert audio.capture_log == [("capture", False)]
    assert not mic.active


def test_listening_drains_what_came_before_then_switches_on() -> None:
    mic, audio = capture()
    mic.start()
    mic.listening(True)
    assert audio.capture_log[1:] == [("drain_mic", 1), ("capture", True)]
    mic.listening(False)
    assert audio.capture_log[-1] == ("capture", False)


def test_any_sequence_follows_the_rule_and_switches_only_on_change() -> None:
    """Every order of button and claim changes (4 steps): on exactly while the
    user listens or a claim holds the mic; the engine told only of changes."""
    events = [(fact, value) for fact in ("listening", "claimed") for value in (True, False)]
    for sequence in itertools.product(events, repeat=4):
        mic, audio = capture()
        mic.start()
        facts = {"listening": False, "claimed": False}
        switched = [False]
        for fact, value in sequence:
            getattr(mic, fact)(value)
            facts[fact] = value
            expected = facts["listening"] or facts["claimed"]
            assert mic.active is expected, sequence
            if expected != switched[-1]:
                switched.append(expected)
        told = [on for what, on in audio.capture_log if what == "capture"]
        assert told == switched, sequence


def test_nothing_else_in_the_daemon_switches_capture() -> None:
    """The engine's switch has one caller above the audio layer: MicCapture."""
    callers: list[str] = []
    for path in sorted((ROOT / "huxleyd").rglob("*.py")):
        if path.parts[-2] == "audio" or "audio" in path.relative_to(ROOT).parts[:2]:
            continue  # the engine itself
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            switch = ("set_capture_active", "drain_mic")
            if isinstance(node, ast.Attribute) and node.attr in switch:
                callers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert callers and all(c.startswith("huxleyd/turns/capture.py:") for c in callers), callers
