"""The device's hands and eyes: the PTT button and LEDs through gpiozero,
and the board profiles (``hw/*.toml``) that say where they are wired."""
