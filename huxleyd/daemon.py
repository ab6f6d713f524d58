"""The daemon: parse the configuration, wire the layers, run until SIGTERM.

This module only wires; behaviour lives in the layers it connects.
``huxleyd --check-config`` validates the configuration and the persona's
skills, then exits 0 (valid) or 1 (the problem, one line).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from huxley_sdk import SkillContext
from huxleyd import __version__
from huxleyd.config import DEFAULT_CONFIG_PATH, Config, load_config
from huxleyd.errors import HuxleydError
from huxleyd.logs import get_logger, setup
from huxleyd.skillhost import SkillHost
from huxleyd.storage import Database, FileSecrets

log = get_logger("huxleyd.daemon")


def skill_host_for(config: Config) -> SkillHost:
    """Resolve and check the persona's skills (no setup yet)."""
    return SkillHost.load(
        config.persona.skills,
        descriptions=config.persona.overrides.tools,
        tool_timeout_s=config.provider.tool_timeout_s,
    )


def context_factory(config: Config, db: Database) -> Any:
    """Build each skill's SkillContext: its own storage, secrets and logger."""
    persona = config.persona

    def make(name: str, skill_config: dict[str, Any]) -> SkillContext:
        skill_config.setdefault("timezone", persona.timezone)
        return SkillContext(
            logger=get_logger(f"huxley.skill.{name}", skill=name),
            storage=db.skill_storage(name),
            secrets=FileSecrets(config.storage.secrets_dir, name),
            persona_data_dir=persona.data_dir,
            config=skill_config,
            language=persona.language,
            timezone=persona.timezone,
        )

    return make


async def run(config: Config) -> int:
    """Run the daemon until SIGTERM/SIGINT. Returns the exit status."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    db = await Database.open(config.storage.database_path(config.daemon.persona))
    host = skill_host_for(config)
    try:
        await host.setup_all(context_factory(config, db), config.persona.skills)
        log.info(
            "daemon_started",
            version=__version__,
            persona=config.persona.name,
            skills=",".join(s.name for s in host.skills),
            database=str(db.path),
        )
        log.warning(
            "not_wired_yet",
            missing="audio engine, realtime provider, button/LEDs, control socket",
            detail="this build loads config, skills and storage only",
        )
        await stop.wait()
        log.info("daemon_stopping")
    finally:
        await host.teardown_all()
        await db.close()
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="huxleyd", description="The huxleyd voice assistant daemon."
    )
    parser.add_argument(
        "--config", type=Path, default=DEFAULT_CONFIG_PATH, help="configuration file"
    )
    parser.add_argument(
        "--check-config",
        action="store_true",
        help="validate the configuration and skills, then exit",
    )
    parser.add_argument("--version", action="version", version=f"huxleyd {__version__}")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        config = load_config(args.config)
        setup(config.daemon.log_level)
        if args.check_config:
            skill_host_for(config)
            print(
                f"{args.config}: ok (persona {config.persona.name!r}, skills: {', '.join(config.persona.skills)})"
            )
            return 0
        return asyncio.run(run(config))
    except HuxleydError as exc:
        print(f"huxleyd: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
