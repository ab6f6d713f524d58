"""huxleyd-setup.toml: what a user writes on the FAT partition is checked
before anything is applied, and every mistake names the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from huxleyd.firstboot.setup_file import (
    SetupError,
    SetupFile,
    WifiSetup,
    decode_setup,
    parse_setup,
)

BOARDS = ("gpio-basic", "respeaker-2mic", "voice-bonnet")


@pytest.fixture
def zoneinfo(tmp_path: Path) -> Path:
    zones = tmp_path / "zoneinfo"
    (zones / "Europe").mkdir(parents=True)
    (zones / "Europe/Madrid").write_bytes(b"TZif")
    (zones / "UTC").write_bytes(b"TZif")
    # zoneinfo also holds tables that are not zones: never /etc/localtime.
    (zones / "leapseconds").write_text("# Leap\tYEAR\tMONTH\n")
    (zones / "zone.tab").write_text("# tzdb timezone descriptions\n")
    return zones


def parse(text: str, zoneinfo: Path) -> SetupFile:
    return parse_setup(text, file="huxleyd-setup.toml", boards=BOARDS, zoneinfo=zoneinfo)


FULL = """
[device]
hostname = "kitchen"
board = "respeaker-2mic"
timezone = "Europe/Madrid"

[provider]
kind = "openai"
api_key = "  sk-test-123  "

[wifi]
ssid = "home"
password = "correct horse"
country = "ES"

[ssh]
enable = true
authorized_keys = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBm me@laptop"]
"""


def test_a_full_file(zoneinfo: Path) -> None:
    setup = parse(FULL, zoneinfo)
    assert setup == SetupFile(
        hostname="kitchen",
        board="respeaker-2mic",
        timezone="Europe/Madrid",
        provider="openai",
        api_key="sk-test-123",
        wifi=WifiSetup(ssid="home", password="correct horse", country="ES"),
        ssh=True,
        ssh_keys=("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBm me@laptop",),
    )
    summary = setup.summary()
    assert summary["api_key"] == "set"
    assert "sk-test" not in repr(summary) and "correct horse" not in repr(summary)


def test_an_empty_file_asks_for_nothing(zoneinfo: Path) -> None:
    assert parse("", zoneinfo) == SetupFile()


def test_an_open_network(zoneinfo: Path) -> None:
    setup = parse('[wifi]\nssid = "cafe"\ncountry = "GB"\n', zoneinfo)
    assert setup.wifi == WifiSetup(ssid="cafe", password=None, country="GB")


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        ("[device\n", "", "not valid TOML"),
        ("[wlan]\nssid = 'x'\n", "wlan", "unknown section"),
        ("[device]\nboard_name = 'x'\n", "device.board_name", "unknown key"),
        ("[device]\nhostname = 'Kitchen Pi'\n", "device.hostname", "not a host name"),
        ("[device]\nhostname = 7\n", "device.hostname", "expected a string"),
        ("[device]\nboard = 'respeaker'\n", "device.board", "available: gpio-basic"),
        ("[device]\ntimezone = 'Mars/Olympus'\n", "device.timezone", "unknown time zone"),
        ("[device]\ntimezone = '../../etc/passwd'\n", "device.timezone", "unknown time zone"),
        ("[device]\ntimezone = 'leapseconds'\n", "device.timezone", "unknown time zone"),
        ("[device]\ntimezone = 'Europe'\n", "device.timezone", "unknown time zone"),
        ('[device]\ntimezone = "UTC\\n"\n', "device.timezone", "unknown time zone"),
        ('[device]\nhostname = "kitchen\\n"\n', "device.hostname", "not a host name"),
        ("[wifi]\nssid = 'home'\ncountry = \"ES\\n\"\n", "wifi.country", "two-letter"),
        (
            '[ssh]\nauthorized_keys = ["ssh-ed25519 AAAA me\\nssh-rsa BBBB evil"]\n',
            "ssh.authorized_keys[0]",
            "OpenSSH public key",
        ),
        ("a = " + "[" * 5000 + "]" * 5000 + "\n", "", "nested too deeply"),
        ("[provider]\nkind = 'chatgpt'\n", "provider.kind", "openai, xai, gemini, sim"),
        ("[provider]\napi_key = 'sk one'\n", "provider.api_key", "no spaces"),
        ("[provider]\nkind = 'sim'\napi_key = 'sk'\n", "provider.api_key", "takes no key"),
        ("[wifi]\nssid = 'home'\npassword = 'short'\ncountry = 'ES'\n", "wifi.password", "8-63"),
        ("[wifi]\nssid = 'home'\npassword = 'long enough'\n", "wifi.country", "two-letter"),
        ("[wifi]\nssid = ''\ncountry = 'ES'\n", "wifi.ssid", "1-32 bytes"),
        ("[ssh]\nenable = 'yes'\n", "ssh.enable", "true or false"),
        ("[ssh]\nenable = true\n", "ssh.authorized_keys", "at least one public key"),
        ("[ssh]\nauthorized_keys = ['hunter2']\n", "ssh.authorized_keys[0]", "OpenSSH public key"),
    ],
)
def test_mistakes_name_the_key(zoneinfo: Path, text: str, key: str, words: str) -> None:
    with pytest.raises(SetupError) as caught:
        parse(text, zoneinfo)
    assert caught.value.key == key
    assert words in str(caught.value)
    assert str(caught.value).startswith("huxleyd-setup.toml: ")


def test_a_wpa2_passphrase_of_exactly_8_and_63_characters(zoneinfo: Path) -> None:
    for password in ("12345678", "x" * 63):
        text = f'[wifi]\nssid = "home"\npassword = "{password}"\ncountry = "ES"\n'
        setup = parse(text, zoneinfo)
        assert setup.wifi is not None and setup.wifi.password == password
    with pytest.raises(SetupError):
        parse('[wifi]\nssid = "home"\npassword = "1234567"\ncountry = "ES"\n', zoneinfo)
    with pytest.raises(SetupError):
        parse(f'[wifi]\nssid = "home"\npassword = "{"x" * 64}"\ncountry = "ES"\n', zoneinfo)


@pytest.mark.parametrize(
    "encoded",
    [
        FULL.encode("utf-8"),
        b"\xef\xbb\xbf" + FULL.encode("utf-8"),  # Notepad's "UTF-8 with BOM"
        FULL.encode("utf-16"),  # Notepad's "Unicode": a BOM, then UTF-16-LE
        b"\xfe\xff" + FULL.encode("utf-16-be"),
    ],
)
def test_the_encodings_a_windows_editor_writes(zoneinfo: Path, encoded: bytes) -> None:
    text = decode_setup(encoded, file="huxleyd-setup.toml")
    assert parse(text, zoneinfo).hostname == "kitchen"


def test_other_bytes_name_the_file_and_the_fix() -> None:
    with pytest.raises(SetupError) as caught:
        decode_setup(b'[device]\nhostname = "k\xe9"\n', file="huxleyd-setup.toml")
    message = str(caught.value)
    assert message.startswith("huxleyd-setup.toml: not UTF-8 text")
    assert "Encoding: UTF-8" in message and "codec" not in message
