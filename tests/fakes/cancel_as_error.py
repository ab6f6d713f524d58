"""A background task's body that turns its cancel into an error of its own, as
anyio's task group (its children's errors) or a client's ``__aexit__`` (a failed
disconnect) can: what the daemon's and the skill host's supervisors must still
take for the cancel (``tests/turns/test_supervisor.py``,
``tests/skillhost/test_host_tasks.py``)."""

from __future__ import annotations

import asyncio


class CancelAsError:
    """Waits for ever; cancelled, raises ``RuntimeError`` while :attr:`as_error`.
    A test sets ``as_error = False`` before its clean-up, so a body that a broken
    supervisor restarted still ends and does not keep the loop's teardown waiting."""

    def __init__(self) -> None:
        self.runs = 0
        self.as_error = True

    async def __call__(self) -> None:
        self.runs += 1
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            if self.as_error:
                raise RuntimeError("the connection broke while closing") from None
            raise
