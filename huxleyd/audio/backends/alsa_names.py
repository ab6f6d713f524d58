"""Turn a configured ALSA device name into a PortAudio device (pure; no PortAudio import).

PortAudio's ALSA host API lists two kinds of devices: every PCM the ALSA
configuration defines by name (``default``, ``sysdefault``, a board's
``huxley_capture``…), listed under that name, and every hardware PCM,
listed as ``"<card name>: <pcm name> (hw:C,D)"``. Config files and
``arecord -L`` speak ALSA names instead, such as
``plughw:CARD=seeed2micvoicec,DEV=0``. :func:`resolve_device` matches, in order:

1. an integer: the PortAudio index;
2. the exact name of a listed device (named PCMs, ``default``);
3. ``hw:``/``plughw:`` names in any ALSA spelling (``CARD=id,DEV=n``,
   ``C,D``, card id or index) → the ``(hw:C,D)`` device, the card id
   mapped to its index through ``/proc/asound/cards``;
4. a case-insensitive fragment found in exactly one device name.

Anything else fails with :class:`~huxleyd.errors.AudioDeviceError` listing
what PortAudio offers, so the fix is one copy-paste away.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from huxleyd.errors import AudioDeviceError

Direction = Literal["input", "output"]

_CARD_LINE = re.compile(r"^\s*(\d+)\s+\[([^\]]+?)\s*\]:")
_HW_NAME = re.compile(r"^(?P<plug>plug)?hw:(?P<args>.+)$")
_PA_HW_SUFFIX = re.compile(r"\((?:plug)?hw:(\d+),(\d+)\)\s*$")


@dataclass(frozen=True, slots=True)
class PaDevice:
    """One PortAudio device, as ``get_device_info_by_index`` describes it."""

    index: int
    name: str
    max_input_channels: int
    max_output_channels: int
    default_rate_hz: int

    def channels(self, direction: Direction) -> int:
        return self.max_input_channels if direction == "input" else self.max_output_channels


def parse_cards(text: str) -> dict[str, int]:
    """``/proc/asound/cards`` → card id → card index."""
    cards: dict[str, int] = {}
    for line in text.splitlines():
        match = _CARD_LINE.match(line)
        if match:
            cards[match.group(2)] = int(match.group(1))
    return cards


def read_cards(path: Path = Path("/proc/asound/cards")) -> dict[str, int]:
    """The card table of this machine (empty when there is no sound card or no /proc)."""
    try:
        return parse_cards(path.read_text())
    except OSError:
        return {}


def wants_plughw(spec: str) -> bool:
    """True for ``plughw:`` names: PortAudio must then open hardware through ``plug``."""
    return spec.strip().startswith("plughw:")


def parse_hw(spec: str, cards: Mapping[str, int]) -> tuple[int, int] | None:
    """``(card index, device)`` of a ``hw:``/``plughw:`` name, or None if it is not one.

    Raises AudioDeviceError for a hw name whose card is not present.
    """
    match = _HW_NAME.match(spec.strip())
    if not match:
        return None
    fields: dict[str, str] = {}
    positional: list[str] = []
    for part in match.group("args").split(","):
        key, sep, value = part.partition("=")
        if sep:
            fields[key.strip().upper()] = value.strip().strip('"')
        else:
            positional.append(part.strip())
    card = fields.get("CARD", positional[0] if positional else "0")
    device = fields.get("DEV", positional[1] if len(positional) > 1 else "0")
    if card.isdigit():
        card_index = int(card)
    elif card in cards:
        card_index = cards[card]
    else:
        present = ", ".join(f"{name} ({index})" for name, index in sorted(cards.items())) or "none"
        raise AudioDeviceError(
            f"{spec!r}: no sound card with id {card!r}; cards present: {present}"
        )
    if not device.isdigit():
        raise AudioDeviceError(f"{spec!r}: DEV must be a number, got {device!r}")
    return card_index, int(device)


def resolve_device(
    spec: str,
    devices: Sequence[PaDevice],
    *,
    direction: Direction,
    cards: Mapping[str, int],
    setting: str = "audio device",
) -> PaDevice:
    """The PortAudio device that ``spec`` names, able to ``direction``."""
    usable = [d for d in devices if d.channels(direction) > 0]
    text = spec.strip()
    if text.isdigit():
        found = [d for d in devices if d.index == int(text)]
        if found and found[0].channels(direction) > 0:
            return found[0]
        raise _no_match(spec, usable, direction, setting, "no such index")
    exact = [d for d in usable if d.name == text]
    if exact:
        return exact[0]
    hw = parse_hw(text, cards)
    if hw is not None:
        for device in usable:
            match = _PA_HW_SUFFIX.search(device.name)
            if match and (int(match.group(1)), int(match.group(2))) == hw:
                return device
        raise _no_match(
            spec, usable, direction, setting, f"no PortAudio device is hw:{hw[0]},{hw[1]}"
        )
    fragment = [d for d in usable if text.lower() in d.name.lower()]
    if len(fragment) == 1:
        return fragment[0]
    reason = "ambiguous" if fragment else "no device name contains it"
    raise _no_match(spec, usable, direction, setting, reason)


def _no_match(
    spec: str, usable: Sequence[PaDevice], direction: Direction, setting: str, reason: str
) -> AudioDeviceError:
    offered = "; ".join(f"{d.index}: {d.name!r}" for d in usable) or "none"
    return AudioDeviceError(
        f"{setting} = {spec!r}: {reason}; PortAudio {direction} devices: {offered}"
    )
