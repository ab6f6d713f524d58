#!/bin/bash
# Sourced by the boot tests (image/boot-test.sh, kernel-test.sh, nortc-test.sh): a test copy of the
# image, its kernel and initrd, a unit written into its root file system, the boot.
# Nothing here mounts anything: mtools for the FAT partition, debugfs for
# the ext4 one.
# shellcheck shell=bash

# vm_copy IMAGE COPY: a sparse copy grown by 1 GiB (the first boot grows the
# root partition into it, as on a larger card); sets vm_fat (mtools' image
# spec of the firmware partition) and vm_root_start/vm_root_size (sectors).
vm_copy() {
    cp --sparse=always "$1" "$2"
    truncate -s +1G "$2"
    local dump start
    dump=$(sfdisk --dump "$2")
    start=$(echo "$dump" | sed -n 's/.*start= *\([0-9]*\),.*type=c.*/\1/p')
    vm_fat="$2@@$(( start * 512 ))"
    vm_root_start=$(echo "$dump" | sed -n 's/.*start= *\([0-9]*\),.*type=83.*/\1/p')
    vm_root_size=$(echo "$dump" | sed -n 's/.*size= *\([0-9]*\),.*type=83.*/\1/p')
}

# vm_prepare IMAGE WORKDIR: the test copy WORKDIR/test.img of IMAGE (vm_copy) and
# its kernel and initrd in WORKDIR (vm_kernel); sets test_img. `say` is the caller's.
vm_prepare() {
    test_img=$2/test.img
    say "copying $(basename "$1") (sparse) and growing the copy by 1 GiB"
    vm_copy "$1" "$test_img"
    vm_kernel "$2"
    say "kernel $vm_krel (from the image's firmware partition)"
}

# vm_kernel DIR: the newest vmlinuz-*/initrd.img-* of the firmware partition,
# copied to DIR/vmlinuz and DIR/initrd.img; sets vm_krel (its release).
vm_kernel() {
    local kernel initrd
    kernel=$(mdir -b -i "$vm_fat" :: | sed -n 's|^::/||; /^vmlinuz-/p' | sort -V | tail -1)
    initrd=$(mdir -b -i "$vm_fat" :: | sed -n 's|^::/||; /^initrd.img-/p' | sort -V | tail -1)
    [ -n "$kernel" ] && [ -n "$initrd" ] || { echo "vm: no kernel/initrd on the firmware partition" >&2; return 1; }
    mcopy -n -i "$vm_fat" "::$kernel" "$1/vmlinuz"
    mcopy -n -i "$vm_fat" "::$initrd" "$1/initrd.img"
    vm_krel=${kernel#vmlinuz-}
}

# vm_add_unit COPY WORKDIR NAME SCRIPT [FILE:PATH...]: /etc/systemd/system/NAME.service,
# wanted by multi-user.target, that runs `sh SCRIPT` (a path in the VM); and
# each FILE written to PATH in the VM (its directory must exist).
vm_add_unit() {
    local img=$1 work=$2 name=$3 script=$4 extra="" pair
    shift 4
    for pair in "$@"; do
        extra="$extra
cd $(dirname "${pair#*:}")
write ${pair%%:*} $(basename "${pair#*:}")"
    done
    printf '[Unit]\nDescription=huxleyd image test (%s)\n[Service]\nType=simple\nExecStart=/bin/sh %s\n[Install]\nWantedBy=multi-user.target\n' \
        "$name" "$script" > "$work/$name.service"
    dd if="$img" of="$work/root.ext4" bs=512 skip="$vm_root_start" count="$vm_root_size" status=none
    debugfs -w "$work/root.ext4" >/dev/null 2>"$work/debugfs.log" <<DEBUGFS
cd /etc/systemd/system
write $work/$name.service $name.service
cd /etc/systemd/system/multi-user.target.wants
symlink $name.service /etc/systemd/system/$name.service$extra
DEBUGFS
    debugfs -R "stat /etc/systemd/system/multi-user.target.wants/$name.service" "$work/root.ext4" 2>/dev/null \
        | grep -q 'Type: symlink' || { echo "vm: could not add $name.service:" >&2; cat "$work/debugfs.log" >&2; return 1; }
    dd if="$work/root.ext4" of="$img" bs=512 seek="$vm_root_start" conv=notrunc,sparse status=none
    rm -f "$work/root.ext4"
}

# vm_root_debugfs COPY WORKDIR: debugfs -w on the copy's root file system,
# its commands on stdin (no mount), written back into the copy.
vm_root_debugfs() {
    local img=$1 work=$2
    dd if="$img" of="$work/root.ext4" bs=512 skip="$vm_root_start" count="$vm_root_size" status=none
    debugfs -w "$work/root.ext4" >/dev/null 2>"$work/debugfs.log" || { cat "$work/debugfs.log" >&2; return 1; }
    dd if="$work/root.ext4" of="$img" bs=512 seek="$vm_root_start" conv=notrunc,sparse status=none
    rm -f "$work/root.ext4"
}

# The emulated machine of every boot test (a device tree dumped for it must
# come from the same arguments).
vm_machine=(-M virt -cpu cortex-a72 -smp 2 -m 1024)

# vm_command COPY WORKDIR CMDLINE [QEMU ARGS...]: sets vm_cmd, the command that
# boots the test copy (kernel and initrd from vm_kernel in WORKDIR), its
# console on stdout. restrict=on: the guest's user-mode network reaches
# nothing outside it.
vm_command() {
    local img=$1 work=$2 cmdline=$3
    shift 3
    vm_cmd=(qemu-system-aarch64 "${vm_machine[@]}" "$@"
        -nographic -no-reboot -serial mon:stdio
        -kernel "$work/vmlinuz" -initrd "$work/initrd.img" -append "$cmdline"
        -drive "file=$img,format=raw,if=virtio"
        -netdev user,id=net0,restrict=on -device virtio-net-pci,netdev=net0,romfile=)
}

# vm_boot COPY WORKDIR LOG LIMIT_S NICE CMDLINE [QEMU ARGS...]: boot the test copy
# until it powers off or LIMIT_S passes, the console in LOG, at the niceness
# NICE (the machine is shared); then print its SELFTEST lines and exit: 0
# (and the copy removed) when the console says `SELFTEST PASS`, 1 otherwise.
# `say` is the calling test's.
vm_boot() {
    local img=$1 work=$2 log=$3 limit_s=$4 niceness=$5 cmdline=$6 rc elapsed start
    shift 6
    vm_command "$img" "$work" "$cmdline" "$@"
    say "booting (console log: $log)"
    start=$(date +%s)
    set +e
    nice -n "$niceness" timeout "$limit_s" "${vm_cmd[@]}" </dev/null >"$log" 2>&1
    rc=$?
    set -e
    elapsed=$(( $(date +%s) - start ))
    tr -d '\r' < "$log" | grep -a 'SELFTEST' || true
    say "qemu exited $rc after ${elapsed} s (wall clock, emulated)"
    if tr -d '\r' < "$log" | grep -aq '^SELFTEST PASS'; then
        say "PASS"
        rm -f "$img"
        exit 0
    fi
    say "FAILED: see $log"
    exit 1
}

# vm_start COPY WORKDIR LOG NICE CMDLINE [QEMU ARGS...]: boot the test copy in
# the background, the console in LOG; sets vm_pid, QEMU's own process (nice
# execs it), which a power-cut test kills with SIGKILL: the guest's page
# cache goes with it, what it wrote to its disk stays (as on a card).
vm_start() {
    local img=$1 work=$2 log=$3 niceness=$4 cmdline=$5
    shift 5
    vm_command "$img" "$work" "$cmdline" "$@"
    say "booting in the background (console log: $log)"
    nice -n "$niceness" "${vm_cmd[@]}" </dev/null >"$log" 2>&1 &
    vm_pid=$!
}

# vm_daemon_src OUT.tar: this checkout's daemon and SDK, with setup.py and what
# it reads, for image/overlay-daemon.sh in the VM (the tests that lay the code
# under review over an older image's venv, C extensions built there).
vm_daemon_src() {
    (cd "$(dirname "${BASH_SOURCE[0]}")/.." && git ls-files -z huxleyd sdk/src/huxley_sdk \
        setup.py pyproject.toml README.md LICENSE | tar --null -T - -cf "$1")
}
