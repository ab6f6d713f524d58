"""Issue 41: with a key and no network, ``huxleyctl say`` answered "failed, no
spoken answer" with no reason: a typed turn was started on a connection whose
tries were failing. It is now refused at once, in the connection's own words
(what the last try met, when the next one is), and nothing is sent."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpiozero.pins.mock import MockFactory, MockPWMPin

from huxleyd.app.control import RuntimeControl
from huxleyd.app.parts import Overrides
from huxleyd.app.runtime import Runtime
from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.pacing import ScaledClock
from huxleyd.config.load import load_config
from huxleyd.control.errors import CommandFailedError
from tests.e2e.harness import write_config

NOWHERE = "ws://127.0.0.1:9/v1/realtime"
"""Loopback's discard port: nothing listens, every try is refused at once."""


async def test_say_without_the_provider_is_refused_with_the_reason(tmp_path: Path) -> None:
    key = tmp_path / "openai.key"
    key.write_text("sk-test-not-a-real-key\n")
    key.chmod(0o600)
    path = write_config(tmp_path, skills=("system",))
    path.write_text(path.read_text().replace("[provider]\n", f'[provider]\nurl = "{NOWHERE}"\n', 1))
    pins = MockFactory(pin_class=MockPWMPin)
    runtime = Runtime(
        load_config(path),
        Overrides(
            backend=WavBackend(),
            clock=ScaledClock(1.0, start_s=1000.0),
            pin_factory=pins,
            key_file=key,
            env={},
        ),
    )
    await runtime.start()
    try:
        with pytest.raises(CommandFailedError) as refused:
            await RuntimeControl(runtime).say("what time is it")
        words = str(refused.value)
        assert words.startswith("not connected to the provider (ConnectionRefusedError")
        assert "nothing was sent" in words and ("next try in" in words or "still trying" in words)
        assert runtime.parts.coordinator.last_turn is None  # no turn was started
    finally:
        await runtime.close()
        pins.close()
