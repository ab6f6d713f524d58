#!/bin/sh
# The recipe's cheap check (CI, `make image-check`): every name in
# image/packages.txt resolves in Debian's arm64 archive and the whole set is
# installable together (apt-get --simulate against an empty arm64 system in
# a temporary directory; nothing on this machine changes).
#
# Exit 0: resolved; 1: a package is missing or conflicts (apt says which);
# 77: the archive cannot be reached (offline): not a verdict on the recipe.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
suite=${HUXLEYD_IMAGE_SUITE:-trixie}
mirror=${HUXLEYD_IMAGE_MIRROR:-http://deb.debian.org/debian}
security=${HUXLEYD_IMAGE_SECURITY:-http://deb.debian.org/debian-security}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

command -v apt-get >/dev/null || { echo "check-packages: no apt-get here" >&2; exit 77; }
[ -r "$keyring" ] || { echo "check-packages: $keyring missing (debian-archive-keyring)" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/etc/apt/apt.conf.d" "$tmp/etc/apt/preferences.d" "$tmp/etc/apt/sources.list.d" \
    "$tmp/var/lib/apt/lists/partial" "$tmp/var/cache/apt/archives/partial" "$tmp/var/lib/dpkg" "$tmp/log"
: > "$tmp/var/lib/dpkg/status"
for s in "$mirror $suite" "$mirror $suite-updates" "$security $suite-security"; do
    echo "deb [arch=arm64 signed-by=$keyring] $s main non-free-firmware"
done > "$tmp/etc/apt/sources.list"
cat > "$tmp/apt.conf" <<CONF
Dir "$tmp/";
Dir::State::status "$tmp/var/lib/dpkg/status";
Dir::Log "$tmp/log";
APT::Architecture "arm64";
APT::Architectures { "arm64"; };
APT::Install-Recommends "false";
Acquire::Languages "none";
Acquire::Retries "2";
Debug::NoLocking "true";
CONF
export APT_CONFIG="$tmp/apt.conf"
if ! apt-get -qq update >"$tmp/update.log" 2>&1; then
    echo "check-packages: the archive cannot be reached ($mirror): skipped" >&2
    sed 's/^/  /' "$tmp/update.log" >&2
    exit 77
fi
packages=$(grep -v '^#' "$here/packages.txt" | grep .)
# shellcheck disable=SC2086  # one word per package on purpose
if ! apt-get --simulate install $packages >"$tmp/sim.log" 2>&1; then
    echo "check-packages: image/packages.txt does not resolve for arm64 $suite:" >&2
    sed 's/^/  /' "$tmp/sim.log" >&2
    exit 1
fi
count=$(grep -c '^Inst ' "$tmp/sim.log")
echo "check-packages: $(echo "$packages" | wc -l) packages resolve for arm64 $suite ($count with dependencies)"
