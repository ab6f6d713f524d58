"""A third-party skill in its own process, shaped as a Skill for :class:`SkillHost`.

:class:`RemoteSkill` has a skill's members (``name``, ``tools``, ``handle``,
``setup``, ``reconfigure``, ``teardown``, ``prompt_context``,
``config_schema``, ``tool_timeouts_s``); each one is a message to the skill's
host process (:mod:`huxleyd.skillhost.process`). So the :class:`SkillHost`
runs it as any other skill (budgets, abandoned calls, outputs that always
answer), and the turns code receives the SDK's own side effects: an
:class:`~huxley_sdk.AudioStream` whose factory reads PCM from the link (the
host sends a chunk per credit: the media runner's ring is the backpressure),
an :class:`~huxley_sdk.InputClaim` whose callbacks are messages.

What the skill's context asks for (storage, secrets, ``inject_turn``…) is
served here from the daemon's own :class:`~huxley_sdk.SkillContext` of the
skill, so the database stays in the daemon and each host reaches only its
own skill's namespace: one host, one skill, one namespace.

Setting up starts a fresh host; a host that dies, hangs or floods is killed
and ``on_down(name, reason)`` is told (the runtime leaves the skill out and
retries its setup with backoff).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from huxley_sdk import (
    AudioStream,
    CancelMedia,
    ClaimEndReason,
    ClaimHandle,
    ContentType,
    InjectPriority,
    InputClaim,
    PlaySound,
    SetVolume,
    SkillContext,
    ToolDefinition,
    ToolResult,
)
from huxley_sdk.contract import SideEffect, SpeakVerbatim
from huxleyd.errors import SkillHostError
from huxleyd.logs import get_logger
from huxleyd.skillhost.hostpath.huxley_skillhost import link
from huxleyd.skillhost.launchers import launcher_for
from huxleyd.skillhost.process import HostLauncher, HostLink, inventory
from huxleyd.skillhost.skillenv import SkillsEnv, skills_env
from huxleyd.skillhost.sources import SkillSource, with_remote

LOAD_DEADLINE_S = 15.0
RECONFIGURE_DEADLINE_S = 10.0
TEARDOWN_DEADLINE_S = 4.0
MIC_FRAME_DEADLINE_S = 1.0
CALLBACK_DEADLINE_S = 5.0
CLOSE_WAIT_S = 2.0
log = get_logger("huxleyd.skills")
ADDED_KEYS = ("timezone", "_language")
"""Keys the daemon's context factory adds to every skill's config (not the persona's)."""


def with_third_party(
    local: Mapping[str, list[SkillSource]], env: SkillsEnv | None = None
) -> tuple[dict[str, list[SkillSource]], str | None]:
    """The daemon's own skills and the skills environment's, and why the latter are missing.

    No skills environment: only the daemon's own (nothing to say). One that
    cannot list its skills (a broken interpreter, no skill user as root): the
    daemon's own, and one line for every third-party skill the persona names.
    """
    env = env or skills_env()
    if not env.exists():
        return dict(local), None
    try:
        found = inventory(launcher_for(env))
    except SkillHostError as exc:
        reason = " ".join(str(exc).split())
        log.error("skills_env_unusable", path=str(env.root), reason=reason)
        return dict(local), f"third-party skills are left out: {reason}"
    return with_remote(local, found), None


DATA_VARIABLE = "HUXLEYD_SKILLS_DATA"
"""Names the folder of the third-party skills' data folders (tests)."""


def skills_data_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where each third-party skill's ``persona_data_dir`` is: beside the skills environment.

    Not the persona's data folder: that is in the daemon's state directory,
    which the skill user cannot enter (and which holds other skills' files).
    """
    env = os.environ if environ is None else environ
    explicit = env.get(DATA_VARIABLE)
    return Path(explicit) if explicit else skills_env(dict(env)).root.parent / "data"


def skill_data_dir(name: str, launcher: HostLauncher, root: Path | None = None) -> Path:
    """``<root>/<skill>``, 0700 and owned by the user the skill's host runs as.

    An activated host makes its own (the daemon cannot write where the skill
    user owns): only the path is given to it."""
    path = (root or skills_data_root()) / name
    if not launcher.makes_data_dirs:
        return path
    path.mkdir(parents=True, exist_ok=True)
    if launcher.uid is not None and launcher.gid is not None:
        os.chown(path, launcher.uid, launcher.gid)
    path.chmod(0o700)
    return path


class RemoteToolError(Exception):
    """A tool raised in the host; the subclass is named as the skill's exception was."""


def _remote_error(error: str) -> Exception:
    name, _, message = error.partition(": ")
    if not name.isidentifier():
        return RemoteToolError(error)
    error_class: type[RemoteToolError] = type(name, (RemoteToolError,), {})
    return error_class(message)


class RemoteSkill:
    """One third-party skill whose code runs in a host process of its own."""

    def __init__(
        self,
        name: str,
        distribution: str,
        *,
        launcher: Callable[[], HostLauncher] | None = None,
        ping_every_s: float | None = None,
        config_check: Callable[[Any, dict[str, Any]], None] | None = None,
        data_root: Path | None = None,
    ) -> None:
        self._name = name
        self._data_root = data_root
        self._config_check = config_check
        """Checks the persona's table against the ``config_schema`` the host reports
        (``host.check_config``; passed in, as the host module imports this one)."""
        self.distribution = distribution
        self._launcher = launcher or (lambda: launcher_for(skills_env()))
        self._ping_every_s = ping_every_s
        self.tools: list[ToolDefinition] = []
        self.config_schema: dict[str, Any] | None = None
        self.tool_timeouts_s: dict[str, float] = {}
        self.link: HostLink | None = None
        self.on_down: Callable[[str, str], None] | None = None
        """Told ``(skill, reason)`` when a running host dies, hangs or floods."""
        self._ctx: SkillContext | None = None
        self._claims: dict[int, ClaimHandle] = {}
        self._log = get_logger(f"huxley.skill.{name}", skill=name)

    @property
    def name(self) -> str:
        return self._name

    @property
    def pid(self) -> int | None:
        """The host process's pid, while one runs."""
        return self.link.pid if self.link is not None and self.link.down is None else None

    # ---------------------------------------------------------- lifecycle

    async def setup(self, ctx: SkillContext) -> None:
        """Start a fresh host, load the skill there, check its config, run its setup."""
        await self._stop_link()
        self._ctx = ctx
        host = HostLink(
            self._launcher(),
            label=self._name,
            on_request=self._serve,
            on_log=self._on_log,
            on_down=self._down,
        )
        if self._ping_every_s is not None:
            host.ping_every_s = self._ping_every_s
        self.link = host
        try:
            await host.start()
            loaded = await host.ask(
                lambda s: link.Load(s, self._name, self.distribution), LOAD_DEADLINE_S
            )
            self._describe(self._answer(loaded))
            self._check_config(ctx.config)
            data_dir = str(
                await asyncio.to_thread(skill_data_dir, self._name, host.launcher, self._data_root)
            )
            done = await host.ask(
                lambda s: link.Setup(
                    s,
                    ctx.config,
                    ctx.language,
                    ctx.timezone,
                    data_dir,
                    make_data_dir=not host.launcher.makes_data_dirs,
                ),
                None,
            )
            self._answer(done)
        except BaseException:
            host.quiet()
            host.kill("its setup did not finish")
            raise

    def _check_config(self, config: dict[str, Any]) -> None:
        if self._config_check is not None:
            self._config_check(self, {k: v for k, v in config.items() if k not in ADDED_KEYS})

    async def reconfigure(self, ctx: SkillContext) -> None:
        self._ctx = ctx
        host = self._live()
        done = await host.ask(
            lambda s: link.Reconfigure(s, ctx.config, ctx.language, ctx.timezone),
            RECONFIGURE_DEADLINE_S,
        )
        self._answer(done)

    async def teardown(self) -> None:
        await self._stop_link()

    async def _stop_link(self) -> None:
        if self.link is not None:
            await self.link.stop(TEARDOWN_DEADLINE_S)

    def prompt_context(self) -> str:
        if self.link is None or self.link.down is not None:
            return ""
        text = self.link.prompt_context
        if text.startswith("\0"):
            raise RuntimeError(f"prompt_context failed in the skill host: {text[1:]}")
        return text

    def _describe(self, value: Any) -> None:
        self.tools = [
            ToolDefinition(t["name"], t["description"], t["parameters"]) for t in value["tools"]
        ]
        schema = value.get("config_schema")
        self.config_schema = schema if isinstance(schema, dict) else None
        self.tool_timeouts_s = {str(k): float(v) for k, v in value["tool_timeouts_s"].items()}

    def _live(self) -> HostLink:
        if self.link is None:
            raise SkillHostError(f"skill {self._name!r} has no host (not set up)")
        if self.link.down is not None:
            raise SkillHostError(self.link.down)
        return self.link

    def _answer(self, done: link.Done | link.Pong) -> Any:
        if not isinstance(done, link.Done):
            raise SkillHostError("a Pong answered a request")
        if done.error is not None:
            raise _remote_error(done.error)
        value = done.value
        if isinstance(value, dict) and isinstance(value.get("prompt_context"), str):
            self._live().prompt_context = value["prompt_context"]
        return value

    def _down(self, reason: str) -> None:
        for handle in self._claims.values():
            handle.cancel()
        self._claims.clear()
        if self.on_down is not None:
            self.on_down(self._name, reason)

    # ---------------------------------------------------------- tools

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        host = self._live()
        done = await host.ask(lambda s: link.Call(s, tool_name, args), None)
        value = self._answer(done)
        pcm = done.pcm if isinstance(done, link.Done) else b""
        return ToolResult(str(value["output"]), self._effect(host, value.get("effect"), pcm))

    def _effect(self, host: HostLink, desc: Any, pcm: bytes) -> SideEffect | None:
        """The SDK's side effect, rebuilt with callables that reach the host."""
        if desc is None:
            return None
        kind = desc.get("kind")
        if kind == "play_sound":
            return PlaySound(pcm)
        if kind == "cancel_media":
            return CancelMedia()
        if kind == "set_volume":
            return SetVolume(desc["level"])
        if kind == "speak_verbatim":
            return SpeakVerbatim(desc["text"])
        if kind == "audio_stream":
            expired = desc.get("on_patience_expired")
            patience = desc.get("patience_s")
            return AudioStream(
                factory=functools.partial(self._iterate, host, desc["stream"]),
                on_complete_prompt=desc.get("on_complete_prompt"),
                completion_silence_ms=int(desc.get("completion_silence_ms") or 0),
                content_type=ContentType(desc.get("content_type", "nonmixable")),
                label=desc.get("label"),
                preroll_ms=int(desc.get("preroll_ms") or 0),
                on_patience_expired=(
                    self._callback(host, expired, CALLBACK_DEADLINE_S) if expired else None
                ),
                patience=timedelta(seconds=patience) if patience is not None else None,
            )
        if kind == "input_claim":
            return self._claim(host, desc)
        raise SkillHostError(f"unknown side effect {kind!r} from the skill host")

    def _claim(self, host: HostLink, desc: dict[str, Any]) -> InputClaim:
        end = self._callback(host, desc["on_claim_end"], CALLBACK_DEADLINE_S)
        mic = self._callback(host, desc["on_mic_frame"], MIC_FRAME_DEADLINE_S, pcm=True)

        async def on_claim_end(reason: ClaimEndReason) -> None:
            await end(reason.value)

        speaker = desc.get("speaker")
        return InputClaim(
            on_mic_frame=mic,
            speaker_source=self._iterate(host, speaker) if speaker is not None else None,
            on_claim_end=on_claim_end,
            title=desc.get("title"),
        )

    def _callback(
        self, host: HostLink, ref: int, deadline_s: float, *, pcm: bool = False
    ) -> Callable[..., Awaitable[None]]:
        """A daemon-side callable that runs the host's callback ``ref`` (Invoke)."""

        async def invoke(*args: Any) -> None:
            if pcm:  # on_mic_frame(pcm): the frame goes as the message's PCM part
                data, rest = bytes(args[0]), list(args[1:])
            else:
                data, rest = b"", list(args)

            def message(seq: int) -> link.Message:
                return link.Invoke(seq, ref, rest, data)

            if host.down is not None:
                raise SkillHostError(host.down)
            try:
                done = await asyncio.wait_for(host.ask(message, None), deadline_s)
            except TimeoutError:
                raise SkillHostError(f"callback {ref} took over {deadline_s:g} s") from None
            if isinstance(done, link.Done) and done.error is not None:
                raise _remote_error(done.error)

        return invoke

    async def _iterate(self, host: HostLink, stream: int) -> AsyncIterator[bytes]:
        """The chunks of the host's stream ``stream``, one credit given back per chunk taken.

        Closed early (the media runner's ``aclose``), it asks the host to close
        the skill's iterator and waits up to :data:`CLOSE_WAIT_S` for that
        (its ``finally``, the bookmark, has then run)."""
        queue = host.open_stream(stream)
        ended = False
        try:
            while True:
                item = await queue.get()
                if isinstance(item, link.StreamEnd):
                    ended = True
                    if item.error is not None:
                        raise SkillHostError(f"the skill's stream failed: {item.error}")
                    return
                host.took_chunk(stream)
                yield item.pcm
        finally:
            if not ended and host.down is None:
                host.send(link.StreamClose(stream))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(_until_end(queue), CLOSE_WAIT_S)
            host.forget_stream(stream)

    # ---------------------------------------------------------- the context's requests

    def _on_log(self, entry: link.Log) -> None:
        level = entry.level if entry.level in ("debug", "info", "warning", "error") else "info"
        getattr(self._log, level)(entry.event, **entry.fields)

    async def _serve(self, request: link.Request) -> Any:
        """Answer one request of the host's context from the daemon's context of this skill."""
        ctx = self._ctx
        if ctx is None:
            raise SkillHostError("no context yet")
        op, a = request.op, request.args
        if op.startswith("storage."):
            return await _store(ctx, op.removeprefix("storage."), a)
        if op.startswith("secrets."):
            return await _secret(ctx, op.removeprefix("secrets."), a)
        if op == "inject_turn":
            await ctx.inject_turn(
                a["prompt"], dedup_key=a.get("dedup_key"), priority=InjectPriority(a["priority"])
            )
            return None
        if op == "inject_turn_and_wait":
            return await ctx.inject_turn_and_wait(a["prompt"], dedup_key=a.get("dedup_key"))
        if op == "emit_server_event":
            await ctx.emit_server_event(a["event"], a.get("data") or {})
            return None
        if op == "subscribe":
            handler = self._callback(self._live(), int(a["ref"]), CALLBACK_DEADLINE_S)
            ctx.subscribe_client_event(a["key"], handler)
            return None
        if op == "cancel_active_claim":
            return await ctx.cancel_active_claim(reason=ClaimEndReason(a["reason"]))
        return await self._claim_request(ctx, op, a)

    async def _claim_request(self, ctx: SkillContext, op: str, a: dict[str, Any]) -> Any:
        if op == "start_input_claim":
            handle = await ctx.start_input_claim(self._claim(self._live(), a["claim"]))
            claim_id = len(self._claims) + 1
            self._claims[claim_id] = handle
            return claim_id
        if op == "claim.cancel":
            self._claims[int(a["claim"])].cancel()
            return None
        if op == "claim.wait_end":
            reason = await self._claims[int(a["claim"])].wait_end()
            return reason.value
        raise SkillHostError(f"unknown request {op!r}")


async def _until_end(queue: asyncio.Queue[link.Chunk | link.StreamEnd]) -> None:
    while not isinstance(await queue.get(), link.StreamEnd):
        pass


async def _store(ctx: SkillContext, op: str, a: dict[str, Any]) -> Any:
    storage = ctx.storage
    if op == "get":
        return await storage.get_setting(str(a["key"]))
    if op == "set":
        await storage.set_setting(str(a["key"]), str(a["value"]))
        return None
    if op == "list":
        return [list(row) for row in await storage.list_settings(str(a.get("prefix", "")))]
    if op == "delete":
        await storage.delete_setting(str(a["key"]))
        return None
    raise SkillHostError(f"unknown storage request {op!r}")


async def _secret(ctx: SkillContext, op: str, a: dict[str, Any]) -> Any:
    secrets = ctx.secrets
    if op == "get":
        return await secrets.get(str(a["key"]))
    if op == "set":
        await secrets.set(str(a["key"]), str(a["value"]))
        return None
    if op == "delete":
        await secrets.delete(str(a["key"]))
        return None
    if op == "keys":
        return await secrets.keys()
    raise SkillHostError(f"unknown secrets request {op!r}")
