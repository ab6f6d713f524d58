"""Strict validation of OpenAI Realtime GA events against the official types.

Layer: pure functions over the ``openai`` package's pydantic models.

The SDK's unions carry its own ``PropertyInfo(discriminator="type")``, which
pydantic ignores, and its models keep unknown keys silently
(``extra="allow"``). So a plain ``model_validate`` would accept a beta-style
or misspelled event. Here we build a real tagged union over the members of
``RealtimeClientEvent`` / ``RealtimeServerEvent`` and then walk the result
for any key the models did not declare.
"""

from __future__ import annotations

import json
import typing
from typing import Annotated, Any, Union

from openai.types.realtime import RealtimeClientEvent, RealtimeServerEvent
from pydantic import BaseModel, Field, TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from huxleyd.errors import ProviderProtocolError


def _tagged_union(alias: Any) -> TypeAdapter[Any]:
    members: Any = typing.get_args(typing.get_args(alias)[0])
    union: Any = Union[members]  # noqa: UP007 - built from a runtime tuple of classes
    tagged: Any = Annotated[union, Field(discriminator="type")]
    return TypeAdapter(tagged)


CLIENT_EVENTS: TypeAdapter[Any] = _tagged_union(RealtimeClientEvent)
SERVER_EVENTS: TypeAdapter[Any] = _tagged_union(RealtimeServerEvent)


def unknown_fields(value: object, path: str = "$") -> list[str]:
    """Every key, at any depth, that a model kept as an extra (undeclared) field."""
    if isinstance(value, BaseModel):
        found = [f"{path}.{key}" for key in (value.model_extra or {})]
        for name in type(value).model_fields:
            found += unknown_fields(getattr(value, name), f"{path}.{name}")
        return found
    if isinstance(value, list | tuple):
        return [f for i, item in enumerate(value) for f in unknown_fields(item, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [f for key, item in value.items() for f in unknown_fields(item, f"{path}.{key}")]
    return []


def _validate(
    adapter: TypeAdapter[Any],
    raw: str | bytes | dict[str, Any],
    side: str,
    *,
    allowed: frozenset[str] = frozenset(),
) -> Any:
    try:
        if isinstance(raw, str | bytes):
            event = adapter.validate_json(raw)
        else:
            event = adapter.validate_python(raw)
    except PydanticValidationError as exc:
        raise ProviderProtocolError(
            f"invalid {side} event {_type_of(raw)}: {_summarise(exc)}"
        ) from exc
    extras = [f for f in unknown_fields(event) if f not in allowed]
    if extras:
        raise ProviderProtocolError(
            f"invalid {side} event {_type_of(raw)}: unknown fields {', '.join(extras)}"
        )
    return event


def validate_client_event(raw: str | bytes | dict[str, Any]) -> Any:
    """The typed client event, or :class:`ProviderProtocolError` saying what is wrong.

    Returns an instance of one member of ``RealtimeClientEvent``.
    """
    return _validate(CLIENT_EVENTS, raw, "client")


REAL_SERVER_EXTRAS = frozenset(
    {
        "$.session.object",
        "$.session.id",
        "$.session.expires_at",
        "$.obfuscation",
    }
)
"""Keys the real GA server sends that the ``openai`` package's models do not
declare (``session.object`` / ``id`` / ``expires_at`` on session events,
``obfuscation`` on streamed deltas; see tests/providers/corpus/README.md).
A server event may carry them; any other undeclared key is still refused."""


def validate_server_event(raw: str | bytes | dict[str, Any]) -> Any:
    """The typed server event, or :class:`ProviderProtocolError` saying what is wrong.

    Strict like the client side, except for :data:`REAL_SERVER_EXTRAS`: what
    the real service sends must pass, so the simulator can send it too.
    """
    return _validate(SERVER_EVENTS, raw, "server", allowed=REAL_SERVER_EXTRAS)


def _type_of(raw: str | bytes | dict[str, Any]) -> str:
    try:
        data = raw if isinstance(raw, dict) else json.loads(raw)
    except ValueError:
        return "(not JSON)"
    kind = data.get("type") if isinstance(data, dict) else None
    return repr(kind) if isinstance(kind, str) else "(no type)"


def _summarise(exc: PydanticValidationError, limit: int = 4) -> str:
    parts = []
    for error in exc.errors()[:limit]:
        where = ".".join(str(p) for p in error["loc"]) or "$"
        parts.append(f"{where}: {error['msg']}")
    more = exc.error_count() - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
