"""``huxleyctl doctor`` without a daemon: the configuration, resolved as the daemon would."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

import pytest

from huxleyd.control.cli import main

ROOT = Path(__file__).resolve().parents[2]


def write_config(tmp_path: Path, provider: str = "", service_user: str = getpass.getuser()) -> Path:
    (tmp_path / "personas").mkdir(exist_ok=True)
    (tmp_path / "personas" / "default.toml").write_text('name = "T"\n[skills.system]\n')
    path = tmp_path / "huxleyd.toml"
    path.write_text(
        f'[daemon]\nsounds_dir = "{ROOT / "sounds"}"\nservice_user = "{service_user}"\n'
        f'[storage]\nstate_dir = "state"\n[provider]\nkind = "openai"\n{provider}\n'
        '[audio]\nbackend = "wav"\n'
        f'[hardware]\nboards_dir = "{ROOT / "hw"}"\npin_factory = "mock"\n'
        '[control]\nsocket_path = "control.sock"\nsocket_group = ""\n'
    )
    return path


def doctor(
    path: Path, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, dict[str, dict[str, str]]]:
    rc = main(["--config", str(path), "doctor", "--json", *args])
    raw = json.loads(capsys.readouterr().out)
    return rc, raw["source"], {c["name"]: c for c in raw["checks"]}


def test_without_a_daemon_the_config_is_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, source, checks = doctor(write_config(tmp_path), capsys)
    assert "without the daemon" in source and "not running" in source
    assert checks["config"]["status"] == "ok"
    assert checks["key file"]["status"] == "warn"  # no key: the simulator would answer
    assert checks["audio"]["status"] == "skipped"
    assert checks["mixer"]["status"] == "skipped"  # backend wav
    assert checks["gpio"]["status"] == "warn" and "mock" in checks["gpio"]["detail"]
    assert checks["provider"]["status"] == "skipped"
    assert rc == 0


def test_the_key_file_given_to_the_daemon_is_the_one_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "dev.key"
    key.write_text("sk-test\n")
    key.chmod(0o644)
    _, _, checks = doctor(write_config(tmp_path), capsys, "--key-file", str(key))
    assert checks["key file"]["status"] == "warn"
    assert checks["key file"]["detail"].startswith(f"{key} (--key-file) may be read by others")
    # With a key, the provider is asked (here api.openai.com: reachable or not, it looked).
    assert checks["provider"]["status"] in ("ok", "fail"), checks["provider"]


def test_a_config_the_daemon_would_refuse_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, provider=f'key_file = "{tmp_path / "missing.key"}"')
    rc, _, checks = doctor(path, capsys)
    assert rc == 1
    assert checks["config"]["status"] == "fail"
    assert "provider.key_file: expected a file with the API key" in checks["config"]["detail"]
    assert checks["key file"]["status"] == "fail"


def test_a_config_that_does_not_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_config(tmp_path)
    path.write_text(path.read_text() + '[hardware.led_limits]\nlistening_s = "long"\n')
    rc, _, checks = doctor(path, capsys)
    assert rc == 1 and checks["config"]["status"] == "fail"
    assert "hardware.led_limits.listening_s" in checks["config"]["detail"]


def test_a_missing_service_user_is_a_failure_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _, checks = doctor(write_config(tmp_path, service_user="nobody-here"), capsys)
    user = checks["service user"]
    assert user["status"] == "fail" and "'nobody-here' does not exist" in user["detail"]
    assert rc == 1


def test_the_model_line_says_the_simulator_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, checks = doctor(write_config(tmp_path), capsys)  # no key: the simulator answers
    model = checks["model"]
    assert model["status"] == "skipped"
    assert "not in use: the simulator answers" in model["detail"]


def test_doctor_as_root_is_not_told_to_run_as_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "openai.key"
    key.write_bytes(b"sk-a\xff")
    _, _, checks = doctor(write_config(tmp_path, provider=f'key_file = "{key}"'), capsys)
    assert checks["key file"]["status"] == "fail"
    assert "non-ASCII byte" in checks["key file"]["detail"]
    assert "run doctor as root" not in checks["provider"]["detail"]
