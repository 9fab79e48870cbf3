"""`python -m agui` is the `agui` command line."""

from agui.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
