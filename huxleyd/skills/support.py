"""What every first-party skill's tools share: the error output and the
"was I set up?" check.

Layer: first-party skill support, imported relatively like ``media`` and
``skillclock`` (``from .support import tool_error``), so it stays inside the
skills package: ``huxley_sdk`` and the standard library only, never the
runtime. One shape for a user-fixable error means the model sees the same
keys (``error``, ``message``, then the details) from every skill.
"""

from __future__ import annotations

import json
from typing import Any

from huxley_sdk import SkillContext, ToolResult


def tool_error(code: str, message: str, **details: Any) -> ToolResult:
    """A tool's answer for a problem the user can fix: ``{"error": code, "message": ...}``.

    ``code`` is a stable snake_case word the model can act on; ``details``
    (JSON-serialisable) follow the two fixed keys.
    """
    return ToolResult(output=json.dumps({"error": code, "message": message, **details}))


def require_ctx(ctx: SkillContext | None, skill: str) -> SkillContext:
    """``ctx``, or a RuntimeError naming ``skill`` when ``setup()`` never ran.

    The runtime always calls ``setup()`` first; this turns a broken caller
    (a test, a host bug) into one clear line instead of an AttributeError.
    """
    if ctx is None:
        raise RuntimeError(f"{skill}: setup() was not called")
    return ctx
