"""Build every part of the daemon from the configuration, in dependency order.

Layer: wiring. :func:`build` is the one place that knows which part needs
which: it opens each, records how to close it in :class:`~huxleyd.app.parts.
Resources`, and returns the frozen :class:`~huxleyd.app.parts.Parts`. It
starts no task and calls no skill: :class:`~huxleyd.app.runtime.Runtime`
does that once the record exists, so every callback below finds it whole.

The order, and why::

    storage          the volume level and the skills' storage live there
    earcons          read once; a missing palette only warns
    audio engine     its thread starts now: the software volume needs it
    volume           restores the last level (the daemon's own state)
    provider target  a key, or the built-in simulator started here
    connection       a Session (websocket or cascade), not yet running
    coordinator      the turn layer over the connection, engine and volume
    pins, button, LEDs
    watchdog         only when systemd asked for one (not yet started)
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from huxley_sdk import BackgroundTaskHandle, SkillContext
from huxley_sdk.context import InjectTurnAndWait
from huxleyd.app.parts import LocalSimulator, Overrides, Parts, Resources
from huxleyd.app.systemd import Notifier, StatusLine, Watchdog
from huxleyd.app.volume import make_volume
from huxleyd.audio import echo
from huxleyd.audio.backends.callback_backend import forced_callback_missing
from huxleyd.audio.earcons import earcons_problem, load_each_earcon
from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.factory import pick_backend
from huxleyd.audio.volume import PersistentVolume
from huxleyd.clock import Clock
from huxleyd.config.load import Config, PersonaString
from huxleyd.config.preflight import KeySource, Preflight
from huxleyd.config.preflight_io import PERSONA_SOUNDS, persona_sounds_dir, persona_sounds_problem
from huxleyd.control.feedwriter import FeedWriter
from huxleyd.control.speakerwatch import watch_speaker
from huxleyd.control.watch import EventFeed
from huxleyd.degraded import Degraded
from huxleyd.handsfree.detector import WakeUnavailable, load_detector
from huxleyd.handsfree.listener import WakeListener
from huxleyd.handsfree.mutefile import mute_path, read_muted
from huxleyd.hardware.button import PushToTalkButton
from huxleyd.hardware.led_controller import LedController
from huxleyd.hardware.led_drivers import make_led_driver
from huxleyd.hardware.led_follow import LedFollower
from huxleyd.hardware.led_patterns import LedState, limits_from_settings
from huxleyd.hardware.pins import PinFactory, choose_pin_factory
from huxleyd.logs import get_logger
from huxleyd.providers.apikey import read_api_key
from huxleyd.providers.base import Session
from huxleyd.providers.factory import create_connection
from huxleyd.providers.settings import ProviderSettings
from huxleyd.skillhost.events import ClientEvents
from huxleyd.skillhost.host import SkillHost
from huxleyd.storage.db import Database, FileSecrets
from huxleyd.storage.recovery import open_or_recover
from huxleyd.storage.writes import degraded_writes
from huxleyd.turns.coordinator import Coordinator
from huxleyd.turns.degraded_speech import DegradedSpeech
from huxleyd.turns.instructions import SessionInstructions
from huxleyd.turns.parts import MicSetup, TurnPersona, TurnPorts, TurnSettings, TurnTiming
from huxleyd.turns.supervisor import Supervisor
from huxleyd.turns.wake import WakeWord

log = get_logger("huxleyd.daemon")


class Hooks(Protocol):
    """What the built parts ask of the :class:`~huxleyd.app.runtime.Runtime`:
    commands and a lookup that read the live configuration (it changes at a
    reload). No report goes through here: reports are typed events the
    subscribers get straight from the coordinator and the session
    (:func:`subscribe_reports`).

    None of these is called before :func:`build` returned.
    """

    def configure_session(self, instructions: str) -> None: ...
    def renew_if_due(self) -> None: ...
    def persona_string(self, key: PersonaString) -> str: ...


@dataclass(frozen=True, slots=True)
class _Audio:
    engine: AudioEngine
    description: str


@dataclass(frozen=True, slots=True)
class _Pins:
    factory: PinFactory
    description: str
    button: PushToTalkButton
    leds: LedController


# longer than 50 lines: the steps in their order, then the record of every part; each step is a function below
async def build(
    config: Config,
    overrides: Overrides,
    *,
    checked: Preflight,
    clock: Clock,
    notifier: Notifier,
    hooks: Hooks,
    feed: EventFeed,
    resources: Resources,
    degraded: Degraded,
    setup_failure: str | None = None,
) -> Parts:
    """Every part, opened and wired; what was opened is in ``resources`` even when
    this raises half-way (the caller closes it). What runs degraded (a database
    moved aside or in memory) is reported to ``degraded``. ``setup_failure``: the
    image's setup failed (:mod:`huxleyd.config.setupreport`): no simulator, no key.

    The steps, in the order of the module docstring, each a function below."""
    db = await open_storage(config, resources, degraded)
    earcons = load_earcons(config, degraded)
    report_persona_sounds(config, degraded)
    audio = await open_audio(config, overrides, clock, resources, degraded)
    volume = await make_volume(config.audio, audio.engine, db)
    target = await provider_target(config, overrides, checked, setup_failure=setup_failure)
    if target.simulator is not None:
        resources.opened("simulator", target.simulator.close)
    watch = FeedWriter(feed, strings=hooks.persona_string, setup_failure=setup_failure)
    connection = create_connection(
        target.settings,
        api_key=target.api_key,
        on_event=watch.on_provider_event,  # the coordinator subscribes in wire_coordinator
        url=target.url,
        key_source=key_source(checked.key) if target.rereads_key else None,
        backoff=overrides.provider_backoff,
    )
    instructions = SessionInstructions(
        config.persona.effective_instructions,
        context=checked.host.prompt_context,
        apply=hooks.configure_session,
    )
    coordinator = await make_coordinator(
        config,
        connection,
        audio.engine,
        instructions=instructions,
        volume=volume,
        host=checked.host,
        earcons=earcons,
        clock=clock,
        hooks=hooks,
        resources=resources,
        degraded=degraded,
    )
    wire_coordinator(coordinator, connection, checked.host)
    pins = open_pins(config, overrides, clock, resources)
    subscribe_reports(coordinator, watch=watch, leds=pins.leds, notifier=notifier, hooks=hooks)
    engine = audio.engine
    return Parts(
        checked=checked,
        db=db,
        engine=engine,
        audio_description=audio.description,
        volume=volume,
        host=checked.host,
        connection=connection,
        instructions=instructions,
        coordinator=coordinator,
        pin_factory=pins.factory,
        pins_description=pins.description,
        button=pins.button,
        leds=pins.leds,
        is_simulator=target.is_simulator,
        simulator=target.simulator,
        watchdog=Watchdog.from_environment(
            audio_progress=lambda: engine.stats().periods, env=overrides.env, notifier=notifier
        ),
    )


async def open_storage(config: Config, resources: Resources, degraded: Degraded) -> Database:
    """The persona's database, whatever state its file is in (moved aside or in
    memory: reported to ``degraded``)."""
    db_path = config.storage.database_path(config.daemon.persona)
    opened = await asyncio.to_thread(open_or_recover, db_path)
    resources.opened("storage", opened.db.close)
    if opened.recovered is not None:
        degraded.report("storage", opened.recovered.what, file=str(db_path))
    opened.db.on_writes = degraded_writes(degraded, db_path, user=config.daemon.service_user)
    return opened.db


async def open_audio(
    config: Config,
    overrides: Overrides,
    clock: Clock,
    resources: Resources,
    degraded: Degraded,
) -> _Audio:
    """The audio engine on the injected backend or the one the card allows, its
    thread started (the software volume needs it)."""
    if overrides.backend is not None:
        backend, description = overrides.backend, "injected backend"
    else:
        backend, description = await asyncio.to_thread(pick_backend, config.audio)
        fallback = forced_callback_missing(config.audio.backend)
        if fallback is not None:  # the card cannot play: its open fails, retried
            degraded.report("audio", fallback, file=str(config.path))
    engine = AudioEngine(backend, settings=config.audio, clock=clock)
    watch_speaker(engine, degraded, reopen_s=config.audio.reopen_interval_s, file=str(config.path))
    engine.start()
    resources.opened("audio", engine.close)
    return _Audio(engine, description)


async def make_coordinator(
    config: Config,
    connection: Session,
    engine: AudioEngine,
    *,
    instructions: SessionInstructions,
    volume: PersistentVolume,
    host: SkillHost,
    earcons: dict[str, bytes],
    clock: Clock,
    hooks: Hooks,
    resources: Resources,
    degraded: Degraded,
) -> Coordinator:
    """The turn layer over the connection, the engine and the volume, with the
    wake word when one is configured and the mute the user last chose."""
    wake = open_wake(
        config,
        engine,
        connection.capabilities.input_rate_hz,
        resources=resources,
        degraded=degraded,
    )
    return Coordinator(
        TurnPorts(
            provider=connection,
            audio=engine,
            volume=volume,
            host=host,
            degraded=degraded,
            renew_session_if_due=hooks.renew_if_due,
        ),
        persona=TurnPersona(
            instructions=config.persona.effective_instructions,
            session_instructions=instructions,
            earcons=earcons,
        ),
        settings=TurnSettings(silent_response_timeout_s=config.provider.silent_response_timeout_s),
        timing=TurnTiming(clock=clock),
        mic=MicSetup(
            wake=wake,
            muted=await asyncio.to_thread(read_muted, mute_path(config.storage.state_dir)),
        ),
    )


def wire_coordinator(coordinator: Coordinator, connection: Session, host: SkillHost) -> None:
    """The session's events and states, the wake word's detections and the tools'
    outcomes go to the coordinator straight, not through the root: each is
    handed the coordinator's own method, once it exists."""
    connection.subscribe(coordinator.on_provider_event)
    connection.report_states_to(coordinator.on_connection_status)
    if coordinator.wake_word is not None:
        coordinator.wake_word.deliver_to(coordinator.wake)
    host.on_outcome = coordinator.tool_finished
    # A renewal (a session cap, Gemini's goAway) never cuts a reply the user is hearing.
    connection.hold_renewals_until(coordinator)


def open_pins(config: Config, overrides: Overrides, clock: Clock, resources: Resources) -> _Pins:
    """The pin factory (injected, or the board's), the button and the LEDs (idle)."""
    if overrides.pin_factory is not None:
        factory, description = overrides.pin_factory, "injected"
    else:
        factory, description = choose_pin_factory(
            config.hardware, env=overrides.env, config_file=str(config.path)
        )
    button = PushToTalkButton.from_profile(
        config.board.button,
        pin_factory=factory,
        max_hold_s=config.hardware.max_hold_s,
        clock=clock,
    )
    resources.opened("button", button.close)
    driver = make_led_driver(config.board.leds, pin_factory=factory, spi=overrides.led_spi)
    leds = LedController(driver, clock, limits_s=limits_from_settings(config.hardware.led_limits))
    resources.opened("leds", leds.close)
    leds.set_state(LedState.IDLE)
    return _Pins(factory, description, button, leds)


def subscribe_reports(
    coordinator: Coordinator,
    *,
    watch: FeedWriter,
    leds: LedController,
    notifier: Notifier,
    hooks: Hooks,
) -> None:
    """Who follows the coordinator's typed events (:mod:`huxleyd.turns.news`),
    subscribed once, in this order: the ``watch`` feed, the LEDs, systemd's
    status line, the spoken "something is wrong". None of them relays
    anything back; each is called on the loop as the fact becomes true."""
    speech = DegradedSpeech(
        coordinator.spawn,
        coordinator.proactive.inject_turn,
        string=lambda: hooks.persona_string(PersonaString.DEGRADED),
    )
    coordinator.subscribe(watch.on_news)
    coordinator.subscribe(LedFollower(leds).on_news)
    coordinator.subscribe(StatusLine(notifier).on_news)
    coordinator.subscribe(speech.on_news)


# ---------------------------------------------------------------- the wake word


def open_wake(
    config: Config,
    engine: AudioEngine,
    input_rate_hz: int,
    *,
    resources: Resources,
    degraded: Degraded,
) -> WakeWord | None:
    """The wake word when ``[wake] model`` names one and its detector loads here.

    A detector that cannot run (no pymicro-wakeword wheel for this platform,
    a model that does not load) degrades: the button works, and status,
    doctor and the first press say why. ``during_playback = "auto"`` listens
    while the speaker plays when the echo canceller was built: the engine then
    keeps what it played, by DAC time, for the detector's canceller."""
    settings = config.wake
    if not settings.enabled:
        return None
    cancel_echo = settings.during_playback == "auto" and echo.AVAILABLE
    try:
        detector = load_detector(settings.model, input_rate_hz, cancel_echo=cancel_echo)
    except WakeUnavailable as exc:
        degraded.report("wake", str(exc), file=str(config.path))
        return None
    if cancel_echo:
        engine.enable_far_end()
    far_end = engine.read_far_end if cancel_echo else None
    listener = WakeListener(detector, far_end=far_end)  # build wires the coordinator
    listener.start(asyncio.get_running_loop())
    resources.opened("wake", listener.close)
    playback_ok = settings.during_playback == "on" or cancel_echo
    log.info(
        "wake_word_armed",
        model=settings.model,
        during_playback=playback_ok,
        persona_allows=config.persona.wake_word,
    )
    return WakeWord(
        listener, settings, playback_ok=playback_ok, persona_allows=config.persona.wake_word
    )


# ---------------------------------------------------------------- audio


def load_earcons(config: Config, degraded: Degraded) -> dict[str, bytes]:
    """The earcons, each file on its own, as ``--check-config`` reads them
    (:func:`huxleyd.audio.earcons.load_each_earcon`): one broken file is a
    degraded ``earcons`` part and silences its own cue only."""
    sounds = config.daemon.sounds_dir
    loaded, broken = load_each_earcon(sounds)
    problem = earcons_problem(sounds, broken)
    if problem is not None:  # status and doctor say it; a cue would be an earcon itself
        degraded.report("earcons", problem, file=str(sounds), cue=False)
    return {str(role): pcm for role, pcm in loaded.items()}


def report_persona_sounds(config: Config, degraded: Degraded) -> None:
    """Each of the persona's sounds on its own, as ``--check-config`` reads them: one
    that cannot be read is named in the degraded ``persona-sounds`` part (its skill
    plays the others and leaves that one silent)."""
    problem = persona_sounds_problem(config)
    if problem is not None:
        folder = persona_sounds_dir(config)
        fix = f"replace each file named with a PCM WAV readable by the service user, in {folder}"
        degraded.report(PERSONA_SOUNDS, problem, file=str(folder), cue=False, fix=fix)


# ---------------------------------------------------------------- provider


def read_key(source: KeySource | None) -> str | None:
    """The API key from the file :func:`~huxleyd.config.preflight.key_source` chose (None: no key)."""
    if source is None:
        return None
    return read_api_key(source.path, key=source.key)


def key_source(source: KeySource | None) -> Callable[[], str | None]:
    """Re-reads the key before every try: a key fixed after a refusal is used
    without a restart. The transport also polls it every few seconds while the
    key is missing or refused; a file whose inode, size and mtime are unchanged
    is not read again (nor its warnings logged again)."""
    seen: dict[str, tuple[tuple[int, int, int], str | None]] = {}

    def read() -> str | None:
        if source is None:
            return None
        try:
            st = source.path.stat()
            stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            stamp = None
        if stamp is not None and "last" in seen and seen["last"][0] == stamp:
            return seen["last"][1]
        token = read_key(source)
        if stamp is not None:
            seen["last"] = (stamp, token)
        return token

    return read


@dataclass(frozen=True, slots=True)
class ProviderTarget:
    """Where the connection goes, with what key, and whether that is a simulator."""

    settings: ProviderSettings
    url: str | None
    """None: ``settings.url``."""
    api_key: str | None
    is_simulator: bool
    simulator: LocalSimulator | None = None
    """The simulator started for this daemon (closed with it)."""

    @property
    def rereads_key(self) -> bool:
        return self.api_key is not None and not self.is_simulator


async def provider_target(
    config: Config, overrides: Overrides, checked: Preflight, *, setup_failure: str | None = None
) -> ProviderTarget:
    """The real provider with a key, else the built-in simulator (started here).

    Neither when the image's setup failed: the daemon then says so instead of
    answering (:mod:`huxleyd.config.setupreport`), and no connection is made.
    """
    provider = config.provider
    if setup_failure is not None:
        return ProviderTarget(provider, None, None, is_simulator=False)
    if provider.kind == "cascade":
        return await _cascade_target(provider, checked)
    if overrides.provider_url is not None:
        return ProviderTarget(provider, overrides.provider_url, None, is_simulator=True)
    api_key = None if provider.kind == "sim" else read_key(checked.key)
    if api_key is not None:
        return ProviderTarget(provider, None, api_key, is_simulator=False)
    why = "provider.kind is sim" if provider.kind == "sim" else "no API key configured"
    from huxleyd.sim.server import SimServer  # loads the openai package: on demand

    sim = SimServer(provider.sim_scenario, speed=provider.sim_speed, dialect=provider.dialect)
    await sim.start()
    log.warning(
        "simulator_mode",
        reason=why,
        url=sim.url,
        note="answers come from a scripted simulator, not an AI; put an API key in "
        "/etc/huxleyd/openai.key (or ./openai.key for make run) to talk to a model",
    )
    return ProviderTarget(provider, sim.url, None, is_simulator=True, simulator=sim)


async def _cascade_target(provider: ProviderSettings, checked: Preflight) -> ProviderTarget:
    """Cascade settings and key: the cascade simulator when a scenario is set.

    A fully local cascade (llama.cpp, espeak-ng) needs no key, so only
    ``sim_scenario`` selects the simulator here, never a missing key.
    """
    if provider.sim_scenario is None:
        return ProviderTarget(provider, None, read_key(checked.key), is_simulator=False)
    from huxleyd.sim.chat import CascadeSim  # loads the openai package: on demand

    sim = CascadeSim(provider.sim_scenario, speed=provider.sim_speed)
    await sim.start()
    log.warning(
        "simulator_mode",
        reason="provider.sim_scenario is set",
        url=sim.http_url,
        note="the recogniser, chat model and voice are a scripted simulator, not an AI",
    )
    settings = dataclasses.replace(provider, cascade=sim.settings_for(provider.cascade))
    return ProviderTarget(settings, None, None, is_simulator=True, simulator=sim)


# ---------------------------------------------------------------- skills


def persona_data_dir(config: Config) -> Path:
    """The persona's data folder (first-party skills' ``persona_data_dir``), made if missing."""
    data_dir = config.persona.data_dir or config.storage.persona_data_dir(config.daemon.persona)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a read-only disk: a skill that needs it fails its own setup
        log.error("persona_data_dir_unavailable", path=str(data_dir), error=str(exc))
    return data_dir


def skill_context_factory(
    config: Config,
    *,
    db: Database,
    host: SkillHost,
    coordinator: Coordinator,
    supervisor: Supervisor,
    client_events: ClientEvents,
    volume: PersistentVolume,
) -> Callable[[str, dict[str, Any]], SkillContext]:
    """Makes each skill's :class:`~huxley_sdk.SkillContext` (at setup and at reload).

    ``ctx.speaker_volume()`` reads the device's ``volume`` part (the level the
    speaker has), which the daemon owns and persists (:mod:`huxleyd.app.volume`)."""
    persona = config.persona
    data_dir = persona_data_dir(config)
    proactive = coordinator.proactive

    def make(skill: str, skill_config: dict[str, Any]) -> SkillContext:
        skill_config.setdefault("timezone", persona.timezone)
        skill_config.setdefault("_language", persona.language)  # as Huxley's persona sets it

        def background_task(name: str, coro_factory: Any, **kwargs: Any) -> BackgroundTaskHandle:
            return supervisor.background_task(
                f"{skill}:{name}", coro_factory, owner=skill, **kwargs
            ).handle

        return SkillContext(
            subscribe_client_event=client_events.subscriber(skill),
            emit_server_event=client_events.emitter(skill),
            logger=get_logger(f"huxley.skill.{skill}", skill=skill),
            storage=db.skill_storage(host.storage_namespace(skill)),
            secrets=FileSecrets(config.storage.secrets_dir, skill),
            persona_data_dir=data_dir,
            config=skill_config,
            language=persona.language,
            timezone=persona.timezone,
            inject_turn=proactive.inject_turn,
            # Returns whether it was heard: a huxleyd extension of the SDK's signature.
            inject_turn_and_wait=cast(InjectTurnAndWait, proactive.inject_turn_and_wait),
            background_task=background_task,
            start_input_claim=proactive.start_input_claim,
            cancel_active_claim=proactive.cancel_active_claim,
            speaker_volume=volume.get_level,
        )

    return make
