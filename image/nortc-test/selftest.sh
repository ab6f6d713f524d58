#!/bin/sh
# `make image-test-nortc`, inside the emulated image: copied onto the
# firmware partition by image/nortc-test.sh and started by a unit wanted by
# multi-user.target. The machine has no RTC (the test's device tree has
# none, as a Pi has none): the clock starts where systemd-timesyncd's clock
# file left it. Everything goes to the serial console (SELFTEST lines); the
# machine powers off at the end.
#
# The story: a timer, a reminder and a reminder already overdue are stored
# "from a previous boot" (the timers skill's own format, another boot id),
# due in the true time (the host's clock when QEMU started plus this boot's
# uptime: what NTP would answer), OFFSET_S ahead of this clock. The daemon starts on
# the stale clock and must fire nothing; the clock is then stepped forward
# as systemd-timesyncd does on its first sync (set the time, then the
# synchronized flag); each alarm must be announced once, at its due time in
# the new clock (the overdue one at the step), none early, late, twice or
# all in one burst.
exec >/dev/console 2>&1
HOST_BOOT_S=@HOST_BOOT_S@           # the host's clock when QEMU started: the true time
LATE_BOUND_S=${LATE_BOUND_S:-10}    # the skill polls each 1 s; the rest is emulation
files=/boot/firmware/huxleyd-nortc-test
fails=0
up() { cut -d' ' -f1 /proc/uptime; }
ok() { echo "SELFTEST ok: $*"; }
bad() { echo "SELFTEST FAIL: $*"; fails=$((fails + 1)); }
check() { name=$1; shift; if "$@"; then ok "$name"; return 0; fi; bad "$name"; return 1; }
mono_s() { systemctl show -P "$2" "$1" | awk '{ printf "%.1f", $1 / 1000000 }'; }
wait_for() {  # a safety net for a slow, loaded emulator, not a judged time
    n=0
    while ! "$@" 2>/dev/null; do
        n=$((n + 1)); [ $n -gt "${WAIT_S:-600}" ] && return 1; sleep 1
    done
}
# The skill's and the clock's own lines, for a reader of a failed run.
skill_journal() {
    journalctl --no-pager -u huxleyd -b -o short-unix \
        | grep -E 'timer|clock|skill=timers|daemon_started|inject_' | tail -20 | sed 's/^/SELFTEST journal: /'
}
active() { [ "$(systemctl is-active "$1")" = active ]; }
events() { journalctl -u huxleyd -b "HUXLEY_EVENT=$1" -o cat 2>/dev/null | wc -l; }
finish() {
    # From the step on: the alarms, and the turns and provider link around them.
    journalctl --no-pager -u huxleyd -b -o short-unix --since "@${step_wall%.*}" \
        | grep -E 'timer|inject_|clock|turn_|response|provider|connection|session|stall' \
        | head -80 | cut -c1-300 | sed 's/^/SELFTEST journal: /'
    if [ "$fails" -eq 0 ]; then echo "SELFTEST PASS"; else echo "SELFTEST FAILED: $fails check(s)"; fi
    echo "SELFTEST end at uptime $(up) s"
    systemctl poweroff --no-block
    exit 0
}

echo "SELFTEST start at uptime $(up) s"
check "multi-user.target reached" wait_for active multi-user.target
echo "SELFTEST boot: multi-user.target at $(mono_s multi-user.target ActiveEnterTimestampMonotonic) s after kernel start, kernel $(uname -r)"
check "no RTC (/sys/class/rtc/rtc0 absent, as on a Pi 4)" [ ! -e /sys/class/rtc/rtc0 ]
echo "SELFTEST clock at boot: $(date -u '+%Y-%m-%d %H:%M:%S') UTC (timesyncd's clock file: $(date -u -r /var/lib/systemd/timesync/clock '+%Y-%m-%d %H:%M:%S' 2>/dev/null || echo none))"
timedatectl show 2>/dev/null | grep -E '^(NTP|NTPSynchronized|CanNTP)=' | sed 's/^/SELFTEST timedatectl: /'
check "not synchronised (no /run/systemd/timesync/synchronized)" [ ! -e /run/systemd/timesync/synchronized ]
echo "SELFTEST time-sync.target: active at $(mono_s time-sync.target ActiveEnterTimestampMonotonic) s; huxleyd started at $(mono_s huxleyd ExecMainStartTimestampMonotonic) s after kernel start"

# -- this checkout's daemon, laid over the image's (its C extensions built here) -------------
check "this checkout's daemon and C extensions in the image's venv" sh "$files/overlay-daemon.sh" "$files/daemon-src.tar"
check "this checkout's timers skill in the image's venv" /opt/huxleyd/venv/bin/python -c 'import huxleyd.skills.skillclock'
echo "SELFTEST the skill's clock: kernel NTP status synced=$(/opt/huxleyd/venv/bin/python -c 'from huxleyd.skills.skillclock import kernel_clock_synced as k; print(k())') (adjtimex)"

# -- the daemon on the simulator (no provider key in this VM) ---------------------------------
conf=/etc/huxleyd/huxleyd.toml
sed -i -e 's/^kind = "openai"$/kind = "sim"/' \
    -e 's/^silent_response_timeout_s = .*/silent_response_timeout_s = 60.0/' \
    -e 's/^stall_timeout_s = .*/stall_timeout_s = 60.0/' "$conf"
check "config valid (huxleyd --check-config)" /opt/huxleyd/venv/bin/huxleyd --check-config --config "$conf"
check "huxleyd active before seeding (its database exists)" wait_for active huxleyd.service
systemctl stop huxleyd.service
db=$(ls /var/lib/huxleyd/*.db 2>/dev/null | head -1)
echo "SELFTEST database: $db ($(stat -c '%U' "$db" 2>/dev/null))"
# As the service user (root-owned -wal/-shm files would lock the daemon
# out), from a readable copy (the FAT partition shows every file 0600 root).
owner=$(stat -c '%U' "$db")
install -m 0644 "$files/alarms.py" /tmp/alarms.py
uptime_s=$(up); OFFSET_S=$((HOST_BOOT_S + ${uptime_s%.*} - $(date +%s)))
echo "SELFTEST true time: $(date -u -d "@$((HOST_BOOT_S + ${uptime_s%.*}))" '+%Y-%m-%d %H:%M:%S') UTC, this clock ${OFFSET_S} s behind"
check "the clock is far in the past (over a day behind)" [ "$OFFSET_S" -gt 86400 ]
if setpriv --reuid="$owner" --regid="$owner" --init-groups \
        python3 /tmp/alarms.py seed "$db" "$OFFSET_S" > /tmp/plan.json; then
    ok "alarms seeded from a previous boot"
else
    bad "alarms seeded from a previous boot"
fi
sed 's/^/SELFTEST plan: /' /tmp/plan.json; echo

# -- start on the stale clock: nothing may fire ------------------------------------------------
systemctl start huxleyd.service || journalctl --no-pager -u huxleyd -n 30 -o cat | sed 's/^/SELFTEST huxleyd failed: /'
check "huxleyd READY on the stale clock" wait_for active huxleyd.service
connected() { huxleyctl status --json | grep -q '"provider_state": "connected"'; }
check "provider connected (huxleyctl status)" wait_for connected
waiting() { [ "$(events timers_wait_for_clock)" -ge 1 ]; }
WAIT_S=120
check "timers say they wait for the clock (timers_wait_for_clock)" wait_for waiting || skill_journal
WAIT_S=600
journalctl -u huxleyd -b HUXLEY_EVENT=timers_wait_for_clock -o cat | tail -1 | sed 's/^/SELFTEST journal: /'
sleep 30   # an observation window on the stale clock, not a judged time
check "nothing fired on the stale clock (30 s watched)" [ "$(events timer_fired)" -eq 0 ]
check "nothing announced on the stale clock" [ "$(events inject_queued)" -eq 0 ]

# -- the step, as systemd-timesyncd makes it on its first sync --------------------------------
before=$(date +%s)
date -u -s "@$((before + OFFSET_S))" >/dev/null
mkdir -p /run/systemd/timesync && touch /run/systemd/timesync/synchronized
step_wall=$(date +%s.%N)
echo "SELFTEST step: $(date -u -d "@$before" '+%Y-%m-%d %H:%M:%S') -> $(date -u '+%Y-%m-%d %H:%M:%S') UTC (+${OFFSET_S} s), at uptime $(up) s"
stepped() { [ "$(events clock_stepped)" -ge 1 ]; }
check "the daemon logged the step (clock_stepped)" wait_for stepped
journalctl -u huxleyd -b HUXLEY_EVENT=clock_stepped -o cat | tail -1 | sed 's/^/SELFTEST journal: /'
all_fired() { [ "$(events timer_fired)" -ge 3 ]; }
check "all three alarms heard (timer_fired x3)" wait_for all_fired
sleep 30   # repeats would come within the skill's 1 s poll; 30 s watched
python3 /tmp/alarms.py check /tmp/plan.json "$step_wall" "$LATE_BOUND_S"
fails=$((fails + $?))
left=$(python3 /tmp/alarms.py left "$db")
check "nothing left stored ($left timers rows: every alarm deleted once heard)" [ "$left" = 0 ]
finish
