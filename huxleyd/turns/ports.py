"""What the turn layer needs from the layers around it, as small protocols.

The coordinator is pure logic over these ports: the audio engine
(:class:`AudioPort`), the volume control (:class:`VolumePort`), and the
provider (:class:`~huxleyd.providers.base.ProviderSession`). Tests pass
recording fakes; the daemon passes the real engine and connection.

The coordinator's own edges to its parts live beside the part that uses
them: :class:`~huxleyd.turns.replies.TurnControl` (what the reply may do to
the turn), :class:`~huxleyd.turns.inputs.InputTurn` (what the button, the
wake word and the mute may do to it) and
:class:`~huxleyd.turns.proactive.ConversationPort` (what injects and claims
may see and ask); the coordinator implements all three, and no part imports
the coordinator.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from huxleyd.audio.types import MicFrame, SourceName
from huxleyd.audio.volume import LevelChange

Spawn = Callable[[Coroutine[Any, Any, Any], str], asyncio.Task[Any]]
"""How a part runs a task its owner cancels at close (``Coordinator.spawn``)."""


class SourcePort(Protocol):
    """One playback source of the mixer, seen from asyncio: every per-source
    operation lives here (``huxleyd.audio.source.PlaybackSource`` implements it)."""

    async def write(self, pcm: bytes, *, item_id: str | None = None) -> None:
        """Queue PCM16 24 kHz mono; waits while the source's ring is full."""
        ...

    def queued_ms(self) -> float: ...

    @property
    def write_pos(self) -> int:
        """Samples ever queued on this source (a position on its timeline)."""
        ...

    async def wait_played(self, position: int) -> None:
        """Return once the speaker has played the source up to ``position``."""
        ...

    async def drained(self) -> None:
        """Return once everything queued so far has been played."""
        ...

    def played_ms(self, item_id: str) -> int:
        """Milliseconds of ``item_id`` that have really reached the speaker."""
        ...

    def flush(self) -> None:
        """Drop what is queued at once (ramped): barge-in."""
        ...

    def duck(self) -> None: ...

    def unduck(self) -> None: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...


class AudioPort(Protocol):
    """The audio engine, as the coordinator uses it."""

    def source(self, name: SourceName) -> SourcePort: ...

    def play_earcon(self, pcm: bytes, *, before_speech: bool = True) -> object:
        """Play ``pcm`` now; speech queued after it waits until it has played."""
        ...

    async def read_mic(self) -> MicFrame: ...

    def set_capture_active(self, active: bool) -> None:
        """Queue mic frames only while someone listens (PTT held, a claim)."""
        ...

    def drain_mic(self) -> int:
        """Discard queued mic frames; returns how many."""
        ...

    def set_capture_rate(self, rate_hz: int) -> None: ...


class VolumePort(Protocol):
    """The speaker volume (hardware mixer or software gain), 0-100."""

    async def change(self, percent: int) -> LevelChange:
        """Set, read back, persist; says the level really set and whether it was saved."""
        ...

    async def get_level(self) -> int: ...
