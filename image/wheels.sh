#!/bin/bash
# Stage 2 of `make image`: the Python packages for the image's venv, on the host.
#
#   image/wheels.sh WHEEL_DIR
#
# pip downloads prebuilt aarch64 wheels (CPython 3.13, trixie's python3,
# glibc manylinux) for every dependency in pyproject.toml, so nothing is
# compiled under emulation but the packages PyPI has no such wheels for
# (PyAudio, systemd-python; lgpio, whose last wheels stop at CPython 3.12):
# their sources land here and image/customize.sh builds wheels of them once,
# inside the arm64 root, into the same directory. The directory is the
# cache: a rebuild downloads and compiles nothing that is already in it.
set -euo pipefail

dir=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"

# The requirement list, from pyproject.toml and sdk/pyproject.toml: markers
# are the image's (aarch64, Python 3.13), so lgpio is in and tomli is out;
# the sdist-only packages are fetched apart, and huxley-sdk is not on PyPI
# in our version at all: install.sh builds it from sdk/ (its dependencies
# are fetched here).
reqs=$(mktemp)
trap 'rm -f "$reqs"' EXIT
python3 - "$here/../pyproject.toml" "$here/../sdk/pyproject.toml" > "$reqs" <<'PY'
import re
import sys
import tomllib

project = tomllib.load(open(sys.argv[1], "rb"))["project"]
sdk = tomllib.load(open(sys.argv[2], "rb"))["project"]
deps = project["dependencies"] + project["optional-dependencies"]["journal"] + sdk["dependencies"]
for dep in deps:
    name, _, marker = dep.partition(";")
    if "python_version < '3.11'" in marker:
        continue
    if re.match(r"\s*(pyaudio|systemd-python|lgpio|huxley-sdk)\b", name, re.I):
        continue
    print(name.strip())
PY

pip_download() {
    # --isolated: the host's own pip configuration (mirrors, constraints)
    # is not the image's.
    python3 -m pip --isolated download --quiet --disable-pip-version-check --dest "$dir" "$@"
}
pip_download --only-binary=:all: --python-version 3.13 --implementation cp --abi cp313 \
    $(for v in 17 24 26 27 28 31 34 35 36; do printf -- '--platform manylinux_2_%s_aarch64 ' $v; done) \
    --platform manylinux2014_aarch64 \
    -r "$reqs" "setuptools>=68" wheel
# No Linux wheels on PyPI: sources, built once in the arm64 root.
pip_download --no-binary=:all: --no-deps "pyaudio>=0.2.14" "systemd-python>=235" "lgpio>=0.2"
ls "$dir" | sed 's/^/  /'
