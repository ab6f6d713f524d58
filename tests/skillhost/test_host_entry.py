"""``python -m huxley_skillhost`` runs the host's ``main`` and exits with its code.

``--inventory`` prints every ``huxley.skills`` entry point of the environment
as JSON (skill → distribution → its ``config_schema``); without ``--fd`` and
without ``--inventory`` there is nothing to serve, and it says so.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import entry_points

import pytest

MODULE = "huxleyd.skillhost.hostpath.huxley_skillhost.__main__"


def run_main(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["huxley_skillhost", *args])
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    with pytest.raises(SystemExit) as exited:
        import huxleyd.skillhost.hostpath.huxley_skillhost.__main__  # noqa: F401
    code = exited.value.code
    assert isinstance(code, int)
    return code


def test_inventory_prints_the_environments_skills_as_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_main(monkeypatch, "--inventory") == 0
    found = json.loads(capsys.readouterr().out)
    expected = {ep.name for ep in entry_points(group="huxley.skills")}
    assert expected and set(found) == expected
    for by_distribution in found.values():
        assert all(s is None or isinstance(s, dict) for s in by_distribution.values())


def test_without_a_socket_it_refuses_to_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_main(monkeypatch) == 2
    assert "--fd is required" in capsys.readouterr().err
