"""``python -m dpframe``: the same as the ``dpframe`` command."""

from dpframe.cli import main

raise SystemExit(main())
