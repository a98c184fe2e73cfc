"""``python -m stadyn`` runs the ``stadyn`` command."""

from .cli import main

raise SystemExit(main())
