"""``huxleyctl logs``: follow the daemon's journal, or its own log file without systemd.

Needs no daemon: with a journal that knows the unit, ``journalctl`` takes the
process over (``execv``); else the log file under the config's ``state_dir``
is printed and followed, filtered by the same ``FIELD=VALUE`` matches. ::

    huxleyctl logs HUXLEY_TOOL=set_volume --no-follow
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from huxleyd.control.cli_parser import EXIT_FAILED, EXIT_OK

JOURNAL_UNIT = "huxleyd"

JOURNAL_PROBE_S = 5.0
"""How long asking the journal whether it knows the unit may take."""


def _journal_has_unit(journalctl: str) -> bool:
    """True when the journal holds at least one line of the unit.

    On a machine without a journal (a container, a laptop running ``make
    run``) ``journalctl --follow`` would wait forever printing nothing.
    """
    try:
        probe = subprocess.run(
            [journalctl, "--unit", JOURNAL_UNIT, "--lines", "1", "--quiet", "--no-pager"],
            capture_output=True,
            timeout=JOURNAL_PROBE_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0 and bool(probe.stdout.strip())


def _log_file_of(config_path: Path) -> Path | None:
    """The daemon's own log file (``<state_dir>/huxleyd.log``) for ``--config``."""
    from huxleyd.config.load import StorageSettings, load_config, read_toml
    from huxleyd.errors import ConfigError
    from huxleyd.logs import LOG_FILE_NAME

    try:
        if not config_path.is_file():
            return None
        return load_config(config_path).storage.state_dir / LOG_FILE_NAME
    except (ConfigError, OSError):
        pass  # another part of the file may be broken; [storage] may still be fine
    try:
        storage = read_toml(config_path).get("storage", {})
    except (ConfigError, OSError):
        return None
    state_dir = storage.get("state_dir") if isinstance(storage, dict) else None
    if state_dir is None:
        return StorageSettings().state_dir / LOG_FILE_NAME
    if not isinstance(state_dir, str):
        return None
    return (config_path.parent / state_dir).resolve() / LOG_FILE_NAME


def _matches(line: str, matches: Sequence[str]) -> bool:
    """``HUXLEY_TOOL=set_volume`` matches a ``tool=set_volume`` field of the line."""
    words = line.split()
    for match in matches:
        name, _, value = match.partition("=")
        field = name.removeprefix("HUXLEY_").lower()
        # HUXLEY_EVENT is the line's event name, a bare word; the rest are k=v.
        wanted = value if field == "event" else f"{field}={value}"
        if wanted not in words:
            return False
    return True


def _print_log_file(path: Path, args: argparse.Namespace) -> int:
    with path.open(encoding="utf-8", errors="replace") as log:
        lines = [line for line in log.readlines() if _matches(line, args.match)]
        sys.stdout.writelines(lines[-args.lines :])
        sys.stdout.flush()
        if args.no_follow:
            return EXIT_OK
        print(f"(following {path}; Ctrl-C to stop)", file=sys.stderr, flush=True)
        while True:
            line = log.readline()
            if not line:
                time.sleep(LOG_POLL_S)
                continue
            if _matches(line, args.match):
                sys.stdout.write(line)
                sys.stdout.flush()


LOG_POLL_S = 0.2
"""How often a followed log file is read for new lines."""


def cmd_logs(args: argparse.Namespace) -> int:
    journalctl = shutil.which("journalctl")
    if journalctl is not None and _journal_has_unit(journalctl):
        argv = [journalctl, "--unit", JOURNAL_UNIT, "--since", args.since, "--output", "short-iso"]
        if not args.no_follow:
            argv.append("--follow")
        argv.extend(args.match)
        sys.stdout.flush()
        os.execv(journalctl, argv)
    log_file = _log_file_of(args.config)
    if log_file is not None and log_file.is_file():
        try:
            return _print_log_file(log_file, args)
        except KeyboardInterrupt:
            return EXIT_OK
    journal = "the journal has no huxleyd lines" if journalctl else "journalctl not found"
    where = f"no {log_file}" if log_file else f"no readable config at {args.config} (--config)"
    print(
        f"huxleyctl: no logs: {journal}, and {where} (the daemon writes it when it runs "
        "without systemd)",
        file=sys.stderr,
    )
    return EXIT_FAILED
