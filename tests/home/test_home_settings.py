"""``[[mcp]]`` and ``[mqtt]`` in huxleyd.toml: parsed by the real ``load_config``,
and every mistake named by file and key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from huxleyd.config.load import load_config
from huxleyd.control.handler import StatusReport
from huxleyd.control.render import status_table
from huxleyd.errors import ConfigError
from tests.e2e.process import write_daemon_config


def config_with(tmp_path: Path, extra: str) -> Path:
    path = write_daemon_config(tmp_path, scenario="")
    path.write_text(path.read_text() + extra)
    return path


def test_both_sections_are_parsed(tmp_path: Path) -> None:
    path = config_with(
        tmp_path,
        """
[[mcp]]
name = "home"
url = "http://ha.local:8123/api/mcp"
token_file = "home.token"

[[mcp]]
name = "old_ha"
url = "http://ha.local:8123/mcp_server/sse"

[mqtt]
url = "mqtts://broker.local"
username = "huxley"
password_file = "mqtt.password"
room = "living_room"
""",
    )
    config = load_config(path)
    home, old = config.mcp
    assert home.token_file == (tmp_path / "home.token").resolve()
    assert (home.resolved_transport, old.resolved_transport) == ("streamable-http", "sse")
    mqtt = config.mqtt
    assert (mqtt.host, mqtt.port, mqtt.tls) == ("broker.local", 8883, True)
    assert mqtt.password_file == (tmp_path / "mqtt.password").resolve()
    assert mqtt.discovery_prefix == "homeassistant" and not mqtt.publish_heard
    assert mqtt.display_name == "Huxley living room"


def test_none_of_either_by_default(tmp_path: Path) -> None:
    config = load_config(config_with(tmp_path, ""))
    assert config.mcp == () and not config.mqtt.enabled


@pytest.mark.parametrize(
    ("extra", "key", "words"),
    [
        ('[mqtt]\nurl = "http://b"\nroom = "hall"\n', "mqtt.url", "mqtt://host"),
        ('[mqtt]\nurl = "mqtt://b"\n', "mqtt.room", "this speaker's room"),
        ('[mqtt]\nurl = "mqtt://b"\nroom = "Big Hall"\n', "mqtt.room", "'Big Hall'"),
        ('[mqtt]\nurl = "mqtt://u:pw@b"\nroom = "hall"\n', "mqtt.url", "password_file"),
        ('[mqtt]\nurl = "mqtt://b"\nroom = "hall"\ncolour = 1\n', "mqtt.colour", "unknown key"),
        ('[mqtt]\nurl = "mqtt://b"\nroom = "h"\nannounce_ttl_s = 0\n', "mqtt.announce_ttl_s", ""),
        ('[mcp]\nname = "home"\n', "mcp", "[[mcp]]"),
        ('[[mcp]]\nname = "home"\nurl = "ftp://x"\n', "mcp[0].url", "http://host"),
        ('[[mcp]]\nname = "Home Assistant"\nurl = "http://x"\n', "mcp[0].name", "a-z"),
        (
            '[[mcp]]\nname = "a"\nurl = "http://x"\n[[mcp]]\nname = "a"\nurl = "http://y"\n',
            "mcp[1].name",
            "two [[mcp]]",
        ),
        ('[[mcp]]\nname = "a"\nurl = "http://x"\ntransport = "ws"\n', "mcp[0].transport", "sse"),
    ],
)
def test_mistakes_name_the_file_and_the_key(
    tmp_path: Path, extra: str, key: str, words: str
) -> None:
    path = config_with(tmp_path, extra)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.file == str(path)
    assert caught.value.key == key, str(caught.value)
    assert words in caught.value.problem


def test_status_carries_and_shows_the_home_lines() -> None:
    report = StatusReport(
        state="idle",
        provider_state="connected",
        media=None,
        volume=40,
        uptime_s=3.0,
        persona="Test",
        provider_kind="sim",
        is_simulator=True,
        home=("mcp home: connected (sse), 16 tools", "mqtt: down: cannot reach the broker"),
    )
    back = StatusReport.from_dict(report.to_dict())
    assert back.home == report.home
    assert StatusReport.from_dict({**report.to_dict(), "home": []}).home == ()
    console = Console(width=120, record=True)
    console.print(status_table(back))
    text = console.export_text()
    assert "Home" in text and "mcp home: connected (sse), 16 tools" in text


def test_the_device_id_is_made_once_and_kept(tmp_path: Path) -> None:
    from huxleyd.home.discovery import Topics, discovery_messages
    from huxleyd.home.speaker import device_id

    first = device_id(tmp_path / "state")
    assert first == device_id(tmp_path / "state")  # the next start: the same id
    assert first != device_id(tmp_path / "other")  # another speaker: another id
    ids = {
        json.loads(p)["unique_id"]
        for room in ("kitchen", "hall")  # a renamed room keeps Home Assistant's entities
        for p in discovery_messages(
            Topics("huxley", first, room), discovery_prefix="homeassistant", name="x", version="1"
        ).values()
        if p
    }
    assert ids == {
        f"huxley_{first}_{o}" for o in ("state", "volume", "mute", "problem", "button", "announce")
    }


def test_the_shipped_config_documents_every_home_setting() -> None:
    import dataclasses

    from huxleyd.home.settings import McpServerSettings, MqttSettings
    from tests.config.test_documented_defaults import SHIPPED, documented_keys

    keys = documented_keys(SHIPPED.read_text().replace("[[mcp]]", "[mcp]"))
    for section, cls in (("mcp", McpServerSettings), ("mqtt", MqttSettings)):
        missing = {f.name for f in dataclasses.fields(cls)} - keys.get(section, set())
        assert not missing, f"config/huxleyd.toml [{section}] lacks {sorted(missing)}"


def test_only_the_brokers_answer_counts_as_refused_credentials() -> None:
    from aiomqtt import MqttCodeError
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.reasoncodes import ReasonCode

    from huxleyd.home.mqtt import describe_mqtt_failure

    refused = MqttCodeError(ReasonCode(PacketTypes.CONNACK, identifier=135), "Not authorized")
    assert "refused the credentials" in describe_mqtt_failure(refused)
    # paho's own code 4 is "not connected" (a publish while the broker is gone)
    gone = MqttCodeError(4, "Could not publish message")
    assert describe_mqtt_failure(gone).startswith("cannot reach the broker")
