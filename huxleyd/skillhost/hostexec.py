"""How a skill host process starts: its argv and environment, and its first step under systemd.

Both ways a host starts use :func:`host_argv` and :func:`host_environ`, so
there is one host, started two ways:

- **spawned** (:class:`huxleyd.skillhost.process.Launcher`): the daemon runs
  the skills environment's interpreter itself, through ``setpriv`` when it is
  root;
- **activated** (:mod:`huxleyd.skillhost.activated`): under systemd the
  daemon runs as its own user with ``NoNewPrivileges=yes`` and no
  capabilities, so it cannot switch users. It connects to
  ``huxleyd-skillhost.socket`` instead, and systemd starts one
  ``huxleyd-skillhost@.service`` per connection as ``huxley-skills``, with
  the connection as stdin and stdout, running ``python -I -m
  huxleyd.skillhost.hostexec ENV``: :func:`main` reads the mode the daemon
  asks for (``host`` or ``inventory``), answers its pid, and replaces itself
  with the skills environment's interpreter on the same socket.

The standard library only: this runs as the skill user before any skill
code, and imports nothing of the daemon's that could read its config.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

HOSTPATH = Path(__file__).resolve().parent / "hostpath"
"""The host's whole ``PYTHONPATH``: the ``huxley_skillhost`` package and nothing else."""
MODES = ("host", "inventory")
MODE_LINE_MAX = 16
MODE_DEADLINE_S = 10
"""A connection that names no mode within this long ends (a stuck peer holds no process)."""
WATCHDOG_VARIABLES = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")
"""What the activated host keeps of systemd's environment: its loop pings the
unit's watchdog (``WatchdogSec=``), so a host whose loop hangs is killed by
systemd, as the daemon cannot signal a process of another user."""


def host_argv(python: Path | str, mode: str, fd: int | None = None) -> list[str]:
    """The skills interpreter running one host on socket ``fd``, or listing the skills."""
    command = [str(python), "-P", "-s", "-m", "huxley_skillhost"]
    if mode == "inventory":
        return [*command, "--inventory"]
    if mode != "host" or fd is None:
        raise ValueError(f"mode {mode!r} (fd {fd}): expected 'host' with an fd, or 'inventory'")
    return [*command, "--fd", str(fd)]


def host_environ(home: str, keep: dict[str, str] | None = None) -> dict[str, str]:
    """The host's whole environment: nothing of the daemon's but ``keep``."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": str(HOSTPATH),
        "PYTHONDONTWRITEBYTECODE": "1",
        "LANG": "C.UTF-8",
        "HOME": home,
        **(keep or {}),
    }


def read_mode(fd: int) -> str:
    """The mode line the daemon sends first, read byte by byte (nothing past it is taken)."""
    line = b""
    while not line.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte or len(line) >= MODE_LINE_MAX:
            raise ValueError(f"no mode line (got {line!r}); expected one of {MODES}")
        line += byte
    mode = line.decode("ascii", errors="replace").strip()
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: expected one of {MODES}")
    return mode


def main(argv: list[str] | None = None) -> int:
    """``hostexec ENV``: stdin and stdout are the daemon's connection."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -I -m huxleyd.skillhost.hostexec SKILLS_ENV", file=sys.stderr)
        return 2
    python = Path(args[0]) / "bin" / "python"
    signal.alarm(MODE_DEADLINE_S)
    try:
        mode = read_mode(0)
    except (OSError, ValueError) as exc:
        print(f"huxleyd-skillhost: {exc}", file=sys.stderr)
        return 1
    signal.alarm(0)
    os.write(1, f"pid {os.getpid()}\n".encode())
    if mode == "host":
        # The link is fd 0; a skill printing to stdout must not write into it.
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    keep = {name: os.environ[name] for name in WATCHDOG_VARIABLES if name in os.environ}
    os.execve(python, host_argv(python, mode, 0), host_environ("/nonexistent", keep))


if __name__ == "__main__":
    raise SystemExit(main())
