"""How ``huxleyctl`` shows the daemon's answers (rich renderables and lines).

Presentation only: every function takes the typed reports of
:mod:`huxleyd.control.handler` and returns something a rich Console prints.
Text from the daemon is wrapped in :class:`rich.text.Text`, never parsed as
markup, so a media title with ``[brackets]`` prints as it is.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from huxleyd.control.handler import DoctorCheck, LevelsSample, SkillInfo, StatusReport

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
    table.add_row("Persona", Text(report.persona))
    table.add_row("Media", Text(report.media) if report.media else Text("nothing playing", "dim"))
    table.add_row("Volume", Text(f"{report.volume}"))
    table.add_row("Uptime", Text(format_uptime(report.uptime_s)))
    x = report.xruns
    xruns = Text(
        f"underruns {x.underruns} · overruns {x.overruns} · "
        f"late periods {x.late_periods} · dropped mic frames {x.dropped_mic_frames}"
    )
    if x.underruns or x.overruns or x.late_periods or x.dropped_mic_frames:
        xruns.stylize("yellow")
    table.add_row("Xruns", xruns)
    table.add_row("Last turn", Text(report.last_turn_id or "none yet"))
    for name, ms in report.last_turn_timings_ms.items():
        table.add_row(Text(f"  {name}", style="dim"), Text(f"{ms:.1f} ms"))
    return table


def skills_table(skills: Iterable[SkillInfo]) -> Table:
    table = Table(box=box.SIMPLE)
    table.add_column("skill", style="bold")
    table.add_column("tools")
    for skill in skills:
        table.add_row(Text(skill.name), Text(", ".join(skill.tools) or "(no tools)"))
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
        f"peak: mic {peak.mic_dbfs:.1f} dBFS, output {peak.output_dbfs:.1f} dBFS   (Ctrl-C to stop)",
        style="dim",
    )
    return Group(table, hint)


def levels_line(sample: LevelsSample) -> str:
    """The plain form for a pipe or a log: one line per sample."""
    return f"mic {sample.mic_dbfs:6.1f} dBFS  output {sample.output_dbfs:6.1f} dBFS"
