"""`python -m lionmem`: the command line."""

from lionmem.cli import main

raise SystemExit(main())
