"""The command line: one thin module per command."""

from ._main import main

__all__ = ["main"]
