"""``[wake]`` in huxleyd.toml: the wake word, off unless a model is named."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from huxleyd.errors import ConfigError
from huxleyd.schema import bounds

BUILTIN_MODELS = ("okay_nabu", "hey_jarvis", "alexa", "hey_mycroft")
"""The models inside the pymicro-wakeword wheel (no download at run time)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WakeSettings:
    """``model``: a bundled model's name, or the path of a microWakeWord model's
    JSON (its ``.tflite`` beside it, named by the JSON's ``model`` key); empty:
    no wake word (the button only, the default)."""

    model: str = ""
    during_playback: Literal["auto", "on", "off"] = "auto"
    """Listen for the wake word while the speaker plays (voice barge-in).
    ``auto``: only where an echo canceller removes the device's own sound
    from the mic; ``on``: trust the mic (an array that cancels echo itself)."""
    end_silence_ms: int = field(default=800, metadata=bounds(200, 5000))
    """This much quiet after the user spoke ends a wake turn."""
    no_speech_s: float = field(default=5.0, metadata=bounds(1.0, 30.0))
    """Nothing said this long after the wake word: the turn is dropped, nothing committed."""
    max_turn_s: float = field(default=15.0, metadata=bounds(2.0, 120.0))
    """A wake turn is committed after this long, however long the user talks."""

    def __post_init__(self) -> None:
        if self.no_speech_s >= self.max_turn_s:
            raise ValueError(
                f"no_speech_s ({self.no_speech_s}) must be shorter than max_turn_s "
                f"({self.max_turn_s})"
            )

    @property
    def enabled(self) -> bool:
        return bool(self.model)


def resolve_model(settings: WakeSettings, *, base: Path, file: str) -> WakeSettings:
    """``settings`` with a model path made absolute from ``base`` and checked.

    A path model must be a readable JSON whose ``model`` key names a
    ``.tflite`` file beside it and whose ``micro`` table holds the detection's
    ``probability_cutoff`` and ``sliding_window_size``: what the detector
    loads at start, checked here so that ``--check-config`` sees it too.
    """
    key = "wake.model"
    if not settings.model or settings.model in BUILTIN_MODELS:
        return settings
    if not settings.model.endswith(".json"):
        raise ConfigError(
            file,
            key,
            f"expected one of {', '.join(BUILTIN_MODELS)} or the path of a microWakeWord "
            f"model's .json, got {settings.model!r}",
        )
    path = Path(settings.model)
    if not path.is_absolute():
        path = (base / path).resolve()
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(
            file, key, f"expected a readable model JSON, {path}: {exc.strerror or exc}"
        ) from None
    except ValueError as exc:
        raise ConfigError(file, key, f"expected JSON in {path}: {exc}") from None
    micro = table.get("micro") if isinstance(table, dict) else None
    tflite = table.get("model") if isinstance(table, dict) else None
    if not isinstance(tflite, str) or not isinstance(micro, dict):
        raise ConfigError(file, key, f"expected a 'model' name and a 'micro' table in {path}")
    for name in ("probability_cutoff", "sliding_window_size"):
        if not isinstance(micro.get(name), int | float):
            raise ConfigError(file, key, f"expected a number at micro.{name} in {path}")
    if not (path.parent / tflite).is_file():
        raise ConfigError(file, key, f"expected {tflite!r} beside {path} (it names it): not found")
    return dataclasses.replace(settings, model=str(path))
