"""The control socket (line-delimited JSON over a unix socket) and the
``huxleyctl`` command-line client."""
