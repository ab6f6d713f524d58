"""A newcomer's path, as README.md writes it, from the two commands to a spoken answer.

The commands are parsed from the README itself, in order: its first code
block must be ``make run`` and ``make test``; ``make run``'s recipe is read
from the Makefile; then the "Using it" block's ``huxleyctl`` lines run
against that daemon. The one change: the configuration is a copy of
``config/dev.toml`` in a temporary folder (its ``var/`` there, not the
repo's) on the WAV backend, so no sound card of this machine is opened.
With no key, the built-in simulator answers.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from tests.e2e.process import DaemonProcess

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def code_blocks(text: str) -> list[list[str]]:
    """Each ``sh`` block's command lines (comments and blank lines dropped)."""
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    return [
        [
            line.split("#", 1)[0].strip()
            for line in block.splitlines()
            if line.split("#", 1)[0].strip()
        ]
        for block in blocks
    ]


def section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_the_readme_starts_with_what_it_is_then_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    first_screen = text[: text.index("```sh")]
    assert "voice assistant" in first_screen and "What you need first" in first_screen
    assert code_blocks(text)[0] == ["make run", "make test"]
    order = [text.index(h) for h in ("```sh\nmake run", "\n## Using it\n", "\n## Development\n")]
    assert order == sorted(order)
    using = section(text, "Using it")
    for what in ("xAI", "Gemini", "flash", "openai.key"):
        assert what in using


def test_following_the_readme_reaches_a_spoken_answer(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    assert code_blocks(text)[0][0] == "make run"
    recipe = re.search(r"^run: .*\n\t(.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert recipe is not None and "--config $(CONFIG)" in recipe.group(1)
    # The dev configuration, copied with the folders it names relative to itself.
    (tmp_path / "config").mkdir()
    for name in ("dev.toml",):
        shutil.copy2(ROOT / "config" / name, tmp_path / "config" / name)
    for folder in ("personas", "scenarios"):
        shutil.copytree(ROOT / "config" / folder, tmp_path / "config" / folder)
    (tmp_path / "sounds").symlink_to(ROOT / "sounds")
    (tmp_path / "hw").symlink_to(ROOT / "hw")
    config = tmp_path / "config" / "dev.toml"
    config.write_text(config.read_text().replace('backend = "auto"', 'backend = "wav"'))
    daemon = DaemonProcess(config, log=tmp_path / "daemon.log")
    try:
        daemon.wait_for_log("daemon_started", timeout_s=60)
        using = code_blocks(section(text, "Using it"))[0]
        said = []
        for line in using:
            argv = shlex.split(line)
            assert argv[0] == ".venv/bin/huxleyctl" and argv[1:3] == ["--config", "config/dev.toml"]
            done = (
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "huxleyd.control.cli",
                        "--config",
                        str(config),
                        *argv[3:],
                    ],
                    capture_output=True,
                    text=True,
                    timeout=60,
                    stdin=subprocess.DEVNULL,
                )
                if argv[3] != "watch"
                else None
            )
            if done is not None:
                said.append((argv[3], done.returncode, done.stdout + done.stderr))
        say = next(out for cmd, rc, out in said if cmd == "say")
        assert next(rc for cmd, rc, _ in said if cmd == "say") == 0, say
        assert say.strip(), "an answer was printed"
        doctor_rc = next(rc for cmd, rc, _ in said if cmd == "doctor")
        assert doctor_rc == 0, next(out for cmd, _, out in said if cmd == "doctor")
        # The order (a press first, then the typed question): the simulator
        # answers what was typed, not the next line of its script.
        answer = ""
        for args in (["ptt", "tap"], ["say", "what time is it"]):
            ran = subprocess.run(
                [sys.executable, "-m", "huxleyd.control.cli", "--config", str(config), *args],
                capture_output=True,
                text=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
            )
            assert ran.returncode == 0, ran.stdout + ran.stderr
            answer = ran.stdout
        assert "time" in answer and "volume" not in answer.lower(), answer
    finally:
        daemon.terminate()
