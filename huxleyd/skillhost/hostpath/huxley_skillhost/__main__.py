"""``python -m huxley_skillhost --fd N``: run one skill host on socket ``N``."""

from .child import main

raise SystemExit(main())
