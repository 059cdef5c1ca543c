"""`python -m lionmem`: the command line."""

from lionmem.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
