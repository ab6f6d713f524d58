"""Print huxley_sdk's public surface as JSON; run by the compat suite in each venv.

Per module of Huxley's SDK: every name not starting with ``__``, with its
kind, and for callables the parameters (name, kind, default). Run as a
script with the venv's python; imports only the stdlib and huxley_sdk.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
from typing import Any

MODULES = (
    "huxley_sdk",
    "huxley_sdk.types",
    "huxley_sdk.audio",
    "huxley_sdk.catalog",
    "huxley_sdk.registry",
    "huxley_sdk.testing",
)
PRIVATE_BUT_USED = frozenset({"_fold", "_NoopSkillStorage", "_NoopSkillSecrets"})
"""Underscored names that Huxley's own tests import: part of the contract in practice."""


def parameters(obj: Any) -> list[list[str]] | None:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [
        [p.name, p.kind.name, "" if p.default is inspect.Parameter.empty else repr(p.default)]
        for p in signature.parameters.values()
    ]


def describe(obj: Any) -> dict[str, Any]:
    if inspect.ismodule(obj):
        return {"kind": "module"}
    if inspect.isclass(obj):
        members = {
            name: parameters(member)
            for name, member in vars(obj).items()
            if not name.startswith("__") and callable(member)
        }
        return {"kind": "class", "init": parameters(obj), "methods": members}
    if callable(obj):
        return {"kind": "callable", "parameters": parameters(obj)}
    return {"kind": type(obj).__name__}


def is_sdk_name(attr: str, value: Any) -> bool:
    """Defined by the SDK (not ``dataclass`` or ``TYPE_CHECKING`` imported into it)."""
    if attr.startswith("__"):
        return False
    if inspect.isclass(value) or inspect.isfunction(value):
        return str(getattr(value, "__module__", "")).startswith("huxley_sdk")
    if inspect.ismodule(value):
        return value.__name__.startswith("huxley_sdk")
    return attr.isupper() and attr != "TYPE_CHECKING"


def surface() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for name in MODULES:
        module = importlib.import_module(name)
        found[name] = {
            attr: describe(value)
            for attr, value in vars(module).items()
            if is_sdk_name(attr, value)
        }
    return found


def _same_default(huxleys: str, ours: str) -> bool:
    # A function default prints with its address: compare up to it.
    if huxleys.startswith("<function "):
        return ours.split(" at ")[0] == huxleys.split(" at ")[0]
    return ours == huxleys


def _compare_parameters(where: str, huxleys: Any, ours: Any) -> list[str]:
    if huxleys is None or ours is None:
        return [] if huxleys == ours else [f"{where}: signature {huxleys} vs ours {ours}"]
    problems: list[str] = []
    by_name = {p[0]: p for p in ours}
    for name, kind, default in huxleys:
        mine = by_name.get(name)
        if mine is None:
            problems.append(f"{where}: parameter {name!r} missing")
        elif mine[1] != kind:
            problems.append(f"{where}: parameter {name!r} is {mine[1]}, Huxley's is {kind}")
        elif default and not _same_default(default, mine[2]):
            problems.append(f"{where}: {name!r} defaults to {mine[2]}, Huxley's to {default}")
    known = {p[0] for p in huxleys}
    for name, kind, default in ours:
        if name not in known and not default and kind not in ("VAR_POSITIONAL", "VAR_KEYWORD"):
            problems.append(f"{where}: our extra parameter {name!r} has no default")
    return problems


def differences(huxleys: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """What Huxley's surface has that ours lacks or spells differently.

    Ours may add names, methods and parameters with defaults; Huxley's
    defaults and parameter kinds must be the same.
    """
    problems: list[str] = []
    for module, names in huxleys.items():
        for name, theirs in names.items():
            if name.startswith("_") and name not in PRIVATE_BUT_USED:
                continue  # Huxley's internals: not a contract
            where = f"{module}.{name}"
            mine = ours.get(module, {}).get(name)
            if mine is None:
                problems.append(f"{where}: missing")
            elif mine["kind"] != theirs["kind"]:
                problems.append(f"{where}: a {mine['kind']}, Huxley's is a {theirs['kind']}")
            elif theirs["kind"] == "callable":
                problems += _compare_parameters(where, theirs["parameters"], mine["parameters"])
            elif theirs["kind"] == "class":
                problems += _compare_parameters(where, theirs["init"], mine["init"])
                for method, params in theirs["methods"].items():
                    if method not in mine["methods"]:
                        problems.append(f"{where}.{method}: missing")
                    else:
                        problems += _compare_parameters(
                            f"{where}.{method}", params, mine["methods"][method]
                        )
    return problems


if __name__ == "__main__":
    json.dump(surface(), sys.stdout, indent=1, sort_keys=True)
