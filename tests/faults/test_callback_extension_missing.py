"""``audio.backend = "callback"`` on an install without its C extension.

The card's one mix is that extension's (issue 39: PyAudio's blocking backend, the
old fallback, is gone), so the card cannot play. The daemon (a real process, the
extension hidden from its imports) still comes up and says why once: the audio
part is degraded in the journal, ``huxleyctl status`` and ``doctor``, and
``--check-config`` warns with the same words; the card's open fails, naming the
extension, and is retried. No second mixer starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest

from huxleyd.audio.backends import callback_backend
from huxleyd.audio.factory import choose_backend
from huxleyd.audio.settings import AudioSettings
from tests.e2e.process import ROOT, DaemonProcess, ctl, write_daemon_config
from tests.fakes.audio_pyaudio import FakePyAudioModule, device

RT = "huxleyd.audio._rt"
CAUSE = "audio.backend = 'callback' but the card's C extension is not built"


def _hide_the_extension(tmp: Path) -> dict[str, str]:
    """An environment whose Python cannot import the C extension (as an install
    built without a compiler): ``sitecustomize`` blocks the module by name."""
    site = tmp / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(f"import sys\nsys.modules[{RT!r}] = None\n")
    return {"PYTHONPATH": f"{site}:{ROOT}"}


def _callback_config(tmp: Path) -> Path:
    config = write_daemon_config(tmp, scenario="")
    text = config.read_text().replace('backend = "wav"', 'backend = "callback"')
    config.write_text(text)
    return config


@pytest.mark.parametrize("built", [True, False])
@pytest.mark.parametrize("backend", ["callback", "auto", "wav"])
def test_the_choice_and_the_warning_are_one_answer(
    backend: Literal["callback", "auto", "wav"], built: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not built:
        monkeypatch.setitem(sys.modules, RT, None)
    module = FakePyAudioModule([device("default")])
    chosen, _ = choose_backend(AudioSettings(backend=backend), pyaudio_module=module)
    card = backend != "wav"
    assert type(chosen).__name__ == ("CallbackBackend" if card else "WavBackend")
    warned = callback_backend.forced_callback_missing(backend)
    assert (warned is None) == (built or not card), warned


def test_the_daemon_comes_up_without_the_card_and_says_why(tmp_path: Path) -> None:
    config = _callback_config(tmp_path)
    env = _hide_the_extension(tmp_path)
    check = subprocess.run(
        [sys.executable, "-m", "huxleyd", "--config", str(config), "--check-config"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert check.returncode == 0 and CAUSE in check.stdout + check.stderr, check
    daemon = DaemonProcess(config, env=env)
    try:
        daemon.wait_for_log("daemon_started", timeout_s=120)
        started = next(x for x in daemon.output().splitlines() if "daemon_started" in x)
        assert 'audio="callback (' in started, started
        assert daemon.output().count("part_degraded part=audio") == 1
        problems = json.loads(ctl(daemon.socket, "status", "--json"))["problems"]
        assert [p for p in problems if p.startswith("audio: ") and CAUSE in p], problems
        assert CAUSE in ctl(daemon.socket, "doctor")
        # the card's open failed on the missing extension (retried), no other path opened it
        unavailable = [x for x in daemon.output().splitlines() if "audio_device_unavailable" in x]
        assert unavailable and "the C playback extension is not built" in unavailable[0], (
            unavailable
        )
        assert "device_state=open" not in daemon.output()
    finally:
        assert daemon.terminate() == 0
