"""The C sources of the audio wing: in their own folder, with no circle between files.

A C file depends on another when it uses a function or a type the other defines
(not ``static``: what a header declares). The module init of each extension (``_rtmodule.c``, ``_dsp.c``) is
the one file that knows the others; a circle (``_rtout.c`` registering the feeder's
types while the feeder drives the Output) means no file can be read, built or
replaced on its own.
"""

from __future__ import annotations

import re
from pathlib import Path

CSRC = Path(__file__).resolve().parents[2] / "huxleyd" / "audio" / "csrc"
DEFINITION = re.compile(
    r"^(?!static\b|typedef\b|extern\b)[A-Za-z_][\w \*]*?\b(\w+)\s*(?:\(|=)", re.M
)
"""A file-scope definition the other files can use: a function or a type object that
is not ``static`` (a prototype ends in ``;`` and is not a definition)."""


def definitions(text: str) -> set[str]:
    names = set()
    for match in DEFINITION.finditer(text):
        line_end = text.find(";", match.end())
        brace = text.find("{", match.end())
        if brace != -1 and (line_end == -1 or brace < line_end or "=" in match.group(0)):
            names.add(match.group(1))
    return names


def code_of(text: str) -> str:
    """The C without its comments and string literals (their words name nothing)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def dependencies() -> dict[str, set[str]]:
    """C file → the C files whose (non-static) functions or types it uses."""
    texts = {source.name: code_of(source.read_text()) for source in sorted(CSRC.glob("*.c"))}
    defined = {name: definitions(text) for name, text in texts.items()}
    used = r"\b(\w+)\s*\(|(?<![&\w)])&\s*(\w+)"  # called, or its address taken
    words = {name: {a or b for a, b in re.findall(used, text)} for name, text in texts.items()}
    return {
        name: {other for other in texts if other != name and defined[other] & words[name]}
        for name in texts
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []

    def walk(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt == path[0]:
                found.append([*path, nxt])
            elif nxt not in path and nxt > path[0]:  # each circle once, from its least file
                walk(nxt, [*path, nxt])

    for start in sorted(graph):
        walk(start, [start])
    return found


def test_the_c_sources_have_no_circle() -> None:
    graph = dependencies()
    assert "_rtmodule.c" in graph and "_feedthread.c" in graph
    assert circles(graph) == [], graph


def test_a_circle_is_found() -> None:
    assert circles({"_a.c": {"_b.c"}, "_b.c": {"_c.c"}, "_c.c": {"_a.c"}}) == [
        ["_a.c", "_b.c", "_c.c", "_a.c"]
    ]


def test_the_c_sources_live_in_their_own_folder() -> None:
    audio = CSRC.parent
    assert not list(audio.glob("*.c")) and not list(audio.glob("*.h"))
    assert {p.stem for p in audio.glob("*.pyi")} == {"_rt", "_dsp", "_aec"}  # a stub each
