"""``[wake]`` and the persona's ``wake_word``: checked by the path ``--check-config``
and the start share, each error one line naming the file, the key and what was expected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from huxleyd.config.load import load_config
from tests.config.test_check_config import PERSONA, check, fails, write


def test_a_bundled_model_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, '[wake]\nmodel = "okay_nabu"\n')
    rc, line = check(path, capsys)
    assert rc == 0, line
    assert load_config(path).wake.model == "okay_nabu"


def test_the_default_is_off(tmp_path: Path) -> None:
    assert not load_config(write(tmp_path)).wake.enabled


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ('model = "okay nabu"', "expected one of okay_nabu, hey_jarvis, alexa, hey_mycroft"),
        ('model = "missing.json"', "expected a readable model JSON"),
        ('model = "bad.json"', "expected JSON in"),
        ('model = "shapeless.json"', "expected a 'model' name and a 'micro' table"),
        ('model = "lonely.json"', "expected 'lonely.tflite' beside"),
    ],
    ids=["unknown-name", "missing-file", "not-json", "not-a-model", "no-tflite"],
)
def test_a_bad_model_is_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, says: str
) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "shapeless.json").write_text("[]")
    micro = {"probability_cutoff": 0.9, "sliding_window_size": 5}
    (tmp_path / "lonely.json").write_text(json.dumps({"model": "lonely.tflite", "micro": micro}))
    path = write(tmp_path, f"[wake]\n{table}\n")
    line = fails(path, capsys, path, "wake.model")
    assert says in line


def test_a_model_path_is_relative_to_the_config(tmp_path: Path) -> None:
    micro = {"probability_cutoff": 0.9, "sliding_window_size": 5}
    (tmp_path / "mine.json").write_text(json.dumps({"model": "mine.tflite", "micro": micro}))
    (tmp_path / "mine.tflite").write_bytes(b"")
    config = load_config(write(tmp_path, '[wake]\nmodel = "mine.json"\n'))
    assert config.wake.model == str(tmp_path / "mine.json")


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ('model = "okay_nabu"\nduring_playback = "yes"', "wake.during_playback"),
        ('model = "okay_nabu"\nmax_turn_s = 0.5', "wake.max_turn_s"),
    ],
)
def test_bad_values_name_their_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, key: str
) -> None:
    path = write(tmp_path, f"[wake]\n{table}\n")
    fails(path, capsys, path, key)


def test_the_persona_can_turn_the_wake_word_off(tmp_path: Path) -> None:
    path = write(tmp_path, '[wake]\nmodel = "okay_nabu"\n', persona="wake_word = false\n" + PERSONA)
    assert load_config(path).persona.wake_word is False


def test_a_persona_wake_word_that_is_not_a_bool_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, persona=PERSONA.replace("[skills", 'wake_word = "no"\n[skills', 1))
    rc, line = check(path, capsys)
    assert rc != 0 and "wake_word" in line and "true or false" in line, line
