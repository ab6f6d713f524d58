"""The shipped earcons: the right format, click-free, and exactly what the script makes."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from huxleyd.audio.earcons import (
    SHIPPED_EARCONS,
    Earcon,
    default_sounds_dir,
    load_earcon,
    load_earcons,
)
from huxleyd.errors import AudioError
from huxleyd.pcm import read_wav, write_wav

ROOT = Path(__file__).resolve().parents[2]


def make_sounds() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "make_sounds", ROOT / "scripts" / "make_sounds.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_sounds"] = module
    spec.loader.exec_module(module)
    return module


def test_every_earcon_ships_and_loads() -> None:
    earcons = load_earcons(default_sounds_dir())
    assert set(earcons) == set(SHIPPED_EARCONS)
    durations = {e: len(pcm) / 2 / 24000 for e, pcm in earcons.items()}
    assert all(0.1 <= d <= 1.5 for d in durations.values()), durations
    assert durations[Earcon.LISTEN_START] <= 0.25  # a cue, not a tune: it must not delay listening


@pytest.mark.parametrize("earcon", SHIPPED_EARCONS)
def test_earcons_are_clean(earcon: Earcon) -> None:
    samples = np.frombuffer(
        load_earcon(default_sounds_dir() / f"{earcon.value}.wav"), "<i2"
    ).astype(float)
    assert abs(samples[0]) <= 1 and abs(samples[-1]) <= 1  # start and end on silence: no click
    assert (
        -15 <= 20 * np.log10(np.abs(samples).max() / 32768) <= -5.9
    )  # loud enough, never clipping
    spectrum = np.abs(np.fft.rfft(samples))
    assert spectrum[: len(spectrum) // 2400].sum() < 0.01 * spectrum.sum()  # no DC / sub-5 Hz thump


def test_the_committed_files_are_what_the_script_makes(tmp_path: Path) -> None:
    module = make_sounds()
    module.write(tmp_path)
    for earcon in SHIPPED_EARCONS:
        fresh = read_wav(tmp_path / f"{earcon.value}.wav").samples
        shipped = read_wav(default_sounds_dir() / f"{earcon.value}.wav").samples
        assert fresh.shape == shipped.shape, earcon
        assert np.abs(fresh.astype(int) - shipped.astype(int)).max() <= 1, (
            earcon
        )  # 1 LSB across platforms


def test_the_script_names_match_the_enum() -> None:
    assert list(make_sounds().SOUNDS) == [e.value for e in SHIPPED_EARCONS]


def test_a_wrong_format_is_named(tmp_path: Path) -> None:
    write_wav(tmp_path / "x.wav", np.zeros(100, np.int16), rate_hz=44100)
    with pytest.raises(
        AudioError, match=r"x.wav: earcons must be PCM16 24000 Hz mono, got 44100 Hz"
    ):
        load_earcon(tmp_path / "x.wav")


def test_missing_earcons_are_listed(tmp_path: Path) -> None:
    write_wav(tmp_path / "timer.wav", np.ones(100, np.int16))
    with pytest.raises(AudioError, match=r"missing earcon.*listen_start\.wav.*too_short\.wav"):
        load_earcons(tmp_path)


def test_an_optional_earcon_is_loaded_when_present(tmp_path: Path) -> None:
    for earcon in SHIPPED_EARCONS:
        write_wav(tmp_path / f"{earcon}.wav", np.ones(100, np.int16))
    assert Earcon.KEY_REFUSED not in load_earcons(tmp_path)
    write_wav(tmp_path / "key_refused.wav", np.ones(100, np.int16))
    assert Earcon.KEY_REFUSED in load_earcons(tmp_path)


def test_earcon_names_are_the_file_names_and_palette_keys() -> None:
    """The StrEnum is its text: a palette loaded by file name answers to it."""
    palette = {"error": b"e", "too_short": b"t"}
    assert palette[Earcon.ERROR] == b"e" and palette.get(Earcon.TOO_SHORT) == b"t"
    assert [str(e) for e in Earcon] == [e.value for e in Earcon]
    assert f"{Earcon.KEY_REFUSED}.wav" == "key_refused.wav"
