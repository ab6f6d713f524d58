"""Tests of huxleyd.turns. Their fakes live in ``tests/fakes`` (``clock``,
``turn_ports``, ``turn_rig``); the two names below are re-exported for the
turn tests that import them from here."""

from tests.fakes.clock import FakeSleeper, settle

__all__ = ["FakeSleeper", "settle"]
