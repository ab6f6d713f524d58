"""A key file holds one token: the start, --check-config and doctor read it with one function."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from huxleyd.config.files import Reader
from huxleyd.config.preflight import check_key_file as preflight_key_file
from huxleyd.control.doctor import KeyFacts, check_key_file
from huxleyd.errors import ConfigError
from huxleyd.providers.apikey import read_api_key
from huxleyd.providers.keyfile import BOM, parse_key

TOKEN = "sk-proj-AbCdEf0123456789_xyz"

tokens = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=60)
padding = st.text(" \t\r\n", max_size=4)


@settings(max_examples=200, deadline=None)
@given(tokens, padding, padding, st.booleans())
def test_one_token_with_any_padding_and_an_optional_bom_is_the_token(
    token: str, before: str, after: str, bom: bool
) -> None:
    data = (BOM if bom else b"") + (before + token + after).encode()
    parsed = parse_key(data, file="k", key="provider.key_file")
    assert parsed.token == token
    assert parsed.had_bom is bom


REFUSED = {
    "empty": (b"", "empty or only whitespace"),
    "whitespace only": (b"  \n\t\r\n", "empty or only whitespace"),
    "a BOM only": (BOM + b"\n", "empty or only whitespace"),
    "two lines": (TOKEN.encode() + b"\nsk-other-key\n", "more than one line"),
    "a header injection": (TOKEN.encode() + b"\r\nX-Injected: yes", "more than one line"),
    "a non-UTF-8 byte": (TOKEN.encode() + b"\xff", "non-ASCII byte"),
    "non-ASCII text": ("sk-\u00e9t\u00e9".encode(), "non-ASCII byte"),
    "a NUL": (TOKEN.encode() + b"\x00", "control character"),
    "an escape": (b"sk-\x1b[31m", "control character"),
    "a space inside": (b"Bearer " + TOKEN.encode(), "space inside the token"),
    "a BOM in the middle": (TOKEN.encode() + BOM, "non-ASCII byte"),
    "the first non-ASCII byte": (TOKEN.encode() + b"\x80", "non-ASCII byte"),
    "a form feed after it": (TOKEN.encode() + b"\x0c", "control character"),
    "a vertical tab before it": (b"\x0b" + TOKEN.encode(), "control character"),
    "a DEL": (TOKEN.encode() + b"\x7f", "control character"),
}


@pytest.mark.parametrize(("data", "problem"), REFUSED.values(), ids=REFUSED.keys())
def test_what_is_not_one_token_is_refused_without_quoting_it(data: bytes, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_key(data, file="/etc/huxleyd/openai.key", key="provider.key_file")
    message = str(caught.value)
    assert problem in message
    assert message.startswith("/etc/huxleyd/openai.key: provider.key_file: expected")
    assert "\n" not in message
    for piece in (TOKEN[3:9], "sk-other", "Injected", "t\u00e9", "[31m", "Bearer"):
        assert piece not in message


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80))
def test_the_start_and_the_check_agree_on_any_bytes(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    # One path: --check-config (preflight) and the start (read_api_key) give the same verdict.
    path = tmp_path_factory.mktemp("key") / "openai.key"
    path.write_bytes(data)
    path.chmod(0o600)
    start: str | None = None
    check: str | None = None
    try:
        start = read_api_key(path, key="provider.key_file")
    except ConfigError as exc:
        start = f"refused: {exc.problem}"
    try:
        check = preflight_key_file(
            path, file="huxleyd.toml", key="provider.key_file", reader=Reader.this_process()
        ).token
    except ConfigError as exc:
        check = f"refused: {exc.problem}"
    if start.startswith("refused") or check.startswith("refused"):
        assert start.startswith("refused") and check.startswith("refused"), (start, check)
    else:
        assert start == check


def test_the_start_warns_about_a_bom_and_sends_only_the_token(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "openai.key"
    path.write_bytes(BOM + TOKEN.encode() + b"\r\n")
    path.chmod(0o600)
    with caplog.at_level(logging.WARNING):
        assert read_api_key(path) == TOKEN
    assert "api_key_file_bom_stripped" in caplog.text
    assert TOKEN not in caplog.text


# -- doctor: the same function, its words


def doctor_line(tmp_path: Path, data: bytes) -> tuple[str, str]:
    path = tmp_path / "openai.key"
    path.write_bytes(data)
    path.chmod(0o600)
    check = check_key_file(KeyFacts(path, "provider.key_file"))
    return str(check.status), check.detail


def test_doctor_fails_a_whitespace_only_key(tmp_path: Path) -> None:
    status, detail = doctor_line(tmp_path, b"   \n")
    assert status == "fail" and "empty or only whitespace" in detail


def test_doctor_warns_about_a_bom_and_calls_it_no_bug(tmp_path: Path) -> None:
    status, detail = doctor_line(tmp_path, BOM + TOKEN.encode() + b"\n")
    assert status == "warn" and "byte order mark" in detail and TOKEN not in detail


@pytest.mark.parametrize(("data", "problem"), REFUSED.values(), ids=REFUSED.keys())
def test_doctor_fails_every_refused_key_file_in_the_starts_words(
    tmp_path: Path, data: bytes, problem: str
) -> None:
    status, detail = doctor_line(tmp_path, data)
    assert status == "fail" and problem in detail


def test_doctor_passes_one_token(tmp_path: Path) -> None:
    status, detail = doctor_line(tmp_path, TOKEN.encode() + b"\n")
    assert status == "ok" and "one token" in detail and TOKEN not in detail
