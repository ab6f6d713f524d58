"""``make demo`` plays its conversation by itself and narrates it."""

from __future__ import annotations

import subprocess
import sys
import wave
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_demo_plays_and_narrates_every_step(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    done = subprocess.run(
        [sys.executable, "-m", "huxleyd.app.demo", "--dir", str(demo), "--speed", "4"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "GPIOZERO_PIN_FACTORY": "mock", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for line in (
        "Step 1:",
        "you said  “what time is it”",
        "tool      get_current_time",
        "result    get_current_time → {",
        "it says   “Here is the time",
        "media     started: demo",
        "the music stays ducked under the voice",
        "the music comes back to full level",
        "media     stopped",
        "(turn t4 answered)",
    ):
        assert line in out, f"{line!r} missing from:\n{out}"
    with wave.open(str(demo / "speaker.wav"), "rb") as wav:
        assert wav.getframerate() == 24_000 and wav.getnframes() > 24_000 * 5
