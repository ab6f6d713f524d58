"""Time for skills that keep appointments: a wall clock, a steady clock, the boot.

Layer: first-party skill support (imports the standard library only, like
every skill). A Raspberry Pi has no real-time clock: it boots with a wrong
wall clock (1970, or the last one saved) and NTP steps it later, by hours.
So a *duration* (a kitchen timer) is measured on ``CLOCK_BOOTTIME``, which a
wall-clock step does not move and which keeps counting through a suspend,
and is stored with the boot it was measured in
(``/proc/sys/kernel/random/boot_id``); a *time of day* (a reminder) follows
the wall clock, and only once that clock is plausible:

- ``/run/systemd/timesync/synchronized`` exists (systemd-timesyncd synced;
  what ``time-sync.target`` waits for), or
- the kernel says its clock is synchronised (``adjtimex``: chrony, ntpd and
  timesyncd all clear ``STA_UNSYNC``), or
- the machine has a battery-backed real-time clock (``/sys/class/rtc/rtc0``).

:class:`SystemClock` is the real thing; tests pass a fake with the same
four methods (:class:`SkillClock`).
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
SYNC_FLAG = Path("/run/systemd/timesync/synchronized")
RTC = Path("/sys/class/rtc/rtc0")
TIME_ERROR = 5
"""``adjtimex``'s answer when the kernel clock is not synchronised."""
_TIMEX_BYTES = 512
"""Room for ``struct timex`` (208 bytes on 64-bit Linux) with margin: read only."""


class SkillClock(Protocol):
    """What a timekeeping skill reads. Every method is cheap (called each poll)."""

    def utc_now(self) -> datetime:
        """The wall clock, an aware UTC datetime."""
        ...

    def steady_s(self) -> float:
        """Seconds on a clock a wall-clock step does not move (CLOCK_BOOTTIME)."""
        ...

    def boot_id(self) -> str:
        """This boot's id: a steady reading means nothing in another boot."""
        ...

    def wall_plausible(self) -> bool:
        """The wall clock can be trusted for a time of day (see the module docstring)."""
        ...


def kernel_clock_synced() -> bool | None:
    """The kernel's NTP status (``adjtimex`` read-only); None when it cannot be asked."""
    try:
        # The process's own symbols include libc's (no library search per call).
        adjtimex = ctypes.CDLL(None, use_errno=True).adjtimex
    except (OSError, AttributeError):
        return None
    buffer = ctypes.create_string_buffer(_TIMEX_BYTES)  # modes = 0: read only
    state = adjtimex(buffer)
    if state < 0:
        return None
    return bool(state != TIME_ERROR)


class SystemClock:
    """The real clocks of a Linux machine; the flag and RTC paths are injectable."""

    def __init__(
        self,
        *,
        sync_flag: Path = SYNC_FLAG,
        rtc: Path = RTC,
        boot_id_file: Path = BOOT_ID,
        kernel_synced: Callable[[], bool | None] = kernel_clock_synced,
    ) -> None:
        self._sync_flag = sync_flag
        self._rtc = rtc
        self._boot_id_file = boot_id_file
        self._kernel_synced = kernel_synced
        self._boot_id: str | None = None
        self._plausible = False

    def utc_now(self) -> datetime:
        return datetime.now(UTC)

    def steady_s(self) -> float:
        return time.clock_gettime(time.CLOCK_BOOTTIME)

    def boot_id(self) -> str:
        if self._boot_id is None:
            try:
                self._boot_id = self._boot_id_file.read_text(encoding="ascii").strip()
            except OSError:
                # No procfs (not Linux): one id per process, so a stored
                # steady reading is never trusted across a restart.
                self._boot_id = f"unknown-{time.time_ns()}"
        return self._boot_id

    def wall_plausible(self) -> bool:
        # Once plausible, it stays so: later steps are NTP corrections.
        if not self._plausible:
            self._plausible = (
                self._sync_flag.exists() or self._kernel_synced() is True or self._rtc.exists()
            )
        return self._plausible


def system_clock_for(config: Mapping[str, Any]) -> SystemClock:
    """The machine's clocks as a skill's settings table configures them
    (``time_sync_flag``); the doctor asks the same question the same way."""
    flag = config.get("time_sync_flag")
    return SystemClock(sync_flag=Path(str(flag)) if flag else SYNC_FLAG)
