"""The cascade's conversation: chat messages, and what was heard of each reply.

Layer: pure logic. The realtime providers keep the conversation on the
server; the cascade keeps it here and sends it with every chat request.

Barge-in ("what was heard is what is kept"): each assistant reply is an
*item*; :class:`SpokenLog` records, in play order, each piece of text the
TTS voiced and how long its audio lasts. When the user cuts in,
:meth:`SpokenLog.heard` maps the played milliseconds back to text: every
piece whose audio was played to its end is kept whole; of the piece being
played, the share of its characters equal to the share of its audio that
was played, cut back to the last whole word. (Speech is not uniform, so the
last word is an estimate; a piece is a sentence for a local TTS and a few
characters with ElevenLabs' alignment, where the estimate is tight.) Text
generated but not yet voiced is never kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]
"""One chat message in the OpenAI chat-completions shape."""

CODE_RESULT_PREFIX = "[tool result]"


@dataclass(slots=True)
class SpokenLog:
    """What the TTS voiced for one item: ``(text, duration_ms)`` pieces in play order."""

    pieces: list[tuple[str, float]] = field(default_factory=list)

    def add(self, text: str, duration_ms: float) -> None:
        self.pieces.append((text, max(0.0, duration_ms)))

    @property
    def total_ms(self) -> float:
        return sum(d for _, d in self.pieces)

    def voiced(self) -> str:
        """All text whose audio was produced (not necessarily heard)."""
        return _collapse("".join(t for t, _ in self.pieces))

    def heard(self, audio_end_ms: float) -> str:
        """The text a listener heard when playback stopped at ``audio_end_ms``."""
        whole = "".join(t for t, _ in self.pieces)
        chars = 0
        start = 0.0
        for text, duration in self.pieces:
            end = start + duration
            if end <= audio_end_ms:
                chars += len(text)
            else:
                share = (audio_end_ms - start) / duration if duration > 0 else 0.0
                chars += int(len(text) * max(0.0, share))
                break
            start = end
        return _collapse(_whole_words(whole, chars))


def _whole_words(text: str, chars: int) -> str:
    """The first ``chars`` characters of ``text``, without a trailing partial word."""
    if chars >= len(text):
        return text
    if chars <= 0:
        return ""
    if text[chars].isspace() or text[chars - 1].isspace():
        return text[:chars]
    cut = text.rfind(" ", 0, chars)
    return text[: cut + 1] if cut >= 0 else ""


def _collapse(text: str) -> str:
    return " ".join(text.split())


class ChatHistory:
    """The messages sent with every chat request, oldest first (no system message).

    Assistant messages are registered by item id so a barge-in can rewrite
    them (:meth:`set_assistant_text`). Native tool calls stay paired with
    their outputs: a call that never got one is answered with an error
    before anything else is added (chat APIs refuse unpaired calls). When
    the history grows past ``max_messages``, whole turns are dropped from the
    front.
    """

    def __init__(self, *, max_messages: int = 40) -> None:
        self.messages: list[Message] = []
        self._max = max_messages
        self._items: dict[str, Message] = {}
        self._turn_starts: list[Message] = []
        self._open_calls: list[str] = []

    # ------------------------------------------------------------ adding

    def add_user(self, text: str) -> None:
        """A new user turn (speech as transcribed, or typed text)."""
        self._close_open_calls()
        message: Message = {"role": "user", "content": text}
        self.messages.append(message)
        self._turn_starts.append(message)
        self._trim()

    def add_assistant(
        self,
        item_id: str,
        text: str,
        *,
        tool_calls: Sequence[tuple[str, str, str]] = (),
    ) -> None:
        """The reply of ``item_id``; ``tool_calls`` are native ``(call_id, name, arguments_json)``."""
        self._close_open_calls()
        message: Message = {"role": "assistant", "content": text or None}
        if tool_calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                for cid, name, args in tool_calls
            ]
            self._open_calls = [cid for cid, _, _ in tool_calls]
        elif not text:
            return  # nothing was said: nothing to remember
        self.messages.append(message)
        self._items[item_id] = message

    def add_tool_output(self, call_id: str, output: str) -> bool:
        """A native call's output; False when no open call has that id."""
        if call_id not in self._open_calls:
            return False
        self._open_calls.remove(call_id)
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
        return True

    def add_code_result(self, source: str, output: str, notes: str = "") -> None:
        """A code-prompt call's output, as a user message the model reads."""
        text = f"{CODE_RESULT_PREFIX} {source} returned:\n{output}"
        self.add_note(f"{text}\n\n{notes}" if notes else text)

    def add_note(self, text: str) -> None:
        """A message from the daemon to the model (a tool error), not a new user turn."""
        self._close_open_calls()
        self.messages.append({"role": "user", "content": text})

    # ------------------------------------------------------------ rewriting

    def has_item(self, item_id: str) -> bool:
        return item_id in self._items

    def set_assistant_text(self, item_id: str, text: str) -> bool:
        """Replace what ``item_id`` said (what was heard). False when unknown.

        A message left with no text and no tool calls is removed.
        """
        message = self._items.get(item_id)
        if message is None:
            return False
        if text or message.get("tool_calls"):
            message["content"] = text or None
        else:
            self.messages[:] = [m for m in self.messages if m is not message]
            del self._items[item_id]
        return True

    # ------------------------------------------------------------ reading

    def for_request(self, system: str, *, extra: Sequence[Mapping[str, Any]] = ()) -> list[Message]:
        """``[system, *history, *extra]`` for one chat request (copies)."""
        self._close_open_calls()
        head: list[Message] = [{"role": "system", "content": system}] if system else []
        return head + [dict(m) for m in self.messages] + [dict(m) for m in extra]

    # ------------------------------------------------------------ internals

    def _close_open_calls(self) -> None:
        for call_id in list(self._open_calls):
            self.add_tool_output(call_id, '{"error": "no output: the turn ended first"}')

    def _trim(self) -> None:
        excess = len(self.messages) - self._max
        if excess <= 0:
            return
        starts = {id(m) for m in self._turn_starts}
        for index, message in enumerate(self.messages):
            if index >= excess and id(message) in starts:
                dropped, self.messages = self.messages[:index], self.messages[index:]
                gone = {id(m) for m in dropped}
                self._turn_starts = [m for m in self._turn_starts if id(m) not in gone]
                self._items = {k: m for k, m in self._items.items() if id(m) not in gone}
                return
