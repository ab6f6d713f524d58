"""What C libraries print on fd 2, through the rate-limited log.

Layer: adapter (file descriptors, the event loop). ALSA, JACK and PortAudio
print dozens of lines to fd 2 each time PortAudio starts, so a missing sound
card retried every few seconds wrote over a thousand lines a minute. While
:class:`NativeStderr` is installed, fd 2 is a non-blocking pipe the loop
drains: each line becomes a ``native_stderr`` warning of ``huxleyd.native``,
which the daemon's :class:`~huxleyd.logs.RepeatLimiter` lets through ten a
minute. Python's own ``sys.stderr`` (and the log handler writing to it) is
pointed at the original fd 2 first, so the daemon's log is unchanged.

A writer never blocks on the pipe (the audio thread may be the one writing):
when the loop lags and the pipe is full, native lines are dropped.
"""

from __future__ import annotations

import asyncio
import fcntl
import io
import logging
import os
import sys
from typing import TextIO

from huxleyd.logs import get_logger

log = get_logger("huxleyd.native")

MAX_LINE_CHARS = 300


class NativeStderr:
    """``install()`` on the loop; ``uninstall()`` restores fd 2. Idempotent."""

    def __init__(self) -> None:
        self._saved_fd: int | None = None
        self._read_fd: int | None = None
        self._saved_stream: TextIO | None = None
        self._python_stream: TextIO | None = None
        self._buffer = b""
        self.lines = 0

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._saved_fd is not None:
            return
        read_fd, write_fd = os.pipe()
        saved = os.dup(2)
        os.dup2(write_fd, 2)
        os.close(write_fd)
        for fd in (2, read_fd):
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
            fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        self._saved_fd, self._read_fd = saved, read_fd
        # Python keeps writing where it wrote before: the original fd 2.
        python = io.TextIOWrapper(
            os.fdopen(os.dup(saved), "wb", buffering=0), line_buffering=True, errors="replace"
        )
        self._saved_stream, self._python_stream = sys.stderr, python
        sys.stderr = python
        _repoint_handlers(self._saved_stream, python)
        loop.add_reader(read_fd, self._drain)

    def uninstall(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._saved_fd is None or self._read_fd is None:
            return
        loop.remove_reader(self._read_fd)
        self._drain()
        os.dup2(self._saved_fd, 2)
        os.close(self._saved_fd)
        os.close(self._read_fd)
        if self._saved_stream is not None and self._python_stream is not None:
            sys.stderr = self._saved_stream
            _repoint_handlers(self._python_stream, self._saved_stream)
            self._python_stream.close()
        self._saved_fd = self._read_fd = None

    def _drain(self) -> None:
        assert self._read_fd is not None
        while True:
            try:
                chunk = os.read(self._read_fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        if len(self._buffer) > 4 * MAX_LINE_CHARS:  # no newline in sight: flush it
            lines.append(self._buffer)
            self._buffer = b""
        for raw in lines:
            text = raw.decode("utf-8", "replace").strip()
            if text:
                self.lines += 1
                log.warning("native_stderr", line=text[:MAX_LINE_CHARS])


def _repoint_handlers(old: TextIO, new: TextIO) -> None:
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and handler.stream is old:
            handler.setStream(new)
