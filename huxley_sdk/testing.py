"""Unit-test a skill without the daemon.

::

    ctx = make_test_context(config={"timezone": "Europe/Madrid"})
    await skill.setup(ctx)
    result = await skill.handle("get_current_time", {})
    assert ctx_recorder(ctx).injected == []

Storage and secrets live in memory; ``inject_turn`` and claims are recorded
on the context's :class:`Recorder` (``ctx_recorder(ctx)``); background tasks really run on
the current event loop, without restarts.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from huxley_sdk.context import BackgroundTaskHandle, ClaimHandle, CoroFactory, SkillContext
from huxley_sdk.logging import get_logger
from huxley_sdk.types import ClaimBusyError, ClaimEndReason, InjectPriority, InputClaim


class MemoryStorage:
    """In-memory :class:`~huxley_sdk.context.SkillStorage`."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    async def get_setting(self, key: str, default: str | None = None) -> str | None:
        return self.data.get(key, default)

    async def set_setting(self, key: str, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"storage values are strings; got {type(value).__name__} for {key!r}")
        self.data[key] = value

    async def list_settings(self, prefix: str = "") -> list[tuple[str, str]]:
        return sorted((k, v) for k, v in self.data.items() if k.startswith(prefix))

    async def delete_setting(self, key: str) -> None:
        self.data.pop(key, None)


class MemorySecrets:
    """In-memory :class:`~huxley_sdk.context.SkillSecrets`."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    async def get(self, key: str) -> str | None:
        return self.data.get(key)

    async def set(self, key: str, value: str) -> None:
        self.data[key] = value

    async def delete(self, key: str) -> None:
        self.data.pop(key, None)

    async def keys(self) -> list[str]:
        return sorted(self.data)


@dataclass(frozen=True, slots=True)
class InjectedTurn:
    prompt: str
    dedup_key: str | None
    priority: InjectPriority
    wait: bool


class _TestClaim:
    def __init__(self, claim: InputClaim, recorder: Recorder) -> None:
        self.claim = claim
        self._recorder = recorder
        self._ended: asyncio.Future[ClaimEndReason] = asyncio.get_running_loop().create_future()
        self._ending = False

    def cancel(self) -> None:
        """End with NATURAL (``on_claim_end`` runs in a task, as in the runtime)."""
        if not self._ended.done() and not self._ending:
            asyncio.get_running_loop().create_task(self.end(ClaimEndReason.NATURAL))

    async def end(self, reason: ClaimEndReason) -> None:
        """Test helper: end the claim as the runtime would.

        Like the runtime: the claim stops being active at once, ``on_claim_end``
        is awaited, and only then does ``wait_end()`` return.
        """
        if self._ended.done() or self._ending:
            return
        self._ending = True
        self._recorder.active_claim = None
        try:
            if self.claim.on_claim_end is not None:
                await self.claim.on_claim_end(reason)
        finally:
            self._ended.set_result(reason)

    async def wait_end(self) -> ClaimEndReason:
        return await asyncio.shield(self._ended)


class _TestTask:
    def __init__(self, name: str, task: asyncio.Task[None]) -> None:
        self._name = name
        self.task = task

    @property
    def name(self) -> str:
        return self._name

    def cancel(self) -> None:
        self.task.cancel()

    def done(self) -> bool:
        return self.task.done()


@dataclass
class Recorder:
    """What a skill asked of the runtime during a test."""

    injected: list[InjectedTurn] = field(default_factory=list)
    claims: list[_TestClaim] = field(default_factory=list)
    active_claim: _TestClaim | None = None
    tasks: list[_TestTask] = field(default_factory=list)
    cancelled_claims: list[ClaimEndReason] = field(default_factory=list)
    """Every ``ctx.cancel_active_claim(reason=…)`` call, live claim or not."""

    async def inject_turn(
        self,
        prompt: str,
        *,
        dedup_key: str | None = None,
        priority: InjectPriority = InjectPriority.NORMAL,
    ) -> None:
        self.injected.append(InjectedTurn(prompt, dedup_key, priority, wait=False))

    async def inject_turn_and_wait(self, prompt: str, *, dedup_key: str | None = None) -> None:
        self.injected.append(InjectedTurn(prompt, dedup_key, InjectPriority.NORMAL, wait=True))

    def background_task(
        self,
        name: str,
        coro_factory: CoroFactory,
        *,
        restart_on_crash: bool = True,
        max_restarts_per_hour: int = 10,
        on_permanent_failure: Any = None,
    ) -> BackgroundTaskHandle:
        handle = _TestTask(name, asyncio.get_running_loop().create_task(coro_factory(), name=name))
        self.tasks.append(handle)
        return handle

    async def start_input_claim(self, claim: InputClaim) -> ClaimHandle:
        if self.active_claim is not None:
            raise ClaimBusyError("an input claim is already active")
        handle = _TestClaim(claim, self)
        self.claims.append(handle)
        self.active_claim = handle
        return handle

    async def cancel_active_claim(self, *, reason: ClaimEndReason = ClaimEndReason.NATURAL) -> None:
        self.cancelled_claims.append(reason)
        if self.active_claim is not None:
            await self.active_claim.end(reason)


def make_test_context(
    *,
    name: str = "test",
    config: dict[str, Any] | None = None,
    language: str = "en",
    timezone: str = "UTC",
    persona_data_dir: Path | None = None,
    storage: MemoryStorage | None = None,
) -> SkillContext:
    """A context for unit tests; its recorder is ``ctx_recorder(ctx)``.

    Pass the same ``storage`` to two contexts to simulate a restart.
    """
    recorder = Recorder()
    store = storage if storage is not None else MemoryStorage()
    secrets = MemorySecrets()
    ctx = SkillContext(
        logger=get_logger(f"huxley.skill.{name}", skill=name),
        storage=store,
        secrets=secrets,
        persona_data_dir=persona_data_dir or Path(tempfile.gettempdir()),
        config=dict(config or {}),
        language=language,
        timezone=timezone,
        inject_turn=recorder.inject_turn,
        inject_turn_and_wait=recorder.inject_turn_and_wait,
        background_task=recorder.background_task,
        start_input_claim=recorder.start_input_claim,
        cancel_active_claim=recorder.cancel_active_claim,
    )
    _RECORDERS[id(ctx)] = (ctx, recorder)
    logging.getLogger("huxley").debug("test context for %s", name)
    return ctx


_RECORDERS: dict[int, tuple[SkillContext, Recorder]] = {}


def ctx_recorder(ctx: SkillContext) -> Recorder:
    """The :class:`Recorder` behind a context made by :func:`make_test_context`."""
    try:
        owner, recorder = _RECORDERS[id(ctx)]
    except KeyError:
        raise LookupError("this context was not made by make_test_context") from None
    if owner is not ctx:
        raise LookupError("this context was not made by make_test_context")
    return recorder
