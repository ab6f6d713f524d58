"""Tests of huxleyd.turns. Their fakes live in ``tests/fakes`` (``clock``,
``turn_ports``, ``turn_rig``)."""
