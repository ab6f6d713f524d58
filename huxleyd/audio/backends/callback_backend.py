"""The PortAudio *callback* backend: the device's deadlines run in C, out of the GIL.

Device discovery and naming are PyAudio's (:mod:`.portaudio_card`).
Capture is a C callback too (:class:`huxleyd.audio._rt.Input`, in
``_rtin.c``): it drains the card into a deep ring; the engine's read waits for
a whole period with the GIL released, and paces the engine. Playback is
the ``Output`` of :mod:`huxleyd.audio._rt`: a PortAudio callback stream with short periods
(``callback_period_ms``: 2.5 ms at SCHED_FIFO, ``fallback_period_ms``: 5 ms
when SCHED_FIFO is refused) fed through a lock-free ring. The engine's
``write`` only copies a mixed period into the ring; the callback copies it to
the device without the GIL, so a busy Python thread can delay the engine by
tens of milliseconds without the speaker noticing.

The backend is also the engine's :class:`~.base.OutputClock`: where each
written frame is at the DAC (from the callback's ``outputBufferDacTime``), a
cut (barge-in) honoured by the callback within its next short period, with its
own fade, and the frames that cut dropped. xruns are counted from the
callback's status flags; nothing closes a stream because of one. Where the
machine cannot keep the short period at all (card xruns again and again: a
slow or loaded Pi), :meth:`CallbackBackend.widen` takes the next of a ladder
of longer ones (each twice the last, up to ``max_period_ms``) and the engine
reopens at once (:mod:`huxleyd.audio.xrun_watch`); the description says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from huxleyd.audio.backends.base import DeviceFormat, IoStatus
from huxleyd.audio.backends.portaudio_card import PortAudioCard
from huxleyd.errors import AudioDeviceError
from huxleyd.pcm import Int16Array, period_frames

if TYPE_CHECKING:
    from huxleyd.audio import _rt

RT = "huxleyd.audio._rt"
"""The C extension the callback backend plays (and captures) through."""


@dataclass(frozen=True, slots=True)
class RtTypes:
    """What the code uses of the ``_rt`` extension, typed by its stub (``_rt.pyi``)."""

    Output: type[_rt.Output]
    Input: type[_rt.Input]
    Feeder: type[_rt.Feeder]
    SourceRing: type[_rt.SourceRing]
    REPORT_HEAD: tuple[str, ...]
    REPORT_SOURCE: tuple[str, ...]


def load_rt() -> RtTypes:
    """The C extension's types (typed by ``_rt.pyi``); ImportError where it is not
    built (or a test hid it: ``sys.modules[RT] = None``)."""
    import huxleyd.audio._rt as _rt  # sys.modules decides (a hidden build), not an attribute

    return RtTypes(
        _rt.Output, _rt.Input, _rt.Feeder, _rt.SourceRing, _rt.REPORT_HEAD, _rt.REPORT_SOURCE
    )


def rtout_missing() -> str | None:
    """Why the C extension cannot be imported here (not built), or None when it can."""
    try:
        load_rt()
    except ImportError as exc:
        return str(exc)
    return None


def forced_callback_missing(backend: str) -> str | None:
    """Why the card cannot play on an install without the C extension, or None when
    it can (or ``audio.backend = "wav"`` needs no card).

    The speaker's one mix is the extension's C feeder and there is no other path to
    the card (issue 39), so the card is not opened: the audio part runs degraded and
    the open is retried, saying why. One answer for ``--check-config`` (a warning),
    the start (a degraded part: journal, status, doctor, the first press) and the
    open itself: a speaker without a screen must still come up (its LEDs, its
    control socket, a WAV backend where ``auto`` finds no card), and a missing
    extension is an install problem, not a broken configuration."""
    if backend == "wav":
        return None
    missing = rtout_missing()
    if missing is None:
        return None
    return (
        f"audio.backend = {backend!r} but the card's C extension is not built ({missing}); "
        "the card cannot play (its mix is that extension's, there is no other): reinstall "
        "huxleyd with a C compiler and portaudio19-dev (make setup says what is missing)"
    )


class CallbackBackend(PortAudioCard):
    """C callback capture and playback; PyAudio finds the devices."""

    def __init__(
        self,
        *,
        callback_period_ms: float = 2.5,
        capture_period_ms: float = 10.0,
        fallback_period_ms: float = 5.0,
        fallback_latency_s: float = 0.020,
        output_latency_s: float = 0.005,
        fade_ms: float = 5.0,
        ring_ms: int = 500,
        max_period_ms: float = 20.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.callback_period_ms = callback_period_ms
        self.capture_period_ms = capture_period_ms
        self.fallback_period_ms = fallback_period_ms
        self.fallback_latency_s = fallback_latency_s
        self.realtime: bool | None = None
        """Whether the playback callback runs SCHED_FIFO (None: not opened yet)."""
        """Capture needs no short period (nothing waits on it but the engine's next
        period); a longer one costs the card fewer wake-ups."""
        self.output_latency_s = output_latency_s
        self.fade_ms = fade_ms
        self.ring_ms = ring_ms
        self.max_period_ms = max_period_ms
        """The ladder's top (:meth:`widen`): barge-in still well under a second."""
        self._scale = 1
        """Each period (and latency) is its first value times this: 1, 2, 4…"""
        self._widened = ""
        self._steps: list[str] = []
        """What the card showed at each step of the ladder, in order."""
        self._output: _rt.Output | None = None
        self._out_rate = 0

    # -- AudioBackend ---------------------------------------------------------

    def open(self, *, period_ms: int) -> DeviceFormat:
        self._rt()  # without the extension no card can play: say that, whatever is plugged in
        return super().open(period_ms=period_ms)

    def _rt(self) -> RtTypes:
        try:
            return load_rt()
        except ImportError as exc:
            raise AudioDeviceError(
                f"the C playback extension is not built ({exc}); reinstall huxleyd "
                "with a C compiler and portaudio19-dev (make setup says what is missing)"
            ) from exc

    def _open_capture(self, index: int, rate: int, period_ms: int) -> Any:
        # Capture drains the card from a C callback too: a blocking read that waits
        # for the GIL let a busy Python thread overrun the mic (13-21 overruns in
        # 10 s measured on the clocked card). The engine's read waits, GIL released,
        # for a whole period in a ring ring_ms deep. A widened ladder (widen) lengthens
        # it up to the engine's period, never beyond: a longer one would hand the
        # engine its periods in bursts, and the Python mix's lead is only 30 ms.
        capture_ms = min(
            self.capture_period_ms * self._scale, max(self.capture_period_ms, period_ms)
        )
        stream = self._rt().Input(
            device=index,
            rate_hz=rate,
            channels=self.input_channels,
            period_frames=max(16, round(rate * capture_ms / 1000.0)),
            ring_frames=max(4 * period_frames(rate, period_ms), rate * self.ring_ms // 1000),
            latency_s=capture_ms * 2 / 1000.0,
        )
        stream.start()
        return stream

    def _kind(self) -> str:
        widened = f" ({self._widened})" if self._widened else ""
        if self.realtime:
            return f"callback {self.callback_period_ms * self._scale:g} ms SCHED_FIFO{widened}"
        return (
            f"callback {self.fallback_period_ms * self._scale:g} ms (normal priority: "
            f"SCHED_FIFO refused){widened}"
        )

    # -- WidenablePeriod: the period this machine can keep ---------------------

    def card_xruns(self) -> int:
        if self._output is None:
            return 0
        return int(self._output.xruns()) + self.input_counters()[0]

    def widen(self, reason: str) -> bool:
        first = self.callback_period_ms if self.realtime is not False else self.fallback_period_ms
        if first * self._scale * 2 > self.max_period_ms:
            return False
        self._steps.append(f"{reason} at {first * self._scale:g} ms")
        self._scale *= 2
        self._widened = (
            f"widened from {first:g} ms to {first * self._scale:g} ms after "
            f"{'; '.join(self._steps)}: this machine could not keep the shorter period"
        )
        return True

    def narrow(self) -> bool:
        if self._scale == 1:
            return False
        first = self.callback_period_ms if self.realtime is not False else self.fallback_period_ms
        self._scale //= 2
        self._steps.pop()
        self._widened = (
            f"widened from {first:g} ms to {first * self._scale:g} ms after "
            f"{'; '.join(self._steps)}: this machine could not keep the shorter period"
            if self._steps
            else ""
        )
        return True

    def widened(self) -> str:
        return self._widened

    def _input_latency(self, stream: Any) -> float:
        return float(stream.latency_s())

    def read(self, out: Int16Array) -> IoStatus:
        stream = self._in
        if stream is None:
            return IoStatus.LOST
        # a second without one period from the card: the device is gone
        return IoStatus.OK if stream.read(out, 1.0) else IoStatus.LOST

    def input_captured_ago(self) -> float | None:
        """How long ago the card captured the period the last read took (its
        callback's ADC stamp), or None without one."""
        if self._in is None:
            return None
        ago = self._in.captured_ago()
        return None if ago is None else float(ago)

    def input_stamp_counts(self) -> tuple[int, int, int]:
        """(callbacks stamped by the card's ADC time, stamped by their own time since
        the host API gave none, periods read with no stamp)."""
        if self._in is None:
            return 0, 0, 0
        adc, guessed, unstamped = self._in.stamp_counts()
        return int(adc), int(guessed), int(unstamped)

    def input_queued_frames(self) -> int:
        return int(self._in.queued()) if self._in is not None else 0

    def discard_input(self, keep_frames: int) -> int:
        return int(self._in.discard(keep_frames)) if self._in is not None else 0

    def input_counters(self) -> tuple[int, int]:
        """(xruns the capture callback saw, mic frames the reader lost by being late)."""
        if self._in is None:
            return 0, 0
        xruns, lost = self._in.counters()
        return int(xruns), int(lost)

    def _open_playback(self, index: int, rate: int, period_ms: int) -> Any:
        self._out_rate = rate
        output = self._start_output(index, rate, period_ms, self.callback_period_ms * self._scale)
        if not self._runs_realtime(output):
            # SCHED_FIFO refused (no CAP_SYS_NICE, no rtprio limit, systemd's
            # RestrictRealtime): a 2.5 ms period at normal priority would xrun under
            # load, so trade a few ms of barge-in for safety
            output.close()
            output = self._start_output(
                index,
                rate,
                period_ms,
                self.fallback_period_ms * self._scale,
                latency_s=self.fallback_latency_s * self._scale,
            )
            self.realtime = False
        else:
            self.realtime = True
        self._output = output
        return output

    def _start_output(
        self,
        index: int,
        rate: int,
        period_ms: int,
        callback_ms: float,
        *,
        latency_s: float | None = None,
    ) -> Any:
        output = self._rt().Output(
            device=index,
            rate_hz=rate,
            channels=self.output_channels,
            period_frames=max(16, round(rate * callback_ms / 1000.0)),
            ring_frames=max(4 * period_frames(rate, period_ms), rate * self.ring_ms // 1000),
            fade_frames=max(1, round(rate * self.fade_ms / 1000.0)),
            latency_s=self.output_latency_s * self._scale if latency_s is None else latency_s,
        )
        output.start()
        return output

    def _runs_realtime(self, output: Any) -> bool:
        """Whether the callback thread got SCHED_FIFO (asked once it has run)."""
        for _ in range(100):  # the first callback comes within a period or two
            answer = output.realtime()
            if answer is not None:
                return bool(answer)
            time.sleep(0.002)
        return False

    def _output_latency(self, stream: Any) -> float:
        return float(stream.latency_s())

    def write(self, data: Int16Array) -> IoStatus:
        output = self._output
        if output is None or not output.active():
            return IoStatus.LOST
        output.write(data)  # never blocks; a full ring (engine far ahead) keeps the oldest
        return IoStatus.OK

    def close(self) -> None:
        for stream in (self._in, self._out):
            if stream is not None:
                stream.close()  # the C streams: abort and close, idempotent
        self._in = self._out = self._output = None
        super().close()

    def output_stream(self) -> Any:
        """The open ``_rt.Output`` (the C feeder writes it), or None while closed."""
        return self._output

    # -- OutputClock ----------------------------------------------------------

    def written_frames(self) -> int:
        return int(self._output.written()) if self._output is not None else 0

    def queued_frames(self) -> int:
        return int(self._output.queued()) if self._output is not None else 0

    def heard_frame(self) -> int:
        return int(self._output.heard()) if self._output is not None else 0

    def cut(self) -> tuple[int, int] | None:
        if self._output is None:
            return None
        seq, end = self._output.cut()
        return int(seq), int(end)

    def resume(self, seq: int, at: int) -> None:
        if self._output is not None:
            self._output.resume(seq, at)

    def drops(self) -> tuple[int, int, int]:
        if self._output is None:
            return 0, 0, 0
        done, start, end = self._output.drops()
        return int(done), int(start), int(end)

    def expect_audio(self, sources: int) -> None:
        if self._output is not None:
            self._output.expect(sources)

    def dropouts(self) -> int:
        return int(self._output.dropouts()[0]) if self._output is not None else 0

    def dropout_ms(self) -> float:
        if self._output is None or not self._out_rate:
            return 0.0
        return float(self._output.dropouts()[1]) * 1000.0 / self._out_rate

    def source_dropouts(self) -> tuple[int, ...]:
        if self._output is None:
            return ()
        return tuple(int(count) for count in self._output.source_dropouts())

    def xrun_counts(self) -> tuple[int, int]:
        underruns = 0
        if self._output is not None:
            # the card's xruns, and the periods the ring ran dry while a source had
            # audio queued (the callback fed silence: the card saw nothing wrong)
            underruns = int(self._output.xruns()) + self.dropouts()
        overruns, lost_frames = self.input_counters()
        lost_periods = -(-lost_frames // max(1, self._frames_in))
        return underruns, overruns + lost_periods

    def status(self) -> dict[str, Any]:
        """All the callback's counters and positions (see ``_rtout.c``), for benches."""
        if self._output is None:
            return {}
        result: dict[str, Any] = self._output.status()
        return result

    @property
    def output_rate_hz(self) -> int:
        return self._out_rate
