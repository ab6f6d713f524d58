"""The composition root: the one package that knows every layer and wires them.

Read it in this order:

- :mod:`.main`     the ``huxleyd`` command (``python -m huxleyd``): arguments,
                   ``--check-config``, signals, the control socket, exit codes;
- :mod:`.runtime`  :class:`~.runtime.Runtime`: start (preflight, build, skills,
                   tasks), what the parts report (watch feed, LEDs, systemd
                   status), reload (SIGHUP), close in order within a budget;
- :mod:`.build`    :func:`~.build.build`: every part from the configuration,
                   in dependency order, into the frozen :class:`~.parts.Parts`;
- :mod:`.parts`    the records: :class:`~.parts.Overrides` (what tests inject),
                   :class:`~.parts.Parts` (what was built),
                   :class:`~.parts.Resources` (what to close);
- :mod:`.control`  the daemon's answers on the control socket (``huxleyctl``);
- :mod:`.systemd`  sd_notify and the watchdog fed by the loop and the audio thread;
- :mod:`.volume`   the user volume and where its level persists.

Behaviour lives in the layers; nothing here decides a turn, mixes audio or
speaks a protocol. Nothing outside this package imports it, except the
demo (:mod:`huxleyd.app.demo`) and the tests, which run the real daemon.
"""
