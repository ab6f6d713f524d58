"""Every code name docs/architecture.md gives exists under that name in the tree.

The page promises it ("when one moves, this page moves with it"); this keeps
the promise. Read from the page:

- every backticked span of the prose: a path (``audio/ring.py``, a file
  under the repository, ``huxleyd/`` or one of its packages), a
  ``Class.member`` (members include inherited ones, ``self.x`` attributes
  and dataclass fields), a module (``providers.base``) and its names, a
  configuration key (``audio.period_ms``, against the shipped
  ``config/huxleyd.toml``), a ``make`` target, or a bare name: a class, a
  constant or a private name must be defined in ``huxleyd`` or the SDK;
  another word (a task's, a thread's or a log event's name, a state's
  value) must appear there, as a name or a string;
- inside the hop-by-hop diagrams: every ``Class.member``, and every bare
  ``_private`` name, looked up in the class last named on its line.

Resolution is by AST (nothing is imported but the standard library's own
modules), so the page cannot pass by a name the code merely mentions in a
comment. What is deliberately not code (a system path, a unit setting, a
placeholder) is listed in ``NOT_CODE`` with the reason.
"""

from __future__ import annotations

import ast
import importlib
import re
import tomllib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
SOURCES = (ROOT / "huxleyd", ROOT / "sdk" / "src" / "huxley_sdk")

NOT_CODE: dict[str, str] = {
    "LimitRTPRIO=10": "a systemd unit setting (systemd/huxleyd.service)",
    "WatchdogSec": "a systemd unit setting",
    "$NOTIFY_SOCKET": "systemd's environment variable",
    "CLOCK_BOOTTIME": "a kernel clock id",
    "CLOCK_MONOTONIC": "a kernel clock id",
    "Output.expect": "a method of the C extension's type (huxleyd/audio/csrc/_rtout.c)",
    "full": "a counter of the C feeder's status() (huxleyd/audio/csrc/_feedthread.h)",
    "reports_lost": "a counter of the C feeder's status() (huxleyd/audio/csrc/_feedthread.h)",
    "huxleyd-feeder": "the C feeder's thread, as the hand-off table names it (_feedthread.c)",
    "adjtimex": "a Linux system call",
    "mc_mix_period": "a C function of the mixer core (huxleyd/audio/csrc/_mixcore.c)",
    "hold_step": "a C function of the feeder's playout buffer (huxleyd/audio/csrc/_feedthread.c)",
    "SourceRing.end_pos": "an attribute of the C extension's type (huxleyd/audio/_rt.pyi)",
    "_dsp.mix_period": "a function of the C extension (huxleyd/audio/csrc/_dsp.c)",
    "outputBufferDacTime": "a PortAudio callback field",
    "tanh": "the mathematical function",
    "huxleyd-setup.toml": "a file the user writes on the image's boot partition",
    "huxley-sdk": "the SDK's distribution name on the package index",
    "pkg": "a placeholder in the import-cycle rule",
    "pkg.sub": "a placeholder in the import-cycle rule",
    "loop.call_soon_threadsafe": "asyncio's event loop method, as called",
    "from huxleyd.sim import wire": "a statement quoted as the reader types it",
    '{"cancelled": true}': "a JSON payload",
    "clock_stepped step_s=…": "a journal line as printed",
}


@dataclass
class Index:
    """What the source defines, by AST."""

    modules: dict[str, set[str]] = field(default_factory=dict)
    """Dotted module name (``huxleyd.pcm``) → its top-level names."""
    classes: defaultdict[str, list[tuple[set[str], list[str]]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    """Class name → (members, base names) of each class of that name."""
    anywhere: set[str] = field(default_factory=set)
    """Every identifier defined, attribute, keyword and string constant."""
    defined: set[str] = field(default_factory=set)
    """Every name a module, a class or an instance defines (or imports)."""

    def members(self, cls: str, seen: frozenset[str] = frozenset()) -> set[str]:
        found: set[str] = set()
        for own, bases in self.classes.get(cls, []):
            found |= own
            for base in bases:
                if base not in seen:
                    found |= self.members(base, seen | {cls})
        return found


def _class_members(node: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(item.name)
        elif isinstance(item, ast.Assign):
            names |= {t.id for t in item.targets if isinstance(t, ast.Name)}
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.value, ast.Name)
            and sub.value.id == "self"
            and isinstance(sub.ctx, ast.Store)
        ):
            names.add(sub.attr)
    return names


def _top_level(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names}
    return names


def _mentions(tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, ast.keyword | ast.arg) and node.arg:
            yield node.arg
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value


def build_index(roots: tuple[Path, ...] = SOURCES) -> Index:
    index = Index()
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root.parent).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            index.modules[".".join(parts)] = _top_level(tree)
            index.defined |= index.modules[".".join(parts)]
            index.anywhere |= set(_mentions(tree))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    bases = [
                        b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases
                    ]
                    index.classes[node.name].append((_class_members(node), bases))
                    index.defined |= index.classes[node.name][-1][0] | {node.name}
                    index.anywhere.add(node.name)
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    index.anywhere.add(node.name)
                    index.defined.add(node.name)
    return index


def _config_keys() -> set[str]:
    keys: set[str] = set()

    def walk(table: dict[str, object], prefix: str) -> None:
        for key, value in table.items():
            keys.add(prefix + key)
            if isinstance(value, dict):
                walk(value, f"{prefix}{key}.")

    walk(tomllib.loads((ROOT / "config" / "huxleyd.toml").read_text(encoding="utf-8")), "")
    return keys


def _path_exists(text: str) -> bool:
    path, _, _name = text.partition(":")
    bases = [ROOT, ROOT / "huxleyd", ROOT / "config"]
    if any((base / path).exists() for base in bases):
        return True
    # A bare file name (``chains.py``, ``_rt.h``) in a paragraph that says where.
    return "/" not in path and any((ROOT / "huxleyd").rglob(path))


def _modules_named(index: Index, name: str) -> list[str]:
    """Modules called ``name`` in full, under ``huxleyd.``, or by their last
    parts where the page's context says which (``build.Hooks``, ``idle.WAKE_S``)."""
    for candidate in (name, f"huxleyd.{name}"):
        if candidate in index.modules:
            return [candidate]
    return sorted(m for m in index.modules if m.endswith(f".{name}"))


def _resolve_in_module(index: Index, module: str, tail: list[str]) -> str | None:
    if not tail:
        return None
    if tail[0] not in index.modules[module]:
        return f"module {module} defines no {tail[0]!r}"
    return _resolve_dotted(index, tail) if len(tail) > 1 else None


def _resolve_dotted(index: Index, parts: list[str]) -> str | None:
    """None when ``a.b.c`` names something real, else why not."""
    head, rest = parts[0], parts[1:]
    if head in index.classes:
        members = index.members(head)
        if rest[0] not in members:
            return f"class {head} has no member {rest[0]!r}"
        unknown = [p for p in rest[1:] if p not in index.anywhere]
        return f"{'.'.join(parts)}: no {unknown}" if unknown else None
    for cut in range(len(parts), 0, -1):
        modules = _modules_named(index, ".".join(parts[:cut]))
        if modules:
            why = [_resolve_in_module(index, m, parts[cut:]) for m in modules]
            return None if None in why else why[0]
    try:  # the standard library (``asyncio.to_thread``)
        return None if hasattr(importlib.import_module(head), rest[0]) else "no such name"
    except ImportError:
        return f"no class, module or library named {head!r}"


def check_span(index: Index, span: str, config: set[str]) -> str | None:
    """None when a backticked span names something real (or is not code), else why not."""
    if span in NOT_CODE or span.startswith(("/", "--")):
        return None
    if span.startswith("make "):
        target = span.removeprefix("make ")
        makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
        return None if re.search(rf"^{re.escape(target)}:", makefile, re.M) else "no make target"
    if span.startswith(("huxleyctl ", "python -m ")):
        word = span.split()[-1]
        return None if word in index.anywhere or word == "huxleyd" else "no such command"
    if re.fullmatch(r"\[[\w.]+\] \w+", span):  # a skill's key: its schema names it
        return None if span.split()[-1] in index.anywhere else "no such key"
    bare = re.sub(r"\([^()]*\)", "", span)  # calls: ``stats().faults``, ``build()``
    if "/" in bare or re.search(r"\.(py|c|h|md|toml)(:\w+)?$", bare):
        if not _path_exists(bare):
            return "no such file"
        name = bare.partition(":")[2]
        return None if not name or name in index.anywhere else f"no {name!r}"
    key = bare.split(" = ")[0]
    if key in config:
        return None
    if re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", bare):
        return _resolve_dotted(index, bare.split("."))
    if re.fullmatch(r"_?[A-Z]\w*|_\w+", bare):  # a class, a constant, a private name
        return None if bare in index.defined else "not defined in the code"
    if bare in index.anywhere or _modules_named(index, bare):
        return None
    return "not defined or named in the code"


C_FILE = "<C file>"
"""The "class" of a diagram's C file name (``_feedthread.c``): looked up as a file."""


def doc_names(text: str) -> tuple[list[str], list[tuple[str, str | None]]]:
    """The prose's backticked spans, and the diagrams' (class, member) pairs
    (class None: a bare private name with no class before it on its line)."""
    chunks = re.split(r"^```.*$", text, flags=re.M)
    spans = [s for prose in chunks[0::2] for s in re.findall(r"`([^`\n]+)`", prose)]
    pairs: list[tuple[str, str | None]] = []
    for line in "".join(chunks[1::2]).splitlines():
        last: str | None = None
        for m in re.finditer(r"\b([A-Z]\w+)\.(\w+)|(?<![\w.])(_[a-z]\w*)(\.[ch]\b)?", line):
            if m.group(1):
                last = m.group(1)
                pairs.append((m.group(2), last))
            elif m.group(4):  # a C source or header: the file must exist
                pairs.append((m.group(3) + m.group(4), C_FILE))
            elif not m.group(3).startswith(("_rt", "_dsp")):  # the C extensions
                pairs.append((m.group(3), last))
    return spans, pairs


def wrong_names(text: str, index: Index) -> list[str]:
    config = _config_keys()
    spans, pairs = doc_names(text)
    wrong = [f"`{s}`: {why}" for s in spans if (why := check_span(index, s, config))]
    for member, cls in pairs:
        if cls is None:
            ok = member in index.defined
        elif cls == C_FILE:
            ok = _path_exists(member)
            if not ok:
                wrong.append(f"diagram: {member}: no such file")
                continue
        else:
            ok = cls in index.classes and member in index.members(cls)
        if not ok:
            wrong.append(f"diagram: {cls or ''}.{member}: no such member")
    return sorted(set(wrong))


def test_every_name_on_the_architecture_page_exists() -> None:
    assert wrong_names(PAGE.read_text(encoding="utf-8"), build_index()) == []


def test_the_page_names_enough_code_to_be_worth_checking() -> None:
    spans, pairs = doc_names(PAGE.read_text(encoding="utf-8"))
    assert len(spans) > 200 and len(pairs) > 30


def test_a_moved_name_is_caught(tmp_path: Path) -> None:
    index = build_index()
    index.anywhere.add("LogOnly")
    page = (
        "The `Runtime.no_such_member` and `audio/no_such.py`, `providers.base.Nope`,"
        " `NoSuchClass`, `audio.no_such_key`, `make no-such-target`, `no_such_event`.\n"
        " `LogOnly`, said in a string by the code but defined nowhere.\n"
        "```\n AudioEngine._no_such → _nor_this\n Runtime.close → _neither\n"
        " [a C thread]  _no_such.c: its loop\n```\n"
    )
    assert wrong_names(page, index) == [
        "`LogOnly`: not defined in the code",
        "`NoSuchClass`: not defined in the code",
        "`Runtime.no_such_member`: class Runtime has no member 'no_such_member'",
        "`audio.no_such_key`: module huxleyd.audio defines no 'no_such_key'",
        "`audio/no_such.py`: no such file",
        "`make no-such-target`: no make target",
        "`no_such_event`: not defined or named in the code",
        "`providers.base.Nope`: module huxleyd.providers.base defines no 'Nope'",
        "diagram: AudioEngine._no_such: no such member",
        "diagram: AudioEngine._nor_this: no such member",
        "diagram: Runtime._neither: no such member",
        "diagram: _no_such.c: no such file",
    ]


def test_not_code_entries_are_still_on_the_page() -> None:
    # A stale exception would hide nothing now but excuse a wrong name later.
    spans, _ = doc_names(PAGE.read_text(encoding="utf-8"))
    assert sorted(set(NOT_CODE) - set(spans)) == []
