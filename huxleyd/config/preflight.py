"""Everything ``start`` does short of opening devices and the network.

:func:`preflight` takes a loaded :class:`~huxleyd.config.load.Config` (TOML
parsed, persona read, board merged) and checks what the daemon will touch
next: every file it will read (exists, is a file or directory as expected,
readable by the service user, not empty), the socket's directory, each
provider stage, each skill (installed, the right shape, its persona table
against its ``config_schema``). ``huxleyd --check-config`` is exactly this
call; :meth:`Runtime.start <huxleyd.app.runtime.Runtime.start>` makes it before
opening anything; ``huxleyctl doctor`` without a daemon reports on it.

The first problem raises :class:`~huxleyd.errors.ConfigError` (or a
:class:`~huxleyd.errors.SkillError`): one line naming the file, the key and
what was expected.
"""

from __future__ import annotations

import grp
import math
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from huxleyd.audio.earcons import earcons_problem, load_each_earcon
from huxleyd.config.control_socket import ControlSettings
from huxleyd.config.files import Reader, check_directory, check_file
from huxleyd.config.load import Config
from huxleyd.config.preflight_io import PERSONA_SOUNDS, check_devices, persona_sounds_problem
from huxleyd.errors import (
    ConfigError,
    SkillCollisionError,
    SkillError,
    SkillNotInstalledError,
)
from huxleyd.providers.cascade.settings import CascadeSettings
from huxleyd.providers.keyfile import ParsedKey, is_blank, parse_key
from huxleyd.skillhost.host import SkillHost
from huxleyd.skillhost.loading import installed_skills
from huxleyd.skillhost.remote import with_third_party
from huxleyd.skillhost.sources import Installed

CREDENTIAL_NAME = "openai-key"
"""The systemd credential (``LoadCredential=openai-key:…``) holding the API key."""


@dataclass(frozen=True, slots=True)
class KeySource:
    """Where the daemon reads the provider's API key from (never the key itself)."""

    path: Path
    key: str
    """What named it: ``--key-file``, ``credential openai-key`` or ``provider.key_file``."""
    file: str
    """The file that set it (the config file, or ``command line``/``systemd``)."""


@dataclass(frozen=True, slots=True)
class Preflight:
    """What the checks found, for the start and for ``--check-config``'s ok line."""

    key: KeySource | None
    """The provider's key file; None: no key (the simulator runs, unless cascade)."""
    reader: Reader
    """Whose access was checked."""
    host: SkillHost
    """The persona's skills, loaded and checked (not set up yet)."""
    left_out: tuple[tuple[str, str], ...] = ()
    """``(part, what)``: each part the start will run without, in the words of the
    degraded record (:mod:`huxleyd.degraded`) the start writes for it."""
    warnings: tuple[str, ...] = ()
    """What the start only notes in the journal (nothing runs without it)."""

    @property
    def verdict(self) -> str:
        """``runs`` or ``runs degraded``: what the start will do (it refuses by raising)."""
        return "runs degraded" if self.left_out else "runs"

    def report(self, config: Config, config_arg: Path | str) -> str:
        """What ``--check-config`` prints: the verdict line, then one line per part
        left out (``  left out: skill:radio: <why>``), then the notes."""
        lines = [f"{config_arg}: {self.verdict} ({self.summary(config)})"]
        lines += [f"  left out: {part}: {what}" for part, what in self.left_out]
        lines += [f"  note: {w}" for w in self.warnings]
        return "\n".join(lines)

    def summary(self, config: Config) -> str:
        """``persona 'Huxley', skills: …, key: …`` — what ``--check-config`` prints."""
        if config.provider.kind == "sim":
            key = "none needed (provider.kind is sim)"
        elif self.key is None:
            key = "none (the built-in simulator will answer, not an AI)"
        else:
            key = f"{self.key.path} ({self.key.key})"
        skills = ", ".join(s.name for s in self.host.skills) or "none"
        who = self.reader.describe()
        if os.geteuid() == 0 and self.reader.name != config.daemon.service_user:
            who += f" (service user {config.daemon.service_user!r} does not exist)"
        return (
            f"persona {config.persona.name!r}, board {config.board.name!r}, skills: {skills}; "
            f"key: {key}; files checked as {who}"
        )


def key_source(
    config: Config, *, key_file: Path | None = None, env: Mapping[str, str] | None = None
) -> KeySource | None:
    """The key file the daemon uses: ``--key-file``, the systemd credential, ``provider.key_file``.

    A credential with no token (the installer creates an empty one; blank
    lines or a lone BOM count as empty, as :func:`~huxleyd.providers.keyfile.is_blank`
    says) means "no key yet" and falls through, as the daemon does.
    """
    environ = os.environ if env is None else env
    if key_file is not None:
        return KeySource(key_file, "--key-file", "command line")
    cred_dir = environ.get("CREDENTIALS_DIRECTORY")
    if cred_dir:
        cred = Path(cred_dir) / CREDENTIAL_NAME
        try:
            if cred.is_file() and not is_blank(cred.read_bytes()):
                return KeySource(cred, f"credential {CREDENTIAL_NAME}", "systemd")
        except OSError:
            pass
    if config.provider.key_file is not None:
        return KeySource(config.provider.key_file, "provider.key_file", str(config.path))
    return None


def preflight(
    config: Config,
    *,
    key_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    reader: Reader | None = None,
    uses_simulator_url: bool = False,
    leave_out_failing_skills: bool = False,
) -> Preflight:
    """Check ``config`` as the start will use it; raise on the first problem.

    ``reader`` defaults to this process; ``--check-config`` and ``doctor``
    pass :meth:`Reader.for_service`. ``uses_simulator_url``: the caller runs
    the simulator itself (tests, ``RuntimeParts.provider_url``), so no key
    is read. ``leave_out_failing_skills``: the daemon's start, where a skill that
    does not load is left out (:attr:`SkillHost.failed`) instead of raising;
    ``--check-config`` raises, as a validator must.
    """
    who = reader or Reader.this_process()
    file = str(config.path)
    check_directory(
        config.daemon.sounds_dir,
        file=file,
        key="daemon.sounds_dir",
        reader=who,
        what="the earcons (WAV files)",
    )
    left_out = check_devices(config, who)
    key: KeySource | None = None
    if not uses_simulator_url and config.provider.kind != "sim":
        key = key_source(config, key_file=key_file, env=env)
        if key is not None:
            check_key_file(key.path, file=key.file, key=key.key, reader=who)
    _check_provider(config, key, who)
    left_out += sound_problems(config)
    host = check_skills(config, leave_out=leave_out_failing_skills)
    left_out += [(f"skill:{name}", reason + LEFT_OUT_FIX) for name, reason in host.failed.items()]
    return Preflight(
        key=key,
        reader=who,
        host=host,
        left_out=tuple(left_out),
        warnings=tuple(check_groups(config)),
    )


def sound_problems(config: Config) -> list[tuple[str, str]]:
    """The earcons and the persona's sounds, each file read on its own as the start
    reads them: a broken one is a part left out (its cue silent), not a refusal."""
    problems = []
    _, broken = load_each_earcon(config.daemon.sounds_dir)
    earcons = earcons_problem(config.daemon.sounds_dir, broken)
    if earcons is not None:
        problems.append(("earcons", earcons))
    sounds = persona_sounds_problem(config)
    if sounds is not None:
        problems.append((PERSONA_SOUNDS, sounds))
    return problems


LEFT_OUT_FIX = "; fix it, then restart"
"""What follows the reason of a skill left out at load (the start's degraded record
says the same; a skill whose setup fails says "retried with backoff" instead)."""


def check_groups(config: Config) -> list[str]:
    """A group ``[control]`` names that does not exist, by key (a note: the socket
    still answers root; the shipped defaults, made by the installer, are not named
    on a machine without them, such as ``make run``'s)."""
    notes = []
    control = config.control
    defaults = ControlSettings()
    for key, name, default, effect in (
        (
            "socket_group",
            control.socket_group,
            defaults.socket_group,
            "the socket keeps the daemon's group",
        ),
        (
            "operator_group",
            control.operator_group,
            defaults.operator_group,
            "only root may change the device (volume, say, stop)",
        ),
    ):
        if not name or name == default:
            continue
        try:
            grp.getgrnam(name)
        except KeyError:
            notes.append(
                f"{config.path}: control.{key}: no group {name!r} on this machine: {effect}"
            )
    return notes


def check_key_file(path: Path, *, file: str, key: str, reader: Reader) -> ParsedKey:
    """``path`` is a key file ``reader`` can read, holding one token: the same
    :func:`~huxleyd.providers.keyfile.parse_key` the start reads it with."""
    # Emptiness is the token's question: parse_key answers it in the start's words.
    check_file(path, file=file, key=key, reader=reader, what="the API key", non_empty=False)
    try:
        data = path.read_bytes()
    except OSError as exc:  # readable by the reader, not by us (not root)
        raise ConfigError(str(path), key, f"cannot read the API key file ({exc.strerror})") from exc
    return parse_key(data, file=str(path), key=key)


def _check_provider(config: Config, key: KeySource | None, who: Reader) -> None:
    provider, file = config.provider, str(config.path)
    if provider.kind == "cascade":
        if provider.sim_scenario is None:
            check_cascade(provider.cascade, file=file, reader=who, has_key=key is not None)
            return
        # The cascade simulator stands in for every stage (Runtime._cascade_target).
        from huxleyd.sim.chat import load_cascade_script

        load_cascade_script(provider.sim_scenario)
        return
    scheme = urlsplit(provider.url).scheme
    if scheme not in ("ws", "wss"):
        raise ConfigError(
            file, "provider.url", f"expected a ws:// or wss:// URL, got {provider.url!r}"
        )
    if provider.sim_scenario is not None and (key is None or provider.kind == "sim"):
        from huxleyd.sim.scenario import load_scenario

        load_scenario(provider.sim_scenario)


def _needs_key(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host.endswith(("openai.com", "elevenlabs.io"))


def _check_command(argv: tuple[str, ...], *, file: str, key: str, stage: str) -> None:
    if not argv:
        raise ConfigError(
            file, key, f"expected a command (a list: program and arguments) with {stage}, got []"
        )
    program = argv[0]
    if shutil.which(program) is None:
        raise ConfigError(
            file, key, f"expected a program on PATH or an executable path, {program!r} is neither"
        )


def check_cascade(cascade: CascadeSettings, *, file: str, reader: Reader, has_key: bool) -> None:
    """Each cascade stage has what it needs: a command that exists, or a URL and a key."""
    prefix = "provider.cascade"
    for setting, path in (
        ("asr_key_file", cascade.asr_key_file),
        ("llm_key_file", cascade.llm_key_file),
        ("elevenlabs_key_file", cascade.elevenlabs_key_file),
    ):
        if path is not None:
            check_key_file(path, file=file, key=f"{prefix}.{setting}", reader=reader)
    if cascade.asr == "command":
        _check_command(
            cascade.asr_command, file=file, key=f"{prefix}.asr_command", stage='asr = "command"'
        )
    elif cascade.asr_key_file is None and not has_key and _needs_key(cascade.asr_url):
        raise ConfigError(
            file,
            f"{prefix}.asr_key_file",
            f"expected a key file: {cascade.asr_url} needs an API key "
            "(set asr_key_file or provider.key_file)",
        )
    if cascade.llm_key_file is None and not has_key and _needs_key(cascade.llm_url):
        raise ConfigError(
            file,
            f"{prefix}.llm_key_file",
            f"expected a key file: {cascade.llm_url} needs an API key "
            "(set llm_key_file or provider.key_file)",
        )
    if cascade.tts == "command":
        _check_command(
            cascade.tts_command, file=file, key=f"{prefix}.tts_command", stage='tts = "command"'
        )
    elif cascade.elevenlabs_key_file is None and _needs_key(cascade.elevenlabs_url):
        raise ConfigError(
            file,
            f"{prefix}.elevenlabs_key_file",
            'expected a key file for tts = "elevenlabs" (or tts = "command" for a local voice)',
        )


# longer than 50 lines: a third of it is the contract; the body is one loop over the persona's skills and the host it builds
def check_skills(config: Config, *, leave_out: bool = False) -> SkillHost:
    """Load the persona's skills and check each table against the skill's ``config_schema``.

    Every error names the persona file and the skill's key (``skills.radio``).
    ``leave_out``: a skill that fails (not installed, does not import, the wrong
    shape, its table refused, a tool name another skill has) is recorded in
    the host's ``failed`` with that one line, and the others load.
    Which distribution provides a name two register is the persona's choice
    (``from``, :mod:`huxleyd.skillhost.sources`); a table is checked as the skill
    will see it (without ``from``, its ``i18n`` merged), see
    :func:`huxleyd.skillhost.host.check_config`.
    """
    persona_file = str(config.persona_path)
    persona = config.persona
    available, remote_problem = with_third_party(installed_skills())
    skills = []
    sources: dict[str, str] = {}
    namespaces: dict[str, str] = {}
    failed: dict[str, str] = {}
    tools: dict[str, str] = {}
    for name in persona.skills:
        try:
            one = _load_one(name, config, available, tools)
        except (ConfigError, SkillError) as exc:
            if remote_problem is not None and isinstance(exc, SkillNotInstalledError):
                exc = SkillNotInstalledError(f"{exc}; {remote_problem}")
            if not leave_out:
                raise exc from None
            failed[name] = " ".join(str(exc).split())
            continue
        skills.extend(one.skills)
        sources.update(one.sources)
        namespaces.update(one.namespaces)
        tools.update({t.name: name for s in one.skills for t in s.tools})
    descriptions = dict(persona.overrides.tools)
    if failed:  # overrides of a left-out skill's tools have nothing to override
        descriptions = {t: d for t, d in descriptions.items() if t in tools}
    try:
        host = SkillHost(
            skills,
            descriptions=descriptions,
            tool_timeout_s=config.provider.tool_timeout_s,
            sources=sources,
            language=persona.language,
        )
    except SkillError as exc:
        raise type(exc)(f"{persona_file}: skills: {exc}") from exc
    host.namespaces = namespaces
    host.order = list(persona.skills)
    for name, reason in failed.items():
        host.leave_out(name, reason)
    return host


def check_table_values(value: object, *, file: str, key: str) -> None:
    """What no skill can use, refused whatever its schema says: a NaN or infinite
    number (it passes every range check) and a NUL in text (no name, path or
    time zone holds one). The start leaves such a skill out in these words."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(file, key, f"expected a finite number, got {value!r}")
    if isinstance(value, str) and "\x00" in value:
        raise ConfigError(file, key, "expected text without a NUL character (U+0000)")
    if isinstance(value, dict):
        for k, v in value.items():
            check_table_values(v, file=file, key=f"{key}.{k}")
    if isinstance(value, list):
        for i, v in enumerate(value):
            check_table_values(v, file=file, key=f"{key}[{i}]")


def _load_one(
    name: str, config: Config, available: Installed, tools: Mapping[str, str]
) -> SkillHost:
    """One skill, loaded and checked; ``tools``: tool name → skill already loaded."""
    persona_file = str(config.persona_path)
    check_table_values(config.persona.skills.get(name, {}), file=persona_file, key=f"skills.{name}")
    try:
        one = SkillHost.load(
            [name],
            installed=available,
            configs=config.persona.skills,
            persona_file=persona_file,
            language=config.persona.language,
        )
    except (ConfigError, SkillCollisionError):
        raise  # these name the persona file and the key already
    except SkillError as exc:
        raise type(exc)(f"{persona_file}: skills.{name}: {exc}") from exc
    for tool in (t for s in one.skills for t in s.tools):
        if tool.name in tools:
            raise SkillCollisionError(
                f"{persona_file}: skills: tool {tool.name!r} is defined by both skill "
                f"{tools[tool.name]!r} and {name!r}"
            )
    return one
