"""The checks behind ``huxleyctl doctor``, as reusable functions.

The daemon's :meth:`ControlHandler.doctor` calls them with its own
configuration and probes, usually through :func:`run_checks` (each check in
a worker thread, all at once, a crashing check reported rather than
raised)::

    checks = await run_checks([
        partial(check_config, config.path),
        partial(check_key_file, config.provider.key_file),
        partial(check_audio_device, "audio output", engine.describe_output),
        partial(check_mixer_control, board.mixer_control, volume.probe),
        partial(check_gpio_pins, {"button": board.button_pin}, pins.probe),
        partial(check_provider_reachable, config.provider.url),
        partial(check_disk_space, config.storage.state_dir),
    ])

Every check returns a :class:`DoctorCheck` whose ``detail`` says what was
found and whose ``fix`` says what to do at 2 a.m. They block (file system,
TCP connect, device open), so they belong in a thread, not on the loop.
No check ever puts a secret in its detail. Probes are callables that raise
on failure and may return a short description of what they found.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from huxleyd.clock import Clock, MonotonicClock
from huxleyd.control.handler import DoctorCheck
from huxleyd.errors import ConfigError

MIN_FREE_BYTES = 100 * 1024 * 1024
"""Below this much free space in the state directory, doctor warns."""

_DEFAULT_PORTS = {"wss": 443, "https": 443, "ws": 80, "http": 80}

Probe = Callable[[], object]


def _error_text(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def _probe(name: str, probe: Probe, fix: str) -> DoctorCheck:
    """Run ``probe``; its return value (if a string) is the detail, a raise is the failure."""
    try:
        found = probe()
    except Exception as exc:
        return DoctorCheck(name, False, _error_text(exc), fix)
    return DoctorCheck(name, True, found if isinstance(found, str) and found else "ok")


def check_config(path: Path) -> DoctorCheck:
    """The daemon configuration and its persona parse and validate."""
    from huxleyd.config import load_config  # config imports every package's settings

    fix = f"edit {path}, then run: huxleyd --check-config --config {path}"
    try:
        config = load_config(path)
    except ConfigError as exc:
        return DoctorCheck("config", False, str(exc), fix)
    except OSError as exc:
        return DoctorCheck("config", False, f"{path}: {exc.strerror or exc}", fix)
    return DoctorCheck("config", True, f"{path} is valid (persona {config.persona.name!r})")


def check_key_file(path: Path | None) -> DoctorCheck:
    """The API key file is there, readable, non-empty and private.

    ``None`` means no key: the daemon talks to the built-in simulator, which
    is a protocol peer and not an AI; the check passes but says so.
    """
    name = "key file"
    if path is None:
        return DoctorCheck(
            name,
            True,
            "no provider.key_file: running against the built-in simulator (not an AI)",
            "to talk to OpenAI, set provider.key_file to a file holding the API key",
        )
    try:
        st = os.stat(path)
        with open(path, "rb") as fh:
            # Read to prove readability; the bytes never leave this function.
            empty = not fh.read(4096).strip()
    except FileNotFoundError:
        return DoctorCheck(
            name, False, f"{path} does not exist", f"put the API key in {path} (mode 0600)"
        )
    except PermissionError:
        return DoctorCheck(
            name,
            False,
            f"{path} is not readable by uid {os.geteuid()}",
            f"chown the file to the service user (or use LoadCredential=) and chmod 600 {path}",
        )
    except OSError as exc:
        return DoctorCheck(name, False, f"{path}: {exc.strerror or exc}", f"check {path}")
    if not stat.S_ISREG(st.st_mode):
        return DoctorCheck(name, False, f"{path} is not a regular file", f"check {path}")
    if empty:
        return DoctorCheck(name, False, f"{path} is empty", f"put the API key in {path}")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        return DoctorCheck(
            name,
            False,
            f"{path} is readable by others (mode {mode:04o})",
            f"chmod 600 {path}",
        )
    return DoctorCheck(name, True, f"{path} is readable and private (mode {mode:04o})")


def check_audio_device(label: str, probe: Probe) -> DoctorCheck:
    """An audio device opens. ``probe`` opens it (or, when the engine already
    holds it, reports on the open stream) and raises if it cannot."""
    return _probe(
        label,
        probe,
        "check the board profile's ALSA device names against `aplay -L` / `arecord -L`, "
        "and that the service user is in the audio group",
    )


def check_mixer_control(control: str | None, probe: Probe) -> DoctorCheck:
    """The hardware volume control exists. ``None``: the card has none and the
    daemon uses software gain, which is fine."""
    if control is None:
        return DoctorCheck("mixer", True, "no mixer control configured: software gain")
    check = _probe(
        "mixer",
        probe,
        f"`amixer scontrols` lists the card's controls; set the board profile's "
        f"mixer control (now {control!r}) to one of them",
    )
    if check.ok and check.detail == "ok":
        return DoctorCheck("mixer", True, f"mixer control {control!r} found")
    return check


def check_gpio_pins(pins: Mapping[str, int], probe: Callable[[int], object]) -> DoctorCheck:
    """Each named pin can be claimed. ``probe(pin)`` raises when the pin is busy."""
    if not pins:
        return DoctorCheck("gpio", True, "no GPIO pins configured")
    busy: list[str] = []
    for role, pin in pins.items():
        try:
            probe(pin)
        except Exception as exc:
            busy.append(f"GPIO{pin} ({role}): {_error_text(exc)}")
    listed = ", ".join(f"GPIO{pin} ({role})" for role, pin in pins.items())
    if busy:
        return DoctorCheck(
            "gpio",
            False,
            "; ".join(busy),
            "`gpioinfo` shows who holds a line; stop that process or fix the board "
            "profile's pins, and check the service user is in the gpio group",
        )
    return DoctorCheck("gpio", True, f"free: {listed}")


def check_provider_reachable(
    url: str, *, timeout_s: float = 3.0, clock: Clock | None = None
) -> DoctorCheck:
    """A TCP connection to the provider URL's host and port succeeds within ``timeout_s``."""
    name = "provider"
    parts = urlsplit(url)
    try:
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        port = None
    host = parts.hostname
    if not host or port is None:
        return DoctorCheck(
            name,
            False,
            f"provider.url {url!r} has no host or port",
            "set provider.url to e.g. wss://api.openai.com/v1/realtime",
        )
    where = f"{host}:{port}"
    clock = clock or MonotonicClock()
    started = clock.monotonic()
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except socket.gaierror as exc:
        return DoctorCheck(
            name,
            False,
            f"cannot resolve {host}: {exc.strerror}",
            "check DNS (`resolvectl status`) and the network connection",
        )
    except TimeoutError:
        return DoctorCheck(
            name,
            False,
            f"no answer from {where} within {timeout_s:g} s",
            "check the network, a firewall or a captive portal",
        )
    except OSError as exc:
        return DoctorCheck(
            name,
            False,
            f"cannot connect to {where}: {exc.strerror or exc}",
            "check the network and provider.url",
        )
    elapsed_ms = (clock.monotonic() - started) * 1000.0
    return DoctorCheck(name, True, f"{where} accepts connections ({elapsed_ms:.0f} ms)")


def check_disk_space(state_dir: Path, *, min_free_bytes: int = MIN_FREE_BYTES) -> DoctorCheck:
    """The state directory exists, is writable, and has at least ``min_free_bytes`` free."""
    name = "disk"
    if not state_dir.is_dir():
        return DoctorCheck(
            name,
            False,
            f"state directory {state_dir} does not exist",
            "create it (the unit's StateDirectory= does) or fix storage.state_dir",
        )
    if not os.access(state_dir, os.W_OK):
        return DoctorCheck(
            name,
            False,
            f"{state_dir} is not writable by uid {os.geteuid()}",
            f"chown {state_dir} to the service user",
        )
    free = shutil.disk_usage(state_dir).free
    free_mb = free / (1024 * 1024)
    want_mb = min_free_bytes / (1024 * 1024)
    if free < min_free_bytes:
        return DoctorCheck(
            name,
            False,
            f"only {free_mb:.0f} MB free for {state_dir} (want ≥ {want_mb:.0f} MB)",
            "free space: `journalctl --vacuum-size=50M`, remove old files, or use a bigger card",
        )
    return DoctorCheck(name, True, f"{free_mb:.0f} MB free for {state_dir}")


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
            return DoctorCheck(
                label,
                False,
                f"the check itself failed: {_error_text(exc)}",
                "this is a huxleyd bug; please report it with `huxleyctl logs`",
            )

    return list(await asyncio.gather(*(one(c) for c in checks)))
