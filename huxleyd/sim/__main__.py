"""``python -m huxleyd.sim --port 8765 --scenario config/scenarios/demo.toml``

Runs the simulator on its own, for demos and for poking at it with any
OpenAI Realtime client (``websocket_base_url=ws://127.0.0.1:8765/v1``), an
xAI one (``…/xai/v1``) or a Gemini Live one (the BidiGenerateContent path);
``--dialect`` only picks which URL it prints. It is a protocol simulator
playing back a script, not an AI, and says so.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import signal
import sys
from pathlib import Path

from huxleyd import logs
from huxleyd.errors import ConfigError
from huxleyd.sim.scenario import Scenario, load_scenario
from huxleyd.sim.server import PATHS, SimServer


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m huxleyd.sim",
        description="A local OpenAI Realtime (GA) protocol simulator. Not an AI: "
        "it answers from a scripted scenario.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8765, help="port (0 picks a free one)")
    parser.add_argument("--scenario", type=Path, help="scenario file (.toml or .json)")
    parser.add_argument(
        "--speed", type=float, default=1.0, help="audio pacing: 1 is real time, 0 is no pacing"
    )
    parser.add_argument("--synth", choices=("auto", "espeak", "tone"), default="auto")
    parser.add_argument("--api-key", help="require this key (default: accept any)")
    parser.add_argument(
        "--dialect", choices=tuple(PATHS), default="openai", help="whose URL to print"
    )
    parser.add_argument("--log-level", default="INFO")
    return parser


async def _serve(server: SimServer) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with server:
        query = "?model=gpt-realtime" if server.dialect == "openai" else ""
        print(
            f"huxleyd simulator (not an AI) listening on {server.url}{query}",
            file=sys.stderr,
        )
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logs.setup(args.log_level, journal=False)
    try:
        scenario = load_scenario(args.scenario) if args.scenario else Scenario()
    except ConfigError as exc:
        print(f"huxleyd.sim: {exc}", file=sys.stderr)
        return 2
    server = SimServer(
        scenario,
        speed=math.inf if args.speed <= 0 else args.speed,
        host=args.host,
        port=args.port,
        api_key=args.api_key,
        synth=args.synth,
        dialect=args.dialect,
    )
    asyncio.run(_serve(server))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
