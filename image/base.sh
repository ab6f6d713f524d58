#!/bin/bash
# Stage 1 of `make image`: the Debian arm64 base system, as a directory.
#
#   image/base.sh OUT_DIR CACHE_DIR
#
# mmdebstrap installs image/packages.txt (no Recommends) from Debian's
# archive; the foreign architecture runs through qemu-user-static and
# binfmt_misc. This is the slow stage (every maintainer script runs
# emulated), so build.sh keys its output by the hash of this file and
# packages.txt and reuses it. Downloaded .debs are kept in CACHE_DIR/apt
# so even a rebuild with a changed list downloads only what is new.
set -euo pipefail

out=$1
cache=$2
here=$(cd "$(dirname "$0")" && pwd)
suite=${HUXLEYD_IMAGE_SUITE:-trixie}
mirror=${HUXLEYD_IMAGE_MIRROR:-http://deb.debian.org/debian}
security=${HUXLEYD_IMAGE_SECURITY:-http://deb.debian.org/debian-security}

packages=$(grep -v '^#' "$here/packages.txt" | grep . | paste -sd, -)
mkdir -p "$cache/apt"

# Run an arm64 binary: binfmt_misc must be mounted and qemu registered.
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
    mountpoint -q /proc/sys/fs/binfmt_misc \
        || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
    update-binfmts --enable qemu-aarch64
fi

tmp="$out.partial"
rm -rf "$tmp"
mmdebstrap --architectures=arm64 --variant=apt --mode=root --format=directory \
    --include="$packages" \
    --aptopt='Acquire::Retries "3"' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --skip=download/empty --skip=essential/unlink \
    --setup-hook='mkdir -p "$1"/var/cache/apt/archives' \
    --setup-hook="sync-in $cache/apt /var/cache/apt/archives" \
    --customize-hook="sync-out /var/cache/apt/archives $cache/apt" \
    --customize-hook='rm -f "$1"/var/cache/apt/archives/*.deb' \
    "$suite" "$tmp" \
    "deb $mirror $suite main non-free-firmware" \
    "deb $mirror $suite-updates main non-free-firmware" \
    "deb $security $suite-security main non-free-firmware"
mv "$tmp" "$out"
