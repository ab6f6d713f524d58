"""Realtime providers: one sans-I/O protocol core per provider, and the
shared websocket transport (connect, keepalive, reconnect with backoff).

The contract with the coordinator (``huxleyd.turns``)
-----------------------------------------------------

The coordinator holds a :class:`~huxleyd.providers.base.ProviderCommands`
(in the daemon: a :class:`~huxleyd.providers.transport.ProviderConnection`)
and never learns which provider is behind it. It:

- reads ``capabilities`` (rates, cancel/truncate support, interrupt
  acceptance) and branches on those flags only;
- calls ``configure(instructions=, tools=, voice=)`` whenever they may have
  changed — only what changed is sent, everything again after a reconnect;
- runs a push-to-talk turn as ``start_turn()``, ``append_audio(pcm)`` per mic
  frame, ``end_turn()``, then ``request_response()`` (``end_turn`` never asks
  for a response by itself); a text turn as ``send_user_text(text)`` then
  ``request_response()``;
- answers every :class:`~huxleyd.providers.events.ToolCall` with
  ``send_tool_output(call_id, output)`` and then asks for the follow-up with
  ``request_response()``;
- on barge-in calls ``cancel_response()`` (it sends nothing when no response
  is active) and, when ``capabilities.truncate``, ``truncate(item_id,
  audio_end_ms)`` with what the playout clock says was heard. Audio of the
  cancelled response or truncated item is not reported afterwards;
- calls ``renew()`` on the connection between turns when
  ``session_age_s()`` nears the provider's session cap.

It receives, through the connection's ``on_event`` callback, the events of
:mod:`huxleyd.providers.events`: ``SessionReady`` (configuration applied),
``ResponseStarted``/``AudioChunk``/``TranscriptDelta``/``TranscriptDone``/
``ToolCall``/``ResponseDone`` (with status, its tool calls, ``had_audio``),
``InputCommitted``, ``ItemTruncated``, ``Interrupted`` (the provider cut the
reply itself) and ``ProviderErrorEvent`` (``recoverable`` False: the
transport reconnects). When the socket drops, each started response ends
with ``ResponseDone(FAILED, reason="connection_lost")``; a requested one that
never started gets no event, so a state change away from CONNECTED ends it.

Every connection is a :class:`~huxleyd.providers.base.Session` (the
websocket :class:`~huxleyd.providers.transport.ProviderConnection` and the
cascade's connection alike). Through ``on_state`` it reports
:class:`~huxleyd.providers.base.ConnectionStatus`, whose state is a
:class:`~huxleyd.providers.base.ConnectionState`: CONNECTING, CONNECTED
(once per successful connect), STALLED (a due reply delivered no complete
frame for ``stall_timeout_s``: dropped and tried again), RECONNECTING, OFFLINE (from the fourth
failed try in a row: play the earcon), KEY_REFUSED (retried slowly),
FAILED (fatal, e.g. a wrong model: ``run()`` raises) and CLOSED. Their
values are the words ``huxleyctl status`` prints.

Modules: :mod:`.base` (capabilities, the protocol shape, the session and its states), :mod:`.events`,
:mod:`.core` (the sans-I/O plumbing every core shares), :mod:`.openai_dialect`
(what OpenAI and xAI share), :mod:`.openai_core` + :mod:`.openai_wire`
(OpenAI GA), :mod:`.xai_core` + :mod:`.xai_wire`, :mod:`.gemini_core`
+ :mod:`.gemini_wire` (Gemini Live), :mod:`.cascade` (ASR → chat model → TTS),
:mod:`.retry` (classifier, backoff), :mod:`.transport` (websockets glue)
built from :mod:`.connection_parts`, with :mod:`.apikey` (the key file, the
key's waits) and :mod:`.stall` (the stall clock), :mod:`.factory` (settings →
connection), :mod:`.settings`.
"""
