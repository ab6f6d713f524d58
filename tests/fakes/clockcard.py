"""A fake sound card with a real clock: the project's ALSA ioplug plugin, built on demand.

ALSA's ``file`` plugin never waits and never xruns, so it can only count
samples. ``hw/clockcard/pcm_clockcard.c`` behaves like a DMA card instead:
its pointer moves with the monotonic clock in whole periods, it really
underruns and overruns (logged with their time), ``snd_pcm_drop`` discards
what was not heard, and the playback recording is time-stamped (sample ``i``
was heard at ``t0 + i / rate``, ``t0`` from the log).

:func:`build_plugin` compiles it with the system C compiler (needs
``libasound2-dev``, which ``make setup`` installs) into ``build/clockcard``;
:func:`write_asoundrc` writes an ``.asoundrc`` with ``hux_spk`` / ``hux_mic``
on it as the ``default`` pair. PortAudio reads it through ``HOME``, so code
that uses the card runs in a child process (see ``tests/fakes/clockcard_child.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "hw" / "clockcard" / "pcm_clockcard.c"
BUILD_DIR = ROOT / "build" / "clockcard"
PLUGIN_NAME = "libasound_module_pcm_clockcard.so"


class ClockCardUnavailable(RuntimeError):
    """No C compiler or no ALSA headers: the card cannot be built here."""


def build_plugin(build_dir: Path = BUILD_DIR) -> Path:
    """Compile the plugin unless an up-to-date build exists; return the ``.so`` path."""
    target = build_dir / PLUGIN_NAME
    if target.exists() and target.stat().st_mtime >= SOURCE.stat().st_mtime:
        return target
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise ClockCardUnavailable("no C compiler (cc) to build the clocked fake card")
    build_dir.mkdir(parents=True, exist_ok=True)
    # build beside the target and rename: two test processes may build at once
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=build_dir)
    os.close(fd)
    # PIC: alsa-lib's plugin symbol macros need it to export the versioned entry point
    command = [
        cc,
        "-O2",
        "-Wall",
        "-Wextra",
        "-DPIC",
        "-fPIC",
        "-shared",
        "-o",
        tmp,
        str(SOURCE),
        "-lasound",
        "-lm",
        "-lpthread",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        os.unlink(tmp)
        raise ClockCardUnavailable(f"cannot build {SOURCE.name}: {done.stderr.strip()[-2000:]}")
    os.chmod(tmp, 0o755)  # mkstemp made it private; ALSA loads it as any user
    os.replace(tmp, target)
    return target


def _period(prepare: str) -> int:
    """The period of a ``prepare`` line (``prepare NS rate=R period=P buffer=B``)."""
    fields = dict(word.split("=", 1) for word in prepare.split()[2:])
    return int(fields["period"])


def stream_changes(periods: list[int]) -> tuple[int, int]:
    """(reopens, widenings) in a run's :meth:`ClockCard.stream_periods`: a stream at
    a longer period than the last is the engine widening its period
    (:mod:`huxleyd.audio.xrun_watch`), one at the same period a device reopened."""
    widenings = sum(after > before for before, after in pairwise(periods))
    return max(len(periods) - 1, 0) - widenings, widenings


@dataclass(frozen=True, slots=True)
class ClockCard:
    """One card's files in ``directory``."""

    directory: Path

    @property
    def recording(self) -> Path:
        return self.directory / "speaker.raw"

    @property
    def mic_file(self) -> Path:
        return self.directory / "mic.raw"

    @property
    def room_file(self) -> Path:
        return self.directory / "room.f32"

    @property
    def speaker_log(self) -> Path:
        return self.directory / "speaker.log"

    @property
    def mic_log(self) -> Path:
        return self.directory / "mic.log"

    def events(self, log: Path) -> list[tuple[str, int]]:
        if not log.exists():
            return []
        lines = (line.split() for line in log.read_text().splitlines())
        return [(words[0], int(words[1])) for words in lines]

    def geometry(self, log: Path) -> list[str]:
        """The ``prepare`` lines: rate, period and buffer the application chose."""
        if not log.exists():
            return []
        return [line for line in log.read_text().splitlines() if line.startswith("prepare")]

    def prepared_periods(self, log: Path) -> list[int]:
        """The period (frames) of each ``prepare`` the card logged."""
        return [_period(line) for line in self.geometry(log)]

    def stream_periods(self, log: Path) -> list[int]:
        """The period (frames) of each stream the application opened, in order.

        PortAudio opens the PCM several times to open one stream (it probes), then
        prepares it, and prepares it again at each xrun's recovery: a run of
        ``open`` lines and the ``prepare`` after it are one stream."""
        if not log.exists():
            return []
        periods: list[int] = []
        opened = False
        for line in log.read_text().splitlines():
            if line.startswith("open"):
                opened = True
            elif line.startswith("prepare") and opened:
                opened = False
                periods.append(_period(line))
        return periods

    def xruns(self) -> tuple[int, int]:
        """(speaker underruns, mic overruns) the card saw."""
        spk = sum(1 for event, _ in self.events(self.speaker_log) if event == "xrun")
        mic = sum(1 for event, _ in self.events(self.mic_log) if event == "xrun")
        return spk, mic

    def foreign(self) -> list[tuple[int, int]]:
        """(ns, thread id) of calls into the running speaker PCM by a thread other than
        its writer (the first 16 per prepare): each takes the lock the writer needs."""
        if not self.speaker_log.exists():
            return []
        lines = (line.split() for line in self.speaker_log.read_text().splitlines())
        return [(int(w[1]), int(w[2])) for w in lines if w[0] == "foreign"]

    def mic_starts(self) -> list[tuple[int, int]]:
        """Each capture start: (its time in ns, the ``mic.raw`` frame it captured first).
        Frame ``f`` of the file, read in that run, was captured at
        ``ns + (f - first) / rate``."""
        if not self.mic_log.exists():
            return []
        lines = (line.split() for line in self.mic_log.read_text().splitlines())
        return [(int(w[1]), int(w[2])) for w in lines if w[0] == "start" and len(w) > 2]

    def speaker(self) -> tuple[np.ndarray, int]:
        """The recording (int16, mono or interleaved) and ``t0``: when sample 0 was heard (ns)."""
        t0 = next(ns for event, ns in self.events(self.speaker_log) if event == "t0")
        return np.fromfile(self.recording, dtype="<i2"), t0


def write_asoundrc(
    directory: Path, *, mic_pcm: bytes = b"", room: np.ndarray | None = None
) -> ClockCard:
    """Write ``directory/.asoundrc``: ``hux_spk``/``hux_mic`` on the clocked card, as default.

    ``room``: the taps (at the card's rate, the delay as leading zeros:
    :func:`tests.fakes.wake_audio.room_taps`) through which the mic also hears
    what the speaker plays, by the card's clock."""
    plugin = build_plugin()
    card = ClockCard(directory)
    card.mic_file.write_bytes(mic_pcm)
    room_line = ""
    if room is not None:
        room.astype("<f4").tofile(card.room_file)
        room_line = f'room "{card.room_file}"'

    for old in (card.speaker_log, card.mic_log, card.recording):
        old.unlink(missing_ok=True)  # the card appends: a run starts from nothing
    (directory / ".asoundrc").write_text(
        f"""
pcm_type.clockcard {{
    lib "{plugin}"
}}
pcm.hux_spk {{
    type clockcard
    file "{card.recording}"
    log "{card.speaker_log}"
}}
pcm.hux_mic {{
    type clockcard
    infile "{card.mic_file}"
    log "{card.mic_log}"
    {room_line}
}}
pcm.!default {{
    type asym
    playback.pcm "hux_spk"
    capture.pcm "hux_mic"
}}
"""
    )
    return card


def child_env(directory: Path) -> dict[str, str]:
    """The environment of a child that should see this card as its sound card."""
    env = dict(os.environ, HOME=str(directory))
    env.pop("ALSA_CONFIG_PATH", None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def silent_from(samples: np.ndarray, start: int, *, rate_hz: int, threshold: int = 160) -> int:
    """The first index at or after ``start`` from which the recording stays below
    ``threshold`` (about -46 dBFS) for at least 10 ms; ``len(samples)`` if never."""
    hold = rate_hz // 100
    loud = np.flatnonzero(np.abs(samples[start:].astype(np.int32)) >= threshold)
    if len(loud) == 0:
        return start
    gaps = np.diff(loud)
    long_gap = np.flatnonzero(gaps > hold)
    if len(long_gap) == 0:
        last = int(loud[-1]) + start + 1
        return last if len(samples) - last >= hold else len(samples)
    return int(loud[long_gap[0]]) + start + 1


def speaker_silences(
    samples: np.ndarray, *, rate_hz: int, threshold: int = 160
) -> tuple[int, float]:
    """(count, total ms) of the silences inside what the speaker played: runs below
    ``threshold`` longer than 1 ms between the first and the last loud sample. The
    engine's test tones never go quiet for that long (a zero crossing is a sample
    or two), so each is the speaker fed zeros: a dropout the listener heard."""
    spans = silence_spans(samples, rate_hz=rate_hz, threshold=threshold)
    return len(spans), float(sum(n for _, n in spans)) * 1000 / rate_hz


def silence_spans(
    samples: np.ndarray, *, rate_hz: int, threshold: int = 160
) -> list[tuple[int, int]]:
    """The silences :func:`speaker_silences` counts: (first quiet index, length in samples)."""
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) >= threshold)
    if len(loud) < 2:
        return []
    gaps = np.diff(loud) - 1  # quiet samples between consecutive loud ones
    long = np.flatnonzero(gaps > rate_hz // 1000)
    return [(int(loud[i]) + 1, int(gaps[i])) for i in long]


def longest_gap(samples: np.ndarray, start: int, end: int, *, threshold: int = 160) -> int:
    """The longest run of samples below ``threshold`` in ``[start, end)``, in samples:
    inside a tone the engine kept fed, any run longer than a zero crossing is the
    speaker going silent (the card is fed zeros when the callback's ring runs dry)."""
    piece = np.abs(samples[max(start, 0) : end].astype(np.int32)) < threshold
    if not piece.any():
        return 0
    edges = np.flatnonzero(np.diff(np.concatenate([[0], piece.astype(np.int8), [0]])))
    return int((edges[1::2] - edges[::2]).max())


def longest_zeros(samples: np.ndarray, start: int, end: int) -> int:
    """The longest run of exact zeros in ``[start, end)``: the callback feeding the card
    silence (its ring dry, or nothing written yet). A tone or a fade loud enough to
    reach ``end`` (at least 160) moves several units a sample: at most one zero in a row."""
    piece = samples[max(start, 0) : end] == 0
    if not piece.any():
        return 0
    edges = np.flatnonzero(np.diff(np.concatenate([[0], piece.astype(np.int8), [0]])))
    return int((edges[1::2] - edges[::2]).max())


@dataclass(frozen=True, slots=True)
class Cut:
    """One barge-in of a ``bargein`` run, placed on the card's recording."""

    at: int
    """Recording index of the press."""
    silent: int
    """Recording index from which the speaker stayed silent."""
    heard_ms: float
    """What the card heard of the item, onset to silence."""
    end_ms: float
    """What the engine said was heard (the truncate's ``audio_end_ms``)."""
    kept: bool
    """The item's tone reached the card without a gap before the press: the
    machine ran the engine in time, so this cut can be judged. A gap is the
    speaker fed silence, before the press or between it and the silence (a loaded
    machine; an underrun since issue 26): the card
    then heard the item for longer than it lasts (measured once: 306.8 ms heard,
    232 ms sent, at load 5 on a 2-core CI host). Nor was a cut kept that found
    the speaker's ring holding less than one fade (the engine's ``short_cuts``):
    the ring was about to run dry, and the fade spanned only what was queued."""


def bargein_cuts(card: ClockCard, result: dict[str, Any], *, rate_hz: int) -> list[Cut]:
    """Each cut of a ``bargein`` child's ``result``, as the card's recording has it."""
    heard, t0 = card.speaker()
    cuts = []
    shorts = result.get("short_cuts") or [False] * len(result["press_ns"])  # older engines
    for press, wrote, end_ms, short in zip(
        result["press_ns"], result["write_ns"], result["audio_end_ms"], shorts, strict=True
    ):
        at = (press - t0) * rate_hz // 10**9
        silent = silent_from(heard, at, rate_hz=rate_hz)
        start = (wrote - t0) * rate_hz // 10**9
        onset = start + int(np.flatnonzero(np.abs(heard[start:]) >= 160)[0])
        # 0.5 ms: a zero crossing. A short cut is a gap the cut hid: the ring held less
        # than the fade, so it would have run dry there, and the fade could only be as
        # long as what was queued (measured once: a 6.8 ms-old tone, a step of 1121)
        kept = longest_gap(heard, onset, at) <= rate_hz // 2000 and not short
        # and none between the press and the silence: the tone not yet heard at the
        # press (it reached the card late), or the ring run dry before the cut took
        # (both measured under stress-ng: steps of 1011 and 9017, judged kept before)
        kept = kept and longest_zeros(heard, at, silent) <= 2
        heard_ms = (silent - onset) * 1000 / rate_hz
        cuts.append(Cut(at, silent, heard_ms, float(end_ms), kept))
    return cuts


def largest_step(samples: np.ndarray, start: int, end: int) -> int:
    """The largest sample-to-sample jump in ``[start, end)``: a click is a big one."""
    piece = samples[max(start, 0) : end].astype(np.int32)
    return int(np.abs(np.diff(piece)).max()) if len(piece) > 1 else 0


CHILD = Path(__file__).resolve().parent / "clockcard_child.py"


def freeze_once(
    directory: Path, kind: str, *, stop_s: float = 0.1, pythonpath: str | None = None
) -> tuple[float, int]:
    """Freeze the whole daemon (SIGSTOP) for ``stop_s`` while it plays speech and
    media: a real underrun at the card. Returns (the longest silence once it runs
    again, in ms; stream reopens after the first start): what the recovery cost.

    ``pythonpath`` runs another checkout's ``huxleyd`` (the bench's "before").
    """
    run = freeze_run(directory, kind, stop_s=stop_s, pythonpath=pythonpath)
    return run.silence_ms, run.reopens


@dataclass(frozen=True, slots=True)
class Freeze:
    """One freeze of the daemon and what the card and the kernel saw of it."""

    silence_ms: float
    """The longest silence once the daemon ran again: what the recovery cost."""
    reopens: int
    """Streams reopened at the same period after the first (never a matter of load)."""
    disturbed: str | None
    """Why this run says nothing about the recovery (the machine did not run the
    thawed daemon in time), or None: the run was kept and can be judged."""
    card_xruns: tuple[int, int] = (0, 0)
    """(speaker underruns, mic overruns) in the card's log."""
    stats: dict[str, Any] = field(default_factory=dict)
    """The engine's own account at the end (``clockcard_child.describe``)."""


RECOVERY_WINDOW_S = 0.3
"""After the thaw, the span over which the kernel's run-queue wait is read."""
RUN_DELAY_KEPT_MS = 10.0
"""More run-queue wait than this in the window (summed over the daemon's threads):
the machine did not keep time. An idle 2-core machine shows 0.2-7 ms."""


def run_delay_ns(pid: int) -> int | None:
    """Nanoseconds the process's threads waited for a CPU so far (the kernel's
    ``/proc/<pid>/task/*/schedstat``, second field), or None where it is not kept."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for task in tasks:
        try:
            fields = Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()
        except OSError:
            continue  # a thread that ended meanwhile
        total += int(fields[1])
    return total


def freeze_run(
    directory: Path, kind: str, *, stop_s: float = 0.1, pythonpath: str | None = None
) -> Freeze:
    """:func:`freeze_once`, with whether the machine kept time around the thaw.

    A loaded machine may let the thawed daemon wait for a CPU, and that wait
    reads as a long recovery. The kernel says when it happened (the threads'
    run-queue wait over the recovery window). The card's xrun count is no such
    sign here: the blocking stream underruns twice on every freeze, idle or not.
    """
    card = write_asoundrc(directory)
    env = child_env(directory)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    child = subprocess.Popen(
        [sys.executable, str(CHILD), "load", kind, "48000", "8", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    waited_ns: int | None = None
    try:
        for _ in range(1000):  # until the speaker has played a second (the card says)
            time.sleep(0.01)
            starts = [ns for event, ns in card.events(card.speaker_log) if event == "start"]
            if starts and time.monotonic_ns() - starts[0] > 1_000_000_000:
                break
        os.kill(child.pid, signal.SIGSTOP)
        time.sleep(stop_s)
        before = run_delay_ns(child.pid)
        os.kill(child.pid, signal.SIGCONT)
        time.sleep(RECOVERY_WINDOW_S)
        after = run_delay_ns(child.pid)
        if before is not None and after is not None:
            waited_ns = after - before
    finally:
        out, _ = child.communicate(timeout=120)
    lines = out.decode().strip().splitlines()
    stats: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    events = card.events(card.speaker_log)
    heard, t0 = card.speaker()
    xruns = [ns for event, ns in events if event == "xrun"]
    reopens, widened = stream_changes(card.stream_periods(card.speaker_log))
    # A widened period is the engine's answer to a card that xran again and again
    # after the freeze's one xrun: the machine did not keep time (a loaded host).
    disturbed = _freeze_disturbed(waited_ns) or (
        f"the engine widened its period {widened} time(s): {stats.get('period_widened')}"
        if widened
        else None
    )
    if not xruns:
        return Freeze(0.0, reopens, disturbed, card.xruns(), stats)
    # The card notes the xrun when the daemon runs again (its pointer is read): the
    # longest silence in the recovery window from there is what the recovery cost.
    # Only that window: a gap later in the run is not the recovery's, and the
    # kernel's wait was read over that window only.
    rate = 48000
    at = (xruns[0] - t0) * rate // 10**9
    fade = len(heard) - rate // 2  # the end of the run fades out: not an outage
    end = min(fade, at + int(RECOVERY_WINDOW_S * rate))
    quiet = np.concatenate([[False], np.abs(heard[at:end]) < 160, [False]])
    edges = np.flatnonzero(np.diff(quiet.astype(np.int8)))
    longest = int((edges[1::2] - edges[::2]).max()) if len(edges) else 0
    return Freeze(longest * 1000 / rate, reopens, disturbed, card.xruns(), stats)


def _freeze_disturbed(waited_ns: int | None) -> str | None:
    if waited_ns is not None and waited_ns > RUN_DELAY_KEPT_MS * 1e6:
        return f"the kernel kept the thawed daemon waiting {waited_ns / 1e6:.1f} ms for a CPU"
    return None
