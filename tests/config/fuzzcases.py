"""Generated configurations for the differential test: ``--check-config`` versus the start.

:func:`cases` builds every case from the code's own settings classes (each
key of each table, with its type and bounds) and from the list of paths
the daemon reads, so a new setting or a new file is covered without an
edit here. A case is a category, a name and a function that breaks one
thing in a valid configuration folder made by :func:`write_base`.

:func:`verdicts` runs one case both ways in this process: ``huxleyd
--check-config`` (its exit status) and the real start (``huxleyd`` up to
READY on the WAV backend and the built-in simulator, then stopped as by
SIGTERM). Both go through :func:`huxleyd.app.main.main`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import getpass
import logging
import logging.handlers
import os
import re
import shutil
import sys
import tempfile
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from huxleyd.app.main import main
from huxleyd.app.parts import Overrides
from huxleyd.app.systemd import Notifier
from huxleyd.config.load import _SECTIONS, Persona

ROOT = Path(__file__).resolve().parents[2]

Break = Callable[[Path], None]
"""Changes one thing in a configuration folder (``huxleyd.toml`` is in it)."""


@dataclass(frozen=True, slots=True)
class Case:
    category: str
    name: str
    apply: Break


# ---------------------------------------------------------------- the base


BASE_TABLES: dict[str, dict[str, str]] = {
    "daemon": {"sounds_dir": '"sounds"', "personas_dir": '"personas"'},
    "storage": {"state_dir": '"state"'},
    # A key file makes the start dial the provider: loopback only, and refused.
    "provider": {"kind": '"openai"', "url": '"ws://127.0.0.1:9/v1/realtime"'},
    "audio": {"backend": '"wav"', "wav_speed": "50.0"},
    "hardware": {"boards_dir": f'"{ROOT / "hw"}"', "pin_factory": '"mock"'},
    "control": {"socket_path": '"run/control.sock"', "socket_group": '""'},
}
PERSONA = 'name = "Fuzz"\ntimezone = "Europe/Madrid"\n[skills.system]\n'


def write_base(folder: Path, tables: dict[str, dict[str, str]] | None = None) -> Path:
    """A configuration that starts (WAV backend, simulator, mock pins) in ``folder``."""
    (folder / "personas").mkdir(exist_ok=True)
    (folder / "personas" / "default.toml").write_text(PERSONA)
    if not (folder / "sounds").exists():
        shutil.copytree(ROOT / "sounds", folder / "sounds")
    (folder / "run").mkdir(exist_ok=True)
    merged = {name: dict(lines) for name, lines in BASE_TABLES.items()}
    merged["daemon"]["service_user"] = f'"{getpass.getuser()}"'
    for name, lines in (tables or {}).items():
        merged.setdefault(name, {}).update(lines)
    path = folder / "huxleyd.toml"
    path.write_text(_toml(merged))
    return path


def _toml(tables: dict[str, dict[str, str]]) -> str:
    out = []
    for name, lines in tables.items():
        out.append(f"[{name}]")
        out.extend(f"{key} = {value}" for key, value in lines.items() if value is not None)
    return "\n".join(out) + "\n"


def board_with(folder: Path, *, button_pin: int, leds: str, name: str = "twice") -> Path:
    """A board profile ``<folder>/boards/<name>.toml`` with the button on
    ``button_pin`` and ``leds`` (TOML lines of its ``[leds]`` table)."""
    boards = folder / "boards"
    boards.mkdir(exist_ok=True)
    path = boards / f"{name}.toml"
    path.write_text(f'description = "fuzz"\n[button]\npin = {button_pin}\n[leds]\n{leds}\n')
    return path


def set_key(table: str, key: str, value: str) -> Break:
    """Rewrite ``huxleyd.toml`` with ``[table] key = value`` (TOML text)."""

    def apply(folder: Path) -> None:
        write_base(folder, {table: {key: value}})

    return apply


# ---------------------------------------------------------------- values


def _values_for(tp: Any, meta: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, TOML text) for one field: the wrong type, out of range, edges."""
    origin = typing.get_origin(tp)
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)) and args:
        tp, origin = args[0], typing.get_origin(args[0])
    wrong = [("a table", "{ x = 1 }"), ("a list", "[1, 2]")]
    if origin is typing.Literal:
        return [("not a choice", '"nope"'), ("an int", "3"), *wrong]
    if tp is bool:
        return [("a string", '"yes"'), ("an int", "1"), *wrong]
    if tp in (int, float):
        lo, hi = meta.get("min"), meta.get("max")
        values = [("a string", '"10"'), ("a bool", "true"), *wrong]
        if tp is int:
            values.append(("a float", "1.5"))
        for label, bound in (("min", lo), ("max", hi)):
            if bound is None:
                continue
            step = 1 if tp is int else 0.001
            edge = int(bound) if tp is int else float(bound)
            out = edge - step if label == "min" else edge + step
            values += [(f"the {label}", _num(edge)), (f"past the {label}", _num(out))]
        if lo is None and hi is None:
            values.append(("negative", "-1"))
        return values
    if tp is Path:
        return [("an int", "5"), ("empty", '""'), ("a NUL", '"a\\u0000b"'), *wrong]
    if tp is str:
        return [("an int", "5"), ("empty", '""'), ("a NUL", '"a\\u0000b"'), *wrong]
    return [("an int", "5"), *wrong]


def _num(value: float) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def _settings_cases() -> Iterator[Case]:
    hints_of: dict[type[Any], dict[str, Any]] = {}
    for section, cls in _SECTIONS.items():
        hints = hints_of.setdefault(cls, typing.get_type_hints(cls))
        for fld in dataclasses.fields(cls):
            if dataclasses.is_dataclass(hints[fld.name]):
                sub = hints[fld.name]
                sub_hints = typing.get_type_hints(sub)
                for inner in dataclasses.fields(sub):
                    for label, text in _values_for(sub_hints[inner.name], dict(inner.metadata)):
                        yield Case(
                            f"[{section}.{fld.name}] values",
                            f"{section}.{fld.name}.{inner.name} {label}",
                            _sub_key(section, fld.name, inner.name, text),
                        )
                continue
            for label, text in _values_for(hints[fld.name], dict(fld.metadata)):
                yield Case(
                    f"[{section}] values",
                    f"{section}.{fld.name} {label}",
                    set_key(section, fld.name, text),
                )


def _sub_key(section: str, table: str, key: str, text: str) -> Break:
    def apply(folder: Path) -> None:
        path = write_base(folder)
        path.write_text(path.read_text() + f"[{section}.{table}]\n{key} = {text}\n")

    return apply


def _persona_cases() -> Iterator[Case]:
    hints = typing.get_type_hints(Persona)
    for fld in dataclasses.fields(Persona):
        for label, text in _values_for(hints[fld.name], dict(fld.metadata)):
            yield Case(
                "persona values", f"persona {fld.name} {label}", _persona_key(fld.name, text)
            )


def _persona_key(key: str, text: str) -> Break:
    def apply(folder: Path) -> None:
        write_base(folder)
        body = "\n".join(line for line in PERSONA.splitlines() if not line.startswith(f"{key} ="))
        head, _, skills = body.partition("[skills.system]")
        (folder / "personas" / "default.toml").write_text(
            f"{head}{key} = {text}\n[skills.system]{skills}\n"
        )

    return apply


# ---------------------------------------------------------------- paths


def _file_breaks(kind: str) -> list[tuple[str, Callable[[Path], None]]]:
    """What a path the daemon reads can be instead of what it expects."""

    def loop(p: Path) -> None:
        p.parent.mkdir(parents=True, exist_ok=True)
        other = p.with_name(p.name + ".loop")
        p.symlink_to(other)
        other.symlink_to(p)

    def mkdir(p: Path) -> None:
        p.mkdir(parents=True)

    def dangling(p: Path) -> None:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.symlink_to(p.with_name("nowhere"))

    def write(data: bytes) -> Callable[[Path], None]:
        def make(p: Path) -> None:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)

        return make

    breaks: list[tuple[str, Callable[[Path], None]]] = [
        ("missing", lambda p: None),
        ("a symlink loop", loop),
        ("a dangling symlink", dangling),
        ("under a regular file", lambda p: None),
    ]
    if kind == "dir":
        breaks += [("a regular file", write(b"x")), ("empty", mkdir)]
    else:
        breaks += [
            ("a directory", mkdir),
            ("empty", write(b"")),
            ("non-UTF-8", write(b"\xff\xfe\x00bad")),
            ("with a BOM", write(b"\xef\xbb\xbfx = 1\n")),
            ("CRLF", write(b"x = 1\r\ny = 2\r\n")),
            ("huge", write(b"#" * (4 << 20))),
        ]
    return breaks


PATHS: list[tuple[str, str, str, str]] = [
    # (table, key, kind, where the case puts it)
    ("daemon", "sounds_dir", "dir", "sounds2"),
    ("daemon", "personas_dir", "dir", "personas2"),
    ("storage", "state_dir", "dir", "state2"),
    ("control", "socket_path", "socket", "run2/control.sock"),
    ("provider", "key_file", "file", "keys/openai.key"),
    ("audio", "mic_wav", "file", "audio/mic.wav"),
    ("audio", "speaker_wav", "file", "audio/out/speaker.wav"),
    ("hardware", "boards_dir", "dir", "boards"),
]


def _path_cases() -> Iterator[Case]:
    for table, key, kind, where in PATHS:
        for label, make in _file_breaks("dir" if kind == "dir" else "file"):
            if kind == "socket" and label in ("non-UTF-8", "with a BOM", "CRLF", "huge"):
                label = "a regular file" if label == "CRLF" else label
            yield Case(
                f"paths: {table}.{key}",
                f"{table}.{key} {label}",
                _path(table, key, where, label, make),
            )
    for label, make in _file_breaks("file"):
        if label in ("missing", "under a regular file"):
            continue
        yield Case("paths: the persona file", f"persona file {label}", _persona_file(make))
        yield Case("paths: the config file", f"huxleyd.toml {label}", _config_file(make))


def _path(table: str, key: str, where: str, label: str, make: Callable[[Path], None]) -> Break:
    def apply(folder: Path) -> None:
        target = folder / where
        if label == "under a regular file":
            blocker = folder / Path(where).parts[0]
            blocker.write_text("a file where a folder should be")
        else:
            make(target)
        write_base(folder, {table: {key: f'"{target}"'}})

    return apply


def _persona_file(make: Callable[[Path], None]) -> Break:
    def apply(folder: Path) -> None:
        write_base(folder)
        persona = folder / "personas" / "default.toml"
        persona.unlink()
        make(persona)

    return apply


def _config_file(make: Callable[[Path], None]) -> Break:
    def apply(folder: Path) -> None:
        path = write_base(folder)
        path.unlink()
        make(path)

    return apply


def _known_cases() -> Iterator[Case]:
    """The configurations a new user tried (the issue's table), by name."""
    yield Case("reported", "wav_rate_hz 11025", set_key("audio", "wav_rate_hz", "11025"))
    yield Case("reported", "pin_factory bogus", set_key("hardware", "pin_factory", '"bogus"'))
    yield Case("reported", "state_dir /proc/x", set_key("storage", "state_dir", '"/proc/x"'))

    def empty_sounds(folder: Path) -> None:
        write_base(folder)
        for wav in (folder / "sounds").iterdir():
            wav.unlink()

    yield Case("reported", "sounds_dir empty", empty_sounds)

    def socket_is_file(folder: Path) -> None:
        write_base(folder)
        (folder / "run" / "control.sock").write_text("not a socket")

    yield Case("reported", "socket_path a regular file", socket_is_file)


def cases() -> list[Case]:
    """Every generated case, in a stable order, each name once."""
    from tests.config.fuzzdeep import deep_cases  # it builds on this module's helpers

    every = [
        base_case(),
        *_known_cases(),
        *_settings_cases(),
        *_persona_cases(),
        *_path_cases(),
        *deep_cases(),
    ]
    return list({case.name: case for case in reversed(every)}.values())[::-1]


def base_case() -> Case:
    return Case("base", "the valid base", lambda folder: None)


# ---------------------------------------------------------------- verdicts


class _ReadyStops(Notifier):
    """Sets ``stop`` at READY, as an admin's SIGTERM would; gives up after ``limit_s``."""

    def __init__(self, stop: asyncio.Event, limit_s: float) -> None:
        super().__init__({})
        self._stop = stop
        self._limit_s = limit_s
        self.ready_seen = False
        self.timed_out = False
        self._armed = False

    def status(self, text: str) -> bool:
        if not self._armed:
            self._armed = True
            asyncio.get_running_loop().call_later(self._limit_s, self._give_up)
        return False

    def _give_up(self) -> None:
        if not self.ready_seen:
            self.timed_out = True
            self._stop.set()

    def ready(self, status: str | None = None) -> bool:
        self.ready_seen = True
        self._stop.set()
        return False


@dataclass(frozen=True, slots=True)
class Verdict:
    check: int
    start: int
    start_ready: bool
    start_timed_out: bool


def verdicts(folder: Path, *, limit_s: float = 60.0) -> Verdict:
    """``--check-config``'s exit status and the start's, for the config in ``folder``."""
    config = str(folder / "huxleyd.toml")
    check = main(["--check-config", "--config", config])
    stop = asyncio.Event()
    notifier = _ReadyStops(stop, limit_s)
    env = {k: v for k, v in os.environ.items() if k != "CREDENTIALS_DIRECTORY"}
    handlers = list(logging.getLogger().handlers)
    try:
        start = main(
            ["--config", config], overrides=Overrides(notifier=notifier, env=env), stop=stop
        )
    finally:
        for handler in logging.getLogger().handlers:
            if handler not in handlers:  # the start's log file in the case's folder
                logging.getLogger().removeHandler(handler)
                handler.close()
    return Verdict(check, start, notifier.ready_seen, notifier.timed_out)


# ---------------------------------------------------------------- make config-fuzz


def run_all(selected: list[Case], scratch: Path) -> int:
    """Every case both ways; a table of categories, counts and agreements. 1 on any
    disagreement or traceback."""
    import tempfile

    rows: dict[str, list[int]] = {}
    failures: list[str] = []
    for case in selected:
        with tempfile.TemporaryDirectory(dir=scratch) as tmp:
            folder = Path(tmp)
            with captured_output() as output:
                case.apply(folder)
                verdict = verdicts(folder)
            problem = disagreement(verdict, "".join(output))
        row = rows.setdefault(case.category, [0, 0])
        row[0] += 1
        if problem is None:
            row[1] += 1
        else:
            failures.append(f"{case.name}: {problem}")
    width = max(len(c) for c in rows)
    print(f"{'category'.ljust(width)}  cases  agree")
    for category, (count, agree) in rows.items():
        print(f"{category.ljust(width)}  {count:5d}  {agree:5d}")
    total = sum(r[0] for r in rows.values())
    agreed = sum(r[1] for r in rows.values())
    print(f"{'all'.ljust(width)}  {total:5d}  {agreed:5d}")
    for line in failures:
        print(f"DISAGREE {line}")
    return 1 if failures else 0


@contextlib.contextmanager
def captured_output() -> Iterator[list[str]]:
    """Everything written to fd 1 and 2 meanwhile (log handlers hold the real
    stderr, so only the file descriptors see all of it), in the list it yields."""
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as sink:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = [os.dup(1), os.dup(2)]
        text: list[str] = []
        try:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            yield text
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            sink.seek(0)
            text.append(sink.read())


def disagreement(verdict: Verdict, output: str) -> str | None:
    """What is wrong with one case's two verdicts (None: they agree, cleanly).

    Beyond the exit statuses: each part ``--check-config`` says is left out
    (``  left out: PART: why``) is in the start's degraded record with those
    words (``part_degraded part=PART problem="why…"``), and the start leaves
    out nothing the check did not announce (but ``wake``, found only when the
    detector loads)."""
    if "Traceback" in output:
        return "a traceback: " + output.strip().splitlines()[-1][:200]
    if verdict.check not in (0, 78):
        return f"--check-config exited {verdict.check}: {output.strip()[:200]}"
    if verdict.start_timed_out:
        return "the start neither reached READY nor failed"
    started = 0 if verdict.start_ready and verdict.start == 0 else verdict.start
    if started != verdict.check:
        return f"--check-config {verdict.check}, start {verdict.start}: {output.strip()[-300:]}"
    if verdict.check == 0:
        return _degraded_disagreement(output)
    return None


_LEFT_OUT = re.compile(r"^  left out: ((?:skill:)?[^:\s]+): (.*)$", re.M)
_RECORDED = re.compile(r'part_degraded part=(\S+) problem="((?:[^"\\]|\\.)*)"')


def _degraded_disagreement(output: str) -> str | None:
    said = dict(_LEFT_OUT.findall(output))
    recorded = {part: what.replace('\\"', '"') for part, what in _RECORDED.findall(output)}
    for part, what in said.items():
        if part not in recorded:
            return f"--check-config left out {part}, the start did not: {what[:200]}"
        if not recorded[part].startswith(what):
            return f"{part}: the check says {what[:150]!r}, the start {recorded[part][:150]!r}"
    unsaid = sorted(set(recorded) - set(said) - {"wake"})
    if unsaid:
        return (
            f"the start left out {unsaid}, --check-config said it runs: {recorded[unsaid[0]][:200]}"
        )
    return None


if __name__ == "__main__":
    everything = cases()
    chosen = [
        c
        for c in everything
        if not sys.argv[1:] or any(a in f"{c.category} {c.name}" for a in sys.argv[1:])
    ]
    with tempfile.TemporaryDirectory(prefix="huxleyd-config-fuzz-") as scratch:
        raise SystemExit(run_all(chosen, Path(scratch)))
