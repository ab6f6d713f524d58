"""journald fields: every event reaches the journal sender with HUXLEY_* fields,
so ``journalctl -u huxleyd HUXLEY_TOOL=set_volume`` finds it; secrets never do."""

from __future__ import annotations

import importlib
import logging
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from huxleyd import logs
from huxleyd.logs import JournalFieldsHandler, get_logger, journal_field_name


class RecordingSender:
    """A fake ``systemd.journal.send``: records (MESSAGE, fields) per call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, message: str, **fields: Any) -> None:
        # The real send() formats CODE_LINE with "{:d}" and concatenates the
        # other fields as str (test_real_systemd_journal_send checks this
        # against the module itself).
        assert isinstance(fields.pop("CODE_LINE"), int), "CODE_LINE must be an int"
        assert all(isinstance(v, str) for v in fields.values()), fields
        self.calls.append((message, fields))

    @property
    def last(self) -> dict[str, Any]:
        return self.calls[-1][1]


@pytest.fixture
def journal() -> Iterator[RecordingSender]:
    sender = RecordingSender()
    handler = JournalFieldsHandler(sender)
    logger = logging.getLogger("huxleyd.test_journal")
    old_level, old_propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    yield sender
    logger.removeHandler(handler)
    logger.setLevel(old_level)
    logger.propagate = old_propagate


def test_tool_event_fields(journal: RecordingSender) -> None:
    log = get_logger("huxleyd.test_journal")
    log.info("tool_called", turn="t1", tool="set_volume", duration_ms=12.5)
    message, fields = journal.calls[-1]
    assert fields["HUXLEY_TOOL"] == "set_volume"
    assert fields["HUXLEY_TURN"] == "t1"
    assert fields["HUXLEY_EVENT"] == "tool_called"
    assert fields["HUXLEY_DURATION_MS"] == "12.5"
    assert fields["PRIORITY"] == "6"  # syslog "info"
    assert fields["SYSLOG_IDENTIFIER"] == "huxleyd"
    assert fields["LOGGER"] == "huxleyd.test_journal"
    assert message == "tool_called turn=t1 tool=set_volume duration_ms=12.5"


def test_code_location_is_the_caller(journal: RecordingSender) -> None:
    log = get_logger("huxleyd.test_journal")
    log.warning("state_changed", state="listening")
    fields = journal.last
    assert fields["CODE_FILE"] == __file__
    assert fields["CODE_FUNC"] == "test_code_location_is_the_caller"
    assert fields["HUXLEY_STATE"] == "listening"


def test_code_location_of_a_direct_log_call(journal: RecordingSender) -> None:
    log = get_logger("huxleyd.test_journal")
    log.log(logging.INFO, "direct")
    assert journal.last["CODE_FUNC"] == "test_code_location_of_a_direct_log_call"


def test_priorities(journal: RecordingSender) -> None:
    log = get_logger("huxleyd.test_journal")
    log.debug("d")
    log.info("i")
    log.warning("w")
    log.error("e")
    assert [f["PRIORITY"] for _, f in journal.calls] == ["7", "6", "4", "3"]


def test_bound_skill_field(journal: RecordingSender) -> None:
    log = get_logger("huxleyd.test_journal", skill="timers")
    log.info("timer_set", seconds=300)
    assert journal.last["HUXLEY_SKILL"] == "timers"
    assert journal.last["HUXLEY_SECONDS"] == "300"


async def test_async_forms_carry_fields(journal: RecordingSender) -> None:
    log = get_logger("huxleyd.test_journal")
    await log.ainfo("book_started", book_id="b7")
    assert journal.last["HUXLEY_BOOK_ID"] == "b7"
    assert journal.last["CODE_FUNC"] == "test_async_forms_carry_fields"


def test_secrets_are_redacted(journal: RecordingSender) -> None:
    log = get_logger("huxleyd.test_journal")
    log.info(
        "provider_connect",
        api_key="sk-live-123",
        authorization="Bearer sk-live-123",
        password="hunter2",
        url="wss://example.invalid/v1/realtime",
    )
    message, fields = journal.calls[-1]
    assert fields["HUXLEY_API_KEY"] == "<redacted>"
    assert fields["HUXLEY_AUTHORIZATION"] == "<redacted>"
    assert fields["HUXLEY_PASSWORD"] == "<redacted>"
    assert fields["HUXLEY_URL"] == "wss://example.invalid/v1/realtime"
    everything = message + "".join(str(v) for v in fields.values())
    assert "sk-live-123" not in everything and "hunter2" not in everything


def test_token_counts_are_not_secrets(journal: RecordingSender) -> None:
    get_logger("huxleyd.test_journal").info("turn_done", input_tokens=812)
    assert journal.last["HUXLEY_INPUT_TOKENS"] == "812"


def test_exception_traceback_goes_into_the_message(journal: RecordingSender) -> None:
    log = get_logger("huxleyd.test_journal")
    try:
        raise RuntimeError("skill blew up")
    except RuntimeError:
        log.exception("skill_failed", skill="radio")
    message, fields = journal.calls[-1]
    assert fields["PRIORITY"] == "3" and fields["HUXLEY_SKILL"] == "radio"
    assert "Traceback" in message and "RuntimeError: skill blew up" in message


def test_none_and_odd_keys(journal: RecordingSender) -> None:
    get_logger("huxleyd.test_journal").info("x", media=None, durationMs=3)
    assert journal.last["HUXLEY_MEDIA"] == ""
    assert journal.last["HUXLEY_DURATIONMS"] == "3"
    assert journal_field_name("a-b.c") == "HUXLEY_A_B_C"


def test_setup_installs_the_journal_handler() -> None:
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    sender = RecordingSender()
    try:
        handler = logs.setup("INFO", journal=True, sender=sender)
        assert isinstance(handler, JournalFieldsHandler)
        get_logger("huxleyd.turns").info("turn_started", turn="t9")
        get_logger("huxleyd.turns").debug("below_level")
    finally:
        for h in list(root.handlers):
            root.removeHandler(h)
        for h in saved_handlers:
            root.addHandler(h)
        root.setLevel(saved_level)
    assert [f["HUXLEY_EVENT"] for _, f in sender.calls] == ["turn_started"]
    assert sender.last["HUXLEY_TURN"] == "t9"


# -- the real systemd-python ---------------------------------------------------


def _real_journal() -> ModuleType:
    """systemd.journal, or a skip where it cannot be installed (no libsystemd).

    ``make setup`` installs the ``journal`` extra whenever pkg-config finds
    libsystemd, so there a missing module is a broken set-up, not a skip.
    """
    try:
        return importlib.import_module("systemd.journal")
    except ImportError:
        has_libsystemd = (
            shutil.which("pkg-config") is not None
            and subprocess.run(["pkg-config", "--exists", "libsystemd"], check=False).returncode
            == 0
        )
        if has_libsystemd:
            pytest.fail("libsystemd is installed but systemd-python is not: run `make setup`")
        pytest.skip("systemd-python is not installed (no libsystemd on this machine)")


class ErrorRecordingHandler(JournalFieldsHandler):
    """The production handler; a failed send is recorded, not printed."""

    def __init__(self, sender: Any) -> None:
        super().__init__(sender)
        self.errors: list[BaseException] = []

    def handleError(self, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        assert error is not None
        self.errors.append(error)


def test_real_systemd_journal_send_accepts_every_field() -> None:
    """Every kind of record goes through the real ``systemd.journal.send``.

    Without a journald socket the module formats every field and then drops
    the datagram, so a field of the wrong type (CODE_LINE as a str raised
    ``ValueError: Unknown format code 'd'``) still fails here.
    """
    journal = _real_journal()
    handler = ErrorRecordingHandler(journal.send)
    logger = logging.getLogger("huxleyd.test_real_journal")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        log = get_logger("huxleyd.test_real_journal", skill="timers")
        log.info("tool_called", turn="t1", tool="set_volume", duration_ms=12.5, media=None)
        log.debug("d")
        log.warning("w", count=3)
        logger.info("plain %s message", "stdlib")
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            log.exception("skill_failed")
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    assert handler.errors == []


JOURNAL_SOCKET = "/run/systemd/journal/socket"


@pytest.mark.skipif(not os.path.exists(JOURNAL_SOCKET), reason="no journald on this machine")
def test_real_journal_record_reads_back_with_its_fields() -> None:
    """Where journald runs, the record lands with HUXLEY_* fields a reader can match."""
    journal = _real_journal()
    probe = uuid.uuid4().hex
    handler = ErrorRecordingHandler(journal.send)
    logger = logging.getLogger("huxleyd.test_real_journal_readback")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        get_logger("huxleyd.test_real_journal_readback").warning("journal_probe", probe=probe)
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    assert handler.errors == []
    reader = journal.Reader()
    reader.add_match(HUXLEY_PROBE=probe)
    entries: list[dict[str, Any]] = []
    for _ in range(100):  # journald writes asynchronously; a safety net, not a timing
        entries = list(reader)
        if entries:
            break
        reader.wait(0.2)
    if not entries:
        pytest.skip("journald did not show us the record (no read access to the journal)")
    entry = entries[0]
    assert entry["HUXLEY_EVENT"] == "journal_probe"
    assert entry["PRIORITY"] == 4
    assert entry["CODE_FUNC"] == "test_real_journal_record_reads_back_with_its_fields"
    assert isinstance(entry["CODE_LINE"], int)


def test_a_field_named_key_is_the_settings_name_and_key_values_are_hidden_anywhere(
    journal: RecordingSender,
) -> None:
    """First boot names the wrong setting in ``key=``; a key pasted into the
    wrong setting lands in an error text under any field name."""
    log = get_logger("huxleyd.test_journal")
    log.error(
        "firstboot_failed",
        key="provider.api_key",
        error='device.hostname: "sk-proj-AbCdEf0123456789_xyz" is not a host name',
        failures=["xai-AbCdEf0123456789xyzXYZ refused"],
    )
    message, fields = journal.calls[-1]
    assert fields["HUXLEY_KEY"] == "provider.api_key"
    assert fields["HUXLEY_ERROR"] == 'device.hostname: "<redacted>" is not a host name'
    everything = message + "".join(str(v) for v in fields.values())
    assert "AbCdEf0123456789" not in everything
