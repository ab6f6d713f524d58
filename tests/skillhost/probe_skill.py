"""A third-party skill for the skill host's tests: each tool probes one thing.

Installed into the test's skills environment as the wheel
``huxley-skill-probe`` (module ``huxley_probe_skill``); it imports
``huxley_sdk`` only, as any third-party skill.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import struct
import time
from collections.abc import AsyncIterator
from typing import Any, ClassVar

from huxley_sdk import (
    AudioStream,
    CancelMedia,
    ClaimEndReason,
    ContentType,
    InputClaim,
    PlaySound,
    SetVolume,
    SkillContext,
    ToolDefinition,
    ToolResult,
)

CHUNK_SAMPLES = 480
"""20 ms at 24 kHz."""


def tone(chunks: int, hz: float = 440.0) -> list[bytes]:
    """``chunks`` chunks of a sine, PCM16 24 kHz mono: what the tests expect to hear."""
    out = []
    for c in range(chunks):
        base = c * CHUNK_SAMPLES
        samples = [
            int(8000 * math.sin(2 * math.pi * hz * (base + i) / 24000))
            for i in range(CHUNK_SAMPLES)
        ]
        out.append(struct.pack(f"<{CHUNK_SAMPLES}h", *samples))
    return out


def _tool(name: str, **props: str) -> ToolDefinition:
    return ToolDefinition(
        name,
        f"probe: {name}",
        {"type": "object", "properties": {k: {"type": t} for k, t in props.items()}},
    )


class ProbeSkill:
    name = "probe"
    config_schema: ClassVar[dict[str, Any] | None] = {
        "type": "object",
        "properties": {"greeting": {"type": "string"}},
        "additionalProperties": False,
    }

    def __init__(self) -> None:
        self.ctx: SkillContext | None = None
        self.calls = 0
        self.stubborn = False

    @property
    def tools(self) -> list[ToolDefinition]:
        return [
            _tool("echo", text="string"),
            _tool("read", path="string"),
            _tool("whoami"),
            _tool("remember", key="string", value="string"),
            _tool("recall", key="string"),
            _tool("announce", prompt="string", delay_s="number"),
            _tool("stream", chunks="integer", record="boolean"),
            _tool("beep"),
            _tool("volume", level="integer"),
            _tool("stop"),
            _tool("block", seconds="number"),
            _tool("crash"),
            _tool("flood"),
            _tool("fail"),
            _tool("claim"),
            _tool("setting"),
            _tool("stubborn"),
            _tool("secret", key="string", value="string"),
            _tool("call_in"),
            _tool("listen", key="string"),
            _tool("tell", event="string"),
        ]

    async def teardown(self) -> None:
        if self.stubborn:  # a teardown that never ends: the daemon must not wait
            await asyncio.Event().wait()

    async def reconfigure(self, ctx: SkillContext) -> None:
        self.ctx = ctx

    async def setup(self, ctx: SkillContext) -> None:
        self.ctx = ctx
        await ctx.logger.ainfo("probe_ready", config=json.dumps(ctx.config))

    def prompt_context(self) -> str:
        return f"probe context: {self.calls} calls"

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        self.calls += 1
        assert self.ctx is not None
        ctx = self.ctx
        if tool_name == "echo":
            return ToolResult(json.dumps({"echo": args["text"]}))
        if tool_name == "read":
            try:
                path = args["path"]
                if os.path.isdir(path):  # noqa: ASYNC240 (the probe is the point)
                    os.listdir(path)
                else:
                    with open(path, "rb") as f:  # noqa: ASYNC230
                        f.read(1)
            except OSError as exc:
                return ToolResult(json.dumps({"error": type(exc).__name__, "errno": exc.errno}))
            return ToolResult(json.dumps({"read": True}))
        if tool_name == "whoami":
            info = {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups()}
            return ToolResult(json.dumps({**info, "env": sorted(os.environ)}))
        if tool_name == "remember":
            await ctx.storage.set_setting(args["key"], args["value"])
            return ToolResult("{}")
        if tool_name == "recall":
            value = await ctx.storage.get_setting(args["key"])
            return ToolResult(json.dumps({"value": value}))
        if tool_name == "announce":

            async def later() -> None:
                await asyncio.sleep(float(args.get("delay_s", 0)))
                await ctx.inject_turn(args["prompt"], dedup_key="probe")

            ctx.background_task("announce", later, restart_on_crash=False)
            return ToolResult("{}")
        if tool_name == "stream":
            return ToolResult("{}", self._stream(int(args["chunks"]), args.get("record", True)))
        if tool_name == "beep":
            return ToolResult("{}", PlaySound(b"".join(tone(5, 880.0))))
        if tool_name == "volume":
            return ToolResult("{}", SetVolume(int(args["level"])))
        if tool_name == "stop":
            return ToolResult("{}", CancelMedia())
        if tool_name == "block":
            time.sleep(float(args["seconds"]))  # noqa: ASYNC251 blocks the host's loop: it stops answering
            return ToolResult("{}")
        if tool_name == "crash":
            os._exit(3)
        if tool_name == "flood":
            for i in range(100_000):
                ctx.logger.info("flood", i=i)
            await asyncio.sleep(5)
            return ToolResult("{}")
        if tool_name == "secret":
            await ctx.secrets.set(args["key"], args["value"])
            return ToolResult(json.dumps({"keys": await ctx.secrets.keys()}))
        if tool_name == "call_in":  # a claim no tool returns: an incoming call
            handle = await ctx.start_input_claim(self._claim(ctx))
            reason = await handle.wait_end()
            return ToolResult(json.dumps({"ended": reason.value}))
        if tool_name == "listen":

            async def heard(data: dict[str, Any]) -> None:
                await ctx.storage.set_setting("event", json.dumps(data))

            ctx.subscribe_client_event(args["key"], heard)
            return ToolResult("{}")
        if tool_name == "tell":
            await ctx.emit_server_event(args["event"], {"from": "probe"})
            return ToolResult("{}")
        if tool_name == "stubborn":
            self.stubborn = True
            return ToolResult("{}")
        if tool_name == "setting":
            return ToolResult(json.dumps({"config": ctx.config}))
        if tool_name == "claim":
            return ToolResult("{}", self._claim(ctx))
        raise ValueError("the probe failed on purpose")

    def _claim(self, ctx: SkillContext) -> InputClaim:
        """A call: each mic frame's length is added up in storage; the speaker plays
        two chunks of :func:`tone`; the end's reason is stored."""
        heard = {"bytes": 0}

        async def on_mic_frame(pcm: bytes) -> None:
            heard["bytes"] += len(pcm)
            await ctx.storage.set_setting("mic_bytes", str(heard["bytes"]))

        async def on_claim_end(reason: ClaimEndReason) -> None:
            await ctx.storage.set_setting("claim_end", reason.value)

        async def speaker() -> AsyncIterator[bytes]:
            for chunk in tone(2, 660.0):
                yield chunk

        return InputClaim(
            on_mic_frame=on_mic_frame,
            speaker_source=speaker(),
            on_claim_end=on_claim_end,
            title="probe call",
        )

    def _stream(self, chunks: int, record: bool) -> AudioStream:
        """``chunks`` of :func:`tone`; ``record``: each chunk sent is written to storage
        (a round trip to the daemon per chunk), and where it was closed."""
        ctx = self.ctx
        assert ctx is not None

        async def factory() -> AsyncIterator[bytes]:
            sent = 0
            try:
                for chunk in tone(chunks):
                    yield chunk
                    sent += 1
                    if record:
                        await ctx.storage.set_setting("sent", str(sent))
            finally:
                await ctx.storage.set_setting("closed_after", str(sent))

        return AudioStream(factory=factory, content_type=ContentType.NONMIXABLE, label="probe")
