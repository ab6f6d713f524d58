"""Configuration: ``huxleyd.toml`` and the persona parsed once, and what the start checks.

Imports nothing, so a subsystem's settings module can import
:mod:`huxleyd.schema` (a leaf) without loading the rest. In order, from
the leaves up: ``schema`` (typed TOML → frozen dataclasses), ``files`` and
``keyfile`` (what a file may hold and who can read it), ``persona_defaults``,
``control_socket`` (``[control]``), ``load`` (``load_config``: every table, the
board merged), ``setupreport`` (what the image's first boot left), then
``preflight_io`` and ``preflight`` (everything the start checks before opening a
device; they see every layer's settings, and nothing imports them but the
root, the control socket's doctor and ``--check-config``). Never imports
:mod:`huxleyd.control` (``tests/test_layer_walls.py``).
"""
