"""A push-to-talk turn through the kernel, driven from the other side of each
device: run inside the test VM by image/kernel-test/selftest.sh, as root,
with the system Python (standard library only).

The button is a line of a gpio-sim chip (the board profile's button.pin):
"pressed" is gpio-sim's pull set to pull-down (the daemon asked for the
pull-up), "released" the pull-up again. The LEDs are the profile's
red/green/blue lines (plain on/off): their values are what the daemon drives. The speaker is recorded from the snd-aloop card's
device 1 subdevice 0 (arecord), the question is played into device 1
subdevice 1 (aplay), and the kernel's view of each stream is read from
/proc/asound/Loopback/pcm*/sub*/status.

Prints SELFTEST lines (ok/FAIL/values) and exits with the number of failed
checks. Waits are bounded only as a safety net against a hung daemon; the
one timing that is judged (time to silence after a press) is judged
against a stated allowance for emulation, passed in by the caller.
"""

from __future__ import annotations

import argparse
import array
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

RATE_HZ = 48000
FRAMES_PER_MS = RATE_HZ // 1000
SILENT_SAMPLE = 8
"""|sample| at or below this is silence: the engine writes exact zeros when
nothing plays, and softvol scales zeros to zeros."""
SILENT_RUN_MS = 1000
"""Silence after the press must last this long to count (longer than any pause
between espeak-ng's sentences, shorter than the hold that follows the press)."""
REPLY_MS = 1000
"""Sound the recording must hold between the release and the second press."""
PROC = Path("/proc/asound/Loopback")
fails = 0


def say(text: str) -> None:
    print(f"SELFTEST {text}", flush=True)


def check(name: str, ok: bool, detail: str = "") -> bool:
    global fails
    suffix = f" ({detail})" if detail else ""
    if ok:
        say(f"ok: {name}{suffix}")
    else:
        say(f"FAIL: {name}{suffix}")
        fails += 1
    return ok


def wait_until(predicate: Callable[[], bool], limit_s: float) -> float | None:
    """Seconds until ``predicate`` held (polled every 5 ms), None past ``limit_s``."""
    start = time.monotonic()
    while True:
        if predicate():
            return time.monotonic() - start
        if time.monotonic() - start > limit_s:
            return None
        time.sleep(0.005)


def wait_steady(predicate: Callable[[], bool], hold_s: float, limit_s: float) -> float | None:
    """Seconds until ``predicate`` had held for ``hold_s`` without a break, None
    past ``limit_s``. "Idle" needs this: the thinking blink's dark half and the
    speaking pulse's dark half read as idle lines for 0.15-0.4 s."""
    start = time.monotonic()
    since: float | None = None
    while True:
        now = time.monotonic()
        if predicate():
            since = now if since is None else since
            if now - since >= hold_s:
                return now - start
        else:
            since = None
        if now - start > limit_s:
            return None
        time.sleep(0.005)


class Lines:
    """The gpio-sim lines of the board profile, through gpio-sim's sysfs files."""

    def __init__(self, chip_dir: Path, *, button: int, leds: tuple[int, int, int]) -> None:
        self._button = chip_dir / f"sim_gpio{button}"
        self._leds = [chip_dir / f"sim_gpio{n}" / "value" for n in leds]

    def bias(self) -> str:
        return (self._button / "pull").read_text().strip()

    def button_value(self) -> int:
        return int((self._button / "value").read_text())

    def press(self) -> None:
        (self._button / "pull").write_text("pull-down")

    def release(self) -> None:
        (self._button / "pull").write_text("pull-up")

    def leds(self) -> tuple[int, ...]:
        return tuple(int(p.read_text()) for p in self._leds)


def lines_from_profile(chip_dir: Path, profile: Path) -> Lines:
    """The lines the daemon uses, from the board profile it was given (one list)."""
    table = tomllib.loads(profile.read_text())
    leds = table["leds"]
    return Lines(
        chip_dir,
        button=table["button"]["pin"],
        leds=(leds["red_pin"], leds["green_pin"], leds["blue_pin"]),
    )


LISTENING = (0, 1, 1)
"""Blue (0, 0.2, 1) on plain lines: green and blue lit, red dark."""
IDLE = (0, 0, 0)
SPEAKING_LIT = (0, 1, 0)
"""The green pulse, as plain lines show it: green blinking, red and blue dark."""


def stream_status(pcm: str) -> dict[str, str]:
    """``/proc/asound/Loopback/<pcm>/status`` as key → value ({} when closed)."""
    try:
        text = (PROC / pcm / "status").read_text()
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


class XrunWatch(threading.Thread):
    """Samples the state of every loopback stream every 10 ms and counts XRUN,
    and counts the kernel's triggers of the daemon's streams.

    Debian's kernel has no xrun counter (CONFIG_SND_DEBUG, hence xrun_debug,
    is off), so the state is what the kernel shows; an xrun that ALSA
    recovers from within one sample interval passes unseen by the state (a
    run showed none while the daemon counted 5). The kernel stamps
    ``trigger_time`` at every start and stop of a stream, an xrun's stop and
    the restart after it included, and the stamp stays: a change between two
    samples is a trigger however short the XRUN was. The daemon's streams run
    from its start to its end, so during the turn a trigger is an xrun."""

    STREAMS = ("pcm0p/sub0", "pcm0c/sub1", "pcm1c/sub0", "pcm1p/sub1")
    DAEMON = ("pcm0p/sub0", "pcm0c/sub1")
    """The daemon's speaker and mic streams (the loopback's device 0)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.xruns: dict[str, int] = dict.fromkeys(self.STREAMS, 0)
        self.running: dict[str, int] = dict.fromkeys(self.STREAMS, 0)
        self.triggers: dict[str, int] = dict.fromkeys(self.DAEMON, 0)
        """Changes of ``trigger_time`` seen on the daemon's streams."""
        self._stamps: dict[str, str] = {}

    def run(self) -> None:
        while not self.stop.wait(0.01):
            self.sample()

    def sample(self) -> None:
        """One look at every stream's status."""
        for pcm in self.STREAMS:
            status = stream_status(pcm)
            state = status.get("state", "")
            if state == "XRUN":
                self.xruns[pcm] += 1
            elif state == "RUNNING":
                self.running[pcm] += 1
            stamp = status.get("trigger_time")
            if pcm in self.triggers and stamp:
                self.triggers[pcm] += self._stamps.get(pcm, stamp) != stamp
                self._stamps[pcm] = stamp


class Recorder:
    """arecord on the loopback's device 1 subdevice 0 (through plug: the
    daemon's side sets format and rate): what the daemon played.

    Positions in the recording are counted in the file arecord wrote, not
    from the card's hardware pointer: after an overrun ALSA drops what the
    buffer held and restarts the stream, so the pointer no longer matches
    the file (a run judged a press 5 s away from where it was). The buffer
    is large (BUFFER_US) so that the emulated machine's stalls of a second
    or more do not overrun it; when one does anyway, arecord says so on
    stderr, and each report is kept with the moment it came."""

    PCM = "pcm1c/sub0"
    BUFFER_US = 4_000_000
    """4 s: the daemon's loop stalled for up to 1 s under emulation, and the
    recorder shares that CPU. snd-aloop allows 2 MiB (here 384 KiB)."""
    PERIOD_US = 50_000
    """What arecord reads and writes at a time: the most the file can lag
    behind what arecord has taken from the card (see :meth:`frame_now`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.overruns: list[tuple[float, str]] = []
        """(time.monotonic() when arecord reported it, its line)."""
        self._proc = subprocess.Popen(
            [
                "arecord",
                "-q",
                "-D",
                "plughw:CARD=Loopback,DEV=1,SUBDEV=0",
                "-f",
                "S16_LE",
                "-r",
                str(RATE_HZ),
                "-c",
                "1",
                "-t",
                "raw",
                f"--buffer-time={self.BUFFER_US}",
                f"--period-time={self.PERIOD_US}",
                str(path),
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        self._err: list[str] = []
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            self._err.append(line)
            if "overrun" in line:
                self.overruns.append((time.monotonic(), line.strip()))

    def frame_now(self) -> int:
        """The frame of the recording that the card is at now: the frames
        arecord has written, plus those the card captured that arecord has
        not read yet (``hw_ptr - appl_ptr`` of the capture stream, both
        counted since the stream's last start, so an earlier overrun does
        not skew them). A chunk arecord has read but not yet written is
        missed, so this is at most one period early: a press placed early
        makes the time to silence longer, never shorter."""
        status = stream_status(self.PCM)
        written = self.path.stat().st_size // 2 if self.path.exists() else 0
        pending = int(status.get("hw_ptr", "0")) - int(status.get("appl_ptr", "0"))
        return written + max(pending, 0) * RATE_HZ // self._card_rate_hz()

    def hw_params(self) -> str:
        """The recorder's stream parameters as the kernel holds them (the
        buffer arecord actually got)."""
        try:
            text = (PROC / self.PCM / "hw_params").read_text()
        except OSError:
            return ""
        return " ".join(text.split())

    def _card_rate_hz(self) -> int:
        for line in (PROC / self.PCM / "hw_params").read_text().splitlines():
            if line.startswith("rate:"):
                return int(line.split()[1])
        raise RuntimeError(f"{PROC / self.PCM / 'hw_params'}: no rate")

    def running(self) -> bool:
        return stream_status(self.PCM).get("state") == "RUNNING"

    def stop(self) -> str:
        self._proc.terminate()
        self._proc.wait(timeout=30)
        self._reader.join(timeout=30)
        return "".join(self._err)

    def samples(self) -> array.array[int]:
        data = array.array("h")
        data.frombytes(self.path.read_bytes())
        return data

    def tail_loud(self, ms: int) -> bool:
        """The last ``ms`` of the file hold sound (not silence)."""
        size = self.path.stat().st_size
        want = ms * FRAMES_PER_MS * 2
        if size < want:
            return False
        with self.path.open("rb") as f:
            f.seek(size - want)
            tail = array.array("h")
            tail.frombytes(f.read(want))
        return max(abs(s) for s in tail) > SILENT_SAMPLE * 16


def loud_ms(samples: array.array[int], start: int, end: int) -> int:
    """Milliseconds of 10 ms windows in [start, end) that are not silent."""
    window = 10 * FRAMES_PER_MS
    loud = 0
    for at in range(max(start, 0), min(end, len(samples)) - window + 1, window):
        if max(abs(s) for s in samples[at : at + window]) > SILENT_SAMPLE:
            loud += 10
    return loud


def silence_after(samples: array.array[int], start: int) -> int | None:
    """First frame at or after ``start`` that begins SILENT_RUN_MS of silence."""
    need = SILENT_RUN_MS * FRAMES_PER_MS
    run_start, run = start, 0
    for at in range(start, len(samples)):
        if abs(samples[at]) <= SILENT_SAMPLE:
            if run == 0:
                run_start = at
            run += 1
            if run >= need:
                return run_start
        else:
            run = 0
    return None


def check_lines_at_rest(lines: Lines) -> None:
    """The bias the profile asks for (pull_up = true) reached the kernel line."""
    bias = lines.bias()
    check(
        "button line biased as the profile asks (pull-up)",
        bias == "pull-up",
        f"gpio-sim pull: {bias}",
    )
    check("button line reads released (high)", lines.button_value() == 1)
    idle = wait_steady(lambda: lines.leds() == IDLE, 1.5, 60)
    check(
        "LED lines idle (steady 1.5 s) before the press", idle is not None, f"lines {lines.leds()}"
    )


class Played:
    """How aplay went: its exit status and the start of its complaint."""

    def __init__(self, returncode: int, stderr: str) -> None:
        self.returncode = returncode
        self.stderr = stderr.strip()[:200]


def play(wav: Path) -> Played:
    """``wav`` into the mic side (device 1 subdevice 1), to its end."""
    done = subprocess.run(
        ["aplay", "-q", "-D", "plughw:CARD=Loopback,DEV=1,SUBDEV=1", str(wav)],
        capture_output=True,
        text=True,
        check=False,
    )
    return Played(done.returncode, done.stderr)


def ask(lines: Lines, rec: Recorder, question: Path) -> int:
    """Press, play the question into the mic side while held, release; the
    recording's frame at the release."""
    lines.press()
    lit = wait_until(lambda: lines.leds() == LISTENING, 30)
    detail = f"{lit * 1000:.0f} ms after the press" if lit is not None else f"lines {lines.leds()}"
    check("LED lines show listening after the press", lit is not None, detail)
    played = play(question)
    check("question played into hw:Loopback,1,1 while held", played.returncode == 0, played.stderr)
    still = lines.leds()
    check(
        "LED lines still listening at the end of the question", still == LISTENING, f"lines {still}"
    )
    lines.release()
    return rec.frame_now()


def wait_reply_ms(rec: Recorder, start_frame: int, want_ms: int, limit_s: float) -> int:
    """Wait until the recording holds ``want_ms`` of sound (10 ms windows, as
    :func:`loud_ms` counts them) after ``start_frame``; the count reached.
    Read as the file grows, whole windows only: the press comes once enough
    of the reply was heard, however jerkily an emulated CPU plays it."""
    window_bytes = 10 * FRAMES_PER_MS * 2
    offset, loud = start_frame * 2, 0
    start = time.monotonic()
    while loud < want_ms and time.monotonic() - start < limit_s:
        with rec.path.open("rb") as f:
            f.seek(offset)
            chunk = f.read()
        whole = len(chunk) - len(chunk) % window_bytes
        offset += whole
        loud += loud_ms(array.array("h", chunk[:whole]), 0, whole // 2)
        time.sleep(0.05)
    return loud


def interrupt(lines: Lines, rec: Recorder, released_at: int, stop: Path) -> int:
    """Wait for the reply, press in the middle of it, say "stop" while held,
    release; the recording's frame at the press.

    The second press carries speech, as a user's barge-in does: a hold of
    MUTE_HOLD_S (3 s) with nothing said is the daemon's silent-hold mute, not
    a turn, and an emulated machine can stretch any hold past that."""
    speaking = wait_until(lambda: lines.leds() == SPEAKING_LIT and rec.tail_loud(200), 180)
    detail = (
        f"{speaking:.1f} s after the release" if speaking is not None else f"lines {lines.leds()}"
    )
    check(
        "reply audible on the speaker side (LED green, sound recorded)",
        speaking is not None,
        detail,
    )
    # Into the reply, past its first words: judge_recording wants REPLY_MS of it.
    heard = wait_reply_ms(rec, released_at, REPLY_MS + 500, 60)
    # And in a word, not in a pause between sentences: the press must cut sound.
    in_word = wait_until(lambda: rec.tail_loud(100), 30)
    say(f"pressing again after {heard} ms of the reply, in a word: {in_word is not None}")
    lines.press()
    press_frame = rec.frame_now()
    lit = wait_until(lambda: lines.leds() == LISTENING, 30)
    check("LED lines show listening after the press during the reply", lit is not None)
    spoke = play(stop)
    check("'stop' played into hw:Loopback,1,1 while held", spoke.returncode == 0, spoke.stderr)
    lines.release()
    idle = wait_steady(lambda: lines.leds() == IDLE, 1.5, 240)
    check(
        "LED lines idle (steady 1.5 s) after the second turn",
        idle is not None,
        f"lines {lines.leds()}",
    )
    return press_frame


def recording_whole(rec: Recorder, released_t: float) -> bool:
    """Whether the recording can be judged from the release on: arecord
    reported no overrun after it. An overrun drops what the buffer held, so
    the file would skip from before the gap to after it: a press would read
    closer to the silence than it was, and a sound before the gap would
    count as playing at the press. The test's recorder is the test's own
    problem (hence its large buffer), never a finding about the daemon; an
    overrun before the release costs nothing (positions are counted in the
    file) and is only reported."""
    for at, line in rec.overruns:
        say(f"recorder overrun {at - released_t:+.1f} s from the release: {line}")
    after = [line for at, line in rec.overruns if at >= released_t]
    return check(
        "the recording is whole from the release on (arecord reported no overrun after it)",
        not after,
        f"{len(after)} overrun(s): the recording checks below are not judged" if after else "",
    )


def judge_recording(
    samples: array.array[int], released_at: int, press_frame: int, bound_ms: float
) -> None:
    """The reply is there, and the press silenced it within ``bound_ms``."""
    say(
        f"recorded {len(samples) / RATE_HZ:.1f} s; question released at frame {released_at}, "
        f"pressed again at frame {press_frame}"
    )
    reply_ms = loud_ms(samples, released_at, press_frame)
    check(
        "the reply is there, not silence",
        reply_ms >= REPLY_MS,
        f"{reply_ms} ms of sound before the press",
    )
    # Speech has pauses between words: sound somewhere in the last half second.
    before = loud_ms(samples, press_frame - 500 * FRAMES_PER_MS, press_frame)
    check(
        "the reply was playing at the press", before >= 100, f"{before} ms of the 500 ms before it"
    )
    quiet = silence_after(samples, press_frame)
    if quiet is None:
        check("speaker silent after the press", False, "no second of silence after it")
        return
    to_silence_ms = (quiet - press_frame) / FRAMES_PER_MS
    say(
        f"time to silence: {to_silence_ms:.1f} ms (press to the first of {SILENT_RUN_MS} ms "
        "of silence; the press placed in the file by what arecord had written and had "
        "yet to read at that moment)"
    )
    check(
        f"speaker silent within {bound_ms:.0f} ms of the press",
        to_silence_ms <= bound_ms,
        f"{to_silence_ms:.1f} ms",
    )


def judge_streams(watch: XrunWatch, arecord_err: str, xrun_file: Path) -> None:
    """What the kernel showed of the streams. The daemon's streams' samples in
    XRUN and triggers go to ``xrun_file``: selftest.sh holds them against the
    daemon's counters."""
    say(f"kernel stream states sampled every 10 ms: RUNNING {watch.running}, XRUN {watch.xruns}")
    say(f"kernel triggers of the daemon's streams (trigger_time changes): {watch.triggers}")
    daemon_xruns = sum(watch.xruns[pcm] for pcm in watch.DAEMON)
    xrun_file.write_text(f"{daemon_xruns} {sum(watch.triggers.values())}\n")
    check(
        "the daemon's loopback streams seen running",
        all(watch.running[pcm] > 0 for pcm in watch.DAEMON),
    )
    # The recorder's own overruns (pcm1c/sub0) are judged by when arecord
    # reported them (recording_whole); the question's player has no such account.
    check("the question's player (pcm1p/sub1): no XRUN", not watch.xruns["pcm1p/sub1"])
    say(f"arecord stderr: {arecord_err.strip()[:300] or '(nothing)'}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chip-dir", type=Path, required=True)
    parser.add_argument(
        "--profile", type=Path, required=True, help="the board profile the daemon runs"
    )
    parser.add_argument("--question", type=Path, required=True)
    parser.add_argument("--stop", type=Path, required=True, help="said during the second press")
    parser.add_argument("--record", type=Path, required=True)
    parser.add_argument("--silence-bound-ms", type=float, required=True)
    parser.add_argument("--xrun-file", type=Path, required=True)
    args = parser.parse_args()
    lines = lines_from_profile(args.chip_dir, args.profile)
    check_lines_at_rest(lines)
    watch = XrunWatch()
    watch.start()
    rec = Recorder(args.record)
    check(
        "recorder running on the loopback's device 1, subdevice 0",
        wait_until(rec.running, 30) is not None,
    )
    say(f"recorder hw_params: {rec.hw_params()}")
    released_at = ask(lines, rec, args.question)
    released_t = time.monotonic()
    press_frame = interrupt(lines, rec, released_at, args.stop)
    time.sleep(1.0)
    err = rec.stop()
    watch.stop.set()
    watch.join()
    if recording_whole(rec, released_t):
        judge_recording(rec.samples(), released_at, press_frame, args.silence_bound_ms)
    judge_streams(watch, err, args.xrun_file)
    return fails


if __name__ == "__main__":
    sys.exit(main())
