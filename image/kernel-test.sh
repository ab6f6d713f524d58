#!/bin/bash
# `make image-test-kernel`: boot the built image under qemu-system-aarch64
# -M virt and run a push-to-talk turn through the kernel's own devices: the
# button and the LEDs on lines of a GPIO character device (gpio-sim), the
# speaker and the mic on a kernel ALSA card (snd-aloop), gpiozero on its real
# pin factory (lgpio). docs/image.md says what it proves and what it cannot.
#
#   image/kernel-test.sh IMAGE [LOG]
#
# On a copy of the image (the release stays untouched):
# - gpio-sim.ko, built for the image's kernel by image/gpio-sim-module.sh
#   (Debian's arm64 kernel has no gpio-sim);
# - a device tree: QEMU's own for this machine, with two changes. The PL061
#   GPIO controller (and the power key wired to it) is removed, so the
#   simulated chip is gpiochip0 as the Pi's is; and /system/linux,revision
#   says "Pi 4 B" (a03111), where gpiozero's pin factories read the model
#   (without it they refuse: "unable to locate Pi revision");
# - on the firmware partition, in huxleyd-kernel-test/: the module, the
#   board profile, asound.conf and simulator script (image/kernel-test/),
#   a spoken question and a spoken "stop" made here with espeak-ng, a silent earcon, and the
#   check scripts; a unit runs image/kernel-test/selftest.sh once the
#   default target is up, which powers the machine off when done.
set -euo pipefail

img=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(cd "$(dirname "$img")" && pwd)/test-kernel
log=${2:-$work/console.log}
limit_s=${HUXLEYD_IMAGE_TEST_TIMEOUT_S:-3600}
for tool in qemu-system-aarch64 mcopy mdir mmd sfdisk debugfs fdtget fdtput espeak-ng python3 aarch64-linux-gnu-gcc; do
    command -v "$tool" >/dev/null || { echo "image-test-kernel: $tool missing: make image-deps" >&2; exit 1; }
done
mkdir -p "$work"
say() { printf '[%s] image-test-kernel: %s\n' "$(date -u +%H:%M:%S)" "$*"; }
# shellcheck source=image/vm.sh
. "$here/vm.sh"

vm_prepare "$img" "$work"

say "building gpio-sim.ko for $vm_krel"
# A module of the image's kernel to check the build against (struct module's size).
debugfs -R "dump /lib/modules/$vm_krel/kernel/sound/drivers/snd-aloop.ko.xz $work/snd-aloop.ko.xz" \
    "$test_img?offset=$(( vm_root_start * 512 ))" 2>/dev/null
"$here/gpio-sim-module.sh" "$vm_krel" "$work/kmod" "$work/snd-aloop.ko.xz"

# The machine: the same arguments for the device tree dump and the boot.
rm -f "$work/virt.dtb"
qemu-system-aarch64 "${vm_machine[@]}" -machine dumpdtb="$work/virt.dtb" -nographic -nic none >/dev/null 2>&1 \
    || [ -s "$work/virt.dtb" ] || { echo "image-test-kernel: qemu could not dump its device tree" >&2; exit 1; }
pl061=$(fdtget -l "$work/virt.dtb" / | grep '^pl061@' || true)
[ -n "$pl061" ] || { echo "image-test-kernel: no pl061 node in QEMU's device tree" >&2; exit 1; }
fdtput -r "$work/virt.dtb" /gpio-keys "/$pl061"
fdtput -c "$work/virt.dtb" /system
fdtput -t x "$work/virt.dtb" /system linux,revision a03111

files=$work/files
rm -rf "$files" && mkdir -p "$files"
cp "$work/kmod/gpio-sim.ko" "$here"/kernel-test/{kernel-test.toml,kernel-test.asound.conf,scenario.toml,turn.py} "$files/"
# What setup.py needs to build the C audio extensions in the VM, should the
# image lack them (selftest.sh says which).
# shellcheck disable=SC2046  # one word per file
(cd "$here/.." && tar -cf "$files/setup-src.tar" pyproject.toml setup.py README.md LICENSE \
    $(git ls-files 'huxleyd/audio/*.c' 'huxleyd/audio/*.h'))
espeak-ng -w "$files/question.wav" "Tell me a long story."
# Said while the second press is held (a held press with nothing said is
# the silent-hold mute, not a barge-in).
espeak-ng -w "$files/stop.wav" "Stop."
python3 - "$files/silent.wav" <<'PY'
import sys, wave
with wave.open(sys.argv[1], "wb") as w:  # the earcons' format: PCM16 24 kHz mono
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(24000); w.writeframes(bytes(2 * 2400))
PY
# The host's time for the loop the VM times too: how much slower it runs.
host_loop_s=$(python3 -c 'import time, timeit; print(f"{min(timeit.repeat(lambda: sum(i * i for i in range(1_000_000)), number=1, repeat=5)):.3f}")')
sed "s/@HOST_LOOP_S@/$host_loop_s/" "$here/kernel-test/selftest.sh" > "$files/selftest.sh"
mmd -i "$vm_fat" ::huxleyd-kernel-test
mcopy -o -i "$vm_fat" "$files"/* ::huxleyd-kernel-test/
vm_add_unit "$test_img" "$work" huxleyd-kernel-test /boot/firmware/huxleyd-kernel-test/selftest.sh

cmdline="root=LABEL=RASPIROOT rw rootwait console=ttyAMA0 net.ifnames=0"
vm_boot "$test_img" "$work" "$log" "$limit_s" 10 "$cmdline" -dtb "$work/virt.dtb"
