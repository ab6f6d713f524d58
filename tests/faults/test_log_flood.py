"""Case 9: a fault that repeats does not flood the log.

A missing sound card is retried every few seconds, and each try logs; a
minute of a thousand identical warnings must leave a handful of lines and
a count of what was dropped. The daemon's own handler (``logs.setup``) is
what is checked, with the limiter's clock injected.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os

from huxleyd.app.native_stderr import NativeStderr
from huxleyd.logs import RepeatLimiter, get_logger, setup
from tests.e2e.harness import until


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


LINE = b"ALSA lib pcm.c:2666:(snd_pcm_open_noupdate) Unknown PCM cards.pcm.front\n"


async def test_what_c_libraries_print_on_fd_2_goes_through_the_limited_log() -> None:
    """PortAudio's start prints dozens of ALSA lines on fd 2 at every reopen of a
    missing card: they reach the log as ``native_stderr``, ten a minute."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RepeatLimiter(monotonic=lambda: 0.0))  # all within one minute
    native_log = logging.getLogger("huxleyd.native")
    native_log.addHandler(handler)
    native = NativeStderr()
    loop = asyncio.get_running_loop()
    native.install(loop)
    try:
        for _ in range(20):  # 1000 lines, written as a C library would: to fd 2
            os.write(2, LINE * 50)
            target = native.lines + 50
            await until(lambda t=target: native.lines >= t, "the lines drained")  # type: ignore[misc]
    finally:
        native.uninstall(loop)
        native_log.removeHandler(handler)
    assert native.lines == 1000
    kept = stream.getvalue().splitlines()
    assert 1 <= len(kept) <= 10, len(kept)
    assert "Unknown PCM cards.pcm.front" in kept[0]
