"""``huxleyctl update BUNDLE``: a new huxleyd from a file, the whole of it
switched at once, kept only if it stays healthy, switched back by itself if not.

Why a file and not an apt repository of our own: the device must update
with no network but a copied file (a speaker on a network that blocks
everything but the provider), the bundle is made from the same wheel cache
and source the image was built from (nothing new to host, sign or mirror),
and rolling back is moving one symlink, not downgrading packages.

A bundle (``make bundle``) is a tar file::

    huxleyd-update.toml   version = "0.1.1"
    src/                  the source (huxleyd and sdk/, hw/, sounds/)
    wheels/               every dependency, built for the device

The layout (``scripts/install.sh`` with ``HUXLEYD_RELEASE``, as the image
installs)::

    /opt/huxleyd/releases/<version>/venv, share   one release each
    /opt/huxleyd/current -> releases/<version>     THE switch: which one runs
    /opt/huxleyd/venv  -> current/venv             fixed links through it:
    /opt/huxleyd/share -> current/share            never rewritten
    /lib/systemd/system/<unit> -> /opt/huxleyd/share/systemd/<unit>

Everything that runs our code names ``/opt/huxleyd/venv`` or
``/usr/local/bin/huxleyctl`` (-> ``/opt/huxleyd/venv/bin/huxleyctl``): the
unit's ExecStart, the CLI on the PATH, the timers' ``huxleyctl
reboot-if-idle``, first boot's ``python -m huxleyd.firstboot``. The unit
files themselves (``huxleyd.service``, the skill host's socket and
template) are the release's too, in its ``share/systemd``: what systemd
finds in its search path is a link through ``share`` (a "linked unit
file", :func:`link_units`), read again at each ``daemon-reload``. Moving
``current`` (one ``rename()``, atomic) moves them all; nothing is left on
the old release but what is running until the reload and restart. Not
switched: sysusers, tmpfiles and udev files (users, directories and device
owners outlive a release, and a rollback could not take them back), and
the image's own units (reboot timer, first boot), whose commands follow.

The update, all as root:

1. the bundle is unpacked and installed into a new release, with pip
   ``--no-index`` (no network); the running daemon is untouched;
2. the new daemon checks the device's configuration (``--check-config``);
3. ``current`` is moved to the new release, the unit links made for its
   units, systemd reloaded (``daemon-reload``: it reads the new unit files)
   and the unit restarted; ``systemctl restart`` of a ``Type=notify`` unit
   returns once the daemon sent READY=1, and fails if it exited or timed
   out first;
4. the health window (:data:`HEALTH_WINDOW_S`): the new daemon must stay up
   with the same process, not be restarted (a crash, a watchdog timeout),
   answer ``status``, and by the end be connected to its provider or say why
   not (:func:`watch_health`);
5. if any of that fails, ``current`` goes back, systemd is reloaded (the
   previous release's units again), the previous release is restarted, and the state file (:data:`Layout.state`) records the rollback:
   ``huxleyctl status`` and ``doctor`` show it, the daemon cues it at the
   next press, and that version is refused until another one comes;
6. the new and the previous release are kept, older ones removed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from huxleyd import logs
from huxleyd.update.units import INSTALLED_UNITS, UNIT_SUFFIXES, link_units, replace_link

__all__ = [
    "HEALTH_WINDOW_S",
    "BundleError",
    "Health",
    "Layout",
    "UpdateFailed",
    "boot_id",
    "current_release",
    "install_release",
    "read_state",
    "read_version",
    "rollback_note",
    "running_release",
    "state_file",
    "update",
    "watch_health",
]

log = logs.get_logger("huxleyd.update")

MANIFEST = "huxleyd-update.toml"
UNIT = "huxleyd.service"
Runner = Callable[[Sequence[str]], None]

HEALTH_WINDOW_S = 120.0
"""How long a new release must stay healthy after READY before it is kept.

Why 120 s: a hang is seen by systemd's watchdog after ``WatchdogSec=30`` and
restarted ``RestartSec=10`` later, so a release that hangs at once shows a
restart about 40 s after READY, and one that hangs on its first provider
connection (the connect and session setup take up to about 30 s on a slow
link) a restart by about 80 s; 120 s covers both with room for a slow Pi,
and catches the crash "a minute after READY" a one-look check missed. It is
also short enough that an admin waits it out at the prompt. A fault that
needs hours to show is not what a rollback can judge: that release stays,
and the previous one is kept on the card to go back to by hand (another
``huxleyctl update`` of it)."""

HEALTH_POLL_S = 2.0


class BundleError(ValueError):
    """The file is not a usable bundle: names the file and what is wrong."""


class UpdateFailed(RuntimeError):
    """The new version did not start or stay healthy; the previous one runs again
    (or says why not)."""


@dataclass(frozen=True, slots=True)
class Layout:
    """Where things are on the device (tests use a temporary root)."""

    root: Path = Path("/")
    prefix: str = "opt/huxleyd"
    state: str = "var/lib/huxleyd-update/state.json"
    """The update's record: the last rollback and the versions refused since."""
    config: str = "/etc/huxleyd/huxleyd.toml"
    python: str = "/usr/bin/python3"
    legacy_dropin: str = "etc/systemd/system/huxleyd.service.d/release.conf"
    """Where the previous scheme named the release (a unit drop-in): removed."""
    unit_dir: str = "lib/systemd/system"
    """Where ``scripts/install.sh`` puts the units: links into ``share/systemd``."""
    admin_unit_dir: str = "etc/systemd/system"
    """The admin's units and the ``.wants/`` links ``systemctl enable`` makes."""

    @property
    def home(self) -> Path:
        return self.root / self.prefix

    @property
    def releases(self) -> Path:
        return self.home / "releases"

    @property
    def current(self) -> Path:
        return self.home / "current"

    def release(self, version: str) -> Path:
        return self.releases / version


@dataclass(frozen=True, slots=True)
class Health:
    """One look at the new daemon: systemd's view of the unit, and its ``status``."""

    active: bool
    """ActiveState=active, SubState=running."""
    main_pid: int
    restarts: int
    """systemd's NRestarts: automatic restarts (a crash, a watchdog timeout)."""
    result: str = "success"
    """systemd's Result of the last run: exit-code, signal, watchdog, core-dump..."""
    provider_state: str | None = None
    """The daemon's ``status`` provider_state; None when it did not answer."""
    provider_detail: str = ""


Probe = Callable[[], Health]


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
        or version.startswith(".")
        or not all(c.isalnum() or c in ".+-_" for c in version)
    ):
        raise BundleError(f'{bundle}: {MANIFEST}: version must be a string like "0.1.1"')
    return version


# -- the release links ---------------------------------------------------------------


def current_release(layout: Layout) -> str | None:
    """The release ``current`` names, or None (no release layout here)."""
    try:
        target = os.readlink(layout.current)
    except OSError:
        return None
    return Path(target).name


def running_release(prefix: str | None = None) -> str | None:
    """The release this Python runs from (``releases/<name>/venv``), or None
    (a plain venv, a checkout). For ``huxleyctl --version`` and ``status``."""
    import sys

    real = Path(os.path.realpath(prefix if prefix is not None else sys.prefix))
    if real.name == "venv" and real.parent.parent.name == "releases":
        return real.parent.name
    return None


def _point(layout: Layout, version: str) -> None:
    """``current`` -> ``releases/<version>``, in one rename (atomic): every
    path through it names the new release at once, none half-way."""
    layout.home.mkdir(parents=True, exist_ok=True)
    replace_link(layout.current, f"releases/{version}")
    for name in ("venv", "share"):
        link = layout.home / name
        if not link.is_symlink():
            link.symlink_to(f"current/{name}")
    link_units(layout)


def _adopt_plain_install(layout: Layout, run: Runner) -> str | None:
    """A device without the release layout (an older image, ``make install``):
    its venv and share become the release they are, once; their name.

    The venv is moved, not copied: its scripts name ``/opt/huxleyd/venv``,
    which from here on is a link to it (while it is current)."""
    venv, share = layout.home / "venv", layout.home / "share"
    if venv.is_symlink() or not venv.is_dir():
        return None
    name = _installed_version(venv) or "installed"
    target = layout.release(name)
    target.mkdir(parents=True, exist_ok=True)
    venv.rename(target / "venv")
    if share.is_dir() and not share.is_symlink():
        share.rename(target / "share")
    # Its units as installed become its release's, so that going back to it
    # brings them back too.
    for unit in INSTALLED_UNITS:
        installed = layout.root / layout.unit_dir / unit
        if installed.is_file() and not installed.is_symlink():
            (target / "share/systemd").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(installed, target / "share/systemd" / unit)
    _point(layout, name)
    dropin = layout.root / layout.legacy_dropin
    if dropin.exists():  # the old scheme's: ExecStart= is the unit's own again
        dropin.unlink()
        run(["systemctl", "daemon-reload"])
    log.info("update_adopted_install", release=name, path=str(target))
    return name


def _installed_version(venv: Path) -> str | None:
    for info in sorted(venv.glob("lib/python3*/site-packages/huxleyd-*.dist-info")):
        version = info.name.removesuffix(".dist-info").split("-", 1)[1]
        if version and all(c.isalnum() or c in ".+-_" for c in version):
            return version
    return None


# -- install --------------------------------------------------------------------------

SHARED_FILES = ("hw/*.toml", "hw/*.asound.conf", "hw/README.md", "sounds/*.wav")


def install_release(bundle: Path, version: str, layout: Layout, run: Runner) -> Path:
    """Unpack and install ``bundle`` beside the running release; its venv.

    The venv is made where it stays (a venv records its own path), in the
    release's directory, and its ``share`` (board profiles, sounds, the
    image's guide) beside it, as ``scripts/install.sh`` lays them out; the
    running release is never this one (checked by :func:`update`)."""
    target = layout.release(version)
    shutil.rmtree(target, ignore_errors=True)
    (target / "bundle").mkdir(parents=True)
    with tarfile.open(bundle) as tar:
        tar.extractall(target / "bundle", filter="data")  # no absolute paths, links out
    src = target / "bundle/src"
    if not (src / "systemd" / UNIT).is_file():  # the units run the release: never without
        raise FileNotFoundError(f"{bundle}: no src/systemd/{UNIT} in it")
    venv = target / "venv"
    pip = [str(venv / "bin/python"), "-m", "pip", "install", "--quiet", "--no-index"]
    pip += ["--disable-pip-version-check", "--find-links", str(target / "bundle/wheels")]
    run([layout.python, "-m", "venv", str(venv)])
    run([*pip, str(src / "sdk")])
    run([*pip, f"{src}[journal]"])
    run([str(venv / "bin/huxleyd"), "--check-config", "--config", layout.config])
    share = target / "share"
    for pattern in SHARED_FILES:
        for path in sorted(src.glob(pattern)):
            (share / path.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, share / path.parent.name / path.name)
    if (src / "docs/image.md").is_file():
        share.mkdir(exist_ok=True)
        shutil.copyfile(src / "docs/image.md", share / "image.md")
    (share / "systemd").mkdir(parents=True, exist_ok=True)
    for unit in sorted(p for p in (src / "systemd").glob("*") if p.suffix in UNIT_SUFFIXES):
        text = unit.read_text().replace("/opt/huxleyd", f"/{layout.prefix}")  # as install.sh
        (share / "systemd" / unit.name).write_text(text)
    shutil.rmtree(target / "bundle")
    return venv


# -- health ----------------------------------------------------------------------------


def watch_health(
    probe: Probe,
    *,
    window_s: float = HEALTH_WINDOW_S,
    poll_s: float = HEALTH_POLL_S,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> str | None:
    """Watch the new daemon for ``window_s`` after READY: None if it stayed
    healthy, else why not (one line, for the journal, status and the admin).

    Unhealthy: the unit is not running, its main process changed, or systemd
    restarted it (a crash, a watchdog timeout: NRestarts grew) at any look;
    or at the end of the window it never answered ``status``, or is still
    connecting to its provider without having said why not (no error, no
    "offline"). Each look is :func:`probe`; time is ``clock``/``sleep``."""
    start = clock()
    first = probe()
    answered = first.provider_state is not None
    last = first
    while True:
        elapsed = clock() - start
        why = _unhealthy(first, last, elapsed)
        if why is not None:
            return why
        if elapsed >= window_s:
            break
        sleep(min(poll_s, window_s - elapsed))
        last = probe()
        answered = answered or last.provider_state is not None
    if not answered:
        return f"it did not answer status within {window_s:.0f} s of READY"
    if last.provider_state is None:
        return f"it stopped answering status {window_s:.0f} s after READY"
    if last.provider_state == "connecting" and not last.provider_detail:
        return (
            f"{window_s:.0f} s after READY it was still connecting to its provider "
            "and had not said why"
        )
    return None


def _unhealthy(first: Health, now: Health, elapsed: float) -> str | None:
    when = f"{elapsed:.0f} s after READY"
    if now.restarts > first.restarts:
        n = now.restarts - first.restarts
        return f"systemd restarted it {n} time{'s' if n > 1 else ''} ({now.result}) {when}"
    if not now.active:
        return f"it stopped ({now.result}) {when}"
    if now.main_pid != first.main_pid:
        return f"its process changed (pid {first.main_pid} -> {now.main_pid}) {when}"
    return None


def systemd_probe(status: Callable[[], tuple[str, str] | None]) -> Probe:
    """The real :data:`Probe`: ``systemctl show`` of the unit, and ``status``
    (provider state and detail, None when the daemon does not answer)."""

    def probe() -> Health:
        out = subprocess.run(
            ["systemctl", "show", UNIT, "-p", "ActiveState,SubState,MainPID,NRestarts,Result"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout
        props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        provider = status()
        return Health(
            active=props.get("ActiveState") == "active" and props.get("SubState") == "running",
            main_pid=int(props.get("MainPID") or 0),
            restarts=int(props.get("NRestarts") or 0),
            result=props.get("Result", "?"),
            provider_state=provider[0] if provider else None,
            provider_detail=provider[1] if provider else "",
        )

    return probe


# -- the state file ----------------------------------------------------------------------


def read_state(layout: Layout) -> dict[str, Any]:
    """The update's record (empty when there is none or it is unreadable)."""
    return state_file(layout.root / layout.state)


def state_file(path: Path) -> dict[str, Any]:
    """The record at ``path`` (the daemon reads it too); empty if none or unreadable."""
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _write_state(layout: Layout, state: dict[str, Any]) -> None:
    path = layout.root / layout.state
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o755)  # the daemon (user huxley) reads it
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")
    tmp.chmod(0o644)
    os.replace(tmp, path)


def boot_id() -> str:
    """This boot's id (the kernel's), '' when unknown: a rollback is cued in its boot."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def rollback_note(state: dict[str, Any]) -> str | None:
    """The last rollback in one line, for status, doctor and the journal; None if none."""
    rb = state.get("rolled_back")
    if not isinstance(rb, dict):
        return None
    return (
        f"update to {rb.get('version')} rolled back at {rb.get('at')}: {rb.get('reason')}; "
        f"{rb.get('to')} runs (that version is not tried again)"
    )


# -- the update -------------------------------------------------------------------------


def _restart(run: Runner) -> None:
    # The unit files are the release's (link_units): systemd reads the ones
    # ``current`` now names only when reloaded, so before the restart.
    run(["systemctl", "daemon-reload"])
    # Type=notify: returns once READY=1 came; fails if the daemon exited first
    # or TimeoutStartSec passed.
    run(["systemctl", "restart", UNIT])


def _prune(layout: Layout, keep: set[str]) -> list[str]:
    """Remove releases other than ``keep``; their names."""
    removed = []
    for release in sorted(layout.releases.iterdir()):
        if release.name not in keep:
            shutil.rmtree(release, ignore_errors=True)
            removed.append(release.name)
    return removed


# longer than 50 lines: the update in its order: check, install, switch, watch, keep or roll back
def update(
    bundle: Path,
    *,
    layout: Layout | None = None,
    run: Runner = run_command,
    probe: Probe,
    window_s: float = HEALTH_WINDOW_S,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    wall: Callable[[], float] = time.time,
) -> str:
    """Install ``bundle``, switch to it, keep it if it stays healthy; its version.

    Raises :class:`BundleError` (nothing changed) or :class:`UpdateFailed`
    (rolled back, and recorded). ``probe`` tells the new release's health
    (on a device: :func:`systemd_probe` over the daemon's status, which
    ``huxleyctl update`` reads through the control socket)."""
    layout = layout or Layout()
    version = read_version(bundle)
    state = read_state(layout)
    refused = state.get("refused", [])
    if version in refused:
        raise BundleError(
            f"{bundle}: version {version} was rolled back before "
            f"({(state.get('rolled_back') or {}).get('reason', 'unhealthy')}); "
            "it is not tried again: install a newer version"
        )
    previous = current_release(layout) or _adopt_plain_install(layout, run)
    if previous == version:
        raise BundleError(f"{bundle}: version {version} is the one running")
    log.info("update_started", bundle=str(bundle), version=version, previous=previous or "none")
    try:
        install_release(bundle, version, layout, run)
    except (subprocess.CalledProcessError, OSError, tarfile.TarError) as exc:
        shutil.rmtree(layout.release(version), ignore_errors=True)
        log.error("update_install_failed", version=version, error=str(exc))
        raise UpdateFailed(f"installing {version} failed ({exc}); nothing was switched") from None

    _point(layout, version)
    why: str | None
    try:
        _restart(run)
    except subprocess.CalledProcessError as exc:
        why = f"it did not reach READY ({exc})"
    else:
        log.info("update_health_window", version=version, seconds=window_s)
        why = watch_health(probe, window_s=window_s, clock=clock, sleep=sleep)
    if why is not None:
        _roll_back(layout, run, version, previous, why, state, wall)
    state.pop("rolled_back", None)
    state["refused"] = [v for v in refused if v != version]
    state["release"] = version
    _write_state(layout, state)
    keep = {version} | ({previous} if previous else set())
    removed = _prune(layout, keep)
    log.info("update_done", version=version, previous=previous or "none", pruned=removed)
    return version


def _roll_back(
    layout: Layout,
    run: Runner,
    version: str,
    previous: str | None,
    why: str,
    state: dict[str, Any],
    wall: Callable[[], float],
) -> None:
    """Back to ``previous`` and restart it; record and say why. Always raises.

    The record is written first: the previous release's daemon, restarted
    here, reads it at its start (status, doctor, the cue at the next press)."""
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(wall()))
    state["rolled_back"] = {
        "version": version,
        "to": previous,
        "at": at,
        "reason": why,
        "boot_id": boot_id(),
    }
    state["refused"] = sorted({*state.get("refused", []), version})
    state["release"] = previous
    _write_state(layout, state)
    failures = []
    if previous is None:
        failures.append("there is no previous release to go back to")
    else:
        try:
            _point(layout, previous)
            _restart(run)
        except (OSError, subprocess.CalledProcessError) as exc:
            failures.append(f"the previous release {previous} did not start again ({exc})")
    if not failures:
        shutil.rmtree(layout.release(version), ignore_errors=True)  # the card's space
    log.error(
        "update_rolled_back",
        version=version,
        to=previous or "none",
        reason=why,
        not_undone="; ".join(failures) or None,
    )
    raise UpdateFailed(
        f"{version} was rolled back: {why}; "
        + (
            f"the previous version ({previous}) runs again"
            if not failures
            else "and going back failed too: " + "; ".join(failures)
        )
    )
