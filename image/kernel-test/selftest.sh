#!/bin/sh
# `make image-test-kernel`, inside the emulated image: copied onto the
# firmware partition by image/kernel-test.sh and started by a unit wanted by
# multi-user.target, as image/selftest.sh is. Everything goes to the serial
# console (SELFTEST lines); the machine powers off at the end.
#
# The files kernel-test.sh put in /boot/firmware/huxleyd-kernel-test/: the
# gpio-sim module built for this kernel, the board profile and its
# asound.conf, the simulator's script, the question (an espeak-ng WAV made
# on the host), turn.py. The daemon is set up as an admin would for a board:
# board profile, /etc/asound.conf, then a restart.
exec >/dev/console 2>&1
HOST_LOOP_S=@HOST_LOOP_S@
BARGE_IN_BOUND_MS=15
files=/boot/firmware/huxleyd-kernel-test
fails=0
up() { cut -d' ' -f1 /proc/uptime; }
ok() { echo "SELFTEST ok: $*"; }
bad() { echo "SELFTEST FAIL: $*"; fails=$((fails + 1)); }
check() { name=$1; shift; if "$@"; then ok "$name"; return 0; fi; bad "$name"; return 1; }
mono_s() { systemctl show -P "$2" "$1" | awk '{ printf "%.1f", $1 / 1000000 }'; }
wait_for() {  # a safety net for a slow, loaded emulator, not a judged time
    n=0
    while ! "$@" 2>/dev/null; do
        n=$((n + 1)); [ $n -gt 600 ] && return 1; sleep 1
    done
}
active() { [ "$(systemctl is-active "$1")" = active ]; }
finish() {
    if [ "$fails" -ne 0 ]; then
        journalctl --no-pager -u huxleyd -b -n 60 -o short-monotonic | sed 's/^/SELFTEST journal tail: /'
    fi
    if [ "$fails" -eq 0 ]; then echo "SELFTEST PASS"; else echo "SELFTEST FAILED: $fails check(s)"; fi
    echo "SELFTEST end at uptime $(up) s"
    systemctl poweroff --no-block
    exit 0
}

echo "SELFTEST start at uptime $(up) s"
check "multi-user.target reached" wait_for active multi-user.target
echo "SELFTEST boot: multi-user.target at $(mono_s multi-user.target ActiveEnterTimestampMonotonic) s after kernel start, kernel $(uname -r)"
echo "SELFTEST revision: $(od -An -tx1 /proc/device-tree/system/linux,revision | tr -d ' ') (/proc/device-tree/system/linux,revision, from the test's device tree)"

# How much slower this machine runs Python than the host did: the allowance
# for the one judged timing below (a press during the reply -> silence).
vm_loop_s=$(python3 -c 'import time, timeit; print(f"{min(timeit.repeat(lambda: sum(i * i for i in range(1_000_000)), number=1, repeat=5)):.3f}")')
slowdown=$(awk -v v="$vm_loop_s" -v h="$HOST_LOOP_S" 'BEGIN { printf "%.1f", v / h }')
silence_bound_ms=$(awk -v s="$slowdown" -v b="$BARGE_IN_BOUND_MS" 'BEGIN { printf "%.0f", 2 * b * (s < 1 ? 1 : s) }')
echo "SELFTEST emulation: a Python loop takes $vm_loop_s s here, $HOST_LOOP_S s on the host: ${slowdown}x slower"
echo "SELFTEST allowance: speaker silent within $silence_bound_ms ms of a press (the clocked card's ${BARGE_IN_BOUND_MS} ms x ${slowdown} x 2)"

# -- item 1: GPIO through the kernel: gpio-sim -----------------------------------------------
modprobe configfs 2>/dev/null
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
check "gpio-sim module loads (insmod)" insmod "$files/gpio-sim.ko"
dmesg | grep -i -E 'gpio.sim|taint' | tail -3 | sed 's/^/SELFTEST dmesg: /'
sim=/sys/kernel/config/gpio-sim/pi
mkdir -p "$sim/gpio-bank0"
echo 58 > "$sim/gpio-bank0/num_lines"          # the Pi 4's gpiochip0 has 58 lines
echo 1 > "$sim/live"
chip=$(cat "$sim/gpio-bank0/chip_name" 2>/dev/null)
dev=$(cat "$sim/dev_name" 2>/dev/null)
check "gpio-sim chip is gpiochip0 (the Pi's numbering)" [ "$chip" = gpiochip0 ]
udevadm settle
ls -l /dev/gpiochip* | sed 's/^/SELFTEST gpio: /'
check "gpiochip0 group gpio 0660 (the image's udev rule)" [ "$(stat -c '%a %G' /dev/gpiochip0)" = "660 gpio" ]
chip_dir=/sys/devices/platform/$dev/$chip
check "gpio-sim line files exist" [ -e "$chip_dir/sim_gpio17/pull" ]

# -- item 2: sound through the kernel: snd-aloop -----------------------------------------------
check "snd-aloop loads" modprobe snd-aloop
udevadm settle
sed 's/^/SELFTEST cards: /' /proc/asound/cards
check "card Loopback" grep -q '\[Loopback' /proc/asound/cards
check "/dev/snd/pcmC0D0p group audio" [ "$(stat -c '%G' /dev/snd/pcmC0D0p 2>/dev/null)" = audio ]

# -- the board's PCMs through ALSA alone (before the daemon holds them) ---------------------------
install -m 0644 "$files/kernel-test.asound.conf" /etc/asound.conf
check "huxley_capture records 1 s (arecord)" timeout 60 arecord -q -D huxley_capture -f S16_LE -r 48000 -c 1 -d 1 /tmp/mic.wav
echo "SELFTEST mic test file: $(stat -c %s /tmp/mic.wav 2>/dev/null) bytes"
check "huxley_playback plays 1 s (aplay)" timeout 60 aplay -q -D huxley_playback /tmp/mic.wav

# -- the daemon, set up for this board as an admin would --------------------------------------
conf=/etc/huxleyd/huxleyd.toml
# The FAT partition shows every file 0600 root (umask=0077): install them
# readable, as make install does.
install -d -m 0755 /etc/huxleyd/kernel-test
install -m 0644 "$files/kernel-test.toml" "$files/kernel-test.asound.conf" "$files/scenario.toml" /etc/huxleyd/kernel-test/
install -m 0644 "$files/kernel-test.asound.conf" /etc/asound.conf
# Earcons: the shipped ones, but a silent listen_start.wav, so what the
# recording shows after a press during the reply is the reply's end, not
# the listening cue the press plays (its file checks still apply: PCM16
# 24 kHz mono, not empty).
cp -r /opt/huxleyd/share/sounds /etc/huxleyd/kernel-test/sounds
install -m 0644 "$files/silent.wav" /etc/huxleyd/kernel-test/sounds/listen_start.wav
sed -i -e 's/^kind = "openai"$/kind = "sim"/' \
    -e 's|^# sim_scenario = .*|sim_scenario = "/etc/huxleyd/kernel-test/scenario.toml"|' \
    -e 's/^silent_response_timeout_s = .*/silent_response_timeout_s = 60.0/' \
    -e 's/^stall_timeout_s = .*/stall_timeout_s = 60.0/' \
    -e 's|^sounds_dir = .*|sounds_dir = "/etc/huxleyd/kernel-test/sounds"|' \
    -e 's/^board = .*/board = "kernel-test"/' \
    -e 's|^boards_dir = .*|boards_dir = "/etc/huxleyd/kernel-test"|' \
    -e 's/^# pin_factory = "lgpio"$/pin_factory = "lgpio"/' "$conf"
grep -E '^(kind|sim_scenario|silent_response_timeout_s|sounds_dir|backend|board|boards_dir|pin_factory) =' "$conf" \
    | sed 's/^/SELFTEST config: /'
# The C audio extensions (optional in setup.py: an install without them
# still works on PyAudio and numpy, and says so only in the journal). An
# image built before install.sh staged setup.py has none: the check fails,
# and the turn below runs with them built here from the same setup.py, with
# the image's own gcc and portaudio19-dev, as a fixed image would have them.
ext_dir=$(/opt/huxleyd/venv/bin/python -c 'import huxleyd.audio, os; print(os.path.dirname(huxleyd.audio.__file__))')
# Whether the installed daemon finds them is asked of the daemon's own module:
# an image built before the extension was renamed (_rtout -> _rt) imports
# the old name, and a file list of either name alone would misjudge one.
has_ext() {
    /opt/huxleyd/venv/bin/python -c 'import importlib
from huxleyd.audio.backends import callback_backend as c
importlib.import_module(getattr(c, "RT", None) or c.RTOUT)
import huxleyd.audio._dsp'
}
if ! check "the image has huxleyd's C audio extensions (the callback's, _dsp)" has_ext; then
    mkdir -p /tmp/src && tar -xf "$files/setup-src.tar" -C /tmp/src
    (cd /tmp/src && /opt/huxleyd/venv/bin/python setup.py -q build_ext --inplace) >/tmp/ext.log 2>&1 \
        || sed 's/^/SELFTEST build_ext: /' /tmp/ext.log | tail -20
    install -m 0644 /tmp/src/huxleyd/audio/_*.so "$ext_dir/" 2>/dev/null
    check "C extensions built in the VM from setup.py (for the turn below)" has_ext
fi
ls "$ext_dir" | grep -E '^_(rt|rtout|dsp)\..*\.so$' | sed 's/^/SELFTEST C extension: /'
check "config valid (huxleyd --check-config)" /opt/huxleyd/venv/bin/huxleyd --check-config --config "$conf"
systemctl restart huxleyd.service || journalctl --no-pager -u huxleyd -n 30 -o cat | sed 's/^/SELFTEST huxleyd failed: /'
check "huxleyd READY on the kernel devices" wait_for active huxleyd.service
journalctl --no-pager -u huxleyd -b -o cat | grep -E 'daemon_started|pin_factory|audio_backend|volume_restored|board' \
    | tail -6 | sed 's/^/SELFTEST journal: /'
started_line=$(journalctl -u huxleyd HUXLEY_EVENT=daemon_started -o cat | tail -1)
check "pin factory is lgpio, not mock" sh -c 'printf "%s" "$1" | grep -q "pins=\"lgpio"' - "$started_line"
# audio.backend stays "auto", the image's default: the C callback backend
# when its extension is installed (built above if the image lacked it).
check "audio on the card through the C callback backend" sh -c \
    'printf "%s" "$1" | grep -q "audio=\"callback (huxley_capture → huxley_playback)"' - "$started_line"
connected() { huxleyctl status --json | grep -q '"provider_state": "connected"'; }
check "provider connected (huxleyctl status)" wait_for connected
journalctl --no-pager -u huxleyd -b -o cat | grep -E '^audio_' | head -12 | sed 's/^/SELFTEST audio journal: /'
for s in pcm0p/sub0 pcm0c/sub0 pcm0c/sub1; do
    echo "SELFTEST $s: $(grep -E '^(state|hw_ptr|owner_pid)' /proc/asound/Loopback/$s/status 2>/dev/null | tr -s ' \n' ' ')"
done
grep -h . /sys/kernel/debug/gpio 2>/dev/null | grep -E 'gpio-(17|22|23|24) ' | sed 's/^/SELFTEST debugfs gpio: /'
xruns() { huxleyctl status --json | python3 -c 'import json, sys; x = json.load(sys.stdin)["xruns"]; print(" ".join(f"{k}={v}" for k, v in sorted(x.items())))'; }
# The card's own: its underruns (the speaker) and overruns (the mic). The other
# parts of the daemon's underruns (the speaker fed silence with audio queued, a
# gap inside an item) and the late periods are the emulated machine's, printed.
card_xruns() { xruns | tr ' ' '\n' | grep -E '^(card_underruns|overruns)=' | tr '\n' ' '; }
# A machine that cannot keep the callbacks' 2.5 ms period (this emulated one
# cannot) shows it in bursts of card xruns, and the daemon then widens the
# period (audio_period_widened) until the card keeps time. The turn starts once
# the card's counters have stood still for 5 s: what the turn is judged on is
# the period the daemon settled on, which a slow Pi would settle on too.
settled() { a=$(card_xruns); sleep 5; [ "$a" = "$(card_xruns)" ]; }
check "the daemon's card xrun counters stood still for 5 s before the turn" wait_for settled
journalctl --no-pager -u huxleyd -b -o cat | grep -E '^audio_period_widened' | cut -c1-300 \
    | sed 's/^/SELFTEST journal: /'
journalctl --no-pager -u huxleyd -b -o cat | grep -E '^audio_device_open' | tail -1 | cut -c1-300 \
    | sed 's/^/SELFTEST journal: /'
before=$(xruns)
card_before=$(card_xruns)
echo "SELFTEST daemon xruns before the turn: $before"
for s in pcm0p/sub0 pcm0c/sub1; do
    grep -E 'state|format|rate|channels|period_size|buffer_size' "/proc/asound/Loopback/$s/hw_params" 2>/dev/null \
        | tr '\n' ' ' | sed "s|^|SELFTEST $s hw_params: |"; echo
done

# -- the turn ------------------------------------------------------------------------------
python3 "$files/turn.py" --chip-dir "$chip_dir" --profile /etc/huxleyd/kernel-test/kernel-test.toml --question "$files/question.wav" \
    --stop "$files/stop.wav" --record /root/speaker.raw --silence-bound-ms "$silence_bound_ms" --xrun-file /tmp/kernel-xruns
turn_fails=$?
fails=$((fails + turn_fails))
after=$(xruns)
card_after=$(card_xruns)
echo "SELFTEST daemon xruns after the turn: $after"
read -r kernel_xruns kernel_triggers < /tmp/kernel-xruns 2>/dev/null || { kernel_xruns=0; kernel_triggers=0; }
echo "SELFTEST xruns during the turn: the kernel showed XRUN in $kernel_xruns samples of the daemon's streams and triggered them $kernel_triggers times; daemon counters before: $before; after: $after"
# Both ways: no xrun on the daemon's streams during the turn, as the kernel
# shows them (its XRUN state, and its triggers: an xrun stops and restarts a
# stream however short it was) and as the daemon counts them; and the two must
# agree: a kernel xrun with counters that did not move is a counter blind to its
# own failure, counters that moved with no trigger are a counter that invents.
check "no XRUN on the daemon's streams during the turn (the kernel's state and triggers)" \
    [ "$((kernel_xruns + kernel_triggers))" -eq 0 ]
check "no card xrun in the daemon's counters during the turn ($card_before-> $card_after)" \
    [ "$card_before" = "$card_after" ]
check "the daemon's counters see the kernel's xruns" sh -c \
    '[ "$1" -eq 0 ] && [ "$2" -eq 0 ] || [ "$3" != "$4" ]' - "$kernel_xruns" "$kernel_triggers" "$card_before" "$card_after"
check "the kernel saw each xrun the daemon counted (a trigger of its streams)" sh -c \
    '[ "$2" = "$3" ] || [ "$1" -gt 0 ]' - "$kernel_triggers" "$card_before" "$card_after"

# -- the journal's turn records ------------------------------------------------------------
done_turns() { [ "$(journalctl -u huxleyd HUXLEY_EVENT=turn_done -o cat | wc -l)" -ge 2 ]; }
check "two turn_done records" wait_for done_turns
journalctl --no-pager -u huxleyd HUXLEY_EVENT=turn_done -o cat | tail -2 | sed 's/^/SELFTEST turn_done: /'
journalctl --no-pager -u huxleyd HUXLEY_EVENT=turn_done -n 2 -o verbose | grep -E '^ +HUXLEY_(OUTCOME|SOURCE|AUDIO_SENT_MS|TURN)=' \
    | sed 's/^ */SELFTEST field: /'
outcome() { journalctl -u huxleyd HUXLEY_EVENT=turn_done -o verbose | grep -E '^ +HUXLEY_OUTCOME=' | sed -n "${1}p" | sed 's/^ *HUXLEY_OUTCOME=//'; }
check "first turn interrupted (the press during its reply)" [ "$(outcome 1)" = interrupted ]
check "second turn answered" [ "$(outcome 2)" = answered ]
check "turns came from the button (HUXLEY_SOURCE=ptt)" sh -c \
    "[ \"\$(journalctl -u huxleyd HUXLEY_EVENT=turn_done -o verbose | grep -c '^ *HUXLEY_SOURCE=ptt$')\" -ge 2 ]"

# -- volume: huxleyctl sets it, the card's mixer control reads it back ----------------------
echo "SELFTEST amixer scontrols: $(amixer -c Loopback scontrols | tr '\n' ' ')"
set_rc=0; huxleyctl volume 30 >/tmp/vol.out 2>&1 || set_rc=$?
sed 's/^/SELFTEST huxleyctl volume 30: /' /tmp/vol.out
check "huxleyctl volume 30: exit 0" [ "$set_rc" -eq 0 ]
reading=$(amixer -c Loopback sget Speaker)
echo "$reading" | sed 's/^/SELFTEST amixer: /'
db=$(echo "$reading" | sed -n 's/.*\[\(-[0-9.]*\)dB\].*/\1/p' | head -1)
# huxleyd's curve: 30 % = 60 * log10(0.30) = -31.4 dB; softvol's 256 steps over 60 dB are 0.24 dB apart.
check "Speaker reads back -31.4 dB (30 %), within one softvol step" \
    awk -v d="$db" 'BEGIN { exit !(d != "" && d + 31.37 < 0.3 && d + 31.37 > -0.3) }'
check "huxleyctl volume reads 30" sh -c '[ "$(huxleyctl volume)" = 30 ] || huxleyctl volume | grep -qw 30'

finish
