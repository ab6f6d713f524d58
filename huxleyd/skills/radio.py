"""The radio skill: internet (or local file) stations, played through ffmpeg.

Config::

    [skills.radio]
    stations = { "Jazz FM" = "https://example.org/jazz.mp3", "Rain" = "sounds/rain.ogg" }
    reconnect_attempts = 3      # after a drop, before giving up
    reconnect_delay_s = 2.0     # first wait; doubles each attempt
    healthy_after_s = 60.0      # a connection that played this long resets the count

A station is a MIXABLE ``AudioStream``: it ducks under speech and keeps
playing. http(s) stations run ffmpeg with its own reconnect options; when
ffmpeg still dies (or the server closes), the stream starts ffmpeg again up
to ``reconnect_attempts`` times with a doubling delay. When the attempts are
spent the stream ends and the skill says so through
``ctx.inject_turn(..., priority=NORMAL)`` — not ``on_complete_prompt``, which
stays unset: a radio has no natural end to announce, and a local file
station that simply reaches its end stops silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from huxley_sdk import (
    BYTES_PER_SECOND,
    AudioStream,
    CancelMedia,
    ContentType,
    InjectPriority,
    SkillContext,
    ToolDefinition,
    ToolResult,
)

from .media import MediaError, best_match, decode_pcm, is_network_source
from .support import require_ctx, tool_error

LAST_STATION_KEY = "last_station"


@dataclass(frozen=True, slots=True)
class Station:
    name: str
    source: str
    """An http(s) URL, or an absolute file path."""

    @property
    def is_network(self) -> bool:
        return is_network_source(self.source)


def parse_stations(raw: Any, data_dir: Path) -> list[Station]:
    """Validate the ``stations`` config table; relative paths are under ``data_dir``."""
    if raw is None:
        return []
    if not isinstance(raw, dict):
        raise ValueError(
            f"radio: config key 'stations' must be a table of name = URL or file, "
            f"got {type(raw).__name__}"
        )
    stations = []
    for name, source in raw.items():
        if not isinstance(source, str) or not source.strip():
            raise ValueError(
                f"radio: config key 'stations.{name}' must be a URL or a file path, got {source!r}"
            )
        source = source.strip()
        if not is_network_source(source):
            path = Path(source).expanduser()
            source = str(path if path.is_absolute() else data_dir / path)
        stations.append(Station(str(name), source))
    return stations


def _positive(config: dict[str, Any], key: str, default: float) -> float:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"radio: config key {key!r} must be a number >= 0, got {value!r}")
    return float(value)


class RadioSkill:
    """Plays configured stations as ducking background audio; reconnects drops."""

    name = "radio"

    config_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "stations": {
                "type": "object",
                "additionalProperties": {"type": "string", "minLength": 1},
            },
            "ffmpeg": {"type": "string", "minLength": 1},
            "reconnect_attempts": {"type": "integer", "minimum": 0},
            "reconnect_delay_s": {"type": "number", "minimum": 0},
            "healthy_after_s": {"type": "number", "minimum": 0},
            "timezone": {"type": "string"},
        },
        "additionalProperties": False,
    }
    """``[skills.radio]`` of the persona; huxleyd checks it at load (a huxleyd extension)."""

    def __init__(self) -> None:
        self._ctx: SkillContext | None = None
        self._stations: list[Station] = []
        self._ffmpeg = "ffmpeg"
        self._attempts = 3
        self._delay_s = 2.0
        self._healthy_bytes = 60 * BYTES_PER_SECOND
        self._serials = itertools.count(1)
        self._playing: tuple[int, Station] | None = None

    @property
    def tools(self) -> list[ToolDefinition]:
        return [
            ToolDefinition(
                "play_radio",
                "Play a radio station by name. Without a name, the last one played.",
                {"type": "object", "properties": {"station": {"type": "string"}}},
            ),
            ToolDefinition(
                "stop_radio",
                "Stop the radio.",
                {"type": "object", "properties": {}},
            ),
            ToolDefinition(
                "list_radio_stations",
                "List the radio stations and which one is playing.",
                {"type": "object", "properties": {}},
            ),
        ]

    async def setup(self, ctx: SkillContext) -> None:
        self._ctx = ctx
        config = ctx.config
        self._stations = parse_stations(config.get("stations"), ctx.persona_data_dir)
        self._ffmpeg = str(config.get("ffmpeg", "ffmpeg"))
        self._attempts = int(_positive(config, "reconnect_attempts", 3))
        self._delay_s = _positive(config, "reconnect_delay_s", 2.0)
        self._healthy_bytes = int(_positive(config, "healthy_after_s", 60.0) * BYTES_PER_SECOND)
        if not self._stations:
            ctx.logger.warning("no_stations", hint="add [skills.radio] stations = {...}")

    async def teardown(self) -> None:
        self._ctx = None

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        if tool_name == "play_radio":
            return await self._play(str(args.get("station") or "").strip())
        if tool_name == "stop_radio":
            if self._playing is None:
                return tool_error("not_playing", "the radio is not playing")
            name = self._playing[1].name
            return ToolResult(output=json.dumps({"stopped": name}), side_effect=CancelMedia())
        if tool_name == "list_radio_stations":
            playing = self._playing[1].name if self._playing else None
            names = [s.name for s in self._stations]
            return ToolResult(output=json.dumps({"stations": names, "playing": playing}))
        raise ValueError(f"radio skill has no tool {tool_name!r}")

    async def _play(self, query: str) -> ToolResult:
        if not self._stations:
            return tool_error("no_stations", "no radio stations are configured")
        names = [s.name for s in self._stations]
        if query:
            winner, tied = best_match(query, [(s, s.name) for s in self._stations])
            if winner is None and tied:
                candidates = [s.name for s in tied]
                return tool_error(
                    "ambiguous",
                    "several stations match; ask which one",
                    query=query,
                    candidates=candidates,
                )
            if winner is None:
                return tool_error(
                    "no_such_station", "no station has that name", query=query, stations=names
                )
            station = winner
        else:
            last = await require_ctx(self._ctx, self.name).storage.get_setting(LAST_STATION_KEY)
            station = next((s for s in self._stations if s.name == last), self._stations[0])
        await require_ctx(self._ctx, self.name).storage.set_setting(LAST_STATION_KEY, station.name)
        return ToolResult(
            output=json.dumps({"playing": station.name}),
            side_effect=AudioStream(
                factory=lambda: self.stream(station),
                content_type=ContentType.MIXABLE,
                label=station.name,
            ),
        )

    async def stream(self, station: Station) -> AsyncIterator[bytes]:
        """PCM of ``station`` until closed; restarts ffmpeg on drops, then gives up aloud."""
        ctx = require_ctx(self._ctx, self.name)
        serial = next(self._serials)
        self._playing = (serial, station)
        attempts_left = self._attempts
        try:
            for attempt in itertools.count():
                streamed, error = 0, None
                try:
                    async with contextlib.aclosing(
                        decode_pcm(station.source, ffmpeg=self._ffmpeg)
                    ) as pcm:
                        async for chunk in pcm:
                            streamed += len(chunk)
                            yield chunk
                except MediaError as exc:
                    error = str(exc)
                if error is None and not station.is_network:
                    return  # a file station played to its end
                if streamed >= self._healthy_bytes:
                    attempts_left = self._attempts  # a fresh drop after a good run
                ctx.logger.warning(
                    "radio_dropped", station=station.name, attempt=attempt, error=error or "eof"
                )
                if attempts_left == 0:
                    break
                await asyncio.sleep(self._delay_s * 2 ** (self._attempts - attempts_left))
                attempts_left -= 1
            ctx.logger.error("radio_lost", station=station.name)
            await ctx.inject_turn(
                f"Tell the user the radio station '{station.name}' stopped and could not "
                "be reconnected.",
                dedup_key=f"radio:lost:{station.name}",
                priority=InjectPriority.NORMAL,
            )
        finally:
            if self._playing is not None and self._playing[0] == serial:
                self._playing = None
