"""The control socket (line-delimited JSON over a unix socket) and the
``huxleyctl`` command-line client.

- :mod:`.protocol`  the wire format: typed requests/replies and their parsers (pure)
- :mod:`.handler`   :class:`ControlHandler`, what the daemon implements, and its reports
- :mod:`.server`    :class:`ControlServer`, the asyncio unix-socket server
- :mod:`.doctor`    the checks behind ``huxleyctl doctor``, for the daemon to run
- :mod:`.client`    :class:`ControlClient`, a blocking client
- :mod:`.cli`       ``huxleyctl`` itself; :mod:`.render` draws its tables and meters
"""
