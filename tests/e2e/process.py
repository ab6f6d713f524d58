"""The daemon as a real process, for tests that need one (signals, sd_notify,
huxleyctl): ``python -m huxleyd`` on a config written in ``tmp``, with
the WAV sound card, the simulator and mock pins."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def write_daemon_config(
    tmp: Path,
    *,
    name: str = "huxleyd",
    scenario: str,
    skills: str = "[skills.system]\n",
    sounds_dir: Path | str = ROOT / "sounds",
    sim_speed: float = 4.0,
) -> Path:
    """``<tmp>/<name>.toml`` + its persona + scenario; returns the config path.

    The silent-reply retry waits 60 s, not 6: on a loaded CI machine the
    simulator's first reply once took 7 s, the retry fired, and the scenario's
    next response (without the tool call the test waited for) answered instead.
    Tests of the retry set their own timeout.
    """
    (tmp / "personas").mkdir(exist_ok=True)
    (tmp / "personas" / "default.toml").write_text(
        f'name = "Test"\ntimezone = "UTC"\ninstructions = "Be brief."\n{skills}'
    )
    (tmp / f"{name}-scenario.toml").write_text(scenario)
    config = tmp / f"{name}.toml"
    config.write_text(
        f"""
[daemon]
sounds_dir = "{sounds_dir}"
[storage]
state_dir = "state"
[provider]
kind = "sim"
sim_scenario = "{name}-scenario.toml"
sim_speed = {sim_speed}
silent_response_timeout_s = 60.0
[audio]
backend = "wav"
speaker_wav = "{name}-speaker.wav"
[hardware]
boards_dir = "{ROOT / "hw"}"
[control]
socket_path = "control.sock"
socket_group = ""
"""
    )
    return config


class DaemonProcess:
    """One daemon process; its output goes to a log file (a pipe nobody drains
    would fill up and block the daemon's logging)."""

    def __init__(
        self,
        config: Path,
        *,
        env: Mapping[str, str] | None = None,
        log: Path | None = None,
        wrap: Sequence[str] = (),
    ) -> None:
        """``wrap``: a command that execs the daemon (``unshare -m …``: a test as
        root that needs a file system it cannot write)."""
        self.config = config
        self.log = log or config.with_suffix(".log")
        self.socket = config.parent / "control.sock"
        environment = {**os.environ, "GPIOZERO_PIN_FACTORY": "mock", **(env or {})}
        environment.pop("JOURNAL_STREAM", None)
        if "NOTIFY_SOCKET" not in (env or {}):
            environment.pop("NOTIFY_SOCKET", None)
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(
                [*wrap, sys.executable, "-m", "huxleyd", "--config", str(config)],
                env=environment,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def output(self) -> str:
        return self.log.read_text()

    def wait_for_log(self, text: str, timeout_s: float = 30.0) -> None:
        """Return once ``text`` is in the daemon's output; fail if the daemon
        exits first or ``timeout_s`` (a safety net) passes."""
        deadline = time.monotonic() + timeout_s
        while text not in self.output():
            assert self.proc.poll() is None, self.output()[-3000:]
            assert time.monotonic() < deadline, f"no {text!r} in the log:\n{self.output()[-3000:]}"
            time.sleep(0.05)

    def terminate(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, then wait for the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout_s)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def ctl(socket: Path, *args: str, exit_codes: tuple[int, ...] = (0, 1)) -> str:
    """``huxleyctl --socket SOCKET ARGS…`` as an admin runs it; its standard output.

    ``exit_codes``: what counts as an answer (``doctor`` exits 1 on a failed check).
    """
    done = subprocess.run(
        [sys.executable, "-m", "huxleyd.control.cli", "--socket", str(socket), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode in exit_codes, done.stderr
    return done.stdout
