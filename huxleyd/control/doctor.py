"""The checks behind ``huxleyctl doctor``: one small function per thing looked at.

Each check takes the facts it needs (a path, a card name, what the daemon
reports it really uses) and returns a :class:`DoctorCheck`: ``ok`` only
after looking, ``warn`` for what works but should be fixed, ``fail`` with a
``fix`` for 2 a.m., or ``skipped`` with the reason. Two callers assemble
them:

- the daemon (:meth:`RuntimeControl.doctor <huxleyd.app.control.RuntimeControl.doctor>`),
  with what it really runs: the key file it read, its volume backend, its pin
  factory, its open audio device;
- ``huxleyctl`` when no daemon answers (:mod:`huxleyd.control.doctor_local`),
  from the configuration, resolved exactly as the daemon resolves it.

Adding a check is adding a function here (the provider's are in
:mod:`~huxleyd.control.doctor_provider`) and one line in each caller. They
block (files, subprocesses, HTTP), so :func:`run_checks` runs each in a
worker thread. No check ever puts a secret in what it returns.
"""

from __future__ import annotations

import asyncio
import importlib.metadata as metadata
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from huxleyd.config.files import Reader, owner_and_mode
from huxleyd.config.load import DaemonSettings
from huxleyd.config.preflight_io import virtual_filesystem
from huxleyd.control.handler import DoctorCheck
from huxleyd.errors import ConfigError, HuxleydError
from huxleyd.providers.keyfile import parse_key
from huxleyd.skillhost.sdkcheck import SDK_DISTRIBUTION, sdk_problem

MIN_FREE_BYTES = 100 * 1024 * 1024
"""Below this much free space in the state directory, doctor fails."""

PREFERRED_MIXER_CONTROLS = ("Master", "PCM", "Speaker", "Playback", "Headphone", "Digital")
"""The scan order of the volume control (huxleyd.audio.volume.PREFERRED_CONTROLS)."""

Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]
"""Runs a command and returns its output; tests pass a fake that records."""


def run_command(argv: Sequence[str], *, timeout_s: float = 5.0) -> subprocess.CompletedProcess[str]:
    """The real :data:`Runner` (``LC_ALL=C``: the output is parsed)."""
    env = dict(os.environ, LC_ALL="C")
    return subprocess.run(
        list(argv), capture_output=True, text=True, timeout=timeout_s, env=env, check=False
    )


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


# ---------------------------------------------------------------- config


def check_config(load: Callable[[], str], path: Path) -> DoctorCheck:
    """``load()`` resolves the configuration as the daemon's start would, returning a summary."""
    try:
        summary = load()
    except HuxleydError as exc:
        return DoctorCheck.failed(
            "config", _one_line(exc), f"edit it, then run: huxleyd --check-config --config {path}"
        )
    except OSError as exc:
        return DoctorCheck.failed("config", f"{path}: {exc.strerror or exc}", f"check {path}")
    return DoctorCheck.passed("config", f"{path}: {summary}")


# ---------------------------------------------------------------- key file


@dataclass(frozen=True, slots=True)
class KeyFacts:
    """Which key file the daemon uses and why (``--key-file``, the credential, the config)."""

    path: Path | None
    origin: str
    """``--key-file``, ``credential openai-key``, ``provider.key_file``, or why there is none."""
    simulator: bool = False
    """True when no key is used because the built-in simulator answers."""
    refused: str | None = None
    """The provider's words when the running daemon's key was refused (``key_refused``)."""


def check_key_file(facts: KeyFacts, *, reader: Reader | None = None) -> DoctorCheck:
    """The key file exists, is a non-empty regular file ``reader`` (the service user
    when doctor runs as root; default this process) can read, and only its owner may."""
    name = "key file"
    if facts.path is None:
        return _no_key_file(facts)
    path, where = facts.path, f"{facts.path} ({facts.origin})"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return DoctorCheck.failed(name, f"{where} does not exist", f"put the API key in {path}")
    except OSError as exc:
        return DoctorCheck.failed(name, f"{where}: {exc.strerror}", f"check {path}")
    if not stat.S_ISREG(st.st_mode):
        return DoctorCheck.failed(name, f"{where} is not a regular file", f"check {path}")
    who = reader or Reader.this_process()
    if not who.can_read(path):
        return DoctorCheck.failed(
            name,
            f"{where} cannot be read by {who.describe()} ({owner_and_mode(path)})",
            f"chown {who.name} {path} (mode 0600), or pass it as a systemd credential",
        )
    return _key_content(facts, path, st, who)


def _no_key_file(facts: KeyFacts) -> DoctorCheck:
    """No key file configured: the simulator answers (a warning), or why none is needed."""
    if facts.simulator:
        return DoctorCheck.warning(
            "key file",
            f"none ({facts.origin}): the built-in simulator answers, not an AI",
            "put the API key in a file (mode 0600) and set provider.key_file, or pass --key-file",
        )
    return DoctorCheck.skipped("key file", facts.origin)


def _key_content(facts: KeyFacts, path: Path, st: os.stat_result, who: Reader) -> DoctorCheck:
    """What the key file ``who`` may read holds: one token the provider did not
    refuse, no byte order mark, and a mode only its owner may read."""
    name, where = "key file", f"{path} ({facts.origin})"
    try:
        parsed = parse_key(path.read_bytes(), file=str(path), key=facts.origin)
    except ConfigError as exc:  # the start's own words; they never quote the key
        return DoctorCheck.failed(
            name, f"{where}: {exc.problem}", f"put only the API key, on one line, in {path}"
        )
    except OSError as exc:
        return DoctorCheck.skipped(
            name,
            f"{where}: {who.describe()} may read it, but not uid {os.geteuid()} "
            f"({exc.strerror}); run doctor as root or as {who.name} to check its content",
        )
    mode = stat.S_IMODE(st.st_mode)
    if facts.refused is not None:
        return DoctorCheck.failed(
            name,
            f"{where}: the provider refused this key: {_one_line(facts.refused) or 'no reason given'}",
            f"put a valid API key in {path}; the daemon re-reads it before each try",
        )
    if parsed.had_bom:
        return DoctorCheck.warning(
            name,
            f"{where} starts with a UTF-8 byte order mark (the daemon strips it)",
            f"save {path} as plain text without a BOM",
        )
    if mode & 0o077:
        return DoctorCheck.warning(
            name,
            f"{where} may be read by others (mode {mode:04o})",
            f"chmod 600 {path}",
        )
    return DoctorCheck.passed(name, f"{where}: one token, mode {mode:04o}, {st.st_size} bytes")


# ---------------------------------------------------------------- service user


UNIT_FILES = (
    Path("/etc/systemd/system/huxleyd.service"),
    Path("/lib/systemd/system/huxleyd.service"),
    Path("/usr/lib/systemd/system/huxleyd.service"),
)
"""Where ``make install`` (or the image) puts the unit."""


def installed_as_service(unit_files: Sequence[Path] = UNIT_FILES) -> bool:
    """True when huxleyd.service is installed here (not ``make run``'s dev setup)."""
    return any(p.is_file() for p in unit_files)


def check_service_user(
    name: str, *, euid: int | None = None, service: bool | None = None
) -> DoctorCheck:
    """The account the unit runs the daemon as exists; as root, doctor checks the
    files as that user, so a missing one must never pass as "checked as root".
    ``service``: huxleyd.service is installed (default: looked for); on a dev
    setup (``make run``) without it, the default account missing is skipped, and
    said; a name the admin wrote that does not exist still fails."""
    label = "service user"
    uid = os.geteuid() if euid is None else euid
    reader = Reader.user(name)
    installed = installed_as_service() if service is None else service
    if reader is None and not installed and name == DaemonSettings().service_user:
        return DoctorCheck.skipped(
            label,
            f"huxleyd.service is not installed here (make run: the daemon runs as you); "
            f"the service's account {name!r} is checked after `sudo make install`",
        )
    if reader is None:
        return DoctorCheck.failed(
            label,
            f"daemon.service_user {name!r} does not exist: the unit cannot start the daemon "
            "as it, and no file could be checked as it",
            "sudo make install creates it (systemd/huxleyd.sysusers), or set "
            "daemon.service_user to the account that runs huxleyd",
        )
    if uid != 0 and uid != reader.uid:
        return DoctorCheck.warning(
            label,
            f"{name!r} exists (uid {reader.uid}); files were checked as uid {uid}, not as it",
            f"run doctor as root (sudo) or as {name} to check what it can read",
        )
    return DoctorCheck.passed(label, f"{name!r} exists (uid {reader.uid}); files checked as it")


# ---------------------------------------------------------------- audio


XRUN_EVERY_S = 600.0
"""A card that xruns more often than once in this long, on average since the start,
breaks up audibly: doctor warns (one xrun alone never does)."""


# longer than 50 lines: one ladder of verdicts, worst first, each with its own advice
def check_audio_device(
    label: str,
    state: str | None,
    description: str,
    *,
    widened: str = "",
    card_xruns: tuple[int, int] = (0, 0),
    uptime_s: float = 0.0,
    failing: tuple[str, str] | None = None,
) -> DoctorCheck:
    """What the daemon's engine reports about its device (``state`` None: no daemon;
    ``widened``: why it runs a longer period than its first; ``card_xruns``: the
    card's (speaker underruns, mic overruns) since the start, ``uptime_s`` ago;
    ``failing``: the degraded record's speaker part, (what, fix): the same words)."""
    if state is None:
        return DoctorCheck.skipped(
            label, "only the running daemon opens the sound card; start it and run doctor again"
        )
    if failing is not None:
        what, fix = failing
        return DoctorCheck.failed(label, f"speaker: {what} ({description})", fix)
    if description.startswith("wav"):
        return DoctorCheck.warning(
            label,
            f"no sound card: the daemon plays to files, {description}",
            "check `aplay -l`, the board profile's device names, and that the service "
            "user is in the audio group",
        )
    if state != "open":
        return DoctorCheck.failed(
            label,
            f"the device is {state} ({description})",
            "check the board profile's ALSA device names against `aplay -L` / `arecord -L`",
        )
    under, over = card_xruns
    xruns = f"{under} speaker underrun(s) and {over} mic overrun(s) in {uptime_s:.0f} s"
    if under + over > 1 and under + over > uptime_s / XRUN_EVERY_S:
        return DoctorCheck.warning(
            label,
            f"open, but the card xruns (the sound breaks up): {xruns}; {description}",
            "look for what loads the CPU (`top`), check that huxleyd runs SCHED_FIFO "
            "(`ps -L -o cls,comm -p $(pidof huxleyd)`) and the board profile's periods",
        )
    if widened:
        return DoctorCheck.warning(
            label,
            f"open, but the card could not keep its period: {description}",
            "barge-in takes a few ms longer; look for what loads the CPU (`top`) and check "
            "that huxleyd runs SCHED_FIFO; restarting huxleyd tries the short period again",
        )
    return DoctorCheck.passed(label, f"open: {description}; {xruns}")


def mixer_controls(card: str, *, amixer: str = "amixer", run: Runner = run_command) -> list[str]:
    """The simple controls of ``card`` with a playback volume, as ``amixer`` lists them."""
    where = ["-D", card] if card == "default" else ["-c", card]
    done = run([amixer, *where, "scontents"])
    if done.returncode != 0:
        # alsa-lib prints its whole evaluation chain; amixer's own verdict is the last line.
        lines = done.stderr.strip().splitlines()
        raise OSError(lines[-1].strip() if lines else f"amixer exited with {done.returncode}")
    controls: list[str] = []
    current: str | None = None
    for line in done.stdout.splitlines():
        if line.startswith("Simple mixer control '"):
            current = line.split("'")[1]
        elif current and "Capabilities:" in line and "pvolume" in line:
            controls.append(current)
    return controls


def check_mixer(
    *,
    card: str,
    control: str | None,
    backend: str,
    daemon_volume: str | None = None,
    amixer: str = "amixer",
    run: Runner = run_command,
) -> DoctorCheck:
    """The volume control exists on the card, and the daemon really uses it.

    ``daemon_volume``: what the running daemon drives (``mixer 'PCM' on card
    'default'`` or ``software gain``); None without a daemon.
    """
    name = "mixer"
    if backend == "wav":
        return DoctorCheck.skipped(name, "audio.backend is wav: the volume is a software gain")
    fix = f"`amixer -c {card} scontrols` lists the controls; set audio.mixer_control to one"
    try:
        found = mixer_controls(card, amixer=amixer, run=run)
    except (OSError, subprocess.SubprocessError) as exc:
        return _mixer_unreadable(card, exc, backend, daemon_volume, amixer=amixer, fix=fix)
    if control is not None and control not in found:
        listed = ", ".join(found) or "none with a playback volume"
        return DoctorCheck.failed(
            name, f"card {card!r} has no control {control!r} (it has: {listed})", fix
        )
    chosen = control or next((c for c in PREFERRED_MIXER_CONTROLS if c in found), None)
    chosen = chosen or (found[0] if found else None)
    if chosen is None:
        detail = f"card {card!r} has no control with a playback volume: software gain"
        return DoctorCheck.warning(name, detail, "fine for USB speakers without a mixer")
    how = "audio.mixer_control" if control else "found by the scan"
    if daemon_volume is not None and chosen not in daemon_volume:
        return DoctorCheck.failed(
            name,
            f"card {card!r} has {chosen!r} ({how}) but the daemon uses {daemon_volume}",
            "restart the daemon; its log line volume_software says why it fell back",
        )
    uses = f"; the daemon uses {daemon_volume}" if daemon_volume else ""
    return DoctorCheck.passed(name, f"card {card!r} has {chosen!r} ({how}){uses}")


def _mixer_unreadable(
    card: str, exc: Exception, backend: str, daemon_volume: str | None, *, amixer: str, fix: str
) -> DoctorCheck:
    """The card's controls could not be listed: a warning when the daemon runs
    anyway or ``backend = "auto"`` falls back to WAV files, else a failure."""
    if daemon_volume is not None:
        install = "install alsa-utils and " if shutil.which(amixer) is None else ""
        return DoctorCheck.warning(
            "mixer",
            f"cannot read card {card!r} ({_one_line(exc)}); the daemon uses {daemon_volume}",
            f"{install}check audio.mixer_card",
        )
    if backend == "auto":
        return DoctorCheck.warning(
            "mixer",
            f"no mixer on card {card!r} ({_one_line(exc)}): with backend auto the daemon "
            "falls back to WAV files and a software gain",
            "check `aplay -l` and audio.mixer_card (the board profile sets it)",
        )
    return DoctorCheck.failed("mixer", f"card {card!r}: {_one_line(exc)}", fix)


# ---------------------------------------------------------------- GPIO


def check_gpio(
    *,
    factory: str,
    is_mock: bool,
    board: str,
    pins: Mapping[str, int],
    in_use: Mapping[str, str] | None = None,
    probe: Callable[[int], object] | None = None,
) -> DoctorCheck:
    """The pin factory is real and the pins are the board's.

    ``in_use``: role → pin name the daemon's devices hold (``GPIO17``), to
    compare with the board profile; ``probe(pin)`` (no daemon) claims a pin and
    raises when something else holds it.
    """
    name = "gpio"
    listed = ", ".join(f"GPIO{pin} ({role})" for role, pin in pins.items()) or "none"
    if is_mock:
        return DoctorCheck.warning(
            name,
            f"pin factory {factory}: mock pins, the button and LEDs do nothing "
            f"(board {board!r}: {listed})",
            "on a Pi: install lgpio (python3-lgpio) and add the service user to the gpio group",
        )
    wrong = [
        f"{role} is {held}, the board says GPIO{pins[role]}"
        for role, held in (in_use or {}).items()
        if role in pins and held != f"GPIO{pins[role]}"
    ]
    if wrong:
        return DoctorCheck.failed(
            name, "; ".join(wrong), "restart the daemon after changing the board profile"
        )
    busy: list[str] = []
    for role, pin in pins.items():
        if probe is None:
            break
        try:
            probe(pin)
        except Exception as exc:
            busy.append(f"GPIO{pin} ({role}): {_one_line(exc)}")
    if busy:
        return DoctorCheck.failed(
            name,
            "; ".join(busy),
            "`gpioinfo` shows who holds a line; stop it or fix the board profile's pins",
        )
    held = "held by the daemon" if in_use else "free"
    return DoctorCheck.passed(name, f"pin factory {factory}, board {board!r}: {listed} {held}")


# ---------------------------------------------------------------- disk, systemd


def check_disk_space(state_dir: Path, *, min_free_bytes: int = MIN_FREE_BYTES) -> DoctorCheck:
    """The state directory exists, is writable, and has at least ``min_free_bytes`` free."""
    name = "disk"
    virtual = virtual_filesystem(state_dir)
    if virtual is not None:  # no space to free: the kernel's view, not a disk
        return DoctorCheck.failed(
            name,
            f"state directory {state_dir} is on {virtual}: nothing written there is kept",
            "set storage.state_dir to a folder on the card (e.g. /var/lib/huxleyd)",
        )
    if state_dir.exists() and not state_dir.is_dir():
        return DoctorCheck.failed(
            name, f"state directory {state_dir} is not a directory", "fix storage.state_dir"
        )
    if not state_dir.is_dir():
        # The start creates it (the unit's StateDirectory=, or the database's mkdir).
        parent = next((p for p in state_dir.parents if p.is_dir()), Path("/"))
        free_mb = shutil.disk_usage(parent).free / 2**20
        return DoctorCheck.warning(
            name,
            f"state directory {state_dir} does not exist yet; {free_mb:.0f} MB free in {parent}",
            "it is created at start; if the daemon never started, start it",
        )
    if os.statvfs(state_dir).f_flag & os.ST_RDONLY:  # chown cannot fix a read-only mount
        return DoctorCheck.failed(
            name,
            f"{state_dir} is on a read-only filesystem (the card remounted read-only "
            "after errors, or mounted so)",
            "`dmesg | grep -i -e mmc -e ext4` says why; check or replace the card, then "
            "`sudo mount -o remount,rw /` (or reboot)",
        )
    if not os.access(state_dir, os.W_OK):
        return DoctorCheck.failed(
            name,
            f"{state_dir} is not writable by uid {os.geteuid()}",
            f"chown {state_dir} to the service user",
        )
    free = shutil.disk_usage(state_dir).free
    free_mb, want_mb = free / 2**20, min_free_bytes / 2**20
    if free < min_free_bytes:
        return DoctorCheck.failed(
            name,
            f"only {free_mb:.0f} MB free for {state_dir} (want ≥ {want_mb:.0f} MB)",
            "free space: `journalctl --vacuum-size=50M`, remove old files, or a bigger card",
        )
    return DoctorCheck.passed(name, f"{free_mb:.0f} MB free for {state_dir}")


def check_sdk() -> DoctorCheck:
    """``huxley_sdk`` is ours and imports (:mod:`huxleyd.skillhost.sdkcheck`); this venv is the daemon's."""
    problem = sdk_problem()
    if problem is not None:
        return DoctorCheck.failed("sdk", problem.what, problem.fix)
    return DoctorCheck.passed("sdk", f"{SDK_DISTRIBUTION} {metadata.version(SDK_DISTRIBUTION)}")


SYSTEMD_BOOTED = Path("/run/systemd/system")
"""Exists exactly when systemd is the init system (sd_booted(3))."""


def check_systemd_unit(
    unit: str = "huxleyd",
    *,
    booted: bool | None = None,
    run: Runner = run_command,
) -> DoctorCheck:
    """The unit's state as systemd sees it (skipped without systemd)."""
    name = "service"
    if not (SYSTEMD_BOOTED.is_dir() if booted is None else booted):
        return DoctorCheck.skipped(name, "systemd is not running on this machine")
    props = "LoadState,ActiveState,SubState,Result,NRestarts,UnitFileState"
    try:
        done = run(["systemctl", "show", unit, f"--property={props}"])
    except (OSError, subprocess.SubprocessError) as exc:
        return DoctorCheck.skipped(name, f"systemctl did not answer: {_one_line(exc)}")
    state = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    if state.get("LoadState") == "not-found":
        return DoctorCheck.skipped(
            name, f"{unit}.service is not installed here (a daemon started by hand?)"
        )
    if state.get("LoadState") != "loaded":
        return DoctorCheck.failed(
            name,
            f"{unit}.service cannot be loaded ({state.get('LoadState', '?')})",
            f"`systemctl status {unit}` says why; reinstall with `sudo make install`",
        )
    active, sub = state.get("ActiveState", "?"), state.get("SubState", "?")
    restarts = state.get("NRestarts", "0")
    detail = (
        f"{unit}.service {active} ({sub}), {restarts} restart(s), {state.get('UnitFileState', '?')}"
    )
    if active == "active":
        return DoctorCheck.passed(name, detail)
    fix = f"`journalctl -u {unit} -n 50` says why; `sudo systemctl restart {unit}`"
    if active == "activating" and sub == "auto-restart":
        return DoctorCheck.failed(name, f"{detail}: it keeps failing and restarting", fix)
    return DoctorCheck.failed(name, f"{detail}, result {state.get('Result', '?')}", fix)


# ---------------------------------------------------------------- running them


async def run_checks(checks: Iterable[Callable[[], DoctorCheck]]) -> list[DoctorCheck]:
    """Run every check in a worker thread, concurrently; results in the given order.

    A check that raises becomes a failed :class:`DoctorCheck` naming it, so
    one broken probe never hides the others.
    """
    checks = list(checks)

    async def one(check: Callable[[], DoctorCheck]) -> DoctorCheck:
        try:
            return await asyncio.to_thread(check)
        except Exception as exc:
            func = getattr(check, "func", check)  # functools.partial
            label = getattr(func, "__name__", "check").removeprefix("check_")
            return DoctorCheck.failed(
                label,
                f"the check itself failed: {_one_line(exc) or type(exc).__name__}",
                "this is a huxleyd bug; please report it with `huxleyctl logs`",
            )

    return list(await asyncio.gather(*(one(c) for c in checks)))
