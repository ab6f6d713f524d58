"""The skills environment is never the daemon's: where it is, and its parts."""

from __future__ import annotations

from pathlib import Path

from huxleyd.skillhost.skillenv import ENV_VARIABLE, INSTALLED_ROOT, skills_env


def test_the_variable_names_it_first(tmp_path: Path) -> None:
    env = skills_env({ENV_VARIABLE: str(tmp_path / "e")}, prefix="/opt/huxleyd/venv")
    assert env.root == tmp_path / "e"
    assert env.python == tmp_path / "e" / "bin" / "python"
    assert not env.exists()


def test_an_installed_release_keeps_it_outside_every_release() -> None:
    assert skills_env({}, prefix="/opt/huxleyd/venv").root == INSTALLED_ROOT
    assert skills_env({}, prefix="/opt/huxleyd/releases/1.2/venv").root == INSTALLED_ROOT


def test_a_checkout_keeps_it_under_var_and_never_in_the_daemons_venv() -> None:
    env = skills_env({}, prefix="/home/dev/huxleyd/.venv")
    assert env.root.parts[-2:] == ("var", "skills-env")
    assert ".venv" not in env.root.parts
    assert env.site_packages.parts[-1] == "site-packages"
