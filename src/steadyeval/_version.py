"""The package's version, in one place (the façade re-exports it as ``steadyeval.__version__``;
the CLI's ``--version`` and the HTML report's footer read it from here)."""

__version__ = "0.1.0"
