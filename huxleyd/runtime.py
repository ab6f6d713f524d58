"""Wiring: build every layer from the configuration, start it, stop it.

Behaviour lives in the layers; this module only connects them. Tests build
a :class:`Runtime` with :class:`RuntimeParts` overrides (a WAV backend and a
scaled clock, mock pins, the simulator's URL, a recording notifier) and get
the same daemon that runs on a Pi.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from huxley_sdk import BackgroundTaskHandle, SkillContext
from huxley_sdk.audio import PaletteError, read_palette
from huxley_sdk.context import InjectTurnAndWait
from huxleyd import __version__
from huxleyd.audio.backends.base import AudioBackend
from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.factory import choose_backend
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.volume import PersistentVolume
from huxleyd.clock import Clock, MonotonicClock
from huxleyd.config import Config, load_persona
from huxleyd.control.watch import EventFeed, FeedLogTap
from huxleyd.errors import ConfigError, SkillSetupError
from huxleyd.hardware.boards import BoardProfile
from huxleyd.hardware.button import ButtonEventKind, PushToTalkButton
from huxleyd.hardware.leds import LedController, LedState, limits_from_settings, make_led_driver
from huxleyd.hardware.pins import choose_pin_factory
from huxleyd.logs import get_logger
from huxleyd.preflight import KeySource, Preflight, preflight
from huxleyd.providers.base import ConnectionStatus, Session
from huxleyd.providers.events import (
    Event,
    ResponseDone,
    Role,
    ToolCall,
    TranscriptDelta,
    TranscriptDone,
)
from huxleyd.providers.factory import create_connection
from huxleyd.providers.settings import ProviderSettings
from huxleyd.providers.transport import read_api_key
from huxleyd.service import Notifier, Watchdog
from huxleyd.skillevents import ClientEvents
from huxleyd.skillhost import SkillHost, ToolOutcome
from huxleyd.skillsources import SOURCE_KEY
from huxleyd.storage import Database, FileSecrets
from huxleyd.turns.coordinator import Activity, Coordinator, TurnSettings
from huxleyd.turns.instructions import SessionInstructions
from huxleyd.turns.state import TurnOutcome, TurnRecord
from huxleyd.turns.supervisor import SupervisedTask, Supervisor
from huxleyd.volume_wiring import make_volume

if TYPE_CHECKING:  # the simulators and the cascade load the openai package: on demand
    from huxleyd.sim.chat import CascadeSim
    from huxleyd.sim.server import SimServer

log = get_logger("huxleyd.daemon")

STOP_BUDGET_S = 15.0
""":meth:`Runtime.close` returns within this, whatever a skill does (the unit's
``TimeoutStopSec`` is 20 s: the rest is for the interpreter to exit)."""

RUNTIME_RESTARTS_PER_HOUR = 20
"""A runtime task that died more often than this in an hour stays down (doctor shows it)."""

PERSONA_STRINGS = {
    "too_short": "Too short: hold the button while you speak.",
    "offline": "Offline: the provider is unreachable; still trying.",
}
"""The persona strings the daemon shows, with their defaults (a persona's
``[i18n.<lang>.strings]`` overrides them): in ``huxleyctl say`` refusals and
the ``watch`` feed, beside the earcons that say the same aloud."""

ACTIVITY_LEDS = {
    Activity.IDLE: LedState.IDLE,
    Activity.LISTENING: LedState.LISTENING,
    Activity.THINKING: LedState.THINKING,
    Activity.SPEAKING: LedState.SPEAKING,
    Activity.MEDIA: LedState.MEDIA,
    Activity.OFFLINE: LedState.OFFLINE,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeParts:
    """What tests (and ``make run``) may replace. ``None`` = build from config."""

    backend: AudioBackend | None = None
    clock: Clock | None = None
    pin_factory: Any = None
    key_file: Path | None = None
    """Overrides the configured key file (``huxleyd --key-file``)."""
    provider_url: str | None = None
    """Talk to this URL without a key (a simulator the caller runs)."""
    notifier: Notifier | None = None
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    led_spi: Any = None


@contextlib.contextmanager
def quiet_native_stderr() -> Iterator[None]:
    """Silence what C libraries print on fd 2 while PortAudio probes devices.

    On a machine without a card, ALSA and JACK print dozens of lines there;
    our own log line says what happened instead. Python-level logging is
    unaffected only if it does not write during the block (it does not).
    """
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def pick_backend(audio: AudioSettings) -> tuple[AudioBackend, str]:
    """The backend ``[audio] backend`` asks for (auto: PyAudio when a device opens)."""
    with quiet_native_stderr():
        backend, _clock = choose_backend(audio)
    if isinstance(backend, WavBackend):
        where = f"mic {audio.mic_wav or 'silence'}, speaker {audio.speaker_wav or 'nowhere'}"
        return backend, f"wav ({where})"
    return backend, f"pyaudio ({audio.capture_device} → {audio.playback_device})"


def read_key(source: KeySource | None) -> str | None:
    """The API key from the file :func:`~huxleyd.preflight.key_source` chose (None: no key)."""
    if source is None:
        return None
    return read_api_key(source.path, key=source.key)


class Runtime:
    """The running daemon. ``await start()``, then ``await close()``."""

    def __init__(self, config: Config, parts: RuntimeParts | None = None) -> None:
        self.config = config
        self.parts = parts or RuntimeParts()
        self.clock: Clock = self.parts.clock or MonotonicClock()
        self.notifier = self.parts.notifier or Notifier(self.parts.env)
        self.started_at = self.clock.monotonic()
        self.is_simulator = False
        self.audio_description = ""
        self.pins_description = ""
        self.tasks = Supervisor(clock=self.clock)
        """The runtime's own long-running tasks (button, provider, LEDs, heartbeat),
        supervised: one that dies is logged and restarted; ``task_health`` shows it."""
        self._task_handles: dict[str, SupervisedTask] = {}
        self._stopping = False
        self._closers: list[Callable[[], Any]] = []
        self.db: Database | None = None
        self.engine: AudioEngine | None = None
        self.connection: Session | None = None
        self.cascade_sim: CascadeSim | None = None
        self.coordinator: Coordinator | None = None
        self.host: SkillHost | None = None
        self.button: PushToTalkButton | None = None
        self.leds: LedController | None = None
        self.sim: SimServer | None = None
        self.volume: PersistentVolume | None = None
        self.board: BoardProfile = config.board
        self.audio_settings: AudioSettings = config.audio
        """``[audio]`` with the board merged (at load: :func:`~huxleyd.config.load_config`)."""
        self.supervisor = Supervisor(clock=self.clock)
        self.client_events = ClientEvents()
        self.watchdog: Watchdog | None = None
        self.connection_state = "connecting"
        self.pin_factory: Any = None
        """The gpiozero pin factory the button and LEDs use (``huxleyctl doctor`` reports it)."""
        self.checked: Preflight | None = None
        """What :func:`~huxleyd.preflight.preflight` found at start (the key file used…)."""
        self.instructions = SessionInstructions("", context=str, apply=lambda _text: None)
        """Replaced at start; refreshed by the coordinator before each turn."""
        self.connection_status: ConnectionStatus | None = None
        """The last report of the provider connection (why offline, next try)."""
        self._next_try_at: float | None = None
        self.feed = EventFeed()
        """What ``huxleyctl watch`` streams: state, transcripts, tools, media."""
        self._log_tap = FeedLogTap(self.feed)
        self._said_parts: dict[str, list[str]] = {}
        """Assistant transcript deltas per item, until its final transcript."""

    # ------------------------------------------------------------ start

    async def start(self) -> None:
        config = self.config
        self.notifier.status("starting")
        logging.getLogger("huxleyd").addHandler(self._log_tap)
        self._closers.append(lambda: logging.getLogger("huxleyd").removeHandler(self._log_tap))
        # Everything that can be wrong with the configuration fails here,
        # before a device or the network is opened (huxleyd --check-config).
        self.checked = checked = preflight(
            config,
            key_file=self.parts.key_file,
            env=self.parts.env,
            uses_simulator_url=self.parts.provider_url is not None,
        )
        self.db = await Database.open(config.storage.database_path(config.daemon.persona))
        earcons = self._load_earcons()
        await self._start_audio()
        assert self.engine is not None
        self.volume = volume = await make_volume(self.audio_settings, self.engine, self.db)
        provider = config.provider
        if provider.kind == "cascade":
            provider, url, api_key = await self._cascade_target()
        else:
            url, api_key = await self._provider_target()
        self.host = checked.host
        self.host.on_outcome = self._on_tool_outcome
        connection = create_connection(
            provider,
            api_key=api_key,
            on_event=self._on_provider_event,
            on_state=self._on_connection_state,
            url=url,
            key_source=self._key_source(api_key),
        )
        self.connection = connection
        host = self.host
        self.instructions = SessionInstructions(
            config.persona.effective_instructions,
            context=host.prompt_context,
            apply=self._configure_session,
        )
        self.coordinator = Coordinator(
            provider=connection,
            session_instructions=self.instructions,
            audio=self.engine,
            volume=volume,
            host=self.host,
            earcons=earcons,
            instructions=config.persona.effective_instructions,
            settings=TurnSettings(
                silent_response_timeout_s=config.provider.silent_response_timeout_s
            ),
            clock=self.clock,
            on_activity=self._on_activity,
            on_turn_done=self._on_turn_done,
            renew_session_if_due=self._renew_if_due,
        )
        self.notifier.status("setting up skills")
        try:
            await self.host.setup_all(self._context_factory(), config.persona.skills)
        except SkillSetupError as exc:
            raise SkillSetupError(f"{config.persona_path}: {exc}") from exc
        await self.coordinator.start()
        self.instructions.refresh()  # the first configure: persona + skills' context
        self._spawn(connection.run, "provider")
        await self._start_hardware()
        self.watchdog = Watchdog.from_environment(
            audio_progress=lambda: self._engine().stats().periods,
            env=self.parts.env,
            notifier=self.notifier,
        )
        if self.watchdog is not None:
            self._spawn(self.watchdog.heartbeat, "watchdog-heartbeat")
            self.watchdog.start()
        log.info(
            "daemon_started",
            version=__version__,
            persona=config.persona.name,
            skills=",".join(s.name for s in self.host.skills),
            audio=self.audio_description,
            pins=self.pins_description,
            provider="simulator (not an AI)" if self.is_simulator else config.provider.url,
        )
        self.notifier.ready(
            "listening for the button" + (" (simulator)" if self.is_simulator else "")
        )

    def _checked(self) -> Preflight:
        assert self.checked is not None, "start() runs the preflight first"
        return self.checked

    def _configure_session(self, instructions: str) -> None:
        """Send instructions, tools and voice to the provider (it re-sends only changes)."""
        assert self.connection is not None and self.host is not None
        persona = self.config.persona
        self.connection.configure(
            instructions=instructions,
            tools=[tool.to_api_format() for tool in self.host.tools],
            voice=persona.voice or self.config.provider.voice,
        )

    def _host(self) -> SkillHost:
        assert self.host is not None
        return self.host

    def _coordinator(self) -> Coordinator:
        assert self.coordinator is not None, "provider event before the coordinator exists"
        return self.coordinator

    def _engine(self) -> AudioEngine:
        assert self.engine is not None
        return self.engine

    def _load_earcons(self) -> dict[str, bytes]:
        try:
            return read_palette(self.config.daemon.sounds_dir)
        except PaletteError as exc:
            log.warning("earcons_missing", error=str(exc), effect="no earcons will play")
            return {}

    async def _start_audio(self) -> None:
        if self.parts.backend is not None:
            backend, self.audio_description = self.parts.backend, "injected backend"
        else:
            backend, self.audio_description = await asyncio.to_thread(
                pick_backend, self.audio_settings
            )
        self.engine = AudioEngine(backend, settings=self.audio_settings, clock=self.clock)
        self.engine.start()
        self._closers.append(self.engine.close)

    async def _provider_target(self) -> tuple[str | None, str | None]:
        """``(url, key)``: the real provider with a key, else the built-in simulator."""
        config = self.config
        if self.parts.provider_url is not None:
            self.is_simulator = True
            return self.parts.provider_url, None
        api_key = None if config.provider.kind == "sim" else read_key(self._checked().key)
        if api_key is not None:
            return None, api_key
        why = "provider.kind is sim" if config.provider.kind == "sim" else "no API key configured"
        from huxleyd.sim.server import SimServer

        self.sim = SimServer(
            config.provider.sim_scenario,
            speed=config.provider.sim_speed,
            dialect=config.provider.dialect,
        )
        await self.sim.__aenter__()
        self.is_simulator = True
        log.warning(
            "simulator_mode",
            reason=why,
            url=self.sim.url,
            note="answers come from a scripted simulator, not an AI; put an API key in "
            "/etc/huxleyd/openai.key (or ./openai.key for make run) to talk to a model",
        )
        return self.sim.url, None

    def _key_source(self, api_key: str | None) -> Callable[[], str | None] | None:
        """Re-read the key before every try (a key fixed after a refusal is used
        without a restart); None when there is no key to re-read (a simulator)."""
        if api_key is None or self.is_simulator:
            return None
        source = self._checked().key
        return lambda: read_key(source)

    async def _cascade_target(self) -> tuple[ProviderSettings, None, str | None]:
        """Cascade settings and key: the cascade simulator when a scenario is set.

        A fully local cascade (llama.cpp, espeak-ng) needs no key, so only
        ``sim_scenario`` selects the simulator here, never a missing key.
        """
        provider = self.config.provider
        if provider.sim_scenario is None:
            return provider, None, read_key(self._checked().key)
        from huxleyd.sim.chat import CascadeSim

        self.cascade_sim = CascadeSim(provider.sim_scenario, speed=provider.sim_speed)
        await self.cascade_sim.__aenter__()
        self.is_simulator = True
        log.warning(
            "simulator_mode",
            reason="provider.sim_scenario is set",
            url=self.cascade_sim.http_url,
            note="the recogniser, chat model and voice are a scripted simulator, not an AI",
        )
        cascade = self.cascade_sim.settings_for(provider.cascade)
        return dataclasses.replace(provider, cascade=cascade), None, None

    async def _start_hardware(self) -> None:
        config, board = self.config, self.board
        assert self.coordinator is not None
        if self.parts.pin_factory is not None:
            factory, self.pins_description = self.parts.pin_factory, "injected"
        else:
            factory, self.pins_description = choose_pin_factory(
                config.hardware, env=self.parts.env, config_file=str(config.path)
            )
        self.pin_factory = factory
        self.button = PushToTalkButton.from_profile(
            board.button,
            pin_factory=factory,
            max_hold_s=config.hardware.max_hold_s,
            clock=self.clock,
        )
        self._closers.append(self.button.close)
        button, coordinator = self.button, self.coordinator
        self._spawn(lambda: self._pump_button(button, coordinator), "button")
        driver = make_led_driver(board.leds, pin_factory=factory, spi=self.parts.led_spi)
        self.leds = LedController(
            driver, self.clock, limits_s=limits_from_settings(config.hardware.led_limits)
        )
        self._closers.append(self.leds.close)
        self.leds.set_state(LedState.IDLE)
        self._spawn(self.leds.run, "leds")

    async def _pump_button(self, button: PushToTalkButton, coordinator: Coordinator) -> None:
        while True:
            event = await button.next_event()
            if event.kind is ButtonEventKind.PRESSED:
                coordinator.press()
            else:  # RELEASED, or LONG_HOLD: a hold past the limit ends the turn
                coordinator.release()

    def _context_factory(self) -> Callable[[str, dict[str, Any]], SkillContext]:
        config, db, coordinator = self.config, self.db, self.coordinator
        assert db is not None and coordinator is not None
        persona = config.persona
        data_dir = persona.data_dir or config.storage.persona_data_dir(config.daemon.persona)
        data_dir.mkdir(parents=True, exist_ok=True)

        def make(skill: str, skill_config: dict[str, Any]) -> SkillContext:
            skill_config.setdefault("timezone", persona.timezone)
            skill_config.setdefault("_language", persona.language)  # as Huxley's persona sets it

            def background_task(
                name: str, coro_factory: Any, **kwargs: Any
            ) -> BackgroundTaskHandle:
                return self.supervisor.background_task(
                    f"{skill}:{name}", coro_factory, owner=skill, **kwargs
                ).handle

            return SkillContext(
                subscribe_client_event=self.client_events.subscriber(skill),
                emit_server_event=self.client_events.emitter(skill),
                logger=get_logger(f"huxley.skill.{skill}", skill=skill),
                storage=db.skill_storage(self._host().storage_namespace(skill)),
                secrets=FileSecrets(config.storage.secrets_dir, skill),
                persona_data_dir=data_dir,
                config=skill_config,
                language=persona.language,
                timezone=persona.timezone,
                inject_turn=coordinator.proactive.inject_turn,
                # Returns whether it was heard: a huxleyd extension of the SDK's signature.
                inject_turn_and_wait=cast(
                    InjectTurnAndWait, coordinator.proactive.inject_turn_and_wait
                ),
                background_task=background_task,
                start_input_claim=coordinator.proactive.start_input_claim,
                cancel_active_claim=coordinator.proactive.cancel_active_claim,
            )

        return make

    # ------------------------------------------------------------ reload

    async def reload(self) -> list[str]:
        """Re-read the persona file (SIGHUP, ``systemctl reload huxleyd``).

        Skills whose ``[skills.NAME]`` table changed get ``reconfigure(ctx)``
        with the new config (all of them when the language or time zone
        changed); the persona's instructions and the skills' context are
        re-sent if they changed. Adding or removing a skill, or changing its
        ``from``, needs a restart (one warning says so). A persona file that
        does not parse is refused with one line; the running one stays.
        Returns the skills reconfigured.
        """
        host = self.host
        if host is None:
            return []
        old = self.config.persona
        try:
            persona = load_persona(self.config.persona_path)
        except ConfigError as exc:
            log.error("reload_refused", error=str(exc), effect="the running persona stays")
            return []
        loaded = [s.name for s in host.skills]
        moved = [
            n
            for n in loaded
            if n in persona.skills
            and persona.skills[n].get(SOURCE_KEY) != old.skills.get(n, {}).get(SOURCE_KEY)
        ]
        if list(persona.skills) != loaded or moved:
            log.warning(
                "reload_needs_restart",
                added=",".join(n for n in persona.skills if n not in loaded),
                removed=",".join(n for n in loaded if n not in persona.skills),
                source_changed=",".join(moved),
                effect="only the config of loaded skills is applied; restart to load others",
            )
        configs = {n: persona.skills.get(n, old.skills.get(n, {})) for n in loaded}
        everyone = (persona.language, persona.timezone) != (old.language, old.timezone)
        host.language = persona.language
        changed = host.changed_configs(configs, force=everyone)
        self.config = dataclasses.replace(
            self.config, persona=dataclasses.replace(persona, skills=configs)
        )
        try:
            done = await host.reconfigure(
                self._context_factory(),
                configs,
                changed,
                persona_file=str(self.config.persona_path),
            )
        except ConfigError as exc:
            log.error("reload_config_rejected", error=str(exc))
            done = []
        self.instructions.set_base(persona.effective_instructions)
        if self.connection is not None:
            # tools may have changed too (a skill's descriptions follow its language)
            self._configure_session(self.instructions.refresh())
        log.info("persona_reloaded", reconfigured=",".join(done) or "none")
        return done

    # ------------------------------------------------------------ events

    def _current_turn(self) -> str | None:
        turn = self.coordinator.turn if self.coordinator is not None else None
        return turn.turn_id if turn is not None else None

    def _on_provider_event(self, event: Event) -> None:
        """The transport's events: to the coordinator, and what a person can
        follow (transcripts, tool calls) to ``huxleyctl watch``."""
        if isinstance(event, TranscriptDelta) and event.role is Role.ASSISTANT:
            # Some providers (Gemini) never send a final assistant transcript.
            self._said_parts.setdefault(event.item_id, []).append(event.text)
        elif isinstance(event, TranscriptDone):
            self._said_parts.pop(event.item_id, None)
            if event.text.strip():
                kind = "heard" if event.role is Role.USER else "said"
                self.feed.publish(kind, turn=self._current_turn(), text=event.text.strip())
        elif isinstance(event, ResponseDone) and self._said_parts:
            for parts in self._said_parts.values():
                text = "".join(parts).strip()
                if text:
                    self.feed.publish("said", turn=self._current_turn(), text=text)
            self._said_parts.clear()
        elif isinstance(event, ToolCall):
            self.feed.publish(
                "tool", turn=self._current_turn(), name=event.name, arguments=event.arguments_json
            )
        self._coordinator().on_provider_event(event)

    def _on_tool_outcome(self, outcome: ToolOutcome) -> None:
        effect = outcome.side_effect
        self.feed.publish(
            "result",
            turn=self._current_turn(),
            name=outcome.tool,
            output=outcome.output,
            error=outcome.error,
            side_effect=effect.kind if effect is not None else None,
        )

    def persona_string(self, key: str) -> str:
        """A persona string (``[i18n.<lang>.strings]``) in the persona's language."""
        return self.config.persona.string(key, PERSONA_STRINGS[key])

    def _on_turn_done(self, turn: TurnRecord) -> None:
        self.feed.publish(
            "turn",
            turn=turn.turn_id,
            outcome=turn.outcome.value if turn.outcome else None,
            tools=",".join(turn.tools) or None,
            source=turn.source,
        )
        if turn.outcome is TurnOutcome.TOO_SHORT:
            # The earcon is the audible cue; text surfaces get the persona's words.
            self.feed.publish("notice", turn=turn.turn_id, what=self.persona_string("too_short"))

    def _on_activity(self, activity: str) -> None:
        log.info("state_changed", state=activity)  # journalctl … HUXLEY_STATE=speaking
        self.feed.publish("state", turn=self._current_turn(), state=activity)
        if activity == Activity.OFFLINE:  # a press while offline
            self.feed.publish("notice", what=self.persona_string("offline"))
        if self.connection_state not in ("offline", "key_refused"):
            self._show_leds(ACTIVITY_LEDS.get(activity, LedState.IDLE))
        self.notifier.status(activity)

    def _on_connection_state(self, status: ConnectionStatus) -> None:
        state = str(status.state)
        self.connection_state = state
        self.connection_status = status
        self._next_try_at = (
            None if status.retry_in_s is None else self.clock.monotonic() + status.retry_in_s
        )
        self.feed.publish(
            "connection",
            state=state,
            attempt=status.attempt,
            retry_in_s=status.retry_in_s,
            detail=status.detail,
        )
        if self.coordinator is not None:
            self.coordinator.on_connection(status.state, status.attempt)
        if state in ("offline", "key_refused"):
            self._show_leds(LedState.OFFLINE)
        elif state == "connected":
            self._show_leds(LedState.IDLE)
        if state == "offline":
            self.notifier.status(f"offline, retrying (attempt {status.attempt})")
        elif state == "key_refused":
            self.notifier.status(
                f"the provider refused the API key; retrying every {status.retry_in_s:g} s"
            )

    def _show_leds(self, state: LedState) -> None:
        """A failing LED write (a flaky GPIO or SPI) is logged; it never breaks a turn."""
        if self.leds is None:
            return
        try:
            self.leds.set_state(state)
        except Exception as exc:
            log.error("led_write_failed", state=state.value, error=f"{type(exc).__name__}: {exc}")

    def next_try_in_s(self) -> float | None:
        """Seconds until the transport tries to connect again, if it waits to."""
        if self._next_try_at is None or self.connection_state == "connected":
            return None
        return round(max(self._next_try_at - self.clock.monotonic(), 0.0), 1)

    def _renew_if_due(self) -> None:
        connection = self.connection
        if connection is None:
            return
        age = connection.session_age_s()
        if age is not None and age > self.config.provider.session_renew_s:
            connection.renew()

    # ------------------------------------------------------------ stop

    def _spawn(self, factory: Callable[[], Coroutine[Any, Any, Any]], name: str) -> None:
        """Run ``factory()`` for the daemon's lifetime, supervised: a crash (or an
        unexpected return) is logged and restarted with backoff, at most
        :data:`RUNTIME_RESTARTS_PER_HOUR` times an hour, then it stays down and
        ``doctor`` says so."""

        async def for_good() -> None:
            await factory()
            if not self._stopping:
                raise RuntimeError(f"the {name} task ended on its own")

        self._task_handles[name] = self.tasks.background_task(
            name, for_good, owner="runtime", max_restarts_per_hour=RUNTIME_RESTARTS_PER_HOUR
        )

    def task_health(self) -> dict[str, str]:
        """Each runtime task's state: ``running``, ``backoff`` (restarting), ``failed``…
        with the restart count and the last error when there was one."""
        health: dict[str, str] = {}
        for name, task in sorted(self._task_handles.items()):
            text = task.state.value
            if task.restarts:
                text += f", restarted {task.restarts}x"
            if task.last_error is not None:
                text += f", last error {task.last_error!r}"
            health[name] = text
        return health

    async def close(self, budget_s: float = STOP_BUDGET_S) -> None:
        """Stop media (bookmarks), the session, skills and storage; in that order.

        Never takes longer than ``budget_s``: a step that overruns what is left
        (a skill that swallows cancellation, a peer that never answers) is
        cancelled, logged and left behind, and the next step runs.
        """
        deadline = asyncio.get_running_loop().time() + budget_s
        self._stopping = True
        self.notifier.stopping("stopping")
        if self.watchdog is not None:
            self.watchdog.stop()
        if self.coordinator is not None:
            await self._stop_step("turns", self.coordinator.close(), deadline)
        if self.connection is not None:
            await self._stop_step("provider", self.connection.close(), deadline)
        await self._stop_step("runtime-tasks", self.tasks.close(), deadline)
        await self._stop_step("skill-tasks", self.supervisor.close(), deadline)
        if self.host is not None:
            for skill in self.host.skills:
                self.client_events.drop(skill.name)
            await self._stop_step("skills", self.host.teardown_all(), deadline)
        if self.sim is not None:
            await self._stop_step("simulator", self.sim.__aexit__(None, None, None), deadline)
        if self.cascade_sim is not None:
            await self._stop_step("cascade-simulator", self.cascade_sim.close(), deadline)
        for closer in reversed(self._closers):
            with contextlib.suppress(Exception):
                closer()
        if self.db is not None:
            await self._stop_step("storage", self.db.close(), deadline + 2.0)

    async def _stop_step(self, name: str, coro: Any, deadline: float) -> None:
        """Run one shutdown step until ``deadline`` (loop time); past it, leave it."""
        loop = asyncio.get_running_loop()
        task = loop.create_task(coro, name=f"stop-{name}")
        done, _ = await asyncio.wait({task}, timeout=max(0.1, deadline - loop.time()))
        if not done:
            task.cancel()
            log.error("shutdown_step_abandoned", step=name, reason="over the stop budget")
            return
        if not task.cancelled() and task.exception() is not None:
            log.error("shutdown_step_failed", step=name, error=repr(task.exception()))
