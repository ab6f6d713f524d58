"""What a persona file may leave out, and what it must not get wrong silently.

Pure functions over the persona's TOML table, called by
:func:`huxleyd.config.load.load_persona` before the table is built:

- :func:`system_timezone`: a persona without ``timezone`` follows the
  machine's zone (``TZ``, then ``/etc/localtime``, then ``/etc/timezone``),
  so a kitchen in Madrid does not hear London's time.
- :func:`check_language`: a multilingual persona (one with ``[i18n.*]``
  tables) whose ``language`` has no table would speak its top-level
  (English) text without a word; that is an error naming the key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from huxleyd.errors import ConfigError

BASE_LANGUAGE = "en"
"""The language of a persona's top-level text (``instructions``, tool descriptions)."""

_ZONEINFO_MARK = "zoneinfo/"


def _valid_zone(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def system_timezone(
    *,
    env: Mapping[str, str] | None = None,
    localtime: Path = Path("/etc/localtime"),
    timezone_file: Path = Path("/etc/timezone"),
) -> str:
    """The machine's IANA zone name, or ``"UTC"`` when it cannot be told."""
    environment = os.environ if env is None else env
    tz = environment.get("TZ", "").lstrip(":")
    if tz and _valid_zone(tz):
        return tz
    try:
        target = os.readlink(localtime)
    except OSError:
        target = ""
    if _ZONEINFO_MARK in target:
        name = target.split(_ZONEINFO_MARK, 1)[1]
        if _valid_zone(name):
            return name
    try:
        name = timezone_file.read_text(encoding="utf-8").strip()
    except OSError:
        name = ""
    return name if name and _valid_zone(name) else "UTC"


def with_defaults(table: Mapping[str, Any], **system: Any) -> dict[str, Any]:
    """``table`` with what the persona left to the machine filled in."""
    out = dict(table)
    if "timezone" not in out:
        out["timezone"] = system_timezone(**system)
    return out


def check_language(table: Mapping[str, Any], *, file: str) -> None:
    """Raise :class:`ConfigError` if ``language`` has no text in a multilingual persona."""
    language = table.get("language", BASE_LANGUAGE)
    i18n = table.get("i18n", {})
    if not isinstance(language, str) or not isinstance(i18n, dict) or not i18n:
        return  # a type error is build()'s to report; one language needs no table
    if language == BASE_LANGUAGE or language in i18n:
        return
    known = ", ".join(sorted({BASE_LANGUAGE, *i18n}))
    raise ConfigError(
        file,
        "language",
        f"{language!r} has no [i18n.{language}] table, so the assistant would speak "
        f"the top-level English text; add [i18n.{language}] (instructions, strings) "
        f"or set language to one of: {known}",
    )
