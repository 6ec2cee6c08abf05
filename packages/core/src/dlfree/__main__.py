"""`python -m dlfree ...` runs the `dlfree` command."""

from .cli import main

raise SystemExit(main())
