"""First boot of the image: ``huxleyd-setup.toml`` on the firmware partition.

A user writes the file from any computer before the first boot (Wi-Fi, the
board profile, the provider and its key, the time zone); the image's
``huxleyd-firstboot.service`` applies it once and wipes it. docs/image.md
has the format. Layers:

- :mod:`.setup_file` parses and checks the file (pure; every error names
  the file, the key and what was expected),
- :mod:`.apply` writes the system's files under a root directory and asks
  an injected runner for the few commands (systemctl, ssh-keygen),
- :mod:`.__main__` is the service's entry point (journal, LEDs).
"""
