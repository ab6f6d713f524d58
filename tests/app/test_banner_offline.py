"""``make run``'s banner says "offline" when the provider cannot be reached.

Before: with a key and no network the banner said "talking to the
provider". Here the real start (in process, to READY) has a key and a
provider URL on loopback where nothing listens: the first try is refused,
and the banner says so, with the reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.config.fuzzcases import captured_output, verdicts, write_base


def test_the_banner_says_offline_when_the_first_try_fails(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "openai.key"
    key.write_text("sk-test-not-a-real-key\n")
    key.chmod(0o600)
    write_base(tmp_path, {"provider": {"key_file": f'"{key}"', "connect_timeout_s": "2.0"}})
    with captured_output() as output:
        verdict = verdicts(tmp_path)
    seen = capfd.readouterr()
    text = "".join(output) + seen.out + seen.err
    assert verdict.start == 0 and verdict.start_ready
    assert "huxleyd is ready but offline: the provider at ws://127.0.0.1:9/v1/realtime" in text
    assert "talking to the provider" not in text
    assert "sk-test-not-a-real-key" not in text
