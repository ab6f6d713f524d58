"""What a skill receives in ``setup(ctx)``, the handles it gets back, and the Skill protocol.

The runtime builds one :class:`SkillContext` per skill: storage and secrets
namespaced to that skill, callables (``inject_turn``, ``start_input_claim``…)
bound to the runtime. Every callable has a harmless default, as in Huxley,
so ``SkillContext(logger=…, storage=…, secrets=…, persona_data_dir=…,
config={})`` is a working no-op context for tests.
``huxley_sdk.testing.make_test_context`` builds one with in-memory stores.

All names here are re-exported from ``huxley_sdk.types`` and ``huxley_sdk``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from huxley_sdk.catalog import Catalog
from huxley_sdk.contract import (
    ClaimEndReason,
    InjectPriority,
    InputClaim,
    PermanentFailure,
    ToolDefinition,
    ToolResult,
)

# ---------------------------------------------------------------- stores


@runtime_checkable
class SkillStorage(Protocol):
    """A skill's own key-value store (strings), persisted per persona.

    Keys are private to the skill: two skills may use the same key. Use
    composite keys (``timer:<id>``) and ``list_settings(prefix)`` for
    families of entries; ``delete_setting`` removes one outright.
    """

    async def get_setting(self, key: str, default: str | None = None) -> str | None: ...

    async def set_setting(self, key: str, value: str) -> None: ...

    async def list_settings(self, prefix: str = "") -> list[tuple[str, str]]:
        """``(key, value)`` pairs whose key starts with ``prefix``, sorted by key."""
        ...

    async def delete_setting(self, key: str) -> None: ...


@runtime_checkable
class SkillSecrets(Protocol):
    """A skill's secrets (tokens, passwords): a flat ``str -> str`` map kept
    readable by the service user only. JSON-encode nested values yourself."""

    async def get(self, key: str) -> str | None: ...

    async def set(self, key: str, value: str) -> None: ...

    async def delete(self, key: str) -> None: ...

    async def keys(self) -> list[str]: ...


class SkillLogger(Protocol):
    """The logger a skill gets, already bound to ``skill=<name>``.

    Huxley's contract is the five async methods (``await
    ctx.logger.ainfo("event", key=value)``). The sync forms (``info``…)
    are a huxleyd extension that the daemon's logger provides; a skill
    meant to run on both uses the async ones. How events reach the journal
    is the daemon's business, not the SDK's.
    """

    async def ainfo(self, event: str, **kwargs: Any) -> None: ...
    async def adebug(self, event: str, **kwargs: Any) -> None: ...
    async def awarning(self, event: str, **kwargs: Any) -> None: ...
    async def aerror(self, event: str, **kwargs: Any) -> None: ...
    async def aexception(self, event: str, **kwargs: Any) -> None: ...

    def debug(self, event: str, /, **kwargs: Any) -> None: ...
    def info(self, event: str, /, **kwargs: Any) -> None: ...
    def warning(self, event: str, /, **kwargs: Any) -> None: ...
    def error(self, event: str, /, **kwargs: Any) -> None: ...
    def exception(self, event: str, /, **kwargs: Any) -> None: ...


# ---------------------------------------------------------------- handles


@dataclass(frozen=True, slots=True)
class ClaimHandle:
    """A skill's handle on an input claim started with ``ctx.start_input_claim``.

    Built by the runtime from two callables: ``cancel()`` ends the claim
    with NATURAL (idempotent), ``await wait_end()`` returns why it ended
    (at once if it already has).
    """

    _cancel: Callable[[], None]
    _wait_end: Callable[[], Awaitable[ClaimEndReason]]

    def cancel(self) -> None:
        self._cancel()

    async def wait_end(self) -> ClaimEndReason:
        return await self._wait_end()


@dataclass(frozen=True, slots=True)
class BackgroundTaskHandle:
    """A skill's handle on a task started with ``ctx.background_task``.

    Hold it only to stop that task early: ``cancel()`` (idempotent) stops
    it and no restart follows. The runtime cancels every task at shutdown
    anyway. ``done()`` is a huxleyd extension (False when the runtime that
    built the handle cannot tell).
    """

    name: str
    _cancel: Callable[[], None]
    _done: Callable[[], bool] | None = None

    def cancel(self) -> None:
        self._cancel()

    def done(self) -> bool:
        return self._done() if self._done is not None else False


# ---------------------------------------------------------------- callables

CoroFactory = Callable[[], Coroutine[Any, Any, None]]
"""What ``background_task`` takes: a function returning a fresh coroutine per (re)start."""

ClientEventHandler = Callable[[dict[str, Any]], Awaitable[None]]
"""A ``subscribe_client_event`` handler; it receives the event's data (``{}`` if none)."""


class InjectTurn(Protocol):
    """``await ctx.inject_turn(prompt, *, dedup_key=None, priority=NORMAL)``: speak first.

    Idle: the assistant speaks now. Busy: queued; a queued entry with the
    same ``dedup_key`` is replaced. ``priority`` decides what it may cut
    into (:class:`~huxley_sdk.types.InjectPriority`).
    """

    async def __call__(
        self,
        prompt: str,
        /,
        *,
        dedup_key: str | None = None,
        priority: InjectPriority = InjectPriority.NORMAL,
    ) -> None: ...


class InjectTurnAndWait(Protocol):
    """Like :class:`InjectTurn` but returns once the announcement has been heard
    (or at once, queued, when a turn is already running)."""

    async def __call__(self, prompt: str, /, *, dedup_key: str | None = None) -> None: ...


class BackgroundTask(Protocol):
    """``ctx.background_task(name, coro_factory, …)``: a supervised task.

    Crashes are logged and restarted with backoff while fewer than
    ``max_restarts_per_hour`` restarts happened in the last hour; after
    that (or at once with ``restart_on_crash=False``)
    ``on_permanent_failure`` receives a :class:`PermanentFailure`.
    """

    def __call__(
        self,
        name: str,
        coro_factory: CoroFactory,
        *,
        restart_on_crash: bool = True,
        max_restarts_per_hour: int = 10,
        on_permanent_failure: Callable[[PermanentFailure], Awaitable[None]] | None = None,
    ) -> BackgroundTaskHandle: ...


class StartInputClaim(Protocol):
    """``await ctx.start_input_claim(claim)``: take the microphone now.

    For claims no tool call leads to (an incoming call noticed by a
    background task); a tool returns ``InputClaim`` as its side effect
    instead. Raises :class:`~huxley_sdk.types.ClaimBusyError` while
    another claim is live.
    """

    async def __call__(self, claim: InputClaim, /) -> ClaimHandle: ...


class CancelActiveClaim(Protocol):
    """``await ctx.cancel_active_claim(reason=NATURAL)``: end the live claim.

    True if a claim was live and is now ending, False if there was none.
    """

    async def __call__(self, /, *, reason: ClaimEndReason = ClaimEndReason.NATURAL) -> bool: ...


class SubscribeClientEvent(Protocol):
    """``ctx.subscribe_client_event(key, handler)``: call ``handler(data)`` on
    each client event named ``key``. Several skills may subscribe to one
    key; handlers run concurrently, a raising one does not stop the others.
    What the "client" is on huxleyd is the runtime's to document."""

    def __call__(self, key: str, handler: ClientEventHandler, /) -> None: ...


class EmitServerEvent(Protocol):
    """``await ctx.emit_server_event(event, data=None)``: tell the client
    something; a no-op when no client listens."""

    async def __call__(self, event: str, data: dict[str, Any] | None = None, /) -> None: ...


# The defaults: what a context not built by a runtime does. Like Huxley's,
# they do nothing harmful, so a skill's setup() and handle() run in tests.


async def _noop_inject_turn(
    _prompt: str,
    /,
    *,
    dedup_key: str | None = None,
    priority: InjectPriority = InjectPriority.NORMAL,
) -> None:
    return None


async def _noop_inject_turn_and_wait(_prompt: str, /, *, dedup_key: str | None = None) -> None:
    return None


def _default_background_task(
    name: str,
    coro_factory: CoroFactory,
    *,
    restart_on_crash: bool = True,
    max_restarts_per_hour: int = 10,
    on_permanent_failure: Callable[[PermanentFailure], Awaitable[None]] | None = None,
) -> BackgroundTaskHandle:
    """Run the task on the current loop, unsupervised (no restarts)."""
    task = asyncio.get_running_loop().create_task(coro_factory(), name=f"unsupervised:{name}")

    def cancel() -> None:
        task.cancel()

    return BackgroundTaskHandle(name=name, _cancel=cancel, _done=task.done)


async def _default_start_input_claim(_claim: InputClaim, /) -> ClaimHandle:
    """A handle on a claim that has already ended NATURAL (nothing to latch here)."""

    async def ended() -> ClaimEndReason:
        return ClaimEndReason.NATURAL

    return ClaimHandle(_cancel=lambda: None, _wait_end=ended)


async def _default_cancel_active_claim(*, reason: ClaimEndReason = ClaimEndReason.NATURAL) -> bool:
    return False


def _default_subscribe_client_event(_key: str, _handler: ClientEventHandler, /) -> None:
    return None


async def _default_emit_server_event(_event: str, _data: dict[str, Any] | None = None, /) -> None:
    return None


class SpeakerVolume(Protocol):
    """``await ctx.speaker_volume()``: the device speaker's level, 0-100 (a huxleyd extension).

    The device owns its volume (a skill changes it with the ``SetVolume``
    side effect); this reads the level in effect. ``None`` when the runtime
    keeps no speaker of its own (in Huxley the client holds the volume).
    """

    async def __call__(self) -> int | None: ...


async def _default_speaker_volume() -> int | None:
    return None


# ---------------------------------------------------------------- context


@dataclass(frozen=True, slots=True)
class SkillContext:
    """Everything a skill may use. Stash what you need in ``setup``.

    Fields in Huxley's order (positional construction works as there):

    - ``logger`` (:class:`SkillLogger`), ``storage``, ``secrets``;
    - ``persona_data_dir``: resolve the skill's files against it, not the cwd;
    - ``config``: the skill's section of the persona file;
    - ``language``: the persona's language code (``"en"``, ``"es"``);
    - ``inject_turn``, ``inject_turn_and_wait``, ``background_task``,
      ``start_input_claim``, ``cancel_active_claim``,
      ``subscribe_client_event``, ``emit_server_event``: see the
      protocols of the same names (:class:`InjectTurn`…);
    - ``timezone``: the persona's IANA time zone (a huxleyd extension;
      Huxley skills read ``config["timezone"]``, which huxleyd fills too);
    - ``speaker_volume``: reads the device speaker's level (a huxleyd
      extension, :class:`SpeakerVolume`).

    ``catalog()`` returns a fresh :class:`~huxley_sdk.catalog.Catalog`.
    """

    logger: SkillLogger
    storage: SkillStorage
    secrets: SkillSecrets
    persona_data_dir: Path
    config: dict[str, Any]
    language: str = "en"
    inject_turn: InjectTurn = _noop_inject_turn
    inject_turn_and_wait: InjectTurnAndWait = _noop_inject_turn_and_wait
    background_task: BackgroundTask = _default_background_task
    start_input_claim: StartInputClaim = _default_start_input_claim
    cancel_active_claim: CancelActiveClaim = _default_cancel_active_claim
    subscribe_client_event: SubscribeClientEvent = _default_subscribe_client_event
    emit_server_event: EmitServerEvent = _default_emit_server_event
    timezone: str = "UTC"
    speaker_volume: SpeakerVolume = _default_speaker_volume

    def catalog(self, name: str = "default") -> Catalog:
        """A new, empty catalog for the skill's own items (never cached:
        keep the one you build in ``setup``). ``name`` is for the skill's
        own bookkeeping."""
        return Catalog()


# ---------------------------------------------------------------- the skill


@runtime_checkable
class Skill(Protocol):
    """What a skill is: no base class, match the shape.

    Required: ``name`` (unique among loaded skills), ``tools`` (tool names
    unique across skills) and ``handle``. Optional, with the defaults shown
    here: ``setup(ctx)`` once at load, ``reconfigure(ctx)`` when the
    skill's config or language changes, ``teardown()`` at shutdown,
    ``prompt_context()`` (text added to the model's instructions), and the
    class attributes ``config_schema`` (a JSON Schema of the persona
    section, or None) and ``data_schema_version``.

    ``isinstance(obj, Skill)`` checks every member, optional ones included
    (that is how ``runtime_checkable`` works); a runtime loading skills
    checks the three required members itself.
    """

    config_schema: ClassVar[dict[str, Any] | None] = None
    data_schema_version: ClassVar[int] = 1

    @property
    def name(self) -> str: ...

    @property
    def tools(self) -> list[ToolDefinition]: ...

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        """Run one tool call (arguments already parsed) and say what happened."""
        ...

    async def setup(self, ctx: SkillContext) -> None:
        return None

    async def reconfigure(self, ctx: SkillContext) -> None:
        return None

    async def teardown(self) -> None:
        return None

    def prompt_context(self) -> str:
        return ""


__all__ = [
    "BackgroundTask",
    "BackgroundTaskHandle",
    "CancelActiveClaim",
    "ClaimHandle",
    "ClientEventHandler",
    "CoroFactory",
    "EmitServerEvent",
    "InjectTurn",
    "InjectTurnAndWait",
    "Skill",
    "SkillContext",
    "SkillLogger",
    "SkillSecrets",
    "SkillStorage",
    "StartInputClaim",
    "SubscribeClientEvent",
]
