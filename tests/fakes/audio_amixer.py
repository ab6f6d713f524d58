"""A fake ``amixer`` executable: put it on PATH, it keeps mixer state and logs its calls.

:func:`install_fake_amixer` writes ``<bin_dir>/amixer`` (a Python script run
by this interpreter) and a JSON state file beside it. The script understands
what :class:`~huxleyd.audio.volume.AlsaMixerVolume` uses — ``-D``/``-c``,
``scontents``, ``sget``, ``sset`` with ``NN%``, ``NN.NNdB``, raw steps,
``mute``/``unmute`` — quantises dB to the control's steps like a real
control, prints amixer's format, and appends every argv to ``calls.jsonl``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass
class FakeControl:
    """A mixer control: raw steps ``lo..hi`` spanning ``db_lo..db_hi`` linearly."""

    lo: int = 0
    hi: int = 255
    db_lo: float | None = -127.5
    db_hi: float | None = 0.0
    raw: int = 200
    switch: bool | None = True
    playback: bool = True


SCRIPT = r"""#!{python}
import json, math, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
state = json.loads((HERE / "amixer-state.json").read_text())
with (HERE / "calls.jsonl").open("a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\n")
args = sys.argv[1:]
card = "default"
while args and args[0] in ("-D", "-c", "-M", "-q"):
    if args[0] in ("-D", "-c"):
        card = args[1]
        args = args[2:]
    else:
        args = args[1:]
if card != state["card"]:
    print(f"amixer: Mixer attach {{card}} error: No such file or directory", file=sys.stderr)
    sys.exit(1)
controls = state["controls"]

def db_of(c):
    if c["db_lo"] is None:
        return None
    if c["raw"] == c["lo"]:
        return -math.inf
    return c["db_lo"] + (c["raw"] - c["lo"]) * (c["db_hi"] - c["db_lo"]) / (c["hi"] - c["lo"])

def show(name, c):
    caps = "pvolume pswitch" if c["playback"] else "cvolume cswitch"
    kind = "Playback" if c["playback"] else "Capture"
    pct = round(100 * (c["raw"] - c["lo"]) / (c["hi"] - c["lo"]))
    line = f"  Mono: {{kind}} {{c['raw']}} [{{pct}}%]"
    db = db_of(c)
    if db is not None:
        line += " [-inf" + "dB]" if db == -math.inf else f" [{{db:.2f}}dB]"
    if c["switch"] is not None:
        line += " [on]" if c["switch"] else " [off]"
    print(f"Simple mixer control '{{name}}',0")
    print(f"  Capabilities: {{caps}}")
    print(f"  {{kind}} channels: Mono")
    print(f"  Limits: {{kind}} {{c['lo']}} - {{c['hi']}}")
    print(line)

if args[0] in ("scontents", "scontrols"):
    for name, c in controls.items():
        if args[0] == "scontrols":
            print(f"Simple mixer control '{{name}}',0")
        else:
            show(name, c)
    sys.exit(0)
name = args[1]
if name not in controls:
    print(f"amixer: Unable to find simple control '{{name}}',0", file=sys.stderr)
    sys.exit(1)
c = controls[name]
if args[0] == "sset":
    for value in args[2:]:
        if value == "--":
            continue
        if value in ("mute", "off"):
            c["switch"] = False
        elif value in ("unmute", "on"):
            c["switch"] = True
        elif value.endswith("dB"):
            db = float(value[:-2])
            step = (c["db_hi"] - c["db_lo"]) / (c["hi"] - c["lo"])
            c["raw"] = max(c["lo"], min(c["hi"], c["lo"] + round((db - c["db_lo"]) / step)))
        elif value.endswith("%"):
            c["raw"] = c["lo"] + round((c["hi"] - c["lo"]) * float(value[:-1]) / 100)
        else:
            c["raw"] = int(value)
    (HERE / "amixer-state.json").write_text(json.dumps(state))
show(name, c)
"""


class FakeAmixer:
    """Handle on an installed fake: its state and the calls it received."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir

    @property
    def calls(self) -> list[list[str]]:
        path = self.bin_dir / "calls.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    @property
    def sets(self) -> list[list[str]]:
        """The ``sset`` calls, without the card options."""
        return [call[call.index("sset") :] for call in self.calls if "sset" in call]

    def control(self, name: str) -> dict[str, Any]:
        state = json.loads((self.bin_dir / "amixer-state.json").read_text())
        control: dict[str, Any] = state["controls"][name]
        return control


def install_fake_amixer(
    bin_dir: Path, controls: dict[str, FakeControl], *, card: str = "default"
) -> FakeAmixer:
    """Write the fake into ``bin_dir`` (put that first on PATH)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    state = {"card": card, "controls": {name: asdict(c) for name, c in controls.items()}}
    (bin_dir / "amixer-state.json").write_text(json.dumps(state))
    script = bin_dir / "amixer"
    script.write_text(SCRIPT.format(python=sys.executable))
    script.chmod(0o755)
    return FakeAmixer(bin_dir)
