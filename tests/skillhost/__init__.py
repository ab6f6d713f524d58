"""The skill host process: its link, supervision, user, and Huxley skills through it."""
