#!/bin/sh
# Remove what scripts/install.sh put in place: scripts/uninstall.sh DESTDIR PREFIX
#
# Kept, because they are the admin's or the user's: /etc/huxleyd (config and
# the API key), /var/lib/huxleyd (timers, bookmarks, the database),
# /var/lib/huxleyd-skills (the installed skills), /etc/asound.conf, and the
# huxley user. The last lines say how to remove them.
set -eu

DESTDIR=${1:-}
PREFIX=${2:-/opt/huxleyd}

case "$PREFIX" in
    /?*) ;;
    *) echo "uninstall: PREFIX must be an absolute path other than /, got '$PREFIX'" >&2; exit 2 ;;
esac

say() { printf 'uninstall: %s\n' "$*"; }

UNITS="huxleyd.service huxleyd-skillhost.socket huxleyd-skillhost@.service"

if [ -z "$DESTDIR" ] && [ -d /run/systemd/system ]; then
    systemctl disable --now huxleyd huxleyd-skillhost.socket 2>/dev/null || true
fi
# What enabling made (systemctl enable, on a staged root too): the
# .wants/ links, and in a release install the links systemctl may have
# written to one release's unit file.
etc="$DESTDIR/etc/systemd/system"
for unit in $UNITS; do
    for link in "$etc"/*.wants/"$unit" "$etc"/*.requires/"$unit"; do
        if [ -L "$link" ]; then rm -f "$link"; fi
    done
    if [ -L "$etc/$unit" ]; then
        case "$(readlink "$etc/$unit")" in "$PREFIX"/*) rm -f "$etc/$unit" ;; esac
    fi
done

rm -rf "$DESTDIR$PREFIX/venv" "$DESTDIR$PREFIX/share/hw" "$DESTDIR$PREFIX/share/sounds"
# The release layout (HUXLEYD_RELEASE, huxleyctl update): every release, and
# the links through current (venv was one: rm -rf removed the link alone).
if [ -L "$DESTDIR$PREFIX/current" ]; then
    rm -f "$DESTDIR$PREFIX/share" "$DESTDIR$PREFIX/current"
    rm -rf "$DESTDIR$PREFIX/releases"
fi
rmdir "$DESTDIR$PREFIX/share" "$DESTDIR$PREFIX" 2>/dev/null || true
# The units: files, or in a release install links into $PREFIX/share/systemd.
for unit in $UNITS; do rm -f "$DESTDIR/lib/systemd/system/$unit"; done
rm -f "$DESTDIR/usr/lib/sysusers.d/huxleyd.conf" \
    "$DESTDIR/usr/lib/tmpfiles.d/huxleyd.conf" \
    "$DESTDIR/usr/lib/udev/rules.d/60-huxleyd.rules"
link="$DESTDIR/usr/local/bin/huxleyctl"
if [ -L "$link" ] && [ "$(readlink "$link")" = "$PREFIX/venv/bin/huxleyctl" ]; then
    rm -f "$link"
fi
say "removed $PREFIX, the unit, sysusers, tmpfiles and udev entries"

if [ -z "$DESTDIR" ] && [ -d /run/systemd/system ]; then
    systemctl daemon-reload
fi

say "kept $DESTDIR/etc/huxleyd (config, API key) and $DESTDIR/var/lib/huxleyd (state);"
say "kept $DESTDIR/var/lib/huxleyd-skills (the installed skills);"
say "remove them with: rm -r $DESTDIR/etc/huxleyd $DESTDIR/var/lib/huxleyd $DESTDIR/var/lib/huxleyd-skills; userdel huxley"
