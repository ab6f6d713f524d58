"""The daemon's answers on the control socket (``huxleyctl``).

Implements :class:`~huxleyd.control.handler.ControlHandler` over a running
:class:`~huxleyd.runtime.Runtime`. Reads state; changes go through the same
paths the button and the skills use (the coordinator, the volume control),
so ``huxleyctl`` can never do what the device itself would not.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from huxleyd.control.doctor import (
    check_audio_device,
    check_config,
    check_disk_space,
    check_gpio_pins,
    check_key_file,
    check_mixer_control,
    check_provider_reachable,
    run_checks,
)
from huxleyd.control.errors import CommandFailedError
from huxleyd.control.handler import (
    DoctorCheck,
    LevelsSample,
    SkillInfo,
    StatusReport,
    XrunCounts,
)
from huxleyd.control.protocol import PttAction
from huxleyd.runtime import Runtime

TAP_HOLD_S = 1.0
"""How long ``huxleyctl ptt tap`` holds the button: long enough to be a turn."""


class RuntimeControl:
    """``ControlHandler`` for the running daemon."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    async def status(self) -> StatusReport:
        rt = self._rt
        coordinator, engine = rt.coordinator, rt.engine
        stats = engine.stats() if engine is not None else None
        last = coordinator.last_turn if coordinator is not None else None
        state = coordinator.activity if coordinator is not None else "starting"
        return StatusReport(
            state=state,
            provider_state=rt.connection_state,
            media=coordinator.media.label if coordinator is not None else None,
            volume=await self.get_volume(),
            uptime_s=round(rt.clock.monotonic() - rt.started_at, 1),
            xruns=XrunCounts(
                underruns=stats.underruns if stats else 0,
                overruns=stats.overruns if stats else 0,
                late_periods=stats.late_periods if stats else 0,
                dropped_mic_frames=stats.mic_frames_dropped if stats else 0,
            ),
            last_turn_timings_ms=last.timings_ms() if last else {},
            last_turn_id=last.turn_id if last else None,
            persona=rt.config.persona.name,
            provider_kind=rt.config.provider.kind,
            is_simulator=rt.is_simulator,
        )

    async def get_volume(self) -> int:
        if self._rt.volume is None:
            raise CommandFailedError("the volume control is not ready yet")
        return await self._rt.volume.get_level()

    async def set_volume(self, level: int) -> int:
        if self._rt.volume is None:
            raise CommandFailedError("the volume control is not ready yet")
        return await self._rt.volume.set_level(level)

    async def say(self, text: str) -> str:
        coordinator = self._rt.coordinator
        if coordinator is None:
            raise CommandFailedError("the daemon is still starting")
        if self._rt.connection_state == "offline":
            raise CommandFailedError("offline: the provider is unreachable, try again later")
        return coordinator.say(text)

    async def stop(self) -> bool:
        coordinator = self._rt.coordinator
        return await coordinator.stop_media() if coordinator is not None else False

    async def skills(self) -> list[SkillInfo]:
        host = self._rt.host
        if host is None:
            return []
        return [SkillInfo(s.name, tuple(t.name for t in s.tools)) for s in host.skills]

    async def ptt(self, action: PttAction) -> None:
        button = self._rt.button
        if button is None:
            raise CommandFailedError("the button is not ready yet")
        if action in (PttAction.PRESS, PttAction.TAP):
            button.press()
        if action is PttAction.TAP:
            await asyncio.sleep(TAP_HOLD_S)
        if action in (PttAction.RELEASE, PttAction.TAP):
            button.release()

    async def levels(self) -> AsyncIterator[LevelsSample]:
        engine = self._rt.engine
        if engine is None:
            raise CommandFailedError("the audio engine is not running")
        while True:
            stats = engine.stats()
            yield LevelsSample(mic_dbfs=stats.input_rms_dbfs, output_dbfs=stats.output_rms_dbfs)
            await asyncio.sleep(0.1)

    async def doctor(self) -> list[DoctorCheck]:
        rt = self._rt
        config = rt.config
        engine, board = rt.engine, rt.board

        def audio_probe() -> object:
            # The engine holds the device: report on it instead of opening it twice.
            if engine is None:
                raise RuntimeError("the audio engine is not running")
            stats = engine.stats()
            if stats.device_state.value != "open":
                raise RuntimeError(f"the device is {stats.device_state.value}")
            return rt.audio_description

        def mixer_probe() -> object:
            return rt.volume

        def pin_probe(pin: int) -> None:
            # The daemon holds the button and LED pins; held by us means healthy.
            if rt.button is None:
                raise RuntimeError("the button is not set up")

        key = None if rt.is_simulator else config.provider.key_file
        checks = [
            lambda: check_config(config.path),
            lambda: check_key_file(key),
            lambda: check_audio_device("audio", audio_probe),
            lambda: check_mixer_control(rt.audio_settings.mixer_control, mixer_probe),
            lambda: check_gpio_pins(board.gpio_pins if board else {}, pin_probe),
            lambda: check_disk_space(config.storage.state_dir),
        ]
        if not rt.is_simulator:
            checks.append(lambda: check_provider_reachable(config.provider.url))
        return await run_checks(checks)
