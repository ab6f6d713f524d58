"""``huxleyctl doctor``: ask the running daemon, or check the configuration without it.

With a daemon, its answer says what it really uses (the key file it read,
the volume it drives, its pins, its open card). Without one (not running,
crashing at start) the same checks run here, on the configuration resolved
as the daemon's start resolves it, so doctor helps exactly when the daemon
does not start. Either way the unit's state under systemd is read here.

Exit status: 0 when nothing failed (warnings and skipped checks included),
1 when a check failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from huxleyd.config.control_socket import ControlSettings
from huxleyd.control.client import ControlClient
from huxleyd.control.doctor import check_sdk, check_systemd_unit
from huxleyd.control.errors import CommandFailedError, DaemonUnreachableError
from huxleyd.control.handler import DoctorCheck
from huxleyd.errors import HuxleydError

EXIT_OK = 0
EXIT_FAILED = 1


def checks_without_daemon(config_path: Path, key_file: Path | None) -> list[DoctorCheck]:
    """Every check, from the configuration alone (the daemon is not running)."""
    from huxleyd.config.load import load_config
    from huxleyd.control.diagnose import doctor_checks, offline_facts
    from huxleyd.control.doctor import run_checks

    try:
        config = load_config(config_path)
    except HuxleydError as exc:
        fix = f"edit it, then run: huxleyd --check-config --config {config_path}"
        return [DoctorCheck.failed("config", " ".join(str(exc).split()), fix)]
    try:
        facts = offline_facts(config, key_file=key_file)
    except HuxleydError as exc:
        return [DoctorCheck.failed("config", " ".join(str(exc).split()), f"edit {config_path}")]
    return asyncio.run(run_checks(doctor_checks(config_path, config, facts, key_file=key_file)))


def run_doctor(args: argparse.Namespace, control: ControlSettings) -> int:
    """``huxleyctl doctor [--json] [--key-file PATH]``."""
    source: str
    sdk = check_sdk()
    try:
        with ControlClient(
            control.socket_path, timeout_s=args.timeout, group=control.socket_group
        ) as client:
            checks = client.doctor()
        source = f"the running daemon ({control.socket_path})"
    except CommandFailedError as exc:  # refused (rights) or failed: say it, no traceback
        print(f"huxleyctl: doctor: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except DaemonUnreachableError as exc:
        source = f"{args.config}, without the daemon ({' '.join(str(exc).split())})"
        # The other checks load the configuration, which imports huxley_sdk.
        checks = (
            checks_without_daemon(args.config, getattr(args, "key_file", None)) if sdk.ok else []
        )
    checks += [sdk, check_systemd_unit()]
    failed = any(not c.ok for c in checks)
    if args.json:
        print(json.dumps({"source": source, "checks": [c.to_dict() for c in checks]}, indent=2))
        return EXIT_FAILED if failed else EXIT_OK
    from rich.console import Console

    from huxleyd.control.render import doctor_line

    console = Console(highlight=False, soft_wrap=True)
    console.print(f"checked: {source}", style="dim", markup=False)
    for check in checks:
        console.print(doctor_line(check), soft_wrap=True)
    if failed:
        print("huxleyctl: doctor: a check failed", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK
