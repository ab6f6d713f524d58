"""``[[mcp]]`` and ``[mqtt]``: the home integration's settings, parsed once.

Layer: pure (no I/O). :func:`parse_home` is called by
:func:`huxleyd.config.load.load_config` with the file's whole table; every
error names the file, the dotted key and what was expected (conventions
rule 9). Secrets are never in the file itself: ``token_file`` and
``password_file`` name files the daemon reads when it connects (and re-reads
on every try, so a fixed token is used without a restart).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from huxleyd.errors import ConfigError
from huxleyd.schema import bounds, build

McpTransport = Literal["auto", "streamable-http", "sse"]

SERVER_NAME = re.compile(r"^[a-z][a-z0-9_]{0,15}$")
"""An ``[[mcp]] name``: it prefixes every tool name the model sees (``home__HassTurnOff``),
so it is short and of the characters every provider allows in a function name."""

ROOM = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
"""A room: one MQTT topic level, spoken as a word (``kitchen``, ``living_room``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class McpServerSettings:
    """One ``[[mcp]]`` entry: an MCP server whose tools the model may call."""

    name: str
    url: str
    token_file: Path | None = None
    """A file holding the bearer token (Home Assistant: a long-lived access token)."""
    transport: McpTransport = "auto"
    """``auto``: SSE when the URL's path ends in ``/sse``, else streamable HTTP."""
    timeout_s: float = field(default=8.0, metadata=bounds(0.5, 120.0))
    """How long one tool call may take (the ledger's deadline) and one connect."""

    @property
    def resolved_transport(self) -> Literal["streamable-http", "sse"]:
        if self.transport != "auto":
            return self.transport
        return "sse" if urlsplit(self.url).path.rstrip("/").endswith("/sse") else "streamable-http"


@dataclass(frozen=True, slots=True, kw_only=True)
class MqttSettings:
    """``[mqtt]``: the speaker in Home Assistant, and a household of speakers."""

    url: str = ""
    """``mqtt://host[:port]`` or ``mqtts://host[:port]``; empty: no MQTT at all."""
    username: str = ""
    password_file: Path | None = None
    room: str = ""
    """This speaker's room (``kitchen``): how the other speakers and the model name it."""
    name: str = ""
    """The device's name in Home Assistant; empty: ``Huxley <room>``."""
    discovery_prefix: str = "homeassistant"
    topic_prefix: str = "huxley"
    """Where the speakers' own topics live (``huxley/<device id>/…``, ``huxley/household/…``)."""
    announce_ttl_s: float = field(default=60.0, metadata=bounds(1.0, 3600.0))
    """An announcement not spoken within this many seconds of being sent is dropped
    (and the sender told), never played late."""
    publish_heard: bool = False
    """Publish what a person said (the transcript of their turn) to the broker. Off:
    nothing a person says leaves the speaker through MQTT."""
    ca_file: Path | None = None
    """For ``mqtts://``: the CA that signed the broker's certificate; unset: the system's."""

    @property
    def enabled(self) -> bool:
        return bool(self.url)

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""

    @property
    def tls(self) -> bool:
        return urlsplit(self.url).scheme == "mqtts"

    @property
    def port(self) -> int:
        return urlsplit(self.url).port or (8883 if self.tls else 1883)

    @property
    def display_name(self) -> str:
        return self.name or f"Huxley {self.room.replace('_', ' ')}"


def _check_url(url: str, schemes: tuple[str, ...], file: str, key: str) -> None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        raise ConfigError(file, key, f"not a URL ({exc})") from None
    if parts.scheme not in schemes or not parts.hostname:
        want = " or ".join(f"{s}://host" for s in schemes)
        raise ConfigError(file, key, f"expected {want}…, got {url!r}")
    if parts.password:
        raise ConfigError(
            file, key, "a password in the URL is refused: put it in a file (password_file)"
        )


def parse_mcp(raw: Any, *, file: str, base: Path) -> tuple[McpServerSettings, ...]:
    """``[[mcp]]``: a list of tables, each with a unique ``name``."""
    if not isinstance(raw, list):
        raise ConfigError(file, "mcp", "expected a list of tables ([[mcp]] entries)")
    servers: list[McpServerSettings] = []
    for i, entry in enumerate(raw):
        key = f"mcp[{i}]"
        if not isinstance(entry, dict):
            raise ConfigError(file, key, "expected a table ([[mcp]])")
        server = build(McpServerSettings, entry, file=file, prefix=key)
        if not SERVER_NAME.match(server.name):
            raise ConfigError(
                file,
                f"{key}.name",
                f"expected 1-16 of a-z, 0-9, _ starting with a letter, got {server.name!r}",
            )
        if any(s.name == server.name for s in servers):
            raise ConfigError(file, f"{key}.name", f"{server.name!r} is used by two [[mcp]]")
        _check_url(server.url, ("http", "https"), file, f"{key}.url")
        if server.token_file is not None and not server.token_file.is_absolute():
            server = _replace_path(server, "token_file", base)
        servers.append(server)
    return tuple(servers)


def parse_mqtt(raw: Any, *, file: str, base: Path) -> MqttSettings:
    """``[mqtt]``: a broker URL and this speaker's room (both, or neither)."""
    if not isinstance(raw, dict):
        raise ConfigError(file, "mqtt", f"expected a table [mqtt], got {raw!r}")
    mqtt = build(MqttSettings, raw, file=file, prefix="mqtt")
    if not mqtt.enabled:
        return mqtt
    _check_url(mqtt.url, ("mqtt", "mqtts"), file, "mqtt.url")
    if not ROOM.match(mqtt.room):
        raise ConfigError(
            file,
            "mqtt.room",
            f"expected this speaker's room, 1-32 of a-z, 0-9, _ or - (e.g. 'kitchen'), "
            f"got {mqtt.room!r}",
        )
    for key in ("discovery_prefix", "topic_prefix"):
        value = getattr(mqtt, key)
        if not value or any(c in value for c in "#+") or value.startswith("/"):
            raise ConfigError(file, f"mqtt.{key}", f"expected a topic prefix, got {value!r}")
    for key in ("password_file", "ca_file"):
        if getattr(mqtt, key) is not None and not getattr(mqtt, key).is_absolute():
            mqtt = _replace_path(mqtt, key, base)
    return mqtt


def _replace_path(settings: Any, key: str, base: Path) -> Any:
    import dataclasses

    return dataclasses.replace(settings, **{key: (base / getattr(settings, key)).resolve()})


def parse_home(
    table: dict[str, Any], *, file: str, base: Path
) -> tuple[tuple[McpServerSettings, ...], MqttSettings]:
    """The ``mcp`` and ``mqtt`` keys of a daemon file (absent: none of either)."""
    mcp = parse_mcp(table.get("mcp", []), file=file, base=base)
    mqtt = parse_mqtt(table.get("mqtt", {}), file=file, base=base)
    return mcp, mqtt
