#!/bin/bash
# The kernel test's GPIO lines (image/kernel-test.sh): gpio-sim built as an
# out-of-tree module for the image's own Debian kernel, on this machine
# (amd64 is fine: aarch64-linux-gnu-gcc cross-compiles).
#
#   image/gpio-sim-module.sh KERNEL_RELEASE WORKDIR REFERENCE_KO  -> WORKDIR/gpio-sim.ko
#
# REFERENCE_KO is any module of that kernel (.ko or .ko.xz, e.g. snd-aloop
# from the image): the built module's struct module must have its size, or
# the kernel refuses it at insmod ("section size must match the kernel's
# built struct module size"), which is checked here instead of in the VM.
#
# Why a module of our own: Debian's arm64 kernel has neither gpio-sim nor
# gpio-mockup (`# CONFIG_GPIO_SIM is not set`), and gpio-sim needs the
# interrupt simulator (kernel/irq/irq_sim.c, CONFIG_IRQ_SIM), a bool that
# only those drivers select, so it is not in that kernel either and cannot be
# a module of its own. The module therefore links a copy of irq_sim.c with
# gpio-sim.c, both from Debian's linux-source of the same version, with one
# change: irq_sim calls handle_simple_irq(irq_to_desc(irq)), and irq_to_desc
# is not exported to modules; generic_handle_irq(irq) runs the same handler
# (the one irq_sim installs on every line) through an exported function.
#
# The build uses the kernel's own .config and Module.symvers (from the
# linux-headers package), so the module's vermagic and symbol versions match
# the kernel it loads into. Kbuild re-derives the options that depend on the
# build machine's tools: without pahole it drops DEBUG_INFO_BTF_MODULES,
# which changes struct module's size, so pahole (dwarves) is required. It is not signed: the kernel accepts unsigned
# modules (CONFIG_MODULE_SIG_FORCE is not set) and taints itself, which is
# fine for a test VM. Nothing of this goes into the image.
set -euo pipefail

krel=$1
work=$2
reference=$3
here=$(cd "$(dirname "$0")" && pwd)
cross=${CROSS_COMPILE:-aarch64-linux-gnu-}
for tool in "${cross}gcc" make flex bison bc pahole readelf dpkg-deb apt-get; do
    command -v "$tool" >/dev/null || {
        echo "gpio-sim-module: $tool missing (apt-get install gcc-aarch64-linux-gnu make flex bison bc dwarves libelf-dev libssl-dev)" >&2
        exit 1
    }
done
mkdir -p "$work"
work=$(cd "$work" && pwd)
if [ -f "$work/gpio-sim.ko" ] && [ "$(cat "$work/gpio-sim.krel" 2>/dev/null)" = "$krel" ]; then
    echo "gpio-sim-module: $work/gpio-sim.ko is already built for $krel"
    exit 0
fi
rm -f "$work/gpio-sim.ko" "$work/gpio-sim.krel"

# The packages of exactly this kernel: the headers (its .config and
# Module.symvers) and the source of the same Debian version.
# shellcheck source=image/arm64-apt.sh
. "$here/arm64-apt.sh"
arm64_apt "$work/apt"
headers=linux-headers-$krel
version=$(apt-cache show "$headers" | sed -n 's/^Version: //p' | head -1)
[ -n "$version" ] || { echo "gpio-sim-module: the archive has no $headers" >&2; exit 1; }
series=$(echo "$krel" | cut -d. -f1-2)
rm -rf "$work/debs" && mkdir -p "$work/debs"
(cd "$work/debs" && apt-get -qq download "$headers=$version" "linux-source-$series=$version")
echo "gpio-sim-module: $headers and linux-source-$series $version"

rm -rf "$work/hdr" "$work/src" "$work/mod"
mkdir -p "$work/hdr" "$work/src" "$work/mod"
dpkg-deb -x "$work"/debs/linux-headers-*.deb "$work/hdr"
dpkg-deb --fsys-tarfile "$work"/debs/linux-source-*.deb \
    | tar -xO --wildcards './usr/src/linux-source-*.tar.xz' \
    | tar -xJ -C "$work/src" --strip-components=1
src=$work/src
kdir=$work/hdr/usr/src/$headers
cp "$kdir/.config" "$src/.config"
kmake() { nice make -s -C "$src" ARCH=arm64 CROSS_COMPILE="$cross" KERNELRELEASE="$krel" "$@"; }
# olddefconfig only adjusts what depends on this compiler (its version and
# flags it supports, BTF without pahole); what modules link against is kept.
kmake olddefconfig
kmake -j"$(nproc)" modules_prepare
cp "$kdir/Module.symvers" "$src/Module.symvers"

cp "$src/drivers/gpio/gpio-sim.c" "$work/mod/gpio-sim-main.c"
cp "$src/kernel/irq/irq_sim.c" "$work/mod/irq_sim.c"
sed -i 's/handle_simple_irq(irq_to_desc(irqnum));/generic_handle_irq(irqnum);/' "$work/mod/irq_sim.c"
grep -q 'generic_handle_irq(irqnum);' "$work/mod/irq_sim.c" \
    || { echo "gpio-sim-module: irq_sim.c changed upstream: the irq_to_desc call was not found" >&2; exit 1; }
printf 'obj-m := gpio-sim.o\ngpio-sim-y := gpio-sim-main.o irq_sim.o\n' > "$work/mod/Kbuild"
kmake M="$work/mod" modules
magic=$(modinfo -F vermagic "$work/mod/gpio-sim.ko")
case $magic in
    "$krel "*) ;;
    *) echo "gpio-sim-module: vermagic '$magic' does not name $krel" >&2; exit 1 ;;
esac
this_module_size() {  # the size of a module's struct module, from its section table
    readelf -S -W "$1" | awk '$2 == ".gnu.linkonce.this_module" { print $6 }'
}
case $reference in
    *.xz) xz -dc "$reference" > "$work/reference.ko" ;;
    *) cp "$reference" "$work/reference.ko" ;;
esac
ours=$(this_module_size "$work/mod/gpio-sim.ko")
theirs=$(this_module_size "$work/reference.ko")
[ -n "$ours" ] && [ "$ours" = "$theirs" ] || {
    echo "gpio-sim-module: struct module is 0x$ours bytes here, 0x$theirs in the kernel's $(basename "$reference"): a config option differs (see the olddefconfig step)" >&2
    exit 1
}
cp "$work/mod/gpio-sim.ko" "$work/gpio-sim.ko"
echo "$krel" > "$work/gpio-sim.krel"
rm -rf "$work/src" "$work/hdr" "$work/debs"  # 1.5 GB of source; the module is all we keep
echo "gpio-sim-module: built $work/gpio-sim.ko (vermagic $magic, struct module 0x$ours bytes as in $(basename "$reference"))"
