"""Check tool-call arguments against a tool's JSON Schema, before the skill sees them.

A deliberately small subset of JSON Schema, the part tool schemas use:
``type`` (object, string, integer, number, boolean, array, null, or a list
of them), ``properties``, ``required``, ``additionalProperties`` (false),
``enum``, ``const``, ``minimum``/``maximum``, ``exclusiveMinimum``/
``exclusiveMaximum``, ``minLength``/``maxLength``, ``items``,
``minItems``/``maxItems``. Unknown keywords are ignored, as the standard says.
``additionalProperties`` may also be a schema, which every property not in
``properties`` must match (a skill's table of radio stations).

:func:`check_arguments` returns a list of problems, each naming the
argument path; empty means valid. The model gets them back as an error.
:func:`check_value` does the same for any value under a given path (a
skill's configuration table, ``skills.memos``).
"""

from __future__ import annotations

from typing import Any

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "null": (type(None),),
    "number": (int, float),
    "integer": (int,),
}


def _is_type(value: Any, name: str) -> bool:
    if name in ("number", "integer") and isinstance(value, bool):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _JSON_TYPES.get(name, (object,)))


def _check(value: Any, schema: dict[str, Any], path: str, problems: list[str]) -> None:
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_is_type(value, n) for n in names):
            problems.append(f"{path}: expected {' or '.join(names)}, got {value!r}")
            return
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path}: expected one of {schema['enum']!r}, got {value!r}")
    if "const" in schema and value != schema["const"]:
        problems.append(f"{path}: expected {schema['const']!r}, got {value!r}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        _check_number(value, schema, path, problems)
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            problems.append(f"{path}: shorter than {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append(f"{path}: longer than {schema['maxLength']} characters")
    if isinstance(value, list):
        _check_array(value, schema, path, problems)
    if isinstance(value, dict):
        _check_object(value, schema, path, problems)


def _check_number(value: float, schema: dict[str, Any], path: str, problems: list[str]) -> None:
    if "minimum" in schema and value < schema["minimum"]:
        problems.append(f"{path}: {value} is below the minimum {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        problems.append(f"{path}: {value} is above the maximum {schema['maximum']}")
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        problems.append(f"{path}: expected a value above {schema['exclusiveMinimum']}, got {value}")
    if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
        problems.append(f"{path}: expected a value below {schema['exclusiveMaximum']}, got {value}")


def _check_array(value: list[Any], schema: dict[str, Any], path: str, problems: list[str]) -> None:
    if "minItems" in schema and len(value) < schema["minItems"]:
        problems.append(f"{path}: fewer than {schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        problems.append(f"{path}: more than {schema['maxItems']} items")
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            _check(item, items, f"{path}[{i}]", problems)


def _check_object(
    value: dict[str, Any], schema: dict[str, Any], path: str, problems: list[str]
) -> None:
    properties: dict[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            problems.append(f"{path}.{name}: required argument missing")
    extra = schema.get("additionalProperties")
    for name, item in value.items():
        if name in properties:
            _check(item, properties[name], f"{path}.{name}", problems)
        elif extra is False:
            problems.append(f"{path}.{name}: unknown argument")
        elif isinstance(extra, dict):
            _check(item, extra, f"{path}.{name}", problems)


def check_arguments(args: Any, schema: dict[str, Any]) -> list[str]:
    """Problems with ``args`` against ``schema`` (a tool's ``parameters``); [] if valid."""
    problems: list[str] = []
    if not isinstance(args, dict):
        return [f"arguments: expected a JSON object, got {args!r}"]
    _check(args, {"type": "object", **schema}, "arguments", problems)
    return problems


def check_value(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    """Problems with ``value`` against ``schema``, each ``"<path>.<key>: what"``; [] if valid."""
    problems: list[str] = []
    _check(value, schema, path, problems)
    return problems
