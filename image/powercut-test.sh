#!/bin/bash
# `make image-test-powercut`: pull the plug on the image while an audiobook
# plays, boot it again, and check that the boot is clean and the book
# resumes within a second of where it was heard. docs/image.md ("The
# power-cut test") says what it proves and what it cannot.
#
#   image/powercut-test.sh IMAGE [LOG]
#
# On a copy of the image (the release stays untouched): image/powercut-test/
# on the firmware partition with a book made here (a 1 kHz tone, FLAC: no
# encoder delay, so the book's seconds are the tone's), the kernel test's
# asound.conf (the speaker on snd-aloop) and this checkout's daemon, laid
# over the image's venv in the VM (as the no-RTC test does: an image built
# before the bookmark cadence would test old code). A unit runs
# image/powercut-test/selftest.sh on both boots; the kernel command line
# tells it which.
# 1. First boot: the book plays; heard.py prints on the console how much of
#    it the speaker played ("POWERCUT heard S s"). Once the guest says it is
#    armed and HEARD_S seconds were heard, QEMU gets SIGKILL: the guest's page
#    cache is lost, what it had written to its disk stays.
# 2. Second boot: the guest is told the last heard position and checks the
#    boot, the database and the resumed book.
set -euo pipefail

img=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(cd "$(dirname "$img")" && pwd)/test-powercut
log=${2:-$work/console.log}
limit_s=${HUXLEYD_IMAGE_TEST_TIMEOUT_S:-3600}
# Where in the book the plug is pulled: past the first saves, off the save
# cadence's grid (a commit may be in flight).
heard_s=${HUXLEYD_POWERCUT_HEARD_S:-30.$(( RANDOM % 10 ))}
# Armed, a book whose count stops growing this long has stalled (the guest's
# check at arming already caught one that never played).
stall_s=${HUXLEYD_POWERCUT_STALL_S:-120}
for tool in qemu-system-aarch64 mcopy mdir mmd sfdisk debugfs ffmpeg; do
    command -v "$tool" >/dev/null || { echo "image-test-powercut: $tool missing: make image-deps" >&2; exit 1; }
done
mkdir -p "$work"
say() { printf '[%s] image-test-powercut: %s\n' "$(date -u +%H:%M:%S)" "$*"; }
# shellcheck source=image/vm.sh
. "$here/vm.sh"

vm_prepare "$img" "$work"

files=$work/files
rm -rf "$files" && mkdir -p "$files"
cp "$here"/powercut-test/{heard.py,play.toml,resume.toml} "$files/"
cp "$here/kernel-test/kernel-test.asound.conf" "$files/powercut.asound.conf"
ffmpeg -nostdin -hide_banner -loglevel error -y -f lavfi \
    -i "sine=frequency=1000:sample_rate=24000:duration=300" -af volume=0.5 \
    -metadata title="The Power Cut Book" -metadata artist="Tess Ting" \
    -c:a flac "$files/power-cut-book.flac"
vm_daemon_src "$files/daemon-src.tar"
cp "$here/overlay-daemon.sh" "$files/"
cp "$here/powercut-test/selftest.sh" "$files/selftest.sh"
mmd -i "$vm_fat" ::huxleyd-powercut-test
mcopy -o -i "$vm_fat" "$files"/* ::huxleyd-powercut-test/
vm_add_unit "$test_img" "$work" huxleyd-powercut-test /boot/firmware/huxleyd-powercut-test/selftest.sh

cmdline="root=LABEL=RASPIROOT rw rootwait console=ttyAMA0 net.ifnames=0"

# -- 1. play, then the power cut ---------------------------------------------------------------
first_log=$work/console-play.log
vm_start "$test_img" "$work" "$first_log" 5 "$cmdline huxleyd_powercut=play"
trap '[ -z "$vm_pid" ] || kill -KILL "$vm_pid" 2>/dev/null' EXIT  # never leave it running
start=$(date +%s)
# grep reads the file itself: `tr | grep -q` can fail with SIGPIPE (pipefail) on a match.
console() { tr -d '\r' < "$first_log"; }
# What the guest's diagnose saved on the firmware partition (a failed first boot).
evidence() {
    local f
    for f in journal.txt heard-tail.raw; do
        mcopy -n -i "$vm_fat" "::huxleyd-powercut-test/$f" "$work/$f" 2>/dev/null \
            && say "the guest's $f: $work/$f"
    done
}
last_heard() {
    { grep -a '^POWERCUT heard ' "$first_log" || true; } | tail -1 | tr -d '\r' \
        | sed -n 's/^POWERCUT heard \([0-9.]*\) s$/\1/p'
}
while :; do
    if ! kill -0 "$vm_pid" 2>/dev/null; then
        console | grep -a 'SELFTEST' || true
        say "FAILED: the machine stopped before the power cut: see $first_log"; exit 1
    fi
    if grep -aq '^SELFTEST FAIL' "$first_log"; then
        # the guest prints what it knows, saves its evidence and powers off
        for _ in $(seq 120); do kill -0 "$vm_pid" 2>/dev/null || break; sleep 1; done
        console | grep -a 'SELFTEST' || true
        kill -KILL "$vm_pid" 2>/dev/null || true
        evidence
        say "FAILED before the power cut: see $first_log"; exit 1
    fi
    if [ $(( $(date +%s) - start )) -gt "$limit_s" ]; then
        kill -KILL "$vm_pid"; say "FAILED: nothing heard in $limit_s s: see $first_log"; exit 1
    fi
    heard=$(last_heard)
    # Armed, the book must go on being heard: a count that stops is a failure now,
    # not an hour's wait for the limit.
    if [ "$heard" != "${last_count:-}" ]; then
        last_count=$heard; counted_at=$(date +%s)
    elif grep -aq '^POWERCUT armed' "$first_log" && [ $(( $(date +%s) - counted_at )) -gt "$stall_s" ]; then
        kill -KILL "$vm_pid"; console | grep -a -E '^(SELFTEST|POWERCUT blocks)' | tail -40 || true
        say "FAILED: armed, but the book's count stayed at ${heard:-nothing} s for $stall_s s: see $first_log"
        exit 1
    fi
    if grep -aq '^POWERCUT armed' "$first_log" && [ -n "$heard" ] \
        && awk -v h="$heard" -v t="$heard_s" 'BEGIN { exit !(h >= t) }'; then
        break
    fi
    sleep 0.1
done
kill -KILL "$vm_pid"
wait "$vm_pid" 2>/dev/null || true
vm_pid=
heard=$(last_heard)  # a line printed after the poll, before the kill, counts too
console | grep -a 'SELFTEST' || true
say "power cut (SIGKILL to QEMU) after $(( $(date +%s) - start )) s; the book was heard to $heard s"

# -- 2. the next boot ------------------------------------------------------------------------------
vm_boot "$test_img" "$work" "$log" "$limit_s" 5 "$cmdline huxleyd_powercut=resume huxleyd_powercut_heard=$heard"
