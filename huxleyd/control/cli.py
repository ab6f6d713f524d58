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
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from huxleyd.config.control_socket import ControlSettings
from huxleyd.control.cli_logs import cmd_logs
from huxleyd.control.cli_parser import (
    DEFAULT_CONFIG,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    build_parser,
)
from huxleyd.control.client import ControlClient
from huxleyd.control.errors import (
    CommandFailedError,
    ControlProtocolError,
    DaemonUnreachableError,
)
from huxleyd.control.protocol import MAX_SAY_CHARS, Command, PttAction


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


def _spoken_text(parser: argparse.ArgumentParser, name: str, words: Sequence[str]) -> str:
    """The TEXT of ``say``/``announce`` as one line; a usage error if it cannot be said."""
    text = " ".join(words).strip()
    if not text:
        parser.error(f"{name}: TEXT is empty")
    if len(text) > MAX_SAY_CHARS:
        parser.error(f"{name}: TEXT is longer than {MAX_SAY_CHARS} characters")
    if any("\ud800" <= ch <= "\udfff" for ch in text):  # argv's undecodable bytes
        parser.error(f"{name}: TEXT is not UTF-8 text (check the terminal's locale)")
    return text


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
        args.say_text = _spoken_text(parser, args.command, args.text)
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
