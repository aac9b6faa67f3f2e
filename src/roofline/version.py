"""The package's version, in a module of its own so that any layer may read it (the CLI, the HTML footer)."""

__version__ = "0.1.0"
