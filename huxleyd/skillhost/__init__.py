"""Skill hosting: which distribution provides a skill, loading it, its lifecycle and tools.

Imports nothing: ``huxleyd.skillhost.sdkcheck`` runs before anything imports
``huxley_sdk`` (``huxleyd.start``), so this package's init must not load the
host. Modules: ``sdkcheck`` (is ``huxley_sdk`` ours), ``sources`` (which
installed distribution provides each skill), ``argcheck`` (tool-call
arguments against the tool's JSON Schema), ``host`` (``SkillHost``: entry
points, setup and teardown, tool calls), ``events`` (Huxley's client events);
third-party skills run in host processes of their own: ``process`` (starting
one, the daemon's end of its link), ``remote`` (``RemoteSkill``, a host as a
skill of the ``SkillHost``), ``hostpath/huxley_skillhost`` (the host's own
package, which never imports ``huxleyd``).
"""
