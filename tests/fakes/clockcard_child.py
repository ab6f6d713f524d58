"""The engine on the clocked fake card, in a child process (``python -m tests.fakes.clockcard_child``).

The parent writes the card's ``.asoundrc`` (:func:`tests.fakes.clockcard.write_asoundrc`)
and runs this module with ``HOME`` pointing at it; each mode prints one JSON
object. Times are ``time.monotonic_ns()``, the card's clock, so the parent can
place every event on the speaker recording.

Modes (``<kind>`` is ``blocking`` — PyAudio blocking I/O, only on a huxleyd from
before issue 39 (the bench's "before") —, ``callback`` — the C
playback callback fed by the Python audio thread (the engine's ``feeder=False``: the
same C mix, to compare) — or ``fed`` — the C callback fed by the C feeder, what the
daemon runs):

- ``bargein <kind> <rate> <cuts>``: speech plays a tone; every ~0.4 s it is
  cut (``flush``); reports press times and the ``audio_end_ms`` of each item.
- ``load <kind> <rate> <seconds> <busy>``: speech and ducked content for
  ``seconds``, with ``busy`` busy Python threads (0, 1, 2…); reports stats.
- ``idle <kind> <rate> <seconds>``: nothing plays; reports CPU seconds used.
- ``first <kind> <rate> <count>``: from idle, a delta arrives; reports when.
- ``paced fed <rate> <replies> <pause_ms> <calm_ms> [burst]``: replies of 1.2 s
  streamed at real-time pace in 40 ms deltas, as a provider that speaks as it goes;
  0.4 s into each, the producer stalls ``pause_ms`` and then sends what it owed at
  once (an event loop that stalled); ``burst``: each reply handed over at once, its
  end marked. The playout buffer's calm stretch is ``calm_ms``. Reports the C
  feeder's status (the target, its steps, the late sources).
- ``stall <kind> <rate> <hold_ms>``: speech plays 2 s of tone; 0.5 s in, a Python
  thread holds the GIL for ``hold_ms`` (the switch interval raised to that), so
  the audio thread cannot refill the speaker; reports when the hold began and
  ended, and the engine's stats.
- ``asked <kind> <rate> <count>``: the idle C feeder is asked (the master gain)
  ``count`` times; reports how often it still said idle right after the request.
- ``heldcut fed <rate> <cuts>``: the engine driven by hand (``step()``: nothing
  drains the C feeder's reports between steps); speech plays, and each cut is
  asked once the callback has played past every report drained. Reports, per
  cut, the ring position the cut answered and the one the playout clock gives
  for the same fade end once every report is drained, and whether the ring held
  less than one fade (the engine's short cut).
- ``fullring fed <rate>``: a speaker ring (170 ms) shallower than the lead asked
  (400 ms), so the feeder meets a full ring at every period; speech plays 2 s.
  Reports the feeder's counters and what of the item was played and written.
- ``lose <kind> <rate>``: speech plays 3 s; 0.5 s in, the speaker's stream is
  reported dead; reports who mixed before, while lost and after the reopen, and
  what of the item was heard.
- ``ladder callback <rate>``: the callback backend alone, opened, widened and
  opened again up its ladder of periods; reports each open's description and
  latency, and what ``widened()`` says at the top.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

RATE_IN_HZ = 24_000


def make_settings(kind: str, rate: int, **more: Any) -> Any:
    from huxleyd.audio.settings import AudioSettings

    return AudioSettings(
        capture_device="hux_mic",
        playback_device="hux_spk",
        device_rate_hz=rate,
        **more,
    )


def make_engine(kind: str, rate: int) -> Any:
    from huxleyd.audio.engine import AudioEngine

    settings = make_settings(kind, rate)
    if kind == "blocking":  # only on an older checkout (bench: HUXLEYD_BENCH_BEFORE_ROOT)
        factory = importlib.import_module("huxleyd.audio.factory")
        if not hasattr(factory, "pyaudio_backend"):
            raise SystemExit("the blocking backend left in issue 39: run it on an older huxleyd")
        return AudioEngine(factory.pyaudio_backend(settings), settings=settings)
    if kind in ("callback", "fed"):
        from huxleyd.audio.factory import callback_backend

        # "callback": the audio thread writes the card's ring (the feeder off, to compare)
        return AudioEngine(callback_backend(settings), settings=settings, feeder=kind == "fed")
    raise SystemExit(f"unknown backend kind {kind!r}")


def tone(seconds: float, freq: float = 440.0, dbfs: float = -6.0) -> bytes:
    t = np.arange(int(seconds * RATE_IN_HZ)) / RATE_IN_HZ
    amp = 32767 * 10 ** (dbfs / 20)
    return (amp * np.sin(2 * np.pi * freq * t)).astype("<i2").tobytes()


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def settle(engine: Any, periods: int) -> None:
    for _ in range(periods):
        await engine.read_mic()


async def bargein(kind: str, rate: int, cuts: int) -> dict[str, Any]:
    engine = make_engine(kind, rate)
    engine.start()
    engine.set_capture_active(True)
    await settle(engine, 25)
    press: list[int] = []
    ends: list[int] = []
    starts: list[int] = []
    short: list[bool] = []  # the cut found less than one fade queued (the engine's count)
    for index in range(cuts):
        item = f"cut{index}"
        starts.append(time.monotonic_ns())
        await engine.source("speech").write(tone(1.0), item_id=item)
        await settle(engine, 15 + index % 5)  # press at varying phases of the period
        await asyncio.sleep((index % 7) * 0.0029)
        before = short_cuts(engine)
        press.append(time.monotonic_ns())
        engine.source("speech").flush()
        short.append(short_cuts(engine) > before)
        ends.append(
            engine.source("speech").played_ms(item)
        )  # what the truncate sends, read at once
        await settle(engine, 10)
    stats = engine.stats()
    engine.close()
    return {
        "press_ns": press,
        "audio_end_ms": ends,
        "write_ns": starts,
        "short_cuts": short,
        **describe(stats),
    }


def short_cuts(engine: Any) -> int:
    """Cuts the speaker's callback was asked while its ring held less than one fade."""
    timed = engine._audio_thread.timed
    return int(timed.out.status().get("short_cuts", 0)) if timed is not None else 0


async def load(kind: str, rate: int, seconds: float, busy: int) -> dict[str, Any]:
    engine = make_engine(kind, rate)
    engine.start()
    engine.set_capture_active(True)
    stop = threading.Event()

    def spin() -> None:  # a skill doing CPU work in pure Python: holds the GIL
        while not stop.is_set():
            sum(i * i for i in range(10_000))

    for _ in range(busy):
        threading.Thread(target=spin, daemon=True).start()
    content, speech = engine.source("content"), engine.source("speech")
    engine.source("content").duck()
    chunk_s = 0.2
    sent = 0.0

    async def feed(source: Any, freq: float) -> None:
        nonlocal sent
        pcm = tone(chunk_s, freq, -12)
        while sent < seconds:
            await source.write(pcm, item_id="x")
            if freq == 440.0:
                sent += chunk_s

    async def mic() -> None:
        while sent < seconds:
            await engine.read_mic()

    await asyncio.gather(feed(speech, 440.0), feed(content, 220.0), mic())
    await engine.source("speech").drained()
    stop.set()
    stats = engine.stats()
    engine.close()
    # mic periods taken beyond one per engine cycle (older engines: none)
    return {**describe(stats), "caught_up": getattr(engine, "caught_up", 0)}


async def idle(kind: str, rate: int, seconds: float) -> dict[str, Any]:
    engine = make_engine(kind, rate)
    engine.start()
    engine.set_capture_active(False)
    await asyncio.sleep(1.0)  # opened and warm
    before_cpu, before = cpu_s(), time.monotonic()
    cycles_before, periods_before = getattr(engine, "cycles", 0), engine.stats().periods
    await asyncio.sleep(seconds)
    used, wall = cpu_s() - before_cpu, time.monotonic() - before
    stats = engine.stats()
    periods = stats.periods - periods_before
    # older engines ran one cycle per period
    cycles = getattr(engine, "cycles", cycles_before + periods) - cycles_before
    # the thread that owns the device holds the sleeper (older engines: the engine; none)
    sleeper = getattr(getattr(engine, "_audio_thread", engine), "_sleeper", None)
    engine.close()
    sleeps = -1 if sleeper is None else sleeper.sleeps
    return {
        "cpu_s": used,
        "wall_s": wall,
        "sleeps": sleeps,
        "idle_cycles": cycles,
        "idle_periods": periods,
        **describe(stats),
    }


async def first(kind: str, rate: int, count: int) -> dict[str, Any]:
    engine = make_engine(kind, rate)
    engine.start()
    engine.set_capture_active(False)
    await asyncio.sleep(0.5)
    sent: list[int] = []
    for index in range(count):
        await asyncio.sleep(0.3 + (index % 5) * 0.0037)  # idle, at varying phases
        sent.append(time.monotonic_ns())
        await engine.source("speech").write(tone(0.1), item_id=f"d{index}")
        await engine.source("speech").drained()
    stats = engine.stats()
    engine.close()
    return {"sent_ns": sent, **describe(stats)}


async def streamed(
    kind: str, rate: int, count: int, lone: int, reply_ms: int = 400
) -> dict[str, Any]:
    """A reply as a provider streams it: ``reply_ms`` of 40 ms deltas handed over back
    to back (sent ahead of real time), its end marked (drained) after the last;
    ``lone``: one 40 ms delta alone, no end marked, nothing after it (the playout
    buffer's worst case: it waits twice its target). ``sent_ns``: each reply's first
    delta."""
    engine = make_engine(kind, rate)
    engine.start()
    engine.set_capture_active(False)
    await asyncio.sleep(0.5)
    sent: list[int] = []
    speech = engine.source("speech")
    for index in range(count):
        await asyncio.sleep(0.3 + (index % 5) * 0.0037)  # idle, at varying phases
        reply = tone(0.04 if lone else reply_ms / 1000)
        sent.append(time.monotonic_ns())
        for at in range(0, len(reply), 1920):  # 40 ms of PCM16 at 24 kHz
            await speech.write(reply[at : at + 1920], item_id=f"r{index}")
        if lone:
            await asyncio.sleep(1.5)  # twice the hold's target, and its playing
        else:
            await speech.drained()
    stats = engine.stats()
    engine.close()
    return {"sent_ns": sent, **describe(stats)}


async def paced(
    kind: str, rate: int, replies: int, pause_ms: int, calm_ms: int, burst: bool
) -> dict[str, Any]:
    from huxleyd.audio import fed

    fed.HOLD_CALM_MS = calm_ms  # read when the feeder starts (the device's open)
    engine = make_engine(kind, rate)
    engine.start()
    engine.set_capture_active(False)
    await asyncio.sleep(0.5)
    speech = engine.source("speech")
    for index in range(replies):
        reply = tone(1.2)
        begun = time.monotonic()
        for k, at in enumerate(range(0, len(reply), 1920)):  # 40 ms of PCM16 at 24 kHz
            due = begun + k * 0.04 + (pause_ms / 1000 if k >= 10 else 0.0)  # 0.4 s in
            if not burst:
                await asyncio.sleep(max(0.0, due - time.monotonic()))
            await speech.write(reply[at : at + 1920], item_id=f"p{index}")
        await speech.drained()
        await asyncio.sleep(0.4 + 0.3)  # its held start's worth still plays, then a gap
    status = engine._audio_thread.fed.status()
    stats = engine.stats()
    engine.close()
    return {"feeder": status, **describe(stats)}


async def stall(kind: str, rate: int, hold_ms: int) -> dict[str, Any]:
    engine = make_engine(kind, rate)
    engine.start()
    engine.set_capture_active(False)
    speech = engine.source("speech")
    await speech.write(tone(2.0), item_id="s")
    await asyncio.sleep(0.5)
    span: list[int] = []

    def hold() -> None:  # pure Python for hold_ms: nobody else gets the GIL meanwhile
        sys.setswitchinterval(hold_ms / 1000)
        span.append(time.monotonic_ns())
        until = span[0] + hold_ms * 1_000_000
        while time.monotonic_ns() < until:
            pass
        span.append(time.monotonic_ns())
        sys.setswitchinterval(0.005)

    holder = threading.Thread(target=hold)
    holder.start()
    await asyncio.to_thread(holder.join)
    await speech.drained()
    stats = engine.stats()
    mix = engine.mix_path
    played, written = speech.channel.playout.played_pos, speech.write_pos
    engine.close()
    return {"hold_ns": span, "mix": mix, "played": played, "written": written, **describe(stats)}


async def lose(kind: str, rate: int) -> dict[str, Any]:
    """3 s of speech; 0.5 s in, the speaker's stream is reported dead (as PortAudio's
    finished callback reports an unplugged card's); the engine closes the device in
    its own thread, reopens it, and plays the rest."""
    from huxleyd.audio.engine import AudioEngine
    from huxleyd.audio.factory import callback_backend

    # the reopen waits 1 s: the state listener (on the idle loop) sees the lost state first
    settings = make_settings(kind, rate, reopen_interval_s=1.0)
    engine = AudioEngine(callback_backend(settings), settings=settings)
    engine.start()
    engine.set_capture_active(False)
    speech = engine.source("speech")
    await speech.write(tone(3.0), item_id="s")
    await asyncio.sleep(0.5)
    changes: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
    engine.on_device_state(lambda state: changes.put_nowait((state.value, engine.mix_path)))
    paths = [("open", engine.mix_path)]
    fed: Any = engine._audio_thread.fed
    alive, deaths = fed.alive, [True]
    # the next check finds the stream dead (once); the audio thread then closes it
    fed.alive = lambda: not deaths.pop() if deaths else alive()
    while len(paths) == 1 or paths[-1][0] != "open":
        paths.append(await changes.get())
    await speech.drained()
    stats = engine.stats()
    played = speech.played_ms("s")
    engine.close()
    return {"mix_paths": paths, "played_ms": played, **describe(stats)}


async def asked(kind: str, rate: int, count: int) -> dict[str, Any]:
    """Idle C feeder; ``count`` times a request (the master gain), then at once: does the
    feeder still say idle? It must not: the audio thread would sleep on that."""
    engine = make_engine(kind, rate)
    engine.start()
    engine.set_capture_active(False)
    fed: Any = engine._audio_thread.fed
    stale = 0
    for i in range(count):
        # the feeder (a C thread: no event to await) took the last request, idle again
        while not fed.idle():  # noqa: ASYNC110
            await asyncio.sleep(0.005)
        mixed = fed.status()["periods"]
        engine.set_master_gain(0.5 + (i % 2) * 0.5)  # a change (1.0 at start): publish, then...
        # ...asked in the same breath: idle is stale unless the feeder mixed meanwhile
        # (then it took the request, ramped and is truly idle again)
        stale += fed.idle() and fed.status()["periods"] == mixed
    engine.close()
    return {"stale_idle": stale, "asked": count}


async def fullring(kind: str, rate: int) -> dict[str, Any]:
    """The feeder against a ring it can never fill to its lead (see the module)."""
    from huxleyd.audio.engine import AudioEngine
    from huxleyd.audio.factory import callback_backend

    settings = make_settings(kind, rate, output_lead_ms=400)
    backend = callback_backend(settings)
    backend.ring_ms = 100  # 4800 frames, a power of two: 8192 (170 ms)
    engine = AudioEngine(backend, settings=settings)
    engine.start()
    engine.set_capture_active(False)
    speech = engine.source("speech")
    await speech.write(tone(2.0), item_id="f")
    try:  # a guard, not a bound: the 2 s item is heard in 2 s, or never
        await asyncio.wait_for(speech.drained(), 30)
        drained = True
    except TimeoutError:
        drained = False
    fed: Any = engine._audio_thread.fed
    counters = fed.status()
    stats, mix = engine.stats(), engine.mix_path
    played, written = speech.channel.playout.played_pos, speech.write_pos
    engine.close()
    return {
        "mix": mix,
        "drained": drained,
        "full": counters.get("full", 0),  # older feeders: not counted
        "overflow": counters["overflow"],
        "played": played,
        "written": written,
        **describe(stats),
    }


async def heldcut(kind: str, rate: int, cuts: int) -> dict[str, Any]:
    """Cuts answered while the feeder's newest reports are not drained (see the module)."""
    from huxleyd.audio.types import SOURCES

    engine = make_engine(kind, rate)
    engine.set_capture_active(False)
    engine.step()  # opens the device; the feeder starts
    audio: Any = engine._audio_thread
    timed, clock = audio.timed, audio._playout
    out = timed.out
    ends: list[int] = []
    cut = out.cut

    def recorded_cut() -> Any:  # the fade's end the engine answered for
        answer = cut()
        ends.append(answer[1])
        return answer

    out.cut = recorded_cut
    speech = engine.source("speech")
    index = SOURCES.index("speech")  # the playout clock's order (the engine's)
    answered, truth, short = [], [], []
    for n in range(cuts):
        await speech.write(tone(1.0), item_id=f"held{n}")
        engine.step()  # drain what the feeder logged so far; then nothing more is
        drained = out.written_frames()
        frames = clock.dev_frames
        while out.heard_frame() < drained + 2 * frames:  # noqa: ASYNC110 - a C callback
            await asyncio.sleep(0.002)
        before = short_cuts(engine)
        speech.flush()
        short.append(short_cuts(engine) > before)
        answered.append(speech._playout.heard_floor)
        engine.step()  # now every report of the frames up to the fade's end is drained
        positions = clock.positions_at(ends[-1])
        truth.append(None if positions is None else positions[index])
        engine.run_periods(3)
    engine.close()
    return {"answered": answered, "truth": truth, "short": short, "fade_end": ends}


def ladder(rate: int) -> dict[str, Any]:
    from huxleyd.audio.factory import callback_backend

    backend = callback_backend(make_settings("callback", rate))
    opens: list[dict[str, Any]] = []
    while True:
        fmt = backend.open(period_ms=20)
        opens.append({"description": fmt.description, "latency_ms": fmt.output_latency_s * 1e3})
        time.sleep(0.1)
        backend.close()
        if not backend.widen("a test's request"):
            break
    return {"opens": opens, "widened": backend.widened()}


def describe(stats: Any) -> dict[str, Any]:
    return {
        "periods": stats.periods,
        "underruns": stats.underruns,
        "overruns": stats.overruns,
        "late_periods": stats.late_periods,
        "mic_frames_dropped": stats.mic_frames_dropped,
        "source_gaps": stats.source_gaps,
        "speaker_dropouts": getattr(stats, "speaker_dropouts", 0),  # older engines: blind
        "source_dropouts": dict(getattr(stats, "source_dropouts", ())),
        "faults": getattr(stats, "faults", 0),  # older engines (the bench's "before")
        "device_state": stats.device_state.value,
        "output_latency_ms": stats.output_latency_ms,
        "period_widened": getattr(stats, "period_widened", ""),  # older engines: never
    }


def main(argv: list[str]) -> int:
    mode, kind, rate = argv[0], argv[1], int(argv[2])
    if mode == "bargein":
        result = asyncio.run(bargein(kind, rate, int(argv[3])))
    elif mode == "load":
        result = asyncio.run(load(kind, rate, float(argv[3]), int(argv[4])))
    elif mode == "idle":
        result = asyncio.run(idle(kind, rate, float(argv[3])))
    elif mode == "first":
        result = asyncio.run(first(kind, rate, int(argv[3])))
    elif mode == "streamed":
        more = [int(argv[5])] if len(argv) > 5 else []
        result = asyncio.run(streamed(kind, rate, int(argv[3]), int(argv[4]), *more))
    elif mode == "paced":
        burst = argv[6:] == ["burst"]
        result = asyncio.run(paced(kind, rate, int(argv[3]), int(argv[4]), int(argv[5]), burst))
    elif mode == "asked":
        result = asyncio.run(asked(kind, rate, int(argv[3])))
    elif mode == "ladder":
        result = ladder(rate)
    elif mode == "fullring":
        result = asyncio.run(fullring(kind, rate))
    elif mode == "heldcut":
        result = asyncio.run(heldcut(kind, rate, int(argv[3])))
    elif mode == "lose":
        result = asyncio.run(lose(kind, rate))
    elif mode == "stall":
        result = asyncio.run(stall(kind, rate, int(argv[3])))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    import huxleyd

    result["huxleyd"] = str(Path(huxleyd.__file__).parent)  # which code ran
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
