"""The folder that is the skill host process's ``PYTHONPATH``: one package only.

The daemon starts ``<skills env python> -P -s -m huxley_skillhost`` with this
folder as its whole ``PYTHONPATH``, so the child finds its own package and
nothing else of ``huxleyd`` (no module here can shadow a skill's dependency).
The daemon imports the same files as ``huxleyd.skillhost.hostpath.huxley_skillhost``.
"""
