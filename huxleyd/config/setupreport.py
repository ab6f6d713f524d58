"""Whether the image's first boot failed to apply the setup file.

The image's first boot (:mod:`huxleyd.firstboot`) leaves one line saying
why in the file named by ``HUXLEYD_SETUP_FAILED_FILE`` (set by the image's
drop-in for huxleyd.service; unset elsewhere). A device whose setup failed
has no working provider configuration, so the daemon must not answer as if
it had one (nor from the built-in simulator): it says "setup failed: ..."
on every press (error cue, LEDs) and in ``huxleyctl status``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

__all__ = ["SETUP_FAILED_ENV", "setup_failure"]

SETUP_FAILED_ENV = "HUXLEYD_SETUP_FAILED_FILE"
_MAX_CHARS = 300
"""The report is one line; a longer one is cut (status and the journal show it)."""


def setup_failure(env: Mapping[str, str]) -> str | None:
    """``"setup failed: <why>"``, or None when the setup did not fail."""
    name = env.get(SETUP_FAILED_ENV, "")
    if not name:
        return None
    path = Path(name)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as exc:  # the report exists but cannot be read: still a failure
        return f"setup failed: {path} cannot be read ({exc.strerror or exc})"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    why = lines[0] if lines else f"{path} is empty"
    if len(why) > _MAX_CHARS:
        why = why[: _MAX_CHARS - 1] + "…"
    return f"setup failed: {why}"
