"""First-party skills. They import ``huxley_sdk`` only, never ``huxleyd``
(tests/test_import_wall.py enforces it)."""
