"""huxley_sdk: what a Huxley skill imports, and nothing of the runtime.

A skill is any object with ``name``, ``tools``, ``handle``, ``setup`` and
``teardown`` (:class:`Skill`). It is found through the ``huxley.skills``
entry-point group. See the Huxley documentation for the model; names and
semantics here match it.
"""

from huxley_sdk.audio import BYTES_PER_SECOND, SAMPLE_RATE, load_pcm_palette
from huxley_sdk.context import (
    BackgroundTaskHandle,
    ClaimHandle,
    Skill,
    SkillContext,
    SkillSecrets,
    SkillStorage,
)
from huxley_sdk.logging import EventLogger
from huxley_sdk.types import (
    AudioStream,
    CancelMedia,
    ClaimBusyError,
    ClaimEndReason,
    ContentType,
    InjectPriority,
    InputClaim,
    PermanentFailure,
    PlaySound,
    SetVolume,
    SideEffect,
    SpeakVerbatim,
    ToolDefinition,
    ToolResult,
)

ENTRY_POINT_GROUP = "huxley.skills"

__all__ = [
    "BYTES_PER_SECOND",
    "ENTRY_POINT_GROUP",
    "SAMPLE_RATE",
    "AudioStream",
    "BackgroundTaskHandle",
    "CancelMedia",
    "ClaimBusyError",
    "ClaimEndReason",
    "ClaimHandle",
    "ContentType",
    "EventLogger",
    "InjectPriority",
    "InputClaim",
    "PermanentFailure",
    "PlaySound",
    "SetVolume",
    "SideEffect",
    "Skill",
    "SkillContext",
    "SkillSecrets",
    "SkillStorage",
    "SpeakVerbatim",
    "ToolDefinition",
    "ToolResult",
    "load_pcm_palette",
]
