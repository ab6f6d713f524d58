"""huxleyd: the Raspberry Pi voice assistant daemon.

Layers (each a package; see docs/architecture.md):

- ``audio``      the real-time audio thread, rings, mixer, backends, volume
- ``providers``  sans-I/O realtime protocol cores + the websocket transport
- ``turns``      the turn coordinator, focus, media, claims, injects
- ``skills``     first-party skills (they import ``huxley_sdk`` only)
- ``skillhost``  loading skills through entry points, their lifecycle and tools
- ``storage``    the persona's SQLite database, opened whatever state it is in
- ``config``     ``huxleyd.toml`` and the persona parsed once; the start's checks
- ``hardware``   button, LEDs, board profiles
- ``control``    the control socket and ``huxleyctl``
- ``firstboot``  the image's first boot
- ``sim``        a local realtime peer for tests, demos and keyless runs
- ``app``        the composition root: builds, runs and stops the daemon
                 (``huxleyd``, ``python -m huxleyd``, the demo); no layer imports it

Beside them only the leaves every layer may import (``logs``, ``clock``,
``errors``, ``degraded``), the entry points (``start``, ``__main__``) and
``update`` (``huxleyctl update``): ``tests/test_layer_walls.py`` keeps them at
most 8 modules, ``__init__`` and ``__main__`` counted.
"""

__version__ = "0.1.0"
