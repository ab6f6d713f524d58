"""A daemon's side of one probe skill: a SkillHost, a real database, recorded injects."""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from huxley_sdk import (
    ClaimEndReason,
    ClaimHandle,
    InjectPriority,
    InputClaim,
    Skill,
    SkillContext,
)
from huxleyd.logs import get_logger
from huxleyd.skillhost.events import ClientEvents
from huxleyd.skillhost.host import SkillHost, ToolOutcome
from huxleyd.skillhost.launchers import SKILL_USER, launcher_for
from huxleyd.skillhost.process import HostLauncher
from huxleyd.skillhost.remote import RemoteSkill
from huxleyd.skillhost.skillenv import SkillsEnv
from huxleyd.storage.db import Database, FileSecrets


@dataclass
class Rig:
    host: SkillHost
    skill: RemoteSkill
    db: Database
    context: Callable[[str, dict[str, Any]], SkillContext]
    injected: asyncio.Queue[str] = field(default_factory=asyncio.Queue)
    down: asyncio.Queue[str] = field(default_factory=asyncio.Queue)
    events: ClientEvents = field(default_factory=ClientEvents)
    claims: asyncio.Queue[tuple[InputClaim, asyncio.Future[ClaimEndReason]]] = field(
        default_factory=asyncio.Queue
    )
    """Claims the skill started with ``ctx.start_input_claim``; resolve the future to end one."""

    async def call(self, tool: str, **args: Any) -> ToolOutcome:
        return await self.host.call("call-1", tool, json.dumps(args))

    async def output(self, tool: str, **args: Any) -> Any:
        outcome = await self.call(tool, **args)
        assert outcome.ok, outcome
        return json.loads(outcome.output)


@asynccontextmanager
async def probe_rig(
    env: SkillsEnv,
    tmp: Path,
    *,
    ping_every_s: float = 1.0,
    launcher: HostLauncher | None = None,
) -> AsyncIterator[Rig]:
    """The probe skill set up in its host, as the daemon's start does it.

    ``launcher``: how hosts start (default: :func:`launcher_for` on this machine)."""
    db = await Database.open(tmp / "state" / "huxleyd.db")
    data_root = Path(tempfile.mkdtemp(prefix="huxleyd-skills-data-"))
    os.chmod(data_root, 0o755)
    if launcher is not None and not launcher.makes_data_dirs and os.geteuid() == 0:
        entry = pwd.getpwnam(SKILL_USER)  # as tmpfiles makes /var/lib/huxleyd-skills/data
        os.chown(data_root, entry.pw_uid, entry.pw_gid)
        os.chmod(data_root, 0o700)
    skill = RemoteSkill(
        "probe",
        "huxley-skill-probe",
        launcher=(lambda: launcher) if launcher is not None else (lambda: launcher_for(env)),
        ping_every_s=ping_every_s,
        data_root=data_root,
    )
    host = SkillHost([cast(Skill, skill)], tool_timeout_s=8.0)
    injected: asyncio.Queue[str] = asyncio.Queue()

    async def inject(
        prompt: str,
        /,
        *,
        dedup_key: str | None = None,
        priority: InjectPriority = InjectPriority.NORMAL,
    ) -> None:
        injected.put_nowait(prompt)

    events = ClientEvents()
    claims: asyncio.Queue[tuple[InputClaim, asyncio.Future[ClaimEndReason]]] = asyncio.Queue()

    async def start_claim(claim: InputClaim, /) -> ClaimHandle:
        ended: asyncio.Future[ClaimEndReason] = asyncio.get_running_loop().create_future()
        claims.put_nowait((claim, ended))

        def cancel() -> None:
            if not ended.done():
                ended.set_result(ClaimEndReason.NATURAL)

        async def wait_end() -> ClaimEndReason:
            return await ended

        return ClaimHandle(_cancel=cancel, _wait_end=wait_end)

    def context(name: str, config: dict[str, Any]) -> SkillContext:
        return SkillContext(
            logger=get_logger(f"huxley.skill.{name}", skill=name),
            storage=db.skill_storage(name),
            secrets=FileSecrets(tmp / "secrets", name),
            persona_data_dir=tmp,
            config=config,
            inject_turn=inject,
            start_input_claim=start_claim,
            subscribe_client_event=events.subscriber(name),
            emit_server_event=events.emitter(name),
        )

    rig = Rig(host, skill, db, context, injected)
    rig.events = events
    rig.claims = claims
    skill.on_down = lambda name, reason: rig.down.put_nowait(reason)
    await host.setup_all(context, {"probe": {"greeting": "hi"}})
    assert not host.failed, host.failed
    try:
        yield rig
    finally:
        await host.teardown_all()
        await db.close()
        shutil.rmtree(data_root, ignore_errors=True)
