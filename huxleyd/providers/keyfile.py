"""What an API key file may hold: one token on one line.

Layer: a leaf (the standard library and :mod:`huxleyd.errors`). The start
(:func:`huxleyd.providers.apikey.read_api_key`), ``--check-config``
(:func:`huxleyd.config.preflight.preflight`) and ``huxleyctl doctor`` all call
:func:`parse_key`, so they cannot disagree on what a key is.

Surrounding whitespace (a trailing newline from ``echo``) and a UTF-8 byte
order mark (Windows editors) are stripped; the BOM is reported so the admin
can fix the file. A second line, a control character, a space inside the
token or a non-ASCII byte is refused: each would reach an HTTP header
(``Authorization: Bearer …``), where a line break injects a header and a
stray byte gets a 401 that names nothing. No message ever quotes the key.
"""

from __future__ import annotations

from dataclasses import dataclass

from huxleyd.errors import ConfigError

BOM = b"\xef\xbb\xbf"
_PRINTABLE = range(0x21, 0x7F)
"""Header-safe token bytes: printable ASCII without the space."""


@dataclass(frozen=True, slots=True)
class ParsedKey:
    """The token, and what was stripped on the way (for a warning)."""

    token: str
    had_bom: bool


def is_blank(data: bytes) -> bool:
    """True when ``data`` holds no token at all (what an installer's empty
    placeholder holds): :func:`parse_key` would call it empty."""
    return not data.removeprefix(BOM).strip(b" \t\r\n")


def parse_key(data: bytes, *, file: str, key: str) -> ParsedKey:
    """The one token in ``data`` (a key file's bytes), or a :class:`ConfigError`.

    ``file`` is the key file's path and ``key`` the setting that named it
    (``provider.key_file``); the error names both and what kind of byte is
    wrong, never the byte or the key.
    """
    had_bom = data.startswith(BOM)
    token = data.removeprefix(BOM).strip(b" \t\r\n")
    if is_blank(data):
        raise ConfigError(file, key, "expected an API key: the file is empty or only whitespace")
    for byte in token:
        if byte in _PRINTABLE:
            continue
        # The token is stripped, so the first bad byte is on its first line:
        # a line break inside it is the second line beginning.
        if byte in b"\r\n":
            problem = "more than one line (a key file holds one token on one line)"
        elif byte >= 0x80:
            problem = "a non-ASCII byte (an API key is plain ASCII)"
        elif byte in b" \t":
            problem = "a space inside the token (one token, no spaces)"
        else:
            problem = "a control character (an API key is printable ASCII)"
        raise ConfigError(file, key, f"expected one API key token: the file has {problem}")
    return ParsedKey(token.decode("ascii"), had_bom)
