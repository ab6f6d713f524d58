"""ALSA device names → PortAudio devices."""

from __future__ import annotations

import pytest

from huxleyd.audio.backends.alsa_names import (
    PaDevice,
    parse_cards,
    parse_hw,
    resolve_device,
    wants_plughw,
)
from huxleyd.errors import AudioDeviceError

CARDS_TEXT = """\
 0 [Headphones     ]: bcm2835_headpho - bcm2835 Headphones
                      bcm2835 Headphones
 1 [seeed2micvoicec]: seeed-2mic-voic - seeed-2mic-voicecard
                      seeed-2mic-voicecard
 2 [Device         ]: USB-Audio - USB PnP Sound Device
                      C-Media Electronics Inc. USB PnP Sound Device at usb-0000:01:00.0-1.3
"""

DEVICES = [
    PaDevice(0, "bcm2835 Headphones: - (hw:0,0)", 0, 8, 44100),
    PaDevice(
        1, "seeed-2mic-voicecard: bcm2835-i2s-wm8960-hifi wm8960-hifi-0 (hw:1,0)", 2, 2, 48000
    ),
    PaDevice(2, "USB PnP Sound Device: Audio (hw:2,0)", 1, 0, 44100),
    PaDevice(3, "sysdefault", 128, 128, 44100),
    PaDevice(4, "huxley_capture", 2, 0, 48000),
    PaDevice(5, "default", 128, 128, 44100),
]


def test_proc_cards_map_ids_to_indexes() -> None:
    assert parse_cards(CARDS_TEXT) == {"Headphones": 0, "seeed2micvoicec": 1, "Device": 2}


@pytest.mark.parametrize(
    ("spec", "direction", "index"),
    [
        ("5", "input", 5),
        ("default", "output", 5),
        ("huxley_capture", "input", 4),
        ("plughw:CARD=seeed2micvoicec,DEV=0", "input", 1),
        ("hw:CARD=seeed2micvoicec,DEV=0", "output", 1),
        ("hw:1,0", "input", 1),
        ("plughw:2", "input", 2),
        ("hw:CARD=Device", "input", 2),
        ("Headphones", "output", 0),
        ("usb pnp", "input", 2),
    ],
)
def test_names_resolve(spec: str, direction: str, index: int) -> None:
    cards = parse_cards(CARDS_TEXT)
    device = resolve_device(spec, DEVICES, direction=direction, cards=cards)  # type: ignore[arg-type]
    assert device.index == index


def test_a_missing_card_names_the_cards_present() -> None:
    with pytest.raises(
        AudioDeviceError, match=r"no sound card with id 'seeed'; cards present: Device \(2\)"
    ):
        parse_hw("plughw:CARD=seeed,DEV=0", {"Device": 2})


def test_an_unmatched_name_lists_what_portaudio_offers() -> None:
    with pytest.raises(AudioDeviceError) as caught:
        resolve_device(
            "hw:2,0", DEVICES, direction="output", cards={}, setting="audio.playback_device"
        )
    message = str(caught.value)
    assert message.startswith("audio.playback_device = 'hw:2,0': no PortAudio device is hw:2,0")
    assert "0: 'bcm2835 Headphones: - (hw:0,0)'" in message  # outputs listed...
    assert "USB PnP" not in message  # ...and only outputs


def test_ambiguous_fragments_and_wrong_directions_are_refused() -> None:
    lookalikes = [PaDevice(0, "sysdefault", 1, 1, 1), PaDevice(1, "xdefault", 1, 1, 1)]
    with pytest.raises(AudioDeviceError, match="ambiguous"):
        resolve_device("default", lookalikes, direction="input", cards={})
    with pytest.raises(AudioDeviceError, match="no such index"):
        resolve_device("2", DEVICES, direction="output", cards={})


def test_plughw_names_are_recognised() -> None:
    assert wants_plughw("plughw:CARD=x,DEV=0") and not wants_plughw("hw:1,0")
    assert parse_hw("default", {}) is None
