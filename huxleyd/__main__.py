"""``python -m huxleyd``: the same as the ``huxleyd`` console script."""

from huxleyd.start import main

raise SystemExit(main())
