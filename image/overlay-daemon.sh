#!/bin/sh
# Run inside a test VM (image/nortc-test, image/powercut-test), as root:
# lays this checkout's huxleyd and huxley_sdk over the image's venv, and
# builds the checkout's C extensions there, so the code under review is
# what runs on an image built from an older commit.
#
#   sh overlay-daemon.sh DAEMON_SRC_TAR
#
# The tar (image/overlay-src.sh makes it on the host) holds the checkout's
# huxleyd and sdk/src/huxley_sdk, plus setup.py and what it needs. The pure
# Python alone is not enough: the extensions' names and functions change
# with the Python that calls them (the image's _rtout is this tree's _rt),
# and a daemon calling an older .so would run another audio path, or fail.
# The build uses the image's own gcc and portaudio19-dev (about 3 minutes
# emulated). Prints SELFTEST lines; exits 1 when an extension the daemon
# needs did not build.
tar_file=$1
py=/opt/huxleyd/venv/bin/python
site=$($py -c 'import huxleyd, os; print(os.path.dirname(os.path.dirname(huxleyd.__file__)))')
rm -rf /tmp/src && mkdir -p /tmp/src && tar -xf "$tar_file" -C /tmp/src
cp -a /tmp/src/huxleyd/. "$site/huxleyd/" && cp -a /tmp/src/sdk/src/huxley_sdk/. "$site/huxley_sdk/"
if ! (cd /tmp/src && $py setup.py -q build_ext --inplace) >/tmp/ext.log 2>&1; then
    tail -20 /tmp/ext.log | sed 's/^/SELFTEST build_ext: /'
fi
install -m 0644 /tmp/src/huxleyd/audio/_*.so "$site/huxleyd/audio/" 2>/dev/null
ls "$site/huxleyd/audio" | grep -E '\.so$' | sed 's/^/SELFTEST C extension: /'
# The names this checkout's daemon imports (the callback's and the mixer's).
$py -c 'import importlib
from huxleyd.audio.backends import callback_backend as c
importlib.import_module(c.RT)
import huxleyd.audio._dsp'
