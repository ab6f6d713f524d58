"""Volume: the curve, a fake amixer on PATH, persistence, the software stage, and ducking apart."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pytest

from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.volume import (
    AlsaMixerVolume,
    LevelChange,
    PersistentVolume,
    SoftwareVolume,
    db_to_percent,
    open_volume,
    percent_to_db,
)
from huxleyd.clock import ManualClock
from huxleyd.errors import AudioDeviceError
from tests.audio.signals import level_at, tone, windows
from tests.fakes.audio_amixer import FakeControl, install_fake_amixer
from tests.fakes.audio_store import MemoryLevelStore


@pytest.fixture
def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return bin_dir


def test_the_curve_is_perceptual_and_invertible() -> None:
    assert percent_to_db(100) == 0.0
    assert percent_to_db(50) == pytest.approx(-18.06, abs=0.01)
    assert percent_to_db(10) == pytest.approx(-60.0)
    assert percent_to_db(0) == -np.inf
    assert all(db_to_percent(percent_to_db(p)) == p for p in range(101))
    steps = [percent_to_db(p) - percent_to_db(p - 10) for p in range(20, 101, 10)]
    assert all(a > b for a, b in itertools.pairwise(steps))  # finer steps at the top


async def test_set_level_drives_the_named_control_and_reads_it_back(on_path: Path) -> None:
    fake = install_fake_amixer(
        on_path, {"Playback": FakeControl(), "Speaker": FakeControl()}, card="seeed2micvoicec"
    )
    volume = AlsaMixerVolume(card="seeed2micvoicec", control="Playback")
    assert await volume.set_level(40) == 40
    assert fake.sets == [["sset", "Playback", "--", "-23.88dB", "unmute"]]
    assert fake.calls[-1][:2] == ["-c", "seeed2micvoicec"]
    assert fake.control("Playback")["raw"] == 255 - 48  # 0.5 dB steps: -24.0 dB is the nearest
    assert fake.control("Speaker")["raw"] == 200  # untouched
    assert await volume.get_level() == 40


async def test_the_control_is_found_by_scanning_when_not_named(on_path: Path) -> None:
    fake = install_fake_amixer(
        on_path,
        {
            "Capture": FakeControl(playback=False),
            "Headphone": FakeControl(),
            "PCM": FakeControl(lo=-10239, hi=400, db_lo=-102.39, db_hi=4.0),
        },
    )
    volume = AlsaMixerVolume()
    assert await volume.find_control() == "PCM"  # preferred over Headphone; Capture is not playback
    assert await volume.set_level(70) == 70
    assert fake.sets[-1][:4] == ["sset", "PCM", "--", "-9.29dB"]
    assert fake.calls[-1][:2] == ["-D", "default"]


async def test_zero_mutes_and_a_later_level_unmutes(on_path: Path) -> None:
    fake = install_fake_amixer(on_path, {"PCM": FakeControl()})
    volume = AlsaMixerVolume(control="PCM")
    assert await volume.set_level(0) == 0
    assert fake.control("PCM")["switch"] is False and fake.control("PCM")["raw"] == 0
    assert await volume.set_level(25) == 25
    assert fake.control("PCM")["switch"] is True


async def test_a_control_without_a_db_scale_gets_the_raw_percent(on_path: Path) -> None:
    fake = install_fake_amixer(
        on_path, {"Speaker": FakeControl(lo=0, hi=100, db_lo=None, db_hi=None, switch=None)}
    )
    volume = AlsaMixerVolume(control="Speaker")
    assert await volume.set_level(33) == 33
    assert fake.sets == [["sset", "Speaker", "--", "33%"]]


async def test_a_missing_control_is_named_in_the_error(on_path: Path) -> None:
    install_fake_amixer(on_path, {"PCM": FakeControl()})
    with pytest.raises(AudioDeviceError, match="Unable to find simple control 'Master'"):
        await AlsaMixerVolume(control="Master").set_level(50)


async def test_the_level_survives_a_restart(on_path: Path) -> None:
    fake = install_fake_amixer(on_path, {"PCM": FakeControl()})
    store = MemoryLevelStore()
    first = PersistentVolume(AlsaMixerVolume(control="PCM"), store, default_level=50)
    assert await first.restore() == 50  # nothing stored yet: the default
    assert store.saves == [50], "the default is stored, so get_volume reads what is in effect"
    assert await first.set_level(35) == 35
    assert store.saves == [50, 35]
    # reboot: the card comes up at its power-on level, the daemon starts afresh
    fake = install_fake_amixer(on_path, {"PCM": FakeControl(raw=255)})
    second = PersistentVolume(AlsaMixerVolume(control="PCM"), store, default_level=50)
    assert await second.restore() == 35
    assert fake.sets[-1][:4] == ["sset", "PCM", "--", f"{percent_to_db(35):.2f}dB"]
    assert await second.get_level() == 35


async def test_a_card_without_a_playback_control_falls_back_to_software_gain(on_path: Path) -> None:
    install_fake_amixer(on_path, {"Capture": FakeControl(playback=False)})
    engine = AudioEngine(
        WavBackend(keep_speaker=True), settings=AudioSettings(), clock=ManualClock()
    )
    volume = await open_volume(AudioSettings(backend="callback"), engine)
    assert isinstance(volume, SoftwareVolume)
    hardware = install_fake_amixer(on_path, {"PCM": FakeControl()})
    volume = await open_volume(AudioSettings(backend="callback"), engine)
    assert isinstance(volume, AlsaMixerVolume)
    assert hardware.sets == []  # choosing does not change the level


async def test_no_amixer_at_all_means_software_gain(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    engine = AudioEngine(
        WavBackend(keep_speaker=True), settings=AudioSettings(), clock=ManualClock()
    )
    assert isinstance(await open_volume(AudioSettings(backend="auto"), engine), SoftwareVolume)


async def test_software_volume_scales_the_output_and_ducking_leaves_it_alone() -> None:
    backend = WavBackend(keep_speaker=True)
    engine = AudioEngine(backend, settings=AudioSettings(), clock=ManualClock())
    store = MemoryLevelStore(50)
    volume = PersistentVolume(SoftwareVolume(engine), store)
    assert await volume.restore() == 50
    await engine.source("content").write(tone(1000, 3.0, -20))
    engine.run_periods(10)
    engine.source("content").duck()
    engine.run_periods(20)
    engine.source("content").unduck()
    engine.run_periods(40)
    assert await volume.get_level() == 50 and store.saves == []  # ducking never saved a level
    out = backend.speaker_samples()[:, 0]
    levels = [level_at(w, 1000, 24000) for w in windows(out, 480)]
    expected = -20 + percent_to_db(50)
    assert levels[2:10] == pytest.approx([expected] * 8, abs=0.05)
    assert levels[16:30] == pytest.approx([expected - 12] * 14, abs=0.1)
    assert levels[62:70] == pytest.approx([expected] * 8, abs=0.05)  # back to the user's level
    assert await volume.set_level(100) == 100
    engine.run_periods(2)
    assert level_at(backend.speaker_samples()[-480:, 0], 1000, 24000) == pytest.approx(
        -20, abs=0.05
    )


async def test_the_first_level_is_the_configured_default(tmp_path: Path) -> None:
    from huxleyd.app.volume import make_volume
    from huxleyd.storage.db import Database

    db = await Database.open(tmp_path / "state.db")
    try:
        settings = AudioSettings(backend="wav", default_volume=30)
        engine = AudioEngine(WavBackend(), settings=settings, clock=ManualClock())
        volume = await make_volume(settings, engine, db)
        assert await volume.get_level() == 30
        # saved in the daemon's state, which the system skill's get_volume reads
        assert await db.get_state("volume_level") == "30"
    finally:
        await db.close()


class RefusingStore(MemoryLevelStore):
    """A store whose saves fail while :attr:`full` (what it holds stays)."""

    full = False

    async def save(self, level: int) -> None:
        if self.full:
            raise OSError("database or disk\nis full")
        await super().save(level)


class Gain:
    def set_master_gain(self, gain: float) -> None:
        pass


async def test_a_change_says_whether_it_was_saved_and_what_a_restart_brings_back() -> None:
    store = RefusingStore(25)
    volume = PersistentVolume(SoftwareVolume(Gain()), store)
    assert await volume.restore() == 25
    assert await volume.change(30) == LevelChange(30)  # saved
    store.full = True
    assert await volume.change(40) == LevelChange(
        40, saved=False, why="database or disk is full", restart_level=30
    )
    assert await volume.get_level() == 40  # the speaker has it now
    assert volume.unsaved and store.level == 30  # what a restart reads
    store.full = False
    assert await volume.change(45) == LevelChange(45) and not volume.unsaved


async def test_a_restart_level_never_saved_is_the_default_and_unknown_before_restore() -> None:
    store = RefusingStore()
    store.full = True
    unrestored = PersistentVolume(SoftwareVolume(Gain()), store, default_level=35)
    assert (await unrestored.change(40)).restart_level is None  # it never read the store
    volume = PersistentVolume(SoftwareVolume(Gain()), store, default_level=35)
    assert await volume.restore() == 35  # the default, its save refused
    assert (await volume.change(40)).restart_level == 35  # what the next start applies
