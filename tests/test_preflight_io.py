"""preflight_io: what the start would open, checked with the start's own functions."""

from __future__ import annotations

import dataclasses
import os
import re
import socket
import wave
from pathlib import Path

import pytest

from huxleyd.config.files import Reader
from huxleyd.config.load import Config, load_config
from huxleyd.config.preflight_io import (
    check_audio,
    check_devices,
    check_state_directory,
    socket_path_problem,
)
from huxleyd.errors import ConfigError
from tests.config.fuzzcases import write_base


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return load_config(write_base(tmp_path))


def with_audio(config: Config, **changes: object) -> Config:
    return dataclasses.replace(config, audio=dataclasses.replace(config.audio, **changes))  # type: ignore[arg-type]


def wav(path: Path, *, channels: int = 1, rate: int = 24_000) -> Path:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(bytes(2 * channels * rate // 10))
    return path


def refused(key: str, fragment: str) -> pytest.RaisesExc[ConfigError]:
    """The error names the config file (tests write it as huxleyd.toml), the key, the problem."""
    return pytest.raises(
        ConfigError, match="^/.*/huxleyd\\.toml: " + re.escape(key) + ": .*" + re.escape(fragment)
    )


def test_the_valid_base_passes_every_check(config: Config) -> None:
    check_devices(config, Reader.this_process())


@pytest.mark.parametrize(
    ("key", "changes"),
    [
        ("audio.wav_rate_hz", {"wav_rate_hz": 11025}),
        ("audio.device_rate_hz", {"device_rate_hz": 11025}),
        ("audio.wav_rate_hz", {"wav_rate_hz": 44100, "period_ms": 7}),
    ],
)
def test_a_period_that_does_not_divide_a_known_rate_is_refused(
    config: Config, key: str, changes: dict[str, object]
) -> None:
    with refused(key, "not a whole number of frames"):
        check_audio(with_audio(config, **changes))


def test_the_card_backend_does_not_check_the_wav_rate(config: Config) -> None:
    check_audio(with_audio(config, backend="callback", wav_rate_hz=11025))


def test_the_mic_wav_is_read_as_the_wav_backend_reads_it(config: Config, tmp_path: Path) -> None:
    check_audio(with_audio(config, mic_wav=wav(tmp_path / "mic.wav")))
    stereo = wav(tmp_path / "stereo.wav", channels=2)
    with refused("audio.mic_wav", "2 channel"):
        check_audio(with_audio(config, mic_wav=stereo))
    toml = tmp_path / "mic.toml"
    toml.write_text("x = 1\n")
    with refused("audio.mic_wav", "expected a PCM16 WAV file"):
        check_audio(with_audio(config, mic_wav=toml))
    with refused("audio.mic_wav", "expected a PCM16 WAV file"):
        check_audio(with_audio(config, mic_wav=tmp_path / "missing.wav"))
    check_audio(with_audio(config, backend="callback", mic_wav=toml))  # not read by a card
    with refused("audio.mic_wav", "expected a PCM16 WAV file"):
        check_audio(with_audio(config, backend="auto", mic_wav=toml))  # the fallback reads it


def test_the_speaker_wav_must_be_creatable(config: Config, tmp_path: Path) -> None:
    check_audio(with_audio(config, speaker_wav=tmp_path / "new" / "deeper" / "out.wav"))
    (tmp_path / "adir").mkdir()
    with refused("audio.speaker_wav", "is a directory"):
        check_audio(with_audio(config, speaker_wav=tmp_path / "adir"))
    (tmp_path / "afile").write_text("x")
    with refused("audio.speaker_wav", "is not a directory"):
        check_audio(with_audio(config, speaker_wav=tmp_path / "afile" / "out.wav"))
    (tmp_path / "dangling.wav").symlink_to(tmp_path / "nowhere" / "x.wav")
    with refused("audio.speaker_wav", "broken symlink"):
        check_audio(with_audio(config, speaker_wav=tmp_path / "dangling.wav"))


def with_state(config: Config, state: Path) -> Config:
    return dataclasses.replace(config, storage=dataclasses.replace(config.storage, state_dir=state))


def test_the_state_directory_is_created_as_the_start_creates_it(
    config: Config, tmp_path: Path
) -> None:
    state = tmp_path / "var" / "lib" / "huxleyd"
    check_state_directory(with_state(config, state), Reader.this_process())
    assert state.is_dir()


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda p: p.write_text("x"), "is not a directory"),
        (
            lambda p: p.parent.joinpath("blocker").write_text("x"),
            "a directory the daemon can create",
        ),
    ],
)
def test_a_state_directory_that_cannot_be(
    config: Config, tmp_path: Path, make: object, fragment: str
) -> None:
    state = tmp_path / "state"
    make(state)  # type: ignore[operator]
    target = state if "not a directory" in fragment else tmp_path / "blocker" / "state"
    with refused("storage.state_dir", fragment):
        check_state_directory(with_state(config, target), Reader.this_process())


def test_a_state_directory_the_service_user_cannot_write_is_a_warning_not_a_refusal(
    config: Config, tmp_path: Path
) -> None:
    # Not an error in huxleyd.toml but a fault of the device (a wrong owner, an
    # SD card remounted read-only): the daemon runs on a database in memory.
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o755)
    stranger = Reader("stranger", os.getuid() + 4242, frozenset({4242}), is_self=False)
    warning = check_state_directory(with_state(config, state), stranger)
    assert warning is not None
    assert "'stranger' cannot write" in warning and "database in memory" in warning
    state.chmod(0o777)
    assert check_state_directory(with_state(config, state), stranger) is None


def test_the_socket_path(tmp_path: Path) -> None:
    assert socket_path_problem(tmp_path / "control.sock") is None  # nothing there yet
    assert "does not exist" in str(socket_path_problem(tmp_path / "missing" / "control.sock"))
    (tmp_path / "file").write_text("x")
    assert "is not a directory" in str(socket_path_problem(tmp_path / "file" / "control.sock"))
    assert "is not a socket" in str(socket_path_problem(tmp_path / "file"))
    bound = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        bound.bind(str(tmp_path / "left.sock"))
        assert socket_path_problem(tmp_path / "left.sock") is None  # a stale socket is replaced
    finally:
        bound.close()


def test_for_the_service_user_a_missing_state_directory_is_left_to_systemd(
    config: Config, tmp_path: Path
) -> None:
    stranger = Reader("stranger", os.getuid() + 4242, frozenset({4242}), is_self=False)
    state = tmp_path / "lib" / "huxleyd"
    check_state_directory(with_state(config, state), stranger)
    assert not state.exists()  # StateDirectory= creates it, owned by the service user
    (tmp_path / "file").write_text("x")
    with refused("storage.state_dir", "is a file"):
        check_state_directory(with_state(config, tmp_path / "file" / "state"), stranger)
