"""The running daemon: build it, start it, follow it, reload it, stop it.

Layer: wiring. :meth:`Runtime.start` runs the preflight, has
:func:`~huxleyd.app.build.build` make every part (the frozen
:class:`~huxleyd.app.parts.Parts`), sets the skills up and starts the
long-running tasks under a supervisor. Then it stays out of the way: the
button hands presses to the coordinator itself, the session hands its events
to the coordinator itself, and the ``huxleyctl watch`` feed, the LEDs and
systemd's status line subscribe to the coordinator's typed events
(:mod:`huxleyd.turns.news`), wired once by ``build``. The runtime keeps only
its own record (the connection's last status, the saved mute).
:meth:`Runtime.close` stops everything in a fixed order within a
budget. Tests build a :class:`Runtime` with
:class:`~huxleyd.app.parts.Overrides` (a WAV backend and a scaled clock,
mock pins, the simulator's URL, a recording notifier) and get the same
daemon that runs on a Pi.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from huxley_sdk import SkillContext
from huxleyd import __version__
from huxleyd.app.build import build, skill_context_factory
from huxleyd.app.loopwatch import LoopWatch, skill_files
from huxleyd.app.parts import Overrides, Parts, Resources, call_closer
from huxleyd.app.reload import ReloadPlan, read_for_reload, refusal
from huxleyd.app.systemd import Notifier
from huxleyd.clock import Clock, MonotonicClock, WallClockWatch
from huxleyd.config.load import Config, PersonaString
from huxleyd.config.preflight import LEFT_OUT_FIX, preflight
from huxleyd.config.setupreport import setup_failure
from huxleyd.control.watch import EventFeed, FeedLogTap
from huxleyd.degraded import Degraded
from huxleyd.handsfree.mutefile import mute_path, write_muted
from huxleyd.home.speaker import Home, open_home
from huxleyd.logs import get_logger
from huxleyd.providers.base import ConnectionState, ConnectionStatus
from huxleyd.skillhost.events import ClientEvents
from huxleyd.skillhost.remote import RemoteSkill
from huxleyd.turns.news import (
    Activity,
    ActivityChanged,
    ConnectionChanged,
    MuteChanged,
    TurnNews,
)
from huxleyd.turns.supervisor import SupervisedTask, Supervisor
from huxleyd.update import boot_id, rollback_note, state_file

log = get_logger("huxleyd.daemon")

STOP_BUDGET_S = 15.0
""":meth:`Runtime.close` returns within this, whatever a skill does (the unit's
``TimeoutStopSec`` is 20 s: the rest is for the interpreter to exit)."""

STORAGE_GRACE_S = 2.0
"""The database gets this much past the budget: a checkpoint cut short loses nothing,
but a clean close spares the next start a WAL recovery."""

SKILL_RETRY_DELAYS_S = (10.0, 30.0, 90.0, 300.0)
"""A skill whose setup failed is tried again after these delays, then every 5 minutes."""

QUIET = frozenset({Activity.IDLE, Activity.MUTED, Activity.OFFLINE})
"""Activities with no audio flowing: the loop watch ticks slowly (``IDLE_TICK_S``)."""

RUNTIME_RESTARTS_PER_HOUR = 20
"""A runtime task that died more often than this in an hour stays down (doctor shows it)."""

PERSONA_STRINGS = {
    PersonaString.TOO_SHORT: "Too short: hold the button while you speak.",
    PersonaString.OFFLINE: "Offline: the provider is unreachable; still trying.",
    PersonaString.DEGRADED: "Something is wrong: `huxleyctl doctor` says what.",
}
"""The persona strings the daemon shows, with their defaults (a persona's
``[i18n.<lang>.strings]`` overrides them): in ``huxleyctl say`` refusals and
the ``watch`` feed, beside the earcons that say the same aloud."""


class Runtime:
    """The running daemon. ``await start()``, then ``await close()``.

    ``built`` is None until :meth:`start` has built every part (the control
    socket answers "starting" meanwhile); :attr:`parts` is the same record for
    code that runs only after the start.
    """

    def __init__(self, config: Config, overrides: Overrides | None = None) -> None:
        self.config = config
        self.overrides = overrides or Overrides()
        self.clock: Clock = self.overrides.clock or MonotonicClock()
        self.notifier = self.overrides.notifier or Notifier(self.overrides.env)
        self.started_at = self.clock.monotonic()
        self.built: Parts | None = None
        self.resources = Resources()
        """What is open; closed in reverse at :meth:`close` (a failed start included)."""
        self.clock_watch = WallClockWatch()
        """Logs ``clock_stepped`` when the wall clock is set (NTP after boot…)."""
        self.tasks = Supervisor(clock=self.clock)
        """The runtime's own long-running tasks (button, provider, LEDs, heartbeat),
        supervised: one that dies is logged and restarted; ``task_health`` shows it."""
        self.supervisor = Supervisor(clock=self.clock)
        """The skills' background tasks."""
        self.client_events = ClientEvents()
        self.loop_watch = LoopWatch(clock=self.clock)
        """Loop stalls (doctor shows the worst) and skills' own tasks that die."""
        self.degraded = Degraded()
        """What runs degraded (storage, skills left out, a refused reload): status,
        doctor, the journal and the first press read it."""
        self.feed = EventFeed()
        """What ``huxleyctl watch`` streams: state, transcripts, tools, media."""
        self._mute_saving = asyncio.Lock()
        self.setup_failure = setup_failure(self.overrides.env)
        """"setup failed: ..." when the image's first boot failed (read once, here)."""
        self.connection_status = ConnectionStatus(ConnectionState.CONNECTING)
        """The last report of the provider connection (why offline, next try)."""
        self._status_at = self.started_at
        """When ``connection_status`` was reported (the next try is counted from it)."""
        self.stopped_steps: list[str] = []
        """The shutdown steps :meth:`close` ran, in order (doctor and tests read it)."""
        self._task_handles: dict[str, SupervisedTask] = {}
        self._stopping = False
        self._log_tap = FeedLogTap(self.feed)
        self.home: Home | None = None
        """``[[mcp]]`` servers and ``[mqtt]`` (docs/home.md), when configured."""

    @property
    def parts(self) -> Parts:
        """Every built part; only after :meth:`start` built them."""
        if self.built is None:
            raise RuntimeError("the daemon is still starting: its parts are not built yet")
        return self.built

    @property
    def connection_state(self) -> ConnectionState:
        return self.connection_status.state

    @property
    def is_simulator(self) -> bool:
        return self.built is not None and self.built.is_simulator

    # ------------------------------------------------------------ start

    # longer than 50 lines: the start in its order (check, build, skills, turns, tasks, ready), read top-down
    async def start(self) -> None:
        config = self.config
        self.notifier.status("starting")
        self.loop_watch.install(asyncio.get_running_loop())
        self.resources.opened("loop-watch", self.loop_watch.uninstall)
        logging.getLogger("huxleyd").addHandler(self._log_tap)
        self.resources.opened(
            "log-tap", lambda: logging.getLogger("huxleyd").removeHandler(self._log_tap)
        )
        # Everything that can be wrong with the configuration fails here,
        # before a device or the network is opened (huxleyd --check-config).
        checked = preflight(
            config,
            key_file=self.overrides.key_file,
            env=self.overrides.env,
            uses_simulator_url=self.overrides.provider_url is not None,
            leave_out_failing_skills=True,
        )
        for note in checked.warnings:  # what --check-config prints, in the journal
            log.warning("preflight_note", note=note)
        self.built = parts = await build(
            config,
            self.overrides,
            checked=checked,
            clock=self.clock,
            notifier=self.notifier,
            hooks=self,
            feed=self.feed,
            resources=self.resources,
            degraded=self.degraded,
            setup_failure=self.setup_failure,
        )
        parts.coordinator.subscribe(self._on_news)
        self._report_rolled_back_update()
        self.notifier.status("setting up skills")
        self.loop_watch.owner_of = skill_files(parts.host.every_skill)
        await parts.host.setup_all(self._context_factory(parts), config.persona.skills)
        self._watch_skill_hosts(parts)
        self._report_failed_skills(parts)
        await parts.coordinator.start()
        parts.instructions.refresh()  # the first configure: persona + skills' context
        if self.setup_failure is None:
            self._spawn(parts.connection.run, "provider")
        else:  # nothing to connect with: say why, on every press and in status
            log.error("setup_failed", reason=self.setup_failure)
            parts.coordinator.on_connection_status(
                ConnectionStatus(ConnectionState.SETUP_FAILED, detail=self.setup_failure)
            )
        self._spawn(functools.partial(parts.button.pump, parts.coordinator), "button")
        self._open_home(parts)
        self._spawn(parts.leds.run, "leds")
        self._spawn(self.clock_watch.run, "clock")
        if parts.watchdog is not None:
            self._spawn(parts.watchdog.heartbeat, "watchdog-heartbeat")
            parts.watchdog.start()
        log.info(
            "daemon_started",
            version=__version__,
            persona=config.persona.name,
            skills=",".join(s.name for s in parts.host.skills),
            audio=parts.audio_description,
            pins=parts.pins_description,
            provider="simulator (not an AI)" if parts.is_simulator else config.provider.url,
        )
        self.loop_watch.arm()
        self.notifier.ready(
            self.setup_failure
            or "listening for the button" + (" (simulator)" if parts.is_simulator else "")
        )

    def _open_home(self, parts: Parts) -> None:
        """MCP servers' tools and the broker (docs/home.md): each a supervised task
        that degrades on its own; nothing here can stop the start."""
        config = self.config
        self.home = open_home(
            mcp=config.mcp,
            mqtt=config.mqtt,
            coordinator=parts.coordinator,
            volume=parts.volume,
            host=parts.host,
            degraded=self.degraded,
            provider_online=lambda: self.connection_state is ConnectionState.CONNECTED,
            tell_watch=self.feed.publish,
            refresh_tools=lambda: self.configure_session(parts.instructions.refresh()),
            state_dir=config.storage.state_dir,
            version=__version__,
            config_file=str(config.path),
            subscribe_provider=parts.connection.subscribe,
        )
        if self.home is not None:
            for name, factory in self.home.tasks():
                self._spawn(factory, name)

    def _report_rolled_back_update(self) -> None:
        """A release ``huxleyctl update`` rolled back (the one running is the
        previous): degraded in status and doctor until an update succeeds;
        cued at the next press in the boot of the rollback (the start that
        followed it), not after every later reboot."""
        path = self.overrides.update_state
        state = state_file(path)
        note = rollback_note(state)
        if note is not None:
            rolled_back = state.get("rolled_back") or {}
            this_boot = rolled_back.get("boot_id") == boot_id()
            self.degraded.report("update", note, file=str(path), cue=this_boot)

    def _report_failed_skills(self, parts: Parts) -> None:
        """Each skill left out is degraded; those whose setup failed are retried."""
        host = parts.host
        for name, reason in host.failed.items():
            self._forget(name)
            retry = name in host.retryable
            what = reason + ("; retried with backoff" if retry else LEFT_OUT_FIX)
            self.degraded.report(f"skill:{name}", what, file=str(self.config.persona_path))
            if retry:
                self._spawn_once(functools.partial(self._retry_skill, parts, name), f"retry-{name}")

    async def _retry_skill(self, parts: Parts, name: str) -> None:
        """Set a failed skill up again with backoff until it works (the network is up)."""
        delays = self.overrides.skill_retry_delays_s or SKILL_RETRY_DELAYS_S
        for attempt in itertools.count(1):
            delay_s = delays[min(attempt - 1, len(delays) - 1)]
            await asyncio.sleep(delay_s)
            if await parts.host.retry_setup(name, self._context_factory(parts)):
                self.degraded.clear(f"skill:{name}")
                log.info("skill_recovered", skill=name, attempt=attempt)
                self.configure_session(parts.instructions.refresh())  # its tools, offered now
                return
            self._forget(name)
            next_s = delays[min(attempt, len(delays) - 1)]
            log.warning(
                "skill_setup_retry_failed",
                skill=name,
                attempt=attempt,
                reason=parts.host.failed[name],
                next_try_in_s=next_s,
            )
            self.degraded.report(
                f"skill:{name}",
                f"{parts.host.failed[name]}; retried with backoff ({attempt} tries so far)",
                file=str(self.config.persona_path),
            )

    def _watch_skill_hosts(self, parts: Parts) -> None:
        """A third-party skill whose host process dies, hangs or floods is left out,
        said (status, doctor, journal) and set up again in a fresh host with backoff."""
        for skill in parts.host.every_skill:
            if isinstance(skill, RemoteSkill):
                skill.on_down = functools.partial(self._skill_host_down, parts)

    def _skill_host_down(self, parts: Parts, name: str, reason: str) -> None:
        why = f"its skill host stopped: {reason}"
        if not parts.host.take_out(name, why):
            return  # not running: a setup in progress says its own failure
        self._forget(name)
        self.degraded.report(
            f"skill:{name}", why + "; restarted with backoff", file=str(self.config.persona_path)
        )
        self._spawn_once(functools.partial(self._retry_skill, parts, name), f"retry-{name}")
        self.configure_session(parts.instructions.refresh())  # its tools, no longer offered

    def _forget(self, skill: str) -> None:
        """What a failed setup started (tasks, client event handlers) does not run on."""
        self.supervisor.cancel_owner(skill)
        self.client_events.drop(skill)

    def _spawn_once(self, factory: Callable[[], Coroutine[Any, Any, Any]], name: str) -> None:
        """A runtime task that ends when its work is done (closed with the others;
        not in :meth:`task_health`, where an ended task means one that is down)."""
        self.tasks.background_task(
            name, factory, owner="runtime", max_restarts_per_hour=RUNTIME_RESTARTS_PER_HOUR
        )

    def _context_factory(self, parts: Parts) -> Callable[[str, dict[str, Any]], SkillContext]:
        return skill_context_factory(
            self.config,
            db=parts.db,
            host=parts.host,
            coordinator=parts.coordinator,
            supervisor=self.supervisor,
            client_events=self.client_events,
            volume=parts.volume,
        )

    # ------------------------------------------------------------ reload

    async def reload(self) -> list[str]:
        """Re-read ``huxleyd.toml`` and the persona (SIGHUP, ``systemctl reload huxleyd``).

        All or nothing: everything is read and checked first
        (:func:`~huxleyd.app.reload.read_for_reload`); on any error the whole
        running configuration stays, instructions included, with one line
        (``reload_refused``) and a ``reload`` problem in status until a reload
        works. Then skills whose table changed get ``reconfigure(ctx)`` (all
        of them when the language or time zone changed), the instructions
        and tools are re-sent if they changed, :data:`~huxleyd.app.reload.
        LIVE_KEYS` are applied, and every other changed key is logged as
        ``reload_needs_restart``. Never raises. Returns the skills reconfigured.
        """
        if self.built is None:
            return []
        file = str(self.config.path)
        try:
            plan = await asyncio.to_thread(read_for_reload, self.config, self.built.host)
        except Exception as exc:  # any bytes, any nesting: never a stray traceback
            why = refusal(exc)
            log.error("reload_refused", error=why, effect="the running configuration stays")
            self.degraded.report("reload", f"refused: {why}", file=file, cue=False)
            return []
        self.degraded.clear("reload")
        try:
            return await self._apply(self.built, plan)
        except Exception as exc:
            log.exception("reload_failed", error=refusal(exc))
            return []

    async def _apply(self, parts: Parts, plan: ReloadPlan) -> list[str]:
        old, persona = self.config.persona, plan.config.persona
        if plan.needs_restart:
            log.warning(
                "reload_needs_restart",
                keys=",".join(plan.needs_restart),
                effect="the rest is applied; restart for these",
            )
        everyone = (persona.language, persona.timezone) != (old.language, old.timezone)
        host = parts.host
        host.language = persona.language
        changed = host.changed_configs(plan.configs, force=everyone)
        self.config = plan.config
        if "daemon.log_level" in plan.applied:
            logging.getLogger().setLevel(plan.config.daemon.log_level.upper())
        host.tool_timeout_s = plan.config.provider.tool_timeout_s
        done = await host.reconfigure(
            self._context_factory(parts),
            plan.configs,
            changed,
            persona_file=str(self.config.persona_path),
        )
        parts.instructions.set_base(persona.effective_instructions)
        # tools may have changed too (a skill's descriptions follow its language)
        self.configure_session(parts.instructions.refresh())
        log.info(
            "persona_reloaded",
            reconfigured=",".join(done) or "none",
            applied=",".join(plan.applied) or "none",
        )
        return done

    # ------------------------------------------------------------ build.Hooks and its record

    def configure_session(self, instructions: str) -> None:
        """Send instructions, tools and voice to the provider (it re-sends only changes)."""
        parts = self.parts
        parts.connection.configure(
            instructions=instructions,
            tools=[tool.to_api_format() for tool in parts.host.tools],
            voice=self.config.persona.voice or self.config.provider.voice,
        )

    def renew_if_due(self) -> None:
        connection = self.parts.connection
        age = connection.session_age_s()
        if age is not None and age > self.config.provider.session_renew_s:
            connection.renew()

    def persona_string(self, key: PersonaString) -> str:
        """A persona string (``[i18n.<lang>.strings]``) in the persona's language."""
        return self.config.persona.string(key, PERSONA_STRINGS[key])

    def _on_news(self, news: TurnNews) -> None:
        """The runtime's own record: the connection (status, ``next_try_in_s``),
        the mute (saved for the next start) and whether audio flows (the loop
        watch ticks fast only then). It relays nothing."""
        if isinstance(news, ActivityChanged):
            self.loop_watch.set_active(news.activity not in QUIET)
        elif isinstance(news, ConnectionChanged):
            self.connection_status = news.status
            self._status_at = self.clock.monotonic()
        elif isinstance(news, MuteChanged):
            self._spawn_once(self._save_mute, "mute-save")

    async def _save_mute(self) -> None:
        await self.save_mute()

    async def save_mute(self) -> str | None:
        """Save the mute as it is now; why it was not saved (the OS's words), or None.

        One save at a time, each of the state as it is then: two quick toggles
        cannot leave the older one on disk. ``huxleyctl mute`` awaits it, so a
        mute that did not save is never answered as done."""
        async with self._mute_saving:
            muted = self.parts.coordinator.muted
            path = mute_path(self.config.storage.state_dir)
            return await asyncio.to_thread(write_muted, path, muted)

    def next_try_in_s(self) -> float | None:
        """Seconds until the transport tries to connect again, if it waits to."""
        status = self.connection_status
        if status.retry_in_s is None or status.state is ConnectionState.CONNECTED:
            return None
        next_try_at = self._status_at + status.retry_in_s
        return round(max(next_try_at - self.clock.monotonic(), 0.0), 1)

    # ------------------------------------------------------------ tasks

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

    # ------------------------------------------------------------ stop

    async def close(self, budget_s: float = STOP_BUDGET_S) -> None:
        """Stop turns (media bookmarks), the session, tasks, skills, then what was
        opened (LEDs, button, simulator, audio, storage), last opened first.

        Never takes longer than ``budget_s`` (storage gets :data:`STORAGE_GRACE_S`
        more): a step that overruns what is left (a skill that swallows
        cancellation, a peer that never answers) is cancelled, logged and left
        behind, and the next step runs.
        """
        deadline = asyncio.get_running_loop().time() + budget_s
        self._stopping = True
        self.notifier.stopping("stopping")
        parts = self.built
        if parts is not None:
            if parts.watchdog is not None:
                parts.watchdog.stop()
            await self._stop_step("turns", parts.coordinator.close(), deadline)
            await self._stop_step("provider", parts.connection.close(), deadline)
        await self._stop_step("runtime-tasks", self.tasks.close(), deadline)
        await self._stop_step("skill-tasks", self.supervisor.close(), deadline)
        if parts is not None:
            for skill in parts.host.skills:
                self.client_events.drop(skill.name)
            await self._stop_step("skills", parts.host.teardown_all(), deadline)
        for name, closer in self.resources.closing_order():
            grace = STORAGE_GRACE_S if name == "storage" else 0.0
            await self._stop_step(name, call_closer(closer), deadline + grace)

    async def _stop_step(self, name: str, coro: Any, deadline: float) -> None:
        """Run one shutdown step until ``deadline`` (loop time); past it, leave it."""
        self.stopped_steps.append(name)
        loop = asyncio.get_running_loop()
        task = loop.create_task(coro, name=f"stop-{name}")
        done, _ = await asyncio.wait({task}, timeout=max(0.1, deadline - loop.time()))
        if not done:
            task.cancel()
            log.error("shutdown_step_abandoned", step=name, reason="over the stop budget")
            return
        if not task.cancelled() and task.exception() is not None:
            log.error("shutdown_step_failed", step=name, error=repr(task.exception()))
