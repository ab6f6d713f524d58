"""Case 9: a fault that repeats does not flood the log.

A missing sound card is retried every few seconds, and each try logs; a
minute of a thousand identical warnings must leave a handful of lines and
a count of what was dropped. The daemon's own handler (``logs.setup``) is
what is checked, with the limiter's clock injected.
"""

from __future__ import annotations

import io
import logging

from huxleyd.logs import RepeatLimiter, get_logger, setup


def test_a_thousand_identical_warnings_a_minute_leave_a_handful_of_lines() -> None:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        check_the_limiter()
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])


def check_the_limiter() -> None:
    handler = setup("INFO", journal=False)
    assert any(isinstance(f, RepeatLimiter) for f in handler.filters)  # installed by setup
    stream = io.StringIO()
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(stream)
    now = [0.0]
    for f in list(handler.filters):
        handler.removeFilter(f)
    handler.addFilter(RepeatLimiter(monotonic=lambda: now[0]))
    log = get_logger("huxleyd.audio")
    for i in range(1000):  # one minute: 1000 tries of a missing card
        now[0] = i * 0.06
        log.warning("audio_device_lost", retry_s=3.0)
        if i % 100 == 0:
            log.info("state_changed", state="idle")  # the INFO trail is not limited
    now[0] = 61.0
    log.warning("audio_device_lost", retry_s=3.0)  # the next window: passes, with the count
    lines = stream.getvalue().splitlines()
    lost = [line for line in lines if "audio_device_lost" in line]
    assert len(lost) <= 25, len(lost)
    assert "suppressed_repeats=" in lost[-1]
    assert sum(1 for line in lines if "state_changed" in line) == 10
    other = get_logger("huxleyd.turns")
    other.error("tool_failed", tool="x")  # another event is not held back by the flood
    assert "tool_failed" in stream.getvalue()
