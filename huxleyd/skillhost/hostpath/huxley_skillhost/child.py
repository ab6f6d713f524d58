"""The skill host process: one third-party skill, served over the link.

Started by the daemon (``huxleyd.skillhost.remote``) as
``python -P -s -m huxley_skillhost --fd N`` with the skills environment's
interpreter, a clean environment, and (as root) another user. It finds the
skill in its own environment's ``huxley.skills`` entry points, builds a
:class:`~huxley_sdk.SkillContext` whose callables are messages to the daemon
(storage, secrets, ``inject_turn``…), and answers the daemon's requests.

Imports the standard library, ``huxley_sdk``, :mod:`.link` and :mod:`.wire` only.
The host keeps nothing the daemon does not give it: no key, no database,
no state directory (it could not read them: it runs as another user).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from huxley_sdk import (
    AudioStream,
    CancelMedia,
    ClaimEndReason,
    ClaimHandle,
    InjectPriority,
    InputClaim,
    PlaySound,
    SetVolume,
    Skill,
    SkillContext,
    ToolResult,
)
from huxley_sdk.context import BackgroundTaskHandle, CoroFactory
from huxley_sdk.contract import PermanentFailure, SpeakVerbatim, StopRetrying

from . import link
from .wire import Link, LinkLogger, LinkSecrets, LinkStorage

GROUP = "huxley.skills"
TASK_DELAYS_S = (1.0, 3.0, 10.0, 30.0, 60.0)
"""Restart delays of a crashed background task (the daemon's backoff, rule 7)."""


def import_skill(name: str, distribution: str) -> tuple[str, Any]:
    """(the entry point's value, what it names): the import, which may take
    seconds (a thread may run it); ValueError with one line if it cannot."""
    found = [ep for ep in entry_points(group=GROUP) if ep.name == name]
    wanted = _norm(distribution)
    match = [
        ep for ep in found if ep.dist is not None and _norm(ep.dist.metadata["Name"]) == wanted
    ]
    chosen = match or found
    if not chosen:
        raise ValueError(f"no skill {name!r} in the skills environment")
    ep = chosen[0]
    try:
        return ep.value, ep.load()
    except Exception as exc:
        raise ValueError(f"cannot load {ep.value}: {type(exc).__name__}: {exc}") from exc


def make_skill(name: str, imported: tuple[str, Any]) -> Skill:
    """The skill object from what :func:`import_skill` found (on the event loop: a
    skill's constructor may expect one)."""
    value, target = imported
    try:
        obj: Any = target() if isinstance(target, type) else target
    except Exception as exc:
        raise ValueError(f"cannot load {value}: {type(exc).__name__}: {exc}") from exc
    missing = [m for m in ("name", "tools", "handle") if not hasattr(obj, m)]
    if missing:
        raise ValueError(f"{value} is not a Skill: missing {', '.join(missing)}")
    if obj.name != name:
        raise ValueError(f"its name is {obj.name!r} but it is registered as {name!r}")
    skill: Skill = obj
    return skill


def _being_cancelled() -> bool:
    """The running task has a cancel pending: the error just caught is the cancel
    (a library turned it into its own), not a crash to restart. The daemon's
    ``huxleyd.providers.retry.being_cancelled``, which this process cannot import."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _norm(name: str) -> str:
    return name.replace("_", "-").replace(".", "-").lower()


class Host:
    """The skill, its context and everything in flight for the daemon."""

    def __init__(self, wire: Link) -> None:
        self.wire = wire
        self.skill: Skill | None = None
        self._tasks: dict[int, asyncio.Task[None]] = {}
        """Calls, setups and invokes in flight, by the daemon's seq (Cancel finds them)."""
        self._refs: dict[int, Callable[..., Awaitable[Any]]] = {}
        self._streams: dict[int, Callable[[], AsyncIterator[bytes]]] = {}
        self._running: dict[int, tuple[asyncio.Task[None], asyncio.Semaphore]] = {}
        self._next_id = 0
        self._background: list[asyncio.Task[None]] = []
        self.stopping = asyncio.Event()

    # ---------------------------------------------------------- dispatch

    def receive(self, message: link.Message) -> None:
        """One message from the daemon; long work runs in its own task."""
        match message:
            case link.Ping(seq):
                self.wire.send(link.Pong(seq, self.prompt_context()))
            case link.Reply():
                self.wire.replied(message)
            case link.Cancel(seq):
                task = self._tasks.get(seq)
                if task is not None:
                    task.cancel()
            case link.StreamOpen(stream, credit):
                self._open(stream, credit)
            case link.Credit(stream, chunks):
                running = self._running.get(stream)
                if running is not None:
                    for _ in range(chunks):
                        running[1].release()
            case link.StreamClose(stream):
                running = self._running.get(stream)
                if running is not None:
                    running[0].cancel()
                else:
                    self._streams.pop(stream, None)
                    self.wire.send(link.StreamEnd(stream))
            case link.Load() | link.Setup() | link.Reconfigure() | link.Call() | link.Invoke():
                self._spawn(message.seq, self._answer(message))
            case link.Teardown(seq):
                self._spawn(seq, self._teardown(seq))

    def _spawn(self, seq: int, coro: Awaitable[None]) -> None:
        async def run() -> None:
            try:
                await coro
            finally:
                self._tasks.pop(seq, None)

        self._tasks[seq] = asyncio.get_running_loop().create_task(run())

    async def _answer(self, message: link.Message) -> None:
        seq: int = getattr(message, "seq")  # noqa: B009 (every request has one)
        try:
            value, pcm = await self._do(message)
        except asyncio.CancelledError:
            self.wire.send(link.Done(seq, error="cancelled"))
            raise
        except Exception as exc:
            self.wire.send(
                link.Done(seq, error=f"{type(exc).__name__}: {' '.join(str(exc).split())}")
            )
            return
        self.wire.send(link.Done(seq, value=value, pcm=pcm))

    async def _do(self, message: link.Message) -> tuple[Any, bytes]:
        match message:
            case link.Load(_, name, distribution):
                # the import in a thread: the loop keeps pinging the watchdog
                # while a slow module imports (under emulation, seconds)
                imported = await asyncio.to_thread(import_skill, name, distribution)
                self.skill = make_skill(name, imported)
                return self._description(self.skill), b""
            case link.Setup(_, config, language, timezone, data_dir, make_data_dir):
                if make_data_dir:
                    await asyncio.to_thread(make_folder, Path(data_dir))
                setup = getattr(self._skill, "setup", None)
                if setup is not None:
                    await setup(self._context(config, language, timezone, data_dir))
                return {"prompt_context": self.prompt_context()}, b""
            case link.Reconfigure(_, config, language, timezone):
                hook = getattr(self._skill, "reconfigure", None)
                if hook is not None:
                    await hook(self._context(config, language, timezone, self._data_dir))
                return {"prompt_context": self.prompt_context()}, b""
            case link.Call(_, tool, args):
                result: object = await self._skill.handle(tool, args)
                if not isinstance(result, ToolResult):
                    raise TypeError(f"the skill returned {type(result).__name__}, not a ToolResult")
                effect, pcm = self._effect(result)
                value = {"output": result.output, "effect": effect}
                return {**value, "prompt_context": self.prompt_context()}, pcm
            case link.Invoke(_, ref, args, pcm):
                callback = self._refs[ref]
                await callback(*([pcm] if pcm else []), *args)
                return None, b""
        raise ValueError(f"unexpected {type(message).__name__}")

    @property
    def _skill(self) -> Skill:
        if self.skill is None:
            raise RuntimeError("no skill loaded")
        return self.skill

    _data_dir = "."

    @staticmethod
    def _description(skill: Skill) -> dict[str, Any]:
        schema = getattr(skill, "config_schema", None)
        timeouts = getattr(skill, "tool_timeouts_s", None)
        return {
            "tools": [
                {"name": t.name, "description": t.description, "parameters": t.parameters}
                for t in skill.tools
            ],
            "config_schema": schema if isinstance(schema, dict) else None,
            "tool_timeouts_s": dict(timeouts) if isinstance(timeouts, dict) else {},
            "has_prompt_context": callable(getattr(skill, "prompt_context", None)),
        }

    def prompt_context(self) -> str:
        getter = getattr(self.skill, "prompt_context", None)
        if getter is None:
            return ""
        try:
            text: object = getter()
        except Exception as exc:
            return f"\0{type(exc).__name__}"  # the daemon logs it once, as in-process
        return text if isinstance(text, str) else "\0not text"

    # ---------------------------------------------------------- side effects

    def _ref(self, callback: Callable[..., Awaitable[Any]]) -> int:
        self._next_id += 1
        self._refs[self._next_id] = callback
        return self._next_id

    def _stream(self, factory: Callable[[], AsyncIterator[bytes]]) -> int:
        self._next_id += 1
        self._streams[self._next_id] = factory
        return self._next_id

    def _effect(self, result: ToolResult) -> tuple[dict[str, Any] | None, bytes]:
        effect = result.side_effect
        if effect is None:
            return None, b""
        if isinstance(effect, PlaySound):
            return {"kind": "play_sound"}, bytes(effect.pcm)
        if isinstance(effect, AudioStream):
            patience = effect.patience.total_seconds() if effect.patience is not None else None
            expired = effect.on_patience_expired
            return {
                "kind": "audio_stream",
                "stream": self._stream(effect.factory),
                "on_complete_prompt": effect.on_complete_prompt,
                "completion_silence_ms": effect.completion_silence_ms,
                "content_type": effect.content_type.value,
                "label": effect.label,
                "preroll_ms": effect.preroll_ms,
                "patience_s": patience,
                "on_patience_expired": self._ref(expired) if expired is not None else None,
            }, b""
        if isinstance(effect, CancelMedia):
            return {"kind": "cancel_media"}, b""
        if isinstance(effect, SetVolume):
            return {"kind": "set_volume", "level": effect.level}, b""
        if isinstance(effect, SpeakVerbatim):
            return {"kind": "speak_verbatim", "text": effect.text}, b""
        if isinstance(effect, InputClaim):
            return self.claim(effect), b""
        raise TypeError(f"unknown side effect {type(effect).__name__}")

    def claim(self, claim: InputClaim) -> dict[str, Any]:
        """An InputClaim as the daemon rebuilds it: refs to its callbacks, a stream."""
        source = claim.speaker_source
        end = claim.on_claim_end

        async def on_end(reason: str) -> None:
            if end is not None:
                await end(ClaimEndReason(reason))

        return {
            "kind": "input_claim",
            "on_mic_frame": self._ref(claim.on_mic_frame),
            "speaker": self._stream(lambda: source) if source is not None else None,
            "on_claim_end": self._ref(on_end),
            "title": claim.title,
        }

    def _open(self, stream: int, credit: int) -> None:
        factory = self._streams.pop(stream, None)
        if factory is None:
            self.wire.send(link.StreamEnd(stream, error="no such stream"))
            return
        window = asyncio.Semaphore(credit)
        task = asyncio.get_running_loop().create_task(self._pump(stream, factory, window))
        self._running[stream] = (task, window)

    async def _pump(
        self, stream: int, factory: Callable[[], AsyncIterator[bytes]], window: asyncio.Semaphore
    ) -> None:
        """Send the stream's chunks, one per credit; close its iterator however it ends."""
        error: str | None = None
        iterator = factory()
        try:
            async for chunk in iterator:
                await window.acquire()
                self.wire.send(link.Chunk(stream, bytes(chunk)))
                await self.wire.drain()
        except asyncio.CancelledError:
            pass  # StreamClose: closed below, its finally runs
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        finally:
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
            self._running.pop(stream, None)
            self.wire.send(link.StreamEnd(stream, error=error))

    # ---------------------------------------------------------- context

    # longer than 50 lines: one SkillContext, each member a closure over this host
    def _context(
        self, config: dict[str, Any], language: str, timezone: str, data_dir: str
    ) -> SkillContext:
        self._data_dir = data_dir
        wire = self.wire

        async def inject_turn(
            prompt: str,
            /,
            *,
            dedup_key: str | None = None,
            priority: InjectPriority = InjectPriority.NORMAL,
        ) -> None:
            await wire.request(
                "inject_turn", prompt=prompt, dedup_key=dedup_key, priority=priority.value
            )

        async def inject_turn_and_wait(prompt: str, /, *, dedup_key: str | None = None) -> Any:
            return await wire.request(
                "inject_turn_and_wait", None, prompt=prompt, dedup_key=dedup_key
            )

        async def start_input_claim(claim: InputClaim, /) -> ClaimHandle:
            claim_id = await wire.request("start_input_claim", claim=self.claim(claim))

            def cancel() -> None:
                asyncio.get_running_loop().create_task(wire.request("claim.cancel", claim=claim_id))

            async def wait_end() -> ClaimEndReason:
                return ClaimEndReason(await wire.request("claim.wait_end", None, claim=claim_id))

            return ClaimHandle(_cancel=cancel, _wait_end=wait_end)

        async def cancel_active_claim(*, reason: ClaimEndReason = ClaimEndReason.NATURAL) -> bool:
            return bool(await wire.request("cancel_active_claim", reason=reason.value))

        def subscribe(key: str, handler: Callable[[dict[str, Any]], Awaitable[None]], /) -> None:
            # Sent now, so the daemon has it before anything the skill does next.
            wire.ask("subscribe", key=key, ref=self._ref(handler))

        async def emit(event: str, data: dict[str, Any] | None = None, /) -> None:
            await wire.request("emit_server_event", event=event, data=data or {})

        return SkillContext(
            logger=LinkLogger(wire),
            storage=LinkStorage(wire),
            secrets=LinkSecrets(wire),
            persona_data_dir=Path(data_dir),
            config=config,
            language=language,
            timezone=timezone,
            inject_turn=inject_turn,
            inject_turn_and_wait=inject_turn_and_wait,
            background_task=self.background_task,
            start_input_claim=start_input_claim,
            cancel_active_claim=cancel_active_claim,
            subscribe_client_event=subscribe,
            emit_server_event=emit,
        )

    def background_task(
        self,
        name: str,
        coro_factory: CoroFactory,
        *,
        restart_on_crash: bool = True,
        max_restarts_per_hour: int = 10,
        on_permanent_failure: Callable[[PermanentFailure], Awaitable[None]] | None = None,
    ) -> BackgroundTaskHandle:
        """``ctx.background_task``: supervised here, restarted with backoff, said in the journal."""
        logger = LinkLogger(self.wire)
        loop = asyncio.get_running_loop()

        async def supervise() -> None:
            restarts = 0
            started = loop.time()
            while True:
                try:
                    await coro_factory()
                    return
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    if _being_cancelled():  # the cancel, raised as the skill's own error
                        raise asyncio.CancelledError from exc
                    logger.error("background_task_crashed", task=name, error=repr(exc))
                    if (
                        isinstance(exc, StopRetrying)
                        or not restart_on_crash
                        or restarts >= max_restarts_per_hour
                    ):
                        if on_permanent_failure is not None:
                            failure = PermanentFailure(
                                name, type(exc).__name__, str(exc), restarts, loop.time() - started
                            )
                            with contextlib.suppress(Exception):
                                await on_permanent_failure(failure)
                        return
                    await asyncio.sleep(TASK_DELAYS_S[min(restarts, len(TASK_DELAYS_S) - 1)])
                    restarts += 1

        task = loop.create_task(supervise(), name=f"skill:{name}")
        self._background.append(task)

        def cancel() -> None:
            task.cancel()

        return BackgroundTaskHandle(name=name, _cancel=cancel, _done=task.done)

    async def _teardown(self, seq: int) -> None:
        error: str | None = None
        teardown = getattr(self.skill, "teardown", None)
        try:
            if teardown is not None:
                await teardown()
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        for task in self._background:
            task.cancel()
        self.wire.send(link.Done(seq, error=error))
        with contextlib.suppress(Exception):
            await self.wire.drain()
        self.stopping.set()


async def serve(sock: socket.socket) -> None:
    """Answer the daemon on ``sock`` until Teardown or until the link closes."""
    reader, writer = await asyncio.open_unix_connection(sock=sock)
    host = Host(Link(writer))

    async def read_all() -> None:
        while True:
            try:
                message = await link.read(reader, link.TO_HOST)
            except link.LinkError:
                return  # the daemon went away: nothing to serve
            host.receive(message)

    loop = asyncio.get_running_loop()
    notify(os.environ, b"READY=1")  # imported: from here on, the watchdog's pings
    reading = loop.create_task(read_all())
    stopping = loop.create_task(host.stopping.wait())
    watchdog = loop.create_task(ping_watchdog(os.environ))
    await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
    watchdog.cancel()
    writer.close()


def make_folder(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)


def notify_address(environ: Mapping[str, str]) -> str | None:
    """``NOTIFY_SOCKET`` as an address to send to, or None when not started by systemd."""
    address = environ.get("NOTIFY_SOCKET", "")
    if not address.startswith(("/", "@")):
        return None
    return "\0" + address[1:] if address.startswith("@") else address


def notify(environ: Mapping[str, str], message: bytes) -> bool:
    """One datagram to systemd (``READY=1``); False when not started by systemd."""
    address = notify_address(environ)
    if address is None:
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock, contextlib.suppress(OSError):
        sock.sendto(message, address)
        return True
    return False


async def ping_watchdog(environ: Mapping[str, str]) -> None:
    """``WATCHDOG=1`` to systemd at half its ``WatchdogSec=`` while this loop runs.

    Started by systemd (huxleyd-skillhost@.service, ``Type=notify``), a host
    whose loop hangs stops pinging and the unit kills it: the daemon, another
    user, cannot. systemd arms the watchdog only at ``READY=1``, which the host
    says once its modules are imported (:func:`serve`, :func:`main`): the
    imports took over 5 s under emulation, and a watchdog armed at the exec
    killed a host that was still starting. Nothing to do when not started
    that way."""
    address = notify_address(environ)
    usec = environ.get("WATCHDOG_USEC", "")
    if (
        address is None
        or not usec.isdigit()
        or environ.get("WATCHDOG_PID", str(os.getpid())) != str(os.getpid())
    ):
        return
    every_s = int(usec) / 2e6
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        while True:
            with contextlib.suppress(OSError):
                sock.sendto(b"WATCHDOG=1", address)
            await asyncio.sleep(every_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="huxley_skillhost")
    parser.add_argument("--fd", type=int, help="the link's socket")
    parser.add_argument("--inventory", action="store_true", help="print the skills as JSON")
    args = parser.parse_args(argv)
    if args.inventory:
        found = inventory()
        notify(os.environ, b"READY=1")  # Type=notify: a start that ends in READY
        print(json.dumps(found))
        return 0
    if args.fd is None:
        parser.error("--fd is required")
    sock = socket.socket(fileno=args.fd)
    asyncio.run(serve(sock))
    return 0


def inventory() -> dict[str, dict[str, Any]]:
    """Skill name → {distribution: its ``config_schema``} in this environment.

    The schema is the class attribute Huxley's skills declare (read after
    importing the module, never instantiating the skill), so the daemon can
    check a persona's table before the skill starts; None when there is none
    or the module does not import (Load says why, at the start)."""
    found: dict[str, dict[str, Any]] = {}
    for ep in entry_points(group=GROUP):
        dist = ep.dist.metadata["Name"] if ep.dist is not None else "(unknown distribution)"
        try:
            schema = getattr(ep.load(), "config_schema", None)
        except Exception:
            schema = None
        found.setdefault(ep.name, {})[dist] = schema if isinstance(schema, dict) else None
    return found
