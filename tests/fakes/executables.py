"""A fake of the external-program seam: the real program behind a counting wrapper.

Skills start ffmpeg and ffprobe by path (their ``ffmpeg``/``ffprobe`` setting);
a test hands them :attr:`CountingProgram.path` instead, which logs each start
and then runs the real program, so the test can count the starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class CountingProgram:
    path: str
    """The wrapper to configure in place of the program."""
    log: Path

    @property
    def starts(self) -> int:
        """How many times the program was started so far."""
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0


def counting_program(folder: Path, program: str) -> CountingProgram:
    """Write an executable ``folder/program`` that logs a line, then execs ``program``."""
    log = folder / f"{program}.starts"
    script = folder / program
    script.write_text(f'#!/bin/sh\necho start >> "{log}"\nexec {program} "$@"\n')
    script.chmod(0o755)
    return CountingProgram(str(script), log)
