"""Unit-test a skill without the daemon: Huxley's helpers, and huxleyd's recorder.

Huxley's (same names, same defaults)::

    ctx = make_test_context(config={"timezone": "Europe/Madrid"})
    await skill.setup(ctx)
    result = await skill.handle("get_current_time", {})
    ctx.logger.ainfo.assert_awaited()          # the logger is a mock

``_NoopSkillStorage`` / ``_NoopSkillSecrets`` are the in-memory stores,
``FakeSkill`` a skill that records its calls.

huxleyd's extension: every context made here also records what the skill
asked of the runtime on a :class:`Recorder` (``ctx_recorder(ctx).injected``,
``.tasks``, ``.cancelled_claims``); background tasks really run on the
current loop, without restarts. ``make_test_context(live_claims=True)``
makes ``ctx.start_input_claim`` latch a claim that lasts until it is ended
(Huxley's default hands back a claim that has already ended NATURAL).
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from unittest.mock import AsyncMock, MagicMock

from huxley_sdk.context import (
    BackgroundTaskHandle,
    ClaimHandle,
    CoroFactory,
    SkillContext,
    SkillLogger,
    SkillSecrets,
    SkillStorage,
    SpeakerVolume,
    _default_start_input_claim,
)
from huxley_sdk.contract import (
    ClaimBusyError,
    ClaimEndReason,
    InjectPriority,
    InputClaim,
    ToolDefinition,
    ToolResult,
)


class _NoopSkillStorage:
    """In-memory :class:`~huxley_sdk.types.SkillStorage` (Huxley's test store)."""

    def __init__(self) -> None:
        self._data: dict[str, str] = {}

    @property
    def data(self) -> dict[str, str]:
        """The stored pairs, for assertions."""
        return self._data

    async def get_setting(self, key: str, default: str | None = None) -> str | None:
        return self._data.get(key, default)

    async def set_setting(self, key: str, value: str) -> None:
        self._data[key] = value

    async def list_settings(self, prefix: str = "") -> list[tuple[str, str]]:
        return sorted((k, v) for k, v in self._data.items() if k.startswith(prefix))

    async def delete_setting(self, key: str) -> None:
        self._data.pop(key, None)


class MemoryStorage(_NoopSkillStorage):
    """The in-memory store, strict like the daemon's: values must be strings."""

    async def set_setting(self, key: str, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"storage values are strings; got {type(value).__name__} for {key!r}")
        await super().set_setting(key, value)


class _NoopSkillSecrets:
    """In-memory :class:`~huxley_sdk.types.SkillSecrets`, optionally pre-filled."""

    def __init__(self, initial: dict[str, str] | None = None) -> None:
        self._data: dict[str, str] = dict(initial or {})

    @property
    def data(self) -> dict[str, str]:
        return self._data

    async def get(self, key: str) -> str | None:
        return self._data.get(key)

    async def set(self, key: str, value: str) -> None:
        self._data[key] = value

    async def delete(self, key: str) -> None:
        self._data.pop(key, None)

    async def keys(self) -> list[str]:
        return sorted(self._data)


MemorySecrets = _NoopSkillSecrets


def mock_logger() -> Any:
    """A MagicMock logger whose async methods (``ainfo``…) are AsyncMocks, as in Huxley."""
    logger = MagicMock()
    for method in ("ainfo", "adebug", "awarning", "aerror", "aexception"):
        setattr(logger, method, AsyncMock())
    return logger


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

    @property
    def handle(self) -> BackgroundTaskHandle:
        return BackgroundTaskHandle(name=self._name, _cancel=self.cancel, _done=self.done)


@dataclass
class Recorder:
    """What a skill asked of the runtime during a test."""

    injected: list[InjectedTurn] = field(default_factory=list)
    claims: list[_TestClaim] = field(default_factory=list)
    active_claim: _TestClaim | None = None
    tasks: list[_TestTask] = field(default_factory=list)
    cancelled_claims: list[ClaimEndReason] = field(default_factory=list)
    """Every ``ctx.cancel_active_claim(reason=…)`` call, live claim or not."""
    requested_claims: list[InputClaim] = field(default_factory=list)
    """Claims passed to ``ctx.start_input_claim`` (without ``live_claims``)."""

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
        task = _TestTask(name, asyncio.get_running_loop().create_task(coro_factory(), name=name))
        self.tasks.append(task)
        return task.handle

    async def start_input_claim(self, claim: InputClaim, /) -> _TestClaim:
        """Latch ``claim`` until it is ended (as the runtime would); ClaimBusyError if one is."""
        if self.active_claim is not None:
            raise ClaimBusyError("an input claim is already active")
        live = _TestClaim(claim, self)
        self.claims.append(live)
        self.active_claim = live
        return live

    async def start_live_claim(self, claim: InputClaim, /) -> ClaimHandle:
        live = await self.start_input_claim(claim)
        return ClaimHandle(_cancel=live.cancel, _wait_end=live.wait_end)

    async def request_claim(self, claim: InputClaim, /) -> ClaimHandle:
        """Huxley's default: record the claim, hand back one already ended NATURAL."""
        self.requested_claims.append(claim)
        return await _default_start_input_claim(claim)

    async def cancel_active_claim(self, *, reason: ClaimEndReason = ClaimEndReason.NATURAL) -> bool:
        self.cancelled_claims.append(reason)
        if self.active_claim is None:
            return False
        await self.active_claim.end(reason)
        return True


def make_test_context(
    *,
    name: str = "test",
    config: dict[str, Any] | None = None,
    persona_data_dir: Path | None = None,
    storage: SkillStorage | None = None,
    secrets: SkillSecrets | None = None,
    language: str | None = None,
    timezone: str = "UTC",
    logger: SkillLogger | None = None,
    live_claims: bool = False,
    speaker_volume: SpeakerVolume | None = None,
) -> SkillContext:
    """A context for unit tests, with Huxley's defaults.

    - ``logger``: a mock (``mock_logger()``) unless one is given;
    - ``storage`` / ``secrets``: in-memory (pass the same ``storage`` to two
      contexts to simulate a restart);
    - ``persona_data_dir``: the temp directory; ``config``: ``{}``;
    - ``language``: ``config["_language"]`` or ``config["language_code"]``
      (lower-cased) when present, else ``"en"``.

    huxleyd's extensions: ``timezone``, ``logger``, ``live_claims``,
    ``speaker_volume`` (the SDK's default, which reads ``None``, unless one is
    given) and the :class:`Recorder` (``ctx_recorder(ctx)``); ``name`` names
    the recorder's tasks.
    """
    cfg = config if config is not None else {}
    if language is None:
        hint = cfg.get("_language") or cfg.get("language_code")
        language = hint.lower() if isinstance(hint, str) and hint else "en"
    recorder = Recorder()
    ctx = SkillContext(
        logger=logger if logger is not None else mock_logger(),
        storage=storage if storage is not None else _NoopSkillStorage(),
        secrets=secrets if secrets is not None else _NoopSkillSecrets(),
        persona_data_dir=persona_data_dir or Path(tempfile.gettempdir()),
        config=cfg,
        language=language,
        timezone=timezone,
        inject_turn=recorder.inject_turn,
        inject_turn_and_wait=recorder.inject_turn_and_wait,
        background_task=recorder.background_task,
        start_input_claim=recorder.start_live_claim if live_claims else recorder.request_claim,
        cancel_active_claim=recorder.cancel_active_claim,
    )
    if speaker_volume is not None:
        ctx = replace(ctx, speaker_volume=speaker_volume)
    _RECORDERS[id(ctx)] = (ctx, recorder)
    return ctx


_RECORDERS: dict[int, tuple[SkillContext, Recorder]] = {}


def ctx_recorder(ctx: SkillContext) -> Recorder:
    """The :class:`Recorder` behind a context made by :func:`make_test_context`."""
    owner, recorder = _RECORDERS.get(id(ctx), (None, None))
    if owner is not ctx or recorder is None:
        raise LookupError("this context was not made by make_test_context")
    return recorder


class FakeSkill:
    """A skill that records its calls: ``setup_called``, ``setup_context``,
    ``teardown_called``, ``handle_calls``.

    One tool ``fake_tool`` by default. ``result`` is one :class:`ToolResult`
    for every call, or a ``{tool_name: ToolResult}`` map (a tool missing
    from it is a ValueError naming the registered ones).
    """

    def __init__(
        self,
        name: str = "fake",
        tools: list[ToolDefinition] | None = None,
        result: ToolResult | dict[str, ToolResult] | None = None,
    ) -> None:
        self._name = name
        self._tools = tools or [
            ToolDefinition(
                name="fake_tool",
                description="A fake tool for testing",
                parameters={"type": "object", "properties": {"arg": {"type": "string"}}},
            )
        ]
        self._result: ToolResult | dict[str, ToolResult] = result or ToolResult(
            output='{"ok": true}'
        )
        self.handle_calls: list[tuple[str, dict[str, Any]]] = []
        self.setup_called = False
        self.setup_context: SkillContext | None = None
        self.teardown_called = False

    @property
    def name(self) -> str:
        return self._name

    @property
    def tools(self) -> list[ToolDefinition]:
        return self._tools

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        self.handle_calls.append((tool_name, args))
        if not isinstance(self._result, dict):
            return self._result
        if tool_name not in self._result:
            raise ValueError(
                f"FakeSkill '{self._name}': no result for tool '{tool_name}'. "
                f"Registered: {list(self._result)}"
            )
        return self._result[tool_name]

    async def setup(self, ctx: SkillContext) -> None:
        self.setup_called = True
        self.setup_context = ctx

    async def teardown(self) -> None:
        self.teardown_called = True
