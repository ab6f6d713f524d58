"""What runs degraded, in one place: the storage, a skill left out, a reload refused.

Layer: pure (no I/O but the log line). A part that could not start as
configured and runs without (or around) it calls :meth:`Degraded.report`
once; every surface reads this one record, so they cannot disagree:
``huxleyctl status`` (``problems``), ``huxleyctl doctor`` (the "degraded
parts" check), the journal (``part_degraded``, at the moment it happens) and
the first press after it (the coordinator plays the "something is wrong"
cue once per new problem, and the runtime has the reason, :meth:`Problem.spoken`,
said aloud once that press's turn is over). :meth:`Degraded.clear` is called when the part
recovers (a skill whose setup succeeded on a retry).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from huxleyd.logs import get_logger

log = get_logger("huxleyd.daemon")


@dataclass(frozen=True, slots=True)
class Problem:
    """One part that runs degraded, and why."""

    part: str
    """``storage``, ``skill:radio``, ``reload``…"""
    what: str
    """One line: what happened and what the daemon does instead."""
    file: str | None
    """The file concerned (the database, the persona), when there is one."""
    since: str
    """When it was reported, UTC, ``2026-11-27T10:02:03Z``."""
    fix: str = ""
    """What the admin does, fitted to the cause by the part that knows it (a full
    disk: free space; a read-only mount: not chown); empty: doctor's general advice."""

    def line(self) -> str:
        where = f" ({self.file})" if self.file else ""
        return f"{self.part}: {self.what}{where}, since {self.since}"

    def spoken(self) -> str:
        """Why, in words a user who never saw a journal understands (said aloud)."""
        if self.part == "storage":
            if self.what.startswith("writes failing"):
                return "I cannot save what you change now, so it is forgotten when I restart"
            if "in memory" in self.what:  # the state directory cannot be written
                return "I cannot save anything, so what you set now is forgotten when I restart"
            return "my memory file was damaged, I started with a fresh one"
        if self.part.startswith("skill:"):
            name = self.part.removeprefix("skill:")
            retried = "retried" in self.what
            return f"my {name} skill did not start" + (", I keep trying" if retried else "")
        if self.part == "reload":
            return "my new settings were refused, I kept the old ones"
        if self.part == "audio":
            return "my speaker runs without its fast sound driver, it may stutter"
        if self.part == "update":
            return "my last software update did not work, so I went back to the previous one"
        if self.part == "wake":
            return "I cannot listen for my wake word here, press the button to talk"
        if self.part.startswith("settings"):
            return "what you just set was not saved, it is forgotten when I restart"
        if self.part == "speaker":
            return "my speaker is failing, you may not hear me"
        if self.part == "persona-sounds":
            return "some of my sounds could not be read, they stay silent"
        return f"my {self.part} part is not working"


class Degraded:
    """The degraded parts of this daemon (see the module docstring)."""

    def __init__(self, *, wall: Callable[[], float] = time.time) -> None:
        self._wall = wall
        self._problems: dict[str, Problem] = {}
        self._unheard: set[str] = set()
        """Parts reported since the last press: the next press plays the cue."""

    def report(
        self, part: str, what: str, *, file: str | None = None, cue: bool = True, fix: str = ""
    ) -> Problem:
        """Record ``part``'s problem, or update its text (a retry that failed again).

        A new problem is logged (``part_degraded``) and cued at the next press;
        an update is neither (the caller logs what changed). ``cue=False``: an
        admin's problem the device works around unchanged (a refused reload):
        status and doctor show it, the button does not. ``fix``: the advice for
        this cause (:attr:`Problem.fix`)."""
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._wall()))
        old = self._problems.get(part)
        problem = Problem(part, what, file, since if old is None else old.since, fix)
        self._problems[part] = problem
        if old is None:
            if cue:
                self._unheard.add(part)
            log.error("part_degraded", part=part, problem=what, file=file or "")
        return problem

    def clear(self, part: str) -> None:
        """``part`` works again."""
        if self._problems.pop(part, None) is not None:
            self._unheard.discard(part)
            log.info("part_recovered", part=part)

    def get(self, part: str) -> Problem | None:
        """``part``'s problem, if it has one."""
        return self._problems.get(part)

    def put_back(self, problem: Problem) -> None:
        """Reinstate ``problem`` as it was (not logged, not cued again): a part's older
        problem that a newer, passing one (writes failing, then working) stood over."""
        self._problems[problem.part] = problem

    def problems(self) -> list[Problem]:
        return sorted(self._problems.values(), key=lambda p: p.part)

    def lines(self) -> list[str]:
        return [p.line() for p in self.problems()]

    def take_unheard(self) -> list[Problem]:
        """The problems no press has signalled yet; they count as heard from now."""
        unheard = [self._problems[p] for p in sorted(self._unheard) if p in self._problems]
        self._unheard.clear()
        return unheard
