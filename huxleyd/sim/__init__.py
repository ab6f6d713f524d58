"""A local realtime peer: a websocket server on 127.0.0.1 that speaks the
provider protocol, validates what it receives against the official types,
and answers from scripted scenarios. A simulator, not an AI."""
