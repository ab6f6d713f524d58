"""A persona's audiobook library, made with real ffmpeg, and the steps that drive
the audiobooks skill over it.

The library holds: an m4b with tags and two chapters (a 6 s chirp), an
untagged FLAC (lossless, so resumed samples can be compared exactly) and a
two-file book whose parts share an album tag.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from huxleyd.skills.audiobooks import AudiobooksSkill

CHIRP = "aevalsrc=0.5*sin(2*PI*(200+100*t)*t):s=24000:d={d}"
M4B_META = """;FFMETADATA1
title=The Test Book
artist=Ann Author
album=The Test Book

[CHAPTER]
TIMEBASE=1/1000
START=0
END=3000
title=Chapter One

[CHAPTER]
TIMEBASE=1/1000
START=3000
END=6000
title=Chapter Two
"""


def ffmpeg(*args: str) -> None:
    subprocess.run(
        ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", *args], check=True
    )


def build_library(root: Path) -> Path:
    """Write the library under ``root/audiobooks``; returns ``root`` (the persona data dir)."""
    books = root / "audiobooks"
    (books / "Saga").mkdir(parents=True)
    meta = root / "meta.txt"
    meta.write_text(M4B_META)
    chirp6 = CHIRP.format(d=6)
    ffmpeg(
        "-f",
        "lavfi",
        "-i",
        chirp6,
        "-i",
        str(meta),
        "-map_metadata",
        "1",
        "-map_chapters",
        "1",
        "-c:a",
        "aac",
        "-b:a",
        "64k",
        str(books / "test_book.m4b"),
    )
    ffmpeg("-f", "lavfi", "-i", chirp6, "-c:a", "flac", str(books / "the_flac_tale.flac"))
    for track, title in ((1, "Departure"), (2, "Return")):
        ffmpeg(
            "-f",
            "lavfi",
            "-i",
            f"sine=frequency={300 * track}:sample_rate=24000:duration=2",
            "-metadata",
            "album=Saga",
            "-metadata",
            "artist=Bo Bard",
            "-metadata",
            f"title={title}",
            "-metadata",
            f"track={track}",
            "-c:a",
            "flac",
            str(books / "Saga" / f"{track:02d}.flac"),
        )
    return root


async def call(skill: AudiobooksSkill, tool: str, **args: Any) -> tuple[dict[str, Any], Any]:
    result = await skill.handle(tool, args)
    return json.loads(result.output), result.side_effect


async def take(stream: AsyncIterator[bytes], n: int) -> bytes:
    out = b""
    for _ in range(n):
        out += await anext(stream)
    return out
