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
# shellcheck source=image/arm64-apt.sh
. "$here/arm64-apt.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
arm64_apt "$tmp" || status=$?
if [ "$status" -ne 0 ]; then
    echo "check-packages: skipped" >&2
    exit "$status"
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
