"""What the daemon tells a person who started it by hand (``make run``).

Under systemd the journal and ``huxleyctl`` are documented; a person who
typed ``make run`` sees only log lines scroll by. Once the daemon is up,
:func:`next_steps` says how to drive it, where its log and its speaker
file are, and how to stop it.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from huxleyd.config.load import Config
from huxleyd.logs import LOG_FILE_NAME


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it is below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _huxleyctl() -> str:
    beside = Path(sys.executable).parent / "huxleyctl"
    return _shown(beside) if beside.exists() else "huxleyctl"


def next_steps(config_arg: Path, config: Config, *, simulator: bool, audio: str) -> str:
    """The lines to print once the daemon is ready (started by hand)."""
    ctl = f"{_huxleyctl()} --config {shlex.quote(str(config_arg))}"
    who = "the built-in simulator (scripted answers, not an AI)" if simulator else "the provider"
    commands = (
        ("watch", "follow what happens (state, words, tools)"),
        ('say "what time is it"', "a turn by text; prints the answer"),
        ("ptt tap", "press the button for a second"),
        ("status", "what it is doing"),
    )
    width = max(len(command) for command, _ in commands)
    lines = ["", f"huxleyd is ready, talking to {who}. In another terminal:"]
    lines += [f"  {ctl} {command:<{width}}   {what}" for command, what in commands]
    lines.append(f"Logs: here, and {_shown(config.storage.state_dir / LOG_FILE_NAME)} ({ctl} logs)")
    speaker = config.audio.speaker_wav
    if speaker is not None and audio.startswith("wav"):
        lines.append(f"Speaker: {_shown(speaker)} (a valid WAV while it grows: aplay it)")
    lines.append("Stop: Ctrl-C" if os.isatty(0) else f"Stop: kill {os.getpid()}")
    return "\n".join(lines) + "\n"
