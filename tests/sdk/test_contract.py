"""The skill contract's promises beyond its shapes: one object under Huxley's
three import paths, frozen effects that fail the same way on 3.11 and 3.13,
a verbatim text that cannot be empty, and the wire values of the enums."""

from __future__ import annotations

import dataclasses

import pytest

import huxley_sdk
import huxley_sdk.types
from huxley_sdk import contract
from huxley_sdk.contract import (
    ClaimEndReason,
    ContentType,
    InjectPriority,
    PermanentFailure,
    SetVolume,
    SideEffect,
    SpeakVerbatim,
    StopRetrying,
    ToolDefinition,
    ToolResult,
)

PUBLIC = [
    name
    for name, value in vars(contract).items()
    if isinstance(value, type) and value.__module__ == contract.__name__
]


def test_every_contract_type_is_the_same_object_where_huxley_keeps_it() -> None:
    assert len(PUBLIC) >= 15
    for name in PUBLIC:
        assert getattr(huxley_sdk.types, name) is getattr(contract, name), name
        assert getattr(huxley_sdk, name) is getattr(contract, name), name


def test_side_effects_raise_frozen_instance_error_on_assignment() -> None:
    effect = SetVolume(40)
    with pytest.raises(dataclasses.FrozenInstanceError):
        effect.level = 50  # type: ignore[misc]
    for cls in (SideEffect, *SideEffect.__subclasses__()):
        assert "__slots__" not in vars(cls), cls


def test_each_side_effect_has_its_own_kind() -> None:
    kinds = [cls.kind for cls in SideEffect.__subclasses__()]
    assert len(set(kinds)) == len(kinds) and "none" not in kinds
    assert SpeakVerbatim("Hola.").kind == "speak_verbatim"


@pytest.mark.parametrize("text", ["", "   \n", None])
def test_speak_verbatim_refuses_an_empty_text(text: object) -> None:
    with pytest.raises(ValueError, match="non-empty string"):
        SpeakVerbatim(text)  # type: ignore[arg-type]


def test_tool_definitions_do_not_share_their_default_parameters() -> None:
    one, two = ToolDefinition("a", "A"), ToolDefinition("b", "B")
    one.parameters["properties"]["x"] = {"type": "string"}
    assert two.parameters == {"type": "object", "properties": {}}
    assert ToolResult("ok").side_effect is None


def test_enum_values_are_huxleys_strings() -> None:
    assert {m.value for m in ClaimEndReason} == {"natural", "user_ptt", "preempted", "error"}
    assert {m.value for m in InjectPriority} == {"normal", "block_behind_comms", "preempt"}
    assert {m.value for m in ContentType} == {"mixable", "nonmixable"}


def test_a_permanent_failure_is_hashable_and_stop_retrying_is_an_exception() -> None:
    failure = PermanentFailure("poller", "StopRetrying", "done", 3, 12.5)
    assert {failure: 1}[PermanentFailure("poller", "StopRetrying", "done", 3, 12.5)] == 1
    assert issubclass(StopRetrying, Exception) and not issubclass(StopRetrying, RuntimeError)
