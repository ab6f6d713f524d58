"""The retry policy: a pure classifier and the backoff schedule."""

from __future__ import annotations

import itertools

import pytest
from websockets.datastructures import Headers
from websockets.exceptions import (
    ConnectionClosedError,
    InvalidMessage,
    InvalidStatus,
    InvalidURI,
)
from websockets.frames import Close
from websockets.http11 import Response

from huxleyd.errors import ProviderConnectionError
from huxleyd.providers.retry import (
    FATAL,
    RETRYABLE,
    ReconnectPolicy,
    Retry,
    backoff_delays,
    classify,
)


def status(code: int) -> InvalidStatus:
    return InvalidStatus(Response(code, "whatever", Headers()))


@pytest.mark.parametrize("code", [401, 403, 400, 404])
def test_refused_handshakes_that_will_not_change_are_fatal(code: int) -> None:
    assert classify(status(code)) is FATAL


@pytest.mark.parametrize("code", [408, 429, 500, 502, 503, 504, 599])
def test_server_trouble_and_rate_limits_are_retryable(code: int) -> None:
    assert classify(status(code)) is RETRYABLE


@pytest.mark.parametrize(
    "exc",
    [
        ConnectionRefusedError(111, "refused"),
        ConnectionResetError(104, "reset"),
        TimeoutError("open timed out"),
        OSError(101, "network unreachable"),
        EOFError(),
        InvalidMessage("did not receive a valid HTTP response"),
        ConnectionClosedError(Close(1011, "keepalive ping timeout"), None),
        ProviderConnectionError("provider ended the session"),
    ],
)
def test_network_failures_are_retryable(exc: Exception) -> None:
    assert classify(exc) is RETRYABLE


@pytest.mark.parametrize(
    "exc", [InvalidURI("http://x", "scheme isn't ws or wss"), TypeError("a bug"), KeyError("k")]
)
def test_bad_urls_and_bugs_are_fatal(exc: Exception) -> None:
    assert classify(exc) is FATAL


def test_backoff_is_1_3_10_30_then_60_forever() -> None:
    delays = list(itertools.islice(backoff_delays(jitter=0), 8))
    assert delays == [1.0, 3.0, 10.0, 30.0, 60.0, 60.0, 60.0, 60.0]


def test_jitter_only_stretches_by_at_most_its_fraction() -> None:
    top = list(itertools.islice(backoff_delays(jitter=0.1, rand=lambda: 0.999999), 5))
    assert top == pytest.approx([1.1, 3.3, 11.0, 33.0, 66.0], rel=1e-5)
    bottom = list(itertools.islice(backoff_delays(jitter=0.1, rand=lambda: 0.0), 5))
    assert bottom == [1.0, 3.0, 10.0, 30.0, 60.0]


def test_jitter_must_be_a_fraction() -> None:
    with pytest.raises(ValueError, match="jitter"):
        next(backoff_delays(jitter=1.5))
    assert next(backoff_delays(jitter=1.0, rand=lambda: 0.5)) == 1.5  # the whole fraction is one


def test_the_daemons_default_jitter_is_a_tenth() -> None:
    top = list(itertools.islice(backoff_delays(rand=lambda: 1.0), 5))
    assert top == pytest.approx([1.1, 3.3, 11.0, 33.0, 66.0])


def test_failed_tries_walk_the_schedule_and_a_ready_session_starts_it_over() -> None:
    policy = ReconnectPolicy(lambda: backoff_delays(jitter=0))
    assert [policy.attempt_failed() for _ in range(3)] == [1.0, 3.0, 10.0]
    assert policy.failures == 3
    assert policy.session_ended(was_ready=False) == 30.0 and policy.failures == 4
    assert policy.session_ended(was_ready=True) == 1.0 and policy.failures == 0
    assert policy.attempt_failed() == 3.0 and policy.failures == 1


def test_a_deliberate_reconnect_counts_nothing_and_starts_the_schedule_over() -> None:
    policy = ReconnectPolicy(lambda: backoff_delays(jitter=0))
    policy.attempt_failed(), policy.attempt_failed()
    policy.reset()
    assert policy.failures == 0
    assert policy.attempt_failed() == 1.0 and policy.failures == 1


def test_retry_values_are_the_two_outcomes() -> None:
    assert set(Retry) == {RETRYABLE, FATAL}
