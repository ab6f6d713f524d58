"""A local realtime peer: a websocket server on 127.0.0.1 that speaks the
OpenAI Realtime GA protocol (every client event validated against the
official ``openai`` types), xAI's dialect and Gemini Live (see
:mod:`huxleyd.sim.server` for the paths), and answers from scripted
scenarios (speech, tool calls, errors, dropped connections, goAway).
A simulator, not an AI.

Public API, imported from where it is defined:
:class:`huxleyd.sim.server.SimServer`, :func:`huxleyd.sim.scenario.load_scenario`,
:class:`huxleyd.sim.scenario.Scenario`, :func:`huxleyd.sim.validate.validate_client_event`;
``python -m huxleyd.sim`` runs the server on its own.

This init imports nothing on purpose. Python runs it before any submodule,
so when it imported the server, ``from huxleyd.sim import wire`` (the
provider tests' frame builder, and the simulator's own sessions) loaded the
whole simulator and websockets, and a session module that imported a
sibling re-entered the server's imports half loaded (an import cycle).
"""
