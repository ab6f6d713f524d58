"""The system skill, through huxley_sdk.testing like any third-party skill."""

from __future__ import annotations

import json
from datetime import datetime
from zoneinfo import ZoneInfo

from huxley_sdk import SetVolume
from huxley_sdk.testing import MemoryStorage, make_test_context
from huxleyd.skills.system import VOLUME_KEY, SystemSkill


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


async def test_get_volume_reads_the_persisted_level() -> None:
    storage = MemoryStorage()
    skill = SystemSkill()
    await skill.setup(make_test_context(storage=storage))
    assert json.loads((await skill.handle("get_volume", {})).output) == {"volume": 50}
    await storage.set_setting(VOLUME_KEY, "35")
    assert json.loads((await skill.handle("get_volume", {})).output) == {"volume": 35}
