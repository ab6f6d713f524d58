#!/bin/bash
# make ha-test: Home Assistant core from PyPI in a scratch folder, its MCP
# Server integration and a demo light; a scripted huxleyd turn turns the light
# off (scripts/ha_test.py). Not part of make test: the install is large.
#   HA_DIR     scratch folder (default /tmp/huxleyd-ha): venv, config, logs
#   HA_PYTHON  the interpreter for Home Assistant (default: the newest 3.12+ found)
set -euo pipefail
HA_DIR=${HA_DIR:-/tmp/huxleyd-ha}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$HA_DIR"

pick_python() {
    local c
    for c in python3.14 python3.13 python3.12; do
        if "$c" -c 'import sys; assert sys.version_info >= (3, 12)' 2>/dev/null; then
            command -v "$c"; return
        fi
    done
    # pyenv keeps versions it does not put on PATH
    if command -v pyenv >/dev/null; then
        for c in $(ls -d "$(pyenv root)"/versions/3.1[2-9]* 2>/dev/null | sort -V -r); do
            if [ -x "$c/bin/python3" ]; then echo "$c/bin/python3"; return; fi
        done
    fi
    echo "ha-test: Home Assistant needs Python 3.12 or newer; none found (set HA_PYTHON)" >&2
    exit 1
}
PY=${HA_PYTHON:-$(pick_python)}
echo "ha-test: Python $("$PY" -c 'import platform; print(platform.python_version())') ($PY)"

if [ ! -f "$HA_DIR/venv/.installed" ]; then
    echo "ha-test: pip install homeassistant into $HA_DIR/venv (large: several minutes)"
    "$PY" -m venv "$HA_DIR/venv"
    "$HA_DIR/venv/bin/pip" install --quiet --upgrade pip
    "$HA_DIR/venv/bin/pip" install --quiet homeassistant > "$HA_DIR/pip.log" 2>&1 \
        || { tail -n 20 "$HA_DIR/pip.log"; exit 1; }
    touch "$HA_DIR/venv/.installed"
fi
echo "ha-test: homeassistant $("$HA_DIR/venv/bin/pip" show homeassistant | sed -n 's/^Version: //p')"

PORT=$("$ROOT/.venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
rm -rf "$HA_DIR/config" "$HA_DIR/run"
mkdir -p "$HA_DIR/config" "$HA_DIR/run"
cat > "$HA_DIR/config/configuration.yaml" <<YAML
default_config:
light:
  - platform: demo
http:
  server_host: 127.0.0.1
  server_port: $PORT
YAML

"$HA_DIR/venv/bin/hass" -c "$HA_DIR/config" > "$HA_DIR/hass.log" 2>&1 &
HASS=$!
trap 'kill $HASS 2>/dev/null; wait $HASS 2>/dev/null || true' EXIT
echo "ha-test: Home Assistant starting on 127.0.0.1:$PORT (log: $HA_DIR/hass.log)"

HA_URL="http://127.0.0.1:$PORT" HA_TEST_DIR="$HA_DIR/run" \
HA_PYTHON_VERSION=$("$PY" -c 'import platform; print(platform.python_version())') \
    "$ROOT/.venv/bin/python" "$ROOT/scripts/ha_test.py"
