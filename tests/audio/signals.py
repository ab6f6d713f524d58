"""Signal helpers for the audio tests: make tones, measure them in output samples."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def tone(freq_hz: float, seconds: float, dbfs: float, *, rate_hz: int = 24000) -> bytes:
    """A PCM16 sine at ``dbfs`` peak."""
    return tone_samples(freq_hz, seconds, dbfs, rate_hz=rate_hz).astype("<i2").tobytes()


def tone_samples(
    freq_hz: float, seconds: float, dbfs: float, *, rate_hz: int = 24000
) -> npt.NDArray[np.int16]:
    t = np.arange(round(rate_hz * seconds)) / rate_hz
    amplitude = 32767 * 10 ** (dbfs / 20)
    return np.round(amplitude * np.sin(2 * np.pi * freq_hz * t)).astype(np.int16)


def level_at(samples: npt.NDArray[np.generic], freq_hz: float, rate_hz: int) -> float:
    """Peak amplitude (dBFS) of the ``freq_hz`` component, by projection.

    Exact for windows holding a whole number of cycles of every tone present.
    """
    x = np.asarray(samples, dtype=np.float64) / 32768
    n = np.arange(len(x))
    phasor = np.exp(-2j * np.pi * freq_hz * n / rate_hz)
    amplitude = 2 * abs(np.dot(x, phasor)) / len(x)
    return float(20 * np.log10(max(amplitude, 1e-12)))


def windows(samples: npt.NDArray[np.generic], size: int) -> list[npt.NDArray[np.generic]]:
    count = len(samples) // size
    return [samples[i * size : (i + 1) * size] for i in range(count)]


def dominant_frequency(samples: npt.NDArray[np.generic], rate_hz: int) -> float:
    """The strongest frequency, refined by parabolic interpolation of the spectrum peak."""
    x = np.asarray(samples, dtype=np.float64) * np.hanning(len(samples))
    spectrum = np.abs(np.fft.rfft(x))
    k = int(np.argmax(spectrum[1:])) + 1
    a, b, c = np.log(spectrum[k - 1 : k + 2] + 1e-12)
    shift = 0.5 * (a - c) / (a - 2 * b + c)
    return float((k + shift) * rate_hz / len(samples))
