#!/bin/sh
# Print the systemd security exposure of our unit (informational in `make lint`).
unit=systemd/huxleyd.service
[ -f "$unit" ] || exit 0
if command -v systemd-analyze >/dev/null 2>&1; then
    systemd-analyze security --offline=true --no-pager "$unit" 2>/dev/null | tail -n 1 \
        || echo "systemd-analyze security could not read $unit"
else
    echo "systemd-analyze not installed: unit exposure not measured"
fi
