"""Configuration errors name the file, the key and what was expected."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from huxleyd.config.load import load_config, load_persona
from huxleyd.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]

PERSONA = """
name = "Test"
language = "en"
timezone = "Europe/Madrid"
instructions = "Be brief."
[skills.system]
"""


def write_config(tmp_path: Path, body: str, persona: str = PERSONA) -> Path:
    """``huxleyd.toml`` with ``body``; the shipped board profiles are at ``./hw``."""
    (tmp_path / "personas").mkdir(exist_ok=True)
    if not (tmp_path / "hw").exists():
        (tmp_path / "hw").symlink_to(ROOT / "hw")
    (tmp_path / "personas" / "default.toml").write_text(persona)
    # The default boards_dir is the installed one; these tests use the repo's.
    if "boards_dir" not in body:
        if "[hardware]\n" in body:
            body = body.replace("[hardware]\n", '[hardware]\nboards_dir = "hw"\n', 1)
        else:
            body += '\n[hardware]\nboards_dir = "hw"\n'
    path = tmp_path / "huxleyd.toml"
    path.write_text(body)
    return path


def error_for(tmp_path: Path, body: str, persona: str = PERSONA) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(write_config(tmp_path, body, persona))
    return info.value


def test_the_shipped_configs_are_valid(tmp_path: Path) -> None:
    # The installed config names the installed board profiles: point it at the repo's.
    shipped = (ROOT / "config" / "huxleyd.toml").read_text()
    assert 'boards_dir = "/opt/huxleyd/share/hw"' in shipped
    installed = tmp_path / "huxleyd.toml"
    installed.write_text(shipped.replace("/opt/huxleyd/share/hw", str(ROOT / "hw")))
    (tmp_path / "personas").symlink_to(ROOT / "config" / "personas")
    for path in (installed, ROOT / "config" / "dev.toml"):
        config = load_config(path)
        assert config.persona.skills, path


def test_defaults_and_relative_paths(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, '[storage]\nstate_dir = "state"\n'))
    assert config.storage.state_dir == (tmp_path / "state").resolve()
    assert config.audio.period_ms == 20
    assert config.audio.duck_depth_db == -12.0
    assert config.persona.timezone == "Europe/Madrid"
    assert list(config.persona.skills) == ["system"]


def test_unknown_section(tmp_path: Path) -> None:
    err = error_for(tmp_path, "[audoi]\nperiod_ms = 20\n")
    assert err.file.endswith("huxleyd.toml") and err.key == "audoi"
    assert "unknown section" in str(err) and "audio" in str(err)


def test_unknown_key_lists_the_known_ones(tmp_path: Path) -> None:
    err = error_for(tmp_path, "[audio]\nperiod = 20\n")
    assert err.key == "audio.period"
    assert "unknown key" in str(err) and "period_ms" in str(err)
    assert str(err).startswith(str(tmp_path / "huxleyd.toml") + ": audio.period:")


def test_wrong_type(tmp_path: Path) -> None:
    err = error_for(tmp_path, '[audio]\nperiod_ms = "20"\n')
    assert err.key == "audio.period_ms"
    assert "expected an integer, got a string '20'" in str(err)


def test_bool_is_not_a_number(tmp_path: Path) -> None:
    err = error_for(tmp_path, "[audio]\nduck_depth_db = true\n")
    assert err.key == "audio.duck_depth_db" and "expected a number" in str(err)


def test_out_of_range(tmp_path: Path) -> None:
    err = error_for(tmp_path, "[audio]\nperiod_ms = 500\n")
    assert err.key == "audio.period_ms"
    assert "between 5 and 100" in str(err) and "500" in str(err)


def test_wrong_choice(tmp_path: Path) -> None:
    err = error_for(tmp_path, '[audio]\nbackend = "jack"\n')
    assert err.key == "audio.backend" and "'callback'" in str(err)


def test_the_blocking_backend_is_refused_by_its_key(tmp_path: Path) -> None:
    """Issue 39: PyAudio's blocking backend left; a file that still asks for it is
    refused, naming the key and what is accepted, not run on something else."""
    err = error_for(tmp_path, '[audio]\nbackend = "pyaudio"\n')
    assert err.key == "audio.backend"
    assert "expected one of 'auto', 'callback', 'wav'" in str(err), str(err)


def test_section_must_be_a_table(tmp_path: Path) -> None:
    err = error_for(tmp_path, 'audio = "loud"\n')
    assert err.key == "audio" and "expected a table" in str(err)


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    err = error_for(tmp_path, "[audio\n")
    assert err.file.endswith("huxleyd.toml") and "not valid TOML" in str(err)


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_config(Path("/nonexistent/huxleyd.toml"))


def test_missing_persona_lists_the_available_ones(tmp_path: Path) -> None:
    err = error_for(tmp_path, '[daemon]\npersona = "grumpy"\n')
    assert err.key == "daemon.persona"
    assert "'grumpy' not found" in str(err) and "available: default" in str(err)


def test_persona_errors_name_the_persona_file(tmp_path: Path) -> None:
    err = error_for(tmp_path, "", persona=PERSONA.replace("Europe/Madrid", "Mars/Olympus"))
    assert err.file.endswith("default.toml") and err.key == "timezone"
    assert "unknown time zone 'Mars/Olympus'" in str(err)


def test_persona_skill_section_must_be_a_table(tmp_path: Path) -> None:
    err = error_for(tmp_path, "", persona='name = "x"\nskills = ["system"]\n')
    assert err.file.endswith("default.toml") and err.key == "skills"


def test_persona_i18n_unknown_key(tmp_path: Path) -> None:
    err = error_for(tmp_path, "", persona=PERSONA + '[i18n.es]\ninstructons = "x"\n')
    assert err.key == "i18n.es.instructons" and "unknown key" in str(err)


def test_persona_language_overrides() -> None:
    persona = load_persona(ROOT / "config" / "personas" / "default.toml")
    assert persona.tool_description("get_volume", "x") == "x"  # English persona: defaults
    spanish = dataclasses.replace(persona, language="es")
    assert spanish.tool_description("get_volume", "x").startswith("Obtén el volumen")
    assert spanish.effective_instructions.strip().startswith("Eres Huxley")


def check_config(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "huxleyd", "--check-config", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )


RUNNABLE = f"""
[daemon]
sounds_dir = "{ROOT / "sounds"}"
[control]
socket_path = "control.sock"
"""


def test_check_config_exit_codes(tmp_path: Path) -> None:
    good = check_config(write_config(tmp_path, RUNNABLE))
    assert good.returncode == 0, good.stderr
    assert good.stdout.splitlines()[0].startswith(f"{tmp_path / 'huxleyd.toml'}: runs (")
    bad = check_config(write_config(tmp_path, "[audio]\nperiod_ms = 0\n"))
    assert bad.returncode == 78  # EX_CONFIG, as the start
    assert "audio.period_ms" in bad.stderr and "between 5 and 100" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1, "one clear line, no traceback"


def test_check_config_reports_a_missing_skill(tmp_path: Path) -> None:
    result = check_config(write_config(tmp_path, RUNNABLE, persona=PERSONA + "[skills.weather]\n"))
    # The start leaves the skill out and runs degraded; the check says so, exit 0.
    assert result.returncode == 0, result.stderr
    first, *rest = result.stdout.splitlines()
    assert ": runs degraded (" in first
    (line,) = [r for r in rest if r.startswith("  left out: skill:weather: ")]
    assert "skill 'weather' is not installed" in line
    assert "system" in line  # lists what is installed


BOARD_ONLY = '[hardware]\nboard = "respeaker-2mic"\n'


def test_board_profile_is_merged_at_load(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, BOARD_ONLY))
    assert config.board.name == "respeaker-2mic"
    assert config.audio.capture_device == "huxley_capture"
    assert config.audio.mixer_control == "Playback"
    assert (config.audio.input_channels, config.audio.device_rate_hz) == (2, 48000)


def test_a_key_the_admin_set_wins_over_the_board_even_when_it_is_the_default(
    tmp_path: Path,
) -> None:
    # "default" is a real ALSA device, not "unset": the admin chose it.
    body = BOARD_ONLY + '[audio]\ncapture_device = "default"\ninput_channels = 1\n'
    config = load_config(write_config(tmp_path, body))
    assert config.audio.capture_device == "default"
    assert config.audio.input_channels == 1
    assert config.audio.playback_device == "huxley_playback"  # not set: the board's


def test_unknown_board_fails_at_load_naming_the_config_file(tmp_path: Path) -> None:
    err = error_for(tmp_path, '[hardware]\nboard = "respeaker-4mic"\n')
    assert err.file.endswith("huxleyd.toml") and err.key == "hardware.board"
    assert "respeaker-2mic" in str(err)


def test_mic_channel_beyond_the_boards_channels(tmp_path: Path) -> None:
    err = error_for(tmp_path, "[audio]\nmic_channel = 1\n")  # gpio-basic: one channel
    assert err.key == "audio.mic_channel" and "input_channels = 1" in str(err)
