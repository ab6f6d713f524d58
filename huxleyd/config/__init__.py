"""Configuration: ``huxleyd.toml`` and the persona parsed once, and what the start checks.

Layer: above every subsystem's settings (``audio.settings``,
``providers.settings``…, built on the leaf :mod:`huxleyd.schema`), below
``control`` and ``app``. The init imports nothing. In order, from the leaves
up: ``files`` (can the daemon's identity read a file), ``persona_defaults``,
``control_socket`` (``[control]``), ``load`` (``load_config``: every table, the
board merged), ``setupreport`` (what the image's first boot left), then
``preflight_io`` and ``preflight`` (everything the start checks before opening a
device; they see every layer's settings, and nothing imports them but the
root, the control socket's doctor and ``--check-config``). Never imports
:mod:`huxleyd.control` (``tests/test_layer_walls.py``).
"""
