"""The speaker in a home: tools from MCP servers, Home Assistant over MQTT, a household.

docs/home.md says how to connect a speaker; :mod:`huxleyd.home.speaker` is
where the daemon opens it.
"""
