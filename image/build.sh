#!/bin/bash
# `make image`: huxleyd-<version>-arm64.img (+ .xz, + a manifest) from
# Debian's archive and PyPI, without loop devices or mounts of the image.
#
#   image/build.sh [OUT_DIR]        (root; OUT_DIR defaults to build/image)
#
# Stages, each cached under $HUXLEYD_IMAGE_CACHE (/var/cache/huxleyd-image):
#   1. base.sh      Debian arm64 root (mmdebstrap), keyed by its package list
#                   and its own text; kept as a directory and copied
#   2. wheels.sh    aarch64 wheels from PyPI (the two sdists compiled once)
#   3. customize.sh huxleyd installed in a copy of the root (chroot)
#   4. here         manifest, FAT + ext4 file systems from directories,
#                   partition table with sfdisk, all assembled with dd
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
out=${1:-$src/build/image}
cache=${HUXLEYD_IMAGE_CACHE:-/var/cache/huxleyd-image}
fat_mib=${HUXLEYD_IMAGE_FAT_MIB:-256}
# Free room left in the root file system; first boot grows it to the card.
root_slack_mib=${HUXLEYD_IMAGE_ROOT_SLACK_MIB:-400}
# Every timestamp and file-system identity comes from the source commit.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s)}

version=$(python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' "$src/pyproject.toml")
name=huxleyd-$version-arm64
say() { printf '[%s] image: %s\n' "$(date -u +%H:%M:%S)" "$*"; }
start=$(date +%s)

[ "$(id -u)" -eq 0 ] || { echo "image: must run as root (chroot, device nodes, file ownership)" >&2; exit 1; }
for tool in mmdebstrap mkfs.vfat mcopy mkfs.ext4 sfdisk xz; do
    command -v "$tool" >/dev/null || { echo "image: $tool missing: make image-deps installs the build tools" >&2; exit 1; }
done

# The source as git sees it (tracked files plus new, unignored ones: no
# .venv, no build output, no local keys) and the commit the manifest names,
# both taken now, with SOURCE_DATE_EPOCH above: the tree may move on while
# the base and the wheels are made (a manifest once named a commit made
# during its build, not the one built).
mkdir -p "$out"
src_tar=$out/.source.tar
(cd "$src" && git ls-files -z -c -o --exclude-standard \
    | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) > "$src_tar"
commit=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
[ -z "$(git -C "$src" status --porcelain 2>/dev/null)" ] || commit="$commit (with local changes)"

# -- 1. the Debian base -------------------------------------------------------------
key=$(cat "$here/base.sh" "$here/packages.txt" | sha256sum | cut -c1-16)
base=$cache/base/base-$key
if [ -d "$base" ]; then
    say "base system: cached $(basename "$base")"
else
    say "base system: mmdebstrap (emulated; about an hour on 2 loaded cores)"
    mkdir -p "$cache/base"
    "$here/base.sh" "$base" "$cache"
fi

# -- 2. wheels ------------------------------------------------------------------------
say "wheels: aarch64 from PyPI into $cache/wheels"
"$here/wheels.sh" "$cache/wheels" >/dev/null

# -- 3. huxleyd in the root -------------------------------------------------------------
work=$out/work
root=$work/root
mkdir -p "$out"
# Never delete through a mount (a bind of /dev or of the wheel cache).
if grep -q " $work/" /proc/mounts; then
    echo "image: something is still mounted under $work (another build?): umount it first" >&2
    exit 1
fi
rm -rf "$work"
mkdir -p "$root"
say "copying the base into $root"
cp -a "$base/." "$root/"

mounts=()
cleanup() {
    local i
    for ((i=${#mounts[@]}-1; i>=0; i--)); do
        umount -R "${mounts[$i]}" 2>/dev/null || umount -lR "${mounts[$i]}" 2>/dev/null || true
    done
}
trap cleanup EXIT
bind() { mkdir -p "${@: -1}"; mount "$@"; mounts+=("${@: -1}"); }
bind -t proc proc "$root/proc"
bind -t sysfs sysfs "$root/sys"
bind --rbind /dev "$root/dev"
bind -t tmpfs tmpfs "$root/run"
bind -t tmpfs tmpfs "$root/tmp"
# The source, as taken at the start.
mkdir -p "$root/mnt/src"
tar -xf "$src_tar" -C "$root/mnt/src"
rm -f "$src_tar"
bind --bind "$cache/wheels" "$root/mnt/wheels"
# apt inside (customize tops up packages.txt additions) reuses the .deb cache
# and the host's name servers (the root's resolv.conf points into /run).
bind --bind "$cache/apt" "$root/var/cache/apt/archives"
mkdir -p "$root/run/systemd/resolve"
cp /etc/resolv.conf "$root/run/systemd/resolve/stub-resolv.conf"
cp /etc/resolv.conf "$root/run/systemd/resolve/resolv.conf"

say "customize (emulated chroot): install huxleyd, appliance files, firmware partition"
# A clean environment: nothing of this machine's (PIP_*, proxies, locale)
# may change what goes into the image.
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb \
    SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" chroot "$root" /mnt/src/image/customize.sh
cleanup
mounts=()
trap - EXIT
if grep -q " $root/" /proc/mounts; then
    echo "image: could not unmount everything under $root" >&2
    exit 1
fi
rm -rf "$root/mnt/src"
rmdir "$root/mnt/wheels"

# Byte-compile the venv (pip ran with --no-compile): same CPython minor
# version here and in the image gives the same .pyc; the recorded source
# paths are the image's (-s/-p). Otherwise, slowly, inside.
# The venv's real path (the release's; /opt/huxleyd/venv is a link to it):
# the .pyc files record it.
venv_real=$(chroot "$root" readlink -f /opt/huxleyd/venv)
venv_lib=$(cd "$root$venv_real/lib" && echo python3.*)
if [ "$(python3 -c 'import sys; print("python%d.%d" % sys.version_info[:2])')" = "$venv_lib" ]; then
    say "byte-compiling the venv ($venv_lib) natively"
    python3 -m compileall -q -j 0 -s "$root" -p / "$root$venv_real/lib/$venv_lib/site-packages" >/dev/null
else
    say "byte-compiling the venv inside the root (host Python differs from $venv_lib)"
    chroot "$root" "$venv_real/bin/python" -m compileall -q "$venv_real/lib" >/dev/null
fi

# -- 4. manifest ------------------------------------------------------------------------
manifest=$out/$name.manifest
{
    echo "# $name: what is inside (image/build.sh). Source commit: $commit"
    echo "# base: $(basename "$base"); SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH ($(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ))"
    echo "# every file of the root: $name.files (compare two builds: image/compare-builds.sh)"
    echo "# Debian packages (dpkg-query)"
    chroot "$root" dpkg-query -W -f '${Package}\t${Version}\t${Architecture}\n' | sort
    echo "# Python packages in /opt/huxleyd/venv (pip freeze)"
    chroot "$root" /opt/huxleyd/venv/bin/python -m pip freeze --all 2>/dev/null | sort
} > "$manifest"
say "manifest: $manifest ($(grep -vc '^#' "$manifest") packages)"

# -- 4b. timestamps from the commit, the clock file, the file list ----------------------
# Nothing in the root is newer than the commit (files written by this build
# get its time; the packages' own older times stay) and every directory has
# its time; the clock file that systemd-timesyncd starts a Pi's first boot
# from says the commit's time, not the time its package was built.
clock=$root/var/lib/systemd/timesync/clock
if [ ! -e "$clock" ]; then
    mkdir -p "$(dirname "$clock")"
    : > "$clock"
    # timesyncd's StateDirectory=: systemd gives it to its user at first start.
    chroot "$root" chown -R systemd-timesync:systemd-timesync /var/lib/systemd/timesync 2>/dev/null || true
fi
# /usr/lib/clock-epoch: systemd (PID 1) sets a clock that is behind it
# forward to its time at the very start of boot, before timesyncd runs
# (whose own floor is otherwise the date its package was built).
: > "$root/usr/lib/clock-epoch"
find "$root" -xdev -newermt "@$SOURCE_DATE_EPOCH" -print0 | xargs -0 -r touch -h -d "@$SOURCE_DATE_EPOCH"
# Every directory at the commit's time, whatever its age: which directories a
# build writes into depends on its caches, not on the commit (the build that
# compiles the sdists has pip make /root/.cache, which customize.sh removes:
# /root had the commit's time in that build and the base's in the next).
find "$root" -xdev -type d -print0 | xargs -0 -r touch -d "@$SOURCE_DATE_EPOCH"
touch -d "@$SOURCE_DATE_EPOCH" "$clock" "$root/usr/lib/clock-epoch"
files=$out/$name.files
python3 "$here/files-manifest.py" "$root" > "$files"
say "file list: $files ($(grep -vc '^#' "$files") entries)"

# -- 5. file systems from directories, then the disk -----------------------------------
fat=$work/firmware.vfat
ext=$work/root.ext4
rm -f "$fat" "$ext"
# --invariant: no build-time clock or random value in the boot sector and
# the label's entry; mcopy honours SOURCE_DATE_EPOCH, -m keeps the files'.
mkfs.vfat --invariant -F 32 -n RASPIFIRM -i 4855584c -C "$fat" $((fat_mib * 1024)) >/dev/null
# No hidden files on FAT: mcopy -s copies the tree as it is.
mcopy -s -p -m -i "$fat" "$root/boot/firmware/"* ::
mv "$root/boot/firmware" "$work/firmware-tree"
mkdir -m 0755 "$root/boot/firmware"
touch -d "@$SOURCE_DATE_EPOCH" "$root/boot/firmware" "$root/boot"

used_mib=$(du -sm --apparent-size "$root" | cut -f1)
root_mib=$(( (used_mib * 115 / 100) + root_slack_mib ))
# E2FSPROGS_FAKE_TIME: the superblock's and new inodes' times are the
# commit's, not the build's (libext2fs reads it; e2fsprogs 1.47).
E2FSPROGS_FAKE_TIME=$SOURCE_DATE_EPOCH mkfs.ext4 -q -L RASPIROOT -E "root_owner=0:0,hash_seed=48555845-0000-4000-8000-000000000001" \
    -U 48555845-0000-4000-8000-000000000002 -d "$root" "$ext" "${root_mib}M"
mv "$work/firmware-tree" "$root/boot/firmware"
touch -d "@$SOURCE_DATE_EPOCH" "$root/boot"

img=$out/$name.img
fat_start=8192                               # 4 MiB, erase-block aligned
root_start=$(( fat_start + fat_mib * 2048 ))
total=$(( root_start + root_mib * 2048 ))
rm -f "$img" "$img.xz"
truncate -s $(( total * 512 )) "$img"
sfdisk --quiet "$img" <<SFDISK
label: dos
label-id: 0x48555845
unit: sectors
start=$fat_start, size=$(( fat_mib * 2048 )), type=c, bootable
start=$root_start, size=$(( root_mib * 2048 )), type=83
SFDISK
dd if="$fat" of="$img" bs=1M seek=$(( fat_start / 2048 )) conv=notrunc,sparse status=none
dd if="$ext" of="$img" bs=1M seek=$(( root_start / 2048 )) conv=notrunc,sparse status=none
rm -f "$fat" "$ext"
say "image: $img ($(du -h --apparent-size "$img" | cut -f1), $(du -h "$img" | cut -f1) on disk)"

say "compressing"
# -3: within a few percent of -6 on this content, in a fraction of the time.
xz -T0 -3 -k -f "$img"
(cd "$out" && sha256sum "$name.img" "$name.img.xz" > "$name.sha256")
say "done in $(( ($(date +%s) - start) / 60 )) min $(( ($(date +%s) - start) % 60 )) s: $img.xz ($(du -h "$img.xz" | cut -f1))"
