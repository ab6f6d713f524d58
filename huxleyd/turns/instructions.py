"""The session's instructions: the persona's text and what the skills say now.

Huxley skills contribute to the system prompt through ``prompt_context()``
(the reminders skill puts the local time, the time zone and missed
reminders there; audiobooks its book list). Huxley collects them at
session connect only; here they are collected before every turn and
before every follow-up reply after tools ran, so a reminder added a
moment ago is in the next reply's instructions.

:meth:`SessionInstructions.refresh` calls ``apply`` (the provider's
``configure``) only when the text differs from what was last applied: an
unchanged context sends no ``session.update`` (and, on Gemini, plans no
reconnect). The provider cores also re-send only what changed; this is
the earlier, cheaper check.
"""

from __future__ import annotations

from collections.abc import Callable

from huxleyd.logs import get_logger

log = get_logger("huxleyd.turns")


def compose(base: str, context: str) -> str:
    """The persona's instructions, then the skills' context (a blank line between)."""
    return "\n\n".join(part for part in (base.strip(), context.strip()) if part)


class SessionInstructions:
    """Keeps the applied instructions and re-applies them when they change."""

    def __init__(
        self,
        base: str,
        *,
        context: Callable[[], str],
        apply: Callable[[str], None],
    ) -> None:
        self._base = base
        self._context = context
        self._apply = apply
        self._applied: str | None = None
        self.updates = 0
        """How many times ``apply`` ran (the first time included)."""

    @property
    def text(self) -> str:
        """The last applied instructions (composed now when none were applied yet)."""
        if self._applied is None:
            return compose(self._base, self._context())
        return self._applied

    def set_base(self, base: str) -> None:
        """The persona's own instructions changed (a reload); applied at the next refresh."""
        self._base = base

    def refresh(self) -> str:
        """Compose the instructions now; apply them if they changed. Returns them."""
        text = compose(self._base, self._context())
        if text != self._applied:
            first = self._applied is None
            self._applied = text
            self.updates += 1
            self._apply(text)
            if not first:
                log.info("instructions_updated", chars=len(text))
        return text
