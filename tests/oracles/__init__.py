"""Reference implementations the production code is checked against (never run by huxleyd)."""
