"""The home integration of one daemon: its MCP servers, its broker, its household tool.

Layer: wiring of the home package. :func:`open_home` makes a :class:`Home`
from the configuration and the built parts; the runtime spawns
:meth:`Home.tasks` as supervised tasks and reads :meth:`Home.status_lines`
and :meth:`Home.checks` for ``status`` and ``doctor``. Nothing here is
needed for a turn: every failure is the degraded record's, never the start's.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from huxley_sdk import ToolDefinition, ToolResult
from huxleyd.degraded import Degraded
from huxleyd.home.discovery import Topics
from huxleyd.home.household import Announcement
from huxleyd.home.mqtt import AnnounceRefused, MqttLink
from huxleyd.home.settings import McpServerSettings, MqttSettings
from huxleyd.logs import get_logger
from huxleyd.providers.events import Event, Role, TranscriptDone
from huxleyd.turns.news import Activity, ActivityChanged, MuteChanged, TurnBegan, TurnNews
from huxleyd.turns.state import TurnSource

if TYPE_CHECKING:
    # The mcp package (pydantic, starlette, httpx) was 1.4 s of the daemon's
    # 2.1 s of imports on a PC, several times that on a Pi, for every start,
    # [[mcp]] or not: it is imported when a server is configured.
    from huxleyd.home.mcp import McpServerLink

log = get_logger("huxleyd.home")

TOOL_WAIT_S = 4.0
"""How long the household tool waits to hear the rooms have the announcement
(within the host's tool budget)."""


def device_id(state_dir: Path) -> str:
    """This speaker's stable id: made once, kept in ``<state_dir>/home-id``.

    Home Assistant's unique ids and the household's topics hang on it, so it
    survives a new room name, a new persona, an update. A state directory
    that cannot be written gives an id for this run only (said in the journal)."""
    path = state_dir / "home-id"
    try:
        text = path.read_text(encoding="ascii").strip()
        if text.isalnum() and 6 <= len(text) <= 32:
            return text
    except (OSError, UnicodeDecodeError):
        pass
    new = uuid.uuid4().hex[:12]
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(new + "\n", encoding="ascii")
    except OSError as exc:
        log.error("home_id_not_saved", path=str(path), error=str(exc), effect="a new id next start")
    return new


class Coordinator(Protocol):
    """What the speaker reads of the turn coordinator."""

    @property
    def activity(self) -> Activity: ...
    @property
    def muted(self) -> bool: ...
    def set_muted(self, muted: bool) -> None: ...
    def subscribe(self, handler: Callable[[TurnNews], None]) -> Callable[[], None]: ...
    @property
    def proactive(self) -> Any: ...


class Volume(Protocol):
    async def get_level(self) -> int: ...
    async def set_level(self, level: int) -> int: ...


class DaemonSpeaker:
    """:class:`~huxleyd.home.mqtt.Speaker` over the running daemon's parts."""

    def __init__(
        self,
        coordinator: Coordinator,
        volume: Volume,
        *,
        degraded: Degraded,
        provider_online: Callable[[], bool],
        tell_watch: Callable[..., None],
    ) -> None:
        self._coordinator = coordinator
        self._volume = volume
        self._degraded = degraded
        self._provider_online = provider_online
        self._tell_watch = tell_watch

    def state(self) -> str:
        activity = self._coordinator.activity
        if not self._provider_online():
            return "offline"
        if activity in (Activity.LISTENING, Activity.CALL):
            return "listening"
        if activity is Activity.THINKING:
            return "thinking"
        if activity in (Activity.SPEAKING, Activity.MEDIA):
            return "speaking"
        if activity is Activity.OFFLINE:
            return "offline"
        return "degraded" if self._degraded.problems() else "idle"

    async def get_volume(self) -> int:
        return await self._volume.get_level()

    async def set_volume(self, level: int) -> int:
        return await self._volume.set_level(level)

    def muted(self) -> bool:
        return self._coordinator.muted

    def set_muted(self, muted: bool) -> None:
        self._coordinator.set_muted(muted)

    def last_problem(self) -> str:
        problems = sorted(self._degraded.problems(), key=lambda p: p.since)
        return problems[-1].line() if problems else "none"

    async def speak(self, announcement: Announcement, ttl_s: float) -> bool:
        heard: bool = await self._coordinator.proactive.inject_turn_and_wait(
            announcement.prompt(), dedup_key=f"announce:{announcement.id}", ttl_s=ttl_s
        )
        return heard

    def tell_watch(self, kind: str, **fields: Any) -> None:
        self._tell_watch(kind, **fields)


class HouseholdTools:
    """The model's tool for the household: speak a message in another room.

    An attached tool source of the skill host (``home:household``)."""

    name = "home:household"
    TOOL = "announce_to_room"

    def __init__(self, link: MqttLink) -> None:
        self._link = link

    @property
    def tools(self) -> list[ToolDefinition]:
        rooms = ", ".join(self._link.rooms())
        return [
            ToolDefinition(
                self.TOOL,
                "Say a message aloud on the speaker in another room of this home, or on "
                f"every speaker (room 'all'). This speaker is in the {self._link.topics.room}; "
                f"rooms with a speaker: {rooms}. Use it for 'tell the kitchen dinner is ready'.",
                {
                    "type": "object",
                    "properties": {
                        "room": {"type": "string", "description": "A room, or 'all'."},
                        "text": {"type": "string", "description": "What to say there."},
                    },
                    "required": ["room", "text"],
                },
            )
        ]

    async def handle(self, tool: str, args: dict[str, Any]) -> ToolResult:
        room = str(args["room"]).strip().lower().replace(" ", "_")
        try:
            lines = await self._link.announce(
                str(args["text"]), room=None if room == "all" else room, wait_s=TOOL_WAIT_S
            )
        except AnnounceRefused as exc:
            return ToolResult(output=json.dumps({"sent": False, "why": str(exc)}))
        return ToolResult(output=json.dumps({"sent": True, "rooms": lines}))


class ToolHost(Protocol):
    def attach(self, source: Any) -> None: ...
    def detach(self, name: str) -> None: ...


@dataclass(frozen=True, slots=True)
class Check:
    """One doctor line of the home integration (the control layer makes it a DoctorCheck)."""

    name: str
    ok: bool
    detail: str
    fix: str = ""


class Home:
    """The home integration of one daemon (see the module docstring)."""

    def __init__(
        self,
        *,
        servers: Sequence[McpServerLink],
        mqtt: MqttLink | None,
        host: ToolHost,
        refresh_tools: Callable[[], None],
    ) -> None:
        self.servers = list(servers)
        self.mqtt = mqtt
        self._host = host
        self._refresh_tools = refresh_tools

    def tasks(self) -> list[tuple[str, Callable[[], Coroutine[Any, Any, None]]]]:
        """The supervised tasks to run for the daemon's life."""
        found: list[tuple[str, Callable[[], Coroutine[Any, Any, None]]]] = [
            (f"mcp-{s.settings.name}", s.run) for s in self.servers
        ]
        if self.mqtt is not None:
            found.append(("mqtt", self.mqtt.run))
        return found

    def tools_changed(self, link: McpServerLink) -> None:
        """An MCP server's tools changed (connected, listed again, gone): re-offer them."""
        if link.tools:
            self._host.attach(link)
        else:
            self._host.detach(link.name)
        self._refresh_tools()

    def on_news(self, news: TurnNews) -> None:
        """The coordinator's events: states to Home Assistant, the button as an event."""
        if self.mqtt is None:
            return
        if isinstance(news, TurnBegan) and news.source in (TurnSource.PTT, TurnSource.WAKE):
            self.mqtt.button("wake" if news.source is TurnSource.WAKE else "press")
        if isinstance(news, ActivityChanged | MuteChanged | TurnBegan):
            self.mqtt.changed()

    async def announce(self, text: str, room: str | None) -> list[str]:
        if self.mqtt is None:
            raise AnnounceRefused("no [mqtt] in huxleyd.toml: this speaker has no household")
        return await self.mqtt.announce(text, room=room)

    def status_lines(self) -> list[str]:
        lines = [f"mcp {s.settings.name}: {s.state}" for s in self.servers]
        if self.mqtt is not None:
            rooms = ", ".join(self.mqtt.rooms())
            lines.append(f"mqtt: {self.mqtt.state}; rooms: {rooms}")
        return lines

    def checks(self) -> list[Check]:
        found: list[Check] = []
        for s in self.servers:
            fix = "" if s.connected else (
                "check [[mcp]] url and token_file (Home Assistant: a long-lived access "
                "token; the MCP Server integration added); it is retried by itself"
            )  # fmt: skip
            found.append(Check(f"mcp {s.settings.name}", s.connected, s.state, fix))
        if self.mqtt is not None:
            up = self.mqtt.state.startswith("connected")
            fix = "" if up else (
                "check [mqtt] url, username and password_file, and that the broker runs; "
                "it is retried by itself"
            )  # fmt: skip
            found.append(Check("mqtt", up, self.mqtt.state, fix))
        return found


# longer than 50 lines: wires the home's parts once each, in the order they need each other
def open_home(
    *,
    mcp: Sequence[McpServerSettings],
    mqtt: MqttSettings,
    coordinator: Coordinator,
    volume: Volume,
    host: ToolHost,
    degraded: Degraded,
    provider_online: Callable[[], bool],
    tell_watch: Callable[..., None],
    refresh_tools: Callable[[], None],
    state_dir: Path,
    version: str,
    config_file: str,
    subscribe_provider: Callable[[Callable[[Event], None]], None] | None = None,
) -> Home | None:
    """The home integration the configuration asks for (None: no [[mcp]], no [mqtt])."""
    if not mcp and not mqtt.enabled:
        return None
    home_ref: list[Home] = []
    if mcp:
        from huxleyd.home.mcp import McpServerLink
    servers = [
        McpServerLink(
            s,
            degraded=degraded,
            on_tools_changed=lambda link: home_ref[0].tools_changed(link),
            config_file=config_file,
        )
        for s in mcp
    ]
    link: MqttLink | None = None
    if mqtt.enabled:
        speaker = DaemonSpeaker(
            coordinator,
            volume,
            degraded=degraded,
            provider_online=provider_online,
            tell_watch=tell_watch,
        )
        topics = Topics(mqtt.topic_prefix, device_id(state_dir), mqtt.room)
        link = MqttLink(
            mqtt,
            speaker=speaker,
            topics=topics,
            degraded=degraded,
            version=version,
            config_file=config_file,
        )
        household = HouseholdTools(link)
        host.attach(household)

        def rooms_changed() -> None:  # the tool's description names the rooms
            host.attach(household)
            refresh_tools()

        link.on_rooms_changed = rooms_changed
        if subscribe_provider is not None and mqtt.publish_heard:
            heard = link.heard

            def on_event(event: Event) -> None:
                if isinstance(event, TranscriptDone) and event.role is Role.USER:
                    heard(event.text)

            subscribe_provider(on_event)
    home = Home(servers=servers, mqtt=link, host=host, refresh_tools=refresh_tools)
    home_ref.append(home)
    coordinator.subscribe(home.on_news)
    return home
