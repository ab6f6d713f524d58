"""``python -m huxleyd.firstboot FILE``: huxleyd-firstboot.service's entry point.

Applies ``FILE`` (``/boot/firmware/huxleyd-setup.toml``) once: on success
the file is wiped and ``huxleyd-setup.done.txt`` beside it says what was
set; on an error nothing is applied, ``huxleyd-setup.error.txt`` beside it
names the key and what was expected (readable from the computer the card
was written on), the journal has ``HUXLEY_EVENT=firstboot_failed`` and the
board's LEDs blink the error pattern for a while.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from huxleyd import logs
from huxleyd.firstboot.apply import apply_setup, wipe_file
from huxleyd.firstboot.setup_file import SetupError, parse_setup
from huxleyd.hardware.boards import available_boards

log = logs.get_logger("huxleyd.firstboot")

ERROR_BLINK_S = 20.0
"""How long the LEDs blink the error before the daemon starts and takes them over."""


def run_command(argv: Sequence[str]) -> None:
    subprocess.run(list(argv), check=True)


def blink_error(config_path: Path, board: str | None, sleep: Callable[[float], None]) -> None:
    """The error pattern on the board's LEDs, for :data:`ERROR_BLINK_S` (best effort)."""
    try:
        from huxleyd.config import load_config
        from huxleyd.hardware.boards import load_board
        from huxleyd.hardware.led_drivers import make_led_driver
        from huxleyd.hardware.led_patterns import DEFAULT_PATTERNS, LedState
        from huxleyd.hardware.pins import choose_pin_factory

        config = load_config(config_path)
        profile = load_board(board or config.hardware.board, config.hardware.boards_dir)
        factory, _ = choose_pin_factory(config.hardware)
        driver = make_led_driver(profile.leds, pin_factory=factory)
        driver.show(DEFAULT_PATTERNS[LedState.ERROR], 0.0)
        sleep(ERROR_BLINK_S)
        driver.close()
    except Exception as exc:  # the journal and the error file still say it
        log.warning("firstboot_leds_unavailable", error=str(exc))


def main(
    argv: Sequence[str] | None = None,
    *,
    run: Callable[[Sequence[str]], None] = run_command,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    parser = argparse.ArgumentParser(prog="python -m huxleyd.firstboot", description=__doc__)
    parser.add_argument("file", type=Path, help="the setup file on the firmware partition")
    parser.add_argument("--root", type=Path, default=Path("/"), help="the system to change")
    parser.add_argument("--share-hw", type=Path, default=Path("/opt/huxleyd/share/hw"))
    parser.add_argument("--no-reboot", action="store_true", help="never reboot for new overlays")
    args = parser.parse_args(argv)
    logs.setup("INFO")
    setup_file: Path = args.file
    error_file = setup_file.with_name("huxleyd-setup.error.txt")
    config_path = args.root / "etc/huxleyd/huxleyd.toml"
    try:
        text = setup_file.read_text(encoding="utf-8-sig")  # Notepad writes a BOM
        setup = parse_setup(
            text,
            file=setup_file.name,
            boards=available_boards(args.share_hw),
            zoneinfo=args.root / "usr/share/zoneinfo",
        )
    except (SetupError, OSError, UnicodeDecodeError) as exc:
        key = exc.key if isinstance(exc, SetupError) else ""
        log.error("firstboot_failed", file=str(setup_file), key=key, error=str(exc))
        error_file.write_text(
            f"huxleyd could not apply {setup_file.name}; nothing was changed.\n\n{exc}\n\n"
            "Fix the file and start the device again (docs/image.md has the format).\n"
        )
        blink_error(config_path, None, sleep)
        return 1
    applied = apply_setup(
        setup, root=args.root, share_hw=args.share_hw, kernel=os.uname().release, run=run
    )
    wipe_file(setup_file)
    error_file.unlink(missing_ok=True)
    setup_file.with_name("huxleyd-setup.done.txt").write_text(
        f"huxleyd applied {setup_file.name} at first boot and removed it (the key with it).\n"
        + "".join(f"- {line}\n" for line in applied.done)
    )
    log.info("firstboot_applied", **setup.summary(), reboot=applied.reboot_needed)
    if applied.reboot_needed and not args.no_reboot:
        log.info("firstboot_reboot", reason="the board's device-tree overlays take effect at boot")
        run(["systemctl", "reboot", "--no-block"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
