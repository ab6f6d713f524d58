"""Reboots after security updates: only when the persona allows it and the device is idle.

unattended-upgrades installs Debian's security updates by itself and never
reboots; an update that needs one (a kernel, libc) leaves
``/run/reboot-required``. ``huxleyctl reboot-if-idle`` (run as root by the
image's ``huxleyd-reboot.timer``, every few minutes of the night window)
reboots only when

- a reboot is pending (:func:`reboot_pending`);
- the persona allows it (``[updates] reboot = "when_idle"``, the default);
- the daemon answers and says it is idle (or muted): nothing speaks, plays,
  listens or holds the microphone, and no timer or reminder is due within
  :data:`ALERT_MARGIN_S` (:func:`busy_reasons`).

The daemon computes its reasons into the ``status`` report, the very report
``huxleyctl status`` shows, so what the admin reads and what the reboot obeys
are one thing. A daemon that does not answer is a reason to wait: whether it
is in use, what the persona allows and which timers are due cannot be seen
(it may be restarting); the timer asks again a few minutes later, and
``doctor`` (which works without the daemon) shows the pending reboot.
A press in the instant between the answer and the reboot is not held off:
the reboot stops the daemon as SIGTERM does (media saved, session closed).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from huxleyd.config.control_socket import ControlSettings
from huxleyd.control.client import ControlClient
from huxleyd.control.errors import ControlProtocolError, DaemonUnreachableError
from huxleyd.control.handler import DoctorCheck, StatusReport

REBOOT_REQUIRED = Path("/run/reboot-required")
"""Debian's flag (update-notifier-common's convention, written by the packages' hooks)."""

ALERT_MARGIN_S = 600.0
"""A timer or reminder due within this is a reason to wait: a Pi takes a minute
or two to reboot and reconnect (more with a file-system check), and an alarm
that fires late is the thing a kitchen timer must not do."""

REBOOT_COMMAND = ("systemctl", "reboot")
WINDOW = "02:00-06:00"
"""The night window of ``huxleyd-reboot.timer`` (image/rootfs), for the messages."""

_ACTIVITY = {
    "listening": "listening to the user",
    "thinking": "in a turn (waiting for the answer)",
    "speaking": "speaking",
    "media": "playing media",
    "call": "a skill holds the microphone",
    "offline": "the button was just pressed (offline)",
    "starting": "the daemon is starting",
}
_IDLE = frozenset({"idle", "muted"})
"""Activities that are no reason to wait. Muted, nothing listens, speaks or
plays; the mute is saved and holds after the reboot, so a device kept muted
(for privacy, for weeks) still gets its security reboots."""


def reboot_pending(flag: Path = REBOOT_REQUIRED) -> bool:
    """Whether an installed update waits for a reboot."""
    return flag.exists()


@runtime_checkable
class AlertSchedule(Protocol):
    """A skill that fires alerts at a time (our timers skill): the daemon asks it
    how soon the next one is due. Not part of the SDK: a skill without it has no
    alert a reboot could make late, as far as the daemon can tell."""

    def next_alert_in_s(self) -> float | None: ...


def next_alert_in_s(skills: Iterable[object]) -> float | None:
    """The soonest alert of the loaded skills, in seconds (<= 0: due now); None: none."""
    dues = [s.next_alert_in_s() for s in skills if isinstance(s, AlertSchedule)]
    return min((d for d in dues if d is not None), default=None)


def busy_reasons(
    activity: str, next_alert_in_s: float | None, *, margin_s: float = ALERT_MARGIN_S
) -> tuple[str, ...]:
    """Why the device is not idle now (empty: idle). ``activity`` is ``status``'s
    state; ``next_alert_in_s`` the soonest timer or reminder (None: none)."""
    reasons: list[str] = []
    if activity not in _IDLE:
        reasons.append(_ACTIVITY.get(activity, f"busy ({activity})"))
    if next_alert_in_s is not None and next_alert_in_s <= margin_s:
        if next_alert_in_s <= 0:
            reasons.append("a timer or reminder is due now")
        else:
            minutes = max(1, round(next_alert_in_s / 60))
            reasons.append(f"a timer or reminder is due in {minutes} min")
    return tuple(reasons)


@dataclass(frozen=True, slots=True)
class Decision:
    reboot: bool
    why: str


def decide(report: StatusReport) -> Decision:
    """Reboot now, or wait and why, from the daemon's ``status``."""
    if report.reboot_policy != "when_idle":
        return Decision(
            False,
            f"persona {report.persona!r} does not allow automatic reboots "
            f'([updates] reboot = "{report.reboot_policy}"): reboot by hand',
        )
    if report.busy:
        return Decision(False, "; ".join(report.busy))
    return Decision(True, "idle")


def reboot_if_idle(
    status: Callable[[], StatusReport],
    reboot: Callable[[], None],
    *,
    flag: Path = REBOOT_REQUIRED,
    say: Callable[[str], None] | None = None,
) -> bool:
    """Reboot (through ``reboot``) if a reboot is pending and allowed now; True if it did.

    Every outcome is one line through ``say`` (default: stdout, the unit's journal,
    flushed at once: the reboot may end this process before exit flushes it)."""
    say = say or _say
    if not reboot_pending(flag):
        say("no reboot needed")
        return False
    try:
        report = status()
    except (DaemonUnreachableError, ControlProtocolError) as exc:
        say(f"reboot needed, waiting: huxleyd is not answering ({exc})")
        return False
    decision = decide(report)
    if not decision.reboot:
        say(f"reboot needed, waiting: {decision.why}")
        return False
    say("rebooting for security updates")
    reboot()
    return True


def _say(line: str) -> None:
    print(line, flush=True)


def run_reboot_command(argv: tuple[str, ...] = REBOOT_COMMAND) -> None:
    """The real reboot (``systemctl reboot``: units stop in order, huxleyd as on SIGTERM)."""
    subprocess.run(argv, check=True, timeout=60)


def pending_line(pending: bool, policy: str) -> str | None:
    """``status``'s line about a pending reboot, or None when none is pending."""
    if not pending:
        return None
    if policy == "when_idle":
        return f"reboot pending (security updates): it reboots itself when idle, {WINDOW}"
    return (
        "reboot pending (security updates): the persona does not allow automatic "
        "reboots; reboot by hand (`sudo systemctl reboot`)"
    )


def check_reboot(policy: str, *, flag: Path = REBOOT_REQUIRED) -> DoctorCheck:
    """Doctor: a pending reboot is a warning naming when it will happen, or that it will not."""
    line = pending_line(reboot_pending(flag), policy)
    if line is None:
        return DoctorCheck.passed("security updates", "no reboot pending")
    fix = (
        "nothing to do: `journalctl -u huxleyd-reboot` says why it waits"
        if policy == "when_idle"
        else 'reboot by hand, or set [updates] reboot = "when_idle" in the persona'
    )
    return DoctorCheck.warning("security updates", line, fix)


def cmd_reboot_if_idle(
    control: ControlSettings,
    *,
    timeout_s: float,
    flag: Path = REBOOT_REQUIRED,
    reboot: Callable[[], None] = run_reboot_command,
) -> int:
    """``huxleyctl reboot-if-idle``: 0 when it rebooted or waits (waiting is normal),
    1 when the reboot command itself failed."""

    def status() -> StatusReport:
        with ControlClient(
            control.socket_path, timeout_s=timeout_s, group=control.socket_group
        ) as client:
            return client.status()

    try:
        reboot_if_idle(status, reboot, flag=flag)
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"huxleyctl: reboot-if-idle: the reboot failed: {exc}", file=sys.stderr)
        return 1
    return 0
