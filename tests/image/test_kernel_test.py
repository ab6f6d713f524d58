"""The kernel test's inputs (image/kernel-test/), checked without a VM: the
board profile loads through the daemon's own loader, its asound.conf defines
what the profile names, and the VM's turn driver reads the same lines from
the same profile. `make image-test-kernel` boots them."""

from __future__ import annotations

import array
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from huxleyd.hardware.boards import load_board
from huxleyd.sim.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
KERNEL_TEST = REPO / "image/kernel-test"


def turn_driver() -> ModuleType:
    """image/kernel-test/turn.py, imported from its path (it is not a package)."""
    spec = importlib.util.spec_from_file_location("kernel_test_turn", KERNEL_TEST / "turn.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pcm_block(conf: str, name: str) -> str:
    """The body of ``pcm.<name> { ... }`` (one level of nested braces)."""
    match = re.search(rf"^pcm\.{name} \{{(.*?)^\}}", conf, re.S | re.M)
    assert match, f"no pcm.{name} in the asound.conf"
    return match.group(1)


def test_the_profile_loads_as_the_daemon_loads_it() -> None:
    board = load_board("kernel-test", KERNEL_TEST)
    assert board.button.pull_up, "the test pulls the line down to press: the daemon must pull it up"
    assert board.leds.kind == "rgbled" and not board.leds.pwm, "states read as three plain lines"
    assert board.asound_conf is not None and board.asound_conf.is_file()


def test_asound_conf_defines_the_profiles_devices_and_mixer_control() -> None:
    board = load_board("kernel-test", KERNEL_TEST)
    assert board.asound_conf is not None
    conf = board.asound_conf.read_text()
    audio = board.audio
    playback = pcm_block(conf, audio.playback_device)
    capture = pcm_block(conf, audio.capture_device)
    assert "DEV=0,SUBDEV=1" in capture
    softvol_name = re.search(r'slave\.pcm "(\w+)"', playback)
    assert softvol_name, "the speaker goes through the softvol PCM"
    softvol = pcm_block(conf, softvol_name.group(1))
    assert "type softvol" in softvol and "DEV=0,SUBDEV=0" in softvol
    assert f'name "{audio.mixer_control}"' in softvol
    assert f"card {audio.mixer_card}" in softvol


def test_the_turn_driver_uses_the_profiles_lines(tmp_path: Path) -> None:
    board = load_board("kernel-test", KERNEL_TEST)
    lines = turn_driver().lines_from_profile(tmp_path, board.path)
    expected_leds = (board.leds.red_pin, board.leds.green_pin, board.leds.blue_pin)
    for pin, name in [
        (board.button.pin, "button"),
        *zip(expected_leds, ("r", "g", "b"), strict=True),
    ]:
        (tmp_path / f"sim_gpio{pin}").mkdir()
        (tmp_path / f"sim_gpio{pin}" / "value").write_text(
            "1\n" if name in ("button", "g") else "0\n"
        )
    (tmp_path / f"sim_gpio{board.button.pin}" / "pull").write_text("pull-up\n")
    assert lines.bias() == "pull-up"
    assert lines.button_value() == 1
    assert lines.leds() == (0, 1, 0)
    lines.press()
    assert (tmp_path / f"sim_gpio{board.button.pin}" / "pull").read_text() == "pull-down"


def test_silence_after_a_press_is_found_where_it_starts() -> None:
    turn = turn_driver()
    rate = turn.FRAMES_PER_MS
    loud, quiet = [3000, -3000] * (100 * rate // 2), [0] * ((turn.SILENT_RUN_MS + 50) * rate)
    pause = [0] * (300 * rate)  # a pause between sentences is not the cut
    samples = array.array("h", loud + pause + loud + quiet)
    assert turn.silence_after(samples, 0) == len(loud) * 2 + len(pause)
    assert turn.loud_ms(samples, 0, len(loud)) == 100


def test_the_simulators_script_loads() -> None:
    scenario = load_scenario(KERNEL_TEST / "scenario.toml")
    first = scenario.turns[0].responses[0]
    # A tone long enough to be interrupted: turn.py presses after REPLY_MS + 0.5 s of it.
    assert first.tone_hz is not None and first.duration_ms is not None
    assert first.duration_ms >= 10 * (turn_driver().REPLY_MS + 500)


def fake_recorder(turn: ModuleType, proc: Path, hw_ptr: int, appl_ptr: int, path: Path) -> object:
    """A Recorder without arecord: its capture stream's /proc files under
    ``proc`` say ``hw_ptr`` and ``appl_ptr`` (the kernel's own format)."""
    stream = proc / turn.Recorder.PCM
    stream.mkdir(parents=True)
    (stream / "status").write_text(
        f"state: RUNNING\nowner_pid   : 9\navail       : {hw_ptr - appl_ptr}\n"
        f"-----\nhw_ptr      : {hw_ptr}\nappl_ptr    : {appl_ptr}\n"
    )
    (stream / "hw_params").write_text(
        "access: RW_INTERLEAVED\nformat: S16_LE\nrate: 48000 (48000/1)\n"
    )
    rec = object.__new__(turn.Recorder)
    rec.path = path
    rec.overruns = []
    return rec


def test_the_press_is_placed_in_the_file_not_at_the_restarted_hw_ptr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an overrun ALSA restarts the capture stream: its hw_ptr counts
    from the restart while the file holds everything written before it (the
    run that judged a press 5 s off). The press frame is the file's length
    plus what the card captured that arecord has not read yet."""
    turn = turn_driver()
    monkeypatch.setattr(turn, "PROC", tmp_path / "proc")
    recording = tmp_path / "speaker.raw"
    recording.write_bytes(bytes(2 * 5 * turn.RATE_HZ))  # 5 s written
    rec = fake_recorder(turn, tmp_path / "proc", hw_ptr=1000 + 2400, appl_ptr=1000, path=recording)
    assert rec.frame_now() == 5 * turn.RATE_HZ + 2400  # type: ignore[attr-defined]


def test_an_overrun_after_the_release_leaves_the_recording_unjudged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Frames lost after the release would bring the silence closer to the
    press: the judge says so and fails, it never passes on such a file."""
    turn = turn_driver()
    rec = fake_recorder(turn, tmp_path / "proc", 0, 0, tmp_path / "r.raw")
    rec.overruns = [(9.0, "overrun!!! (at least 12.150 ms long)")]  # type: ignore[attr-defined]
    assert turn.recording_whole(rec, released_t=10.0)
    rec.overruns.append((11.0, "overrun!!! (at least 3.000 ms long)"))  # type: ignore[attr-defined]
    assert not turn.recording_whole(rec, released_t=10.0)
    assert turn.fails == 1
    assert "FAIL: the recording is whole" in capsys.readouterr().out


def test_the_watch_counts_a_trigger_the_state_samples_never_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's daemon counted 5 card underruns while every 10 ms sample of the state
    read RUNNING: the recoveries fell between samples. The kernel's trigger_time
    stays changed after one; a stream seen first (or closed) is no trigger."""
    turn = turn_driver()
    monkeypatch.setattr(turn, "PROC", tmp_path / "proc")
    speaker = tmp_path / "proc" / "pcm0p" / "sub0"
    speaker.mkdir(parents=True)

    def status(trigger: str) -> None:
        (speaker / "status").write_text(
            f"state: RUNNING\nowner_pid   : 9\ntrigger_time: {trigger}\nhw_ptr      : 0\n"
        )

    watch = turn.XrunWatch()
    status("100.000000001")
    watch.sample()
    watch.sample()
    status("101.500000000")  # stopped by an xrun and restarted, between two samples
    watch.sample()
    watch.sample()
    assert watch.xruns["pcm0p/sub0"] == 0 and watch.running["pcm0p/sub0"] == 4
    assert watch.triggers == {"pcm0p/sub0": 1, "pcm0c/sub1": 0}
