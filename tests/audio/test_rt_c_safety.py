"""The C extensions refuse what would crash or corrupt, and keep their promises.

Each test here failed on the code before its fix (issue 26, items 1-4): a
SIGFPE that killed the process, a mic wait that ended when the wall clock
moved, a late reader handed a torn period, an int32 array taken as float32.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.fakes.children import run_json_child
from tests.fakes.clockcard import (
    ClockCard,
    ClockCardUnavailable,
    build_plugin,
    child_env,
    write_asoundrc,
)

rtout = pytest.importorskip("huxleyd.audio._rt")
dsp = pytest.importorskip("huxleyd.audio._dsp")

ROOT = Path(__file__).resolve().parents[2]

# The one-liners, each in its own process: before, both died of SIGFPE (exit 136)
UNINITIALISED = {
    "Output.write": "Output.__new__(Output).write(b'\\0\\0\\0\\0')",
    "Input.read": "Input.__new__(Input).read(bytearray(4), .01)",
    "Output.cut": "Output.__new__(Output).cut()",
    "Input.discard": "Input.__new__(Input).discard(0)",
    "Output.start": "Output.__new__(Output).start()",
    # the C feeder's types (issue 26's speaker path): never touched before __init__
    "SourceRing.write_pos": "SourceRing.__new__(SourceRing).write_pos = 1",
    "SourceRing.buffer": "memoryview(SourceRing.__new__(SourceRing))",
    "Feeder.start": "Feeder.__new__(Feeder).start()",
    "Feeder.request": "Feeder.__new__(Feeder).request(bytes(8))",
    "Feeder.peek": "Feeder.__new__(Feeder).peek(bytearray(8), bytearray(8))",
    "Feeder.pop": "Feeder.__new__(Feeder).pop()",
    "Feeder.pending": "Feeder.__new__(Feeder).pending()",
    "Feeder.stop": "Feeder.__new__(Feeder).stop()",
}


@pytest.mark.parametrize("call", sorted(UNINITIALISED))
def test_an_uninitialised_stream_raises_instead_of_killing_the_process(call: str) -> None:
    script = (
        "from huxleyd.audio._rt import Feeder, Input, Output, SourceRing\n"
        "try:\n"
        f"    {UNINITIALISED[call]}\n"
        "except RuntimeError as exc:\n"
        "    print('RuntimeError:', exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, f"{call}: exit {done.returncode} {done.stderr[-500:]}"
    assert "is not open: __init__ did not run" in done.stdout


def test_the_kernel_refuses_an_array_of_the_right_size_and_the_wrong_type() -> None:
    unit = np.linspace(0, 1, 8, dtype=np.float32)
    with pytest.raises(
        TypeError, match=r"buf: expected float32 items \(format 'f'\), got format 'i'"
    ):
        dsp.gain(np.zeros(8, dtype=np.int32), unit, 1.0, 0.5)
    with pytest.raises(TypeError, match="unit: expected float32"):
        dsp.gain(np.zeros(8, dtype=np.float32), np.zeros(8, dtype=np.uint32), 1.0, 0.5)
    buf = np.ones(8, dtype=np.float32)
    dsp.gain(buf, unit, 1.0, 0.5)  # the right types still pass
    assert buf[0] == 1.0


# Once the child calls wall_clock_behind(s) (the streams are running: PortAudio's own
# start waits on the wall clock), the process reads the wall clock s seconds behind
# the kernel's, as after NTP stepped it forward by s during the wait: a deadline
# taken on CLOCK_REALTIME is then long past for the kernel.
WALL_CLOCK_BEHIND = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>
static volatile long behind;
void wall_clock_behind(long seconds) { behind = seconds; }
int clock_gettime(clockid_t id, struct timespec *ts)
{
	static int (*real)(clockid_t, struct timespec *);
	if (!real)
		real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
	int done = real(id, ts);
	if (done == 0 && id == CLOCK_REALTIME)
		ts->tv_sec -= behind;
	return done;
}
"""


def build_clock_shim(directory: Path) -> Path:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the clock shim")
    source = directory / "wallclock.c"
    source.write_text(WALL_CLOCK_BEHIND)
    shim = directory / "wallclock.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(shim), str(source), "-ldl"], check=True)
    return shim


def test_a_wall_clock_step_during_a_mic_wait_does_not_end_it(card: ClockCard) -> None:
    """Item 2: a Pi has no RTC and NTP steps the clock after boot. The wait for the
    next mic period is on CLOCK_MONOTONIC, so a step neither ends it early (before:
    read() returned False at once, the engine called the device lost and reopened
    it) nor stretches it."""
    env = child_env(card.directory)
    shim = build_clock_shim(card.directory)
    env["CLOCK_SHIM"] = str(shim)
    # after what is preloaded already (make sanitize's ASan runtime must stay first)
    env["LD_PRELOAD"] = " ".join(filter(None, [env.get("LD_PRELOAD"), str(shim)]))
    result = run_json_child(["-m", "tests.fakes.rt_child", "wait", "100"], env, timeout_s=60)
    assert result["ok"], result
    assert result["waited_ns"] >= 50_000_000  # it waited for the audio, not for nothing


def test_a_reader_nearly_a_ring_behind_gets_no_torn_period_and_the_loss_is_counted(
    tmp_path: Path,
) -> None:
    """Item 3: the reader is one device period short of a full ring and its copy is
    held half-way while the callback writes over the copy's second half. The copy is
    thrown away, the frames skipped are counted as overwritten, and every period
    handed on is a contiguous piece of the card's ramp (before: torn, nothing counted)."""
    from tests.fakes.rt_child import ramp_pcm

    try:
        build_plugin()
    except ClockCardUnavailable as exc:
        pytest.skip(str(exc))
    card = write_asoundrc(tmp_path, mic_pcm=ramp_pcm())
    result = run_json_child(
        ["-m", "tests.fakes.rt_child", "late", "3"], child_env(card.directory), timeout_s=60
    )
    assert result["torn"] == 0, result
    assert result["overwritten"] > 0, result


def test_a_cut_with_the_ring_nearly_empty_fades_from_full_gain_without_a_click(
    card: ClockCard,
) -> None:
    """A cut when the speaker's ring holds less than the fade (measured: steps 3.6x
    and 10.9x the tone's own). The fade spans what is queued, from gain 1: a shorter
    ramp, never one that starts part way down."""
    from tests.fakes.clockcard import largest_step

    result = run_json_child(
        ["-m", "tests.fakes.rt_child", "drycut", "6"], child_env(card.directory), timeout_s=60
    )
    heard, t0 = card.speaker()
    rate = 48_000
    tone_step = 16384 * 2 * np.pi * 440 / rate  # the tone's own largest step
    steps = []
    for asked in result["asked_ns"]:
        at = (asked - t0) * rate // 10**9
        steps.append(largest_step(heard, at - rate // 100, at + rate // 50) / tone_step)
    assert max(steps) < 1.5, ([round(s, 2) for s in steps], result["queued"])
    # and each is counted: a cut that found less than a fade queued (the ring about to
    # run dry) is the engine behind its lead; the barge-in test judges none of them
    # (queued was read just before the cut: the callback only lowers it meanwhile)
    short = sum(queued < 240 for queued in result["queued"])
    assert short >= 1 and short <= result["short_cuts"] <= len(result["queued"]), result


@pytest.mark.clockcard
def test_the_heard_position_stops_where_the_played_audio_ends(card: ClockCard) -> None:
    """The speaker's heard position (``Output.heard``: the playout clock's source, what
    truncation answers from) counts only ring frames that really went to the DAC, never
    the zeros a dry callback played after them: after each burst has run dry it reads
    exactly what was written, and stays there however long the ring stays dry."""
    result = run_json_child(
        ["-m", "tests.fakes.rt_child", "heard"], child_env(card.directory), timeout_s=60
    )
    for written, seen in zip(result["written"], result["heard"], strict=True):
        assert seen == [written] * len(seen), result


def test_a_source_ring_refuses_positions_that_would_break_the_ring() -> None:
    """The producer cannot publish past a ring ahead of the reader, nor the reader past
    the writer: the C feeder indexes the ring with them, without the GIL."""
    ring = rtout.SourceRing(16)
    with pytest.raises(ValueError, match="write_pos = 17: must be read_pos 0"):
        ring.write_pos = 17
    ring.write_pos = 16
    with pytest.raises(ValueError, match="read_pos = 17: past write_pos 16"):
        ring.read_pos = 17
    with pytest.raises(ValueError, match="capacity 0 is not 1 to 2"):
        rtout.SourceRing(0)
    assert np.frombuffer(ring, dtype=np.int16).shape == (16,)


def test_a_feeder_refuses_what_is_not_an_open_output() -> None:
    rings = tuple(rtout.SourceRing(960) for _ in range(4))
    with pytest.raises(TypeError, match=r"output must be an open _rt\.Output"):
        rtout.Feeder(
            output=rtout.Output.__new__(rtout.Output),
            rings=rings,
            expect_bits=(1, 0, 2, 3),
            state=bytes(8),
            shapes=(),
            taps=None,
            ext=None,
            up=0,
            down=0,
            frames=480,
            rate_hz=24000,
            lead_frames=720,
            report_slots=8,
        )
