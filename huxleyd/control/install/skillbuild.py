"""``--allow-sdist``: source packages built into wheels by an unprivileged user.

Building a source package runs its ``setup.py``. So it runs once, in one
``pip wheel`` of the skills environment's interpreter, as
:data:`BUILD_USER` when ``huxleyctl`` runs as root, in a folder of its own
that it owns (it could not enter root's 0700 scratch folder). Nothing of
the build runs as root: root then copies the resulting wheels out, and the
install plans (wheels only, so pip builds nothing more) and checks them
like any other wheels.

``pip wheel`` ignores what is installed, so the builder sees every
distribution of the skills environment as an empty wheel of the same
version (a "stub"): a skill's ``huxley-sdk>=0.1.1,<0.2`` is met without
fetching anything, and the stubs are never installed.

A URL or a path (``--allow-url``) is built first alone (``--no-deps``):
its wheel names the distribution, and the rest is asked for by that name,
so its ``setup.py`` never runs again.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from huxleyd.control.install import pins
from huxleyd.control.install.requests import IndexOptions, SkillPackageError, last_error
from huxleyd.control.install.wheelcheck import record_line
from huxleyd.skillhost.skillenv import SkillsEnv

BUILD_USER = "nobody"
"""Who builds source packages when huxleyctl runs as root."""


def _stub(folder: Path, name: str, version: str) -> Path:
    import zipfile

    stem = name.replace("-", "_")
    info = f"{stem}-{version}.dist-info"
    content = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: huxleyctl\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    rows = [record_line(p, t.encode()) for p, t in content.items()] + [f"{info}/RECORD,,"]
    content[f"{info}/RECORD"] = "\n".join(rows) + "\n"
    wheel = folder / f"{stem}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in content.items():
            zf.writestr(path, text)
    return wheel


class Builder:
    """Runs the skills environment's pip as the build user (when root) in a folder
    that user owns: ``home`` (HOME, TMPDIR, the working folder), ``top``,
    ``wheels``, ``stubs`` and ``plan`` (pip's reports). Files root writes into
    it later are root's, readable (0644) by the builder."""

    def __init__(self, env: SkillsEnv, folder: Path) -> None:
        self.env = env
        self.folder = folder
        for name in ("home", "top", "wheels", "stubs", "plan"):
            (folder / name).mkdir()
        self.home = folder / "home"
        self.extra: dict[str, Any] = {}
        self.who = ""
        if os.geteuid() == 0:
            user = pwd.getpwnam(BUILD_USER)
            for item in [folder, *folder.iterdir()]:
                os.chown(item, user.pw_uid, user.pw_gid)
            self.extra = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
            self.who = f" as {BUILD_USER}"

    def pip(self, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
        environ = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "TMPDIR": str(self.home),
            "PIP_NO_CACHE_DIR": "1",
            "LANG": os.environ.get("LANG", "C.UTF-8"),
        }
        command = [str(self.env.python), "-m", "pip", "--disable-pip-version-check", *args]
        try:
            return subprocess.run(
                command,
                capture_output=True,
                text=True,
                check=False,
                cwd=self.home,
                env=environ,
                **self.extra,
            )
        except OSError as exc:  # e.g. the build user may not run this interpreter
            raise SkillPackageError(f"cannot run pip{self.who}: {exc}") from exc


@contextmanager
def unprivileged(env: SkillsEnv) -> Iterator[Builder]:
    """A :class:`Builder` in a folder of its own, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="huxleyctl-build-"))
    try:
        yield Builder(env, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def build_wheels(
    builder: Builder,
    package: str,
    index: IndexOptions,
    present: Mapping[str, pins.Installed],
) -> tuple[str, Path]:
    """Build ``package`` and what it needs as wheels; the request to plan now
    (``name==version``) and the folder of built wheels (root's copy)."""
    folder = builder.folder
    top, built, stubs = (folder / n for n in ("top", "wheels", "stubs"))
    stub_names = {_stub(stubs, d.name, d.version).name for d in present.values()}
    constraints = pins.write_constraints(folder / "constraints.txt", present)
    common = ["--ignore-requires-python", "--constraint", str(constraints), *index.args()]
    first = builder.pip(["wheel", "--no-deps", "--wheel-dir", str(top), *common, package])
    tops = sorted(top.glob("*.whl"))
    if first.returncode != 0 or len(tops) != 1:
        raise SkillPackageError(
            f"cannot build {package} from source{builder.who}: {last_error(first)}"
        )
    name, version = tops[0].name.split("-")[:2]
    request = f"{name}=={version}"
    links = ["--find-links", str(top), "--find-links", str(stubs)]
    rest = builder.pip(["wheel", "--wheel-dir", str(built), *links, *common, request])
    if rest.returncode != 0:
        raise SkillPackageError(
            f"cannot build what {package} needs{builder.who}: {last_error(rest)}"
        )
    out = folder / "built"  # root's: the builder reads it, no process of its can change it
    out.mkdir(mode=0o755)
    for wheel in sorted(built.glob("*.whl")):
        if wheel.name not in stub_names and not wheel.is_symlink():
            shutil.copyfile(wheel, out / wheel.name)
    return request, out
