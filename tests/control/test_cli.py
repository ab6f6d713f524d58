"""``huxleyctl`` run as a subprocess against a server with the recording fake.

Only the socket path ties the CLI to the fake: the same commands run
against the real daemon.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import stat
import sys
import time
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from huxleyd.config.control_socket import ControlSettings
from huxleyd.control.errors import CommandFailedError
from huxleyd.control.handler import DoctorCheck, StatusReport
from huxleyd.control.protocol import PttAction
from huxleyd.control.server import ControlServer
from huxleyd.control.watch import WatchEvent
from tests.fakes.control_handler import FakeControlHandler

from .threaded import READERS_GID, TEST_RIGHTS, huxleyctl, serve_in_thread


@pytest.fixture
def fake() -> FakeControlHandler:
    return FakeControlHandler(sample_interval_s=0.02)


@pytest.fixture
def daemon(fake: FakeControlHandler, sock_path: Path) -> Iterator[ControlServer]:
    settings = ControlSettings(socket_path=sock_path, socket_group=None)
    with serve_in_thread(fake, settings) as server:
        yield server


def test_status_json(daemon: ControlServer, fake: FakeControlHandler) -> None:
    done = huxleyctl("status", "--json", socket_path=daemon.path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    report = StatusReport.from_dict(result)
    assert report.volume == 55 and report.state == "idle" and report.is_simulator
    assert report.media == "Moby Dick, chapter 3"
    assert report.xruns.late_periods == 4
    assert result["last_turn_timings_ms"] == {
        "release_to_commit": 1.5,
        "commit_to_first_audio": 640.0,
    }
    assert fake.called("status") == [None]


def test_status_table(daemon: ControlServer, fake: FakeControlHandler) -> None:
    fake.playing = "[Radio] Jazz FM"  # brackets must print as they are, not as markup
    done = huxleyctl("status", socket_path=daemon.path)
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())  # the table wraps long cells
    for expected in (
        "idle",
        "sim, connected",
        "simulator, not an AI",
        "[Radio] Jazz FM",
        "1 h 02 min 05 s",
        "4 late periods (the audio thread missed its deadline)",
        "2 underruns (the speaker ran dry",
        "1 overrun (the mic overflowed",
        "t-0003",
        "commit_to_first_audio",
        "640.0 ms",
    ):
        assert expected in out, f"{expected!r} missing from:\n{out}"


def test_status_explains_offline_and_when_the_next_try_is(
    daemon: ControlServer, fake: FakeControlHandler
) -> None:
    fake.is_simulator = False
    fake.provider_state = "offline"
    fake.provider_attempt = 4
    fake.provider_detail = "connection refused by api.openai.com"
    fake.provider_retry_in_s = 30.0
    done = huxleyctl("status", socket_path=daemon.path)
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())
    assert "openai, offline" in out
    assert "4 tries failed in a row" in out
    assert "last error: connection refused by api.openai.com" in out
    assert "next try in 30 s" in out
    as_json = json.loads(huxleyctl("status", "--json", socket_path=daemon.path).stdout)
    assert StatusReport.from_dict(as_json).provider_retry_in_s == 30.0


def test_status_of_a_healthy_device_says_so(
    daemon: ControlServer, fake: FakeControlHandler
) -> None:
    from huxleyd.control.handler import XrunCounts
    from huxleyd.control.render import provider_explanation, xruns_in_words

    assert xruns_in_words(XrunCounts()) == "no glitches since start"
    split = XrunCounts(underruns=11, card_underruns=9, speaker_dropouts=2)
    assert xruns_in_words(split).startswith(
        "11 underruns (the speaker ran dry: a click or a gap was heard) "
        "[9 at the card, 2 fed silence with audio queued]"
    )
    heard = XrunCounts(silences={"late_source": 2, "late_source_ms": 45.0, "reopens": 1})
    assert xruns_in_words(heard) == (  # counted once, by cause, with the stamped lengths
        "silences heard inside replies: 2 late source (a delta was late) (45 ms), 1 reopen"
    )
    fake.is_simulator = False
    done = huxleyctl("status", socket_path=daemon.path)
    assert "next try" not in done.stdout and "tries failed" not in done.stdout
    assert (
        provider_explanation(
            StatusReport.from_dict(
                json.loads(huxleyctl("status", "--json", socket_path=daemon.path).stdout)
            )
        )
        == ""
    )


def test_volume_get_and_set(daemon: ControlServer, fake: FakeControlHandler) -> None:
    got = huxleyctl("volume", socket_path=daemon.path)
    assert (got.returncode, got.stdout) == (0, "55\n")
    done = huxleyctl("volume", "30", socket_path=daemon.path)
    assert (done.returncode, done.stdout) == (0, "30\n")
    assert fake.called("set_volume") == [30]
    assert fake.volume == 30


@pytest.mark.parametrize("bad", ["130", "-5", "loud", "30.5"])
def test_volume_out_of_range_is_a_usage_error(
    daemon: ControlServer, fake: FakeControlHandler, bad: str
) -> None:
    done = huxleyctl("volume", "--", bad, socket_path=daemon.path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"expected an integer 0-100, got {bad!r}" in lines[0]
    assert fake.called("set_volume") == []


def test_say_joins_the_words_and_prints_the_answer(
    daemon: ControlServer, fake: FakeControlHandler
) -> None:
    done = huxleyctl("say", "what", "time is it", socket_path=daemon.path)
    assert (done.returncode, done.stdout) == (0, "It is noon.\n"), done.stderr
    assert fake.called("say") == ["what time is it"]
    # it listened before it asked, on a second connection
    assert fake.calls.index(("watch", None)) < fake.calls.index(("say", "what time is it"))


def test_say_no_wait_prints_the_turn(daemon: ControlServer, fake: FakeControlHandler) -> None:
    done = huxleyctl("say", "--no-wait", "hello", socket_path=daemon.path)
    assert (done.returncode, done.stdout) == (0, "turn turn-1\n")
    assert fake.called("watch") == []


def test_say_gives_up_after_the_timeout_when_the_turn_never_ends(
    daemon: ControlServer, fake: FakeControlHandler
) -> None:
    fake.answer = None
    done = huxleyctl("say", "--timeout", "1", "hello", socket_path=daemon.path)
    assert done.returncode == 1
    assert "did not end within 1 s" in done.stderr


def test_watch_prints_one_line_per_event(daemon: ControlServer, fake: FakeControlHandler) -> None:
    at = "2026-01-01T12:00:00.500+00:00"
    fake.events = [
        WatchEvent("state", at, "t1", {"state": "listening"}),
        WatchEvent("heard", at, "t1", {"text": "what time is it"}),
        WatchEvent("tool", at, "t1", {"name": "get_current_time", "arguments": "{}"}),
        WatchEvent(
            "result",
            at,
            "t1",
            {"name": "get_current_time", "output": '{"time": "12:00"}', "error": None},
        ),
        WatchEvent("said", at, "t1", {"text": "It is noon."}),
        WatchEvent("media", at, None, {"action": "started", "label": "[Radio] Jazz"}),
    ]
    done = huxleyctl("watch", "--seconds", "2", socket_path=daemon.path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[2] for line in lines] == [
        "watching",
        "state",
        "heard",
        "tool",
        "result",
        "said",
        "media",
    ]
    assert lines[2].endswith("“what time is it”")
    assert lines[3].endswith("get_current_time({})")
    assert lines[4].endswith('get_current_time → {"time": "12:00"}')
    assert lines[6].endswith("started: [Radio] Jazz")
    as_json = huxleyctl("watch", "--json", "--seconds", "1", socket_path=daemon.path)
    kinds = [json.loads(line)["kind"] for line in as_json.stdout.splitlines()]
    assert kinds[:3] == ["watching", "state", "heard"]


def test_daemon_side_failure_exits_1(daemon: ControlServer, fake: FakeControlHandler) -> None:
    fake.fail["say"] = CommandFailedError("offline: reconnecting to the provider (try 4)")
    done = huxleyctl("say", "hello", socket_path=daemon.path)
    assert done.returncode == 1
    assert done.stderr == "huxleyctl: say: offline: reconnecting to the provider (try 4)\n"


def test_stop(daemon: ControlServer, fake: FakeControlHandler) -> None:
    assert huxleyctl("stop", socket_path=daemon.path).stdout == "stopped\n"
    assert huxleyctl("stop", socket_path=daemon.path).stdout == "nothing was playing\n"


def test_skills(daemon: ControlServer) -> None:
    wide = {**os.environ, "COLUMNS": "200"}  # one line per row
    table = huxleyctl("skills", socket_path=daemon.path, env=wide)
    assert table.returncode == 0
    rows = [line.split() for line in table.stdout.splitlines()]
    assert ["system", "huxleyd", "0.1.0", "ready", "get_current_time,", "set_volume"] in rows
    assert [
        "audiobooks",
        "huxley-skill-audiobooks",
        "0.1.0",
        "failed:",
        "setup",
        "failed:",
        "no",
        "library",
        "folder",
        "play_book,",
        "list_books",
    ] in rows
    raw = json.loads(huxleyctl("skills", "--json", socket_path=daemon.path).stdout)
    assert raw["skills"][1] == {
        "name": "audiobooks",
        "tools": ["play_book", "list_books"],
        "distribution": "huxley-skill-audiobooks",
        "version": "0.1.0",
        "state": "failed",
        "reason": "setup failed: no library folder",
    }


def test_ptt(daemon: ControlServer, fake: FakeControlHandler) -> None:
    done = huxleyctl("ptt", "tap", socket_path=daemon.path)
    assert (done.returncode, done.stdout) == (0, "ptt tap\n")
    assert fake.called("ptt") == [PttAction.TAP]
    bad = huxleyctl("ptt", "hold", socket_path=daemon.path)
    assert bad.returncode == 2 and "invalid choice: 'hold'" in bad.stderr
    assert fake.called("ptt") == [PttAction.TAP]


def test_doctor_lines_and_exit_status(daemon: ControlServer, fake: FakeControlHandler) -> None:
    done = huxleyctl("doctor", socket_path=daemon.path)
    assert done.returncode == 1  # one check failed
    lines = done.stdout.splitlines()
    assert lines[0] == f"checked: the running daemon ({daemon.path})"
    assert lines[1:3] == [
        "✓ config: /etc/huxleyd/huxleyd.toml is valid",
        "✗ provider: no answer from api.openai.com:443  → check the network",
    ]
    # Read by huxleyctl itself: the SDK of this venv, the unit's state.
    assert [line.split()[1] for line in lines[3:]] == ["sdk:", "service:"]
    raw = json.loads(huxleyctl("doctor", "--json", socket_path=daemon.path).stdout)
    assert [DoctorCheck.from_dict(c) for c in raw["checks"]][:-2] == fake.checks
    assert raw["source"].startswith("the running daemon")
    fake.checks = [DoctorCheck("disk", True, "900 MB free")]
    assert huxleyctl("doctor", socket_path=daemon.path).returncode == 0


def test_levels_prints_each_sample_until_the_stream_ends(
    daemon: ControlServer, fake: FakeControlHandler
) -> None:
    fake.levels_limit = 4
    done = huxleyctl("levels", socket_path=daemon.path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "mic  -20.0 dBFS  output   -6.0 dBFS  silences 0",
        "mic -120.0 dBFS  output  -12.5 dBFS  silences 0",  # silence (-inf) reads as the floor
        "mic   -3.0 dBFS  output  -40.0 dBFS  silences 2",  # heard inside replies since start
        "mic  -20.0 dBFS  output   -6.0 dBFS  silences 0",
    ]


def test_levels_for_a_while(daemon: ControlServer, fake: FakeControlHandler) -> None:
    done = huxleyctl("levels", "--seconds", "0.3", socket_path=daemon.path)
    assert done.returncode == 0, done.stderr
    expected = [
        "mic  -20.0 dBFS  output   -6.0 dBFS  silences 0",
        "mic -120.0 dBFS  output  -12.5 dBFS  silences 0",
    ]
    lines = done.stdout.splitlines()
    assert lines[:2] == expected[: len(lines)]
    deadline = time.monotonic() + 10
    while fake.levels_closed < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fake.levels_closed == 1  # the daemon stopped metering when the CLI left


def test_levels_live_meter_on_a_terminal(daemon: ControlServer, fake: FakeControlHandler) -> None:
    fake.levels_limit = 3
    # FORCE_COLOR makes rich treat the pipe as a terminal: the Live path runs.
    done = huxleyctl("levels", socket_path=daemon.path, env={"FORCE_COLOR": "1"})
    assert done.returncode == 0, done.stderr
    assert "mic" in done.stdout and "output" in done.stdout and "█" in done.stdout
    assert "-3.0 dBFS" in done.stdout  # the last sample is what stays on screen
    assert "peak: mic -3.0 dBFS, output -6.0 dBFS" in done.stdout


def test_options_after_the_command(daemon: ControlServer) -> None:
    done = huxleyctl("volume", "--socket", str(daemon.path))
    assert (done.returncode, done.stdout) == (0, "55\n")


def test_socket_path_from_the_config_file(daemon: ControlServer, tmp_path: Path) -> None:
    (tmp_path / "personas").mkdir()
    (tmp_path / "personas" / "default.toml").write_text('name = "T"\n[skills.system]\n')
    config = tmp_path / "huxleyd.toml"
    config.write_text(f'[control]\nsocket_path = "{daemon.path}"\n')
    done = huxleyctl("--config", str(config), "volume")
    assert (done.returncode, done.stdout) == (0, "55\n")


def test_not_running_exits_3(tmp_path: Path) -> None:
    path = tmp_path / "control.sock"
    done = huxleyctl("status", socket_path=path)
    assert done.returncode == 3
    assert done.stderr == f"huxleyctl: huxleyd is not running (no socket at {path})\n"


def test_stale_socket_exits_3(sock_path: Path) -> None:
    sock_path.parent.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as dead:
        dead.bind(str(sock_path))
    done = huxleyctl("status", socket_path=sock_path)
    assert done.returncode == 3
    assert "huxleyd is not running (stale socket at" in done.stderr


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("frobnicate",), "invalid choice: 'frobnicate'"),
        ((), "the following arguments are required: COMMAND"),
        (("say",), "the following arguments are required: TEXT"),
        (("say", "  "), "say: TEXT is empty"),
        (("levels", "--seconds", "0"), "expected a positive number of seconds"),
        (("status", "--verbose"), "unrecognized arguments: --verbose"),
        (("logs", "tool=set_volume"), "expected FIELD=VALUE"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args: tuple[str, ...], fragment: str) -> None:
    done = huxleyctl(*args, socket_path=Path("/nonexistent/control.sock"))
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and fragment in done.stderr


def _cli_in_child(
    argv: list[str], *, as_nobody: bool, groups: Sequence[int] = ()
) -> tuple[int, str]:
    """Run cli.main in a forked child (optionally as uid/gid 65534 in ``groups``);
    return (status, stdout and stderr)."""
    from huxleyd.control import cli
    from huxleyd.skillhost.sdkcheck import sdk_problem

    sdk_problem()  # its imports, now: nobody cannot read this interpreter's stdlib here
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        code = 99
        # pytest replaced sys.stdout/err; point both at the pipe.
        sys.stdout = sys.stderr = os.fdopen(write_fd, "w")
        try:
            if as_nobody:
                os.setgroups(list(groups))
                os.setgid(65534)
                os.setuid(65534)
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 98
        except BaseException:
            traceback.print_exc()  # into the pipe: the test shows it
        finally:
            sys.stdout.flush()
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        output = pipe.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), output


def test_permission_comes_from_the_socket_mode(fake: FakeControlHandler, tmp_path: Path) -> None:
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="hxp"))
    base.chmod(0o755)  # traversable by anyone: only the socket's mode decides
    path = base / "control.sock"
    as_nobody = os.geteuid() == 0  # root passes any mode check, so test as nobody
    settings = ControlSettings(socket_path=path, socket_group=None)
    argv = ["--socket", str(path), "--config", str(tmp_path / "none.toml"), "volume"]
    try:
        with serve_in_thread(fake, settings, rights=TEST_RIGHTS):
            if not as_nobody:
                path.chmod(0o000)  # the owner too is refused by the mode
            code, err = _cli_in_child(argv, as_nobody=as_nobody)
            assert code == 3
            assert err == (
                f"huxleyctl: permission denied on {path}: add yourself to the huxley-control "
                "group\n"
            )
            path.chmod(0o666)  # the same client, a looser mode: it gets in
            code, out = _cli_in_child(argv, as_nobody=as_nobody, groups=[READERS_GID])
            assert (code, out) == (0, "55\n")
            assert stat.S_IMODE(path.stat().st_mode) == 0o666
    finally:
        for leftover in base.iterdir():
            leftover.unlink()
        base.rmdir()


def _subcommands() -> list[str]:
    from huxleyd.control.cli_parser import build_parser

    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return sorted(action.choices)
    raise AssertionError("huxleyctl has no subcommands")


@pytest.mark.parametrize("command", ["", *_subcommands()])
def test_every_help_prints_and_exits_0(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`--help` of every subcommand (the list is read from the parser, so a new
    subcommand is covered the day it is added)."""
    from huxleyd.control import cli

    argv = [command, "--help"] if command else ["--help"]
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    out = capsys.readouterr()
    assert exited.value.code == 0, out.err
    assert out.out.startswith("usage: huxleyctl") and "--config" in out.out
    assert "/etc/huxleyd/huxleyd.toml" in out.out


def test_help_is_the_same_from_a_real_process() -> None:
    done = huxleyctl("volume", "--help")
    assert done.returncode == 0, done.stderr
    assert "new volume, 0-100" in done.stdout


def test_the_readme_lists_every_huxleyctl_command() -> None:
    # The README's admin list is the parser's list: a new command cannot be left out.
    import re

    from huxleyd.control.cli_parser import build_parser

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    listed = re.search(r"`huxleyctl ((?:[a-z-]+\|)+[a-z-]+)`", readme)
    assert listed is not None, "the README's `huxleyctl a|b|c` line"
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(listed.group(1).split("|")) == sorted(subparsers.choices)


def test_say_with_bytes_that_are_not_utf8_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Python hands undecodable argv bytes over as lone surrogates; they cannot be sent.
    from huxleyd.control.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["say", "hi \udcff"])
    assert exited.value.code == 2
    assert "say: TEXT is not UTF-8 text" in capsys.readouterr().err


def test_a_request_that_cannot_be_encoded_is_a_protocol_error_not_a_crash() -> None:
    from huxleyd.control.errors import ControlProtocolError
    from huxleyd.control.protocol import Command, Request, SayArgs

    with pytest.raises(ControlProtocolError, match="lone UTF-16 surrogate"):
        Request(1, Command.SAY, SayArgs("hi \udcff")).encode()
