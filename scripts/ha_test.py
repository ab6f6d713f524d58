"""``make ha-test``: a scripted turn turns a Home Assistant light off through MCP.

Run by ``scripts/ha-test.sh`` after it installed Home Assistant core into a
scratch folder and started it there (``HA_URL``). This script (stdlib only):

1. onboards Home Assistant (the owner user) and gets an access token;
2. adds the MCP Server integration (the Assist API) through its config flow;
3. checks the demo light ``light.kitchen_lights`` is on and exposed to voice;
4. starts huxleyd (WAV sound card, the simulator scripted to call the tool
   ``home__HassTurnOff`` for "Kitchen Lights") with ``[[mcp]]`` at Home
   Assistant's SSE endpoint and the token in a file;
5. says the turn (``huxleyctl say``) and reads the light's state back.

Prints one line ``HA-TEST PASS|FAIL ...`` with the Home Assistant version.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.process import DaemonProcess, ctl, write_daemon_config  # noqa: E402

HA = os.environ.get("HA_URL", "http://127.0.0.1:18123")
CLIENT_ID = f"{HA}/"
LIGHT = "light.kitchen_lights"


def request(
    method: str, path: str, body: Any = None, *, token: str | None = None, form: bool = False
) -> Any:
    headers = {}
    data = None
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if body is not None:
        if form:
            data = urllib.parse.urlencode(body).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        else:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
    req = urllib.request.Request(HA + path, data=data, headers=headers, method=method)
    with urllib.request.urlopen(req, timeout=30) as resp:
        text = resp.read().decode()
    return json.loads(text) if text else None


def wait_up(timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            request("GET", "/api/onboarding")
            return
        except (urllib.error.URLError, ConnectionError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def owner_token() -> str:
    steps = request("GET", "/api/onboarding")
    if any(s["step"] == "user" and not s["done"] for s in steps):
        done = request(
            "POST",
            "/api/onboarding/users",
            {
                "client_id": CLIENT_ID,
                "name": "Owner",
                "username": "owner",
                "password": "ha-test-password",
                "language": "en",
            },
        )
        code = done["auth_code"]
    else:
        raise SystemExit("Home Assistant is already onboarded: start from an empty config folder")
    tokens = request(
        "POST",
        "/auth/token",
        {"grant_type": "authorization_code", "code": code, "client_id": CLIENT_ID},
        form=True,
    )
    return str(tokens["access_token"])


def add_mcp_server(token: str) -> None:
    flow = request(
        "POST", "/api/config/config_entries/flow", {"handler": "mcp_server"}, token=token
    )
    if flow.get("type") == "form":
        flow = request(
            "POST",
            f"/api/config/config_entries/flow/{flow['flow_id']}",
            {"llm_hass_api": "assist"},
            token=token,
        )
    assert flow.get("type") == "create_entry", flow


def light_state(token: str) -> str:
    return str(request("GET", f"/api/states/{LIGHT}", token=token)["state"])


SCENARIO = """
default_reply = "Done."

[[turns]]
hear = "turn off the kitchen light"

[[turns.responses]]
tool_calls = [{ name = "home__HassTurnOff", arguments = { name = "Kitchen Lights" } }]

[[turns.responses]]
say = "The kitchen light is off."
"""


def main() -> int:
    folder = Path(os.environ.get("HA_TEST_DIR", "/tmp/huxleyd-ha-test")) / "speaker"
    folder.mkdir(parents=True, exist_ok=True)
    wait_up()
    token = owner_token()
    config = request("GET", "/api/config", token=token)
    version = config["version"]
    add_mcp_server(token)
    deadline = time.monotonic() + 60
    while True:
        try:
            before = light_state(token)
            break
        except urllib.error.HTTPError:
            assert time.monotonic() < deadline, "no demo light"
            time.sleep(1)
    if before != "on":
        request("POST", "/api/services/light/turn_on", {"entity_id": LIGHT}, token=token)
        before = light_state(token)
    (folder / "home.token").write_text(token + "\n")
    cfg = write_daemon_config(folder, scenario=SCENARIO, sim_speed=1.0)
    cfg.write_text(
        cfg.read_text()
        + f'[[mcp]]\nname = "home"\nurl = "{HA}/mcp_server/sse"\ntoken_file = "home.token"\n'
    )
    daemon = DaemonProcess(cfg)
    try:
        daemon.wait_for_log("mcp_server_connected", 60)
        connected = [
            line for line in daemon.output().splitlines() if "mcp_server_connected" in line
        ]
        print(connected[-1])
        out = ctl(folder / "control.sock", "say", "turn off the kitchen light")
        print("huxleyctl say:", out.strip())
        deadline = time.monotonic() + 20
        after = light_state(token)
        while after != "off" and time.monotonic() < deadline:
            time.sleep(0.5)
            after = light_state(token)
    finally:
        daemon.terminate()
    results = [line for line in daemon.output().splitlines() if "home__HassTurnOff" in line]
    for line in results[-3:]:
        print(line)
    ok = before == "on" and after == "off"
    verdict = "PASS" if ok else "FAIL"
    print(
        f"HA-TEST {verdict}: Home Assistant {version} (Python "
        f"{os.environ.get('HA_PYTHON_VERSION', '?')}), MCP over SSE; "
        f"{LIGHT} {before} -> {after}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
