"""A persona's time zone follows the machine; a language without its text is an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from huxleyd.config.load import load_persona
from huxleyd.config.persona_defaults import system_timezone
from huxleyd.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_system_timezone_reads_tz_then_localtime_then_timezone_file(tmp_path: Path) -> None:
    link = tmp_path / "localtime"
    link.symlink_to("/usr/share/zoneinfo/America/Lima")
    plain = tmp_path / "timezone"
    plain.write_text("Asia/Tokyo\n")
    missing = tmp_path / "nothing"
    assert system_timezone(env={"TZ": ":Europe/Madrid"}, localtime=link) == "Europe/Madrid"
    assert system_timezone(env={}, localtime=link, timezone_file=plain) == "America/Lima"
    assert system_timezone(env={}, localtime=missing, timezone_file=plain) == "Asia/Tokyo"
    assert (
        system_timezone(env={"TZ": "Nowhere/Bogus"}, localtime=missing, timezone_file=missing)
        == "UTC"
    )


def test_the_shipped_persona_follows_the_system_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Pacific/Auckland")
    persona = load_persona(ROOT / "config" / "personas" / "default.toml")
    assert persona.timezone == "Pacific/Auckland"


def test_an_explicit_zone_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Pacific/Auckland")
    path = tmp_path / "p.toml"
    path.write_text('name = "P"\ntimezone = "Europe/Madrid"\n')
    assert load_persona(path).timezone == "Europe/Madrid"


def test_a_language_without_its_text_is_an_error_naming_the_key(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('name = "P"\nlanguage = "fr"\n[i18n.es]\ninstructions = "Hola"\n')
    with pytest.raises(ConfigError) as error:
        load_persona(path)
    message = str(error.value)
    assert str(path) in message and "language" in message
    assert "[i18n.fr]" in message and "en, es" in message


def test_a_language_with_its_text_or_a_one_language_persona_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('name = "P"\nlanguage = "es"\n[i18n.es]\ninstructions = "Hola"\n')
    assert load_persona(path).effective_instructions == "Hola"
    path.write_text('name = "P"\nlanguage = "de"\ninstructions = "Sei kurz."\n')
    assert load_persona(path).language == "de"
