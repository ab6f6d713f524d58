"""What the start opens, checked without opening it: the part of preflight that
looks at the state directory, the control socket's path, the pin factory and
the audio files and arithmetic.

Each check calls the function the start itself calls (``period_frames``,
``load_mic_wav``, ``pin_factory_class``, ``socket_path_problem``), so the two
cannot drift apart. Every problem is a :class:`~huxleyd.errors.ConfigError`
naming the file, the key and what was expected.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from huxleyd.audio.backends.callback_backend import forced_callback_missing
from huxleyd.audio.backends.wav_backend import load_mic_wav
from huxleyd.config.control_socket import MAX_SOCKET_PATH_BYTES
from huxleyd.config.files import Reader
from huxleyd.config.load import Config
from huxleyd.errors import AudioError, ConfigError
from huxleyd.hardware.pins import check_pin_factory
from huxleyd.pcm import period_frames
from huxleyd.storage.recovery import in_memory_what, not_writable


def check_devices(config: Config, reader: Reader) -> list[tuple[str, str]]:
    """Everything below, in the order the start meets it; returns the parts the
    start will run degraded, as ``(part, what)`` in the degraded record's words."""
    left_out: list[tuple[str, str]] = []
    storage = check_state_directory(config, reader)
    if storage is not None:
        left_out.append(("storage", storage))
    check_socket_path(config)
    check_pin_factory(config.hardware, config_file=str(config.path))
    check_audio(config)
    fallback = forced_callback_missing(config.audio.backend)
    if fallback is not None:
        left_out.append(("audio", fallback))
    return left_out


PERSONA_SOUNDS = "persona-sounds"
"""The degraded record's part for a persona's sound that cannot be read."""


def persona_sounds_dir(config: Config) -> Path:
    """``<the persona's data_dir>/sounds``: the sounds its skills play (a book's start…)."""
    data_dir = config.persona.data_dir or config.storage.persona_data_dir(config.daemon.persona)
    return data_dir / "sounds"


def persona_sounds_problem(config: Config) -> str | None:
    """Each of the persona's sounds read on its own, as its skills read them
    (:func:`huxley_sdk.audio.read_each_sound`): the degraded record's line naming
    every one that cannot be read and why (None: all play, or there are none)."""
    try:  # here, not at import: doctor must run beside a foreign huxley_sdk to name it
        from huxley_sdk.audio import read_each_sound
    except ImportError:  # doctor's "sdk" line says which SDK this is
        return None
    folder = persona_sounds_dir(config)
    _, broken = read_each_sound(folder)
    if not broken:
        return None
    each = "; ".join(f"{name}: {why}" for name, why in sorted(broken.items()))
    return f"{folder}: {each}: those sounds are silent, the others play"


def check_state_directory(config: Config, reader: Reader) -> str | None:
    """``storage.state_dir`` is a directory ``reader`` may write in.

    As this process (the start, ``--check-config`` by hand) it is created as
    the start creates it. For another reader (root checking for the service
    user) a missing one is left to the unit's ``StateDirectory=``, which
    creates it owned by that user: only its place is checked. Nothing here
    changes an owner.

    A place that cannot be a directory (a file, a broken symlink, under a
    file) is an error in ``huxleyd.toml``: raised. A directory that cannot be
    created or written (an SD card remounted read-only, a wrong owner) is a
    fault of the device, not of the file: the daemon runs on a database in
    memory and says so, so this returns that warning instead of stopping it.
    """
    state, file = config.storage.state_dir, str(config.path)
    key = "storage.state_dir"
    virtual = virtual_filesystem(state)
    if virtual is not None:
        raise ConfigError(
            file,
            key,
            f"expected a directory on a disk for the database: {state} is on {virtual}, "
            "which keeps nothing (e.g. /var/lib/huxleyd)",
        )
    if state.exists() and not state.is_dir():
        raise ConfigError(
            file, key, f"expected a directory for the database: {state} is not a directory"
        )
    if state.is_symlink() and not state.exists():
        raise ConfigError(
            file, key, f"expected a directory for the database: {state} is a broken symlink"
        )
    if not state.exists():
        ancestor = next((p for p in state.parents if p.exists()), None)
        if ancestor is not None and not ancestor.is_dir():
            raise ConfigError(
                file, key, f"expected a directory the daemon can create: {ancestor} is a file"
            )
        if not reader.is_self:
            return None
    if not reader.is_self:  # another user's access: asked, not tried
        if not reader.can_write(state):
            return in_memory_what(f"{reader.describe()} cannot write: {state}")
        return None
    read_only = not_writable(config.storage.database_path(config.daemon.persona))
    return None if read_only is None else in_memory_what(read_only)


VIRTUAL_FILESYSTEMS = {
    "proc": "/proc (the kernel's process files)",
    "sysfs": "/sys (the kernel's device files)",
    "devtmpfs": "/dev (device files)",
    "cgroup": "a cgroup filesystem",
    "cgroup2": "a cgroup filesystem",
    "debugfs": "the kernel's debugfs",
    "tracefs": "the kernel's tracefs",
    "securityfs": "the kernel's securityfs",
    "configfs": "the kernel's configfs",
}
"""Filesystems that are the kernel's view, not storage: nothing written there is kept."""


def virtual_filesystem(path: Path, mountinfo: Path = Path("/proc/self/mountinfo")) -> str | None:
    """What ``path`` (or its nearest existing ancestor) is mounted on, when that is
    one of :data:`VIRTUAL_FILESYSTEMS` (None: a real filesystem, or unknown)."""
    target = path.absolute()
    while not target.exists() and target != target.parent:
        target = target.parent
    with contextlib.suppress(OSError):
        target = target.resolve()
    best, fstype = "", ""
    try:
        lines = mountinfo.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        fields = line.split(" ")
        if " - " not in line or len(fields) < 5:
            continue
        mount = fields[4].replace("\\040", " ")
        kind = line.split(" - ", 1)[1].split(" ")[0]
        inside = str(target) == mount or str(target).startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, fstype = mount, kind
    if fstype in VIRTUAL_FILESYSTEMS:
        return VIRTUAL_FILESYSTEMS[fstype]
    for prefix, kind in (("/proc", "proc"), ("/sys", "sysfs")):  # no mountinfo (a container)
        if target == Path(prefix) or Path(prefix) in target.parents:
            return VIRTUAL_FILESYSTEMS[kind]
    return None


def socket_path_problem(path: Path) -> str | None:
    """Why the control socket cannot be bound at ``path`` (None: it can).

    :class:`~huxleyd.control.server.ControlServer` asks the same question
    before it binds."""
    size = len(os.fsencode(path))
    if size > MAX_SOCKET_PATH_BYTES:
        return (
            f"expected a path of at most {MAX_SOCKET_PATH_BYTES} bytes (a unix socket's "
            f"sun_path limit): {path} is {size} bytes; choose a shorter path"
        )
    parent = path.parent
    if not parent.is_dir():
        what = "does not exist" if not parent.exists() else "is not a directory"
        return (
            f"expected the socket in an existing directory: {parent} {what} "
            "(under systemd, RuntimeDirectory=huxleyd creates /run/huxleyd)"
        )
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"expected a socket path: {path}: {exc.strerror}"
    if not stat.S_ISSOCK(mode):
        return (
            f"expected a socket (or nothing) at {path}: it exists and is not a socket; "
            "move it away or change control.socket_path"
        )
    return None


def check_socket_path(config: Config) -> None:
    problem = socket_path_problem(config.control.socket_path)
    if problem is not None:
        raise ConfigError(str(config.path), "control.socket_path", problem)


def check_audio(config: Config) -> None:
    """The period divides the rates known before a card opens, and the WAV
    backend's files are usable (when that backend may run)."""
    audio, file = config.audio, str(config.path)
    rates = [("audio.device_rate_hz", audio.device_rate_hz)]
    if audio.backend in ("wav", "auto"):
        rates.append(("audio.wav_rate_hz", audio.wav_rate_hz))
    for key, rate in rates:
        if rate is None:
            continue
        try:
            period_frames(rate, audio.period_ms)
        except AudioError as exc:
            raise ConfigError(file, key, f"expected a rate the period divides: {exc}") from None
    if audio.backend not in ("wav", "auto"):
        return
    if audio.mic_wav is not None:
        if audio.mic_wav.exists() and not audio.mic_wav.is_file():  # /dev/full never ends
            raise ConfigError(
                file,
                "audio.mic_wav",
                f"expected a PCM16 WAV file: {audio.mic_wav} is a device, a pipe or a folder",
            )
        try:
            load_mic_wav(
                audio.mic_wav, input_channels=audio.input_channels, rate_hz=audio.wav_rate_hz
            )
        except (AudioError, OSError, ValueError, EOFError) as exc:
            raise ConfigError(file, "audio.mic_wav", f"expected a PCM16 WAV file: {exc}") from None
    if audio.speaker_wav is not None:
        _check_creatable_file(audio.speaker_wav, file=file, key="audio.speaker_wav")


def _check_creatable_file(path: Path, *, file: str, key: str) -> None:
    """``path`` is a regular file or can be created (its first existing
    ancestor is a directory)."""
    if path.is_dir():
        raise ConfigError(file, key, f"expected a file to write: {path} is a directory")
    if path.is_symlink() and not path.exists():
        raise ConfigError(file, key, f"expected a file to write: {path} is a broken symlink")
    if path.exists() and not path.is_file():  # /dev/full: every write would fail
        raise ConfigError(
            file, key, f"expected a regular file to write: {path} is a device or a pipe"
        )
    virtual = virtual_filesystem(path)
    if virtual is not None:  # /proc/version: a kernel file, no write would reach a disk
        raise ConfigError(file, key, f"expected a file on a disk to write: {path} is on {virtual}")
    for ancestor in path.parents:
        if ancestor.exists():
            if not ancestor.is_dir():
                raise ConfigError(
                    file, key, f"expected a file to write: {ancestor} is not a directory"
                )
            return
