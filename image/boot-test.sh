#!/bin/bash
# `make image-test`: boot the built image under qemu-system-aarch64 -M virt
# (TCG, no GPIO HAT, no sound card) with its own kernel and initrd, and
# check from the serial console what a user would see on a Pi: systemd up,
# huxleyd READY, the first-boot file applied, a `huxleyctl say` turn done.
#
#   image/boot-test.sh IMAGE [LOG]
#
# A copy of the image is booted (the release stays untouched), grown by
# 1 GiB so the first boot's partition growth has room. On its firmware
# partition this script writes a huxleyd-setup.toml (with a test key) and
# the check script image/selftest.sh, which systemd runs from the kernel
# command line (systemd.run=) and which powers the machine off at the end.
set -euo pipefail

img=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(dirname "$img")/test
log=${2:-$work/console.log}
limit_s=${HUXLEYD_IMAGE_TEST_TIMEOUT_S:-3600}
for tool in qemu-system-aarch64 mcopy mdir sfdisk; do
    command -v "$tool" >/dev/null || { echo "image-test: $tool missing: make image-deps" >&2; exit 1; }
done
mkdir -p "$work"
say() { printf '[%s] image-test: %s\n' "$(date -u +%H:%M:%S)" "$*"; }

test_img=$work/test.img
say "copying $(basename "$img") (sparse) and growing the copy by 1 GiB"
cp --sparse=always "$img" "$test_img"
truncate -s +1G "$test_img"
fat_start=$(sfdisk --dump "$test_img" | sed -n 's/.*start= *\([0-9]*\),.*type=c.*/\1/p')
fat="$test_img@@$(( fat_start * 512 ))"

kernel=$(mdir -b -i "$fat" :: | sed -n 's|^::/||; /^vmlinuz-/p' | sort -V | tail -1)
initrd=$(mdir -b -i "$fat" :: | sed -n 's|^::/||; /^initrd.img-/p' | sort -V | tail -1)
[ -n "$kernel" ] && [ -n "$initrd" ] || { echo "image-test: no kernel/initrd on the firmware partition" >&2; exit 1; }
mcopy -n -i "$fat" "::$kernel" "$work/vmlinuz"
mcopy -n -i "$fat" "::$initrd" "$work/initrd.img"
say "kernel $kernel, initrd $initrd (from the image's firmware partition)"

# The first-boot file, as a user would write it; the key is a test value.
key="sk-imagetest-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
cat > "$work/huxleyd-setup.toml" <<SETUP
# Written by image/boot-test.sh
[device]
hostname = "huxley-test"
board = "gpio-basic"
timezone = "Europe/Madrid"

[provider]
kind = "openai"
api_key = "$key"
SETUP
sed -e "s/@KEY_SHA256@/$(printf '%s\n' "$key" | sha256sum | cut -d' ' -f1)/" \
    -e "s/@KEY_MARK@/sk-imagetest-/" "$here/selftest.sh" > "$work/huxleyd-selftest.sh"
mcopy -o -i "$fat" "$work/huxleyd-setup.toml" ::huxleyd-setup.toml
mcopy -o -i "$fat" "$work/huxleyd-selftest.sh" ::huxleyd-selftest.sh
rm -f "$work/huxleyd-setup.toml"

cmdline="root=LABEL=RASPIROOT rw rootwait console=ttyAMA0 net.ifnames=0"
cmdline="$cmdline systemd.run=/boot/firmware/huxleyd-selftest.sh"
cmdline="$cmdline systemd.run_success_action=poweroff systemd.run_failure_action=poweroff"
say "booting (console log: $log)"
start=$(date +%s)
# restrict=on: the guest's user-mode network reaches nothing outside it.
set +e
timeout "$limit_s" qemu-system-aarch64 -M virt -cpu cortex-a72 -smp 2 -m 1024 \
    -nographic -no-reboot -serial mon:stdio \
    -kernel "$work/vmlinuz" -initrd "$work/initrd.img" -append "$cmdline" \
    -drive "file=$test_img,format=raw,if=virtio" \
    -netdev user,id=net0,restrict=on -device virtio-net-pci,netdev=net0,romfile= \
    </dev/null >"$log" 2>&1
rc=$?
set -e
elapsed=$(( $(date +%s) - start ))
tr -d '\r' < "$log" | grep -a 'SELFTEST' || true
say "qemu exited $rc after ${elapsed} s (wall clock, emulated)"
if tr -d '\r' < "$log" | grep -aq '^SELFTEST PASS'; then
    say "PASS"
    rm -f "$test_img"
    exit 0
fi
say "FAILED: see $log"
exit 1
