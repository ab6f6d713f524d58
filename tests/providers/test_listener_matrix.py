"""What the listener hears, for every provider × fault × moment of a turn.

The cells are data (:mod:`tests.providers.listener_matrix`): a new fault or
moment is one more row there, never one more test here. One daemon per
provider runs all its cells; each is judged from the speaker's recording
(what played, where the error cue sits, how many cues) and from the turn's
outcome as ``watch`` reports it (the coordinator's ``TurnEnded``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from huxleyd.sim.server import SimDialect
from tests.e2e.harness import Rig, scenario_skill_installed
from tests.providers import listener_matrix as matrix

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "providers.md"


@pytest.fixture(autouse=True)
def scenario_skill(tmp_path: Path) -> Iterator[None]:
    with scenario_skill_installed(tmp_path):
        yield


def test_the_table_in_the_docs_is_the_matrix() -> None:
    """``docs/providers.md`` shows the matrix the suite runs. To regenerate:
    ``HUXLEYD_WRITE_MATRIX=1 pytest tests/providers/test_listener_matrix.py``."""
    text = DOC.read_text()
    if os.environ.get("HUXLEYD_WRITE_MATRIX"):
        DOC.write_text(matrix.with_table(text))
        text = DOC.read_text()
    assert matrix.TABLE_START in text and matrix.TABLE_END in text
    assert matrix.with_table(text) == text, "docs/providers.md's listener matrix is stale"


def test_every_cell_is_run_or_says_why_not() -> None:
    for provider in matrix.PROVIDERS:
        for fault in matrix.FAULTS:
            for moment in matrix.MOMENTS:
                why = matrix.not_applicable(provider, fault, moment)
                assert why is None or why.strip(), (provider, fault.name, moment.name)
    assert all(matrix.cells(p) for p in matrix.RUN)


@pytest.mark.parametrize("provider", matrix.RUN)
async def test_the_listener_hears_the_contract(tmp_path: Path, provider: SimDialect) -> None:
    sounds = matrix.write_sounds(tmp_path / "sounds")
    rig = Rig(
        tmp_path,
        matrix.scenario(provider),
        kind=provider,
        speed=matrix.RIG_SPEED,
        sim_speed=matrix.SIM_SPEED,
        sounds_dir=sounds,
        provider_lines=matrix.PROVIDER_LINES,
        provider_backoff=matrix.quick_backoff,
    )
    async with rig:
        results = await matrix.Run(rig).run(provider)
    broken = {key: heard.problems for key, heard in results.items() if heard.problems}
    assert not broken, "\n".join(f"{k}: {'; '.join(p)}" for k, p in broken.items())
    assert rig.sim.violations == []
