"""Configuration: ``huxleyd.toml`` and the persona files, parsed once.

The daemon file has one table per subsystem (``[daemon]``, ``[audio]``,
``[provider]``, ``[hardware]``, ``[storage]``, ``[control]``, ``[wake]``); each becomes a
frozen settings dataclass owned by that subsystem's package. The persona
(``<personas_dir>/<name>.toml``) says who the assistant is and which skills
it loads. Relative paths are resolved against the directory of the file
that names them. Every error names the file, the dotted key and what was
expected (:class:`~huxleyd.errors.ConfigError`).
"""

from __future__ import annotations

import dataclasses
import enum
import re
import tomllib
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from huxleyd.audio.settings import AudioSettings
from huxleyd.config.control_socket import ControlSettings
from huxleyd.config.persona_defaults import check_language, with_defaults
from huxleyd.errors import ConfigError
from huxleyd.handsfree.settings import WakeSettings, resolve_model
from huxleyd.hardware.boards import BoardProfile, load_board
from huxleyd.hardware.settings import HardwareSettings
from huxleyd.home.settings import McpServerSettings, MqttSettings, parse_home
from huxleyd.providers.settings import ProviderSettings
from huxleyd.schema import build
from huxleyd.schema.names import line_hint, unknown_name_hint

DEFAULT_CONFIG_PATH = Path("/etc/huxleyd/huxleyd.toml")

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class DaemonSettings:
    """``[daemon]``: who we are and where our files live."""

    persona: str = "default"
    personas_dir: Path = Path("personas")
    sounds_dir: Path = Path("/opt/huxleyd/share/sounds")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    service_user: str = "huxley"
    """The user the systemd unit runs the daemon as (``User=`` in huxleyd.service).
    ``--check-config`` and ``huxleyctl doctor`` run as root check that this user
    can read every file the daemon will read."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StorageSettings:
    """``[storage]``: the persona database and skill secrets."""

    state_dir: Path = Path("/var/lib/huxleyd")

    def database_path(self, persona: str) -> Path:
        return self.state_dir / f"{persona}.db"

    def persona_data_dir(self, persona: str) -> Path:
        """The default data directory of a persona (books, memos, sounds)."""
        return self.state_dir / persona / "data"

    @property
    def secrets_dir(self) -> Path:
        return self.state_dir / "secrets"


class PersonaString(enum.StrEnum):
    """The persona strings the daemon shows, by the key a persona sets them with
    (``[i18n.<lang>.strings]``). Each stands beside the earcon of the same name:
    the sound says it aloud, the string says it on text surfaces (``huxleyctl
    say`` refusals, the ``watch`` feed). A key not named here is a typo and is
    refused with the allowed keys."""

    TOO_SHORT = "too_short"
    OFFLINE = "offline"
    DEGRADED = "degraded"


@dataclass(frozen=True, slots=True, kw_only=True)
class LanguageOverrides:
    """``[i18n.<lang>]`` of a persona: text in the persona's language."""

    instructions: str | None = None
    tools: dict[str, str] = field(default_factory=dict)
    """Tool name → description in this language."""
    strings: dict[PersonaString, str] = field(default_factory=dict)
    """Persona strings (``too_short``, ``offline``, ``degraded``) in this language."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdatesSettings:
    """``[updates]`` of a persona: what the household allows the device to do
    by itself after a security upgrade (docs/image.md, "Updates")."""

    reboot: Literal["when_idle", "never"] = "when_idle"
    """``when_idle``: when an upgrade needs a reboot (a kernel, libc), the device
    reboots itself in the night window, only while nothing plays, talks, listens
    or holds the mic and no timer or reminder is due soon. ``never``: it waits
    for someone to reboot it (``status`` and ``doctor`` say one is pending).
    On by default: a speaker nobody administers would otherwise run a patched
    kernel's predecessor for months, and the idle rule makes the reboot unheard."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Persona:
    """Who the assistant is. ``skills`` maps skill name → its config, in file order."""

    name: str
    language: str = "en"
    voice: str | None = None
    timezone: str = "UTC"
    instructions: str = ""
    skills: dict[str, dict[str, Any]] = field(default_factory=dict)
    i18n: dict[str, LanguageOverrides] = field(default_factory=dict)
    data_dir: Path | None = None
    """Sounds, books, memos of this persona; unset = ``<state_dir>/<persona>/data``."""
    wake_word: bool = True
    """False: this persona never answers the wake word (``[wake]``), only the button."""
    updates: UpdatesSettings = field(default_factory=UpdatesSettings)

    @property
    def overrides(self) -> LanguageOverrides:
        """The overrides for the persona's own language (empty when none)."""
        return self.i18n.get(self.language, LanguageOverrides())

    @property
    def effective_instructions(self) -> str:
        return self.overrides.instructions or self.instructions

    def tool_description(self, tool: str, default: str) -> str:
        return self.overrides.tools.get(tool, default)

    def string(self, key: PersonaString, default: str) -> str:
        return self.overrides.strings.get(key, default)


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """The whole configuration, parsed and checked, with the board profile merged."""

    path: Path
    daemon: DaemonSettings
    audio: AudioSettings
    """``[audio]`` with the board profile's values for the keys the file does not set."""
    provider: ProviderSettings
    hardware: HardwareSettings
    storage: StorageSettings
    control: ControlSettings
    persona: Persona
    persona_path: Path
    board: BoardProfile
    """The profile ``[hardware] board`` names, loaded from ``boards_dir``."""
    wake: WakeSettings = field(default_factory=WakeSettings)
    """``[wake]``: the wake word (off unless a model is named)."""
    mcp: tuple[McpServerSettings, ...] = ()
    """``[[mcp]]``: MCP servers whose tools the model may call (docs/home.md)."""
    mqtt: MqttSettings = field(default_factory=MqttSettings)
    """``[mqtt]``: the speaker in Home Assistant and the household (docs/home.md)."""


BOARD_AUDIO_KEYS = (
    "capture_device",
    "playback_device",
    "mixer_card",
    "mixer_control",
    "input_channels",
    "mic_channel",
    "device_rate_hz",
)
"""The ``[audio]`` keys a board profile supplies when the admin does not set them."""


_SECTIONS: dict[str, type[Any]] = {
    "daemon": DaemonSettings,
    "audio": AudioSettings,
    "provider": ProviderSettings,
    "hardware": HardwareSettings,
    "storage": StorageSettings,
    "control": ControlSettings,
    "wake": WakeSettings,
}

_HOME_SECTIONS = ("mcp", "mqtt")
"""Parsed by :func:`huxleyd.home.settings.parse_home` (``[[mcp]]`` is a list of tables)."""


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(str(path), "", "file not found") from None
    except PermissionError:
        raise ConfigError(str(path), "", "permission denied") from None
    except IsADirectoryError:
        raise ConfigError(str(path), "", "is a directory, expected a TOML file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            str(path), "", f"not valid TOML: {exc}{_refused_line_hint(path, exc)}"
        ) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            str(path),
            "",
            f"not UTF-8 text: byte {exc.object[exc.start]:#04x} at offset {exc.start}",
        ) from None
    except RecursionError:
        raise ConfigError(str(path), "", "nested too deeply to be a configuration") from None
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot be read: {exc.strerror or exc}") from None


def _refused_line_hint(path: Path, exc: tomllib.TOMLDecodeError) -> str:
    """What the eye cannot see on the line TOML refused (a look-alike letter)."""
    found = re.search(r"at line (\d+)", str(exc))
    if found is None:
        return ""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        return line_hint(lines[int(found.group(1)) - 1])
    except (OSError, UnicodeDecodeError, IndexError):
        return ""


def resolve_paths(settings: T, base: Path) -> T:
    """Return ``settings`` with every relative ``Path`` field made absolute from ``base``."""
    changes: dict[str, Any] = {}
    for fld in dataclasses.fields(settings):  # type: ignore[arg-type]
        value = getattr(settings, fld.name)
        if isinstance(value, Path) and not value.is_absolute():
            changes[fld.name] = (base / value).resolve()
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes[fld.name] = resolve_paths(value, base)
    return dataclasses.replace(settings, **changes) if changes else settings  # type: ignore[type-var]


MAX_INSTRUCTIONS_CHARS = 100_000
"""The longest persona instructions (per language) the daemon sends. They travel in
one ``session.update`` message with the tools; a provider closes an over-long
message (websocket close 1009, "message too big") and every session then fails,
so an over-long text is refused here, at the check and the start alike. 100,000
characters is some 25,000 tokens: far past a useful persona, far inside the
providers' message limits."""


def check_instructions(persona: Persona, *, file: str) -> None:
    """Each instructions text of ``persona`` fits :data:`MAX_INSTRUCTIONS_CHARS`."""
    texts = [("instructions", persona.instructions)]
    texts += [
        (f"i18n.{lang}.instructions", o.instructions or "") for lang, o in persona.i18n.items()
    ]
    for key, text in texts:
        if len(text) > MAX_INSTRUCTIONS_CHARS:
            raise ConfigError(
                file,
                key,
                f"expected at most {MAX_INSTRUCTIONS_CHARS:,} characters of instructions "
                f"(the provider closes a longer session.update), got {len(text):,}",
            )


def load_persona(path: Path) -> Persona:
    """Parse and check one persona file."""
    table = read_toml(path)
    file = str(path)
    if "name" not in table:
        table = {"name": path.stem, **table}
    skills = table.get("skills", {})
    if not isinstance(skills, dict):
        raise ConfigError(file, "skills", f"expected a table of skill tables, got {skills!r}")
    for skill, section in skills.items():
        if not isinstance(section, dict):
            raise ConfigError(file, f"skills.{skill}", "expected a table (use [skills.NAME])")
    check_language(table, file=file)
    persona = build(Persona, with_defaults(table), file=file)
    check_instructions(persona, file=file)
    try:
        ZoneInfo(persona.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            file,
            "timezone",
            f"unknown time zone {persona.timezone!r} (expected e.g. 'Europe/Madrid')",
        ) from None
    return resolve_paths(persona, path.parent)


def merge_board_audio(
    audio: AudioSettings, board: BoardProfile, *, set_keys: Collection[str], file: str = ""
) -> AudioSettings:
    """``audio`` with the board's value for each board key absent from ``set_keys``.

    ``set_keys`` are the keys the file's ``[audio]`` table spells out: a value
    the admin wrote stays, even when it equals the default (``"default"`` is
    a real ALSA device, not "unset").
    """
    changes: dict[str, Any] = {
        name: getattr(board.audio, name) for name in BOARD_AUDIO_KEYS if name not in set_keys
    }
    merged = dataclasses.replace(audio, **changes)
    if merged.mic_channel >= merged.input_channels:
        source = "[audio]" if "input_channels" in set_keys else f"board {board.name!r}"
        raise ConfigError(
            file,
            "audio.mic_channel",
            f"expected a channel below input_channels = {merged.input_channels} "
            f"(from {source}; channels count from 0), got {merged.mic_channel}",
        )
    return merged


def load_config(path: Path = DEFAULT_CONFIG_PATH) -> Config:
    """Parse ``path``, the persona and the board profile it names; merge the board.

    Raises :class:`ConfigError`. Files the daemon reads later (keys, sounds)
    are checked by :func:`huxleyd.config.preflight.preflight`.
    """
    table = read_toml(path)
    file = str(path)
    for key in table:
        if key not in _SECTIONS and key not in _HOME_SECTIONS:
            known = [*_SECTIONS, *_HOME_SECTIONS]
            hint = unknown_name_hint(key, known)
            raise ConfigError(
                file, key, f"unknown section (expected one of: {', '.join(known)}){hint}"
            )
    sections: dict[str, Any] = {}
    for name, cls in _SECTIONS.items():
        raw = table.get(name, {})
        if not isinstance(raw, dict):
            raise ConfigError(file, name, f"expected a table [{name}], got {raw!r}")
        sections[name] = resolve_paths(build(cls, raw, file=file, prefix=name), path.parent)
    daemon: DaemonSettings = sections["daemon"]
    persona_path = daemon.personas_dir / f"{daemon.persona}.toml"
    if not persona_path.exists():  # not a file: read_toml says what it is
        available = sorted(p.stem for p in daemon.personas_dir.glob("*.toml"))
        raise ConfigError(
            file,
            "daemon.persona",
            f"persona {daemon.persona!r} not found in {daemon.personas_dir} "
            f"(available: {', '.join(available) or 'none'})",
        )
    hardware: HardwareSettings = sections["hardware"]
    board = load_board(hardware.board, hardware.boards_dir, config_file=file)
    raw_audio = table.get("audio", {})
    sections["audio"] = merge_board_audio(
        sections["audio"], board, set_keys=raw_audio.keys(), file=file
    )
    sections["wake"] = resolve_model(sections["wake"], base=path.parent, file=file)
    sections["mcp"], sections["mqtt"] = parse_home(table, file=file, base=path.parent)
    return Config(
        path=path,
        persona=load_persona(persona_path),
        persona_path=persona_path,
        board=board,
        **sections,
    )
