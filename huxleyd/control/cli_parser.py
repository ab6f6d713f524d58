"""``huxleyctl``'s command line: its commands and options, and its exit statuses.

One table (:func:`build_parser`) that :func:`huxleyd.control.cli.main` parses
with; ``--socket``/``--config``/``--timeout`` are accepted before or after the
command. A usage error is one line and exit status :data:`EXIT_USAGE`. ::

    args = build_parser().parse_args(["volume", "40"])   # args.level == 40
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

from huxleyd.control.protocol import PttAction

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3

DEFAULT_CONFIG = Path("/etc/huxleyd/huxleyd.toml")

_MATCH_RE = re.compile(r"^[A-Z0-9_]+=.*$")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (argparse prints the whole usage first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _volume_level(text: str) -> int:
    try:
        level = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer 0-100, got {text!r}") from None
    if not 0 <= level <= 100:
        raise argparse.ArgumentTypeError(f"expected an integer 0-100, got {text!r}")
    return level


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r} ({exc})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def _positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return seconds


def _journal_match(text: str) -> str:
    if not _MATCH_RE.match(text):
        raise argparse.ArgumentTypeError(
            f"expected FIELD=VALUE (e.g. HUXLEY_TOOL=set_volume), got {text!r}"
        )
    return text


def _common_options(*, suppress: bool) -> _Parser:
    """--socket/--config/--timeout, accepted before or after the command."""
    common = _Parser(add_help=False)

    def default(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    common.add_argument("--socket", type=Path, default=default(None), help="control socket path")
    common.add_argument(
        "--config",
        type=Path,
        default=default(DEFAULT_CONFIG),
        # Spelled out, not %(default)s: the subcommands' copy of this option
        # defaults to SUPPRESS, and argparse would fail to format their --help.
        help=f"daemon config to read the socket path from (default: {DEFAULT_CONFIG})",
    )
    common.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=default(30.0),
        help="seconds to wait for the daemon's answer",
    )
    return common


def version_line() -> str:
    """``huxleyctl --version``: this CLI's version and the release it runs from,
    which is the daemon's too (one link switches both: huxleyd.update)."""
    from huxleyd import __version__
    from huxleyd.update import running_release

    release = running_release()
    where = f" (release {release}, {sys.prefix})" if release else f" ({sys.prefix})"
    return f"huxleyctl {__version__}{where}"


# longer than 50 lines: one table, every command and option in the order --help lists them
def build_parser() -> argparse.ArgumentParser:
    """``huxleyctl``'s commands and options (the README's command list is tested against it)."""
    parser = _Parser(
        prog="huxleyctl",
        description="Talk to a running huxleyd.",
        epilog=(
            "exit status: 0 ok, 1 the daemon refused or failed the command (or a doctor "
            "check failed), 2 usage, 3 the daemon is not reachable"
        ),
        parents=[_common_options(suppress=False)],
    )
    parser.add_argument("--version", action="version", version=version_line())
    common = [_common_options(suppress=True)]
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_text, description=help_text, parents=common)

    command("status", "show what the daemon is doing").add_argument(
        "--json", action="store_true", help="print the raw result"
    )
    command("volume", "print the volume, or set it").add_argument(
        "level", nargs="?", type=_volume_level, metavar="N", help="new volume, 0-100"
    )
    command("mute", "close the microphone (on), reopen it (off), or show it").add_argument(
        "state", nargs="?", choices=["on", "off", "status"], default="status"
    )
    say = command("say", "start a text turn, as if spoken, and print the answer")
    say.add_argument("text", nargs="+", metavar="TEXT")
    say.add_argument(
        "--no-wait", action="store_true", help="print the turn id at once, not the answer"
    )
    command("stop", "stop the media that is playing")
    announce = command("announce", "speak a text on a room's speaker, or on every speaker")
    where = announce.add_mutually_exclusive_group(required=True)
    where.add_argument("--room", metavar="R", help="the room whose speaker says it (kitchen)")
    where.add_argument("--all", action="store_true", help="every speaker of the household")
    announce.add_argument("text", nargs="+", metavar="TEXT")
    skills = command("skills", "list loaded skills; install or remove a skill package")
    skills.add_argument("--json", action="store_true", help="print the raw result")
    skills.add_argument(
        "action",
        nargs="?",
        choices=["install", "remove", "repair"],
        help="change the skills environment (repair: put huxleyd's SDK back in it)",
    )
    skills.add_argument("package", nargs="?", metavar="PACKAGE", help="e.g. huxley-skill-reminders")
    skills.add_argument("--index-url", help="pip index (default: pip's configuration)")
    skills.add_argument(
        "--find-links", action="append", default=[], metavar="DIR", help="also look here (pip)"
    )
    skills.add_argument("--no-index", action="store_true", help="only --find-links (pip)")
    skills.add_argument(
        "--allow-sdist",
        action="store_true",
        help="build source packages (as an unprivileged user; default: wheels only)",
    )
    skills.add_argument(
        "--allow-url", action="store_true", help="accept a URL or a path as PACKAGE or a dependency"
    )
    skills.add_argument(
        "--allow-name",
        action="append",
        default=[],
        metavar="SKILL",
        help="let the package register a first-party skill's name too (e.g. timers)",
    )
    command("ptt", "drive the push-to-talk button").add_argument(
        "action", choices=[a.value for a in PttAction]
    )
    command("levels", "live mic/output level meter").add_argument(
        "--seconds", type=_positive_seconds, help="stop after S seconds (default: Ctrl-C)"
    )
    doctor = command(
        "doctor",
        "diagnose the device: asks the running daemon, else checks the config "
        "(exit 1 if a check fails)",
    )
    doctor.add_argument("--json", action="store_true", help="print the raw result")
    doctor.add_argument(
        "--key-file",
        type=Path,
        default=None,
        help="without a daemon: the key file it would be started with (huxleyd --key-file)",
    )
    event = command("event", "send a Huxley client event to the skills subscribed to KEY")
    event.add_argument("key", metavar="KEY")
    event.add_argument("data", nargs="?", type=_json_object, metavar="JSON", help="its data")
    watch = command("watch", "follow the conversation: state, transcripts, tools, media")
    watch.add_argument("--json", action="store_true", help="one JSON object per event")
    watch.add_argument(
        "--seconds", type=_positive_seconds, help="stop after S seconds (default: Ctrl-C)"
    )
    command(
        "update",
        "install huxleyd from a bundle file (make bundle); switch to it only if it "
        "starts, else go back (root)",
    ).add_argument("bundle", type=Path, metavar="BUNDLE")
    command(
        "reboot-if-idle",
        "reboot for pending security updates if the persona allows it and the device "
        "is idle, else say why it waits (root; run by huxleyd-reboot.timer)",
    )
    logs = command("logs", "follow the daemon's journal, or its log file without systemd")
    logs.add_argument("--since", default="10 min ago", help="start time (default: %(default)s)")
    logs.add_argument("--no-follow", action="store_true", help="print and exit")
    logs.add_argument(
        "--lines",
        type=int,
        default=50,
        help="without a journal: how many lines of the log file to show first (default: %(default)s)",
    )
    logs.add_argument(
        "match", nargs="*", type=_journal_match, metavar="MATCH", help="e.g. HUXLEY_TOOL=set_volume"
    )
    return parser
