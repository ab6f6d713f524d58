"""Where the microphone mute survives a restart: ``<state_dir>/muted``.

A property of the device, not of a persona (the persona databases are one
per persona), so a file of its own in the state directory: ``on`` or
``off``, written to a temporary name and renamed (a power cut leaves the
old state or the new one, never half a file). A file that cannot be read
counts as not muted and says so in the journal: the button must work.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from huxleyd.logs import get_logger

log = get_logger("huxleyd.handsfree")

FILE_NAME = "muted"


def mute_path(state_dir: Path) -> Path:
    return state_dir / FILE_NAME


def read_muted(path: Path) -> bool:
    """The saved mute (False when never saved, or unreadable)."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("mute_state_unreadable", file=str(path), error=str(exc))
        return False
    if text not in ("on", "off"):
        log.warning(
            "mute_state_unreadable", file=str(path), error=f"expected on or off, got {text!r}"
        )
    return text == "on"


def write_muted(path: Path, muted: bool) -> str | None:
    """Save the mute (atomically); an error is logged and returned (the OS's words),
    never raised: the mute still holds, only a restart would forget it."""
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        temporary.write_text("on\n" if muted else "off\n", encoding="ascii")
        os.replace(temporary, path)
    except OSError as exc:
        log.warning("mute_state_not_saved", file=str(path), error=str(exc))
        with contextlib.suppress(OSError):
            temporary.unlink()
        return exc.strerror or str(exc)
    return None
