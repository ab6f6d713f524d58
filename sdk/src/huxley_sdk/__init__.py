"""huxley_sdk: what a Huxley skill imports, and nothing of the runtime.

A superset of huxley-sdk 0.1.1: every name, module (``types``, ``audio``,
``catalog``, ``registry``, ``testing``), signature and default of Huxley's
SDK, with Huxley's semantics, so a skill written for Huxley runs on huxleyd
unchanged. huxleyd's extensions are marked as such where they are defined:
:class:`SpeakVerbatim`, :class:`StopRetrying`, the sync methods of
:class:`SkillLogger`, ``SkillContext.timezone`` and ``.speaker_volume``, ``BackgroundTaskHandle.done``,
the PCM constants and the WAV converter in :mod:`huxley_sdk.audio`, and the
recording test context in :mod:`huxley_sdk.testing`.

A skill is any object with ``name``, ``tools`` and ``handle`` (optional:
``setup``, ``reconfigure``, ``teardown``, ``prompt_context``), found
through the ``huxley.skills`` entry-point group.
"""

from huxley_sdk.audio import BYTES_PER_SECOND, SAMPLE_RATE, load_pcm_palette
from huxley_sdk.catalog import Catalog, Hit
from huxley_sdk.registry import SkillNotFoundError, SkillRegistry
from huxley_sdk.types import (
    AppState,
    AudioStream,
    BackgroundTaskHandle,
    CancelMedia,
    ClaimBusyError,
    ClaimEndReason,
    ClaimHandle,
    ContentType,
    InjectPriority,
    InjectTurn,
    InjectTurnAndWait,
    InputClaim,
    InvalidTransitionError,
    PermanentFailure,
    PlaySound,
    SetVolume,
    SideEffect,
    Skill,
    SkillContext,
    SkillLogger,
    SkillSecrets,
    SkillStorage,
    SpeakVerbatim,
    StopRetrying,
    ToolDefinition,
    ToolResult,
    WakeWordDetectorProtocol,
)

ENTRY_POINT_GROUP = "huxley.skills"
"""The entry-point group skills register under (``name = "module:Class"``)."""

__all__ = [
    "BYTES_PER_SECOND",
    "ENTRY_POINT_GROUP",
    "SAMPLE_RATE",
    "AppState",
    "AudioStream",
    "BackgroundTaskHandle",
    "CancelMedia",
    "Catalog",
    "ClaimBusyError",
    "ClaimEndReason",
    "ClaimHandle",
    "ContentType",
    "Hit",
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
    "SkillNotFoundError",
    "SkillRegistry",
    "SkillSecrets",
    "SkillStorage",
    "SpeakVerbatim",
    "StopRetrying",
    "ToolDefinition",
    "ToolResult",
    "WakeWordDetectorProtocol",
    "load_pcm_palette",
]
