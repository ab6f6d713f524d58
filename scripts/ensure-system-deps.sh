#!/bin/sh
# Install the Debian packages huxleyd needs, when missing.
#   portaudio19-dev  PyAudio builds against it     alsa-utils  amixer for the hardware mixer
#   libasound2-dev   ALSA headers + file plugin     ffmpeg      media decoding (books, radio)
#   libsystemd-dev   systemd-python (journald)     espeak-ng   the simulator's voice
#   pkg-config       finds libsystemd for pip
#   libspeexdsp-dev  Speex's echo canceller (the optional _aec extension)
#   gcc, python3-dev PyAudio and systemd-python are C extensions: a compiler
#                    and the Python headers (a minimal Debian has neither)
#   python3-venv     `python3 -m venv` (Debian ships it apart from python3)
#   device-tree-compiler  dtc/fdtoverlay: the tests check the image's board
#                    overlays (hw/dt) against a Debian-shaped device tree
#   mosquitto        the tests of [mqtt] start a real broker (and mosquitto_passwd)
#   nftables, iproute2  the image's mDNS echo rule is tested on this kernel, in
#                    network namespaces (tests/image/test_mdns_echo.py)
set -eu
PACKAGES="portaudio19-dev libasound2-dev libspeexdsp-dev alsa-utils ffmpeg espeak-ng libsystemd-dev pkg-config gcc libc6-dev python3-dev python3-venv device-tree-compiler mosquitto nftables iproute2"
# On a Pi with Python 3.13 (Debian trixie, Raspberry Pi OS trixie) lgpio,
# the pin factory, has no wheel on PyPI: pip builds it, through SWIG.
case "$(uname -m)" in
    aarch64|armv7l)
        if python3 -c 'import sys; sys.exit(sys.version_info < (3, 13))' 2>/dev/null; then
            PACKAGES="$PACKAGES swig"
        fi ;;
esac

missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian packages:$missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
    echo "huxleyd needs these Debian packages:$missing" >&2
    echo "run: sudo apt-get install$missing" >&2
    exit 1
fi
