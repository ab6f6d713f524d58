"""The cascade provider: ASR → any chat LLM → TTS, driven like a realtime session.

Layer: asyncio glue around the three stage adapters and the pure pieces
(:mod:`.codeprompt`, :mod:`.sentences`, :mod:`.history`). The coordinator
drives it exactly as it drives a
:class:`~huxleyd.providers.transport.ProviderConnection`:

- ``start_turn`` / ``append_audio`` / ``end_turn``: the push-to-talk audio
  is kept here and, on ``end_turn``, sent to the recogniser at once
  (``InputCommitted``; less than 100 ms is refused with
  ``input_audio_buffer_commit_empty``, as OpenAI does);
- ``request_response``: waits for the transcript (nothing heard: the same
  ``commit_empty`` error, so the coordinator says "too short"), then
  ``ResponseStarted``, streams the LLM, cuts its text into whole sentences
  for the TTS, and reports the speech as ``AudioChunk`` events of one
  synthetic item per model reply; then ``ToolCall`` events, then
  ``ResponseDone`` (with the calls, ``had_audio``);
- tool calls are native when ``native_tools`` is set, else the code-prompt
  method: a refused ``<code>`` call is never run; the error goes back to the
  model, which gets ``max_repairs`` more tries inside the same response;
- ``send_tool_output``: a ``tool`` message (native) or a "[tool result]"
  user message (code prompt) in the history;
- ``cancel_response`` (barge-in): the LLM stream is closed (the server stops
  generating), the TTS socket or program is closed, no more audio is
  reported, and the reply is rewritten to the text actually voiced;
  ``truncate(item, audio_end_ms)`` then cuts it to what was heard (see
  :mod:`.history` for the mapping) and answers ``ItemTruncated``.

There is no session to keep alive: ``run()`` reports CONNECTED and
``SessionReady`` and waits for ``close()``; failed requests to a stage
count as failed tries (RECONNECTING, OFFLINE from the fourth in a row),
a successful response as CONNECTED again.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import openai

from huxleyd.errors import ProviderError
from huxleyd.logs import EventLogger, get_logger
from huxleyd.pcm import RATE_HZ, bytes_to_ms, ms_to_bytes
from huxleyd.providers.base import (
    Capabilities,
    ConnectionState,
    ConnectionStatus,
    InterruptAcceptance,
    ReplyListener,
    SessionReports,
    failure_state,
)
from huxleyd.providers.cascade.asr import Transcriber
from huxleyd.providers.cascade.codeprompt import (
    CodeReply,
    parse_reply,
    render_call,
    render_tools_prompt,
)
from huxleyd.providers.cascade.history import ChatHistory
from huxleyd.providers.cascade.llm import ChatModel, NativeCall, TextDelta, native_tools
from huxleyd.providers.cascade.records import (
    MIN_COMMIT_MS,
    Item,
    PendingCall,
    Response,
    StageFailed,
    commit_empty,
)
from huxleyd.providers.cascade.sentences import SentenceSplitter
from huxleyd.providers.cascade.settings import CascadeSettings
from huxleyd.providers.cascade.tts import Synthesizer, TextQueue
from huxleyd.providers.events import (
    AudioChunk,
    Event,
    InputCommitted,
    ItemTruncated,
    ProviderErrorEvent,
    ResponseDone,
    ResponseStarted,
    ResponseStatus,
    Role,
    SessionReady,
    ToolCall,
    TranscriptDelta,
    TranscriptDone,
)

CAPABILITIES = Capabilities(
    text_input=True,
    mid_session_instructions=True,
    mid_session_tools=True,
    response_cancel=True,
    truncate=True,
    interrupt_acceptance=InterruptAcceptance.IMMEDIATE_PROVIDER_ACK,
    input_rate_hz=RATE_HZ,
    output_rate_hz=RATE_HZ,
    verbatim_reader=True,
)
MAX_TURN_AUDIO_MS = 120_000
"""A press holds at most this much audio (the button's hold limit is shorter)."""
MAX_ITEMS = 32
"""Replies remembered for ``truncate`` (the coordinator only cuts the one playing)."""
UNPROMPTED = "Respond now, following your instructions."
"""The user turn sent when the model must speak unprompted (not kept in the history)."""


class CascadeConnection(SessionReports):
    """The cascade behind :class:`~huxleyd.providers.base.ProviderCommands`.

    Build it with :func:`~huxleyd.providers.cascade.factory.create_cascade_connection`
    (or pass the stages yourself); ``task = create_task(conn.run())``; call the
    commands from the event loop; ``await conn.close()`` to stop. Events go to
    ``on_event``, connection states to ``on_state`` (plain callbacks on the loop).
    """

    def __init__(
        self,
        settings: CascadeSettings,
        *,
        transcriber: Transcriber,
        llm: ChatModel,
        synthesizer: Synthesizer,
        on_event: Callable[[Event], None],
        on_state: Callable[[ConnectionStatus], None] | None = None,
        url: str = "",
        logger: EventLogger | None = None,
    ) -> None:
        super().__init__(
            url=url,
            on_event=on_event,
            on_state=on_state,
            logger=logger or get_logger("huxleyd.providers.cascade"),
        )
        self._settings = settings
        self._asr = transcriber
        self._llm = llm
        self._tts = synthesizer
        self._closed = asyncio.Event()
        self._running = False
        self._prefix = secrets.token_hex(3)
        self._ids = itertools.count(1)
        self._instructions = ""
        self._tools: list[dict[str, Any]] = []
        self._history = ChatHistory(max_messages=settings.max_history_messages)
        self._audio = bytearray()
        self._transcript: asyncio.Task[str] | None = None
        self._input_item = ""
        self._turns = 0
        """Counts new inputs, so a recognition left by a cancelled response is known stale."""
        """The item id of the committed user audio being transcribed."""
        self._response: Response | None = None
        self._out_of_band: set[Response] = set()
        self._items: dict[str, Item] = {}
        self._calls: dict[str, PendingCall] = {}
        self._failures = 0
        self.dropped_audio_bytes = 0
        """Mic audio beyond :data:`MAX_TURN_AUDIO_MS` in one turn, not kept."""

    # ------------------------------------------------------------ the connection surface

    @property
    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    @property
    def connected(self) -> bool:
        """A request made now is attempted (running, not closed). Unlike a socket,
        nothing is dropped while a stage is unreachable: each request tries again."""
        return self._running and not self._closed.is_set()

    @property
    def history(self) -> ChatHistory:
        """The conversation as the model will see it next (read it; do not edit)."""
        return self._history

    def session_age_s(self) -> float | None:
        """None: the cascade has no session cap, so nothing needs renewing."""
        return None

    def renew(self, why: str = "session renewal") -> None:
        """Nothing to renew; the history is trimmed as it grows."""

    def hold_renewals_until(self, listener: ReplyListener) -> None:
        """Nothing is ever renewed, so nothing waits."""

    async def run(self) -> None:
        """Report CONNECTED and SessionReady, then wait for :meth:`close`."""
        self._running = True
        self._report(ConnectionStatus(ConnectionState.CONNECTED))
        self._emit(SessionReady(f"cascade_{self._prefix}"))
        self._log.info("cascade_ready", llm=self._url, model=self._llm.model)
        try:
            await self._closed.wait()
        finally:
            self._report(ConnectionStatus(ConnectionState.CLOSED))

    async def close(self) -> None:
        """Stop every running response and recognition. Idempotent."""
        self._closed.set()
        tasks: list[asyncio.Task[Any]] = [
            r.task for r in (self._response, *self._out_of_band) if r and r.task
        ]
        if self._transcript is not None:
            tasks.append(self._transcript)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._response = None
        self._out_of_band.clear()

    # ------------------------------------------------------------ commands

    def configure(
        self, *, instructions: str, tools: Sequence[Mapping[str, Any]], voice: str
    ) -> None:
        """Instructions and tools apply from the next response (``voice``: see the TTS settings)."""
        self._instructions = instructions
        self._tools = [dict(t) for t in tools]

    def start_turn(self) -> None:
        self._audio.clear()
        self._turns += 1
        if self._transcript is not None:
            self._transcript.cancel()
            self._transcript = None

    def append_audio(self, pcm: bytes) -> None:
        room = ms_to_bytes(MAX_TURN_AUDIO_MS) - len(self._audio)
        if len(pcm) > room:
            self.dropped_audio_bytes += len(pcm) - max(0, room)
            pcm = pcm[: max(0, room)]
        self._audio += pcm

    def end_turn(self) -> None:
        pcm, self._audio = bytes(self._audio), bytearray()
        if bytes_to_ms(len(pcm)) < MIN_COMMIT_MS:
            self._emit_soon(commit_empty(bytes_to_ms(len(pcm))))
            return
        self._turns += 1
        if self._transcript is not None:
            self._transcript.cancel()
        self._transcript = asyncio.get_running_loop().create_task(
            self._asr.transcribe(pcm, RATE_HZ), name="cascade-asr"
        )
        self._input_item = self._new_id("item")
        self._emit_soon(InputCommitted(self._input_item))

    def send_user_text(self, text: str) -> None:
        self._history.add_user(text)

    def send_tool_output(self, call_id: str, output: str) -> None:
        call = self._calls.pop(call_id, None)
        if call is None:
            self._log.warning("cascade_tool_output_unknown", call_id=call_id)
        elif call.native:
            self._history.add_tool_output(call_id, output)
        else:
            self._history.add_code_result(call.source, output, call.notes)

    def request_response(
        self,
        *,
        instructions: str | None = None,
        out_of_band: bool = False,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        if not out_of_band and self._response is not None:
            self._emit_soon(
                ProviderErrorEvent(
                    "conversation_already_has_active_response",
                    f"response {self._response.response_id} is still running",
                    recoverable=True,
                )
            )
            return
        run = Response(self._new_id("resp"), out_of_band, instructions)
        if out_of_band:
            self._out_of_band.add(run)
        else:
            self._response = run
        run.task = asyncio.get_running_loop().create_task(
            self._respond(run), name="cascade-response"
        )

    def read_aloud(self, text: str, *, instructions: str) -> None:
        """SpeakVerbatim: the text goes straight to the voice, out of band (no model)."""
        run = Response(self._new_id("resp"), True, instructions, verbatim=text)
        self._out_of_band.add(run)
        run.task = asyncio.get_running_loop().create_task(self._respond(run), name="cascade-reader")

    def cancel_response(self) -> bool:
        for reader in [r for r in self._out_of_band if r.verbatim is not None]:
            # A barge-in silences the reader too: nobody is listening to it any more.
            reader.cancelled = True
            if reader.task is not None:
                reader.task.cancel()
            self._out_of_band.discard(reader)
        run, self._response = self._response, None
        if run is None:
            return False
        run.cancelled = True
        if run.item is not None:  # keep only what was voiced; truncate may cut further
            self._keep_spoken(run.item, None)
        if run.task is not None:
            run.task.cancel()
        self._log.info("cascade_response_cancelled", response=run.response_id)
        self._emit_soon(
            ResponseDone(
                run.response_id,
                ResponseStatus.CANCELLED,
                had_audio=run.had_audio,
                reason="client_cancelled",
            )
        )
        return True

    def truncate(self, item_id: str, audio_end_ms: int) -> None:
        item = self._items.get(item_id)
        if item is None:
            self._log.warning("cascade_truncate_unknown_item", item=item_id)
            return
        item.truncated = True
        heard = self._keep_spoken(item, audio_end_ms)
        self._log.info("cascade_truncated", item=item_id, heard_ms=audio_end_ms, heard=heard)
        self._emit_soon(ItemTruncated(item_id, audio_end_ms))

    # ------------------------------------------------------------ one response

    async def _respond(self, run: Response) -> None:
        try:
            if not run.out_of_band and not await self._take_transcript(run):
                return
            self._start(run)
            await self._passes(run)
        except StageFailed as failed:
            self._fail(run, failed)
            return
        except Exception as exc:  # a bug: the coordinator must still hear the end
            self._log.exception("cascade_response_crashed", error=repr(exc))
            self._fail(run, StageFailed("internal_error", repr(exc)))
            return
        finally:
            if self._response is run:
                self._response = None
            self._out_of_band.discard(run)
        self._succeeded()
        self._emit(run.done(ResponseStatus.COMPLETED))

    async def _take_transcript(self, run: Response) -> bool:
        """Add the user's words to the history; False when nothing was heard."""
        task, self._transcript = self._transcript, None
        if task is None:
            return True  # a text turn, a tool follow-up or an inject
        turn = self._turns
        try:
            text = await asyncio.shield(task)
        except asyncio.CancelledError:
            # Cancelled while recognising (the coordinator's silence retry): the
            # retry picks the words up; a newer turn makes them stale.
            if self._turns == turn and self._transcript is None:
                self._transcript = task
            else:
                task.cancel()
            raise
        except ProviderError as exc:
            raise StageFailed("transcription_failed", str(exc), unreachable=True) from exc
        if not text:
            self._log.info("cascade_nothing_heard", response=run.response_id)
            self._emit(commit_empty(None))
            return False
        self._log.info("cascade_heard", text=text)
        self._emit(TranscriptDone(Role.USER, self._input_item, text))
        self._history.add_user(text)
        return True

    async def _passes(self, run: Response) -> None:
        """Ask the model; with the code prompt, hand a refused call back up to ``max_repairs`` times."""
        for attempt in range(self._settings.max_repairs + 1):
            reply = await self._one_pass(run)
            if reply is None or reply.call is not None or not reply.errors:
                return
            self._log.warning(
                "cascade_tool_call_refused",
                problems=",".join(e.problem.value for e in reply.errors),
                attempt=attempt + 1,
            )
            self._history.add_note(reply.error_report())

    async def _one_pass(self, run: Response) -> CodeReply | None:
        """One model reply, spoken. Returns the parsed reply (code prompt) or None."""
        item = run.item = Item(self._new_id("item"))
        self._items[item.item_id] = item
        while len(self._items) > MAX_ITEMS:  # only recent replies can still be cut
            del self._items[next(iter(self._items))]
        texts: TextQueue = asyncio.Queue()
        speaker = asyncio.get_running_loop().create_task(
            self._tts.speak(texts, lambda pcm, text: self._voiced(run, item, pcm, text))
        )
        try:
            text, native = await self._generate(run, item, texts, speaker)
            reply = self._record_reply(run, item, text, native)
            await speaker
        except (ProviderError, OSError) as exc:
            raise StageFailed("tts_failed", str(exc)) from exc
        finally:
            speaker.cancel()  # barge-in or failure: close the TTS stream now
            await asyncio.gather(speaker, return_exceptions=True)
        self._emit(TranscriptDone(Role.ASSISTANT, item.item_id, item.log.voiced()))
        return reply

    async def _generate(
        self, run: Response, item: Item, texts: TextQueue, speaker: asyncio.Task[None]
    ) -> tuple[str, list[NativeCall]]:
        splitter = SentenceSplitter(
            min_chars=self._settings.min_chunk_chars, max_chars=self._settings.max_sentence_chars
        )
        parts: list[str] = []
        native: list[NativeCall] = []

        def speak(chunks: list[str]) -> None:
            for chunk in chunks:
                texts.put_nowait(chunk)
                self._emit(TranscriptDelta(Role.ASSISTANT, item.item_id, chunk))

        if run.verbatim is not None:
            speak(splitter.feed(run.verbatim))
            speak(splitter.flush())
            texts.put_nowait(None)
            return run.verbatim, []
        messages, tools = self._request(run)
        wait_s = self._settings.llm_timeout_s
        loop = asyncio.get_running_loop()
        try:
            async with (
                asyncio.timeout(wait_s) as deadline,
                contextlib.aclosing(self._llm.stream(messages, tools)) as pieces,
            ):
                async for piece in pieces:  # a slow model is fine; a stuck one is not
                    deadline.reschedule(loop.time() + wait_s)
                    if speaker.done():
                        speaker.result()  # the TTS failed: stop generating
                    if isinstance(piece, TextDelta):
                        parts.append(piece.text)
                        speak(splitter.feed(piece.text))
                    else:
                        native.append(piece)
        except TimeoutError as exc:
            raise StageFailed(
                "timeout", f"the model sent nothing for {wait_s} s", unreachable=True
            ) from exc
        except openai.APIConnectionError as exc:
            raise StageFailed("connection_failed", str(exc), unreachable=True) from exc
        except openai.APIStatusError as exc:
            raise StageFailed(f"http_{exc.status_code}", exc.message) from exc
        except openai.OpenAIError as exc:
            raise StageFailed("llm_failed", str(exc)) from exc
        speak(splitter.flush())
        texts.put_nowait(None)
        return "".join(parts), native

    def _request(self, run: Response) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
        instructions = self._instructions if run.instructions is None else run.instructions
        native = self._settings.native_tools
        prompt = [{"role": "user", "content": UNPROMPTED}]
        if run.out_of_band:  # outside the conversation: no history, no tools
            return ChatHistory().for_request(instructions, extra=prompt), None
        system = instructions
        if not native and self._tools:
            stubs = render_tools_prompt(
                self._tools, include_args_doc=self._settings.include_args_doc
            )
            system = f"{instructions}\n\n{stubs}".strip()
        tools = native_tools(self._tools) if native and self._tools else None
        last = self._history.messages[-1]["role"] if self._history.messages else None
        # An announcement (inject) asks for speech nobody prompted; chat templates want a user turn.
        extra = prompt if last in (None, "assistant") else []
        return self._history.for_request(system, extra=extra), tools

    def _record_reply(
        self, run: Response, item: Item, text: str, native: list[NativeCall]
    ) -> CodeReply | None:
        """Put the reply in the history and report its tool calls."""
        if run.out_of_band:
            return None
        if self._settings.native_tools:
            item.native_calls = tuple((c.call_id, c.name, c.arguments_json) for c in native)
            self._history.add_assistant(item.item_id, text, tool_calls=item.native_calls)
            for call in native:
                self._calls[call.call_id] = PendingCall(call.name, call.name, native=True)
                self._report_call(
                    run, ToolCall(run.response_id, call.call_id, call.name, call.arguments_json)
                )
            return None
        schemas = {t["name"]: t.get("parameters") or {} for t in self._tools}
        reply = parse_reply(text, schemas, lambda: self._new_id("call"))
        self._history.add_assistant(item.item_id, text)
        parsed = reply.call
        if parsed is not None:
            item.code_source = render_call(parsed.name, parsed.arguments)
            self._calls[parsed.call_id] = PendingCall(
                parsed.name, parsed.source, native=False, notes=reply.error_report()
            )
            self._report_call(
                run, ToolCall(run.response_id, parsed.call_id, parsed.name, parsed.arguments_json)
            )
        return reply

    def _report_call(self, run: Response, call: ToolCall) -> None:
        run.calls.append(call)
        self._log.info("cascade_tool_call", name=call.name, call_id=call.call_id)
        self._emit(call)

    def _voiced(self, run: Response, item: Item, pcm: bytes, text: str) -> None:
        """The TTS produced ``pcm`` for ``text``: report it in chunks, remember it."""
        if run.cancelled or item.truncated:
            return
        item.log.add(text, bytes_to_ms(len(pcm)))
        step = ms_to_bytes(self._settings.audio_chunk_ms)
        for start in range(0, len(pcm), step):
            run.had_audio = True
            self._emit(AudioChunk(run.response_id, item.item_id, pcm[start : start + step]))

    def _keep_spoken(self, item: Item, audio_end_ms: int | None) -> str:
        """Make ``item``'s message what was voiced (``None``) or heard up to ``audio_end_ms``.

        A code-prompt call the reply made stays after the text (its result
        follows in the history); native calls stay on the message.
        """
        text = item.log.voiced() if audio_end_ms is None else item.log.heard(audio_end_ms)
        if item.code_source is not None:
            text = f"{text} {item.code_source}".strip()
        if not self._history.set_assistant_text(item.item_id, text):
            self._history.add_assistant(item.item_id, text)  # cut while still generating
        return text

    # ------------------------------------------------------------ outcomes

    def _start(self, run: Response) -> None:
        run.started = True
        self._emit(ResponseStarted(run.response_id, out_of_band=run.out_of_band))

    def _fail(self, run: Response, failed: StageFailed) -> None:
        self._log.warning("cascade_response_failed", reason=failed.reason, problem=str(failed))
        if not run.started:  # the coordinator only ends responses it saw start
            self._start(run)
        if run.item is not None:
            self._keep_spoken(run.item, None)
        if failed.unreachable:
            self._failures += 1
            state = failure_state(self._failures)
            self._report(ConnectionStatus(state, self._failures, None, str(failed)))
        self._emit(run.done(ResponseStatus.FAILED, reason=failed.reason))

    def _succeeded(self) -> None:
        if self._failures:
            self._failures = 0
            self._report(ConnectionStatus(ConnectionState.CONNECTED))

    # ------------------------------------------------------------ plumbing

    def _new_id(self, kind: str) -> str:
        return f"{kind}_{self._prefix}{next(self._ids):04d}"

    def _emit_soon(self, event: Event) -> None:
        """Events caused by a command are delivered after it returns (no re-entry)."""
        asyncio.get_running_loop().call_soon(self._emit, event)
