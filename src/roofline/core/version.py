"""The package's version (``roofline.__version__``), kept apart so that whatever stamps it (the CLI's
``--version``, the HTML report's footer) imports this and not the package."""

__version__ = "0.1.0"
