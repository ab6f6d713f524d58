"""Every type of the skill contract, where Huxley's SDK keeps them.

``from huxley_sdk.types import X`` works for every name huxley-sdk 0.1.1
defines in its ``types`` module. The definitions live in
:mod:`huxley_sdk.contract` (tools, results, side effects, enums, errors)
and :mod:`huxley_sdk.context` (context, handles, callables, the Skill
protocol); this module adds the two framework-side types Huxley keeps here.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from huxley_sdk.catalog import Catalog
from huxley_sdk.context import (  # the no-op defaults too, where Huxley keeps them
    BackgroundTask,
    BackgroundTaskHandle,
    CancelActiveClaim,
    ClaimHandle,
    ClientEventHandler,
    CoroFactory,
    EmitServerEvent,
    InjectTurn,
    InjectTurnAndWait,
    Skill,
    SkillContext,
    SkillLogger,
    SkillSecrets,
    SkillStorage,
    SpeakerVolume,
    StartInputClaim,
    SubscribeClientEvent,
    _default_background_task,
    _default_cancel_active_claim,
    _default_emit_server_event,
    _default_start_input_claim,
    _default_subscribe_client_event,
    _noop_inject_turn,
    _noop_inject_turn_and_wait,
)
from huxley_sdk.contract import (
    AudioStream,
    CancelMedia,
    ClaimBusyError,
    ClaimEndReason,
    ContentType,
    InjectPriority,
    InputClaim,
    InvalidTransitionError,
    PermanentFailure,
    PlaySound,
    SetVolume,
    SideEffect,
    SpeakVerbatim,
    StopRetrying,
    ToolDefinition,
    ToolResult,
)


class AppState(enum.Enum):
    """The session states of Huxley's runtime (skills do not use it)."""

    IDLE = enum.auto()
    CONNECTING = enum.auto()
    CONVERSING = enum.auto()


@runtime_checkable
class WakeWordDetectorProtocol(Protocol):
    """The shape of a wake-word detector in Huxley's runtime (huxleyd uses a button)."""

    on_detected: Callable[[], Awaitable[None]] | None

    @property
    def enabled(self) -> bool: ...

    @enabled.setter
    def enabled(self, value: bool) -> None: ...

    async def setup(self) -> None: ...

    async def process_frame(self, pcm_16k: bytes) -> None: ...


__all__ = [
    "AppState",
    "AudioStream",
    "BackgroundTask",
    "BackgroundTaskHandle",
    "CancelActiveClaim",
    "CancelMedia",
    "Catalog",
    "ClaimBusyError",
    "ClaimEndReason",
    "ClaimHandle",
    "ClientEventHandler",
    "ContentType",
    "CoroFactory",
    "EmitServerEvent",
    "InjectPriority",
    "InjectTurn",
    "InjectTurnAndWait",
    "InputClaim",
    "InvalidTransitionError",
    "PermanentFailure",
    "PlaySound",
    "SetVolume",
    "SideEffect",
    "Skill",
    "SkillContext",
    "SkillLogger",
    "SkillSecrets",
    "SkillStorage",
    "SpeakVerbatim",
    "SpeakerVolume",
    "StartInputClaim",
    "StopRetrying",
    "SubscribeClientEvent",
    "ToolDefinition",
    "ToolResult",
    "WakeWordDetectorProtocol",
    "_default_background_task",
    "_default_cancel_active_claim",
    "_default_emit_server_event",
    "_default_start_input_claim",
    "_default_subscribe_client_event",
    "_noop_inject_turn",
    "_noop_inject_turn_and_wait",
]
