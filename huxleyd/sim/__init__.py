"""A local realtime peer: a websocket server on 127.0.0.1 that speaks the
OpenAI Realtime GA protocol (every client event validated against the
official ``openai`` types), xAI's dialect and Gemini Live (see
:mod:`huxleyd.sim.server` for the paths), and answers from scripted
scenarios (speech, tool calls, errors, dropped connections, goAway).
A simulator, not an AI.

Public API: :class:`~huxleyd.sim.server.SimServer`,
:func:`~huxleyd.sim.scenario.load_scenario`, :class:`~huxleyd.sim.scenario.Scenario`,
:func:`~huxleyd.sim.validate.validate_client_event`.
"""

from huxleyd.sim.scenario import Scenario, load_scenario
from huxleyd.sim.server import SimServer
from huxleyd.sim.validate import validate_client_event, validate_server_event

__all__ = [
    "Scenario",
    "SimServer",
    "load_scenario",
    "validate_client_event",
    "validate_server_event",
]
