"""What a skill receives in ``setup(ctx)``, and the Skill protocol itself.

The runtime builds one :class:`SkillContext` per skill. Its storage and
secrets are namespaced to that skill; its callables (``inject_turn``,
``start_input_claim``…) are bound to the runtime's implementations.
``huxley_sdk.testing.make_test_context`` builds one for unit tests.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from huxley_sdk.logging import EventLogger
from huxley_sdk.types import (
    ClaimEndReason,
    InjectPriority,
    InputClaim,
    ToolDefinition,
    ToolResult,
)


@runtime_checkable
class SkillStorage(Protocol):
    """A skill's own key-value store (strings), persisted per persona.

    Keys are private to the skill: two skills may use the same key.
    """

    async def get_setting(self, key: str, default: str | None = None) -> str | None: ...

    async def set_setting(self, key: str, value: str) -> None: ...

    async def list_settings(self, prefix: str = "") -> list[tuple[str, str]]:
        """``(key, value)`` pairs whose key starts with ``prefix``, sorted by key."""
        ...

    async def delete_setting(self, key: str) -> None: ...


@runtime_checkable
class SkillSecrets(Protocol):
    """A skill's secrets (tokens, passwords): a file readable by the service user only."""

    async def get(self, key: str) -> str | None: ...

    async def set(self, key: str, value: str) -> None: ...

    async def delete(self, key: str) -> None: ...

    async def keys(self) -> list[str]: ...


@runtime_checkable
class ClaimHandle(Protocol):
    """A live input claim."""

    def cancel(self) -> None:
        """End the claim with NATURAL. Idempotent: later calls do nothing."""
        ...

    async def wait_end(self) -> ClaimEndReason:
        """Wait until the claim has ended; returns why."""
        ...


@runtime_checkable
class BackgroundTaskHandle(Protocol):
    """A supervised background task started with ``ctx.background_task``."""

    @property
    def name(self) -> str: ...

    def cancel(self) -> None:
        """Stop the task; no restart follows. Idempotent."""
        ...

    def done(self) -> bool: ...


InjectTurn = Callable[..., Awaitable[None]]
"""``await inject_turn(prompt, *, dedup_key=None, priority=InjectPriority.NORMAL)``."""

CoroFactory = Callable[[], Coroutine[Any, Any, None]]


def _not_wired(what: str, issue: str) -> Callable[..., Any]:
    def missing(*_args: Any, **_kwargs: Any) -> Any:
        raise NotImplementedError(
            f"{what} is not available in this runtime yet ({issue}); "
            "use huxley_sdk.testing.make_test_context in unit tests"
        )

    return missing


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillContext:
    """Everything a skill may use. Stash what you need in ``setup``.

    - ``logger``: event logger bound to the skill (sync ``info`` and async ``ainfo`` …).
    - ``storage``: the skill's key-value store; ``secrets``: its secrets.
    - ``persona_data_dir``: the persona's data directory (sounds, libraries).
    - ``config``: the skill's section of the persona file (a dict).
    - ``language``: the persona's language code (``"en"``, ``"es"``).
    - ``inject_turn(prompt, *, dedup_key=None, priority=NORMAL)``: speak first.
    - ``inject_turn_and_wait(prompt, *, dedup_key=None)``: returns once heard.
    - ``background_task(name, coro_factory, *, restart_on_crash=True,
      max_restarts_per_hour=10, on_permanent_failure=None)``: supervised task.
    - ``start_input_claim(claim) -> ClaimHandle``: take the mic now
      (raises :class:`~huxley_sdk.types.ClaimBusyError` if one is active).
    - ``cancel_active_claim(*, reason=NATURAL)``: end the live claim, if any.
    """

    logger: EventLogger
    storage: SkillStorage
    secrets: SkillSecrets
    persona_data_dir: Path
    config: dict[str, Any] = field(default_factory=dict)
    language: str = "en"
    timezone: str = "UTC"
    inject_turn: InjectTurn = field(
        default=_not_wired("inject_turn", "proactive turns arrive with the focus/inject work")
    )
    inject_turn_and_wait: InjectTurn = field(
        default=_not_wired(
            "inject_turn_and_wait", "proactive turns arrive with the focus/inject work"
        )
    )
    background_task: Callable[..., BackgroundTaskHandle] = field(
        default=_not_wired("background_task", "supervised tasks arrive with the focus/inject work")
    )
    start_input_claim: Callable[[InputClaim], Awaitable[ClaimHandle]] = field(
        default=_not_wired("start_input_claim", "input claims arrive with the focus/claim work")
    )
    cancel_active_claim: Callable[..., Awaitable[None]] = field(
        default=_not_wired("cancel_active_claim", "input claims arrive with the focus/claim work")
    )


@runtime_checkable
class Skill(Protocol):
    """The five members every skill has. No base class: match the shape.

    ``name`` must be unique across the loaded skills; tool names must be
    unique across all skills. ``setup`` runs once when the persona loads;
    ``handle`` dispatches a tool call with its already-parsed arguments.
    """

    @property
    def name(self) -> str: ...

    @property
    def tools(self) -> list[ToolDefinition]: ...

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult: ...

    async def setup(self, ctx: SkillContext) -> None: ...

    async def teardown(self) -> None: ...


__all__ = [
    "BackgroundTaskHandle",
    "ClaimHandle",
    "CoroFactory",
    "InjectPriority",
    "InjectTurn",
    "Skill",
    "SkillContext",
    "SkillSecrets",
    "SkillStorage",
]
