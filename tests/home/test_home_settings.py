"""``[[mcp]]`` and ``[mqtt]`` in huxleyd.toml: parsed by the real ``load_config``,
and every mistake named by file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from huxleyd.config.load import load_config
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
