"""Real wheels and environments for packaging tests, built by hand in tmp.

:func:`build_wheel` writes a wheel file (zip, ``.dist-info`` with METADATA,
WHEEL, entry points and a RECORD of hashes) that pip installs like any
other; :func:`daemon_venv` makes a throwaway venv that runs this checkout
(its interpreter is what ``huxleyctl skills install`` installs into), and
:func:`fetch_dists` keeps the published Huxley packages the tests install
in a cache directory, so the installs under test run offline
(``--no-index --find-links``).
"""

from __future__ import annotations

import base64
import getpass
import hashlib
import importlib.metadata as metadata
import io
import os
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.fakes.distributions import on_sys_path

ROOT = Path(__file__).resolve().parents[2]
DIST_CACHE = Path(os.environ.get("HUXLEY_DIST_CACHE", ROOT / ".cache" / "huxley-dists"))
"""Downloaded Huxley packages (and their dependencies), pinned by the tests."""

STAND_IN_SDK_VERSION = "0.1.2"
"""The ``huxley-sdk`` version a test venv claims when this checkout does not
install ``huxley-sdk`` as a distribution of its own yet."""


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(
    dest: Path,
    *,
    name: str,
    version: str,
    files: Mapping[str, str],
    requires_python: str | None = None,
    requires: Sequence[str] = (),
    skills: Mapping[str, str] | None = None,
    tag: str = "py3-none-any",
    entry_points: Mapping[str, Mapping[str, str]] | None = None,
) -> Path:
    """Write ``<name>-<version>-<tag>.whl`` into ``dest``; ``skills``: entry name → target;
    ``entry_points``: other groups (``console_scripts``)."""
    dest.mkdir(parents=True, exist_ok=True)
    stem = name.replace("-", "_")
    info = f"{stem}-{version}.dist-info"
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        meta.append(f"Requires-Python: {requires_python}")
    meta += [f"Requires-Dist: {r}" for r in requires]
    pure = tag.endswith("-none-any")
    content: dict[str, bytes] = {path: text.encode() for path, text in files.items()}
    content[f"{info}/METADATA"] = ("\n".join(meta) + "\n").encode()
    content[f"{info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: {str(pure).lower()}\nTag: {tag}\n"
    ).encode()
    groups = {**({"huxley.skills": skills} if skills else {}), **(entry_points or {})}
    if groups:
        text = "".join(
            f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in items.items())
            for group, items in groups.items()
        )
        content[f"{info}/entry_points.txt"] = text.encode()
    record = [_record_line(path, data) for path, data in content.items()]
    content[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    wheel = dest / f"{stem}-{version}-{tag}.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, data in content.items():
            zf.writestr(path, data)
    return wheel


def build_sdist(dest: Path, *, name: str, version: str, setup_py: str) -> Path:
    """Write ``<name>-<version>.tar.gz``, a legacy sdist whose ``setup.py`` is ``setup_py``."""
    dest.mkdir(parents=True, exist_ok=True)
    stem = f"{name.replace('-', '_')}-{version}"
    files = {
        "setup.py": setup_py,
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    }
    sdist = dest / f"{stem}.tar.gz"
    with tarfile.open(sdist, "w:gz") as tf:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{stem}/{path}")
            info.size = len(data)
            info.mode = 0o644
            tf.addfile(info, io.BytesIO(data))
    return sdist


def daemon_venv(where: Path, *, with_sdk: bool = True) -> Path:
    """A throwaway venv running this checkout; returns its python.

    No pip of its own: this interpreter's site-packages (pip, numpy…) and
    the checkout are on its path, its own site-packages is where installs
    land. ``with_sdk``: it has a ``huxley-sdk`` distribution (this
    interpreter's, or a stand-in dist-info until the SDK ships as one).
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    sdk_src = ROOT / "sdk" / "src"
    if not with_sdk and sdk_src.is_dir():
        # The package without the metadata an editable install leaves beside it
        # (sdk/src/*.egg-info), so no huxley-sdk distribution is found.
        bare = where / "sdk-package-only"
        bare.mkdir()
        (bare / "huxley_sdk").symlink_to(sdk_src / "huxley_sdk")
        sdk_src = bare
    paths = [str(ROOT), *([str(sdk_src)] if sdk_src.is_dir() else [])]
    if with_sdk:  # this interpreter's packages (pip, numpy, an installed huxley-sdk…)
        paths += [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site / "zz_huxleyd_checkout.pth").write_text("\n".join(paths) + "\n")
    if with_sdk:
        try:
            metadata.version("huxley-sdk")
        except metadata.PackageNotFoundError:
            info = site / f"huxley_sdk-{STAND_IN_SDK_VERSION}.dist-info"
            info.mkdir()
            (info / "METADATA").write_text(
                f"Metadata-Version: 2.1\nName: huxley-sdk\nVersion: {STAND_IN_SDK_VERSION}\n"
            )
            (info / "INSTALLER").write_text("tests\n")
            (info / "RECORD").write_text(f"{info.name}/METADATA,,\n{info.name}/RECORD,,\n")
    return python


def fetch_dists(requirements: Sequence[str]) -> Path:
    """The cache directory, holding a wheel of each ``name==version``; skips when unreachable."""
    DIST_CACHE.mkdir(parents=True, exist_ok=True)
    for req in requirements:
        name, _, version = req.partition("==")
        stem = f"{name.replace('-', '_')}-{version}-"
        if any(p.name.lower().startswith(stem.lower()) for p in DIST_CACHE.glob("*.whl")):
            continue
        download = ["download", "--quiet", "--no-deps", "--ignore-requires-python"]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                *download,
                "--only-binary",
                ":all:",
                "-d",
                str(DIST_CACHE),
                req,
            ],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            pytest.skip(f"cannot fetch {req} into {DIST_CACHE}: {result.stderr.strip()[-200:]}")
    return DIST_CACHE


@contextmanager
def wheels_on_path(site: Path, wheels: Sequence[Path]) -> Iterator[Path]:
    """Unpack pure wheels into ``site`` (what pip does for them) and put it on sys.path."""
    site.mkdir(parents=True, exist_ok=True)
    top: set[str] = set()
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(site)
            top |= {n.split("/", 1)[0] for n in zf.namelist() if ".dist-info" not in n}
    with on_sys_path(site, top):
        yield site


def cached_wheel(cache: Path, requirement: str) -> Path:
    name, _, version = requirement.partition("==")
    stem = f"{name.replace('-', '_')}-{version}-".lower()
    return next(p for p in cache.glob("*.whl") if p.name.lower().startswith(stem))


def write_check_config(tmp: Path, persona: str) -> Path:
    """A ``huxleyd.toml`` that ``--check-config`` accepts (real sounds, boards, a
    socket folder, this user as the service user) and ``persona``'s text."""
    (tmp / "personas").mkdir(exist_ok=True)
    (tmp / "personas" / "default.toml").write_text(f'name = "t"\n{persona}')
    config = tmp / "huxleyd.toml"
    config.write_text(
        f'[daemon]\nsounds_dir = "{ROOT / "sounds"}"\nservice_user = "{getpass.getuser()}"\n'
        f'[storage]\nstate_dir = "{tmp / "state"}"\n'
        f'[hardware]\nboards_dir = "{ROOT / "hw"}"\n'
        '[control]\nsocket_path = "control.sock"\nsocket_group = ""\n'
    )
    return config
