"""One verdict: ``--check-config`` says what the start does, for the cases users hit.

Each case runs both ways (:func:`tests.config.fuzzcases.verdicts`: the real
check and the real start up to READY) and asserts the verdict and the words:
refuses (78, the file and the key named), runs degraded (the part left out,
in the start's own degraded record's words) or runs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.config.fuzzcases import (
    board_with,
    captured_output,
    disagreement,
    verdicts,
    write_base,
)

EX_CONFIG = 78


def both(folder: Path, capfd: pytest.CaptureFixture[str]) -> tuple[int, int, str]:
    """Both verdicts, and all the two printed (fd and sys.stdout/err, where pytest
    keeps what ``print`` wrote)."""
    with captured_output() as output:
        verdict = verdicts(folder)
    seen = capfd.readouterr()
    text = "".join(output) + seen.out + seen.err
    assert disagreement(verdict, text) is None, text[-2000:]
    return verdict.check, verdict.start, text


def refusal(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("huxleyd: ")]


@pytest.mark.parametrize(
    ("leds", "key", "pin"),
    [
        ('kind = "led"\npin = 17', "leds.pin", 17),
        ('kind = "rgbled"\nred_pin = 5\ngreen_pin = 5\nblue_pin = 6', "leds.green_pin", 5),
    ],
    ids=["button-and-led-on-17", "rgb-red-equals-green"],
)
def test_a_pin_used_twice_is_refused_by_both(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], leds: str, key: str, pin: int
) -> None:
    board = board_with(tmp_path, button_pin=17 if pin == 17 else 27, leds=leds)
    write_base(tmp_path, {"hardware": {"boards_dir": f'"{board.parent}"', "board": '"twice"'}})
    check, start, text = both(tmp_path, capfd)
    assert (check, start) == (EX_CONFIG, EX_CONFIG)
    lines = refusal(text)
    assert len(lines) == 2 and lines[0] == lines[1], lines  # the same words, twice
    assert lines[0].startswith(f"huxleyd: {board}: {key}: ")
    assert f"GPIO{pin} is already" in lines[0]
    assert "GPIOPinInUse" not in text and "internal error" not in text


def test_a_socket_path_past_sun_path_is_named(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    sock = deep / "control.sock"
    write_base(tmp_path, {"control": {"socket_path": f'"{sock}"'}})
    check, start, text = both(tmp_path, capfd)
    assert (check, start) == (EX_CONFIG, EX_CONFIG)
    line = refusal(text)[0]
    assert "control.socket_path: expected a path of at most 107 bytes" in line
    assert "sun_path" in line


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "+nan"])
def test_nan_and_inf_fail_every_range_check(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], value: str
) -> None:
    write_base(tmp_path, {"audio": {"duck_depth_db": value}})
    check, start, text = both(tmp_path, capfd)
    assert (check, start) == (EX_CONFIG, EX_CONFIG)
    assert "audio.duck_depth_db: expected a finite number" in refusal(text)[0]


@pytest.mark.parametrize("state", ["/proc", "/sys/kernel", "/proc/huxleyd"])
def test_a_state_dir_on_proc_or_sys_is_refused_with_the_reason(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], state: str
) -> None:
    write_base(tmp_path, {"storage": {"state_dir": f'"{state}"'}})
    check, start, text = both(tmp_path, capfd)
    assert (check, start) == (EX_CONFIG, EX_CONFIG)
    line = refusal(text)[0]
    assert "storage.state_dir: expected a directory on a disk" in line
    assert "which keeps nothing" in line


def test_an_unknown_operator_group_is_named(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    write_base(tmp_path, {"control": {"operator_group": '"nosuchgroup"'}})
    check, start, text = both(tmp_path, capfd)
    assert (check, start) == (0, 0)
    notes = [line for line in text.splitlines() if "nosuchgroup" in line]
    assert any(line.startswith("  note: ") and "control.operator_group" in line for line in notes)
    assert any("preflight_note" in line for line in notes), "the start says it too"


@pytest.mark.parametrize(
    ("where", "text", "meant", "position"),
    [
        ("daemon", "persоna", "persona", 5),
        ("daemon", '"persоna"', "persona", 5),
        ("provider", "оpenai", "openai", 1),
    ],
    ids=["bare-key-persona", "quoted-key-persona", "kind-openai"],
)
def test_a_confusable_character_is_named_with_its_code_point_and_position(
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    where: str,
    text: str,
    meant: str,
    position: int,
) -> None:
    if where == "daemon":
        path = write_base(tmp_path)
        path.write_text(path.read_text().replace("[daemon]\n", f'[daemon]\n{text} = "default"\n'))
    else:
        write_base(tmp_path, {"provider": {"kind": f'"{text}"'}})
    check, start, output = both(tmp_path, capfd)
    assert (check, start) == (EX_CONFIG, EX_CONFIG)
    line = refusal(output)[0]
    assert "U+043E CYRILLIC SMALL LETTER O" in line
    assert f"at position {position}" in line
    assert f"did you mean '{meant}'?" in line


def test_a_persona_whose_instructions_are_over_the_limit_is_refused(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    write_base(tmp_path)
    persona = tmp_path / "personas" / "default.toml"
    persona.write_text(f'instructions = "{"x" * 100_001}"\n' + persona.read_text())
    check, start, text = both(tmp_path, capfd)
    assert (check, start) == (EX_CONFIG, EX_CONFIG)
    line = refusal(text)[0]
    assert line.startswith(f"huxleyd: {persona}: instructions: expected at most 100,000")


CLOCK_TOO = """
from huxley_sdk import ToolDefinition, ToolResult

class ClockSkill:
    name = "clock"
    tools = [ToolDefinition(name="get_current_time", description="Their clock.")]

    async def setup(self, ctx):
        pass

    async def handle(self, tool_name, args):
        return ToolResult(output="{}")
"""


@pytest.mark.parametrize(
    ("persona", "skill"),
    [
        ("[skills.weather]\n", "weather"),
        ('[skills.memos]\nmax_seconds = "long"\n', "memos"),
        ("[skills.clock]\n", "clock"),
    ],
    ids=["unknown-skill", "bad-value-in-table", "tool-two-skills-define"],
)
def test_a_skill_the_start_leaves_out_is_runs_degraded_in_the_same_words(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], persona: str, skill: str
) -> None:
    from tests.fakes.distributions import installed_skill

    folder = tmp_path / "conf"
    folder.mkdir()
    write_base(folder)
    path = folder / "personas" / "default.toml"
    path.write_text(path.read_text() + persona)  # after system, which has get_current_time
    with installed_skill(
        tmp_path / "site", "huxley-skill-clock", "clock = their_clock:ClockSkill", CLOCK_TOO
    ):
        check, start, text = both(folder, capfd)
    assert (check, start) == (0, 0)
    said = [line for line in text.splitlines() if line.startswith(f"  left out: skill:{skill}: ")]
    assert len(said) == 1, text[-3000:]
    what = said[0].removeprefix(f"  left out: skill:{skill}: ")
    recorded = re.findall(rf'part_degraded part=skill:{skill} problem="(.*?)" file=', text)
    assert recorded == [what.replace('"', '\\"')] or recorded == [what], (recorded, what)
    assert any(": runs degraded (" in line for line in text.splitlines())


def test_the_python_mix_is_refused_by_both_naming_the_key(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 39: one mixer. ``audio.mix = "python"`` asked for a second mix that no longer
    exists: refused (78) by the check and the start alike, naming the key and what is
    accepted, rather than ignored (a file that asks for a mix that does not run)."""
    write_base(tmp_path, {"audio": {"backend": '"wav"', "mix": '"python"'}})
    check, start, text = both(tmp_path, capfd)
    assert (check, start) == (EX_CONFIG, EX_CONFIG)
    lines = refusal(text)
    assert len(lines) == 2 and lines[0] == lines[1], lines
    assert "audio.mix: expected one of 'c_feeder', got a string 'python'" in lines[0], lines[0]


def test_a_speaker_file_on_proc_is_refused_by_both(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """``speaker_wav = "/proc/version"`` was approved by the check, and the start
    ran with a speaker that never opened (now a degraded ``speaker`` part): the
    two disagreed. A kernel file is no file to write: both refuse, in one line."""
    write_base(tmp_path, {"audio": {"backend": '"wav"', "speaker_wav": '"/proc/version"'}})
    check, start, text = both(tmp_path, capfd)
    assert (check, start) == (EX_CONFIG, EX_CONFIG)
    lines = refusal(text)
    assert len(lines) == 2 and lines[0] == lines[1], lines
    assert "audio.speaker_wav: expected a file on a disk to write: /proc/version is on" in lines[0]
