"""config/huxleyd.toml documents every setting, so it can never drift from the code."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

from huxleyd.config.load import _SECTIONS

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "config" / "huxleyd.toml"


def documented_keys(text: str) -> dict[str, set[str]]:
    """Keys per section, whether set or commented out (``# key = value``)."""
    keys: dict[str, set[str]] = {}
    section = ""
    for line in text.splitlines():
        header = re.match(r"^\s*#?\s*\[([a-z_.]+)\]\s*$", line)
        if header:
            section = header.group(1)
            keys.setdefault(section, set())
            continue
        setting = re.match(r"^\s*#?\s*([a-z_]+)\s*=", line)
        if setting and section:
            keys[section].add(setting.group(1))
    return keys


def test_every_setting_is_documented_in_the_shipped_config() -> None:
    keys = documented_keys(SHIPPED.read_text())
    missing = []
    for section, cls in _SECTIONS.items():
        for field in dataclasses.fields(cls):
            if field.name in ("led_limits", "cascade"):
                continue  # a sub-table: its own [section.name] header, checked below
            if field.name not in keys.get(section, set()):
                missing.append(f"[{section}] {field.name}")
    assert missing == [], f"document these in {SHIPPED.name}: {missing}"


def test_sub_tables_are_documented_too() -> None:
    from huxleyd.hardware.settings import LedLimits
    from huxleyd.providers.cascade.settings import CascadeSettings

    keys = documented_keys(SHIPPED.read_text())
    for section, cls in (("hardware.led_limits", LedLimits), ("provider.cascade", CascadeSettings)):
        missing = [
            f.name for f in dataclasses.fields(cls) if f.name not in keys.get(section, set())
        ]
        assert missing == [], f"document these under [{section}]: {missing}"


def test_the_shipped_config_parses_with_its_comments_uncommented_defaults() -> None:
    # The values shown are the defaults: parsing the file must give a valid config.
    tomllib.loads(SHIPPED.read_text())


def test_every_value_the_shipped_config_shows_is_the_codes_default() -> None:
    # "Every key is optional; the value shown is the default": each value set in
    # the file, read as the daemon reads it, equals what the code uses without it.
    from huxleyd.config.load import resolve_paths
    from huxleyd.schema import build

    table = tomllib.loads(SHIPPED.read_text())
    base = Path("/etc/huxleyd")
    wrong = []
    for section, cls in _SECTIONS.items():
        raw = table.get(section, {})
        default = resolve_paths(build(cls, {}, file=str(SHIPPED), prefix=section), base)
        shown = resolve_paths(build(cls, raw, file=str(SHIPPED), prefix=section), base)
        for field in dataclasses.fields(cls):
            if field.name in raw and getattr(shown, field.name) != getattr(default, field.name):
                wrong.append(
                    f"[{section}] {field.name}: shown {getattr(shown, field.name)!r}, "
                    f"code {getattr(default, field.name)!r}"
                )
    assert wrong == []
