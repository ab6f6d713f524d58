"""``make mutate``: mutation testing of named modules with their mirrored tests.

    make mutate MODULES="huxleyd/config/preflight.py huxleyd/control/server.py"
    make mutate                 # the modules this branch changed against main
    make mutate MODULES=huxleyd/config/preflight.py TESTS="tests/test_preflight.py tests/config"

mutmut (3.x) reads its settings from the ``pyproject.toml`` of the folder
it runs in and copies the code into ``mutants/`` there. So each run gets a
scratch folder, ``build/mutate``, with links to the repo's folders and a
``pyproject.toml`` whose ``[tool.mutmut]`` names only the modules asked
for and only their tests: ``huxleyd/control/server.py`` is tested by
``tests/control/test_server.py`` when it exists, else by ``tests/control``.
mutmut runs each test only against the mutants of the functions it covers
(forked workers, so 2 cores suffice for a module or two).

What survives is printed with its diff (``mutmut show``): each survivor
is a bug the tests would not see. Kill it with a test, or explain it in
the issue's closing note.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = ROOT / "build" / "mutate"
WRITTEN = ("pyproject.toml",)
"""Top-level names the scratch folder gets its own copy of (with ``[tool.mutmut]``)."""


def tracked_top_level(root: Path = ROOT) -> list[str]:
    """Every top-level name ``git`` tracks (what a fresh clone has: ``setup.py``,
    ``Makefile``, ``image/``…), never an untracked file of this checkout.
    The tests read many of them (``setup.py``'s extension list, the unit files),
    so the scratch folder links them all, not a hand-kept list that drifts."""
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    names = {path.split("/", 1)[0] for path in out.split("\0") if path}
    return sorted(n for n in names if n not in WRITTEN)


def changed_modules(base: str = "main") -> list[str]:
    """The package modules this branch changed (committed or not) against ``base``."""
    out = subprocess.run(
        ["git", "diff", "--name-only", base, "--", "huxleyd"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [p for p in out.split() if p.endswith(".py") and (ROOT / p).is_file()]


def mirrored_tests(module: str) -> str:
    """``huxleyd/a/b.py`` → ``tests/a/test_b.py`` when it exists, else ``tests/a``."""
    parts = Path(module).relative_to("huxleyd").parts
    folder = Path("tests", *parts[:-1])
    single = folder / f"test_{Path(parts[-1]).stem}.py"
    if (ROOT / single).is_file():
        return str(single)
    if (ROOT / folder).is_dir():
        return str(folder)
    raise SystemExit(f"mutate: no tests mirror {module} (looked for {single} and {folder}/)")


def toml_list(items: list[str]) -> str:
    return "[" + ", ".join(f'"{item}"' for item in items) + "]"


def prepare(modules: list[str], tests: list[str], *, fresh: bool, scratch: Path = SCRATCH) -> None:
    """``build/mutate``: links to the repo and a pyproject with ``[tool.mutmut]``."""
    if fresh and scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    linked = tracked_top_level()
    for name in linked:
        link = scratch / name
        if not link.is_symlink():
            link.symlink_to(ROOT / name)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    tomllib.loads(pyproject)  # the repo's own file must parse before we extend it
    settings = (
        "\n[tool.mutmut]\n"
        'source_paths = ["huxleyd"]\n'
        f"only_mutate = {toml_list(modules)}\n"
        f"pytest_add_cli_args_test_selection = {toml_list(tests)}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]\n'
        "also_copy = " + toml_list([n for n in linked if n not in ("huxleyd", "tests")]) + "\n"
    )
    (scratch / "pyproject.toml").write_text(pyproject + settings, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make mutate", description=__doc__.split("\n")[0])
    parser.add_argument("modules", nargs="*", help="huxleyd/….py (default: changed vs main)")
    parser.add_argument("--base", default="main", help="the branch to diff against")
    parser.add_argument("--jobs", type=int, default=2, help="mutmut's workers (default 2)")
    parser.add_argument(
        "--tests", default="", help="test files or folders to use instead of the mirrored ones"
    )
    args = parser.parse_args(argv)
    modules = args.modules or changed_modules(args.base)
    if not modules:
        print("mutate: no module named and none changed against", args.base)
        return 0
    for module in modules:
        if not module.startswith("huxleyd/") or not (ROOT / module).is_file():
            raise SystemExit(f"mutate: {module} is not a module under huxleyd/")
    tests = args.tests.split() or sorted({mirrored_tests(m) for m in modules})
    print(f"mutate: {' '.join(modules)}\n  tests: {' '.join(tests)}", flush=True)
    # Every run starts over: mutmut's cache keeps a verdict when only a test
    # changed, and a new test is exactly what a rerun is for.
    prepare(modules, tests, fresh=True)
    mutmut = [sys.executable, "-m", "mutmut"]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    run = subprocess.run([*mutmut, "run", f"--max-children={args.jobs}"], cwd=SCRATCH, env=env)
    if run.returncode != 0:
        print(f"mutate: mutmut run exited {run.returncode}", file=sys.stderr)
        return run.returncode
    return report(mutmut, env)


def report(mutmut: list[str], env: dict[str, str]) -> int:
    """Print each survivor's diff; exit 0 either way (survivors are for reading)."""
    results = subprocess.run(
        [*mutmut, "results"], cwd=SCRATCH, env=env, capture_output=True, text=True, check=False
    ).stdout
    survivors = [
        line.split(":")[0].strip()
        for line in results.splitlines()
        if line.strip().endswith(": survived")
    ]
    for name in survivors:
        shown = subprocess.run(
            [*mutmut, "show", name], cwd=SCRATCH, env=env, capture_output=True, text=True
        )
        print(f"\n--- survived: {name}\n{shown.stdout.strip()}")
    other = [
        line.strip()
        for line in results.splitlines()
        if ":" in line and not line.strip().endswith((": survived", ": killed"))
    ]
    print(
        f"\nmutate: {len(survivors)} survived"
        + (f"; also {len(other)} not killed:" if other else "")
    )
    for line in other:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
