"""Tests for huxleyd.hardware: board profiles, pin factory, button, LEDs."""
