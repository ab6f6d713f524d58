#!/bin/bash
# Stage 3 of `make image`, run INSIDE the arm64 root (chroot, emulated):
# huxleyd installed as `make install` would, and the appliance around it.
#
#   chroot ROOT /mnt/src/image/customize.sh
#
# build.sh bind-mounts the source tree at /mnt/src and the wheel cache at
# /mnt/wheels (read-write: the two sdists are built into it once).
set -euo pipefail
export LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive
SRC=/mnt/src
WHEELS=/mnt/wheels
say() { printf 'customize: %s\n' "$*"; }

# -- packages.txt additions since the cached base: installed here ------------------
missing=""
for p in $(grep -v '^#' "$SRC/image/packages.txt" | grep .); do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    say "installing packages added since the base was built:$missing"
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# -- Python: build the sdist-only packages once, into the cache -------------------
need_build=""
have_wheel() {  # any spelling of the project's name (PyAudio-, pyaudio-)
    for whl in "$WHEELS"/*-linux_aarch64.whl; do
        case "$(basename "$whl" | tr 'A-Z' 'a-z')" in "$1"-*) return 0 ;; esac
    done
    return 1
}
have_wheel pyaudio || need_build="$need_build pyaudio"
have_wheel systemd_python || need_build="$need_build systemd-python"
have_wheel lgpio || need_build="$need_build lgpio"
if [ -n "$need_build" ]; then
    say "compiling$need_build under emulation (cached in the wheel directory afterwards)"
    python3 -m venv /tmp/wheelbuild
    # shellcheck disable=SC2086
    # PYPI=1: lgpio's setup.py then compiles its bundled C library into the
    # module (as its PyPI wheels are made) instead of linking a system
    # liblgpio, which Debian does not package.
    PYPI=1 /tmp/wheelbuild/bin/pip wheel --quiet --use-pep517 --no-index --find-links "$WHEELS" \
        --wheel-dir "$WHEELS" --no-deps $need_build
    rm -rf /tmp/wheelbuild
fi

# -- huxleyd, exactly as `make install` installs it -------------------------------------
say "scripts/install.sh with the wheel cache only (--no-index)"
# --no-compile: build.sh byte-compiles the venv natively afterwards (the
# .pyc files are the same on every architecture; emulated, it takes minutes).
# HUXLEYD_RELEASE: the release layout `huxleyctl update` switches as a whole
# (/opt/huxleyd/current -> releases/<version>; docs/image.md, "Updates").
version=$(python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' "$SRC/pyproject.toml")
HUXLEYD_PIP_ARGS="--no-index --find-links $WHEELS --no-compile" PYTHON=python3 \
    HUXLEYD_RELEASE="$version" "$SRC/scripts/install.sh" "" /opt/huxleyd
# What install.sh's activate() does on a running system, done offline:
# the service user and its groups exist before first boot (sysusers runs
# again at every boot), the unit is enabled.
systemd-sysusers
systemctl enable huxleyd.service huxleyd-skillhost.socket
# systemctl wrote the units' resolved paths (releases/<version>/...) into
# /etc/systemd/system: name the fixed links, as huxleyctl update does.
/opt/huxleyd/venv/bin/python -B -c 'from huxleyd.update.units import link_units; from huxleyd.update import Layout; link_units(Layout())'

# -- the appliance: files of image/rootfs, then units ------------------------------------
say "appliance files"
cp -R --no-preserve=ownership "$SRC/image/rootfs/." /
chmod 0755 /usr/lib/huxleyd-image/growroot /etc/kernel/postinst.d/z60-huxleyd-devicetree \
    /etc/initramfs/post-update.d/z60-huxleyd-devicetree
# The board overlays' sources: the kernel hook compiles them after every
# kernel update, against that kernel's device trees.
mkdir -p /usr/lib/huxleyd-image/dt
install -m 0644 "$SRC/docs/image.md" /opt/huxleyd/share/image.md
install -m 0644 "$SRC"/hw/dt/*.dts /usr/lib/huxleyd-image/dt/
echo huxley > /etc/hostname
printf '127.0.0.1\tlocalhost\n127.0.1.1\thuxley\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' > /etc/hosts

systemctl enable systemd-networkd.service systemd-resolved.service systemd-timesyncd.service \
    systemd-time-wait-sync.service huxleyd-growroot.service huxleyd-firstboot.service \
    huxleyd-mdns-echo.service
# Security updates that need a reboot: at night, only when the persona allows it
# and the daemon is idle (huxleyctl reboot-if-idle; docs/image.md, "Updates").
systemctl enable huxleyd-reboot.timer
# wpa_supplicant.service is the D-Bus instance (root, for NetworkManager and
# the like); Wi-Fi here is wpa_supplicant@wlan0, so nothing uses it.
systemctl mask wpa_supplicant.service >/dev/null
# SSH is off until the first-boot file turns it on; no host keys are baked
# into the image (each device makes its own at first start of ssh).
systemctl disable ssh.service ssh.socket 2>/dev/null || true
rm -f /etc/ssh/ssh_host_*
systemctl mask ssh.socket >/dev/null 2>&1 || true
# The machine-id is empty, so systemd treats the first start as a first
# boot; its interactive systemd-firstboot must not wait at a console nobody
# watches: huxleyd-setup.toml is this image's first-boot configuration.
systemctl mask systemd-firstboot.service >/dev/null 2>&1 || true
# Root has no password: the console is not a way in. The first-boot file
# can install an SSH key.
if command -v passwd >/dev/null; then passwd -l root >/dev/null; fi

# -- the firmware partition: kernel, initrd, device trees, config.txt --------------------
say "firmware partition contents (raspi-firmware hooks + our overlays)"
kver=$(basename "$(ls -d /lib/modules/* | sort -V | tail -1)")
# The initrd must carry the virtio drivers for the emulated boot test
# (modules.d/huxleyd-image-virt); rebuilt only if it lacks them, since
# mkinitramfs under emulation takes minutes.
# (grep -c reads to the end: with pipefail, grep -q's early exit would
# fail lsinitramfs with SIGPIPE and force the rebuild.)
virtio=$(lsinitramfs "/boot/initrd.img-$kver" | grep -c '/virtio_blk\.ko' || true)
if [ "${virtio:-0}" = 0 ]; then
    say "initramfs: adding the virtio drivers"
    update-initramfs -u -k "$kver" >/dev/null
fi
for hook in z50-raspi-firmware z60-huxleyd-devicetree; do
    DEB_MAINT_PARAMS=configure "/etc/kernel/postinst.d/$hook" "$kver"
done
ls /boot/firmware /boot/firmware/overlays

# -- leave a clean root: no caches, no machine identity ---------------------------------
rm -rf /var/lib/apt/lists/* /tmp/* /var/tmp/* /root/.cache
: > /etc/machine-id
rm -f /var/lib/dbus/machine-id
