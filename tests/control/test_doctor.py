"""Each doctor check looks at the real thing, and each has a case where it fails."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator, Sequence
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from gpiozero import InputDevice
from gpiozero.pins.mock import MockFactory

from huxleyd.control.doctor import (
    KeyFacts,
    check_audio_device,
    check_config,
    check_disk_space,
    check_gpio,
    check_key_file,
    check_mixer,
    check_systemd_unit,
    run_checks,
)
from huxleyd.control.doctor_provider import (
    ModelEndpoint,
    check_models,
    check_provider,
    model_endpoint,
)
from huxleyd.control.handler import DoctorCheck
from huxleyd.errors import ConfigError
from huxleyd.hardware.pins import pin_probe
from tests.fakes.audio_amixer import FakeControl, install_fake_amixer

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"


# ---------------------------------------------------------------- config


def test_config_reports_the_resolution_or_its_one_line(tmp_path: Path) -> None:
    good = check_config(lambda: "persona 'Test', board 'gpio-basic'", tmp_path / "h.toml")
    assert good.status == "ok" and "board 'gpio-basic'" in good.detail

    def broken() -> str:
        raise ConfigError("h.toml", "hardware.board", "unknown board 'x'")

    bad = check_config(broken, tmp_path / "h.toml")
    assert bad.status == "fail" and bad.detail == "h.toml: hardware.board: unknown board 'x'"
    assert "--check-config" in bad.fix


# ---------------------------------------------------------------- key file


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "openai.key"
    path.write_text(SECRET + "\n")
    path.chmod(0o600)
    return path


def test_key_file_private_and_non_empty(key_file: Path) -> None:
    check = check_key_file(KeyFacts(key_file, "--key-file"))
    assert check.status == "ok" and "(--key-file)" in check.detail and "0600" in check.detail
    assert SECRET not in check.detail + check.fix


def test_key_file_readable_by_others_is_a_warning(key_file: Path) -> None:
    key_file.chmod(0o644)
    check = check_key_file(KeyFacts(key_file, "provider.key_file"))
    assert check.status == "warn" and "0644" in check.detail and check.fix.startswith("chmod 600")


@pytest.mark.parametrize("case", ["missing", "empty", "directory"])
def test_key_file_missing_empty_or_a_directory(tmp_path: Path, case: str) -> None:
    path = tmp_path / "k"
    if case == "empty":
        path.write_text("")
    elif case == "directory":
        path.mkdir()
    check = check_key_file(KeyFacts(path, "provider.key_file"))
    assert check.status == "fail"
    assert {"missing": "does not exist", "empty": "is empty", "directory": "not a regular"}[
        case
    ] in check.detail


def test_key_file_the_service_user_cannot_read() -> None:
    import shutil
    import tempfile

    from huxleyd.config.files import Reader

    # As root, doctor asks for the unit's user; "nobody" cannot read a 0600 file of ours.
    nobody = Reader("nobody", 65534, frozenset({65534}), is_self=False)
    folder = Path(tempfile.mkdtemp(prefix="huxleyd-doctor-"))  # pytest's tmp is private
    try:
        folder.chmod(0o755)
        key = folder / "openai.key"
        key.write_text(SECRET)
        key.chmod(0o600)
        check = check_key_file(KeyFacts(key, "provider.key_file"), reader=nobody)
        assert check.status == "fail" and "cannot be read by user 'nobody'" in check.detail
        key.chmod(0o644)
        assert check_key_file(KeyFacts(key, "k"), reader=nobody).status == "warn"
    finally:
        shutil.rmtree(folder)


def test_no_key_is_a_warning_when_the_simulator_answers_and_skipped_otherwise() -> None:
    sim = check_key_file(KeyFacts(None, "no key file", simulator=True))
    assert sim.status == "warn" and "not an AI" in sim.detail
    kind_sim = check_key_file(KeyFacts(None, "provider.kind is sim: no key needed"))
    assert kind_sim.status == "skipped" and kind_sim.detail.startswith("skipped: ")


# ---------------------------------------------------------------- audio


def test_audio_device_is_what_the_daemon_reports() -> None:
    assert check_audio_device("audio", None, "").status == "skipped"
    assert check_audio_device("audio", "open", "pyaudio (a → b)").status == "ok"
    assert check_audio_device("audio", "open", "wav (mic silence, speaker x)").status == "warn"
    lost = check_audio_device("audio", "reopening", "pyaudio (a → b)")
    assert lost.status == "fail" and "reopening" in lost.detail


def test_a_card_that_xruns_is_not_a_tick() -> None:
    """The emulated Pi's speaker was silent 89 % of the time, 433 underruns in 53 s,
    while doctor said '✓ audio: open'. The card's own xruns are read now: more than
    one per ten minutes on average is a warning; fewer are counted on the tick."""
    desc = "callback 2.5 ms SCHED_FIFO (a → b)"
    breaking = check_audio_device("audio", "open", desc, card_xruns=(433, 7), uptime_s=53.4)
    assert breaking.status == "warn"
    assert "433 speaker underrun(s) and 7 mic overrun(s) in 53 s" in breaking.detail
    one = check_audio_device("audio", "open", desc, card_xruns=(1, 0), uptime_s=30.0)
    assert one.status == "ok" and "1 speaker underrun(s)" in one.detail
    a_day = check_audio_device("audio", "open", desc, card_xruns=(3, 2), uptime_s=86_400.0)
    assert a_day.status == "ok"
    widened = check_audio_device(
        "audio", "open", desc, widened="widened from 2.5 ms to 5 ms after 5 card xruns in 1.0 s"
    )
    assert widened.status == "warn" and "could not keep its period" in widened.detail


# ---------------------------------------------------------------- mixer (a real amixer process)


@pytest.fixture
def amixer(tmp_path: Path) -> str:
    install_fake_amixer(
        tmp_path / "bin", {"PCM": FakeControl(), "Mic": FakeControl(playback=False)}
    )
    return str(tmp_path / "bin" / "amixer")


def test_mixer_control_exists_on_the_card(amixer: str) -> None:
    check = check_mixer(card="default", control="PCM", backend="auto", amixer=amixer)
    assert check.status == "ok" and "'PCM'" in check.detail


def test_mixer_control_missing_on_the_card(amixer: str) -> None:
    check = check_mixer(card="default", control="Speaker", backend="auto", amixer=amixer)
    assert check.status == "fail" and "no control 'Speaker'" in check.detail
    assert "PCM" in check.detail and "Mic" not in check.detail  # capture-only is no volume


def test_mixer_scan_finds_what_the_daemon_would(amixer: str) -> None:
    check = check_mixer(card="default", control=None, backend="auto", amixer=amixer)
    assert check.status == "ok" and "'PCM' (found by the scan)" in check.detail


def test_mixer_fails_when_the_daemon_fell_back_to_software_gain(amixer: str) -> None:
    check = check_mixer(
        card="default", control="PCM", backend="auto", daemon_volume="software gain", amixer=amixer
    )
    assert check.status == "fail" and "the daemon uses software gain" in check.detail
    ok = check_mixer(
        card="default",
        control="PCM",
        backend="auto",
        daemon_volume="mixer 'PCM' on card 'default'",
        amixer=amixer,
    )
    assert ok.status == "ok"


def test_mixer_unknown_card(amixer: str) -> None:
    check = check_mixer(
        card="seeed2micvoicec", control="Playback", backend="callback", amixer=amixer
    )
    assert check.status == "fail" and "Mixer attach" in check.detail


def test_mixer_skipped_for_the_wav_backend(amixer: str) -> None:
    assert check_mixer(card="default", control=None, backend="wav", amixer=amixer).status == (
        "skipped"
    )


# ---------------------------------------------------------------- GPIO


def test_gpio_mock_pins_are_a_warning() -> None:
    check = check_gpio(factory="mock (fallback)", is_mock=True, board="b", pins={"button": 17})
    assert check.status == "warn" and "mock pins" in check.detail and "GPIO17" in check.detail


def test_gpio_pins_the_daemon_holds_must_be_the_boards() -> None:
    check = check_gpio(
        factory="lgpio (auto)",
        is_mock=False,
        board="respeaker-2mic",
        pins={"button": 17},
        in_use={"button": "GPIO4"},
    )
    assert check.status == "fail" and "button is GPIO4, the board says GPIO17" in check.detail
    same = check_gpio(
        factory="lgpio (auto)",
        is_mock=False,
        board="b",
        pins={"button": 17},
        in_use={"button": "GPIO17"},
    )
    assert same.status == "ok" and "held by the daemon" in same.detail


def test_gpio_busy_pin_without_a_daemon() -> None:
    factory = MockFactory()
    held = InputDevice(17, pin_factory=factory)  # someone else holds the button's line
    try:
        check = check_gpio(
            factory="mock-as-real",
            is_mock=False,
            board="b",
            pins={"button": 17, "led": 27},
            probe=pin_probe(factory),
        )
    finally:
        held.close()
        factory.close()
    assert check.status == "fail" and "GPIO17 (button)" in check.detail
    assert "GPIO27" not in check.detail


# ---------------------------------------------------------------- provider (a loopback HTTP peer)


class _Models(BaseHTTPRequestHandler):
    """``GET /v1/models/{id}``: 401 without the right key, 404 for unknown models."""

    known: ClassVar[frozenset[str]] = frozenset({"gpt-realtime"})

    def do_GET(self) -> None:
        if self.headers.get("Authorization") != f"Bearer {SECRET}":
            self.send_response(401)
        elif self.path.removeprefix("/v1/models/") in self.known:
            self.send_response(200)
        else:
            self.send_response(404)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def models_api() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"ws://127.0.0.1:{server.server_address[1]}/v1/realtime"
    server.shutdown()
    server.server_close()
    thread.join()


def test_provider_accepts_the_key_and_has_the_model(models_api: str) -> None:
    check = check_provider(model_endpoint("openai", models_api, "gpt-realtime", SECRET))
    assert check.status == "ok" and "accepted the key" in check.detail
    assert SECRET not in check.detail + check.fix


def test_provider_refuses_the_key(models_api: str) -> None:
    check = check_provider(model_endpoint("openai", models_api, "gpt-realtime", "sk-wrong"))
    assert check.status == "fail" and "refused the key (HTTP 401)" in check.detail


def test_provider_has_no_such_model(models_api: str) -> None:
    check = check_provider(model_endpoint("openai", models_api, "gpt-4o-realtime-preview", SECRET))
    assert check.status == "fail" and "no model 'gpt-4o-realtime-preview'" in check.detail


def test_provider_unreachable() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: refused
        check = check_provider(
            ModelEndpoint(f"http://127.0.0.1:{port}/v1/models/m", {}, "m"), timeout_s=5.0
        )
    assert check.status == "fail" and "cannot reach 127.0.0.1" in check.detail


def test_provider_skipped_says_why() -> None:
    check = check_provider(None, skipped_because="the built-in simulator answers")
    assert check.status == "skipped" and "simulator" in check.detail


def test_model_endpoints_per_provider() -> None:
    openai = model_endpoint("openai", "wss://api.openai.com/v1/realtime", "gpt-realtime", "k")
    assert openai.url == "https://api.openai.com/v1/models/gpt-realtime"
    assert openai.headers == {"Authorization": "Bearer k"}
    gemini = model_endpoint(
        "gemini", "wss://generativelanguage.googleapis.com/ws/x.BidiGenerateContent", "g-1", "k"
    )
    assert gemini.url == "https://generativelanguage.googleapis.com/v1beta/models/g-1"
    assert gemini.headers == {"x-goog-api-key": "k"}
    cascade = model_endpoint("cascade", "http://127.0.0.1:8080/v1/", "qwen", "k")
    assert cascade.url == "http://127.0.0.1:8080/v1/models/qwen"


def test_model_shutdown_dates_come_from_the_provider_table() -> None:
    today = date(2026, 11, 24)
    shut_down = check_models(["gemini-live-2.5-flash-preview"], today=today)
    assert shut_down.status == "fail" and "2025-12-09" in shut_down.detail
    assert "gemini-3.8-live" in shut_down.fix  # the end of the chain of named successors
    soon = check_models(["gpt-realtime-2.1", "gpt-4o-mini"], today=today)
    assert soon.status == "warn" and "gpt-4o-mini" in soon.detail and "2027-01-14" in soon.detail
    fine = check_models(["gpt-realtime-2.1", "my-own-model"], today=today)
    assert fine.status == "ok" and "not in the table: my-own-model" in fine.detail
    assert check_models(["my-own-model"], today=today).status == "skipped"
    # A newer model is information, not a fault (issue 25 item 2).
    superseded = check_models(["gemini-2.5-flash-native-audio-preview-12-2025"], today=today)
    assert superseded.status == "ok"
    assert "a newer model exists for gemini-2.5-flash-native-audio-preview-12-2025: " in (
        superseded.detail
    )
    assert superseded.detail.endswith("gemini-3.8-live")
    assert check_models([], today=today).status == "skipped"


# ---------------------------------------------------------------- disk, systemd


def test_disk_space(tmp_path: Path) -> None:
    assert check_disk_space(tmp_path, min_free_bytes=1).status == "ok"
    full = check_disk_space(tmp_path, min_free_bytes=1 << 62)
    assert full.status == "fail" and "MB free" in full.detail
    (tmp_path / "file").write_text("x")
    assert check_disk_space(tmp_path / "file").status == "fail"
    assert check_disk_space(tmp_path / "not-yet").status == "warn"


class FakeSystemctl:
    """A :data:`Runner` answering ``systemctl show`` with fixed properties; records argv."""

    def __init__(self, **props: str) -> None:
        self.props = props
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        out = "".join(f"{k}={v}\n" for k, v in self.props.items())
        return subprocess.CompletedProcess(list(argv), 0, out, "")


def test_systemd_unit_states() -> None:
    running = FakeSystemctl(LoadState="loaded", ActiveState="active", SubState="running")
    check = check_systemd_unit(booted=True, run=running)
    assert check.status == "ok" and "active (running)" in check.detail
    assert running.calls[0][:3] == ["systemctl", "show", "huxleyd"]
    looping = FakeSystemctl(
        LoadState="loaded", ActiveState="activating", SubState="auto-restart", NRestarts="41"
    )
    bad = check_systemd_unit(booted=True, run=looping)
    assert bad.status == "fail" and "41 restart(s)" in bad.detail and "restarting" in bad.detail
    missing = check_systemd_unit(booted=True, run=FakeSystemctl(LoadState="not-found"))
    assert missing.status == "skipped" and "not installed" in missing.detail
    broken = check_systemd_unit(booted=True, run=FakeSystemctl(LoadState="bad-setting"))
    assert broken.status == "fail" and "bad-setting" in broken.detail
    assert check_systemd_unit(booted=False, run=running).status == "skipped"


# ---------------------------------------------------------------- running them


async def test_run_checks_keeps_order_and_reports_a_crashing_check() -> None:
    def crashing() -> DoctorCheck:
        raise RuntimeError("probe exploded")

    checks = await run_checks(
        [lambda: DoctorCheck.passed("first", "ok"), crashing, lambda: DoctorCheck.passed("l", "")]
    )
    assert [c.name for c in checks][0::2] == ["first", "l"]
    assert checks[1].status == "fail" and "probe exploded" in checks[1].detail


def test_statuses_travel_on_the_wire() -> None:
    for check in (
        DoctorCheck.passed("a", "x"),
        DoctorCheck.warning("b", "y", "z"),
        DoctorCheck.skipped("c", "why"),
        DoctorCheck.failed("d", "w", "f"),
    ):
        assert DoctorCheck.from_dict(check.to_dict()) == check
    assert DoctorCheck.from_dict({"name": "old", "ok": False, "detail": "", "fix": ""}).status == (
        "fail"
    )
