"""``huxleyd --check-config`` is everything the start does short of devices and network.

Each broken configuration an admin reported as "ok" fails here with rc 1 and
one line naming the file, the key and what was expected.
"""

from __future__ import annotations

import getpass
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from huxleyd.app.main import EX_CONFIG, main

ROOT = Path(__file__).resolve().parents[2]

PERSONA = """
name = "Test"
timezone = "Europe/Madrid"
[skills.system]
[skills.memos]
max_seconds = 60
[skills.radio.stations]
jazz = "https://example.org/jazz.mp3"
"""


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory every user may enter (pytest's own is private to its user)."""
    path = Path(tempfile.mkdtemp(prefix="huxleyd-check-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def write(
    tmp_path: Path,
    extra: str = "",
    persona: str = PERSONA,
    service_user: str = getpass.getuser(),
    **sections: str,
) -> Path:
    """A valid config in ``tmp_path``; ``sections`` adds lines to a table, ``extra`` whole tables.

    ``service_user`` defaults to whoever runs the tests, so only the tests
    about another reader see one.
    """
    (tmp_path / "personas").mkdir(exist_ok=True)
    (tmp_path / "personas" / "default.toml").write_text(persona)
    provider = sections.pop("provider", "")
    tables = {
        "daemon": f'sounds_dir = "{ROOT / "sounds"}"\nservice_user = "{service_user}"',
        "storage": 'state_dir = "state"',
        "provider": provider if "kind" in provider else f'kind = "openai"\n{provider}',
        "hardware": f'boards_dir = "{ROOT / "hw"}"',
        "control": 'socket_path = "control.sock"\nsocket_group = ""',
    }
    body = "".join(
        f"[{name}]\n{lines}\n{sections.get(name, '')}\n" for name, lines in tables.items()
    )
    path = tmp_path / "huxleyd.toml"
    path.write_text(body + extra)
    return path


def check(path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    rc = main(["--check-config", "--config", str(path), *args])
    captured = capsys.readouterr()
    return rc, (captured.err or captured.out).strip()


def fails(path: Path, capsys: pytest.CaptureFixture[str], file: Path, key: str, *args: str) -> str:
    rc, line = check(path, capsys, *args)
    assert rc == EX_CONFIG, line
    assert "\n" not in line, "one line"
    assert line.startswith(f"huxleyd: {file}: {key}: expected"), line
    return line


def test_a_good_config_says_ok_and_what_it_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, line = check(write(tmp_path), capsys)
    assert rc == 0, line
    assert "ok" in line and "board 'gpio-basic'" in line and "simulator" in line


def test_unknown_board(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, hardware='board = "respeaker-4mic"')
    rc, line = check(path, capsys)
    assert rc == EX_CONFIG and f"{path}: hardware.board: unknown board 'respeaker-4mic'" in line
    assert "respeaker-2mic" in line


@pytest.mark.parametrize(
    ("make", "in_key_file", "problem"),
    [
        (lambda p: None, False, "does not exist"),
        (lambda p: p.mkdir(), False, "is a directory"),
        (lambda p: p.write_text(""), True, "is empty"),
        (lambda p: p.write_text("  \n"), True, "is empty"),
        (lambda p: p.write_bytes(b"sk-a\r\nX-Injected: yes"), True, "more than one line"),
        (lambda p: p.write_bytes(b"sk-\xff"), True, "non-ASCII byte"),
    ],
    ids=["missing", "directory", "empty", "blank", "two-lines", "non-utf8"],
)
def test_key_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make: object,
    in_key_file: bool,
    problem: str,
) -> None:
    # What the file holds is named in the key file's own name, as the start says it.
    key = tmp_path / "openai.key"
    make(key)  # type: ignore[operator]
    path = write(tmp_path, provider=f'key_file = "{key}"')
    line = fails(path, capsys, key if in_key_file else path, "provider.key_file")
    assert problem in line and "Injected" not in line


def test_key_file_unreadable_by_the_service_user(
    open_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = open_dir / "openai.key"
    key.write_text("sk-test\n")
    if os.geteuid() == 0:
        # Root reads anything: the question is whether the unit's user can.
        key.chmod(0o600)
        who = "user 'nobody'"
    else:
        key.chmod(0)
        who = "can read"
    path = write(open_dir, service_user="nobody", provider=f'key_file = "{key}"')
    line = fails(path, capsys, path, "provider.key_file")
    assert who in line and "mode 0" in line


def test_key_file_readable_by_the_service_user_passes(
    open_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = open_dir / "openai.key"
    key.write_text("sk-test\n")
    key.chmod(0o644)
    path = write(open_dir, service_user="nobody", provider=f'key_file = "{key}"')
    rc, line = check(path, capsys)
    assert rc == 0, line
    assert f"key: {key} (provider.key_file)" in line


def test_key_file_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path)
    missing = tmp_path / "nope.key"
    rc, line = check(path, capsys, "--key-file", str(missing))
    assert rc == EX_CONFIG and line.startswith("huxleyd: command line: --key-file: expected"), line


def test_sounds_dir_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, extra="")
    path.write_text(path.read_text().replace(str(ROOT / "sounds"), str(tmp_path / "nosounds")))
    assert "does not exist" in fails(path, capsys, path, "daemon.sounds_dir")


def test_socket_directory_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path)
    path.write_text(path.read_text().replace('"control.sock"', '"run/huxleyd/control.sock"'))
    line = fails(path, capsys, path, "control.socket_path")
    assert "does not exist" in line
    assert not (tmp_path / "run").exists()


def left_out(path: Path, capsys: pytest.CaptureFixture[str], skill: str) -> str:
    """A skill the start leaves out: --check-config exits 0, says "runs degraded"
    and gives the reason on a "left out" line, in the start's words."""
    rc = main(["--check-config", "--config", str(path)])
    text = capsys.readouterr().out.strip()  # stderr has the log's skill_left_out
    first, *rest = text.splitlines()
    assert rc == 0 and ": runs degraded (" in first, text
    lines = [line for line in rest if line.startswith(f"  left out: skill:{skill}: ")]
    assert len(lines) == 1, text
    assert lines[0].endswith("; fix it, then restart")
    return lines[0].removeprefix(f"  left out: skill:{skill}: ")


def test_memos_max_seconds_negative(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, persona=PERSONA.replace("max_seconds = 60", "max_seconds = -5"))
    persona = tmp_path / "personas" / "default.toml"
    assert left_out(path, capsys, "memos").startswith(
        f"{persona}: skills.memos.max_seconds: expected a value above 0, got -5"
    )


def test_radio_station_that_is_a_number(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    persona = PERSONA.replace('jazz = "https://example.org/jazz.mp3"', "jazz = 5")
    file = tmp_path / "personas" / "default.toml"
    why = left_out(write(tmp_path, persona=persona), capsys, "radio")
    assert why.startswith(f"{file}: skills.radio.stations.jazz: expected string, got 5")


def test_unknown_skill_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    persona = PERSONA.replace("max_seconds = 60", "max_second = 60")
    why = left_out(write(tmp_path, persona=persona), capsys, "memos")
    assert "skills.memos.max_second: unknown key" in why
    assert "max_seconds" in why  # what was expected


def test_skill_not_installed_names_the_persona_file_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    why = left_out(write(tmp_path, persona=PERSONA + "[skills.weather]\n"), capsys, "weather")
    file = tmp_path / "personas" / "default.toml"
    assert why.startswith(f"{file}: skills.weather: "), why
    assert "not installed" in why


def test_cascade_command_asr_without_a_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        provider='kind = "cascade"',
        extra='[provider.cascade]\nasr = "command"\ntts = "command"\n',
    )
    assert "got []" in fails(path, capsys, path, "provider.cascade.asr_command")


def test_cascade_command_that_is_not_installed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = (
        '[provider.cascade]\nasr = "command"\nasr_command = ["sh", "-c", "echo hi"]\n'
        'tts = "command"\ntts_command = ["no-such-synthesiser-here", "--stdin"]\n'
        'llm_url = "http://127.0.0.1:8080/v1"\n'
    )
    path = write(tmp_path, provider='kind = "cascade"', extra=extra)
    assert "'no-such-synthesiser-here'" in fails(path, capsys, path, "provider.cascade.tts_command")


def test_cascade_cloud_stage_without_a_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path, provider='kind = "cascade"', extra='[provider.cascade]\ntts = "command"\n'
    )
    assert "api.openai.com" in fails(path, capsys, path, "provider.cascade.asr_key_file")


def test_simulator_scenario_is_parsed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "scenario.toml").write_text("[[turns]]\nnonsense = 1\n")
    path = write(tmp_path, provider='sim_scenario = "scenario.toml"')
    rc, line = check(path, capsys)
    assert rc == EX_CONFIG and "scenario.toml" in line and "nonsense" in line


def test_provider_url_must_be_a_websocket(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, provider='url = "https://api.openai.com/v1/realtime"')
    assert "wss://" in fails(path, capsys, path, "provider.url")


def test_files_are_checked_for_the_service_user_only_as_root(open_dir: Path) -> None:
    from huxleyd.config.files import Reader

    assert Reader.for_service("nobody", euid=1000).is_self
    nobody = Reader.for_service("nobody", euid=0)
    assert not nobody.is_self and nobody.name == "nobody"
    assert Reader.for_service("no-such-user-xyz", euid=0).is_self  # a dev box: no such user
    key = open_dir / "k"
    key.write_text("x")
    key.chmod(0o600)
    assert not nobody.can_read(key)  # owned by us, not by nobody
    key.chmod(0o644)
    assert nobody.can_read(key)
    open_dir.chmod(0o700)
    assert not nobody.can_read(key), "a directory it cannot enter hides the file"
    open_dir.chmod(0o755)
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o644
