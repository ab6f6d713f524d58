"""The wake-word detector on its own thread, fed from the event loop.

The loop hands each mic frame to :meth:`WakeListener.hear`, which never
blocks: a bounded queue takes it, and when the detector falls behind (a Pi
under load) the oldest frames are dropped and counted, never the loop
stalled. The thread runs the model (about 0.4 % of a core here per second of
audio) and reports a detection with ``call_soon_threadsafe``, with the audio
time of the frame it ended in, so the coordinator knows which frames came
after the wake word. The audio thread is not involved: its deadline never
waits for the model.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable

from huxleyd.audio.types import MicFrame
from huxleyd.handsfree.detector import WakeDetector
from huxleyd.logs import get_logger

log = get_logger("huxleyd.handsfree")

QUEUE_FRAMES = 250
"""Frames (5 s of 20 ms frames) the detector may fall behind before the oldest go."""

_RESET = object()


class WakeListener:
    """``start(loop)``, then :meth:`hear` per frame; ``on_wake(heard_at)`` on the loop."""

    def __init__(
        self,
        detector: WakeDetector,
        on_wake: Callable[[float], None] | None = None,
        *,
        queue_frames: int = QUEUE_FRAMES,
        far_end: Callable[[], MicFrame | None] | None = None,
    ) -> None:
        self.detector = detector
        self._far_end = far_end
        """Pops what the speaker played (the engine's far end), read on this thread only."""
        self._on_wake = on_wake
        self._queue: deque[tuple[bytes, float, float] | object] = deque(maxlen=queue_frames)
        self._cond = threading.Condition()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self._busy = False
        self.frames_heard = 0
        self.frames_dropped = 0
        self.detections = 0

    def deliver_to(self, on_wake: Callable[[float], None]) -> None:
        """Hand each detection to ``on_wake`` (on the loop) from now on: how the
        composition root wires the coordinator once it exists."""
        self._on_wake = on_wake

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._thread = threading.Thread(target=self._run, name="huxleyd-wake", daemon=True)
        self._thread.start()

    def hear(self, pcm: bytes, captured_at: float, end_at: float) -> None:
        with self._cond:
            if len(self._queue) == self._queue.maxlen:
                self.frames_dropped += 1  # the deque drops the oldest itself
            self._queue.append((pcm, captured_at, end_at))
            self._cond.notify_all()

    def reset(self) -> None:
        with self._cond:
            self._queue.clear()
            self._queue.append(_RESET)
            self._cond.notify_all()

    @property
    def pending(self) -> int:
        """Frames queued or being processed (0: the detector has heard everything)."""
        with self._cond:
            return len(self._queue) + int(self._busy)

    def wait_drained(self, timeout_s: float) -> bool:
        """Block until every queued frame was heard (False: ``timeout_s`` passed first)."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._queue and not self._busy, timeout_s)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=2.0)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                item = self._queue.popleft()
                self._busy = True
            try:
                self._process(item)
            except Exception as exc:  # a model error must not end listening for good
                log.error("wake_detector_failed", error=repr(exc))
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _process(self, item: tuple[bytes, float, float] | object) -> None:
        if item is _RESET:
            self.detector.reset()
            return
        assert isinstance(item, tuple)
        pcm, captured_at, end_at = item
        self.frames_heard += 1
        if self._far_end is not None:  # what the speaker played up to now, first
            while (played := self._far_end()) is not None:
                self.detector.played(played.pcm, played.captured_at)
        if self.detector.feed(pcm, captured_at) and self._loop is not None:
            self.detections += 1
            if self._on_wake is not None:
                self._loop.call_soon_threadsafe(self._on_wake, end_at)
