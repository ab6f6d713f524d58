"""``python -m huxleyd.firstboot FILE``: huxleyd-firstboot.service's entry point.

Applies ``FILE`` (``/boot/firmware/huxleyd-setup.toml``) once, all or
nothing. Every field is checked first; then the changes are made with their
undo (:mod:`.transaction`). On success the file is wiped and
``huxleyd-setup.done.txt`` beside it says what was set. On any error the
system is as before, the file stays for the user to fix, and
``huxleyd-setup.error.txt`` beside it names the step or the key and the fix
(readable from the computer the card was written on); the journal has
``HUXLEY_EVENT=firstboot_failed``, and :data:`FAILURE_REPORT` tells the
daemon, which then says "setup failed" on every press, with its error cue
and LEDs, and in ``huxleyctl status``, instead of answering. No value from
the file is repeated in any of these: a key in the wrong field stays secret.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from huxleyd import logs
from huxleyd.firstboot.apply import StepFailed, apply_setup, wipe_file
from huxleyd.firstboot.setup_file import SetupError, decode_setup, parse_setup
from huxleyd.firstboot.transaction import write_file
from huxleyd.hardware.boards import available_boards

log = logs.get_logger("huxleyd.firstboot")

FAILURE_REPORT = "run/huxleyd-firstboot/failed"
"""Under the root: one line, why first boot failed, for the daemon
(``HUXLEYD_SETUP_FAILED_FILE`` in the image's unit points at it). On /run:
a boot that applies the file, or one without a file, has none."""


def run_command(argv: Sequence[str]) -> None:
    subprocess.run(list(argv), check=True)


def _fail(
    root: Path, setup_file: Path, what: str, detail: str, fix: str, *, undone: bool = True
) -> tuple[int, bool]:
    """Tell the user beside the file, the journal and the daemon; exit 1."""
    outcome = "nothing was changed" if undone else "some changes could NOT be undone"
    log.error("firstboot_failed", file=str(setup_file), step=what, error=detail, fix=fix)
    setup_file.with_name("huxleyd-setup.error.txt").write_text(
        f"huxleyd could not apply {setup_file.name}; {outcome}.\n\n"
        f"What failed: {what}\n{detail}\n\nFix: {fix}\n\n"
        "Then start the device again (docs/image.md has the format).\n"
    )
    report = root / FAILURE_REPORT
    report.parent.mkdir(parents=True, exist_ok=True)
    write_file(report, f"{setup_file.name}: {what}: {detail}\n".encode())
    return 1, False


def _apply_file(
    setup_file: Path, root: Path, share_hw: Path, run: Callable[[Sequence[str]], None]
) -> tuple[int, bool]:
    """(exit status, whether a reboot is due for new overlays)."""
    try:
        text = decode_setup(setup_file.read_bytes(), file=setup_file.name)
        setup = parse_setup(
            text,
            file=setup_file.name,
            boards=available_boards(share_hw),
            zoneinfo=root / "usr/share/zoneinfo",
        )
    except SetupError as exc:
        what = f"the setting {exc.key}" if exc.key else "reading the file"
        return _fail(root, setup_file, what, exc.problem, "correct the file as said above")
    except OSError as exc:
        return _fail(root, setup_file, "reading the file", str(exc), "write the file again")
    try:
        applied = apply_setup(
            setup, root=root, share_hw=share_hw, kernel=os.uname().release, run=run
        )
    except StepFailed as failed:
        detail = f"{type(failed.cause).__name__}: {failed.cause}"
        if failed.rollback_failures:  # never claim "nothing was changed" when it was
            detail += "\nNOT undone: " + "; ".join(failed.rollback_failures)
            log.error("firstboot_rollback_incomplete", failures=failed.rollback_failures)
        return _fail(
            root,
            setup_file,
            f"the step {failed.step!r}",
            detail,
            failed.fix,
            undone=not failed.rollback_failures,
        )
    wipe_file(setup_file)
    setup_file.with_name("huxleyd-setup.error.txt").unlink(missing_ok=True)
    (root / FAILURE_REPORT).unlink(missing_ok=True)
    setup_file.with_name("huxleyd-setup.done.txt").write_text(
        f"huxleyd applied {setup_file.name} at first boot and removed it (the key with it).\n"
        + "".join(f"- {line}\n" for line in applied.done)
    )
    log.info("firstboot_applied", **setup.summary(), reboot=applied.reboot_needed)
    return 0, applied.reboot_needed


def main(
    argv: Sequence[str] | None = None,
    *,
    run: Callable[[Sequence[str]], None] = run_command,
) -> int:
    parser = argparse.ArgumentParser(prog="python -m huxleyd.firstboot", description=__doc__)
    parser.add_argument("file", type=Path, help="the setup file on the firmware partition")
    parser.add_argument("--root", type=Path, default=Path("/"), help="the system to change")
    parser.add_argument("--share-hw", type=Path, default=Path("/opt/huxleyd/share/hw"))
    parser.add_argument("--no-reboot", action="store_true", help="never reboot for new overlays")
    args = parser.parse_args(argv)
    logs.setup("INFO")
    code, reboot = _apply_file(args.file, args.root, args.share_hw, run)
    if reboot and not args.no_reboot:
        log.info("firstboot_reboot", reason="the board's device-tree overlays take effect at boot")
        run(["systemctl", "reboot", "--no-block"])
    return code


if __name__ == "__main__":
    sys.exit(main())
