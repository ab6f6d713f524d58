"""Running a response's tool calls: concurrently, each with exactly one output.

A call starts the moment the provider reports it (not at the end of the
response), so a slow tool overlaps the rest of the model's output. The
caller learns of each finished call through the ``on_done`` it passed to
:meth:`ToolRunner.start`, and of the side effects that must act at once
(CancelMedia) in the same place. A side effect whose result the model must
hear (SetVolume: the level really set, whether it was saved) acts in the
call itself, through the ``finish`` step the owner gives: the call is done
once its output says what happened. :meth:`ToolRunner.cancel_all` turns every unfinished call into a
``{"cancelled": true}`` outcome, so an interrupted reply still answers every
call.

The runner is also the turn's answer ledger: every call it has seen is
either answered (its output handed to the provider, :meth:`ToolRunner.mark_answered`)
or listed by :meth:`ToolRunner.unanswered`, so whatever ends a reply (no
``response.done``, a barge-in, a lost connection, a new turn) can answer
exactly the calls still owed, each exactly once.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable

from huxleyd.providers.events import ToolCall
from huxleyd.skillhost.host import CANCELLED_OUTPUT, SkillHost, ToolOutcome

Finish = Callable[[ToolOutcome], Awaitable[ToolOutcome]]
"""A step after the skill answered, before the call is done: it may act on the
side effect and return the outcome with what happened added to its output. It
must not raise (if it does, the call is answered ``tool_failed``)."""


class ToolRunner:
    """The tool calls of the current turn."""

    def __init__(self, host: SkillHost, *, finish: Finish | None = None) -> None:
        self._host = host
        self._finish = finish
        self._tasks: dict[str, asyncio.Task[ToolOutcome]] = {}
        self._outcomes: dict[str, ToolOutcome] = {}
        self._calls: dict[str, ToolCall] = {}
        self._answered: set[str] = set()

    def start(self, call: ToolCall, *, on_done: Callable[[ToolOutcome], None]) -> None:
        """Run ``call`` unless it is already running or done (duplicate ids are ignored);
        ``on_done`` hears its outcome once it finishes (not when it is cancelled)."""
        if call.call_id in self._calls:
            return
        self._calls[call.call_id] = call
        task = asyncio.get_running_loop().create_task(
            self._run(call), name=f"tool-{call.name}-{call.call_id}"
        )
        self._tasks[call.call_id] = task
        task.add_done_callback(functools.partial(self._finished, call.call_id, on_done))

    async def _run(self, call: ToolCall) -> ToolOutcome:
        outcome = await self._host.call(call.call_id, call.name, call.arguments_json)
        return outcome if self._finish is None else await self._finish(outcome)

    def _finished(
        self,
        call_id: str,
        on_done: Callable[[ToolOutcome], None],
        task: asyncio.Task[ToolOutcome],
    ) -> None:
        self._tasks.pop(call_id, None)
        if task.cancelled() or call_id in self._outcomes:
            return
        exc = task.exception()
        if exc is not None:  # SkillHost.call never raises; be safe anyway
            outcome = ToolOutcome(
                call_id, self._calls[call_id].name, '{"error": "tool_failed"}', error="tool_failed"
            )
        else:
            outcome = task.result()
        self._outcomes[call_id] = outcome
        on_done(outcome)

    def known(self, call_id: str) -> bool:
        return call_id in self._calls or call_id in self._answered

    def mark_answered(self, call_id: str) -> bool:
        """Record that ``call_id``'s output went out. False if it already had one."""
        if call_id in self._answered:
            return False
        self._answered.add(call_id)
        return True

    def unanswered(self) -> list[ToolOutcome]:
        """What every call still owed an output should get, each once: a finished
        call its own outcome, a running one (now cancelled) ``{"cancelled": true}``."""
        self.cancel_all()
        return [outcome for cid, outcome in self._outcomes.items() if cid not in self._answered]

    def done(self, call_ids: tuple[str, ...]) -> bool:
        return all(cid in self._outcomes for cid in call_ids)

    def outcome(self, call_id: str) -> ToolOutcome | None:
        return self._outcomes.get(call_id)

    @property
    def running(self) -> bool:
        return bool(self._tasks)

    def cancel_all(self) -> list[ToolOutcome]:
        """Cancel what still runs; returns a ``cancelled`` outcome for each."""
        cancelled: list[ToolOutcome] = []
        for call_id, task in list(self._tasks.items()):
            task.cancel()
            outcome = ToolOutcome(
                call_id, self._calls[call_id].name, CANCELLED_OUTPUT, error="cancelled"
            )
            self._outcomes[call_id] = outcome
            cancelled.append(outcome)
        self._tasks.clear()
        return cancelled

    def reset(self) -> None:
        """Forget the turn's calls (a new turn). Answer :meth:`unanswered` first."""
        self.cancel_all()
        self._outcomes.clear()
        self._calls.clear()
        self._answered.clear()
