"""``huxleyctl doctor`` against a running daemon reports what the daemon really uses."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from gpiozero.pins.mock import MockFactory, MockPWMPin

from huxleyd.app.control import RuntimeControl, daemon_facts
from huxleyd.app.parts import Overrides
from huxleyd.app.runtime import Runtime
from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.pacing import ScaledClock
from huxleyd.config.load import load_config
from huxleyd.sim.scenario import Scenario
from huxleyd.sim.server import SimServer
from tests.e2e.harness import (
    SPEED,
    scenario_skill_installed,
    until,
    write_config,
)
from tests.fakes.notify import RecordingNotifier


@contextlib.asynccontextmanager
async def daemon_on_the_simulator(
    tmp_path: Path, key: Path, state: str, **sim_options: str
) -> AsyncIterator[Runtime]:
    """The real runtime with ``--key-file KEY``, talking to a simulator (with
    ``sim_options``) as its provider (``provider.url``), once its connection
    reached ``state``."""
    async with (
        SimServer(Scenario(turns=()), speed=SPEED, **sim_options) as sim,  # type: ignore[arg-type]
        _runtime_on(tmp_path, key, sim, state) as runtime,
    ):
        yield runtime


@contextlib.asynccontextmanager
async def _runtime_on(
    tmp_path: Path, key: Path, sim: SimServer, state: str
) -> AsyncIterator[Runtime]:
    pins = MockFactory(pin_class=MockPWMPin)
    path = write_config(tmp_path)
    path.write_text(path.read_text().replace("[provider]\n", f'[provider]\nurl = "{sim.url}"\n'))
    runtime = Runtime(
        load_config(path),
        Overrides(
            backend=WavBackend(),
            clock=ScaledClock(SPEED, start_s=1000.0),
            pin_factory=pins,
            key_file=key,
            notifier=RecordingNotifier(),
            env={},
        ),
    )
    await runtime.start()
    try:
        await until(lambda: runtime.connection_state == state, state)
        yield runtime
    finally:
        await runtime.close()
        pins.close()


async def test_doctor_names_the_key_file_the_daemon_was_started_with(tmp_path: Path) -> None:
    # The daemon talks to a "provider" (the simulator at provider.url) with a
    # key from --key-file: doctor must report that file, not "no key: simulator".
    key = tmp_path / "dev.key"
    key.write_text("sk-test\n")
    key.chmod(0o644)
    with scenario_skill_installed(tmp_path):
        async with daemon_on_the_simulator(tmp_path, key, "connected", synth="tone") as runtime:
            facts = daemon_facts(runtime)
            checks = {c.name: c for c in await RuntimeControl(runtime).doctor()}
    assert not runtime.is_simulator
    assert f"key: {key} (--key-file)" in checks["config"].detail  # the same resolution
    assert checks["key file"].status == "warn"
    assert checks["key file"].detail.startswith(f"{key} (--key-file) may be read by others")
    assert facts.volume == "software gain"  # the WAV backend has no mixer
    assert checks["mixer"].status == "skipped"
    assert checks["audio"].status == "ok" and "injected backend" in checks["audio"].detail
    assert checks["gpio"].status == "warn" and "mock pins" in checks["gpio"].detail
    assert facts.pins_in_use == {"button": "GPIO17"}  # gpio-basic's button, as gpiozero holds it
    # One authenticated GET of the model: the simulator is no models API, and doctor says so.
    assert checks["provider"].status == "fail" and "127.0.0.1" in checks["provider"].detail


async def test_a_failing_skill_setup_is_left_out_and_doctor_names_it(tmp_path: Path) -> None:
    from huxleyd.app.control import RuntimeControl
    from tests.e2e.harness import Rig

    missing = tmp_path / "no-brain.key"
    rig = Rig(
        tmp_path,
        Scenario(turns=()),
        skills=("system", "brain"),
        skill_config={"brain": f'key_file = "{missing}"'},
    )
    async with rig:  # the daemon starts without the skill
        control = RuntimeControl(rig.rt)
        skills = {s.name: s for s in await control.skills()}
        checks = {c.name: c for c in await control.doctor()}
        status = await control.status()
    assert skills["system"].state == "ready"
    brain = skills["brain"]
    assert brain.state == "failed" and brain.tools == ()
    assert brain.reason.startswith("setup failed: "), brain.reason
    assert "No such file" in brain.reason
    assert "Error:" not in brain.reason  # no class names (ValueError: …)
    persona = tmp_path / "personas" / "default.toml"
    assert not checks["degraded parts"].ok
    assert "skill:brain: setup failed" in checks["degraded parts"].detail
    assert str(persona) in checks["degraded parts"].detail
    [problem] = status.problems
    assert problem.startswith("skill:brain: setup failed")


async def test_doctor_fails_the_key_the_provider_refused_in_its_words(tmp_path: Path) -> None:
    key = tmp_path / "openai.key"
    key.write_text("sk-wrong\n")
    key.chmod(0o600)
    with scenario_skill_installed(tmp_path):
        async with daemon_on_the_simulator(
            tmp_path, key, "key_refused", api_key="sk-right"
        ) as runtime:
            words = runtime.connection_status.detail
            checks = {c.name: c for c in await RuntimeControl(runtime).doctor()}
    line = checks["key file"]
    assert line.status == "fail"
    assert "the provider refused this key" in line.detail and words in line.detail
    assert "sk-wrong" not in line.detail
    assert checks["provider"].status == "skipped" and "refused" in checks["provider"].detail
