#!/bin/sh
# Two builds of one commit, compared file by file (docs/image.md,
# "Reproducible builds"):
#
#   image/compare-builds.sh A/huxleyd-<v>-arm64.files B/huxleyd-<v>-arm64.files
#
# Prints each path whose line differs (type, mode, owner, mtime, size,
# sha256, link target), one `-`/`+` pair per path, and a count. Exit 0 when
# the two file lists are the same, 1 when they differ.
set -eu
[ $# -eq 2 ] || { echo "usage: image/compare-builds.sh A.files B.files" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -v '^#' "$1" > "$tmp/a"
grep -v '^#' "$2" > "$tmp/b"
if cmp -s "$tmp/a" "$tmp/b"; then
    echo "compare-builds: the same $(wc -l < "$tmp/a") entries"
    exit 0
fi
diff "$tmp/a" "$tmp/b" | grep '^[<>]' | sed 's/^</-/; s/^>/+/' | sort -t "$(printf '\t')" -k1,1 -s
echo "compare-builds: $(diff "$tmp/a" "$tmp/b" | grep -c '^[<>]') differing lines (of $(wc -l < "$tmp/a") and $(wc -l < "$tmp/b") entries)"
exit 1
