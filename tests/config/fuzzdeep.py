"""More generated configurations: inside skill tables, board profiles, sound
folders, special paths, non-finite numbers, look-alike letters and sizes.

Each generator here reads the code's own description of what it writes
(a skill's ``config_schema``, the board profile's pin keys, the shipped
earcons, every settings field), so what the code grows the cases grow with.
:func:`deep_cases` is added to :func:`tests.config.fuzzcases.cases`.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from huxleyd.audio.types import SHIPPED_EARCONS
from huxleyd.config.control_socket import MAX_SOCKET_PATH_BYTES
from huxleyd.config.load import _SECTIONS, MAX_INSTRUCTIONS_CHARS
from huxleyd.pcm import write_wav
from huxleyd.skillhost.loading import installed_skills
from tests.config.fuzzcases import PERSONA, Break, Case, board_with, set_key, write_base

SKILLS_FOR_TABLES = ("system", "timers", "memos", "radio", "audiobooks")
"""First-party skills whose tables are written into (brain's setup dials a model)."""

CYRILLIC = {"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у", "i": "і"}
"""A Latin letter and the Cyrillic letter drawn the same."""


def deep_cases() -> Iterator[Case]:
    yield from _skill_table_cases()
    yield from _board_cases()
    yield from _sound_cases()
    yield from _special_path_cases()
    yield from _non_finite_cases()
    yield from _confusable_cases()
    yield from _size_cases()


# ---------------------------------------------------------------- skill tables


def _persona_with(extra: str, *, base: str = PERSONA) -> Break:
    def apply(folder: Path) -> None:
        write_base(folder)
        (folder / "personas" / "default.toml").write_text(base + extra)

    return apply


def _json_values(prop: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, TOML text) against one JSON-schema property: wrong types, edges."""
    kind = prop.get("type")
    wrong = [("a table", "{ x = 1 }"), ("a list", "[1, 2]"), ("a bool", "true")]
    if kind == "string":
        return [("an int", "5"), ("empty", '""'), ("a NUL", '"a\\u0000b"'), *wrong]
    if kind in ("number", "integer"):
        values = [("a string", '"10"'), ("zero", "0"), ("negative", "-1"), *wrong]
        values += [("nan", "nan"), ("inf", "inf"), ("-inf", "-inf")]
        if kind == "integer":
            values.append(("a float", "1.5"))
        return values
    if kind == "object":
        return [("a string", '"x"'), ("a list", "[1]"), ("a value not a string", "{ a = 5 }")]
    return [("an int", "5"), *wrong]


def _skill_table_cases() -> Iterator[Case]:
    available = installed_skills()
    for skill in SKILLS_FOR_TABLES:
        cls = available[skill][0].entry_point.load()
        schema = getattr(cls, "config_schema", None) or {}
        for key, prop in (schema.get("properties") or {}).items():
            for label, text in _json_values(prop):
                yield Case(
                    "skill tables",
                    f"skills.{skill}.{key} {label}",
                    _persona_with(f"[skills.{skill}]\n{key} = {text}\n"),
                )
        yield Case(
            "skill tables",
            f"skills.{skill} unknown key",
            _persona_with(f"[skills.{skill}]\nno_such_key = 1\n"),
        )
        yield Case(
            "skill tables",
            f"skills.{skill} not a table",
            _persona_with(f"[skills]\n{skill} = 5\n", base='name = "Fuzz"\n'),
        )
        twin = skill.replace("o", CYRILLIC["o"], 1).replace("a", CYRILLIC["a"], 1)
        if twin != skill:
            yield Case(
                "skill tables",
                f"skills.{skill} with a look-alike letter",
                _persona_with(f'[skills."{twin}"]\n'),
            )
    yield Case("skill tables", "an unknown skill", _persona_with("[skills.weather]\n"))
    yield Case(
        "skill tables",
        "a skill twice through from",
        _persona_with('[skills.timers]\nfrom = "no-such-distribution"\n'),
    )


# ---------------------------------------------------------------- board profiles

LED_KEYS = {
    "led": ("pin",),
    "pwmled": ("pin",),
    "rgbled": ("red_pin", "green_pin", "blue_pin"),
    "apa102": ("clock_pin", "data_pin"),
}


def _board(button_pin: int, leds: str) -> Break:
    def apply(folder: Path) -> None:
        board = board_with(folder, button_pin=button_pin, leds=leds)
        write_base(folder, {"hardware": {"boards_dir": f'"{board.parent}"', "board": '"twice"'}})

    return apply


def _board_cases() -> Iterator[Case]:
    for kind, keys in LED_KEYS.items():
        pins = {key: 5 + i for i, key in enumerate(keys)}
        lines = [f'kind = "{kind}"', *(f"{k} = {v}" for k, v in pins.items())]
        yield Case("board profiles", f"{kind} valid", _board(17, "\n".join(lines)))
        for key in keys:  # each LED key on the button's pin, then on another LED key's
            same = {**pins, key: 17}
            text = "\n".join([f'kind = "{kind}"', *(f"{k} = {v}" for k, v in same.items())])
            yield Case("board profiles", f"{kind} {key} = button", _board(17, text))
            for other in keys:
                if other <= key:
                    continue
                twin = {**pins, other: pins[key]}
                text = "\n".join([f'kind = "{kind}"', *(f"{k} = {v}" for k, v in twin.items())])
                yield Case("board profiles", f"{kind} {key} = {other}", _board(17, text))
            for label, value in (("28", "28"), ("-1", "-1"), ("a string", '"17"'), ("nan", "nan")):
                bad = "\n".join(
                    [
                        f'kind = "{kind}"',
                        *(f"{k} = {value if k == key else v}" for k, v in pins.items()),
                    ]
                )
                yield Case("board profiles", f"{kind} {key} {label}", _board(17, bad))
    for pin in (28, 0, 27):
        yield Case("board profiles", f"button pin {pin}", _board(pin, 'kind = "none"'))
    yield Case("board profiles", "led kind unknown", _board(17, 'kind = "laser"'))
    yield Case(
        "board profiles",
        "rgbled missing blue",
        _board(17, 'kind = "rgbled"\nred_pin = 5\ngreen_pin = 6'),
    )


# ---------------------------------------------------------------- sound folders


def _sound(earcon: str, how: str) -> Break:
    def apply(folder: Path) -> None:
        write_base(folder)
        path = folder / "sounds" / f"{earcon}.wav"
        path.unlink()
        if how == "not a WAV":
            path.write_bytes(b"not a wav file")
        elif how == "empty":
            path.write_bytes(b"")
        elif how == "a directory":
            path.mkdir()
        elif how == "48 kHz":
            import numpy as np

            write_wav(path, np.zeros(480, dtype=np.int16), rate_hz=48000)
        elif how == "no samples":
            import numpy as np

            write_wav(path, np.zeros(0, dtype=np.int16))

    return apply


def _sound_cases() -> Iterator[Case]:
    for earcon in SHIPPED_EARCONS:
        for how in ("missing", "not a WAV", "empty", "a directory", "48 kHz", "no samples"):
            yield Case("sound folders", f"earcon {earcon} {how}", _sound(str(earcon), how))

    def all_gone(folder: Path) -> None:
        write_base(folder)
        for wav in (folder / "sounds").iterdir():
            wav.unlink()

    yield Case("sound folders", "every earcon missing", all_gone)


# ---------------------------------------------------------------- special paths


def _socket_of_length(size: int) -> Break:
    def apply(folder: Path) -> None:
        write_base(folder)
        base = str(folder / "run") + "/"
        name = "s" * max(1, size - len(base.encode()))
        write_base(folder, {"control": {"socket_path": f'"{base}{name}"'}})

    return apply


def _special_path_cases() -> Iterator[Case]:
    for size in (MAX_SOCKET_PATH_BYTES - 1, MAX_SOCKET_PATH_BYTES, MAX_SOCKET_PATH_BYTES + 1, 199):
        yield Case("special paths", f"socket_path of {size} bytes", _socket_of_length(size))
    for place in ("/proc", "/proc/huxleyd", "/proc/self", "/sys", "/sys/kernel", "/sys/x/y"):
        yield Case(
            "special paths", f"state_dir {place}", set_key("storage", "state_dir", f'"{place}"')
        )
    for table, key in (
        ("audio", "speaker_wav"),
        ("audio", "mic_wav"),
        ("provider", "key_file"),
        ("daemon", "sounds_dir"),
        ("daemon", "personas_dir"),
        ("hardware", "boards_dir"),
    ):
        for place in ("/dev/full", "/dev/null", "/proc/version"):
            yield Case("special paths", f"{table}.{key} {place}", set_key(table, key, f'"{place}"'))


# ---------------------------------------------------------------- numbers


def _non_finite_cases() -> Iterator[Case]:
    for section, cls in _SECTIONS.items():
        hints = typing.get_type_hints(cls)
        for fld in dataclasses.fields(cls):
            tp = hints[fld.name]
            if float not in (tp, *typing.get_args(tp)):
                continue
            for value in ("nan", "inf", "-inf"):
                yield Case(
                    "non-finite numbers",
                    f"{section}.{fld.name} {value}",
                    set_key(section, fld.name, value),
                )


# ---------------------------------------------------------------- look-alike letters


def _twin(name: str) -> str | None:
    for index, char in enumerate(name):
        if char in CYRILLIC:
            return name[:index] + CYRILLIC[char] + name[index + 1 :]
    return None


def _raw_line(section: str, line: str) -> Break:
    def apply(folder: Path) -> None:
        path = write_base(folder)
        text = path.read_text()
        header = f"[{section}]\n"
        path.write_text(
            text.replace(header, header + line + "\n")
            if header in text
            else text + header + line + "\n"
        )

    return apply


def _confusable_cases() -> Iterator[Case]:
    for section, cls in _SECTIONS.items():
        twin_section = _twin(section)
        if twin_section is not None:
            yield Case(
                "look-alike letters", f"section [{twin_section}]", _raw_line(twin_section, "")
            )
        hints = typing.get_type_hints(cls)
        for fld in dataclasses.fields(cls):
            twin = _twin(fld.name)
            if twin is None:
                continue
            yield Case(
                "look-alike letters", f"{section}.{twin} bare", _raw_line(section, f"{twin} = 1")
            )
            yield Case(
                "look-alike letters",
                f"{section}.{twin} quoted",
                _raw_line(section, f'"{twin}" = 1'),
            )
            tp = hints[fld.name]
            if typing.get_origin(tp) is typing.Literal:
                for choice in typing.get_args(tp):
                    odd = _twin(str(choice))
                    if odd is not None:
                        yield Case(
                            "look-alike letters",
                            f"{section}.{fld.name} = {odd}",
                            set_key(section, fld.name, f'"{odd}"'),
                        )
    for key in ("language", "timezone", "instructions", "voice", "data_dir"):
        twin = _twin(key)
        if twin is not None:
            yield Case("look-alike letters", f"persona {twin}", _persona_first(f'"{twin}" = "x"'))


def _persona_first(line: str) -> Break:
    def apply(folder: Path) -> None:
        write_base(folder)
        (folder / "personas" / "default.toml").write_text(f"{line}\n{PERSONA}")

    return apply


# ---------------------------------------------------------------- sizes


def _size_cases() -> Iterator[Case]:
    for label, size in (
        ("at the limit", MAX_INSTRUCTIONS_CHARS),
        ("past the limit", MAX_INSTRUCTIONS_CHARS + 1),
        ("4 MB", 4_000_000),
    ):
        text = "x" * size
        yield Case("sizes", f"instructions {label}", _persona_first(f'instructions = "{text}"'))
        yield Case(
            "sizes",
            f"i18n instructions {label}",
            _persona_with(f'[i18n.en]\ninstructions = "{text}"\n'),
        )
    yield Case(
        "sizes",
        "a persona name of 10,000 characters",
        _persona_with("[skills.system]\n", base=f'name = "{"n" * 10_000}"\n'),
    )
    yield Case(
        "sizes",
        "a skill table of 5,000 stations",
        _persona_with(
            "[skills.radio.stations]\n"
            + "".join(f's{i} = "http://127.0.0.1:9/{i}"\n' for i in range(5000))
        ),
    )
