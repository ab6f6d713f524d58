"""How ``huxleyctl`` shows the daemon's answers (rich renderables and lines).

Presentation only: every function takes the typed reports of
:mod:`huxleyd.control.handler` and returns something a rich Console prints.
Text from the daemon is wrapped in :class:`rich.text.Text`, never parsed as
markup, so a media title with ``[brackets]`` prints as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from huxleyd.control.handler import (
    DoctorCheck,
    LevelsSample,
    SkillInfo,
    StatusReport,
    XrunCounts,
)
from huxleyd.control.reboot import pending_line
from huxleyd.control.watch import WatchEvent

METER_FLOOR_DBFS = -60.0
"""The left end of a level bar; quieter reads as empty."""
METER_WIDTH = 40


def format_uptime(seconds: float) -> str:
    """``3725.5`` → ``1 h 02 min 05 s``; days when it has been that long."""
    total = int(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours:02d} h {minutes:02d} min"
    if hours:
        return f"{hours} h {minutes:02d} min {secs:02d} s"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


def status_table(report: StatusReport) -> Table:
    """The ``huxleyctl status`` table."""
    table = Table(title="huxleyd", show_header=False, box=box.SIMPLE, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    table.add_row("State", Text(report.state))
    provider = Text(f"{report.provider_kind}, {report.provider_state}")
    if report.is_simulator:
        provider.append("  (the built-in simulator, not an AI)", style="yellow")
    elif report.provider_state != "connected":
        provider.stylize("red")
    table.add_row("Provider", provider)
    why = provider_explanation(report)
    if why:
        table.add_row("", Text(why, style="yellow"))
    link = provider_link_in_words(report)
    table.add_row("Link", Text(link, style="yellow" if link != LINK_CLEAN else ""))
    table.add_row("Persona", Text(report.persona))
    if report.version:
        release = f" (release {report.release})" if report.release else ""
        table.add_row("Version", Text(report.version + release))
    for i, problem in enumerate(report.problems):
        table.add_row("Degraded" if i == 0 else "", Text(problem, style="red"))
    for i, line in enumerate(report.home):
        table.add_row("Home" if i == 0 else "", Text(line))
    reboot = pending_line(report.reboot_pending, report.reboot_policy)
    if reboot is not None:
        busy = f"; waiting: {'; '.join(report.busy)}" if report.busy else ""
        table.add_row("Updates", Text(reboot + busy, style="yellow"))
    table.add_row("Media", Text(report.media) if report.media else Text("nothing playing", "dim"))
    volume = Text(f"{report.volume}") if report.volume >= 0 else Text("not open yet", "dim")
    table.add_row("Volume", volume)
    table.add_row("Uptime", Text(format_uptime(report.uptime_s)))
    x = report.xruns
    trouble = x.underruns or x.overruns or x.late_periods or x.dropped_mic_frames
    table.add_row("Audio", Text(xruns_in_words(x), style="yellow" if trouble else ""))
    table.add_row("Last turn", Text(report.last_turn_id or "none yet"))
    for name, ms in report.last_turn_timings_ms.items():
        table.add_row(Text(f"  {name}", style="dim"), Text(f"{ms:.1f} ms"))
    return table


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def xruns_in_words(x: XrunCounts) -> str:
    """The engine's trouble counters as a person reads them."""
    counters = (
        (
            x.underruns,
            "underrun",
            "underruns",
            " (the speaker ran dry: a click or a gap was heard)",
        ),
        (x.overruns, "overrun", "overruns", " (the mic overflowed: audio was lost)"),
        (x.late_periods, "late period", "late periods", " (the audio thread missed its deadline)"),
        (x.dropped_mic_frames, "mic frame", "mic frames", " dropped (nobody read them in time)"),
    )
    parts = [_plural(n, one, many) + meaning for n, one, many, meaning in counters if n]
    split = (
        (x.card_underruns, "at the card"),
        (x.speaker_dropouts, "fed silence with audio queued"),
        (x.source_gaps, "inside an item"),
    )
    if x.underruns and any(n for n, _ in split):
        parts[0] += " [" + ", ".join(f"{n} {where}" for n, where in split if n) + "]"
    heard = silences_in_words(x.silences)
    if heard:
        parts.append(heard)
    return "; ".join(parts) if parts else "no glitches since start"


SILENCE_CAUSES = (
    ("card_xruns", "", "card xrun"),
    ("dry_ring", "dry_ring_ms", "dry ring (the mix was late)"),
    ("late_source", "late_source_ms", "late source (a delta was late)"),
    ("reopens", "reopen_ms", "reopen"),
)
"""The causes of :class:`huxleyd.audio.types.Silences`, with their lengths' keys."""


def silences_in_words(silences: Mapping[str, float]) -> str:
    """ "silences heard inside replies: 2 late source (45 ms), 1 reopen (60 ms)", or ""."""
    parts = []
    for key, ms_key, label in SILENCE_CAUSES:
        count = int(silences.get(key, 0))
        if count:
            ms = f" ({silences[ms_key]:g} ms)" if ms_key in silences else ""
            parts.append(f"{count} {label}{ms}")
    return "silences heard inside replies: " + ", ".join(parts) if parts else ""


LINK_CLEAN = "no stalls since start"


def provider_link_in_words(report: StatusReport) -> str:
    """The provider link's trouble counters as a person reads them."""
    parts = []
    if report.provider_stalls:
        parts.append(
            _plural(report.provider_stalls, "stall", "stalls")
            + " (a reply stopped arriving: the connection was dropped and tried again)"
        )
    if report.provider_unlogged_notes:
        parts.append(
            _plural(report.provider_unlogged_notes, "unknown server event", "unknown server events")
            + " counted, not logged (past the first few dozen kinds)"
        )
    return "; ".join(parts) if parts else LINK_CLEAN


def provider_explanation(report: StatusReport) -> str:
    """Why the provider is not connected and when the next try is ('' when fine)."""
    if report.provider_state == "connected" or report.is_simulator:
        return ""
    if report.provider_state == "setup_failed":
        return f"{report.provider_detail}; the button answers with the error sound"
    words = []
    if report.provider_attempt:
        words.append(_plural(report.provider_attempt, "try", "tries") + " failed in a row")
    if report.provider_detail:
        words.append(f"last error: {report.provider_detail}")
    if report.provider_retry_in_s is not None:
        words.append(f"next try in {format_uptime(max(report.provider_retry_in_s, 0.0))}")
    if report.provider_state == "offline":
        words.append("the button answers with the offline sound until then")
    return "; ".join(words)


def skills_table(skills: Iterable[SkillInfo]) -> Table:
    table = Table(box=box.SIMPLE)
    table.add_column("skill", style="bold")
    table.add_column("distribution")
    table.add_column("version")
    # A failure's reason is long: wrap it (and the tools) rather than let a
    # narrow terminal collapse the whole table into "…".
    table.add_column("state", overflow="fold", ratio=2)
    table.add_column("tools", overflow="fold", ratio=1)
    for skill in skills:
        state = Text("ready", style="green")
        if skill.state != "ready":
            state = Text(f"{skill.state}: {skill.reason}" if skill.reason else skill.state, "red")
        table.add_row(
            Text(skill.name),
            Text(skill.distribution or "?"),
            Text(skill.version or "?"),
            state,
            Text(", ".join(skill.tools) or "(no tools)"),
        )
    return table


def doctor_line(check: DoctorCheck) -> Text:
    """One line per check: ``✓ name: detail``, ``! …`` (warn), ``– …`` (skipped), ``✗ … → fix``."""
    mark, style = _DOCTOR_MARKS[check.status or ("ok" if check.ok else "fail")]
    line = Text()
    line.append(f"{mark} ", style=style)
    line.append(f"{check.name}: ", style="bold")
    line.append(check.detail)
    if check.fix:
        line.append(f"  → {check.fix}", style="dim" if check.status == "ok" else "yellow")
    return line


_DOCTOR_MARKS = {
    "ok": ("✓", "green"),
    "warn": ("!", "bold yellow"),
    "fail": ("✗", "bold red"),
    "skipped": ("–", "dim"),
}
"""Only a check that looked and found well gets a tick."""


def level_bar(dbfs: float, *, width: int = METER_WIDTH) -> Text:
    """A bar from METER_FLOOR_DBFS (empty) to 0 dBFS (full), green/yellow/red."""
    span = -METER_FLOOR_DBFS
    fraction = min(max((dbfs - METER_FLOOR_DBFS) / span, 0.0), 1.0)
    filled = round(fraction * width)
    colour = "red" if dbfs > -3.0 else "yellow" if dbfs > -12.0 else "green"
    bar = Text("█" * filled, style=colour)
    bar.append("·" * (width - filled), style="dim")
    bar.append(f" {dbfs:6.1f} dBFS")
    return bar


def levels_meter(sample: LevelsSample, peak: LevelsSample) -> RenderableType:
    """The live ``huxleyctl levels`` view: one bar per direction and the peaks seen."""
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold")
    table.add_column()
    table.add_row("mic", level_bar(sample.mic_dbfs))
    table.add_row("output", level_bar(sample.output_dbfs))
    hint = Text(
        f"peak: mic {peak.mic_dbfs:.1f} dBFS, output {peak.output_dbfs:.1f} dBFS; silences "
        f"heard inside replies {sample.silences}   (Ctrl-C to stop)",
        style="dim",
    )
    return Group(table, hint)


def levels_line(sample: LevelsSample) -> str:
    """The plain form for a pipe or a log: one line per sample."""
    return (
        f"mic {sample.mic_dbfs:6.1f} dBFS  output {sample.output_dbfs:6.1f} dBFS  "
        f"silences {sample.silences}"
    )


_WATCH_LABELS = {
    "heard": "heard",
    "said": "said",
    "tool": "tool",
    "result": "result",
}


def _clock_time(at: str) -> str:
    from datetime import datetime

    try:
        return datetime.fromisoformat(at).astimezone().strftime("%H:%M:%S.%f")[:-3]
    except ValueError:
        return at


def _quoted(text: object) -> str:
    return f"“{text}”"


Fields = Mapping[str, Any]


def _heard(f: Fields) -> str:
    via = f" (typed: {f['via']})" if f.get("via") else ""
    return _quoted(f.get("text")) + via


def _result(f: Fields) -> str:
    effect = f" + {f['side_effect']}" if f.get("side_effect") else ""
    error = f"  [error: {f['error']}]" if f.get("error") else ""
    return f"{f.get('name')} → {f.get('output')}{effect}{error}"


def _turn(f: Fields) -> str:
    tools = f" (tools: {f['tools']})" if f.get("tools") else ""
    return f"{f.get('outcome')}{tools}, from {f.get('source')}"


def _media(f: Fields) -> str:
    label = f": {f['label']}" if f.get("label") else ""
    reason = f" ({f['reason']})" if f.get("reason") else ""
    return f"{f.get('action')}{label}{reason}"


def _connection(f: Fields) -> str:
    retry = f.get("retry_in_s")
    words = [str(f.get("state"))]
    if f.get("detail"):
        words.append(str(f["detail"]))
    if isinstance(retry, int | float):
        words.append(f"next try in {retry:g} s")
    return ", ".join(words)


def _notice(f: Fields) -> str:
    extra = " ".join(f"{k}={v}" for k, v in f.items() if k != "what")
    return f"{f.get('what')}" + (f"  {extra}" if extra else "")


def _plain(f: Fields) -> str:
    return " ".join(f"{k}={v}" for k, v in f.items())


WATCH_WORDS: Mapping[str, Callable[[Fields], str]] = {
    "watching": lambda f: f"from now on ({f.get('clients')} watching)",
    "state": lambda f: str(f.get("state")),
    "heard": _heard,
    "said": lambda f: _quoted(f.get("text")),
    "tool": lambda f: f"{f.get('name')}({f.get('arguments') or ''})",
    "result": _result,
    "turn": _turn,
    "media": _media,
    "volume": lambda f: f"{f.get('level')} (by {f.get('by')})",
    "connection": _connection,
    "notice": _notice,
    "mute": _plain,
    "announce": lambda f: (
        f"from the {f.get('origin')}: {_quoted(f.get('text'))} {f.get('outcome')}"
        + (f" ({f['reason']})" if f.get("reason") else "")
    ),
}
"""Each watch kind (:data:`huxleyd.control.watch.KINDS`) in words; a kind not
here (a newer daemon's) prints its fields as ``key=value``."""


def watch_text(event: WatchEvent) -> str:
    """What happened, in words (the part of a watch line after time and turn)."""
    return WATCH_WORDS.get(event.kind, _plain)(event.fields)


def watch_line(event: WatchEvent) -> str:
    """One plain line per event: local time, turn, kind, what happened."""
    lost = (
        f"  ({event.dropped} earlier events lost: this terminal was too slow)"
        if event.dropped
        else ""
    )
    return (
        f"{_clock_time(event.at)} {event.turn or '-':>4} {event.kind:<10} {watch_text(event)}{lost}"
    )
