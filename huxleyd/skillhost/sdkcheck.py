"""Is ``huxley_sdk`` ours? Checked before anything imports it.

``huxley_sdk`` ships from sdk/ as the distribution ``huxley-sdk`` with the
local version label ``+huxleyd``, the same name as Huxley's SDK on PyPI, so
that a Huxley skill's ``huxley-sdk>=0.1.1,<0.2`` is met by ours. A
``pip install huxley-sdk==0.1.1`` by hand replaces it with Huxley's, which
lacks what huxleyd imports; every entry point (``huxleyd``, ``huxleyctl``,
``doctor``, ``make setup``) then says so in one line, with the repair,
instead of a traceback. This module imports nothing of huxleyd's that
imports ``huxley_sdk``.

``python -m huxleyd.skillhost.sdkcheck`` prints the problem and exits 1 (the
Makefile's ``setup`` runs it to know whether to reinstall).
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import sys
from dataclasses import dataclass
from pathlib import Path

SDK_DISTRIBUTION = "huxley-sdk"
SDK_PACKAGE = "huxley_sdk"
OUR_LABEL = "+huxleyd"
"""The local version label of our SDK (sdk/pyproject.toml); Huxley's has none."""


def repair_command() -> str:
    """What reinstalls our SDK: ``make setup`` when this runs from a checkout, else
    ``make install`` from one (an installed daemon keeps no copy of the sources)."""
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "Makefile").is_file() and (checkout / "sdk" / "pyproject.toml").is_file():
        return f"make -C {checkout} setup"
    return "make install (from the huxleyd source tree)"


@dataclass(frozen=True, slots=True)
class SdkProblem:
    """What is in our SDK's place, and the command that repairs it."""

    what: str
    fix: str

    def __str__(self) -> str:
        return f"{self.what}; repair: {self.fix}"


def sdk_problem() -> SdkProblem | None:
    """What is wrong with ``huxley_sdk`` here, or None when it is ours and imports."""
    importlib.invalidate_caches()
    try:
        version = metadata.version(SDK_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        version = None
    fix = repair_command()
    if version is None:
        return SdkProblem(f"{SDK_PACKAGE}: no {SDK_DISTRIBUTION} distribution in {sys.prefix}", fix)
    if not version.endswith(OUR_LABEL):
        return SdkProblem(
            f"{SDK_PACKAGE} is {SDK_DISTRIBUTION} {version} in {sys.prefix}, not huxleyd's "
            f"({SDK_DISTRIBUTION} *{OUR_LABEL})",
            fix,
        )
    try:
        module = importlib.import_module(SDK_PACKAGE)
    except Exception as exc:  # any import failure has the same answer: reinstall
        reason = " ".join(str(exc).split()) or type(exc).__name__
        return SdkProblem(
            f"{SDK_PACKAGE} ({SDK_DISTRIBUTION} {version}) cannot be imported: {reason}", fix
        )
    return _shadowed(str(getattr(module, "__file__", "") or ""))


def _shadowed(imported: str) -> SdkProblem | None:
    """Another distribution's ``huxley_sdk`` imported in place of ours.

    Reinstalling our SDK does not remove it (it is that distribution's file,
    found first on the path), so the repair is uninstalling that one."""
    if not imported:
        return None
    here = Path(imported).resolve()
    for dist in metadata.distributions():
        name = dist.metadata["Name"] or ""
        if name.lower() == SDK_DISTRIBUTION:
            continue
        record = dist.read_text("RECORD") or ""
        if f"{SDK_PACKAGE}/__init__.py" not in record:
            continue
        theirs = Path(str(dist.locate_file(f"{SDK_PACKAGE}/__init__.py"))).resolve()
        if theirs == here:
            return SdkProblem(
                f"{SDK_PACKAGE} is imported from {here.parent}, which is {name}'s, "
                f"not {SDK_DISTRIBUTION}'s",
                f"{sys.executable} -m pip uninstall --yes {name}",
            )
    return None


def main() -> int:
    problem = sdk_problem()
    if problem is None:
        return 0
    print(problem, file=sys.stderr)
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
