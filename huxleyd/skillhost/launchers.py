"""Which way skill hosts start on this machine, and the spawned way.

:func:`launcher_for` picks: as root, :class:`Launcher` through ``setpriv``
to the skill user; under systemd (not root, ``huxleyd-skillhost.socket``
listening), :class:`~huxleyd.skillhost.activated.ActivatedLauncher`; else
:class:`Launcher` as the daemon's own user, said once in the journal
(``skill_host_same_user``: a checkout, ``make run``).
"""

from __future__ import annotations

import asyncio
import os
import pwd
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from huxleyd.errors import SkillHostError
from huxleyd.logs import get_logger
from huxleyd.skillhost.activated import ActivatedLauncher, activation_socket
from huxleyd.skillhost.hostexec import host_argv, host_environ
from huxleyd.skillhost.process import HostLauncher, SpawnedProcess, Started
from huxleyd.skillhost.skillenv import SkillsEnv

log = get_logger("huxleyd.skills")

SKILL_USER = "huxley-skills"
"""The user third-party skills run as (created by the image's sysusers file)."""


@dataclass(frozen=True, slots=True)
class Launcher:
    """How a skill host process starts."""

    python: Path
    uid: int | None = None
    """Switch to this user (and ``gid``) with setpriv; None: run as this process's user."""
    gid: int | None = None
    user: str | None = None

    makes_data_dirs: ClassVar[bool] = True
    """The daemon creates each skill's data folder (and gives it to ``uid``)."""

    def argv(self, mode: str, fd: int | None = None) -> list[str]:
        command = host_argv(self.python, mode, fd)
        if self.uid is None:
            return command
        return [
            "setpriv",
            f"--reuid={self.uid}",
            f"--regid={self.gid}",
            "--clear-groups",
            "--no-new-privs",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--pdeathsig=KILL",
            "--",
            *command,
        ]

    def environ(self) -> dict[str, str]:
        """The child's whole environment: nothing inherited from the daemon."""
        return host_environ("/nonexistent" if self.uid is not None else os.environ.get("HOME", "/"))

    async def start(self) -> Started:
        """Spawn one host on a socket pair: its process and the daemon's end."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            process = await asyncio.create_subprocess_exec(
                *self.argv("host", theirs.fileno()),
                pass_fds=(theirs.fileno(),),
                env=self.environ(),
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            ours.close()
            raise SkillHostError(f"cannot start the skill host: {exc}") from exc
        finally:
            theirs.close()
        reader, writer = await asyncio.open_unix_connection(sock=ours)
        return Started(SpawnedProcess(process), reader, writer)

    def inventory(self, timeout_s: float) -> str:
        """The host's ``--inventory`` output (JSON); SkillHostError with one line."""
        try:
            done = subprocess.run(
                self.argv("inventory"),
                env=self.environ(),
                cwd="/",
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SkillHostError(f"cannot list the skills environment's skills: {exc}") from exc
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise SkillHostError(
                f"the skills environment's interpreter failed to list skills "
                f"(exit {done.returncode}): {last}"
            )
        return done.stdout


def launcher_for(
    env: SkillsEnv,
    *,
    user: str = SKILL_USER,
    euid: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> HostLauncher:
    """The launcher for ``env``; SkillHostError when the host cannot run safely.

    As root the host runs as ``user``; a missing user is an error (a host
    as root would defeat the point), never a silent fallback.
    """
    if not env.exists():
        raise SkillHostError(f"no skills environment at {env.root} (no {env.python})")
    if (os.geteuid() if euid is None else euid) != 0:
        activated = activation_socket(environ)
        if activated.exists():
            return ActivatedLauncher(activated, user=user)
        global _said_same_user
        if not _said_same_user:
            _said_same_user = True
            log.warning(
                "skill_host_same_user",
                reason=f"not root, and no skill host socket at {activated}",
                effect="third-party skills run as the daemon's user, in processes of their own",
            )
        return Launcher(env.python)
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise SkillHostError(
            f"the skill user {user!r} does not exist (systemd-sysusers huxleyd.conf creates it); "
            "third-party skills never run as root"
        ) from None
    return Launcher(env.python, entry.pw_uid, entry.pw_gid, user)


_said_same_user = False
"""``skill_host_same_user`` is said once per daemon, not once per host."""
