"""``huxleyctl update BUNDLE``: a new huxleyd from a file, switched to only if it
starts, switched back by itself if it does not.

Why a file and not an apt repository of our own: the device must update
with no network but a copied file (a speaker on a network that blocks
everything but the provider), the bundle is made from the same wheel cache
and source the image was built from (nothing new to host, sign or mirror),
and rolling back is switching a unit drop-in, not downgrading packages.

A bundle (``make bundle``) is a tar file::

    huxleyd-update.toml   version = "0.1.1"
    src/                  the source (huxleyd and sdk/)
    wheels/               every dependency, built for the device

The update, all as root:

1. the bundle is unpacked and installed into a new venv,
   ``/opt/huxleyd/releases/<version>/venv``, with pip ``--no-index`` (no
   network); the running daemon is untouched;
2. the new daemon checks the device's configuration (``--check-config``);
3. the unit is pointed at the new venv (a drop-in, ``release.conf``) and
   restarted; ``systemctl restart`` of a ``Type=notify`` unit returns once
   the daemon sent READY=1, and fails if it exited or timed out first;
4. if that fails, the drop-in is put back and the previous version
   restarted (:class:`~huxleyd.firstboot.transaction.Transaction`);
5. the new and the previous release are kept, older ones removed.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from huxleyd import logs
from huxleyd.firstboot.transaction import StepFailed, Transaction

__all__ = ["BundleError", "Layout", "UpdateFailed", "install_release", "read_version", "update"]

log = logs.get_logger("huxleyd.update")

MANIFEST = "huxleyd-update.toml"
UNIT = "huxleyd.service"
Runner = Callable[[Sequence[str]], None]


class BundleError(ValueError):
    """The file is not a usable bundle: names the file and what is wrong."""


class UpdateFailed(RuntimeError):
    """The new version did not start; the previous one runs again (or says why not)."""


@dataclass(frozen=True, slots=True)
class Layout:
    """Where things are on the device (tests use a temporary root)."""

    root: Path = Path("/")
    releases: str = "opt/huxleyd/releases"
    dropin: str = "etc/systemd/system/huxleyd.service.d/release.conf"
    config: str = "/etc/huxleyd/huxleyd.toml"
    python: str = "/usr/bin/python3"

    def release(self, version: str) -> Path:
        return self.root / self.releases / version


def run_command(argv: Sequence[str]) -> None:
    subprocess.run(list(argv), check=True)


def read_version(bundle: Path) -> str:
    """The bundle's version, checked before anything is unpacked."""
    try:
        with tarfile.open(bundle) as tar:
            member = tar.extractfile(MANIFEST)
            if member is None:
                raise KeyError(MANIFEST)
            manifest = tomllib.loads(member.read().decode())
    except (OSError, tarfile.TarError) as exc:
        raise BundleError(f"{bundle}: not a readable bundle ({exc})") from None
    except KeyError:
        raise BundleError(f"{bundle}: no {MANIFEST} in it (make one with make bundle)") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BundleError(f"{bundle}: {MANIFEST} is not valid TOML ({exc})") from None
    version = manifest.get("version")
    if (
        not isinstance(version, str)
        or not version
        or not all(c.isalnum() or c in ".+-_" for c in version)
    ):
        raise BundleError(f'{bundle}: {MANIFEST}: version must be a string like "0.1.1"')
    return version


def install_release(bundle: Path, version: str, layout: Layout, run: Runner) -> Path:
    """Unpack and install ``bundle`` beside the running version; its venv.

    The venv is made where it stays (a venv records its own path), in the
    release's directory; the running release is never this one (checked by
    :func:`update`)."""
    target = layout.release(version)
    shutil.rmtree(target, ignore_errors=True)
    (target / "bundle").mkdir(parents=True)
    with tarfile.open(bundle) as tar:
        tar.extractall(target / "bundle", filter="data")  # no absolute paths, links out
    venv = target / "venv"
    pip = [str(venv / "bin/python"), "-m", "pip", "install", "--quiet", "--no-index"]
    pip += ["--disable-pip-version-check", "--find-links", str(target / "bundle/wheels")]
    run([layout.python, "-m", "venv", str(venv)])
    run([*pip, str(target / "bundle/src/sdk")])
    run([*pip, f"{target / 'bundle/src'}[journal]"])
    run([str(venv / "bin/huxleyd"), "--check-config", "--config", layout.config])
    shutil.rmtree(target / "bundle")
    return venv


def _dropin(venv: Path, layout: Layout) -> str:
    return (
        "# Written by huxleyctl update: the release huxleyd runs from.\n"
        "[Service]\nExecStart=\n"
        f"ExecStart={venv}/bin/huxleyd --config {layout.config}\n"
    )


def switch(venv: Path, layout: Layout, run: Runner) -> None:
    """Point the unit at ``venv`` and restart; back to the previous release if
    the new one does not reach READY. Raises :class:`UpdateFailed` then."""
    tx = Transaction(layout.root, run)
    # Registered first, so on rollback it runs last: with the old drop-in
    # back, systemd reloads it and the previous version starts again.
    tx.on_rollback(lambda: _restart(run))
    try:
        with tx.step("switching to the new release", "the previous version was restored"):
            tx.write(layout.dropin, _dropin(venv, layout))
        with tx.step("starting the new release (READY)", "see journalctl -u huxleyd"):
            _restart(run)
    except StepFailed as failed:
        failed.rollback_failures = tx.rollback()
        log.error(
            "update_rolled_back",
            step=failed.step,
            error=str(failed.cause),
            not_undone="; ".join(failed.rollback_failures) or None,
        )
        raise UpdateFailed(
            f"{failed.step} failed ({failed.cause}); "
            + (
                "the previous version runs again"
                if not failed.rollback_failures
                else "and going back failed too: " + "; ".join(failed.rollback_failures)
            )
        ) from None


def _restart(run: Runner) -> None:
    run(["systemctl", "daemon-reload"])
    # Type=notify: returns once READY=1 came; fails if the daemon exited first
    # or TimeoutStartSec passed.
    run(["systemctl", "restart", UNIT])


def _prune(layout: Layout, keep: set[Path]) -> list[str]:
    """Remove releases other than ``keep``; their names."""
    removed = []
    for release in sorted((layout.root / layout.releases).iterdir()):
        if release not in keep:
            shutil.rmtree(release, ignore_errors=True)
            removed.append(release.name)
    return removed


def _current_release(layout: Layout) -> Path | None:
    dropin = layout.root / layout.dropin
    if not dropin.is_file():
        return None  # the image's own venv (/opt/huxleyd/venv): never pruned
    for line in dropin.read_text().splitlines():
        if line.startswith("ExecStart=/"):
            return Path(line.split("=", 1)[1].split()[0]).parents[2]
    return None


def update(bundle: Path, *, layout: Layout | None = None, run: Runner = run_command) -> str:
    """Install ``bundle`` and switch to it; its version. Raises
    :class:`BundleError` (nothing changed) or :class:`UpdateFailed` (rolled back)."""
    layout = layout or Layout()
    version = read_version(bundle)
    previous = _current_release(layout)
    if previous == layout.release(version):
        raise BundleError(f"{bundle}: version {version} is the one running")
    log.info("update_started", bundle=str(bundle), version=version)
    try:
        venv = install_release(bundle, version, layout, run)
    except (subprocess.CalledProcessError, OSError, tarfile.TarError) as exc:
        shutil.rmtree(layout.release(version), ignore_errors=True)
        log.error("update_install_failed", version=version, error=str(exc))
        raise UpdateFailed(f"installing {version} failed ({exc}); nothing was switched") from None
    try:
        switch(venv, layout, run)
    except UpdateFailed:
        shutil.rmtree(layout.release(version), ignore_errors=True)  # the card's space
        raise
    keep = {layout.release(version)} | ({previous} if previous is not None else set())
    removed = _prune(layout, keep)
    log.info("update_done", version=version, previous=str(previous or "image"), pruned=removed)
    return version
