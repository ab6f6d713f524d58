"""Huxley's published packages, fetched, installed and tested in throwaway venvs.

Layer: test harness (network, subprocesses, a cache directory); no huxleyd code.

Two venvs are built from the same pinned sdists: *baseline* with Huxley's
real huxley-sdk 0.1.1, *ours* with this repository's ``sdk/``. Each of
Huxley's packages has its own test suite in its sdist; it runs in both
venvs and the outcomes are compared per test id (see
``test_huxley_packages.py``).

Everything slow is cached under :func:`cache_dir`: the sdists (checked
against pinned sha256s), their unpacked trees, and the venvs, keyed by
everything that went into them. Our SDK is reinstalled into the *ours*
venv only when its sources change.

The cache is shared by every checkout on the machine and by both legs of
``make test``, which run at once. So every entry is filled under an flock
and appears complete or not at all (built in a private temporary place,
then renamed); the venvs are keyed by the interpreter; each suite run
writes its junit report to a private file (the record kept in
``reports/<interpreter>/`` is a copy); and a run that tested nothing is a
failure that names why (:attr:`Outcomes.problem`), never a quiet 0/0.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SDK_DIR = ROOT / "sdk"


@dataclass(frozen=True)
class Pin:
    """One published sdist: name, version and the sha256 PyPI lists for it."""

    name: str
    version: str
    sha256: str

    @property
    def filename(self) -> str:
        return f"{self.name.replace('-', '_')}-{self.version}.tar.gz"

    @property
    def short(self) -> str:
        """``sdk``, ``timers``…: the package's name in the table."""
        return self.name.removeprefix("huxley-skill-").removeprefix("huxley-")


HUXLEY_SDK = Pin(
    "huxley-sdk", "0.1.1", "378be10795877539a9c0fad1c69110786a588ed3f167cb6568e6c351508ea5d1"
)
SKILLS = (
    Pin(
        "huxley-skill-audiobooks",
        "0.1.0",
        "7207656b7cc26497b6d5950fff5ae07ddc34d1e28f79e3b13673afaf24fa78ff",
    ),
    Pin(
        "huxley-skill-news",
        "0.1.0",
        "94fafc02b96293f791ad2b8a4458d22af4673a877fdcdd1737cfc7f832cee13e",
    ),
    Pin(
        "huxley-skill-radio",
        "0.1.0",
        "6ca33d266fd0d415922a90eb4677e89cf4c51de6ac073f66b152d12b5aa67570",
    ),
    Pin(
        "huxley-skill-reminders",
        "0.1.0",
        "426ee30a0a1899368fac14bae6c20e5768711e47164f2aeac39ca4c21692e15b",
    ),
    Pin(
        "huxley-skill-search",
        "0.1.0",
        "b4d39545f3c6e3af9f6f27979a96ba1854db4a8114da171c92e6fcec6937cf11",
    ),
    Pin(
        "huxley-skill-stocks",
        "0.1.0",
        "2e6e97005598a93349094b5a780c2adf9716ba8734ab40979a0ac116267d4a3a",
    ),
    Pin(
        "huxley-skill-system",
        "0.1.0",
        "063afc78e7b9a1f46b6facc099f30a17f24166f36c3866ad7d3722b40712403b",
    ),
    Pin(
        "huxley-skill-telegram",
        "0.1.0",
        "f8eac14c953b59ec5f2f17af08a2c30a5b019c4fa745759784434ff3e739c799",
    ),
    Pin(
        "huxley-skill-timers",
        "0.1.0",
        "689cf5983bc316cf38b83aae2b8462f0114a228f4b2216c59c6055716021dba7",
    ),
)
NATIVE = frozenset({"huxley-skill-telegram"})
"""Packages with native dependencies: installed on their own, skipped (with
pip's reason) where their wheels do not install."""
NATIVE_INSTALL = ("install", "--quiet", "--ignore-requires-python")
"""How a native package installs: with build isolation. Its dependencies include
sdists (telegram's kurigram needs ``pyaes``, an sdist only) whose build needs
setuptools' ``bdist_wheel``; in the venv, used without isolation for Huxley's
own sdists, pip said ``invalid command 'bdist_wheel'`` and telegram was skipped
on both SDKs."""

TEST_TOOLS = ("pytest>=8,<10", "pytest-asyncio>=0.24,<2", "pytest-httpx>=0.30,<1")
"""What the packages' test suites need (their dev dependency groups)."""
BUILD_BACKEND = "hatchling>=1.24"
"""What Huxley's sdists build with (their [build-system])."""

INDEX = os.environ.get("HUXLEY_COMPAT_INDEX", "https://pypi.org/simple")
PIP_TIMEOUT_S = 900
RUN_TIMEOUT_S = 600


class Unreachable(RuntimeError):
    """The package index could not be reached and the cache lacks the file."""


def cache_dir() -> Path:
    """``$HUXLEY_COMPAT_CACHE``, else ``$XDG_CACHE_HOME/huxleyd/compat`` (``~/.cache``)."""
    explicit = os.environ.get("HUXLEY_COMPAT_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "huxleyd" / "compat"


def interpreter_tag() -> str:
    """``py3.11``…: what this run's per-interpreter cache entries are filed under."""
    return f"py{sys.version_info.major}.{sys.version_info.minor}"


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (worktrees and test legs share the cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def replace_atomically(data: bytes | str, target: Path) -> None:
    """Write ``target`` whole or not at all: a private temporary file, then a rename."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    with os.fdopen(handle, "wb") as out:
        out.write(data.encode() if isinstance(data, str) else data)
    Path(temporary).replace(target)


# ---------------------------------------------------------------- sdists


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _sdist_url(pin: Pin) -> str:
    """The file's URL from the index's JSON simple API (PEP 691)."""
    request = urllib.request.Request(
        f"{INDEX.rstrip('/')}/{pin.name}/",
        headers={"Accept": "application/vnd.pypi.simple.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        listing = json.load(response)
    for entry in listing.get("files", []):
        if entry.get("filename") == pin.filename:
            return str(entry["url"])
    raise RuntimeError(f"{INDEX}: {pin.name} has no file {pin.filename}")


def fetch_sdist(pin: Pin, cache: Path) -> Path:
    """The pinned sdist in the cache, downloaded once; its sha256 is always checked."""
    target = cache / "sdists" / pin.filename
    with locked(cache / "sdists" / ".lock"):
        if not (target.exists() and _sha256(target) == pin.sha256):
            replace_atomically(_download(pin), target)
    return target


def _download(pin: Pin) -> bytes:
    """The pinned sdist's bytes from the index, their sha256 checked."""
    try:
        url = _sdist_url(pin)
        with urllib.request.urlopen(url, timeout=120) as response:
            data: bytes = response.read()
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise Unreachable(f"cannot download {pin.filename} from {INDEX}: {exc}") from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != pin.sha256:
        raise RuntimeError(f"{pin.filename}: sha256 {digest}, pinned {pin.sha256}")
    return data


def unpack(sdist: Path, cache: Path) -> Path:
    """The sdist's tree (its tests and pyproject with the pytest settings)."""
    name = sdist.name.removesuffix(".tar.gz")
    tree = cache / "src" / name
    with locked(cache / "src" / ".lock"):
        # A tree appears by one rename, complete; one without its pyproject
        # is a leftover of a run killed before this lock existed.
        if not (tree / "pyproject.toml").exists():
            staging = Path(tempfile.mkdtemp(dir=cache))
            with tarfile.open(sdist) as archive:
                archive.extractall(staging, filter="data")
            shutil.rmtree(tree, ignore_errors=True)
            (staging / name).replace(tree)
            shutil.rmtree(staging)
    return tree


# ---------------------------------------------------------------- venvs


def _run(cmd: list[str], *, cwd: Path | None = None, timeout: float = PIP_TIMEOUT_S) -> str:
    done = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, cmd, done.stdout, done.stderr)
    return done.stdout


def explain(exc: subprocess.CalledProcessError) -> str:
    """``command`` and the last lines it printed, for an assertion message."""
    tail = "\n".join(((exc.stdout or "") + (exc.stderr or "")).strip().splitlines()[-12:])
    return f"{' '.join(map(str, exc.cmd))} exited {exc.returncode}:\n{tail}"


def sdk_fingerprint() -> str:
    """A hash of our SDK's sources and metadata: when it changes, ours is reinstalled."""
    digest = hashlib.sha256()
    for path in sorted(SDK_DIR.rglob("*")):
        if (
            path.is_file()
            and not {"__pycache__", "build"} & set(path.parts)
            and (".egg-info" not in str(path))
        ):
            digest.update(str(path.relative_to(SDK_DIR)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _sdk_dependencies() -> list[str]:
    import tomllib

    project = tomllib.loads((SDK_DIR / "pyproject.toml").read_text())["project"]
    return [str(d) for d in project.get("dependencies", [])]


@dataclass
class Venv:
    """One throwaway environment and what could not be installed in it."""

    path: Path
    not_installed: dict[str, str] = field(default_factory=dict)
    """Package name -> pip's reason, for packages that failed to install."""

    @property
    def python(self) -> str:
        return str(self.path / "bin" / "python")

    @property
    def lock(self) -> Path:
        """Held exclusive to build or change the venv, shared while suites run in it."""
        return self.path.with_name(self.path.name + ".lock")

    def pip(self, *args: str) -> str:
        return _run([self.python, "-m", "pip", "--disable-pip-version-check", *args])


def _venv_key(flavour: str, sdists: dict[Pin, Path]) -> str:
    digest = hashlib.sha256()
    parts = [flavour, sys.version, INDEX, *TEST_TOOLS, BUILD_BACKEND, *NATIVE_INSTALL]
    parts += [p.sha256 for p in sdists]
    if flavour == "ours":
        parts.extend(_sdk_dependencies())
    digest.update("\n".join(parts).encode())
    return f"{flavour}-{digest.hexdigest()[:16]}"


def build_venv(flavour: str, sdists: dict[Pin, Path], cache: Path) -> Venv:
    """The *baseline* or *ours* venv with every package installed (cached).

    The SDK goes in first, then the skills with ``--ignore-requires-python``
    (they declare >=3.13 and run on 3.11) and their dependencies from the
    index; pip must find the skills' ``huxley-sdk`` requirement met.
    """
    # sys.version is in the key: one venv per interpreter.
    venv = Venv(cache / "venvs" / _venv_key(flavour, sdists))
    state = venv.path / "huxleyd-compat.json"
    with locked(venv.lock):
        if not state.exists():
            shutil.rmtree(venv.path, ignore_errors=True)
            _run([sys.executable, "-m", "venv", str(venv.path)])
            # Huxley's sdists build with hatchling: installed once here and
            # used without build isolation, instead of one build env per sdist.
            venv.pip("install", "--quiet", *TEST_TOOLS, BUILD_BACKEND)
            sdist = ("install", "--quiet", "--ignore-requires-python", "--no-build-isolation")
            if flavour == "baseline":
                venv.pip(*sdist, str(sdists[HUXLEY_SDK]))
            else:
                _install_our_sdk(venv)
            plain = [
                str(path)
                for pin, path in sdists.items()
                if pin in SKILLS and pin.name not in NATIVE
            ]
            venv.pip(*sdist, *plain)
            not_installed: dict[str, str] = {}
            for pin, path in sdists.items():
                if pin.name in NATIVE:
                    try:
                        venv.pip(*NATIVE_INSTALL, str(path))
                    except subprocess.CalledProcessError as exc:
                        tail = (exc.stderr or exc.stdout or "").strip().splitlines()[-3:]
                        not_installed[pin.name] = " / ".join(tail) or f"pip exit {exc.returncode}"
            replace_atomically(json.dumps({"not_installed": not_installed}), state)
        venv.not_installed = json.loads(state.read_text())["not_installed"]
        if flavour == "ours":
            _refresh_our_sdk(venv)
    return venv


def _install_our_sdk(venv: Venv, *extra: str) -> None:
    # From a copy, so the repository gets no build/ or egg-info from us.
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "sdk"
        shutil.copytree(
            SDK_DIR, copy, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info")
        )
        venv.pip("install", "--quiet", *extra, str(copy))
    (venv.path / "huxleyd-sdk.fingerprint").write_text(sdk_fingerprint())


def _our_sdk_current(venv: Venv) -> bool:
    stamp = venv.path / "huxleyd-sdk.fingerprint"
    return stamp.exists() and stamp.read_text() == sdk_fingerprint()


def _refresh_our_sdk(venv: Venv) -> None:
    if not _our_sdk_current(venv):
        _install_our_sdk(venv, "--no-deps", "--force-reinstall")


@contextmanager
def in_use(venv: Venv, flavour: str) -> Iterator[Venv]:
    """Hold ``venv`` (shared) while suites run in it.

    Another checkout, whose ``sdk/`` differs, reinstalls its SDK into the
    same *ours* venv only under the exclusive lock, so never under our runs;
    and ours is checked again under the shared lock, since that checkout may
    have slipped in between :func:`build_venv` and here.
    """
    with venv.lock.open("a") as handle:
        while True:
            fcntl.flock(handle, fcntl.LOCK_SH)
            if flavour != "ours" or _our_sdk_current(venv):
                break
            fcntl.flock(handle, fcntl.LOCK_UN)
            with locked(venv.lock):
                _refresh_our_sdk(venv)
        try:
            yield venv
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_python(venv: Venv, script: str) -> str:
    """Run ``script`` with the venv's python from a neutral directory (not the repo)."""
    with tempfile.TemporaryDirectory() as scratch:
        return _run([venv.python, script], cwd=Path(scratch))


def installed_version(venv: Venv, distribution: str) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        probe = f"import importlib.metadata as m; print(m.version({distribution!r}))"
        return _run([venv.python, "-c", probe], cwd=Path(scratch)).strip()


# ---------------------------------------------------------------- test runs


@dataclass
class Outcomes:
    """Per test id: "passed", "failed", "error" or "skipped"."""

    by_id: dict[str, str]
    returncode: int
    output_tail: str
    reported: bool = True
    """Whether pytest wrote its junit report at all."""

    @property
    def passed(self) -> set[str]:
        return {test for test, outcome in self.by_id.items() if outcome == "passed"}

    @property
    def problem(self) -> str | None:
        """Why this run tested nothing (a failure, never a 0/0 pass), else None."""
        if self.by_id:
            return None
        said = "wrote no junit report" if not self.reported else "reported no test"
        return f"pytest {said} (exit {self.returncode}):\n{self.output_tail}"


def run_suite(venv: Venv, tree: Path, record: Path) -> Outcomes:
    """Run the package's own tests (its ``tests/``, its pytest settings) in ``venv``.

    The junit report goes to a file of this run's own (another leg may be
    running the same package this moment); a copy is kept as ``record`` when
    the run tested something.
    """
    with tempfile.TemporaryDirectory(prefix="huxley-compat-") as scratch:
        report = Path(scratch) / "report.xml"
        outcomes = _run_pytest(venv, tree, report)
        if outcomes.problem is None:
            replace_atomically(report.read_bytes(), record)
    return outcomes


def _run_pytest(venv: Venv, tree: Path, report: Path) -> Outcomes:
    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": "",
        "PYTEST_ADDOPTS": "",
        "PYTEST_PLUGINS": "",
    }
    done = subprocess.run(
        [
            venv.python,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
            "tests",
        ],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
    by_id = parse_junit(report) if report.exists() else {}
    return Outcomes(by_id, done.returncode, tail, reported=report.exists())


def parse_junit(report: Path) -> dict[str, str]:
    outcomes: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                break
        if outcomes.get(test_id, "passed") == "passed":
            outcomes[test_id] = outcome
    return outcomes
