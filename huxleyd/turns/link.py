"""What the turn layer knows of the provider connection, and the cues that say it.

Layer: pure turn logic (no asyncio). The coordinator hands every connection
state to :class:`Link`: :meth:`Link.track` first (is the link down? was the
setup refused?), then, once a turn lost with the connection has ended,
:meth:`Link.announce`, which plays the earcon that says what happened and
logs it, each once per episode (offline, the key refused), never on every
retry. Before a press or a wake word opens a turn, :meth:`Link.refuse_turn`
says whether anyone would hear it, and if not, says so at once.

It may touch: the turn outputs (earcons, the OFFLINE activity). It never
ends a turn itself: that is the coordinator's.
"""

from __future__ import annotations

from collections.abc import Mapping

from huxleyd.audio.types import Earcon
from huxleyd.logs import get_logger
from huxleyd.providers.base import ConnectionState, EndReason
from huxleyd.turns.cues import failure_cue
from huxleyd.turns.news import Activity
from huxleyd.turns.outputs import TurnOutputs

log = get_logger("huxleyd.turns")


class Link:
    """The connection as the turn layer sees it."""

    def __init__(self, outputs: TurnOutputs, earcons: Mapping[str, bytes]) -> None:
        self._outputs = outputs
        self._earcons = earcons
        self.offline = False
        """The transport gave up for now and retries with backoff (cued once)."""
        self.key_refused = False
        """The provider refused the API key (the connection retries slowly)."""
        self.link_down = False
        """The socket is gone (reconnecting…): a turn would be lost."""
        self.setup_failed = False
        """The image's setup failed: nothing can connect (``huxleyd.config.setupreport``)."""

    def track(self, state: ConnectionState) -> None:
        """Note ``state`` before anything acts on it."""
        self.link_down = state.link_down
        self.setup_failed = state is ConnectionState.SETUP_FAILED

    def announce(
        self, state: ConnectionState, attempt: int, ended: EndReason | None, *, turn_lost: bool
    ) -> None:
        """The cue and the journal line ``state`` calls for, once per episode.

        ``turn_lost``: a turn was lost with the connection; its one cue
        (after what arrived has played) says it, so a stall or a failure
        adds none of its own here."""
        if state is ConnectionState.STALLED:
            # The reply that was due will not come: a cue now (the lost turn's,
            # else the offline cue), not a silence the user has to wait out.
            if not turn_lost:
                self._cue(Earcon.OFFLINE)
            log.warning("provider_stalled_heard", cue=Earcon.ERROR if turn_lost else Earcon.OFFLINE)
        if state is ConnectionState.FAILED:
            # The provider refused us for good (key, model, setup): say so once,
            # the transport's log line names what to change; ``ended`` is why.
            # A turn lost with it plays this cue as its one cue, after what arrived.
            cue = failure_cue(ended, self._earcons)
            if not turn_lost:
                self._cue(cue)
            log.error("provider_failed", why=ended, cue=cue)
        if (
            state in (ConnectionState.KEY_REFUSED, ConnectionState.KEY_MISSING)
            and not self.key_refused
        ):
            self.key_refused = True
            # Said once, not on every slow retry: "the key was refused".
            self._cue(Earcon.KEY_REFUSED if Earcon.KEY_REFUSED in self._earcons else Earcon.OFFLINE)
            log.error("provider_key_refused_heard")
        if state is ConnectionState.OFFLINE and not self.offline:
            self.offline = True
            self._cue(Earcon.OFFLINE)
            log.warning("provider_offline", attempt=attempt)
        elif state is ConnectionState.CONNECTED and (self.offline or self.key_refused):
            self.offline = self.key_refused = False
            log.info("provider_back_online")

    def refuse_turn(self) -> bool:
        """True (and the user told, by cue and LEDs) when no turn can be heard now."""
        if self.setup_failed:
            # Never a turn: the device is not set up.
            log.info("press_while_setup_failed")
            self._cue(Earcon.ERROR)
            self._outputs.show(Activity.OFFLINE)
            return True
        if self.offline or self.link_down:
            # Nobody would hear the turn: say so now, not after the silent
            # retries (18 s of "thinking", then an error chime).
            log.info("press_while_offline", offline=self.offline)
            self._cue(Earcon.OFFLINE)
            self._outputs.show(Activity.OFFLINE)
            return True
        return False

    def _cue(self, name: Earcon) -> None:
        self._outputs.earcon(name, before_speech=False)
