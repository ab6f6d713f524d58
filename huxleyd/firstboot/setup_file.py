"""Parse and check ``huxleyd-setup.toml``; nothing is applied here.

::

    [device]
    hostname = "kitchen"            # optional, default "huxley"
    board = "respeaker-2mic"        # a profile from hw/
    timezone = "Europe/Madrid"      # a name under /usr/share/zoneinfo

    [provider]
    kind = "openai"                 # openai, xai, gemini or sim
    api_key = "sk-..."              # moved to /etc/huxleyd/<kind>.key (0600)

    [wifi]
    ssid = "home"
    password = "correct horse"      # WPA2 passphrase; leave out for an open network
    country = "ES"                  # regulatory domain, two letters

    [ssh]
    enable = true                   # off unless set
    authorized_keys = ["ssh-ed25519 AAAA... me@laptop"]

Every section and key is optional; an unknown one is an error (a typo must
not be silently ignored on a device nobody can see).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["PROVIDER_KINDS", "SetupError", "SetupFile", "WifiSetup", "decode_setup", "parse_setup"]

PROVIDER_KINDS = ("openai", "xai", "gemini", "sim")

_KEYS: dict[str, tuple[str, ...]] = {
    "device": ("hostname", "board", "timezone"),
    "provider": ("kind", "api_key"),
    "wifi": ("ssid", "password", "country"),
    "ssh": ("enable", "authorized_keys"),
}
# Matched with fullmatch (never match + "$", which also accepts a trailing
# newline: "kitchen\n" must not become a host name).
_HOSTNAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_COUNTRY = re.compile(r"[A-Z]{2}")
_ZONE = re.compile(r"[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*")
_SSH_KEY = re.compile(r"(ssh-|ecdsa-sha2-|sk-ssh-|sk-ecdsa-)[a-z0-9@.-]+ [A-Za-z0-9+/=]+( [^\n]*)?")
_TZIF_MAGIC = b"TZif"
"""RFC 8536: every compiled zone file starts so (zoneinfo also holds tables
such as ``leapseconds`` or ``zone.tab``, which must not become /etc/localtime)."""
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
ENCODING_FIX = "save it as UTF-8 (in Notepad: File, Save as, Encoding: UTF-8) and try again"


class SetupError(ValueError):
    """The setup file is wrong: ``file``, ``key`` (dotted) and what was expected."""

    def __init__(self, file: str, key: str, problem: str) -> None:
        self.file = file
        self.key = key
        self.problem = problem
        where = f"{file}: {key}: " if key else f"{file}: "
        super().__init__(where + problem)


@dataclass(frozen=True, slots=True)
class WifiSetup:
    ssid: str
    password: str | None
    """None: an open network."""
    country: str


@dataclass(frozen=True, slots=True)
class SetupFile:
    """What the user asked for; None means "leave as the image has it"."""

    hostname: str | None = None
    board: str | None = None
    timezone: str | None = None
    provider: str | None = None
    api_key: str | None = None
    wifi: WifiSetup | None = None
    ssh: bool = False
    ssh_keys: tuple[str, ...] = ()

    def summary(self) -> dict[str, str]:
        """What was set, for the journal and the report: never the key or password."""
        out: dict[str, str] = {}
        for name in ("hostname", "board", "timezone", "provider"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.api_key is not None:
            out["api_key"] = "set"
        if self.wifi is not None:
            out["wifi"] = f"{self.wifi.ssid} ({self.wifi.country})"
        if self.ssh:
            out["ssh"] = f"on, {len(self.ssh_keys)} key(s)"
        return out


def _string(table: Mapping[str, Any], section: str, key: str, file: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise SetupError(file, f"{section}.{key}", f"expected a string, got {type(value).__name__}")
    return value


def decode_setup(data: bytes, *, file: str) -> str:
    """The file's text: UTF-8 with or without a BOM, or UTF-16 with its BOM
    (Notepad's "Unicode"). Anything else is a :class:`SetupError` naming the
    file and how to save it right."""
    try:
        if data.startswith(_UTF16_BOMS):
            return data.decode("utf-16")
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SetupError(
            file, "", f"not UTF-8 text (byte {exc.start} cannot be read): {ENCODING_FIX}"
        ) from None


def _is_tzif(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(_TZIF_MAGIC)) == _TZIF_MAGIC
    except OSError:  # missing, a directory, unreadable
        return False


def _load_toml(text: str, file: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SetupError(file, "", f"not valid TOML: {exc}") from None
    except RecursionError:  # [[[[... thousands deep: tomllib recurses per level
        raise SetupError(file, "", "not valid TOML: nested too deeply") from None


def parse_setup(
    text: str,
    *,
    file: str,
    boards: Collection[str],
    zoneinfo: Path = Path("/usr/share/zoneinfo"),
) -> SetupFile:
    """Check ``text`` (the file's contents) and return what it asks for.

    ``boards`` are the profile names that exist; ``zoneinfo`` is where time
    zone names are looked up. Raises :class:`SetupError` on the first problem,
    section by section in the order ``[device]``, ``[provider]``, ``[wifi]``,
    ``[ssh]``. No message repeats a value from the file: a key pasted into the
    wrong field must not reach the error file or the journal.
    """
    doc = _load_toml(text, file)
    _check_shape(doc, file)
    hostname, board, timezone = _device(doc.get("device", {}), file, boards, zoneinfo)
    kind, api_key = _provider(doc.get("provider", {}), file)
    wifi = doc.get("wifi", {})
    wifi_setup = _wifi(wifi, file) if wifi else None  # an empty [wifi] is no Wi-Fi
    enable, keys = _ssh(doc.get("ssh", {}), file)
    return SetupFile(
        hostname=hostname,
        board=board,
        timezone=timezone,
        provider=kind,
        api_key=api_key,
        wifi=wifi_setup,
        ssh=enable,
        ssh_keys=keys,
    )


def _check_shape(doc: Mapping[str, Any], file: str) -> None:
    """Only the known sections, each a table, holding only its known keys."""
    for section, value in doc.items():
        if section not in _KEYS:
            raise SetupError(file, section, f"unknown section (expected: {', '.join(_KEYS)})")
        if not isinstance(value, dict):
            raise SetupError(file, section, f"expected a [{section}] table")
        for key in value:
            if key not in _KEYS[section]:
                allowed = ", ".join(_KEYS[section])
                raise SetupError(file, f"{section}.{key}", f"unknown key (expected: {allowed})")


def _device(
    device: Mapping[str, Any], file: str, boards: Collection[str], zoneinfo: Path
) -> tuple[str | None, str | None, str | None]:
    """``[device]``: the host name, the board profile and the time zone, each optional."""
    hostname = _string(device, "device", "hostname", file)
    if hostname is not None and not _HOSTNAME.fullmatch(hostname):
        raise SetupError(
            file,
            "device.hostname",
            "not a host name: 1-63 of a-z, 0-9 and '-', not starting or ending with '-'",
        )
    board = _string(device, "device", "board", file)
    if board is not None and board not in boards:
        known = ", ".join(sorted(boards)) or "none installed"
        raise SetupError(file, "device.board", f"unknown board (available: {known})")
    timezone = _string(device, "device", "timezone", file)
    if timezone is not None and (
        not _ZONE.fullmatch(timezone) or not _is_tzif(zoneinfo / timezone)
    ):
        raise SetupError(file, "device.timezone", 'unknown time zone (e.g. "Europe/Madrid", "UTC")')
    return hostname, board, timezone


def _provider(provider: Mapping[str, Any], file: str) -> tuple[str | None, str | None]:
    """``[provider]``: the kind and the API key (one token; none for the simulator)."""
    kind = _string(provider, "provider", "kind", file)
    if kind is not None and kind not in PROVIDER_KINDS:
        raise SetupError(
            file,
            "provider.kind",
            f"unknown provider (expected: {', '.join(PROVIDER_KINDS)})",
        )
    api_key = _string(provider, "provider", "api_key", file)
    if api_key is None:
        return kind, None
    api_key = api_key.strip()
    if not api_key or any(c.isspace() for c in api_key) or not api_key.isprintable():
        raise SetupError(
            file, "provider.api_key", "expected the key on its own: no spaces or line breaks"
        )
    if kind == "sim":
        raise SetupError(file, "provider.api_key", 'the simulator (kind = "sim") takes no key')
    return kind, api_key


def _wifi(wifi: Mapping[str, Any], file: str) -> WifiSetup:
    """A non-empty ``[wifi]``: the network's name, its WPA2 passphrase (or none), the country."""
    ssid = _string(wifi, "wifi", "ssid", file)
    if not ssid or len(ssid.encode()) > 32:
        raise SetupError(file, "wifi.ssid", "expected the network's name (1-32 bytes)")
    password = _string(wifi, "wifi", "password", file)
    if password is not None and not (
        8 <= len(password) <= 63 and password.isascii() and password.isprintable()
    ):
        raise SetupError(
            file,
            "wifi.password",
            "a WPA2 passphrase is 8-63 printable ASCII characters (leave it out for an open network)",
        )
    country = _string(wifi, "wifi", "country", file)
    if country is None or not _COUNTRY.fullmatch(country):
        raise SetupError(
            file,
            "wifi.country",
            'expected the two-letter country code (e.g. "GB"): Wi-Fi channels are set by it',
        )
    return WifiSetup(ssid=ssid, password=password, country=country)


def _ssh(ssh: Mapping[str, Any], file: str) -> tuple[bool, tuple[str, ...]]:
    """``[ssh]``: on or off, and the public keys (at least one when on: root has no password)."""
    enable = ssh.get("enable", False)
    if not isinstance(enable, bool):
        raise SetupError(file, "ssh.enable", "expected true or false")
    keys = ssh.get("authorized_keys", [])
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise SetupError(file, "ssh.authorized_keys", "expected a list of public keys (strings)")
    for index, key in enumerate(keys):
        if not _SSH_KEY.fullmatch(key.strip()):
            raise SetupError(
                file,
                f"ssh.authorized_keys[{index}]",
                'not an OpenSSH public key ("ssh-ed25519 AAAA... comment")',
            )
    if enable and not keys:
        raise SetupError(
            file,
            "ssh.authorized_keys",
            "SSH on needs at least one public key: root has no password on the image",
        )
    return enable, tuple(k.strip() for k in keys)
