"""Issue 41: a speaker that fails every write, and ``/dev/full`` as the speaker.

doctor said "open (recovered from N audio faults)" about a speaker that
failed every write, and nothing about one that never opened; status showed no
problem. Both are now the degraded record's ``speaker`` part, which status,
doctor's "degraded parts" and its "audio" line read, with advice that fits
the error, and which clears once the speaker plays again. The speakers here
write to the real ``/dev/full`` (every ``write(2)`` fails with ENOSPC).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory, MockPWMPin

from huxleyd.app.control import RuntimeControl
from huxleyd.app.parts import Overrides
from huxleyd.app.runtime import Runtime
from huxleyd.audio.backends.base import DeviceFormat, IoStatus
from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.pacing import ScaledClock
from huxleyd.config.load import load_config
from huxleyd.sim.scenario import Scenario
from huxleyd.sim.server import SimServer
from tests.e2e.harness import SPEED, until, write_config
from tests.fakes.notify import RecordingNotifier

DEV_FULL = Path("/dev/full")


class DevFullSpeaker(WavBackend):
    """A card that opens, then fails every write: its speaker is ``/dev/full``
    (until ``full`` is cleared: then it plays to nowhere, as a healthy card)."""

    def __init__(self) -> None:
        super().__init__()
        self.full = True
        self._fd: int | None = None

    def open(self, *, period_ms: int) -> DeviceFormat:
        fmt = super().open(period_ms=period_ms)
        self._fd = os.open(DEV_FULL, os.O_WRONLY)
        return fmt

    def write(self, data: Any) -> IoStatus:
        if self.full and self._fd is not None:
            os.write(self._fd, data.tobytes())  # OSError(ENOSPC), every time
        return IoStatus.OK

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        super().close()


@contextlib.asynccontextmanager
async def daemon_with(tmp_path: Path, backend: WavBackend) -> AsyncIterator[Runtime]:
    """The real runtime on ``backend``, the device retried every 0.2 s."""
    pins = MockFactory(pin_class=MockPWMPin)
    path = write_config(tmp_path, skills=("system",))
    path.write_text(path.read_text().replace("[audio]\n", "[audio]\nreopen_interval_s = 0.2\n"))
    async with SimServer(Scenario(turns=()), speed=SPEED) as sim:
        runtime = Runtime(
            load_config(path),
            Overrides(
                backend=backend,
                clock=ScaledClock(SPEED, start_s=1000.0),
                pin_factory=pins,
                provider_url=sim.url,
                notifier=RecordingNotifier(),
                env={},
            ),
        )
        await runtime.start()
        try:
            yield runtime
        finally:
            await runtime.close()
            pins.close()


async def surfaces(runtime: Runtime) -> tuple[str, dict[str, Any]]:
    """The speaker's line in status, and doctor's checks by name."""
    control = RuntimeControl(runtime)
    [line] = [p for p in (await control.status()).problems if p.startswith("speaker: ")]
    return line, {c.name: c for c in await control.doctor()}


async def test_a_speaker_that_fails_every_write_is_degraded_not_recovered(
    tmp_path: Path,
) -> None:
    backend = DevFullSpeaker()
    async with daemon_with(tmp_path, backend) as runtime:
        await until(lambda: runtime.degraded.get("speaker") is not None, "speaker degraded")
        await until(lambda: runtime.parts.engine.stats().faults >= 3, "three failed writes")
        line, checks = await surfaces(runtime)
        assert line.startswith("speaker: writes failing: OSError(28, 'No space left on device')")
        assert "tried again every 0.2 s" in line
        audio = checks["audio"]
        assert audio.status == "fail" and "recovered" not in audio.detail
        assert "writes failing" in audio.detail
        assert "takes no data" in audio.fix and "aplay -L" not in audio.fix
        assert line in checks["degraded parts"].detail
        backend.full = False  # the card plays again: the part clears after a calm stretch
        await until(lambda: runtime.degraded.get("speaker") is None, "speaker recovered")
        assert checks["degraded parts"].status == "fail"  # what doctor said before
        assert (await RuntimeControl(runtime).status()).problems == ()


async def test_dev_full_as_the_speaker_is_named_with_why_it_does_not_open(
    tmp_path: Path,
) -> None:
    backend = WavBackend(speaker_wav=DEV_FULL)
    async with daemon_with(tmp_path, backend) as runtime:
        await until(lambda: runtime.degraded.get("speaker") is not None, "speaker degraded")
        line, checks = await surfaces(runtime)
    assert line.startswith(
        "speaker: cannot open the device: /dev/full: cannot write the speaker WAV: "
        "[Errno 28] No space left on device"
    )
    audio = checks["audio"]
    assert audio.status == "fail" and "cannot open the device" in audio.detail
    assert "/dev/full" in audio.fix and "aplay -L" not in audio.fix
    degraded = checks["degraded parts"]
    assert line in degraded.detail and "speaker: the speaker's device takes no data" in degraded.fix


@pytest.mark.parametrize(
    ("error", "fits", "not_this"),
    [
        ("[Errno 13] Permission denied", "audio group", "aplay -L"),
        ("Device or resource busy", "fuser", "audio group"),
        ("ALSA lib: Unknown PCM hw:9", "aplay -L", "fuser"),
    ],
)
def test_the_speaker_advice_fits_the_error(error: str, fits: str, not_this: str) -> None:
    from huxleyd.control.speakerwatch import speaker_fix

    fix = speaker_fix(error, file="huxleyd.toml")
    assert fits in fix and not_this not in fix
