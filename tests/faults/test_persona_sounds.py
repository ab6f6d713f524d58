"""Issue 41: a persona's sound that cannot be read was said nowhere.

The audiobooks skill read its two sounds (``<data_dir>/sounds/book_start.wav``,
``book_end.wav``) as one palette: one broken file silenced both, and status,
doctor and ``--check-config`` said nothing. Now each sound is read on its
own: the broken one is named in the degraded record's ``persona-sounds`` part
(status, doctor) and in ``--check-config``'s "left out" line, in the same
words, and the other one still plays.
"""

from __future__ import annotations

import wave
from pathlib import Path

import pytest

from huxleyd.app.control import RuntimeControl
from huxleyd.app.main import main
from huxleyd.sim.scenario import Scenario
from tests.e2e.harness import Rig


def persona_sounds(tmp_path: Path) -> Path:
    """The persona's sounds (the harness's data_dir: ``state/default/data``): a
    good book_start.wav, a book_end.wav that is no WAV at all."""
    folder = tmp_path / "state" / "default" / "data" / "sounds"
    folder.mkdir(parents=True)
    with wave.open(str(folder / "book_start.wav"), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(24_000)
        wav.writeframes(b"\x00\x10" * 2400)
    (folder / "book_end.wav").write_bytes(b"this is not a wav file")
    return folder


async def test_a_persona_sound_that_cannot_be_read_is_named_and_the_other_plays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = persona_sounds(tmp_path)
    async with Rig(tmp_path, Scenario(), skills=("system", "audiobooks")) as rig:
        control = RuntimeControl(rig.rt)
        status = await control.status()
        checks = {c.name: c for c in await control.doctor()}
        played = dict(rig.skill("audiobooks")._earcons)
    [line] = [p for p in status.problems if p.startswith("persona-sounds: ")]
    assert line.startswith(f"persona-sounds: {folder}: book_end.wav: not a PCM WAV file")
    assert "book_start" not in line and "the others play" in line
    degraded = checks["degraded parts"]
    assert degraded.status == "fail" and line in degraded.detail
    assert "persona-sounds: replace each file named" in degraded.fix
    assert set(played) == {"book_start"}  # the good one still plays
    # --check-config says the same, in the same words
    capsys.readouterr()
    assert main(["--check-config", "--config", str(tmp_path / "huxleyd.toml")]) == 0
    out = capsys.readouterr().out
    [left_out] = [x for x in out.splitlines() if x.startswith("  left out: persona-sounds: ")]
    assert line.startswith(left_out.removeprefix("  left out: "))
