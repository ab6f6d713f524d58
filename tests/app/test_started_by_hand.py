"""What ``make run`` prints once the daemon is up: how to drive it, where its
log and speaker file are, and how to stop it."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from huxleyd.app.firstrun import next_steps
from huxleyd.config.load import Config, load_config
from huxleyd.logs import LOG_FILE_NAME
from tests.config.test_check_config import write


def config(tmp_path: Path) -> Config:
    path = write(tmp_path, extra='[audio]\nbackend = "wav"\nspeaker_wav = "out/speaker.wav"\n')
    return load_config(path)


def test_the_commands_carry_the_config_given_quoted(tmp_path: Path) -> None:
    odd = tmp_path / "my configs"
    odd.mkdir()
    cfg = config(odd)
    text = next_steps(cfg.path, cfg, simulator=True, audio="wav (speaker.wav)")
    ctl = f"--config {shlex.quote(str(cfg.path))}"
    for command in ("watch", 'say "what time is it"', "ptt tap", "status"):
        assert any(ctl + " " + command in line for line in text.splitlines()), (command, text)
    assert "the built-in simulator (scripted answers, not an AI)" in text
    assert "talking to the provider" in next_steps(cfg.path, cfg, simulator=False, audio="alsa")


def test_paths_below_the_working_directory_are_shown_relative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = config(tmp_path)
    monkeypatch.chdir(tmp_path)
    lines = next_steps(Path("huxleyd.toml"), cfg, simulator=True, audio="wav").splitlines()
    assert f"Logs: here, and state/{LOG_FILE_NAME} (" in "\n".join(lines)
    assert "Speaker: out/speaker.wav (a valid WAV while it grows: aplay it)" in lines


def test_no_speaker_line_when_the_sound_goes_to_a_card(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    text = next_steps(cfg.path, cfg, simulator=True, audio="alsa default")
    assert "Speaker:" not in text


def test_how_to_stop_follows_the_terminal(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    last = next_steps(cfg.path, cfg, simulator=True, audio="wav").splitlines()[-1]
    # pytest's stdin is not a terminal (unless run with -s at a prompt)
    assert last == ("Stop: Ctrl-C" if os.isatty(0) else f"Stop: kill {os.getpid()}")
