#!/bin/sh
# Install huxleyd: scripts/install.sh DESTDIR PREFIX  (what `make install` runs)
#
#   $PREFIX/venv                       the package and its dependencies
#   $PREFIX/share/hw, share/sounds     board profiles, earcons
#   /lib/systemd/system/huxleyd.service (+ huxleyd-skillhost.socket, @.service), /usr/lib/sysusers.d, /usr/lib/tmpfiles.d
#                                      (HUXLEYD_RELEASE: the units are the release's,
#                                      $PREFIX/share/systemd, linked from there)
#   /usr/lib/udev/rules.d/60-huxleyd.rules  groups gpio/spi own /dev/gpiochip*, /dev/spidev*
#   /etc/huxleyd/huxleyd.toml, personas/   defaults; an edited file is kept and
#                                      the new default lands beside it as .dist
#   /etc/huxleyd/openai.key            created empty (0600) if missing: put the key there
#   /usr/local/bin/huxleyctl           the admin's CLI
#   /var/lib/huxleyd-skills            (tmpfiles) where `huxleyctl skills install`
#                                      makes the skills environment, on first use:
#                                      our SDK is copied into it from $PREFIX/venv
#
# DESTDIR stages everything under another root (an image, a package) and
# then nothing on this machine is touched; with DESTDIR empty and systemd
# running, the user is created and the service enabled (not started).
#
# Environment: PYTHON (python3), BOARD (also install hw/$BOARD.asound.conf
# as /etc/asound.conf when there is none), HUXLEYD_PIP_ARGS (extra pip
# arguments; the tests pass --no-deps), HUXLEYD_RELEASE (the image's
# layout, which `huxleyctl update` switches as a whole: the venv and share
# in $PREFIX/releases/$HUXLEYD_RELEASE, and $PREFIX/current the one link
# that says which release runs; $PREFIX/venv and $PREFIX/share are fixed
# links through it, so the unit, /usr/local/bin/huxleyctl, the timers and
# first boot all follow it; so do the unit files: each is a link
# /lib/systemd/system/<unit> -> $PREFIX/share/systemd/<unit>. docs/image.md,
# "Updates").
set -eu

DESTDIR=${1:-}
PREFIX=${2:-/opt/huxleyd}
PYTHON=${PYTHON:-python3}
BOARD=${BOARD:-}
PIP_ARGS=${HUXLEYD_PIP_ARGS:-}
RELEASE=${HUXLEYD_RELEASE:-}
# lgpio has no wheel for CPython 3.13 (Debian trixie): pip builds its sdist,
# which links a system liblgpio that Debian does not package unless PYPI=1
# makes it compile its bundled library in (as its own PyPI wheels are made).
PYPI=1
export PYPI

case "$PREFIX" in
    /?*) ;;
    *) echo "install: PREFIX must be an absolute path other than /, got '$PREFIX'" >&2; exit 2 ;;
esac

SRC=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "$BOARD" ] && [ ! -f "$SRC/hw/$BOARD.toml" ]; then
    boards=$(cd "$SRC/hw" && for f in *.toml; do printf '%s ' "${f%.toml}"; done)
    echo "install: unknown BOARD '$BOARD' (have: $boards)" >&2
    exit 2
fi
if [ -n "$RELEASE" ]; then
    case "$RELEASE" in
        *[!A-Za-z0-9.+_-]*|.*)
            echo "install: HUXLEYD_RELEASE must be a version like 0.1.0, got '$RELEASE'" >&2
            exit 2 ;;
    esac
    # Where the venv lives for good (a venv records its own path).
    VENV_FINAL="$PREFIX/releases/$RELEASE/venv"
    SHARE="$DESTDIR$PREFIX/releases/$RELEASE/share"
else
    VENV_FINAL="$PREFIX/venv"
    SHARE="$DESTDIR$PREFIX/share"
fi
VENV="$DESTDIR$VENV_FINAL"
UNITS="huxleyd.service huxleyd-skillhost.socket huxleyd-skillhost@.service"
ETC="$DESTDIR/etc/huxleyd"

say() { printf 'install: %s\n' "$*"; }

# -- the package, in a venv ---------------------------------------------------
install_package() {
    if [ ! -x "$VENV/bin/python" ]; then
        say "creating $VENV"
        "$PYTHON" -m venv "$VENV"
    fi
    # Build from a copy, so the source tree gets no build/ or *.egg-info.
    # The copy's place is fixed by the venv's (not mktemp's random name): pip
    # records where it installed from (direct_url.json, and its hash in
    # RECORD), so a random name made two images of one commit differ there.
    # Two installs share it only if they install into the same venv.
    stage="$VENV.build"
    rm -rf "$stage"
    mkdir -p "$stage"
    trap 'rm -rf "$stage"' EXIT
    # The C extensions carry no build path either: the compiler writes the
    # build directory into the debug information (and the GNU build id is a
    # hash over it) unless it is mapped to a fixed name. CPPFLAGS, not
    # CFLAGS: setuptools appends CPPFLAGS to Python's own compiler flags,
    # while a CFLAGS replaces them (-g, -O3, -fwrapv, Debian's hardening).
    CPPFLAGS="${CPPFLAGS:+$CPPFLAGS }-ffile-prefix-map=$stage=."
    export CPPFLAGS
    # setup.py declares the C extensions: without it pip builds none, silently.
    for item in pyproject.toml setup.py README.md LICENSE huxleyd sdk; do
        if [ -e "$SRC/$item" ]; then cp -R "$SRC/$item" "$stage/"; fi
    done
    find "$stage" \( -name __pycache__ -o -name '*.egg-info' -o -name build \) -type d \
        -prune -exec rm -rf {} +
    # The SDK first (its own distribution, huxley-sdk): huxleyd pins it, and
    # a Huxley skill installed later finds its huxley-sdk requirement met.
    say "pip install huxley-sdk (sdk/) into $VENV"
    # shellcheck disable=SC2086  # PIP_ARGS is a word list on purpose
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        --upgrade $PIP_ARGS "$stage/sdk"
    extras=""
    if pkg-config --exists libsystemd 2>/dev/null; then extras="[journal]"; fi
    say "pip install huxleyd$extras into $VENV"
    # shellcheck disable=SC2086
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        --upgrade $PIP_ARGS "$stage$extras"
    if [ -n "$DESTDIR" ]; then
        # A venv records its own path in its scripts; point them at the
        # final location, where the tree will live once DESTDIR is the root.
        for f in "$VENV"/bin/* "$VENV/pyvenv.cfg"; do
            if [ ! -f "$f" ] || [ -L "$f" ]; then continue; fi
            if ! grep -Iq . "$f" 2>/dev/null; then continue; fi  # text files only
            sed -i "s|$VENV|$VENV_FINAL|g" "$f"
        done
    fi
}

# -- the release links (HUXLEYD_RELEASE): current -> releases/$RELEASE --------------
install_links() {
    [ -n "$RELEASE" ] || return 0
    for link in venv share; do
        if [ -e "$DESTDIR$PREFIX/$link" ] && [ ! -L "$DESTDIR$PREFIX/$link" ]; then
            echo "install: $DESTDIR$PREFIX/$link is a directory: HUXLEYD_RELEASE needs a fresh $PREFIX" >&2
            exit 2
        fi
    done
    # Relative links: the same tree works under DESTDIR and on the device.
    ln -sfn "releases/$RELEASE" "$DESTDIR$PREFIX/current"
    ln -sfn current/venv "$DESTDIR$PREFIX/venv"
    ln -sfn current/share "$DESTDIR$PREFIX/share"
    say "release $RELEASE: $PREFIX/current -> releases/$RELEASE"
}

# -- files that are ours: replaced on every install ------------------------------
install_data() {
    rm -rf "$SHARE/hw"
    mkdir -p "$SHARE/hw" "$SHARE/sounds"
    for f in "$SRC"/hw/*.toml "$SRC"/hw/*.asound.conf "$SRC"/hw/README.md; do
        if [ -f "$f" ]; then install -m 0644 "$f" "$SHARE/hw/"; fi
    done
    for f in "$SRC"/sounds/*.wav; do
        if [ -f "$f" ]; then install -m 0644 "$f" "$SHARE/sounds/"; fi
    done
    say "board profiles and sounds in $SHARE"

    unit_dir="$DESTDIR/lib/systemd/system"
    mkdir -p "$unit_dir" "$DESTDIR/usr/lib/sysusers.d" "$DESTDIR/usr/lib/tmpfiles.d"
    for unit in $UNITS; do
        if [ -n "$RELEASE" ]; then
            # The release's own copy, and systemd's search path names it through
            # $PREFIX/share (-> current/share): a "linked unit file", read again
            # at each daemon-reload, so moving current moves the units too.
            # Absolute: /lib may itself be a link (to usr/lib).
            mkdir -p "$SHARE/systemd"
            sed "s|/opt/huxleyd|$PREFIX|g" "$SRC/systemd/$unit" > "$SHARE/systemd/$unit"
            chmod 0644 "$SHARE/systemd/$unit"
            ln -sfn "$PREFIX/share/systemd/$unit" "$unit_dir/$unit"
        else
            sed "s|/opt/huxleyd|$PREFIX|g" "$SRC/systemd/$unit" > "$unit_dir/$unit"
            chmod 0644 "$unit_dir/$unit"
        fi
    done
    # sysusers, tmpfiles and udev stay files of the system, not of a release:
    # the users, directories and device owners they make outlive any release,
    # and going back to an older one could not take them back.
    install -m 0644 "$SRC/systemd/huxleyd.sysusers" "$DESTDIR/usr/lib/sysusers.d/huxleyd.conf"
    install -m 0644 "$SRC/systemd/huxleyd.tmpfiles" "$DESTDIR/usr/lib/tmpfiles.d/huxleyd.conf"
    mkdir -p "$DESTDIR/usr/lib/udev/rules.d"
    install -m 0644 "$SRC/systemd/huxleyd.udev.rules" "$DESTDIR/usr/lib/udev/rules.d/60-huxleyd.rules"
    say "systemd unit, sysusers, tmpfiles and udev rules installed"

    mkdir -p "$DESTDIR/usr/local/bin"
    ln -sfn "$PREFIX/venv/bin/huxleyctl" "$DESTDIR/usr/local/bin/huxleyctl"
}

# -- files that are the admin's: never overwritten -------------------------------
# install_config SOURCE TARGET: copy if absent; if present and different,
# leave it and put the new default beside it as TARGET.dist.
install_config() {
    src=$1 dst=$2
    mkdir -p "$(dirname "$dst")"
    if [ ! -e "$dst" ]; then
        install -m 0644 "$src" "$dst"
        say "installed $dst"
    elif cmp -s "$src" "$dst"; then
        rm -f "$dst.dist"
    else
        install -m 0644 "$src" "$dst.dist"
        say "kept your edited $dst; the new default is $dst.dist (diff them)"
    fi
}

# The shipped huxleyd.toml, made for this install: paths under PREFIX, and
# the board when BOARD is given (else the shipped gpio-basic).
configured_toml() {
    out=$1
    sed -e "s|/opt/huxleyd|$PREFIX|g" "$SRC/config/huxleyd.toml" > "$out"
    if [ -n "$BOARD" ]; then
        sed -i "s|^board = \".*\"|board = \"$BOARD\"|" "$out"
    fi
}

install_configs() {
    toml=$(mktemp)
    configured_toml "$toml"
    install_config "$toml" "$ETC/huxleyd.toml"
    rm -f "$toml"
    if [ -n "$BOARD" ] && ! grep -q "^board = \"$BOARD\"" "$ETC/huxleyd.toml"; then
        say "WARNING: your $ETC/huxleyd.toml keeps its board; set board = \"$BOARD\" in [hardware]"
    fi
    for f in "$SRC"/config/personas/*.toml; do
        if [ -f "$f" ]; then install_config "$f" "$ETC/personas/$(basename "$f")"; fi
    done
    key="$ETC/openai.key"
    if [ ! -e "$key" ]; then
        (umask 077 && : > "$key")
        say "created an empty $key (mode 0600): put your OpenAI API key in it"
    fi
    if [ -n "$BOARD" ]; then
        conf="$SRC/hw/$BOARD.asound.conf"
        if [ ! -f "$conf" ]; then
            say "board $BOARD needs no asound.conf"
        elif [ -e "$DESTDIR/etc/asound.conf" ] && ! cmp -s "$conf" "$DESTDIR/etc/asound.conf"; then
            say "kept $DESTDIR/etc/asound.conf; $BOARD's is $SHARE/hw/$BOARD.asound.conf"
        else
            install -m 0644 "$conf" "$DESTDIR/etc/asound.conf"
            say "installed $DESTDIR/etc/asound.conf for $BOARD"
        fi
    fi
}

# systemctl enable of a linked unit writes the path it resolved, through
# current, into /etc/systemd/system (<unit> and *.wants/<unit> ->
# $PREFIX/releases/$RELEASE/share/systemd/<unit>): that would pin this
# release's units. Name the fixed link instead (as huxleyctl update does).
unpin_units() {
    etc="$DESTDIR/etc/systemd/system"
    for unit in $UNITS; do
        for link in "$etc/$unit" "$etc"/*.wants/"$unit" "$etc"/*.requires/"$unit"; do
            [ -L "$link" ] || continue
            case "$(readlink "$link")" in "$PREFIX"/releases/*) ;; *) continue ;; esac
            if [ "$link" = "$etc/$unit" ]; then
                rm -f "$link"
            else
                ln -sfn "/lib/systemd/system/$unit" "$link"
            fi
        done
    done
}

# -- this machine only ---------------------------------------------------------------
activate() {
    if [ -n "$DESTDIR" ]; then
        say "staged under $DESTDIR: not enabling anything"
        return
    fi
    if [ ! -d /run/systemd/system ]; then
        say "systemd is not running: enable huxleyd yourself on the target"
        return
    fi
    systemd-sysusers huxleyd.conf
    systemd-tmpfiles --create huxleyd.conf
    # The devices already exist: give them to the groups now, not at next boot.
    if command -v udevadm >/dev/null 2>&1; then
        udevadm control --reload || true
        udevadm trigger --subsystem-match=gpio --subsystem-match=spidev || true
    fi
    systemctl daemon-reload
    systemctl enable huxleyd huxleyd-skillhost.socket
    if [ -n "$RELEASE" ]; then unpin_units && systemctl daemon-reload; fi
    if grep -qs "Raspberry Pi" /proc/device-tree/model \
        && ! "$VENV/bin/python" -c "import lgpio" 2>/dev/null; then
        say "WARNING: the lgpio module is missing from $VENV; on a Pi 5 the button and LEDs"
        say "         fall back to mock pins. Fix: $VENV/bin/pip install lgpio"
    fi
    say "enabled. Edit /etc/huxleyd/huxleyd.toml, put the key in /etc/huxleyd/openai.key,"
    say "then: systemctl start huxleyd   (journalctl -u huxleyd -f to watch it)"
}

install_package
install_data
install_links
install_configs
activate
