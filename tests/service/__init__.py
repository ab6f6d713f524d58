"""Tests for huxleyd.service: sd_notify and the watchdog."""
