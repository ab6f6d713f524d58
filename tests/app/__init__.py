"""Tests for huxleyd.app: sd_notify, the watchdog, the composition root."""
