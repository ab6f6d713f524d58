"""The system skill, through huxley_sdk.testing like any third-party skill."""

from __future__ import annotations

import json
from datetime import datetime
from zoneinfo import ZoneInfo

from huxley_sdk import SetVolume
from huxley_sdk.testing import MemoryStorage, make_test_context
from huxleyd.skills.system import SystemSkill


async def test_time_is_in_the_persona_time_zone() -> None:
    skill = SystemSkill()
    await skill.setup(make_test_context(config={"timezone": "Asia/Tokyo"}))
    result = await skill.handle("get_current_time", {})
    data = json.loads(result.output)
    assert data["timezone"] == "Asia/Tokyo"
    now = datetime.now(ZoneInfo("Asia/Tokyo"))
    hour, minute = map(int, data["time"].split(":"))
    delta = (now.hour * 60 + now.minute) - (hour * 60 + minute)
    assert delta in (0, 1, -1439), data  # the minute may tick over between the two reads
    assert result.side_effect is None


async def test_set_volume_returns_the_side_effect() -> None:
    skill = SystemSkill()
    await skill.setup(make_test_context())
    result = await skill.handle("set_volume", {"level": 30})
    assert result.side_effect == SetVolume(30)
    assert json.loads(result.output) == {"volume": 30}
    # The daemon adds what the speaker really did under "speaker": the model is asked to say it.
    (tool,) = [t for t in skill.tools if t.name == "set_volume"]
    assert "speaker part" in tool.description and "note" in tool.description


async def test_get_volume_reads_the_devices_level_not_the_skills_storage() -> None:
    levels = [35]

    async def speaker_volume() -> int | None:
        return levels[-1]

    storage = MemoryStorage()
    await storage.set_setting("volume_level", "80")  # where earlier versions kept it
    skill = SystemSkill()
    await skill.setup(make_test_context(storage=storage, speaker_volume=speaker_volume))
    assert json.loads((await skill.handle("get_volume", {})).output) == {"volume": 35}
    levels.append(12)  # changed elsewhere (huxleyctl volume, another skill)
    assert json.loads((await skill.handle("get_volume", {})).output) == {"volume": 12}


async def test_get_volume_says_so_when_the_runtime_keeps_no_speaker() -> None:
    skill = SystemSkill()
    await skill.setup(make_test_context())
    answer = json.loads((await skill.handle("get_volume", {})).output)
    assert answer["volume"] is None and "does not report" in answer["error"]
