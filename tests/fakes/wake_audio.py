"""Audio for the wake-word tests, made by the test itself: espeak-ng speech,
synthetic music and noise, and a synthetic room (the speaker heard by the mic).

espeak-ng is a system dependency (scripts/ensure-system-deps.sh: the
simulator's voice). Its output is 22,050 Hz; everything here is resampled
with the daemon's own whole-buffer resampler to the rate asked for.
"""

from __future__ import annotations

import functools
import io
import os
import subprocess
import wave

import numpy as np

from huxleyd.pcm import resample

VOICES = ("en", "en-us", "en-gb-x-rp", "en-029", "en-gb-scotland", "en+f3", "en+m3")
"""espeak-ng English voices (with two variants) that say "okay nabu" well enough."""
SPEEDS = (140, 175, 210)
"""Words per minute: slow, espeak's default, fast."""

CHATTER = (
    "the weather today is cloudy with a chance of rain in the afternoon",
    "please remember to buy milk bread and eggs on the way home",
    "the meeting has been moved to thursday at half past three",
    "I think the book you lent me was really quite good",
    "turn left at the next corner and then keep going straight",
    "the train to the airport leaves every twenty minutes",
    "okay so what are we having for dinner tonight then",
    "a banana a cup of tea and a piece of toast with butter",
    "can you hear the birds singing outside the kitchen window",
    "nobody knows where the old map of the village went",
    "the radio said the roads are busy because of the holiday",
    "my favourite number is eleven and my favourite colour is blue",
)
"""Non-wake speech, including near misses ("okay so", "banana", "know")."""


@functools.cache
def espeak(text: str, voice: str = "en", speed: int = 175, rate_hz: int = 24_000) -> np.ndarray:
    """``text`` spoken by espeak-ng, int16 mono at ``rate_hz``."""
    # not under a preloaded sanitizer runtime (make sanitize): espeak-ng hangs in it,
    # and runs none of our C
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    out = subprocess.run(
        ["espeak-ng", "-v", voice, "-s", str(speed), "--stdout", text],
        capture_output=True,
        check=True,
        timeout=60,
        env=env,
    ).stdout
    with wave.open(io.BytesIO(out)) as wav:
        pcm = np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")
        source_hz = wav.getframerate()
    return resample(pcm, source_hz, rate_hz).astype(np.int16)


def music(seconds: float, rate_hz: int = 24_000, *, seed: int = 0) -> np.ndarray:
    """Chords of decaying harmonic notes over a soft beat: music-like, at about -20 dBFS."""
    rng = np.random.default_rng(seed)
    n = int(seconds * rate_hz)
    out = np.zeros(n)
    note_len = int(0.25 * rate_hz)
    t = np.arange(note_len) / rate_hz
    envelope = np.exp(-t * 6.0)
    for start in range(0, n - note_len, note_len):
        for _ in range(3):
            f0 = 110.0 * 2 ** (rng.integers(0, 36) / 12)
            note = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 5))
            out[start : start + note_len] += 0.08 * note * envelope
        if (start // note_len) % 2 == 0:  # a kick on every other note
            out[start : start + note_len // 4] += (
                0.2 * rng.standard_normal(note_len // 4) * (envelope[: note_len // 4])
            )
    return np.clip(out * 32767, -32768, 32767).astype(np.int16)


def noise(
    seconds: float, rate_hz: int = 24_000, *, level_dbfs: float = -40.0, seed: int = 0
) -> np.ndarray:
    """White noise at ``level_dbfs`` RMS (a fan, a fridge)."""
    rng = np.random.default_rng(seed)
    amplitude = 32768 * 10 ** (level_dbfs / 20)
    return np.clip(rng.standard_normal(int(seconds * rate_hz)) * amplitude, -32768, 32767).astype(
        np.int16
    )


def silence(seconds: float, rate_hz: int = 24_000) -> np.ndarray:
    return np.zeros(int(seconds * rate_hz), dtype=np.int16)


def room_taps(
    *,
    rate_hz: int = 24_000,
    delay_ms: float = 20.0,
    gain_db: float = -10.0,
    rt_ms: float = 60.0,
    seed: int = 0,
) -> np.ndarray:
    """The synthetic room's impulse response, float64: ``delay_ms`` of zeros (the
    sound's way from the speaker to the mic), then a decaying random response
    (``rt_ms`` to fall by 60 dB) whose energy is the speaker-to-mic gain. The
    offline :func:`room` and the clocked card's room (``room`` of its capture,
    :func:`tests.fakes.clockcard.write_asoundrc`) both convolve with these taps."""
    rng = np.random.default_rng(seed)
    length = int(rt_ms / 1000 * rate_hz)
    taps = rng.standard_normal(length) * 10 ** (-3 * np.arange(length) / length)
    taps[0] = 1.0
    taps *= 10 ** (gain_db / 20) / np.sqrt(np.sum(taps**2))
    return np.concatenate([np.zeros(int(delay_ms / 1000 * rate_hz)), taps])


def room(
    far: np.ndarray,
    *,
    rate_hz: int = 24_000,
    delay_ms: float = 20.0,
    gain_db: float = -10.0,
    rt_ms: float = 60.0,
    seed: int = 0,
) -> np.ndarray:
    """What the mic hears of ``far`` played by the speaker (:func:`room_taps`)."""
    taps = room_taps(rate_hz=rate_hz, delay_ms=delay_ms, gain_db=gain_db, rt_ms=rt_ms, seed=seed)
    return np.convolve(far.astype(np.float64), taps)[: len(far)]


def mix(*parts: np.ndarray) -> np.ndarray:
    """Sum float or int16 signals of any lengths into int16 (clipped)."""
    n = max(len(p) for p in parts)
    out = np.zeros(n)
    for p in parts:
        out[: len(p)] += p
    return np.clip(np.rint(out), -32768, 32767).astype(np.int16)


HOUR_S = 3600


def corpus() -> np.ndarray:
    """About twelve minutes of non-wake audio, int16 at 24 kHz."""
    speech = np.concatenate(
        [espeak(text, voice, speed) for voice in VOICES for speed in SPEEDS for text in CHATTER[:8]]
    )
    replies = room(np.concatenate([espeak(t, "en-us") for t in CHATTER]), gain_db=-6.0)
    tunes = music(120.0, seed=1)
    return mix(
        np.concatenate(
            [speech, mix(replies, noise(len(replies) / 24_000, level_dbfs=-50)), tunes, noise(30.0)]
        )
    )


def hour(base: np.ndarray) -> np.ndarray:
    """``base`` five times over, each pass at another level or with music under it."""
    under = music(len(base) / 24_000, seed=2).astype(np.float64)
    passes = [
        base,
        mix(base.astype(np.float64) * 0.5),
        mix(base.astype(np.float64) * 2.0),
        mix(base, under * 0.5),
        mix(base.astype(np.float64) * 0.7, noise(len(base) / 24_000, level_dbfs=-35, seed=3)),
    ]
    audio = np.concatenate(passes)
    while len(audio) < HOUR_S * 24_000:
        audio = np.concatenate([audio, base])
    return audio[: HOUR_S * 24_000]


HOUR_VOICES = tuple(
    f"{base}+{variant}"
    for base in ("en", "en-us", "en-gb-x-rp", "en-029", "en-gb-scotland", "en-gb-x-gbclan")
    for variant in ("m1", "m3", "m7", "f1", "f3", "f4")
)
"""36 espeak-ng voices: six English accents, each with six voice variants."""

_WORDS = {
    "who": "my neighbour,the old teacher,a small dog,our builder,the postman,my sister,"
    "a tired farmer,the new doctor,your cousin,a quiet student,the baker,his friend",
    "did": "painted,carried,forgot,borrowed,cleaned,repaired,counted,cooked,lost,found,"
    "delivered,noticed,ordered,described,ignored,remembered",
    "what": "the kitchen table,a bag of apples,the broken window,three yellow chairs,"
    "the garden gate,a box of letters,the red bicycle,two cups of coffee,the library book,"
    "a pile of laundry,the front door key,an umbrella",
    "when": "on monday morning,last winter,after lunch,before the storm,at half past nine,"
    "during the holidays,every other week,late at night,in the early spring,yesterday",
    "aside": "which surprised everyone,and nobody minded,as usual,for the second time,"
    "without a word,just in case,and then went home,while it was raining,"
    "so we could finally rest,which was quite a relief",
}
NEAR_MISSES = (
    "okay now",
    "a new bar",
    "oh kay",
    "nab you",
    "okay then",
    "kabuki",
    "new",
    "abu",
    "okay Nancy",
    "oh nobody",
    "hey nab",
    "okay number two",
    "no bunny",
    "a Nabokov novel",
)
"""Words near "okay nabu" the hour says inside ordinary sentences."""


def sentences(count: int, *, seed: int) -> list[str]:
    """``count`` distinct generated sentences (some with a near miss in them)."""
    rng = np.random.default_rng(seed)
    parts = {key: text.split(",") for key, text in _WORDS.items()}
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < count:
        words = [str(rng.choice(parts[key])) for key in ("who", "did", "what", "when", "aside")]
        if rng.random() < 0.2:
            words.insert(int(rng.integers(1, 5)), str(rng.choice(NEAR_MISSES)))
        text = " ".join(words)
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def _speech_minutes(seconds: float, *, seed: int, rate_hz: int) -> np.ndarray:
    """Distinct espeak-ng paragraphs (five new sentences each), voices and speeds in turn."""
    rng = np.random.default_rng(seed)
    texts = iter(sentences(100_000, seed=seed))
    pieces: list[np.ndarray] = []
    total = 0
    while total < seconds * rate_hz:
        text = ". ".join(next(texts) for _ in range(5))
        voice = HOUR_VOICES[int(rng.integers(len(HOUR_VOICES)))]
        spoken = espeak(text, voice, int(rng.integers(120, 230)), rate_hz)
        spoken = (spoken.astype(np.float64) * 10 ** (rng.uniform(-12, 0) / 20)).astype(np.int16)
        pieces += [spoken, silence(float(rng.uniform(0.2, 1.5)), rate_hz)]
        total += len(spoken) + len(pieces[-1])
    return np.concatenate(pieces)[: int(seconds * rate_hz)]


def distinct_hour(rate_hz: int = 24_000) -> np.ndarray:
    """Sixty minutes of non-wake audio, none of it repeated, int16 at ``rate_hz``:

    - 30 min of espeak-ng speech: new generated sentences throughout (about a
      fifth with a near miss), 36 voices, 120-230 words per minute, levels
      from -12 to 0 dB of espeak's, a room's noise under it;
    - 15 min of synthetic music, each half minute from its own seed;
    - 15 min of the device's own replies (other sentences, other voices)
      heard through the synthetic room, delays 5-50 ms and gains -20..0 dB
      changing every half minute, over -50 dBFS noise.
    """
    speech = _speech_minutes(30 * 60, seed=101, rate_hz=rate_hz)
    speech = mix(speech, noise(30 * 60, rate_hz, level_dbfs=-55, seed=11))
    tunes = np.concatenate(
        [music(30.0, rate_hz, seed=1000 + k) for k in range(30)]  # 15 min
    )
    replies_dry = _speech_minutes(15 * 60, seed=202, rate_hz=rate_hz)
    rng = np.random.default_rng(7)
    half = 30 * rate_hz
    replies = np.concatenate(
        [
            mix(
                room(
                    replies_dry[k : k + half],
                    rate_hz=rate_hz,
                    delay_ms=float(rng.uniform(5, 50)),
                    gain_db=float(rng.uniform(-20, 0)),
                    seed=k // half,
                ),
                noise(30.0, rate_hz, level_dbfs=-50, seed=k // half),
            )
            for k in range(0, len(replies_dry), half)
        ]
    )
    return np.concatenate([speech, tunes, replies])[: HOUR_S * rate_hz]
