"""The wire format: what parses, what is refused and with which message."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from huxleyd.control.errors import ControlProtocolError
from huxleyd.control.protocol import (
    MAX_LINE_BYTES,
    MAX_NESTING,
    MAX_SAY_CHARS,
    Command,
    DoneReply,
    ErrorReply,
    LevelsArgs,
    NoArgs,
    PttAction,
    PttArgs,
    Request,
    ResultReply,
    SayArgs,
    VolumeArgs,
    one_line,
    parse_reply,
    parse_request,
)

GOOD = [
    ('{"id": 1, "cmd": "status"}', Request(1, Command.STATUS, NoArgs())),
    ('{"id": 2, "cmd": "status", "args": {}}', Request(2, Command.STATUS, NoArgs())),
    ('{"id": 3, "cmd": "volume"}', Request(3, Command.VOLUME, VolumeArgs())),
    ('{"id": 4, "cmd": "volume", "args": {"level": 0}}', Request(4, Command.VOLUME, VolumeArgs(0))),
    (
        '{"id": 5, "cmd": "volume", "args": {"level": 100}}',
        Request(5, Command.VOLUME, VolumeArgs(100)),
    ),
    (
        '{"id": 6, "cmd": "volume", "args": {"level": null}}',
        Request(6, Command.VOLUME, VolumeArgs()),
    ),
    (
        '{"id": 7, "cmd": "say", "args": {"text": "  hi there "}}',
        Request(7, Command.SAY, SayArgs("hi there")),
    ),
    (
        '{"id": 8, "cmd": "ptt", "args": {"action": "tap"}}',
        Request(8, Command.PTT, PttArgs(PttAction.TAP)),
    ),
    ('{"id": 9, "cmd": "levels", "args": {"count": 3}}', Request(9, Command.LEVELS, LevelsArgs(3))),
    ('{"id": 10, "cmd": "levels"}', Request(10, Command.LEVELS, LevelsArgs())),
    ('{"id": -1, "cmd": "stop"}', Request(-1, Command.STOP, NoArgs())),
    ('{"id": 11, "cmd": "doctor"}\n', Request(11, Command.DOCTOR, NoArgs())),
    ('{"cmd": "skills", "id": 12}', Request(12, Command.SKILLS, NoArgs())),
]


@pytest.mark.parametrize(("line", "expected"), GOOD)
def test_good_requests_parse(line: str, expected: Request) -> None:
    assert parse_request(line.encode()) == expected


BAD = [
    # (line, expected id in the error, a fragment the message must contain)
    ("", None, "empty request"),
    ("hello", None, "request is not JSON"),
    ('{"id": 1, "cmd": "status"', None, "request is not JSON"),
    ("[1, 2]", None, "request is an array, expected a JSON object"),
    ('"status"', None, "request is a string, expected a JSON object"),
    ('{"id": 1, "cmd": "status", "x": NaN}', None, "not JSON"),
    ('{"cmd": "status"}', None, "missing 'id' (expected an integer)"),
    ('{"id": "7", "cmd": "status"}', None, "'id' expected an integer, got \"7\""),
    ('{"id": true, "cmd": "status"}', None, "'id' expected an integer, got true"),
    ('{"id": 1}', 1, "'cmd' expected a command name, got null"),
    ('{"id": 1, "cmd": "reboot"}', 1, 'unknown cmd "reboot" (expected one of: status, volume'),
    ('{"id": 1, "cmd": "status", "extra": 1}', 1, 'unknown field "extra" (expected id, cmd, args)'),
    (
        '{"id": 1, "cmd": "status", "args": []}',
        1,
        "bad args for status: expected an object, got an array",
    ),
    (
        '{"id": 1, "cmd": "status", "args": {"x": 1}}',
        1,
        'bad args for status: unknown arg "x" (expected none)',
    ),
    (
        '{"id": 2, "cmd": "volume", "args": {"level": 130}}',
        2,
        "bad args for volume: 'level' expected an integer 0-100, got 130",
    ),
    (
        '{"id": 2, "cmd": "volume", "args": {"level": -1}}',
        2,
        "'level' expected an integer 0-100, got -1",
    ),
    (
        '{"id": 2, "cmd": "volume", "args": {"level": 30.5}}',
        2,
        "'level' expected an integer 0-100, got 30.5",
    ),
    (
        '{"id": 2, "cmd": "volume", "args": {"level": true}}',
        2,
        "'level' expected an integer 0-100, got true",
    ),
    ('{"id": 2, "cmd": "volume", "args": {"lvl": 3}}', 2, "unknown arg \"lvl\" (expected 'level')"),
    (
        '{"id": 3, "cmd": "say"}',
        3,
        "bad args for say: 'text' expected a non-empty string, got nothing",
    ),
    ('{"id": 3, "cmd": "say", "args": {"text": "   "}}', 3, "'text' expected a non-empty string"),
    (
        '{"id": 3, "cmd": "say", "args": {"text": 5}}',
        3,
        "'text' expected a non-empty string, got 5",
    ),
    (
        '{"id": 4, "cmd": "ptt", "args": {"action": "hold"}}',
        4,
        "bad args for ptt: 'action' expected one of 'press', 'release', 'tap', got \"hold\"",
    ),
    (
        '{"id": 4, "cmd": "ptt"}',
        4,
        "'action' expected one of 'press', 'release', 'tap', got nothing",
    ),
    (
        '{"id": 5, "cmd": "levels", "args": {"count": 0}}',
        5,
        "bad args for levels: 'count' expected an integer ≥ 1, got 0",
    ),
]


@pytest.mark.parametrize(("line", "request_id", "fragment"), BAD)
def test_bad_requests_are_refused_with_one_specific_line(
    line: str, request_id: int | None, fragment: str
) -> None:
    with pytest.raises(ControlProtocolError) as caught:
        parse_request(line.encode())
    message = str(caught.value)
    assert fragment in message
    assert "\n" not in message
    assert caught.value.request_id == request_id


def test_say_text_has_a_length_limit() -> None:
    line = json.dumps({"id": 1, "cmd": "say", "args": {"text": "a" * (MAX_SAY_CHARS + 1)}})
    with pytest.raises(ControlProtocolError, match=f"longer than {MAX_SAY_CHARS} characters"):
        parse_request(line)
    ok = json.dumps({"id": 1, "cmd": "say", "args": {"text": "a" * MAX_SAY_CHARS}})
    assert parse_request(ok).args == SayArgs("a" * MAX_SAY_CHARS)


def test_lines_over_the_limit_and_bad_utf8_are_refused() -> None:
    with pytest.raises(ControlProtocolError, match=f"longer than {MAX_LINE_BYTES} bytes"):
        parse_request(b" " * (MAX_LINE_BYTES + 1))
    with pytest.raises(ControlProtocolError, match="not UTF-8"):
        parse_request(b'{"id": 1, "cmd": "\xff"}')


@pytest.mark.parametrize("request_", [g[1] for g in GOOD])
def test_requests_round_trip_through_encode(request_: Request) -> None:
    line = request_.encode()
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert parse_request(line) == request_


@pytest.mark.parametrize(
    "reply",
    [
        ResultReply(1, {"volume": 30}),
        ResultReply(None, {}),
        DoneReply(4),
        ErrorReply(5, "bad args for volume: nope"),
        ErrorReply(None, "request is not JSON: Expecting value"),
    ],
)
def test_replies_round_trip(reply: ResultReply | DoneReply | ErrorReply) -> None:
    assert parse_reply(reply.encode()) == reply


def test_error_replies_are_one_line_and_bounded() -> None:
    encoded = ErrorReply(1, "first\nsecond\tthird " + "x" * 1000).encode()
    decoded = parse_reply(encoded)
    assert isinstance(decoded, ErrorReply)
    assert decoded.error.startswith("first second third x")
    assert len(decoded.error) <= 300
    assert one_line("a\n\n  b") == "a b"


def test_replies_refuse_nan() -> None:
    with pytest.raises(ValueError):
        ResultReply(1, {"x": float("nan")}).encode()


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ('{"id": 1}', "reply 'ok' expected true or false, got null"),
        ('{"id": 1, "ok": false}', "error reply without an 'error' string"),
        ('{"id": 1, "ok": true}', "reply 'result' expected an object, got null"),
        ('{"id": 1, "ok": true, "result": 3}', "reply 'result' expected an object, got 3"),
        ('{"id": "x", "ok": true, "result": {}}', "reply 'id' expected an integer or null"),
        ("nope", "reply is not JSON"),
    ],
)
def test_bad_replies_are_refused(line: str, fragment: str) -> None:
    with pytest.raises(ControlProtocolError) as caught:
        parse_reply(line)
    assert fragment in str(caught.value)


# -- any input: a ControlProtocolError with a reply that can be sent, nothing else


def _refused_or_parsed(line: bytes) -> None:
    """parse_request either parses ``line`` or refuses it with a ControlProtocolError
    whose error reply encodes (the reply is what the client gets back)."""
    try:
        request = parse_request(line)
    except ControlProtocolError as exc:
        encoded = ErrorReply(exc.request_id, str(exc)).encode()
        assert encoded.endswith(b"\n") and encoded.count(b"\n") == 1
        return
    assert request.encode().decode("utf-8")  # what parsed can be sent on


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_get_a_reply(line: bytes) -> None:
    _refused_or_parsed(line)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([c.value for c in Command] + ["nope"]),
    st.dictionaries(
        st.sampled_from(["text", "level", "count", "action", "key", "data", "x"]),
        _json_values,
        max_size=3,
    ),
)
def test_any_json_arguments_get_a_reply(cmd: str, args: dict[str, object]) -> None:
    line = json.dumps({"id": 1, "cmd": cmd, "args": args}).encode()
    _refused_or_parsed(line)


@pytest.mark.parametrize("surrogate", ["\\ud800", "\\udfff", "a\\udc80b"])
def test_a_lone_surrogate_is_refused_by_name(surrogate: str) -> None:
    line = '{"id": 7, "cmd": "say", "args": {"text": "hi ' + surrogate + '"}}'
    with pytest.raises(ControlProtocolError, match="lone UTF-16 surrogate") as caught:
        parse_request(line.encode())
    assert caught.value.request_id == 7
    ErrorReply(7, str(caught.value)).encode()  # the refusal itself can be sent


@pytest.mark.parametrize("depth", [MAX_NESTING - 1, 1_000, 5_000, 100_000])
def test_deep_nesting_is_refused_by_name(depth: int) -> None:
    # The request object and "args" are two levels: MAX_NESTING - 1 lists is one too many.
    # (The parser's own limit differs between Python versions; ours does not.)
    line = '{"id": 1, "cmd": "say", "args": {"text": ' + "[" * depth + "]" * depth + "}}"
    with pytest.raises(ControlProtocolError, match=r"too deeply|longer than"):
        parse_request(line.encode())


def test_nesting_up_to_the_limit_is_read() -> None:
    depth = MAX_NESTING - 2  # + the request and its "args"
    line = '{"id": 1, "cmd": "say", "args": {"text": ' + "[" * depth + "]" * depth + "}}"
    with pytest.raises(ControlProtocolError, match="'text' expected a non-empty string"):
        parse_request(line.encode())  # parsed whole: refused for its type, not its depth
