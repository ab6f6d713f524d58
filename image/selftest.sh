#!/bin/sh
# `make image-test`, inside the emulated image: copied onto the firmware
# partition of a copy of the image and started by systemd from the kernel
# command line (systemd.run=), so the image under test is the released one.
# Everything goes to the serial console, where image/boot-test.sh reads the
# SELFTEST lines; the machine powers off when this ends.
#
# Expects the first-boot file boot-test.sh wrote: provider openai with the
# test key (its sha256 below), host name huxley-test, time zone Europe/Madrid.
# After checking it, the daemon is switched to the simulator for a turn that
# must be answered (no network in the emulator).
exec >/dev/console 2>&1
KEY_SHA256=@KEY_SHA256@
KEY_MARK=@KEY_MARK@
fails=0
up() { cut -d' ' -f1 /proc/uptime; }
ok() { echo "SELFTEST ok: $*"; }
bad() { echo "SELFTEST FAIL: $*"; fails=$((fails + 1)); }
check() { name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
mono_s() {  # a unit's monotonic timestamp property, in seconds since the kernel started
    v=$(systemctl show -P "$2" "$1"); echo "$v" | awk '{ printf "%.1f", $1 / 1000000 }'
}
# Bounded waits: the emulator is slow and loaded; the limit is a safety net.
# While waiting, the pending jobs every minute show what the boot waits on.
wait_for() {
    n=0
    while ! "$@" 2>/dev/null; do
        n=$((n + 1))
        [ $n -gt 600 ] && return 1
        [ $((n % 60)) -eq 0 ] && systemctl list-jobs --no-pager 2>&1 | sed "s/^/SELFTEST waiting ($n s): /"
        sleep 1
    done
}
active() { [ "$(systemctl is-active "$1")" = active ]; }

echo "SELFTEST start at uptime $(up) s"
# systemd.run= makes kernel-command-line.target the boot target; the
# appliance's normal target is started here, as a plain boot would.
systemctl start --no-block multi-user.target
check "multi-user.target reached" wait_for active multi-user.target
echo "SELFTEST boot: multi-user.target at $(mono_s multi-user.target ActiveEnterTimestampMonotonic) s after kernel start"
check "huxleyd active (READY)" wait_for active huxleyd.service
start=$(systemctl show -P ExecMainStartTimestampMonotonic huxleyd)
ready=$(systemctl show -P ActiveEnterTimestampMonotonic huxleyd)
echo "SELFTEST ready: huxleyd READY $(awk -v a="$start" -v b="$ready" 'BEGIN { printf "%.1f", (b - a) / 1000000 }') s after its start, $(mono_s huxleyd ActiveEnterTimestampMonotonic) s after kernel start; restarts $(systemctl show -P NRestarts huxleyd)"
systemctl status --no-pager huxleyd 2>&1 | sed -n '1,4p;/Status:/p'

# -- the first-boot file ---------------------------------------------------------------------
check "first boot applied" active huxleyd-firstboot.service
key=/etc/huxleyd/openai.key
echo "SELFTEST key: $(stat -c '%a %U:%G %n' "$key")"
check "key mode 0600 root" [ "$(stat -c '%a %U' "$key")" = "600 root" ]
check "key content" [ "$(sha256sum < "$key" | cut -d' ' -f1)" = "$KEY_SHA256" ]
check "setup file gone from FAT" [ ! -e /boot/firmware/huxleyd-setup.toml ]
check "key gone from FAT" sh -c "! grep -rl '$KEY_MARK' /boot/firmware --exclude=huxleyd-selftest.sh"
ls /boot/firmware | grep huxleyd-setup | sed 's/^/SELFTEST fat: /'
check "host name" [ "$(hostname)" = huxley-test ]
check "time zone" [ "$(readlink /etc/localtime)" = /usr/share/zoneinfo/Europe/Madrid ]

# -- the image around it ---------------------------------------------------------------------
check "root grown" [ -e /var/lib/huxleyd-image/root-grown ]
echo "SELFTEST root: $(df -h --output=size,used,avail / | tail -1)"
check "ssh off" [ "$(systemctl is-enabled ssh.service 2>/dev/null)" != enabled ]
ls -l /dev/gpiochip* | sed 's/^/SELFTEST gpio: /'
check "gpio chip group gpio 0660" [ "$(stat -c '%a %G' /dev/gpiochip0)" = "660 gpio" ]
check "service user opens the gpio chip" setpriv --reuid=huxley --regid=huxley --init-groups \
    /opt/huxleyd/venv/bin/python -c 'import os; os.close(os.open("/dev/gpiochip0", os.O_RDWR))'

# -- the journal: structured fields --------------------------------------------------------
echo "SELFTEST journal: journalctl -u huxleyd HUXLEY_EVENT=daemon_started"
journalctl --no-pager -u huxleyd HUXLEY_EVENT=daemon_started
journalctl --no-pager -u huxleyd HUXLEY_EVENT=daemon_started -o verbose | grep -E '^ +(HUXLEY_|CODE_|PRIORITY)' | sed 's/^ */SELFTEST field: /'
check "journal has HUXLEY_EVENT=daemon_started" \
    [ "$(journalctl -u huxleyd HUXLEY_EVENT=daemon_started -o cat | wc -l)" -ge 1 ]
check "no logging errors" sh -c "! journalctl -u huxleyd -o cat | grep -q -- '--- Logging error ---'"

echo "SELFTEST doctor:"
huxleyctl doctor 2>&1 | sed 's/^/  /'

# -- a turn, with the simulator (no network in here) -------------------------------------
# The daemon runs as `make run` does without hardware: mock pins, WAV audio,
# the built-in simulator. The key stays where first boot put it (checked
# above); a second setup file, through the first-boot mechanism again, names
# the simulator as the provider.
printf '[provider]\nkind = "sim"\n' > /boot/firmware/huxleyd-setup.toml
systemctl restart huxleyd-firstboot.service
check "provider switched to sim" grep -q '^kind = "sim"' /etc/huxleyd/huxleyd.toml
check "key still in place, 0600 root" [ "$(stat -c '%a %U' "$key")" = "600 root" ]
# Emulation only, in this VM's config: TCG runs the arm64 machine many times
# slower than a Pi, and the simulator's spoken answer (espeak-ng, ~0.9 s to
# first audio natively) can take longer than the 6 s a provider gets before
# a reply counts as silent (response_retry, then outcome=silent). 60 s is
# the most the config allows.
sed -i 's/^silent_response_timeout_s = .*/silent_response_timeout_s = 60.0/' /etc/huxleyd/huxleyd.toml
check "reply time-out raised for emulation" grep -q '^silent_response_timeout_s = 60.0$' /etc/huxleyd/huxleyd.toml
check "config valid (huxleyd --check-config)" /opt/huxleyd/venv/bin/huxleyd --check-config --config /etc/huxleyd/huxleyd.toml
# restart waits for READY (Type=notify) and fails at once if the daemon does.
if ! systemctl restart huxleyd.service; then
    journalctl --no-pager -u huxleyd -n 20 -o cat | sed 's/^/SELFTEST huxleyd failed: /'
fi
check "huxleyd READY again" wait_for active huxleyd.service
echo "SELFTEST journal: journalctl -u huxleyd HUXLEY_EVENT=daemon_started (after the switch)"
journalctl --no-pager -u huxleyd HUXLEY_EVENT=daemon_started
check "daemon started with the simulator" sh -c \
    "journalctl -u huxleyd HUXLEY_EVENT=daemon_started -o cat | tail -1 | grep -q 'provider=\"simulator'"
# A say while the provider link is down is refused at once ("offline"):
# wait until the daemon reports the link up.
connected() { huxleyctl status --json | grep -q '"provider_state": "connected"'; }
check "provider connected (huxleyctl status)" wait_for connected
huxleyctl status 2>&1 | sed 's/^/SELFTEST status: /'
echo "SELFTEST say: huxleyctl say 'what time is it'"
said=$(huxleyctl --timeout 300 say "what time is it" 2>&1); said_rc=$?
echo "$said" | sed 's/^/SELFTEST said: /'
# say exits 0 only for outcome=answered; it prints "(turn ..: no spoken
# answer)" for a turn that ended without one.
check "say exit 0 (answered)" [ "$said_rc" -eq 0 ]
check "say printed the answer" sh -c '[ -n "$1" ] && ! printf "%s\n" "$1" | grep -q "^(turn \|^huxleyctl:"' - "$said"
done_turn() { journalctl -u huxleyd HUXLEY_EVENT=turn_done -o cat | grep -q .; }
check "turn_done logged" wait_for done_turn
journalctl --no-pager -u huxleyd --since=-5min -o cat | grep -E "turn_|tool_|say|response" | tail -15 | sed 's/^/SELFTEST turn: /'
journalctl --no-pager -u huxleyd HUXLEY_EVENT=turn_done -n 1 -o verbose | grep -E '^ +HUXLEY_' | sed 's/^ */SELFTEST turn_done: /'
check "turn_done outcome=answered" sh -c \
    "journalctl -u huxleyd HUXLEY_EVENT=turn_done -n 1 -o verbose | grep -q '^ *HUXLEY_OUTCOME=answered$'"

if [ "$fails" -eq 0 ]; then echo "SELFTEST PASS"; else echo "SELFTEST FAILED: $fails check(s)"; fi
echo "SELFTEST end at uptime $(up) s"
[ "$fails" -eq 0 ]
