"""A skill wheel is read member by member and refused before anything is written.

Hand-built wheel zips (no pip, no build backend): each carries one thing a
skill never needs (a ``.pth``, a ``.data/scripts`` command, a file its RECORD
does not list, a path another distribution owns) and is refused in one line
naming that path; a clean one passes.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from huxleyd.control.install.envfiles import Owners
from huxleyd.control.install.wheelcheck import (
    WheelRefused,
    check_all,
    read_wheel,
    record_line,
    refusal,
)

NAME = "weather_skill"
INFO = f"{NAME}-1.0.dist-info"
METADATA = f"Metadata-Version: 2.1\nName: {NAME}\nVersion: 1.0\n".encode()
CLEAN = {f"{NAME}/__init__.py": b"VALUE = 1\n", f"{NAME}/skill.py": b"def run(): ...\n"}
NOBODY = Owners({}, {}, frozenset())
WEBSOCKETS = NOBODY.adding(
    "websockets",
    ["websockets/__init__.py", "websockets/client.py", "websockets-12.0.dist-info/RECORD"],
)


def build(
    folder: Path,
    files: dict[str, bytes],
    *,
    unlisted: dict[str, bytes] | None = None,
    entry_points: str | None = None,
) -> Path:
    """A wheel holding ``files`` (and METADATA), every one in RECORD but ``unlisted``."""
    members = {**files, f"{INFO}/METADATA": METADATA}
    if entry_points is not None:
        members[f"{INFO}/entry_points.txt"] = entry_points.encode()
    rows = [record_line(path, data) for path, data in members.items()] + [f"{INFO}/RECORD,,"]
    path = folder / f"{NAME}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in {**members, **(unlisted or {})}.items():
            zf.writestr(name, data)
        zf.writestr(f"{INFO}/RECORD", "\n".join(rows) + "\n")
    return path


def verdict(path: Path, owners: Owners = NOBODY) -> str | None:
    return refusal(read_wheel(path), owners, first_party={})


def test_a_clean_wheel_is_accepted_and_lands_where_its_record_says(tmp_path: Path) -> None:
    facts = read_wheel(build(tmp_path, CLEAN))
    assert (facts.name, facts.version) == (NAME, "1.0")
    assert set(CLEAN) <= set(facts.files)
    assert refusal(facts, WEBSOCKETS, first_party={}) is None
    check_all([facts], WEBSOCKETS, first_party={})


def test_a_pth_file_is_refused(tmp_path: Path) -> None:
    why = verdict(build(tmp_path, {**CLEAN, "evil.pth": b"import os\n"}))
    assert why is not None
    assert why.startswith(f"refused: evil.pth in {NAME}-1.0-py3-none-any.whl ({NAME} 1.0)")
    assert ".pth file runs code" in why


def test_a_data_scripts_command_is_refused(tmp_path: Path) -> None:
    script = f"{NAME}-1.0.data/scripts/python"
    why = verdict(build(tmp_path, {**CLEAN, script: b"#!/bin/sh\n"}))
    assert why is not None
    assert f"refused: {script} " in why
    assert "nothing outside site-packages (.data/scripts)" in why


def test_data_purelib_lands_in_site_packages_and_is_allowed(tmp_path: Path) -> None:
    facts = read_wheel(build(tmp_path, {f"{NAME}-1.0.data/purelib/{NAME}/x.py": b"X = 1\n"}))
    assert f"{NAME}/x.py" in facts.files
    assert refusal(facts, NOBODY, first_party={}) is None


def test_a_member_missing_from_record_is_refused(tmp_path: Path) -> None:
    path = build(tmp_path, CLEAN, unlisted={f"{NAME}/hidden.py": b"import os\n"})
    with pytest.raises(WheelRefused, match=rf"^{NAME}/hidden.py in .* is not in its RECORD$"):
        read_wheel(path)


def test_a_member_whose_hash_differs_from_record_is_refused(tmp_path: Path) -> None:
    path = build(tmp_path, CLEAN)
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    members[f"{NAME}/skill.py"] = b"import os; os.system('x')\n"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    with pytest.raises(WheelRefused, match=r"skill\.py .* does not have the hash its RECORD says"):
        read_wheel(path)


def test_a_path_another_distribution_owns_is_refused(tmp_path: Path) -> None:
    why = verdict(build(tmp_path, {**CLEAN, "websockets/__init__.py": b""}), WEBSOCKETS)
    assert why is not None
    assert "refused: websockets/__init__.py" in why
    assert "websockets/__init__.py belongs to websockets" in why


def test_a_new_file_inside_another_distributions_package_is_refused(tmp_path: Path) -> None:
    why = verdict(build(tmp_path, {**CLEAN, "websockets/extra.py": b""}), WEBSOCKETS)
    assert why is not None
    assert "it is inside websockets, which websockets provides" in why


def test_a_file_under_the_daemons_own_package_is_refused(tmp_path: Path) -> None:
    why = verdict(build(tmp_path, {**CLEAN, "huxleyd/__init__.py": b""}))
    assert why is not None
    assert "huxleyd is the daemon's own package" in why


def test_a_console_script_is_refused(tmp_path: Path) -> None:
    eps = f"[console_scripts]\nhuxleyctl = {NAME}.skill:run\n"
    why = verdict(build(tmp_path, CLEAN, entry_points=eps))
    assert why is not None
    assert 'console_scripts "huxleyctl = weather_skill.skill:run"' in why
    assert "(that one is the daemon's)" in why


def test_two_planned_wheels_may_not_write_the_same_path(tmp_path: Path) -> None:
    facts = read_wheel(build(tmp_path, CLEAN))
    other = NOBODY.adding("other_skill", [f"{NAME}/__init__.py"])
    with pytest.raises(WheelRefused, match=f"{NAME}/__init__.py belongs to other_skill"):
        check_all([facts], other, first_party={})
