"""What the daemon tells a person who started it by hand (``make run``).

Under systemd the journal and ``huxleyctl`` are documented; a person who
typed ``make run`` sees only log lines scroll by. Once the daemon is up,
:func:`next_steps` says how to drive it, where its log and its speaker
file are, and how to stop it.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from huxleyd.config.load import Config
from huxleyd.logs import LOG_FILE_NAME
from huxleyd.providers.base import ConnectionState, ConnectionStatus


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it is below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _huxleyctl() -> str:
    beside = Path(sys.executable).parent / "huxleyctl"
    return _shown(beside) if beside.exists() else "huxleyctl"


def next_steps(
    config_arg: Path, config: Config, *, simulator: bool, audio: str, offline: str | None = None
) -> str:
    """The lines to print once the daemon is ready (started by hand). ``offline``:
    why the provider could not be reached on the first try (None: it was)."""
    ctl = f"{_huxleyctl()} --config {shlex.quote(str(config_arg))}"
    who = "the built-in simulator (scripted answers, not an AI)" if simulator else "the provider"
    commands = (
        ("watch", "follow what happens (state, words, tools)"),
        ('say "what time is it"', "a turn by text; prints the answer"),
        ("ptt tap", "press the button for a second"),
        ("status", "what it is doing"),
    )
    width = max(len(command) for command, _ in commands)
    if offline is not None and not simulator:
        head = (
            f"huxleyd is ready but offline: the provider at {config.provider.url} cannot be "
            f"reached ({offline}); it keeps retrying, `status` says when it is back. "
            "In another terminal:"
        )
    else:
        head = f"huxleyd is ready, talking to {who}. In another terminal:"
    lines = ["", head]
    lines += [f"  {ctl} {command:<{width}}   {what}" for command, what in commands]
    lines.append(f"Logs: here, and {_shown(config.storage.state_dir / LOG_FILE_NAME)} ({ctl} logs)")
    speaker = config.audio.speaker_wav
    if speaker is not None and audio.startswith("wav"):
        lines.append(f"Speaker: {_shown(speaker)} (a valid WAV while it grows: aplay it)")
    lines.append("Stop: Ctrl-C" if os.isatty(0) else f"Stop: kill {os.getpid()}")
    return "\n".join(lines) + "\n"


async def first_outcome(state: Callable[[], ConnectionStatus], *, limit_s: float) -> str | None:
    """Wait (at most ``limit_s``) for the first try's outcome: None when connected,
    else why not (the status's detail, or its state)."""
    deadline = asyncio.get_running_loop().time() + limit_s
    while True:
        status = state()
        if status.state is ConnectionState.CONNECTED:
            return None
        if status.state.link_down and status.state is not ConnectionState.CLOSED:
            return status.detail or status.state.value
        if asyncio.get_running_loop().time() >= deadline:
            return f"no answer in {limit_s:g} s"
        await asyncio.sleep(0.05)
