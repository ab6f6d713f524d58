"""Board profiles: the shipped ones load with the values their hardware has,
and every mistake names the file and the key."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from huxleyd.errors import ConfigError
from huxleyd.hardware.boards import available_boards, load_board
from huxleyd.hardware.settings import HardwareSettings
from huxleyd.schema import build

HW = Path(__file__).resolve().parents[2] / "hw"


def test_shipped_boards_are_listed() -> None:
    assert {"gpio-basic", "respeaker-2mic", "voice-bonnet"} <= set(available_boards(HW))


def test_respeaker_profile() -> None:
    board = load_board("respeaker-2mic", HW)
    assert board.button.pin == 17 and board.button.pull_up
    assert board.button.bounce_s == pytest.approx(0.02)
    assert board.leds.kind == "apa102" and board.leds.count == 3
    assert (board.leds.spi_bus, board.leds.spi_device) == (0, 1)
    assert board.leds.uses_spi_device
    assert board.audio.input_channels == 2 and board.audio.mic_channel == 0
    assert board.audio.mixer_card == "seeed2micvoicec"
    assert board.audio.device_rate_hz == 48000
    assert board.asound_conf == (HW / "respeaker-2mic.asound.conf").resolve()
    assert board.gpio_pins == {"button": 17}  # SCLK/MOSI belong to the spidev driver


def test_voice_bonnet_profile_bit_bangs_gpio5_and_6() -> None:
    board = load_board("voice-bonnet", HW)
    assert board.button.pin == 17
    assert board.leds.kind == "apa102" and board.leds.count == 3
    assert (board.leds.data_pin, board.leds.clock_pin) == (5, 6)
    assert not board.leds.uses_spi_device
    assert board.gpio_pins == {"button": 17, "led_clock": 6, "led_data": 5}


def test_gpio_basic_profile() -> None:
    board = load_board("gpio-basic", HW)
    assert board.leds.kind == "pwmled" and board.leds.pin == 27
    assert board.audio.capture_device == "default"
    assert board.gpio_pins == {"button": 17, "led": 27}


def test_unknown_board_lists_the_available_ones() -> None:
    with pytest.raises(ConfigError) as err:
        load_board("respeaker-4mic", HW)
    assert err.value.key == "hardware.board"
    assert "respeaker-4mic" in str(err.value)
    for name in ("gpio-basic", "respeaker-2mic", "voice-bonnet"):
        assert name in str(err.value)


def test_board_name_cannot_escape_the_folder() -> None:
    with pytest.raises(ConfigError, match="expected a board name"):
        load_board("../etc/passwd", HW)


def _write(tmp_path: Path, text: str, name: str = "custom") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def test_wrong_type_names_file_and_dotted_key(tmp_path: Path) -> None:
    path = _write(tmp_path, '[button]\npin = "seventeen"\n')
    with pytest.raises(ConfigError) as err:
        load_board("custom", tmp_path)
    assert err.value.file == str(path)
    assert err.value.key == "button.pin"
    assert "expected an integer" in str(err.value)


def test_pin_out_of_range(tmp_path: Path) -> None:
    _write(tmp_path, "[button]\npin = 40\n")
    with pytest.raises(ConfigError, match=r"button\.pin: expected a value between 0 and 27"):
        load_board("custom", tmp_path)


def test_unknown_key_is_reported(tmp_path: Path) -> None:
    _write(tmp_path, "[button]\npin = 17\n[leds]\nkind = 'led'\npin = 4\nspeed = 3\n")
    with pytest.raises(ConfigError) as err:
        load_board("custom", tmp_path)
    assert err.value.key == "leds.speed"


def test_missing_button_table(tmp_path: Path) -> None:
    _write(tmp_path, "description = 'no button'\n")
    with pytest.raises(ConfigError) as err:
        load_board("custom", tmp_path)
    assert err.value.key == "button"


def test_apa102_needs_spi_or_pins_not_both(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "[button]\npin = 17\n[leds]\nkind = 'apa102'\nspi_bus = 0\nspi_device = 1\n"
        "clock_pin = 6\ndata_pin = 5\n",
    )
    with pytest.raises(ConfigError) as err:
        load_board("custom", tmp_path)
    assert err.value.key == "leds"
    assert "not both" in str(err.value)


def test_led_kind_needs_its_pin(tmp_path: Path) -> None:
    _write(tmp_path, "[button]\npin = 17\n[leds]\nkind = 'rgbled'\nred_pin = 1\ngreen_pin = 2\n")
    with pytest.raises(ConfigError, match="needs blue_pin"):
        load_board("custom", tmp_path)


def test_mic_channel_must_exist(tmp_path: Path) -> None:
    _write(tmp_path, "[button]\npin = 17\n[audio]\ninput_channels = 2\nmic_channel = 2\n")
    with pytest.raises(ConfigError, match="only 2 channel"):
        load_board("custom", tmp_path)


def test_missing_asound_conf(tmp_path: Path) -> None:
    _write(tmp_path, "asound_conf = 'nope.conf'\n[button]\npin = 17\n")
    with pytest.raises(ConfigError) as err:
        load_board("custom", tmp_path)
    assert err.value.key == "asound_conf"


def test_malformed_toml(tmp_path: Path) -> None:
    path = _write(tmp_path, "[button\npin = 17\n")
    with pytest.raises(ConfigError) as err:
        load_board("custom", tmp_path)
    assert err.value.file == str(path) and "not valid TOML" in str(err.value)


def test_hold_limit_must_be_shorter_than_listening_limit() -> None:
    with pytest.raises(ConfigError) as err:
        build(
            HardwareSettings,
            {"max_hold_s": 60.0, "led_limits": {"listening_s": 45.0}},
            file="huxleyd.toml",
            prefix="hardware",
        )
    assert "listening_s" in str(err.value) and err.value.file == "huxleyd.toml"


@pytest.mark.skipif(shutil.which("aplay") is None, reason="alsa-utils (aplay) is not installed")
@pytest.mark.parametrize("board", ["gpio-basic", "respeaker-2mic", "voice-bonnet"])
def test_asound_conf_parses_with_alsa_lib(board: str) -> None:
    """alsa-lib itself reads the file: a syntax or type error makes aplay complain."""
    conf = load_board(board, HW).asound_conf
    assert conf is not None
    env = {**os.environ, "ALSA_CONFIG_PATH": f"/usr/share/alsa/alsa.conf:{conf}"}
    out = subprocess.run(["aplay", "-L"], env=env, capture_output=True, text=True, timeout=20)
    assert "corrupted" not in out.stderr and "Invalid argument" not in out.stderr, out.stderr
    if board != "gpio-basic":
        assert "huxley_playback" in out.stdout and "huxley_capture" in out.stdout
