"""Doctor without the daemon resolves the configuration as the daemon's start
does (the same key-file order, the same pin factory), asks the provider only
with a key it can read, and names every model the configuration sends."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from huxleyd.config.load import Config, load_config
from huxleyd.control.diagnose import (
    Facts,
    configured_models,
    doctor_checks,
    offline_facts,
    provider_target,
)
from huxleyd.control.doctor import KeyFacts, run_checks
from huxleyd.errors import ConfigError
from tests.config.test_check_config import write

MOCK_PINS = 'pin_factory = "mock"'


def config(tmp_path: Path, provider: str = "", **sections: str) -> Config:
    return load_config(write(tmp_path, provider=provider, hardware=MOCK_PINS, **sections))


def key(tmp_path: Path, name: str, text: str = "sk-test") -> Path:
    path = tmp_path / name
    path.write_text(text + "\n")
    path.chmod(0o600)
    return path


def facts(read: str | Exception | None, *, refused: str | None = None) -> Facts:
    def read_key() -> str | None:
        if isinstance(read, Exception):
            raise read
        return read

    return Facts(key=KeyFacts(None, "test", refused=refused), read_key=read_key, simulator=False)


def test_the_key_file_is_found_in_the_daemons_order(tmp_path: Path) -> None:
    in_config = key(tmp_path, "config.key", "sk-config")
    cfg = config(tmp_path, provider=f'key_file = "{in_config}"')
    assert offline_facts(cfg, key_file=None, env={}).key == KeyFacts(in_config, "provider.key_file")
    creds = tmp_path / "creds"
    creds.mkdir()
    key(creds, "openai-key", "sk-credential")
    from_systemd = offline_facts(cfg, key_file=None, env={"CREDENTIALS_DIRECTORY": str(creds)})
    assert from_systemd.key.origin == "credential openai-key"
    assert from_systemd.read_key() == "sk-credential"
    given = key(tmp_path, "given.key", "sk-given")
    chosen = offline_facts(cfg, key_file=given, env={"CREDENTIALS_DIRECTORY": str(creds)})
    assert (chosen.key.path, chosen.read_key()) == (given, "sk-given")


def test_without_a_key_the_simulator_answers(tmp_path: Path) -> None:
    found = offline_facts(config(tmp_path), key_file=None, env={})
    assert found.key.path is None and found.simulator and found.read_key() is None
    sim = offline_facts(config(tmp_path, provider='kind = "sim"'), key_file=None, env={})
    assert sim.key.origin == "provider.kind is sim: no key needed"


def test_the_pin_factory_is_the_configured_one(tmp_path: Path) -> None:
    found = offline_facts(config(tmp_path), key_file=None, env={})
    assert found.pins_mock and found.pin_probe is None and "mock" in found.pin_factory


def test_the_provider_is_asked_only_with_a_readable_key(tmp_path: Path) -> None:
    openai = config(tmp_path)
    endpoint, why = provider_target(openai, facts("sk-1"))
    assert endpoint is not None and why == ""
    assert endpoint.url == "https://api.openai.com/v1/models/" + openai.provider.model
    assert endpoint.headers == {"Authorization": "Bearer sk-1"}
    assert provider_target(openai, facts(None)) == (None, "no API key")
    refused = facts("sk-1", refused="invalid_api_key")
    assert "refused the daemon's key at the handshake" in provider_target(openai, refused)[1]
    unusable = facts(ConfigError(str(tmp_path / "k"), "provider.key_file", "is empty"))
    assert provider_target(openai, unusable) == (
        None,
        "the key file is not usable (see the key file line)",
    )
    _, why = provider_target(openai, facts(PermissionError("Permission  denied")))
    assert why.startswith(f"cannot read the key as uid {os.geteuid()} (Permission denied)")
    assert why.endswith("; run doctor as root") == (os.geteuid() != 0)


def test_the_simulator_and_a_keyless_cascade_skip_the_provider(tmp_path: Path) -> None:
    sim = config(tmp_path, provider='kind = "sim"')
    assert provider_target(sim, facts("sk")) == (
        None,
        "the daemon talks to the built-in simulator, not a provider",
    )
    cascade = config(tmp_path, provider='kind = "cascade"')
    assert provider_target(cascade, facts(None))[1] == (
        "the cascade's chat model has no key (a local server?)"
    )
    endpoint, _ = provider_target(cascade, facts("sk-2"))
    assert endpoint is not None and endpoint.model == cascade.provider.cascade.llm_model


def test_every_model_the_configuration_sends_is_named(tmp_path: Path) -> None:
    openai = config(tmp_path, provider='transcription_model = "gpt-4o-transcribe"')
    assert configured_models(openai) == [openai.provider.model, "gpt-4o-transcribe"]
    assert configured_models(config(tmp_path, provider='kind = "sim"')) == []
    cascade = config(tmp_path, provider='kind = "cascade"\n[provider.cascade]\nllm_model = "m"')
    assert configured_models(cascade) == ["m", cascade.provider.cascade.asr_model]
    local = config(
        tmp_path,
        provider='kind = "cascade"\n[provider.cascade]\nasr = "command"\nasr_command = ["asr"]',
    )
    assert configured_models(local) == [local.provider.cascade.llm_model]


async def test_the_checks_run_in_their_printed_order(tmp_path: Path) -> None:
    cfg = config(tmp_path, provider='kind = "sim"')
    found = offline_facts(cfg, key_file=None, env={})
    checks = await run_checks(
        doctor_checks(cfg.path, cfg, found, env={}, reboot_flag=tmp_path / "no-flag")
    )
    names = [c.name for c in checks]
    assert names[:6] == ["config", "service user", "key file", "audio", "mixer", "gpio"]
    assert names[-4:] == ["provider", "model", "disk", "security updates"], names
    by_name = {c.name: c for c in checks}
    assert by_name["config"].ok and by_name["provider"].status == "skipped"
    assert "built-in simulator" in by_name["provider"].detail
    assert by_name["audio"].status == "skipped"  # no daemon: doctor opens no card


@pytest.mark.parametrize("kind", ["openai", "sim"])
def test_facts_say_whether_the_simulator_answers(tmp_path: Path, kind: str) -> None:
    found = offline_facts(config(tmp_path, provider=f'kind = "{kind}"'), key_file=None, env={})
    assert found.simulator is (kind == "openai")  # sim says so by its kind, not by a missing key
