"""``huxleyctl``: talk to a running huxleyd over its control socket.

::

    huxleyctl status [--json]         state, provider, media, volume, xruns, timings
    huxleyctl volume [N]              print the volume, or set it (0-100)
    huxleyctl mute [on|off|status]    close the microphone (no wake word, no turns), or reopen it
    huxleyctl say TEXT...             start a text turn, as if spoken; print the answer
    huxleyctl stop                    stop the media that is playing
    huxleyctl skills [--json]         loaded skills and their tools
    huxleyctl skills install PACKAGE  add a Huxley skill package to the skills environment
                                      (wheels only; --allow-sdist, --allow-url to widen)
    huxleyctl skills remove PACKAGE   remove it (see huxleyd.control.install.skillpkgs)
    huxleyctl skills repair           put huxleyd's SDK back into the skills environment
    huxleyctl ptt press|release|tap   drive the push-to-talk button
    huxleyctl levels [--seconds S]    live mic/output meter (Ctrl-C to stop)
    huxleyctl doctor [--json]         diagnose config, key, audio, GPIO, network, disk
    huxleyctl event KEY [JSON]        a Huxley client event for the skills (docs/skills.md)
    huxleyctl announce --room R|--all TEXT...  speak TEXT on the household's speakers (docs/home.md)
    huxleyctl logs [MATCH...]         follow the daemon's journal (or its log file)
    huxleyctl watch [--json]          follow the conversation: state, transcripts, tools, media
    huxleyctl update BUNDLE           install huxleyd from a file, keep it only if it starts (root)
    huxleyctl reboot-if-idle          reboot for pending security updates, if the persona
                                      allows it and the device is idle (root; the image's timer)

The socket is ``--socket PATH``, else ``[control] socket_path`` of
``--config`` (default /etc/huxleyd/huxleyd.toml) when that file exists,
else /run/huxleyd/control.sock.

Exit status: 0 ok; 1 the daemon refused or failed the command (and
``doctor`` when a check failed; ``logs`` with neither a journal nor a log
file; ``say`` when the turn did not end within the timeout); 2 usage;
3 the daemon is not reachable (not running, or no permission on the socket).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from huxleyd.config.control_socket import ControlSettings
from huxleyd.control.client import ControlClient
from huxleyd.control.errors import (
    CommandFailedError,
    ControlProtocolError,
    DaemonUnreachableError,
)
from huxleyd.control.protocol import MAX_SAY_CHARS, Command, PttAction

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3

DEFAULT_CONFIG = Path("/etc/huxleyd/huxleyd.toml")
JOURNAL_UNIT = "huxleyd"
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


def build_parser() -> argparse.ArgumentParser:
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


def missing_config(config_path: Path, *, socket_given: bool) -> str | None:
    """Why a ``--config`` typed by hand cannot be used (None: it can, or it is the
    default, or ``--socket`` says where to connect): a typo there is a missing
    file, never "huxleyd is not running"."""
    if socket_given or config_path == DEFAULT_CONFIG:
        return None
    try:
        if config_path.is_file():
            return None
        if config_path.exists():
            return f"--config {config_path}: not a file"
    except PermissionError:
        return None  # the socket will say "permission denied" with the fix
    return (
        f"--config {config_path}: no such file (check the path; the daemon's is {DEFAULT_CONFIG})"
    )


def resolve_socket(socket_arg: Path | None, config_path: Path) -> ControlSettings:
    """The control settings to connect with: ``--socket`` wins, then the
    config file's ``[control]`` table, then the defaults."""
    settings = ControlSettings()
    try:
        readable_config = config_path.is_file()
    except PermissionError:
        # /etc/huxleyd may be closed to users outside the group; the socket
        # will then say "permission denied" with the fix.
        readable_config = False
    if readable_config:
        settings = _control_settings_from(config_path, settings)
    if socket_arg is not None:
        settings = ControlSettings(socket_path=socket_arg, socket_group=settings.socket_group)
    return settings


def _control_settings_from(path: Path, fallback: ControlSettings) -> ControlSettings:
    from huxleyd.config.load import load_config, read_toml, resolve_paths
    from huxleyd.errors import ConfigError
    from huxleyd.schema import build

    try:
        return load_config(path).control
    except ConfigError:
        pass  # the rest of the file may be broken; the socket path may still be fine
    try:
        table = read_toml(path).get("control", {})
        if not isinstance(table, dict):
            raise ConfigError(str(path), "control", "expected a table [control]")
        control = build(ControlSettings, table, file=str(path), prefix="control")
        return resolve_paths(control, path.parent)
    except ConfigError as exc:
        # Unreadable is normal for a user outside the group: the socket
        # will say "permission denied" more usefully than this would.
        if exc.problem != "permission denied":
            print(f"huxleyctl: warning: {exc}; using {fallback.socket_path}", file=sys.stderr)
        return fallback


# -- commands ---------------------------------------------------------------------


def _console() -> Any:
    from rich.console import Console

    return Console(highlight=False)


def _print_json(result: Mapping[str, Any]) -> None:
    print(json.dumps(result, indent=2, ensure_ascii=False))


def cmd_status(client: ControlClient, args: argparse.Namespace) -> int:
    if args.json:
        _print_json(client.call(Command.STATUS))
        return EXIT_OK
    from huxleyd.control.render import status_table

    _console().print(status_table(client.status()))
    return EXIT_OK


def cmd_volume(client: ControlClient, args: argparse.Namespace) -> int:
    level = client.get_volume() if args.level is None else client.set_volume(args.level)
    print(level)
    return EXIT_OK


def cmd_mute(client: ControlClient, args: argparse.Namespace) -> int:
    muted = client.muted(None if args.state == "status" else args.state == "on")
    print("muted: the microphone is closed" if muted else "not muted")
    return EXIT_OK


def cmd_say(client: ControlClient, args: argparse.Namespace) -> int:
    if args.no_wait:
        print(f"turn {client.say(args.say_text)}")
        return EXIT_OK
    # Listen first, on a second connection, so no word of the answer is missed.
    with ControlClient(client.path, timeout_s=client.timeout_s, group=args.socket_group) as feed:
        events = feed.watch(duration_s=args.timeout)
        next(events, None)  # "watching": subscribed, nothing of the turn can be missed
        turn = client.say(args.say_text)
        said = False
        for event in events:
            if event.turn != turn:
                continue
            if event.kind == "said":
                print(event.fields.get("text"), flush=True)
                said = True
            elif event.kind == "result" and event.fields.get("error"):
                print(f"(tool {event.fields.get('name')} failed: {event.fields.get('error')})")
            elif event.kind == "turn":
                outcome = event.fields.get("outcome")
                if outcome != "answered" or not said:
                    print(
                        f"(turn {turn}: {outcome}, no spoken answer)"
                        if not said
                        else f"(turn {turn}: {outcome})"
                    )
                return EXIT_OK if outcome == "answered" else EXIT_FAILED
    print(
        f"huxleyctl: say: turn {turn} did not end within {args.timeout:g} s "
        "(huxleyctl watch shows what it does)",
        file=sys.stderr,
    )
    return EXIT_FAILED


def cmd_watch(client: ControlClient, args: argparse.Namespace) -> int:
    from huxleyd.control.render import watch_line

    if not args.json:
        print("(Ctrl-C to stop)", file=sys.stderr, flush=True)
    for event in client.watch(duration_s=args.seconds):
        if args.json:
            print(json.dumps(event.to_dict(), ensure_ascii=False), flush=True)
        else:
            print(watch_line(event), flush=True)
    return EXIT_OK


def cmd_stop(client: ControlClient, args: argparse.Namespace) -> int:
    print("stopped" if client.stop() else "nothing was playing")
    return EXIT_OK


def cmd_skills(client: ControlClient, args: argparse.Namespace) -> int:
    if args.json:
        _print_json(client.call(Command.SKILLS))
        return EXIT_OK
    from huxleyd.control.render import skills_table

    _console().print(skills_table(client.skills()))
    return EXIT_OK


def cmd_ptt(client: ControlClient, args: argparse.Namespace) -> int:
    client.ptt(PttAction(args.action))
    print(f"ptt {args.action}")
    return EXIT_OK


def cmd_levels(client: ControlClient, args: argparse.Namespace) -> int:
    from rich.live import Live

    from huxleyd.control.handler import LevelsSample
    from huxleyd.control.render import levels_line, levels_meter

    console = _console()
    samples = client.levels(duration_s=args.seconds)
    if not console.is_terminal:
        for sample in samples:
            print(levels_line(sample), flush=True)
        return EXIT_OK
    peak = LevelsSample(-120.0, -120.0)
    with Live(console=console, refresh_per_second=20, transient=False) as live:
        for sample in samples:
            peak = LevelsSample(
                max(peak.mic_dbfs, sample.mic_dbfs), max(peak.output_dbfs, sample.output_dbfs)
            )
            live.update(levels_meter(sample, peak))
    return EXIT_OK


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


def cmd_event(client: ControlClient, args: argparse.Namespace) -> int:
    delivered = client.client_event(args.key, args.data)
    print(f"delivered to {', '.join(delivered)}" if delivered else f"no skill handled {args.key!r}")
    return EXIT_OK if delivered else EXIT_FAILED


def cmd_announce(client: ControlClient, args: argparse.Namespace) -> int:
    """Each room's outcome, one line each; exit 1 when any room did not take it."""
    lines = client.announce(args.say_text, None if args.all else args.room)
    for line in lines:
        print(line)
    return (
        EXIT_OK
        if lines and all(": will be" in x or ": spoken" in x for x in lines)
        else EXIT_FAILED
    )


_COMMANDS: dict[str, Callable[[ControlClient, argparse.Namespace], int]] = {
    "announce": cmd_announce,
    "event": cmd_event,
    "status": cmd_status,
    "volume": cmd_volume,
    "mute": cmd_mute,
    "say": cmd_say,
    "stop": cmd_stop,
    "skills": cmd_skills,
    "ptt": cmd_ptt,
    "levels": cmd_levels,
    "watch": cmd_watch,
}


def _skills_env_owner(root: Path) -> int:
    """The owner of the skills environment, or of the folder it will be made in."""
    here = root
    while not here.exists() and here != here.parent:
        here = here.parent
    return here.stat().st_uid


def cmd_skill_package(args: argparse.Namespace) -> int:
    """``skills install|remove|repair``: works on the skills environment, no daemon needed."""
    from huxleyd.skillhost.sdkcheck import sdk_problem
    from huxleyd.skillhost.skillenv import skills_env

    env = skills_env()
    owner = _skills_env_owner(env.root)
    if os.geteuid() not in (0, owner):  # a developer's own checkout is theirs to change
        print(
            f"huxleyctl: skills {args.action} is root's: the skills environment "
            f"{env.root} belongs to uid {owner}; run it with sudo",
            file=sys.stderr,
        )
        return EXIT_FAILED
    problem = sdk_problem() if args.action in ("install", "repair") else None
    if problem is not None:  # before anything is copied from a foreign SDK
        print(f"huxleyctl: skills {args.action}: {problem}; nothing was installed", file=sys.stderr)
        return EXIT_FAILED
    from huxleyd.control.install.skillpkgs import (
        IndexOptions,
        Policy,
        SkillPackageError,
        install,
        remove,
    )
    from huxleyd.control.install.skillsbase import BaseError, repair

    try:
        if args.action == "install":
            index = IndexOptions(args.index_url, tuple(args.find_links), args.no_index)
            policy = Policy(args.allow_sdist, args.allow_url, tuple(args.allow_name))
            lines = install(args.package, index, policy, env).lines
        elif args.action == "repair":
            lines = repair(env)
        else:
            lines = remove(args.package, env).lines
    except (SkillPackageError, BaseError) as exc:
        print(f"huxleyctl: skills {args.action}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    for line in lines:
        print(line)
    return EXIT_OK


def _say_if_sdk_broken(args: argparse.Namespace) -> None:
    """One line when huxley_sdk is not ours (``doctor`` and ``skills install`` say it their way)."""
    if args.command == "doctor" or (args.command == "skills" and args.action == "install"):
        return
    from huxleyd.skillhost.sdkcheck import sdk_problem

    problem = sdk_problem()
    if problem is not None:
        print(f"huxleyctl: {problem}", file=sys.stderr)


def _daemon_status() -> tuple[str, str] | None:
    """The running daemon's provider state and detail, or None if it does not answer."""
    from huxleyd.control.client import ControlClient
    from huxleyd.update import Layout

    control = resolve_socket(None, Path(Layout().config))
    try:
        with ControlClient(
            control.socket_path, timeout_s=10.0, group=control.socket_group
        ) as client:
            report = client.status()
    except Exception:
        return None
    return report.provider_state, report.provider_detail


def cmd_update(bundle: Path) -> int:
    from huxleyd import logs as journal
    from huxleyd.update import HEALTH_WINDOW_S, BundleError, UpdateFailed, systemd_probe, update

    journal.setup("INFO")  # update_started, update_rolled_back... in the journal
    # A dropped SSH session must not end it half-way (between the switch and
    # the health verdict): the verdict and a rollback still happen.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    _say_safely(
        f"huxleyctl: update: installing {bundle}; once it runs, it must stay healthy "
        f"for {HEALTH_WINDOW_S:.0f} s (else the previous version comes back)"
    )
    try:
        version = update(bundle, probe=systemd_probe(_daemon_status))
    except BundleError as exc:
        print(f"huxleyctl: update: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except UpdateFailed as exc:
        print(f"huxleyctl: update: {exc}", file=sys.stderr)
        return EXIT_FAILED
    _say_safely(f"huxleyd {version} is running and healthy (the previous version is kept)")
    return EXIT_OK


def _say_safely(line: str) -> None:
    """Print; a terminal that went away (SIGHUP ignored) is not an error."""
    with contextlib.suppress(OSError):
        print(line, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _say_if_sdk_broken(args)
    if args.command == "logs":
        return cmd_logs(args)
    if args.command == "update":  # no daemon needed: it restarts it
        return cmd_update(args.bundle)
    if args.command == "skills" and args.action is not None:
        if not args.package and args.action != "repair":
            parser.error(f"skills {args.action}: PACKAGE is missing")
        return cmd_skill_package(args)
    if args.command in ("say", "announce"):
        name = args.command
        args.say_text = " ".join(args.text).strip()
        if not args.say_text:
            parser.error(f"{name}: TEXT is empty")
        if len(args.say_text) > MAX_SAY_CHARS:
            parser.error(f"{name}: TEXT is longer than {MAX_SAY_CHARS} characters")
        if any("\ud800" <= ch <= "\udfff" for ch in args.say_text):  # argv's undecodable bytes
            parser.error(f"{name}: TEXT is not UTF-8 text (check the terminal's locale)")
    missing = missing_config(args.config, socket_given=args.socket is not None)
    if missing is not None:
        print(f"huxleyctl: {missing}", file=sys.stderr)
        return EXIT_USAGE
    control = resolve_socket(args.socket, args.config)
    args.socket_group = control.socket_group
    if args.command == "reboot-if-idle":  # a daemon that is down is a reason to wait
        from huxleyd.control.reboot import cmd_reboot_if_idle

        return cmd_reboot_if_idle(control, timeout_s=args.timeout)
    if args.command == "doctor":  # runs without a daemon too
        from huxleyd.control.doctor_cli import run_doctor

        return run_doctor(args, control)
    try:
        with ControlClient(
            control.socket_path, timeout_s=args.timeout, group=control.socket_group
        ) as client:
            return _COMMANDS[args.command](client, args)
    except DaemonUnreachableError as exc:
        print(f"huxleyctl: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except (CommandFailedError, ControlProtocolError) as exc:
        print(f"huxleyctl: {args.command}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        # Ctrl-C is how `levels` and `watch` end; for the rest, the shell's convention.
        return EXIT_OK if args.command in ("levels", "watch") else 130
    except BrokenPipeError:
        # `huxleyctl levels | head`: the reader left. Point stdout at
        # /dev/null so the interpreter's final flush does not complain.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
