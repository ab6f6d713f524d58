#!/bin/bash
# `make bundle`: the file `huxleyctl update` installs on a device built from
# this image: the source as git sees it, the image's wheel cache (aarch64,
# CPython 3.13, the sdist-only packages already built by `make image`), and
# huxleyd-update.toml with the version.
#
#   image/bundle.sh OUT.tar [VERSION]     (VERSION defaults to pyproject's)
set -euo pipefail

out=$1
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
cache=${HUXLEYD_IMAGE_CACHE:-/var/cache/huxleyd-image}
version=${2:-$(python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' "$src/pyproject.toml")}
ls "$cache"/wheels/*aarch64*.whl >/dev/null 2>&1 \
    || { echo "bundle: no wheels in $cache/wheels: run make image first" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/src" "$stage/wheels"
(cd "$src" && git ls-files -z -c -o --exclude-standard \
    | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$stage/src"
cp "$cache"/wheels/*.whl "$stage/wheels/"
printf 'version = "%s"\n' "$version" > "$stage/huxleyd-update.toml"
mkdir -p "$(dirname "$out")"
tar -C "$stage" -cf "$out" huxleyd-update.toml src wheels
echo "bundle: $out (huxleyd $version, $(du -h "$out" | cut -f1)): copy it to the device, then huxleyctl update FILE"
