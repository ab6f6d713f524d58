"""`make image-test-nortc`, inside the emulated image (stdlib only, the system python3).

  alarms.py seed DB OFFSET_S   store a timer, a reminder and an overdue reminder
                               as the timers skill does, "from a previous boot",
                               due in the time the clock will be stepped to
  alarms.py check PLAN STEP_WALL_S BOUND_S   read the daemon's journal and judge
  alarms.py left DB            how many timers rows are still stored

The plan (ids and due times) is printed by ``seed`` as JSON and read back by
``check``. Times are UTC epoch seconds. The stored values are the timers
skill's own format (huxleyd/skills/timers.py, Alarm.to_json).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time

PREVIOUS_BOOT = "00000000-0000-0000-0000-previousboot"
TIMER_IN_S = 240.0
"""After the step: the timer (and the reminder a minute later) are due then."""


def seed(db: str, offset_s: float) -> None:
    """The clock now is the stale one; ``true`` is the time the step will set."""
    true = time.time() + offset_s
    alarms = [
        {
            "id": "0bd0e000",
            "kind": "reminder",
            "due_ts": true - 600,
            "created_ts": true - 7200,
            "name": None,
            "duration_s": None,
            "text": "water the plants",
            "boot_id": None,
            "due_steady_s": None,
        },
        {
            "id": "71e40001",
            "kind": "timer",
            "due_ts": true + TIMER_IN_S,
            "created_ts": true - 60,
            "name": "pasta",
            "duration_s": TIMER_IN_S + 60,
            "text": None,
            "boot_id": PREVIOUS_BOOT,
            "due_steady_s": 100.0,
        },
        {
            "id": "4e3d0002",
            "kind": "reminder",
            "due_ts": true + TIMER_IN_S + 60,
            "created_ts": true - 3600,
            "name": None,
            "duration_s": None,
            "text": "call the plumber",
            "boot_id": None,
            "due_steady_s": None,
        },
    ]
    with sqlite3.connect(db) as conn:
        for alarm in alarms:
            conn.execute(
                "INSERT OR REPLACE INTO settings (skill, key, value) VALUES ('timers', ?, ?)",
                (f"timer:{alarm['id']}", json.dumps(alarm)),
            )
    print(json.dumps({a["id"]: {"kind": a["kind"], "due_ts": a["due_ts"]} for a in alarms}))


def journal(event: str) -> list[dict[str, str]]:
    out = subprocess.run(
        ["journalctl", "-u", "huxleyd", "-b", f"HUXLEY_EVENT={event}", "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def check(plan_file: str, step_wall_s: float, bound_s: float) -> int:
    """SELFTEST lines; the number of failed checks."""
    with open(plan_file, encoding="ascii") as f:
        plan: dict[str, dict[str, object]] = json.load(f)
    fails = 0

    def judge(name: str, good: bool) -> None:
        nonlocal fails
        print(f"SELFTEST {'ok' if good else 'FAIL'}: {name}")
        fails += 0 if good else 1

    queued = [e for e in journal("inject_queued") if e.get("HUXLEY_KEY", "").startswith("timer:")]
    fired = journal("timer_fired")
    for e in queued:
        at = int(e["__REALTIME_TIMESTAMP"]) / 1e6
        print(
            f"SELFTEST inject_queued: key={e['HUXLEY_KEY']} at {at:.1f} "
            f"({time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(at))} UTC)"
        )
    for e in fired:
        print(
            f"SELFTEST timer_fired: id={e.get('HUXLEY_ID')} kind={e.get('HUXLEY_KIND')} "
            f"late_s={e.get('HUXLEY_LATE_S')}"
        )
    judge(
        f"{len(queued)} announcements for {len(plan)} alarms (none twice, none merged)",
        len(queued) == len(plan),
    )
    for alarm_id, alarm in plan.items():
        due = float(str(alarm["due_ts"]))
        mine = [e for e in queued if alarm_id in e["HUXLEY_KEY"].removeprefix("timer:").split("+")]
        times = [int(e["__REALTIME_TIMESTAMP"]) / 1e6 for e in mine]
        # Due before the step (it came due while the clock was wrong): at the step.
        expected = max(due, step_wall_s)
        what = f"{alarm['kind']} {alarm_id} (due {due - step_wall_s:+.1f} s from the step)"
        if len(times) != 1:
            judge(f"{what}: announced once (seen {len(times)}x)", False)
            continue
        error = times[0] - expected
        print(f"SELFTEST {what}: announced {error:+.1f} s from when it was due")
        judge(f"{what}: not early", error >= -1.0)
        judge(f"{what}: not late (bound {bound_s:.0f} s)", error <= bound_s)
        heard = [e for e in fired if e.get("HUXLEY_ID") == alarm_id]
        judge(f"{what}: timer_fired once", len(heard) == 1)
    return fails


def main() -> int:
    if sys.argv[1] == "left":
        with sqlite3.connect(sys.argv[2]) as conn:
            print(
                conn.execute("SELECT count(*) FROM settings WHERE skill = 'timers'").fetchone()[0]
            )
        return 0
    if sys.argv[1] == "seed":
        seed(sys.argv[2], float(sys.argv[3]))
        return 0
    return min(check(sys.argv[2], float(sys.argv[3]), float(sys.argv[4])), 99)


if __name__ == "__main__":
    sys.exit(main())
