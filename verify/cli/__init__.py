"""The command line: one module per command group; `main` is the console entry point."""

from verify.cli.main import main

__all__ = ["main"]
