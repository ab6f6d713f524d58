"""huxleyd: the Raspberry Pi voice assistant daemon.

Layers (each a package; see docs/architecture.md):

- ``audio``      the real-time audio thread, rings, mixer, backends, volume
- ``providers``  sans-I/O realtime protocol cores + the websocket transport
- ``turns``      the turn coordinator, focus, media, claims, injects
- ``skills``     first-party skills (they import ``huxley_sdk`` only)
- ``hardware``   button, LEDs, board profiles
- ``control``    the control socket and ``huxleyctl``
- ``sim``        a local realtime peer for tests, demos and keyless runs
- ``app``        the composition root: builds, runs and stops the daemon
                 (``huxleyd``, ``python -m huxleyd``); no layer imports it
"""

__version__ = "0.1.0"
