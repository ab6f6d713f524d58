"""Which doctor checks run, with which facts: the daemon's, or the configuration's.

:func:`doctor_checks` is the one list. Its :class:`Facts` come either from
the running daemon (what it really opened and read: see
:meth:`RuntimeControl.doctor <huxleyd.app.control.RuntimeControl.doctor>`)
or, when no daemon answers, from :func:`offline_facts`: the configuration
resolved exactly as the daemon's start resolves it (same key-file order,
same pin-factory choice). A check with nothing to look at says "skipped".
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import partial
from pathlib import Path

from huxleyd.config.files import Reader
from huxleyd.config.load import Config, load_config
from huxleyd.config.preflight import key_source, preflight
from huxleyd.control.device_checks import device_checks
from huxleyd.control.doctor import (
    KeyFacts,
    Runner,
    check_audio_device,
    check_config,
    check_disk_space,
    check_gpio,
    check_key_file,
    check_mixer,
    check_service_user,
    run_command,
)
from huxleyd.control.doctor_provider import (
    ModelEndpoint,
    check_models,
    check_provider,
    model_endpoint,
)
from huxleyd.control.handler import DoctorCheck
from huxleyd.control.reboot import REBOOT_REQUIRED, check_reboot
from huxleyd.errors import ConfigError, HuxleydError

Check = Callable[[], DoctorCheck]


@dataclass(frozen=True, slots=True, kw_only=True)
class Facts:
    """What the checks look at beyond the configuration file."""

    key: KeyFacts
    reader: Reader | None = None
    """Who must be able to read the key (the service user, when doctor runs as root)."""
    read_key: Callable[[], str | None]
    """The key's text for the provider request (raises OSError/HuxleydError if unreadable)."""
    simulator: bool
    audio_state: str | None = None
    """The engine's device state; None: no daemon (the card is not opened by doctor)."""
    audio_description: str = ""
    audio_widened: str = ""
    """Why the daemon's device runs a longer period than its first (empty: it does not)."""
    audio_card_xruns: tuple[int, int] = (0, 0)
    """The card's own (speaker underruns, mic overruns) since the daemon started."""
    audio_failing: tuple[str, str] | None = None
    """The degraded record's ``speaker`` part, (what, fix), when it has one."""
    uptime_s: float = 0.0
    volume: str | None = None
    """What the daemon's volume drives; None: no daemon."""
    pin_factory: str = ""
    pins_mock: bool = False
    pins_in_use: Mapping[str, str] | None = None
    pin_probe: Callable[[int], object] | None = None


def _summary(config_path: Path, key_file: Path | None, env: Mapping[str, str]) -> str:
    config = load_config(config_path)
    checked = preflight(
        config,
        key_file=key_file,
        env=env,
        reader=Reader.for_service(config.daemon.service_user),
    )
    return checked.summary(config)


def offline_facts(
    config: Config, *, key_file: Path | None, env: Mapping[str, str] | None = None
) -> Facts:
    """Facts from the configuration alone, resolved as the daemon's start resolves them."""
    from huxleyd.hardware.pins import choose_pin_factory, is_mock, pin_probe
    from huxleyd.providers.apikey import read_api_key

    environ = dict(os.environ if env is None else env)
    kind = config.provider.kind
    source = None if kind == "sim" else key_source(config, key_file=key_file, env=environ)
    if source is not None:
        key = KeyFacts(source.path, source.key)
    elif kind == "sim":
        key = KeyFacts(None, "provider.kind is sim: no key needed")
    elif kind == "cascade":
        key = KeyFacts(None, "no provider.key_file: each cascade stage uses its own key or none")
    else:
        key = KeyFacts(None, "no --key-file, credential or provider.key_file", simulator=True)

    def read() -> str | None:
        return None if source is None else read_api_key(source.path, key=source.key)

    factory, description = choose_pin_factory(
        config.hardware, env=environ, config_file=str(config.path)
    )
    mock = is_mock(factory)
    return Facts(
        key=key,
        reader=Reader.for_service(config.daemon.service_user),
        read_key=read,
        simulator=key.simulator,
        pin_factory=description,
        pins_mock=mock,
        pin_probe=None if mock else pin_probe(factory),
    )


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def provider_target(config: Config, facts: Facts) -> tuple[ModelEndpoint | None, str]:
    """The authenticated request for the provider check, or why there is none."""
    provider = config.provider
    if provider.kind == "sim" or facts.simulator:
        return None, "the daemon talks to the built-in simulator, not a provider"
    if facts.key.refused is not None:  # its own request would only say less
        return (
            None,
            "the provider refused the daemon's key at the handshake (see the key file line)",
        )
    try:
        key = facts.read_key()
    except ConfigError:
        return None, "the key file is not usable (see the key file line)"
    except (OSError, HuxleydError) as exc:
        hint = "" if os.geteuid() == 0 else "; run doctor as root"
        return None, f"cannot read the key as uid {os.geteuid()} ({_one_line(exc)}){hint}"
    if provider.kind == "cascade":
        cascade = provider.cascade
        if key is None:
            return None, "the cascade's chat model has no key (a local server?)"
        return model_endpoint("cascade", cascade.llm_url, cascade.llm_model, key), ""
    if key is None:
        return None, "no API key"
    return model_endpoint(provider.kind, provider.url, provider.model, key), ""


# longer than 50 lines: one list, the checks in the order they print, each with its facts
def doctor_checks(
    config_path: Path,
    config: Config,
    facts: Facts,
    *,
    key_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    amixer: str = "amixer",
    run: Runner = run_command,
    today: date | None = None,
    reboot_flag: Path = REBOOT_REQUIRED,
) -> list[Check]:
    """The checks, in the order they print; each looks at one real thing."""
    environ = dict(os.environ if env is None else env)
    audio = config.audio
    endpoint, why = provider_target(config, facts)
    models = configured_models(config)
    return [
        partial(check_config, partial(_summary, config_path, key_file, environ), config_path),
        partial(check_service_user, config.daemon.service_user),
        partial(check_key_file, facts.key, reader=facts.reader),
        partial(
            check_audio_device,
            "audio",
            facts.audio_state,
            facts.audio_description,
            widened=facts.audio_widened,
            card_xruns=facts.audio_card_xruns,
            uptime_s=facts.uptime_s,
            failing=facts.audio_failing,
        ),
        partial(
            check_mixer,
            card=audio.mixer_card,
            control=audio.mixer_control,
            backend=audio.backend,
            daemon_volume=facts.volume,
            amixer=amixer,
            run=run,
        ),
        partial(
            check_gpio,
            factory=facts.pin_factory,
            is_mock=facts.pins_mock,
            board=config.board.name,
            pins=config.board.gpio_pins,
            in_use=facts.pins_in_use,
            probe=facts.pin_probe,
        ),
        # The devices under the pins, opened as the service user.
        *device_checks(config.board.name, real_pins=not facts.pins_mock),
        partial(check_provider, endpoint, skipped_because=why),
        partial(
            check_models,
            models,
            today=today or datetime.now(UTC).date(),
            simulator=facts.simulator or config.provider.kind == "sim",
        ),
        partial(check_disk_space, config.storage.state_dir),
        partial(check_reboot, config.persona.updates.reboot, flag=reboot_flag),
    ]


def configured_models(config: Config) -> list[str]:
    """Every model name the configuration sends to a provider."""
    provider = config.provider
    if provider.kind == "cascade":
        cascade = provider.cascade
        return [cascade.llm_model] + ([cascade.asr_model] if cascade.asr == "openai" else [])
    if provider.kind == "sim":
        return []
    return [provider.model, provider.transcription_model or ""]
