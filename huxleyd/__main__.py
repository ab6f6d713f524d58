"""``python -m huxleyd``: the same as the ``huxleyd`` console script."""

from huxleyd.app.main import main

raise SystemExit(main())
