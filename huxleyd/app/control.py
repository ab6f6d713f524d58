"""The daemon's answers on the control socket (``huxleyctl``).

Implements :class:`~huxleyd.control.handler.ControlHandler` over a running
:class:`~huxleyd.app.runtime.Runtime`. Reads state; changes go through the same
paths the button and the skills use (the coordinator, the volume control),
so ``huxleyctl`` can never do what the device itself would not.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import importlib.metadata as metadata
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any

from huxley_sdk import Skill
from huxleyd import __version__
from huxleyd.app.build import read_key
from huxleyd.app.parts import Parts
from huxleyd.app.runtime import Runtime
from huxleyd.audio.types import EngineStats
from huxleyd.clock import WallClockWatch
from huxleyd.config.load import Config, PersonaString
from huxleyd.config.preflight import KeySource
from huxleyd.control.diagnose import Facts, doctor_checks
from huxleyd.control.doctor import KeyFacts, run_checks
from huxleyd.control.errors import CommandFailedError
from huxleyd.control.handler import (
    DoctorCheck,
    LevelsSample,
    SkillInfo,
    StatusReport,
    XrunCounts,
)
from huxleyd.control.protocol import PttAction
from huxleyd.control.reboot import busy_reasons, next_alert_in_s, reboot_pending
from huxleyd.control.speakerwatch import PART as SPEAKER_PART
from huxleyd.control.watch import WatchEvent
from huxleyd.degraded import Problem
from huxleyd.home.mqtt import AnnounceRefused
from huxleyd.home.speaker import Check
from huxleyd.logs import get_logger
from huxleyd.providers.base import ConnectionState, ConnectionStatus
from huxleyd.skillhost.skillenv import SkillsEnv, skills_env
from huxleyd.skills.skillclock import system_clock_for
from huxleyd.turns.news import ConnectionChanged
from huxleyd.turns.wake import WakeWord
from huxleyd.update import running_release

log = get_logger("huxleyd.control")

TAP_HOLD_S = 1.0
"""How long ``huxleyctl ptt tap`` holds the button: long enough to be a turn."""


def check_runtime_tasks(health: dict[str, str]) -> DoctorCheck:
    """The daemon's own tasks (button, provider, LEDs, heartbeat) all run."""
    down = {name: state for name, state in health.items() if not state.startswith("running")}
    restarted = {name: state for name, state in health.items() if "restarted" in state}
    if down:
        detail = "; ".join(f"{name}: {state}" for name, state in down.items())
        return DoctorCheck(
            "runtime tasks",
            False,
            detail,
            "see `huxleyctl logs` for background_task_crashed; restart the service",
        )
    detail = ", ".join(health) + " running"
    if restarted:
        detail += " (" + "; ".join(f"{n}: {s}" for n, s in restarted.items()) + ")"
    return DoctorCheck("runtime tasks", True, detail)


def doctor_check(check: Check) -> DoctorCheck:
    """A home integration check (:meth:`huxleyd.home.speaker.Home.checks`) as a doctor line."""
    if check.ok:
        return DoctorCheck.passed(check.name, check.detail)
    return DoctorCheck.warning(check.name, check.detail, check.fix)


DEGRADED_FIX = (
    "see `huxleyctl logs` for part_degraded; fix the file or the skill named, then "
    "restart (a skill whose setup failed is retried by itself)"
)
"""doctor's advice for a degraded part whose reporter gave none of its own."""


def check_degraded(problems: Sequence[Problem]) -> DoctorCheck:
    """Parts that run degraded (the database moved aside, a skill left out, writes
    failing…), read from the one record status shows, each with the advice its
    reporter fitted to the cause (:attr:`Problem.fix`)."""
    if not problems:
        return DoctorCheck("degraded parts", True, "none left out by the daemon")
    fixes = [f"{p.part}: {p.fix}" for p in problems if p.fix]
    if len(fixes) < len(problems):
        fixes.append(DEGRADED_FIX)
    return DoctorCheck(
        "degraded parts", False, "; ".join(p.line() for p in problems), "; ".join(fixes)
    )


def check_wall_clock(watch: WallClockWatch, *, synced: bool) -> DoctorCheck:
    """Whether the wall clock can be trusted (reminders wait until it can), and its steps."""
    steps = watch.steps
    seen = (
        f"; set {len(steps)}x since start, last by {steps[-1]:+.0f} s"
        if steps
        else "; not set since start"
    )
    if synced:
        return DoctorCheck.passed("clock", "synchronised" + seen)
    return DoctorCheck(
        "clock",
        True,
        "not synchronised (no time sync since boot, no real-time clock): "
        "reminders wait for it; timers run" + seen,
        "check the network and the time service (`timedatectl status`)",
        "warn",
    )


class RuntimeControl:
    """``ControlHandler`` for the running daemon."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    async def status(self) -> StatusReport:
        rt = self._rt
        conn = rt.connection_status
        starting = StatusReport(
            state="starting",
            provider_state=conn.state.value,
            media=None,
            volume=-1,  # the control socket answers before the volume is open
            uptime_s=round(rt.clock.monotonic() - rt.started_at, 1),
            persona=rt.config.persona.name,
            provider_kind=rt.config.provider.kind,
            is_simulator=rt.is_simulator,
            provider_attempt=conn.attempt,
            provider_detail=conn.detail,
            provider_retry_in_s=rt.next_try_in_s(),
            problems=tuple(rt.degraded.lines()),
            busy=busy_reasons("starting", None),
            reboot_pending=reboot_pending(rt.overrides.reboot_flag),
            reboot_policy=rt.config.persona.updates.reboot,
            home=tuple(rt.home.status_lines()) if rt.home is not None else (),
            version=__version__,
            release=running_release() or "",
        )
        parts = rt.built
        if parts is None:
            return starting
        coordinator, stats = parts.coordinator, parts.engine.stats()
        last = coordinator.last_turn
        return dataclasses.replace(
            starting,
            state=coordinator.activity,
            busy=busy_reasons(coordinator.activity, next_alert_in_s(parts.host.skills)),
            media=coordinator.media.label,
            provider_stalls=parts.connection.stalls,
            provider_unlogged_notes=parts.connection.unlogged_notes,
            volume=await parts.volume.get_level(),
            xruns=XrunCounts(
                underruns=stats.underruns,
                overruns=stats.overruns,
                late_periods=stats.late_periods,
                dropped_mic_frames=stats.mic_frames_dropped,
                card_underruns=stats.card_underruns,
                speaker_dropouts=stats.speaker_dropouts,
                source_gaps=stats.source_gaps,
                silences=stats.silences.to_dict(),
            ),
            last_turn_timings_ms=last.timings_ms() if last else {},
            last_turn_id=last.turn_id if last else None,
        )

    def _parts(self, what: str) -> Parts:
        """The built parts, or the refusal naming ``what`` is not ready yet."""
        if self._rt.built is None:
            raise CommandFailedError(f"{what} is not ready yet")
        return self._rt.built

    async def get_volume(self) -> int:
        return await self._parts("the volume control").volume.get_level()

    async def set_volume(self, level: int) -> int:
        volume = self._parts("the volume control").volume
        before = await volume.get_level()
        really = await volume.set_level(level)
        # The journal (and `huxleyctl watch`) say who moved the volume.
        log.info("volume_changed", by="huxleyctl", previous=before, requested=level, level=really)
        if volume.unsaved:  # the speaker has it; a restart will not: never "done"
            what = (
                f"volume {really} was set but not saved ({volume.unsaved_why}): "
                "it will not outlive a restart"
            )
            self._rt.degraded.report("settings", what, file=None)
            raise CommandFailedError(f"the speaker is at {really}, but {what}")
        self._rt.degraded.clear("settings")
        return really

    async def get_muted(self) -> bool:
        return self._parts("the microphone").coordinator.muted

    async def set_muted(self, muted: bool) -> bool:
        coordinator = self._parts("the microphone").coordinator
        coordinator.set_muted(muted)  # the runtime saves it too (Runtime.on_mute)
        unsaved = await self._rt.save_mute()
        if unsaved is not None:  # it holds now; a restart would forget it: never "done"
            state = "muted" if coordinator.muted else "not muted"
            what = f"the microphone is {state} but that was not saved ({unsaved}): " + (
                "it will not outlive a restart"
            )
            self._rt.degraded.report("settings:mute", what, file=None)
            raise CommandFailedError(what)
        self._rt.degraded.clear("settings:mute")
        return coordinator.muted

    async def say(self, text: str) -> str:
        if self._rt.built is None:
            raise CommandFailedError("the daemon is still starting")
        coordinator = self._rt.built.coordinator
        await self._first_try_settled()
        if self._rt.connection_state is ConnectionState.OFFLINE:
            raise CommandFailedError(self._rt.persona_string(PersonaString.OFFLINE))
        not_connected = self._not_connected()
        if not_connected is not None:
            raise CommandFailedError(not_connected)
        if self._rt.setup_failure is not None:
            raise CommandFailedError(self._rt.setup_failure)
        if self._rt.connection_state is ConnectionState.KEY_REFUSED:
            raise CommandFailedError(
                "the provider refused the API key: fix the key file (it is re-read on every try)"
            )
        if self._rt.connection_state is ConnectionState.KEY_MISSING:
            detail = self._rt.connection_status.detail
            raise CommandFailedError(
                f"no API key: {detail or 'the key file is missing'}; put it back "
                "(it is used within seconds)"
            )
        turn = coordinator.say(text)
        self._rt.feed.publish("heard", turn=turn, text=text, via="huxleyctl say")
        return turn

    async def _first_try_settled(self) -> None:
        """A try in flight with none failed yet (the start, a renewal): wait for its
        outcome, at most the connect timeout, so a say at start is not refused."""
        rt = self._rt

        def in_flight(status: ConnectionStatus) -> bool:
            return status.state is ConnectionState.CONNECTING and status.attempt == 0

        if rt.built is None or not in_flight(rt.connection_status):
            return
        settled = asyncio.Event()

        def on_news(news: object) -> None:
            if isinstance(news, ConnectionChanged) and not in_flight(news.status):
                settled.set()

        unsubscribe = rt.built.coordinator.subscribe(on_news)
        try:
            async with asyncio.timeout(rt.config.provider.connect_timeout_s):
                await settled.wait()
        except TimeoutError:
            pass
        finally:
            unsubscribe()

    def _not_connected(self) -> str | None:
        """Why a typed turn cannot be answered now (a try failed and the next waits;
        a stalled session being dropped), in the connection's own words; None: go on."""
        rt = self._rt
        status = rt.connection_status
        failing = status.state in (ConnectionState.RECONNECTING, ConnectionState.STALLED) or (
            status.state is ConnectionState.CONNECTING and status.attempt > 0
        )
        if not failing:
            return None
        why = status.detail or status.state.value
        retry = rt.next_try_in_s()
        then = f"; next try in {retry:g} s" if retry is not None else "; still trying"
        return f"not connected to the provider ({why}){then}: nothing was sent"

    async def announce(self, text: str, room: str | None) -> list[str]:
        """``huxleyctl announce``: through the household's broker ([mqtt])."""
        home = self._rt.home
        if home is None:
            raise CommandFailedError("this speaker has no household: no [mqtt] in huxleyd.toml")
        try:
            return await home.announce(text, room)
        except AnnounceRefused as exc:
            raise CommandFailedError(str(exc)) from None

    async def stop(self) -> bool:
        parts = self._rt.built
        return await parts.coordinator.stop_media() if parts is not None else False

    async def client_event(self, key: str, data: dict[str, Any]) -> list[str]:
        return await self._rt.client_events.deliver(key, data)

    async def skills(self) -> list[SkillInfo]:
        parts = self._rt.built
        if parts is None:
            return []
        host = parts.host
        return skill_infos(host.skills, host.sources, host.failed, order=host.order)

    async def ptt(self, action: PttAction) -> None:
        button = self._parts("the button").button
        if action in (PttAction.PRESS, PttAction.TAP):
            button.press()
        if action is PttAction.TAP:
            await asyncio.sleep(TAP_HOLD_S)
        if action in (PttAction.RELEASE, PttAction.TAP):
            button.release()

    async def levels(self) -> AsyncIterator[LevelsSample]:
        if self._rt.built is None:
            raise CommandFailedError("the audio engine is not running")
        engine = self._rt.built.engine
        while True:
            stats = engine.stats()
            yield LevelsSample(
                mic_dbfs=stats.input_rms_dbfs,
                output_dbfs=stats.output_rms_dbfs,
                silences=stats.silences.count,
            )
            await asyncio.sleep(0.1)

    async def watch(self) -> AsyncIterator[WatchEvent]:
        async for event in self._rt.feed.subscribe():
            yield event

    async def doctor(self) -> list[DoctorCheck]:
        """The doctor's checks against what this daemon really runs."""
        rt = self._rt
        facts = daemon_facts(rt)
        checks = doctor_checks(
            rt.config.path,
            rt.config,
            facts,
            key_file=rt.overrides.key_file,  # the config line resolves the key as the start did
            env=rt.overrides.env,
            reboot_flag=rt.overrides.reboot_flag,
        )
        health = rt.task_health()
        checks.append(lambda: check_runtime_tasks(health))
        if rt.built is not None:
            coordinator = rt.built.coordinator
            checks.append(
                lambda: check_wake_word(rt.config, coordinator.wake_word, coordinator.muted)
            )
        problems = rt.degraded.problems()
        checks.append(lambda: check_degraded(problems))
        if rt.home is not None:
            for home_check in rt.home.checks():
                checks.append(functools.partial(doctor_check, home_check))
        watch = rt.loop_watch
        checks.append(
            lambda: (
                DoctorCheck.warning(
                    "event loop",
                    watch.summary(),
                    "see `huxleyctl logs` for loop_stalled: a skill or tool blocks the loop "
                    "(time.sleep, blocking I/O); it should await or use asyncio.to_thread",
                )
                if watch.worst is not None
                else DoctorCheck.passed("event loop", watch.summary())
            )
        )
        # Asked as the timers skill asks it (its time_sync_flag, if set).
        synced = system_clock_for(rt.config.persona.skills.get("timers", {})).wall_plausible()
        checks.append(lambda: check_wall_clock(rt.clock_watch, synced=synced))
        return await run_checks(checks)


def daemon_facts(rt: Runtime) -> Facts:
    """What the running daemon really uses: the key file it read, its volume, its pins."""
    from huxleyd.audio.volume import AlsaMixerVolume
    from huxleyd.hardware.pins import is_mock

    parts = rt.built
    source = parts.checked.key if parts is not None else None
    key = _key_facts(rt, source)
    if parts is None:
        return Facts(
            key=key,
            read_key=lambda: read_key(source),
            simulator=False,
            audio_state="closed",
            audio_description="",
            volume="nothing yet (starting)",
            pin_factory="",
            pins_mock=False,
            pins_in_use={},
        )
    control = parts.volume.control
    if isinstance(control, AlsaMixerVolume):
        volume = f"mixer {control.control_name!r} on card {control.card!r}"
    else:
        volume = "software gain"
    stats = parts.engine.stats()
    speaker = rt.degraded.get(SPEAKER_PART)
    return Facts(
        key=key,
        read_key=lambda: read_key(source),
        simulator=parts.is_simulator,
        # a dead audio thread is not "open", whatever the device says
        audio_state=stats.device_state.value if stats.running else "stopped (no audio thread)",
        audio_description=_audio_description(parts.audio_description, stats, speaker is None),
        audio_widened=stats.period_widened,
        audio_card_xruns=(stats.card_underruns, stats.overruns),
        audio_failing=None if speaker is None else (speaker.what, speaker.fix),
        uptime_s=rt.clock.monotonic() - rt.started_at,
        volume=volume,
        pin_factory=parts.pins_description,
        pins_mock=is_mock(parts.pin_factory),
        pins_in_use={"button": parts.button.pin_name},
    )


def _key_facts(rt: Runtime, source: KeySource | None) -> KeyFacts:
    """The key the daemon uses: the file it read (and whether it was refused), or why none."""
    if source is not None and not rt.is_simulator:
        status = rt.connection_status
        refused = status.detail if status.state is ConnectionState.KEY_REFUSED else None
        return KeyFacts(source.path, source.key, refused=refused)
    if rt.config.provider.kind == "sim":
        return KeyFacts(None, "provider.kind is sim: no key needed")
    if rt.is_simulator:
        why = "Overrides.provider_url" if rt.overrides.provider_url else "no key file"
        return KeyFacts(None, why, simulator=True)
    return KeyFacts(None, "the cascade's stages use their own keys or none")


def _audio_description(description: str, stats: EngineStats, recovered: bool) -> str:
    """The card as opened, with what went wrong since (faults, a wider period, dropouts).

    ``recovered``: no ``speaker`` part is open; while one is, it says what fails."""
    if stats.faults and recovered:  # it works again, but the user should know it failed
        description += f" (recovered from {stats.faults} audio fault(s); last: {stats.last_fault})"
    if stats.period_widened:
        description += f" ({stats.period_widened})"
    if stats.speaker_dropouts:  # the card saw nothing: only this counter did
        description += (
            f" (the speaker went silent in {stats.speaker_dropouts} device period(s) while"
            f" audio was queued{_by_source(stats.source_dropouts)}: the audio thread was not"
            " run in time)"
        )
    return description


def skill_infos(
    skills: Iterable[Skill],
    sources: Mapping[str, str],
    failures: Mapping[str, str] | None = None,
    *,
    order: Sequence[str] | None = None,
) -> list[SkillInfo]:
    """What ``huxleyctl skills`` lists: each skill's distribution, its version, and
    ``ready`` or ``failed`` with the reason (``failures``: skill name → reason).

    ``order``: the persona's skill names, so a skill that was left out (it
    offers no tools) is listed in its place; without it, the loaded skills."""
    failures = failures or {}
    loaded = {skill.name: skill for skill in skills}
    rows: list[SkillInfo] = []
    for name in order if order is not None else list(loaded):
        skill = loaded.get(name)
        distribution = sources.get(name, "")
        version = installed_version(distribution)
        reason = failures.get(name, "") or ("" if skill else "not loaded")
        rows.append(
            SkillInfo(
                name,
                tuple(t.name for t in skill.tools) if skill and not reason else (),
                distribution=distribution,
                version=version,
                state="failed" if reason else "ready",
                reason=reason,
            )
        )
    return rows


def installed_version(distribution: str, env: SkillsEnv | None = None) -> str:
    """``distribution``'s version: in the daemon's environment, else in the skills
    environment (a third-party skill is installed there, never here); '' if neither."""
    if not distribution:
        return ""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        pass
    where = [str((env or skills_env()).site_packages)]
    found = next(iter(metadata.distributions(name=distribution, path=where)), None)
    return found.version if found is not None else ""


def _by_source(counts: tuple[tuple[str, int], ...]) -> str:
    """ " (speech 3, content 2)": which sources' audio the dropouts fell in."""
    if not counts:
        return ""
    return " (" + ", ".join(f"{name} {count}" for name, count in counts) + ")"


def check_wake_word(config: Config, wake: WakeWord | None, muted: bool) -> DoctorCheck:
    """The wake word as it runs: off, not running (and why), muted, or listening."""
    name = "wake word"
    if not config.wake.enabled:
        return DoctorCheck.skipped(name, "off ([wake] model unset): the button only")
    if wake is None:
        return DoctorCheck.warning(
            name,
            f"{config.wake.model!r} configured but not running (see the degraded line)",
            "install pymicro-wakeword in the daemon's venv (x86_64, aarch64), or fix [wake] model",
        )
    if not wake.persona_allows:
        return DoctorCheck.skipped(
            name, f"off for persona {config.persona.name!r} (wake_word = false)"
        )
    if muted:
        return DoctorCheck.warning(name, "the microphone is muted", "huxleyctl mute off")
    playback = (
        "also while the speaker plays (voice barge-in)"
        if wake.playback_ok
        else "not while the speaker plays (during_playback, or no echo canceller: press)"
    )
    return DoctorCheck.passed(name, f"{config.wake.model!r} listens on the device; {playback}")
