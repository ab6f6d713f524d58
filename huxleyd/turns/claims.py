"""Input claims: the bookkeeping of ``InputClaim`` (who has the mic, and why it ended).

Layer: pure asyncio logic. The coordinator does the provider and mixer
parts (``response.cancel`` if active, ``input_audio_buffer.clear``, no more
appends, COMMS focus, the ``comms`` mixer source); this module keeps the
one live claim, feeds it, and ends it exactly once.

How the coordinator uses it::

    claims = ClaimRegistry(on_end=resume_provider)   # called after on_claim_end
    handle = claims.start(claim, now=clock.monotonic())  # ClaimBusyError if one is live
    pump = asyncio.create_task(handle.pump_speaker(engine.source("comms").write))
    # mic loop, while claims.active is not None:
    await claims.deliver_mic_frame(frame.pcm)         # False once the claim is over
    # PTT press:
    if claims.active is not None:
        await claims.ptt_pressed(clock.monotonic())   # ignored in the first 300 ms
    # PREEMPT inject:
    await claims.end(ClaimEndReason.PREEMPTED)

Ending, whatever the cause (``handle.cancel()`` → NATURAL, the speaker
source running out → NATURAL, PTT → USER_PTT, ``end(PREEMPTED)``, a callback
or the source raising → ERROR): the claim stops being :attr:`active` at
once, the speaker pump stops (returns normally; its source is closed),
``on_claim_end`` is awaited exactly once (an exception there is logged and
swallowed), ``on_end`` is called, and only then does ``wait_end()`` return
the reason (so ``on_claim_end`` must not await its own ``wait_end()``).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
from collections.abc import Awaitable, Callable

from huxley_sdk.types import ClaimBusyError, ClaimEndReason, ClaimHandle, InputClaim
from huxleyd.logs import get_logger

log = get_logger("huxleyd.turns")

PTT_GRACE_S = 0.3
"""A press this soon after the claim started is the tail of the press that
started it (or a bounce), not a hang-up."""

Write = Callable[[bytes], Awaitable[None]]
OnEnd = Callable[["ActiveClaim", ClaimEndReason], Awaitable[None] | None]


class ActiveClaim:
    """One claim's lifetime; a skill gets its :attr:`handle`."""

    def __init__(
        self,
        claim_id: str,
        claim: InputClaim,
        *,
        started_at_s: float,
        ptt_grace_s: float = PTT_GRACE_S,
        on_end: OnEnd | None = None,
        release: Callable[[ActiveClaim], None] | None = None,
    ) -> None:
        self.id = claim_id
        self.claim = claim
        self.started_at_s = started_at_s
        self._ptt_grace_s = ptt_grace_s
        self.reason: ClaimEndReason | None = None
        """Why it ended; None while live. Set the moment the end is decided."""
        self.frames_delivered = 0
        self.speaker_bytes = 0
        self._finished: asyncio.Future[ClaimEndReason] = asyncio.get_running_loop().create_future()
        self._pump: asyncio.Task[None] | None = None
        self._pump_stopped_by_end = False
        self._cancel_task: asyncio.Task[bool] | None = None
        self._on_end = on_end
        self._release = release

    @property
    def ended(self) -> bool:
        return self.reason is not None

    @property
    def title(self) -> str:
        return self.claim.title or "claim"

    # -- the skill's side (ClaimHandle) -------------------------------------

    @property
    def handle(self) -> ClaimHandle:
        """The SDK's handle on this claim, what ``ctx.start_input_claim`` returns."""
        return ClaimHandle(_cancel=self.cancel, _wait_end=self.wait_end)

    def cancel(self) -> None:
        """End with NATURAL. Idempotent; the callbacks run in a task of their own."""
        if self.ended or self._cancel_task is not None:
            return
        self._cancel_task = asyncio.get_running_loop().create_task(
            self.end(ClaimEndReason.NATURAL), name=f"{self.id}-cancel"
        )

    async def wait_end(self) -> ClaimEndReason:
        """The reason, once the claim has ended and ``on_claim_end`` has run."""
        return await asyncio.shield(self._finished)

    # -- the coordinator's side ---------------------------------------------

    async def deliver_mic_frame(self, pcm: bytes) -> bool:
        """Hand one mic frame to ``on_mic_frame``. False if the claim is over
        (or just ended with ERROR because the callback raised)."""
        if self.ended:
            return False
        try:
            await self.claim.on_mic_frame(pcm)
        except Exception as exc:
            log.exception("claim_mic_frame_failed", claim=self.id, error=repr(exc))
            await self.end(ClaimEndReason.ERROR)
            return False
        self.frames_delivered += 1
        return True

    async def ptt_pressed(self, now: float) -> bool:
        """Hang up (USER_PTT), unless within the grace (:data:`PTT_GRACE_S`) of
        the start. True if this press ended the claim."""
        if self.ended:
            return False
        since_s = now - self.started_at_s
        if now < self.started_at_s + self._ptt_grace_s:
            log.info("claim_ptt_ignored", claim=self.id, since_start_ms=round(since_s * 1000))
            return False
        return await self.end(ClaimEndReason.USER_PTT)

    async def pump_speaker(self, write: Write) -> None:
        """Copy ``speaker_source`` into ``write`` until it ends or the claim does.

        Exhausted: the claim ends NATURAL. Raised (the source or ``write``):
        ERROR. The claim ending first stops this pump (it returns normally).
        The source is closed on the way out, so the skill's ``finally`` runs.
        Run it as its own task; returns at once without a speaker source.
        """
        source = self.claim.speaker_source
        if source is None or self.ended:
            return
        self._pump = asyncio.current_task()
        reason = ClaimEndReason.NATURAL
        try:
            async for chunk in source:
                if self.reason is not None:  # ended while this chunk was being produced
                    return
                await write(chunk)
                self.speaker_bytes += len(chunk)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if self._pump_stopped_by_end and task is not None and task.uncancel() == 0:
                return  # our own stop, not the caller's cancellation
            raise
        except Exception as exc:
            log.exception("claim_speaker_source_failed", claim=self.id, error=repr(exc))
            reason = ClaimEndReason.ERROR
        finally:
            self._pump = None
            await _aclose(source)
        await self.end(reason)

    async def end(self, reason: ClaimEndReason) -> bool:
        """End the claim with ``reason``. Only the first call counts (True);
        later ones return False at once (``wait_end()`` waits for the first)."""
        if self.ended:
            return False
        self.reason = reason
        if self._release is not None:
            self._release(self)
        pump = self._pump
        if pump is not None and pump is not asyncio.current_task():
            self._pump_stopped_by_end = True
            pump.cancel()
        log.info(
            "claim_ended",
            claim=self.id,
            title=self.title,
            reason=reason.value,
            frames=self.frames_delivered,
            speaker_bytes=self.speaker_bytes,
        )
        try:
            await _call(
                self.claim.on_claim_end, reason, event="claim_end_callback_failed", claim=self.id
            )
            await _call(self._on_end, self, reason, event="claim_on_end_failed", claim=self.id)
        finally:
            self._finished.set_result(reason)
        return True


class ClaimRegistry:
    """At most one live claim. Use on the loop thread."""

    def __init__(self, *, on_end: OnEnd | None = None, ptt_grace_s: float = PTT_GRACE_S) -> None:
        self._active: ActiveClaim | None = None
        self._on_end = on_end
        self._ptt_grace_s = ptt_grace_s
        self._ids = itertools.count(1)

    @property
    def active(self) -> ActiveClaim | None:
        return self._active

    def start(self, claim: InputClaim, *, now: float) -> ActiveClaim:
        """Make ``claim`` the live one. Raises ClaimBusyError if one already is."""
        if not isinstance(claim, InputClaim):
            raise TypeError(f"start_input_claim expects an InputClaim, got {claim!r}")
        if not callable(claim.on_mic_frame):
            raise TypeError(
                f"InputClaim.on_mic_frame must be an async callable, got {claim.on_mic_frame!r}"
            )
        if self._active is not None:
            raise ClaimBusyError(
                f"cannot start {claim.title or 'a claim'!r}: {self._active.title!r} "
                f"({self._active.id}) holds the microphone"
            )
        active = ActiveClaim(
            f"claim-{next(self._ids)}",
            claim,
            started_at_s=now,
            ptt_grace_s=self._ptt_grace_s,
            on_end=self._on_end,
            release=self._released,
        )
        self._active = active
        log.info(
            "claim_started",
            claim=active.id,
            title=active.title,
            speaker=claim.speaker_source is not None,
        )
        return active

    async def deliver_mic_frame(self, pcm: bytes) -> bool:
        """To the live claim; False when there is none (send it to the provider)."""
        active = self._active
        return False if active is None else await active.deliver_mic_frame(pcm)

    async def ptt_pressed(self, now: float) -> bool:
        """True if the press hung up the live claim."""
        active = self._active
        return False if active is None else await active.ptt_pressed(now)

    async def end(self, reason: ClaimEndReason) -> bool:
        """End the live claim, if any, with ``reason``."""
        active = self._active
        return False if active is None else await active.end(reason)

    def _released(self, claim: ActiveClaim) -> None:
        if self._active is claim:
            self._active = None


async def _call(
    callback: Callable[..., object] | None, *args: object, event: str, claim: str
) -> None:
    """Call a sync or async callback; log (as ``event``) and swallow what it raises."""
    if callback is None:
        return
    try:
        result = callback(*args)
        if inspect.isawaitable(result):
            await result
    except Exception as exc:
        log.exception(event, claim=claim, error=repr(exc))


async def _aclose(source: object) -> None:
    aclose = getattr(source, "aclose", None)
    if aclose is None:
        return
    with contextlib.suppress(Exception):
        await aclose()
