"""preflight: which key the start will use, and what it refuses before opening anything.

The broader ``--check-config`` cases are in tests/config/test_check_config.py
(through ``huxleyd --check-config`` itself); these pin the rules a one-line
change would break without a test noticing (found by ``make mutate``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from huxleyd.config.load import load_config
from huxleyd.config.preflight import CREDENTIAL_NAME, key_source, preflight
from huxleyd.errors import ConfigError
from huxleyd.providers.keyfile import BOM
from tests.config.test_check_config import ROOT, fails, write


def credentials(tmp_path: Path, content: bytes) -> dict[str, str]:
    folder = tmp_path / "credentials"
    folder.mkdir()
    (folder / CREDENTIAL_NAME).write_bytes(content)
    return {"CREDENTIALS_DIRECTORY": str(folder)}


@pytest.mark.parametrize(
    "content",
    [b"", b" \n", b"\r\n\t", BOM, BOM + b"\n"],
    ids=["empty", "blank", "crlf", "bom", "bom-newline"],
)
def test_a_credential_without_a_token_is_no_key_and_the_config_key_is_used(
    tmp_path: Path, content: bytes
) -> None:
    key = tmp_path / "openai.key"
    key.write_text("sk-from-config\n")
    config = load_config(write(tmp_path, provider=f'key_file = "{key}"'))
    source = key_source(config, env=credentials(tmp_path, content))
    assert source is not None and source.path == key and source.key == "provider.key_file"


def test_a_credential_with_a_token_wins_over_the_config_and_loses_to_the_command_line(
    tmp_path: Path,
) -> None:
    key = tmp_path / "openai.key"
    key.write_text("sk-from-config\n")
    config = load_config(write(tmp_path, provider=f'key_file = "{key}"'))
    env = credentials(tmp_path, b"sk-from-systemd\n")
    source = key_source(config, env=env)
    assert source is not None and source.key == f"credential {CREDENTIAL_NAME}"
    assert source.file == "systemd"
    given = tmp_path / "given.key"
    chosen = key_source(config, key_file=given, env=env)
    assert chosen is not None and chosen.path == given and chosen.key == "--key-file"


def test_no_credential_directory_and_no_key_file_is_no_key(tmp_path: Path) -> None:
    assert key_source(load_config(write(tmp_path)), env={}) is None


def test_the_providers_key_does_not_stand_in_for_elevenlabs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # provider.key_file is an OpenAI key: ElevenLabs speech needs its own.
    key = tmp_path / "openai.key"
    key.write_text("sk-openai\n")
    path = write(tmp_path, provider=f'kind = "cascade"\nkey_file = "{key}"')
    line = fails(path, capsys, path, "provider.cascade.elevenlabs_key_file")
    assert 'tts = "elevenlabs"' in line


def test_a_state_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("not a directory")
    config = load_config(write(tmp_path))
    with pytest.raises(ConfigError, match=r"storage\.state_dir: expected a directory") as caught:
        preflight(config, env={})
    assert str(tmp_path / "state") in str(caught.value)


def test_an_empty_sounds_dir_runs_degraded_in_the_words_the_start_records(
    tmp_path: Path,
) -> None:
    # The start runs without earcons (degrade, never die) and both say so, alike.
    from huxleyd.app.build import load_earcons
    from huxleyd.degraded import Degraded

    sounds = tmp_path / "no-sounds"
    sounds.mkdir()
    path = write(tmp_path)
    path.write_text(path.read_text().replace(str(ROOT / "sounds"), str(sounds)))
    config = load_config(path)
    checked = preflight(config, env={})
    assert checked.verdict == "runs degraded"
    (what,) = [w for part, w in checked.left_out if part == "earcons"]
    assert "listen_start.wav: missing" in what
    degraded = Degraded()
    assert load_earcons(config, degraded) == {}
    assert [(p.part, p.what) for p in degraded.problems()] == [("earcons", what)]


def test_one_missing_earcon_silences_only_its_own_cue(tmp_path: Path) -> None:
    """One file gone: the six others still load and play; the part is degraded."""
    import shutil

    from huxleyd.app.build import load_earcons
    from huxleyd.degraded import Degraded

    sounds = tmp_path / "sounds"
    shutil.copytree(ROOT / "sounds", sounds)
    (sounds / "error.wav").unlink()
    path = write(tmp_path)
    path.write_text(path.read_text().replace(str(ROOT / "sounds"), str(sounds)))
    config = load_config(path)
    degraded = Degraded()
    loaded = load_earcons(config, degraded)
    assert "error" not in loaded and "listen_start" in loaded and len(loaded) == 6
    (problem,) = degraded.problems()
    assert problem.part == "earcons" and "error.wav: missing" in problem.what
    assert [w for p, w in preflight(config, env={}).left_out if p == "earcons"] == [problem.what]
