"""The cascade provider: speech recognition → any chat LLM → text to speech.

Behind the same :class:`~huxleyd.providers.base.ProviderCommands` as the
realtime providers, for a fully local or mixed pipeline (a llama.cpp or
Ollama server on the Pi or the LAN, OpenAI transcription, ElevenLabs or
espeak-ng/piper speech).

Modules: :mod:`.codeprompt` (tool calls for models without native function
calling), :mod:`.sentences` (sentence-coherent TTS chunks), :mod:`.history`
(the chat history and what was heard of each reply), :mod:`.asr`,
:mod:`.llm`, :mod:`.tts` (the three stages) with :mod:`.pcm`,
:mod:`.provider` (the connection the coordinator drives) with
:mod:`.records`, :mod:`.factory` (settings → connection) and
:mod:`.settings` (``[provider.cascade]``).

Public API: :func:`~.factory.create_cascade_connection`,
:class:`~.provider.CascadeConnection` (``CAPABILITIES``),
:class:`~.settings.CascadeSettings`.
"""
