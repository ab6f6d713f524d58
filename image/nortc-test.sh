#!/bin/bash
# `make image-test-nortc`: boot the built image under qemu-system-aarch64
# -M virt with no real-time clock, as a Raspberry Pi 4 has none, and step
# the clock forward as systemd-timesyncd does on its first sync, with a
# timer and reminders pending from before the boot: each must be announced
# once, at its time, none early, late, twice or in a burst.
# docs/image.md ("The no-RTC test") says what it proves and what it cannot.
#
#   image/nortc-test.sh IMAGE [LOG]
#
# On a copy of the image (the release stays untouched): QEMU's own device
# tree without its PL031 RTC (the kernel then has no /dev/rtc0 and starts at
# 1970; systemd and systemd-timesyncd's clock file move it to the last saved
# time, as on a Pi); image/nortc-test/ on the firmware partition, run by a
# unit once the default target is up, which powers the machine off when done.
set -euo pipefail

img=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(cd "$(dirname "$img")" && pwd)/test-nortc
log=${2:-$work/console.log}
limit_s=${HUXLEYD_IMAGE_TEST_TIMEOUT_S:-3600}
for tool in qemu-system-aarch64 mcopy mdir mmd sfdisk debugfs fdtget fdtput; do
    command -v "$tool" >/dev/null || { echo "image-test-nortc: $tool missing: make image-deps" >&2; exit 1; }
done
mkdir -p "$work"
say() { printf '[%s] image-test-nortc: %s\n' "$(date -u +%H:%M:%S)" "$*"; }
# shellcheck source=image/vm.sh
. "$here/vm.sh"

vm_prepare "$img" "$work"

rm -f "$work/virt.dtb"
qemu-system-aarch64 "${vm_machine[@]}" -machine dumpdtb="$work/virt.dtb" -nographic -nic none >/dev/null 2>&1 \
    || [ -s "$work/virt.dtb" ] || { echo "image-test-nortc: qemu could not dump its device tree" >&2; exit 1; }
pl031=$(fdtget -l "$work/virt.dtb" / | grep '^pl031@' || true)
[ -n "$pl031" ] || { echo "image-test-nortc: no pl031 node in QEMU's device tree" >&2; exit 1; }
fdtput -r "$work/virt.dtb" "/$pl031"

files=$work/files
rm -rf "$files" && mkdir -p "$files"
cp "$here/nortc-test/alarms.py" "$files/"
# This checkout's daemon and SDK (its C extensions built in the VM), laid over
# the image's venv in the VM: an image built before the timers skill learned the wall clock's
# plausibility (huxleyd/skills/skillclock.py) would test old code.
vm_daemon_src "$files/daemon-src.tar"
cp "$here/overlay-daemon.sh" "$files/"
# The true time the VM's clock is stepped to: this host's (NTP's stand-in).
sed "s/@HOST_BOOT_S@/$(date +%s)/" "$here/nortc-test/selftest.sh" > "$files/selftest.sh"
mmd -i "$vm_fat" ::huxleyd-nortc-test
mcopy -o -i "$vm_fat" "$files"/* ::huxleyd-nortc-test/
vm_add_unit "$test_img" "$work" huxleyd-nortc-test /boot/firmware/huxleyd-nortc-test/selftest.sh
# A Pi that was off for a month: the image's clock floor is its commit's time
# (image/build.sh), so a fresh image would boot almost on time. Its clock file
# goes back 30 days and /usr/lib/clock-epoch away (then systemd's own build
# date is the floor), as on a device last shut down a month ago.
month_ago=$(date -u -d '30 days ago' +%Y%m%d%H%M%S)
vm_root_debugfs "$test_img" "$work" <<DEBUGFS
rm /usr/lib/clock-epoch
set_inode_field /var/lib/systemd/timesync/clock mtime $month_ago
DEBUGFS

cmdline="root=LABEL=RASPIROOT rw rootwait console=ttyAMA0 net.ifnames=0"
vm_boot "$test_img" "$work" "$log" "$limit_s" 5 "$cmdline" -dtb "$work/virt.dtb"
