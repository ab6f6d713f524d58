"""The ``huxleyd`` command: parse the configuration, run the daemon until SIGTERM.

The console script ``huxleyd`` and ``python -m huxleyd`` call :func:`main`.
SIGHUP re-reads the persona file and hands changed skill config to the
skills (``reconfigure``); see :meth:`~huxleyd.app.runtime.Runtime.reload`.

This module only wires; behaviour lives in the layers it connects.
``huxleyd --check-config`` does everything the start does short of opening
devices and the network (:func:`huxleyd.config.preflight.preflight`), then exits 0
(valid, with what it found) or 78 (the problem, one line naming the file,
the key and what was expected), as the start does. Run as root, it checks
that the service user can read every file.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import signal
import sys
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any

from huxleyd import __version__
from huxleyd.app.control import RuntimeControl
from huxleyd.app.firstrun import first_outcome, next_steps
from huxleyd.app.instance import InstanceLock
from huxleyd.app.model_notice import log_model_shutdowns, model_shutdowns
from huxleyd.app.native_stderr import NativeStderr
from huxleyd.app.parts import Overrides
from huxleyd.app.runtime import Runtime
from huxleyd.config.files import Reader
from huxleyd.config.load import DEFAULT_CONFIG_PATH, Config, load_config
from huxleyd.config.preflight import preflight
from huxleyd.config.preflight_io import check_socket_path
from huxleyd.control.pathwatch import WATCH_INTERVAL_S, watch_socket_path
from huxleyd.control.server import ControlServer
from huxleyd.errors import (
    ConfigError,
    HuxleydError,
    SkillCollisionError,
    SkillNotInstalledError,
    SkillShapeError,
)
from huxleyd.logs import LOG_FILE_NAME, add_log_file, get_logger, running_under_systemd, setup

log = get_logger("huxleyd.daemon")

EX_CONFIG = 78
"""sysexits.h: the configuration is wrong. The unit's RestartPreventExitStatus."""
EX_SOFTWARE = 70
"""sysexits.h: an internal error (a bug), never a configuration problem."""
CONFIG_ERRORS = (ConfigError, SkillNotInstalledError, SkillCollisionError, SkillShapeError)
"""What only an edit of the configuration fixes (a skill's setup may fail for
a passing reason, such as the network, so SkillSetupError is not here)."""


# longer than 50 lines: the daemon's life in its order (signals, socket and lock, start, wait, stop)
async def run(
    config: Config,
    overrides: Overrides | None = None,
    *,
    config_arg: Path | None = None,
    stop: asyncio.Event | None = None,
) -> int:
    """Run the daemon until SIGTERM/SIGINT (or ``stop`` is set). Returns the exit status.

    ``config_arg``: the ``--config`` as typed; when given and not under
    systemd, the next steps are printed once the daemon is ready."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    runtime = Runtime(config, overrides)
    given = overrides or Overrides()
    instance = InstanceLock(config.storage.state_dir)
    stop_watch: list[asyncio.Task[None]] = []
    reloads: set[asyncio.Task[list[str]]] = set()

    def reload() -> None:  # SIGHUP, `systemctl reload huxleyd`: re-read the persona
        task = loop.create_task(runtime.reload(), name="reload")
        reloads.add(task)
        task.add_done_callback(reload_done)

    def reload_done(task: asyncio.Task[list[str]]) -> None:
        reloads.discard(task)
        if not task.cancelled() and task.exception() is not None:  # reload() never raises
            log.error("reload_failed", error=repr(task.exception()))

    loop.add_signal_handler(signal.SIGHUP, reload)
    native = NativeStderr()  # ALSA/JACK chatter: into the rate-limited log
    native.install(loop)
    try:
        # The control socket first: a second instance finds the first one
        # here, before it opens the sound card or logs daemon_started. While
        # the runtime starts, huxleyctl already answers ("starting").
        # The socket's path is checked before the server binds it: a file in
        # its place is a configuration error (78), as --check-config says.
        check_socket_path(config)
        # One daemon per state directory (its database): the lock, not the socket,
        # keeps a second one out, also when the socket was removed.
        instance.acquire()
        async with ControlServer(RuntimeControl(runtime), config.control) as server:
            watch = loop.create_task(
                watch_socket_path(server, interval_s=given.socket_watch_s or WATCH_INTERVAL_S),
                name="socket-watch",
            )
            stop_watch = [watch]
            await runtime.start()
            log_model_shutdowns(config)
            if config_arg is not None and not running_under_systemd():
                offline = None
                if not runtime.is_simulator and runtime.setup_failure is None:
                    offline = await first_outcome(
                        lambda: runtime.connection_status,
                        limit_s=config.provider.connect_timeout_s + 1.0,
                    )
                steps = next_steps(
                    config_arg,
                    config,
                    simulator=runtime.is_simulator,
                    audio=runtime.parts.audio_description,
                    offline=offline,
                )
                print(steps, file=sys.stderr, flush=True)
            await stop.wait()
            log.info("daemon_stopping", reason="signal")
    finally:
        for task in stop_watch:
            task.cancel()
        await runtime.close()
        native.uninstall(loop)
        instance.release()
    log.info("daemon_stopped")
    return 0


STRAGGLER_BUDGET_S = 2.0
"""After :func:`run` returned, tasks still running get this long to end."""


def run_bounded(
    main: Coroutine[Any, Any, int], straggler_budget_s: float = STRAGGLER_BUDGET_S
) -> int:
    """``asyncio.run(main)``, except that leftover tasks are not waited for forever.

    ``asyncio.run`` cancels what is still running and then waits for all of
    it: a skill task that swallows ``CancelledError`` would hold the exit past
    systemd's stop timeout. Here they get ``straggler_budget_s``, then the
    loop is closed without them (each is logged).
    """
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(main)
    finally:
        try:
            leftover = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in leftover:
                task.cancel()
            if leftover:
                loop.run_until_complete(asyncio.wait(leftover, timeout=straggler_budget_s))
            for task in leftover:
                if not task.done():
                    log.error("task_left_running_at_exit", task=task.get_name())
            loop.run_until_complete(loop.shutdown_asyncgens())
            executor = loop.create_task(loop.shutdown_default_executor())
            loop.run_until_complete(asyncio.wait({executor}, timeout=straggler_budget_s))
        finally:
            loop.close()


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
    parser.add_argument(
        "--key-file", type=Path, default=None, help="API key file (overrides provider.key_file)"
    )
    parser.add_argument("--version", action="version", version=f"huxleyd {__version__}")
    return parser.parse_args(argv)


def main(
    argv: Sequence[str] | None = None,
    *,
    overrides: Overrides | None = None,
    stop: asyncio.Event | None = None,
) -> int:
    """``huxleyd``: check the configuration, or run the daemon.

    ``overrides`` and ``stop`` are for tests that drive the real start
    in-process (a notifier that sets ``stop`` at READY)."""
    args = parse_args(argv)
    try:
        config = load_config(args.config)
        setup(config.daemon.log_level)
        if args.check_config:
            reader = Reader.for_service(config.daemon.service_user)
            # The start's own call: a skill that does not load is left out, not fatal.
            checked = preflight(
                config, key_file=args.key_file, reader=reader, leave_out_failing_skills=True
            )
            print(checked.report(config, args.config))
            for warning in model_shutdowns(config):
                print(f"{args.config}: warning: {warning.message()}")
            return 0
        if not running_under_systemd():
            # No journal to ask: `huxleyctl logs` reads this file instead.
            add_log_file(config.storage.state_dir / LOG_FILE_NAME)
        given = overrides or Overrides()
        if args.key_file is not None:
            given = dataclasses.replace(given, key_file=args.key_file)
        return run_bounded(run(config, given, config_arg=args.config, stop=stop))
    except Exception as exc:
        return refusal(exc)


def refusal(exc: Exception) -> int:
    """One line on stderr and the exit status for what stopped ``huxleyd``.

    A configuration error is 78, for ``--check-config`` and the start alike:
    the unit does not restart on it (a retry cannot fix an edit). Any other
    error of ours is 1. Anything else is a bug: one line too, never a
    traceback on the admin's terminal (the journal has it at DEBUG).
    """
    if isinstance(exc, HuxleydError):
        print(f"huxleyd: {' '.join(str(exc).split())}", file=sys.stderr)
        return EX_CONFIG if isinstance(exc, CONFIG_ERRORS) else 1
    log.debug("daemon_crashed", exc_info=exc)
    detail = " ".join(str(exc).split()) or "no message"
    print(
        f"huxleyd: internal error, a bug: {type(exc).__name__}: {detail} "
        "(please report it with the output of `huxleyctl logs`)",
        file=sys.stderr,
    )
    return EX_SOFTWARE


if __name__ == "__main__":
    raise SystemExit(main())
