"""The one exception type for bad user input.

The CLI turns :class:`RooflineError` into ``roofline: error: <message>`` and
exit code 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class RooflineError(ValueError):
    """Bad user input: a one-line message naming the file, field and value."""

    def __init__(self, message: str, *, where: str | None = None) -> None:
        message = " ".join(str(message).split())  # always one line
        super().__init__(f"{where}: {message}" if where else message)


class MissingExtraError(RooflineError, ImportError):
    """An optional dependency is not installed; names the extra to install."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(
            f"{package} is not installed; install it with: pip install 'roofline[{extra}]'"
        )


def require(module: str, extra: str):  # type: ignore[no-untyped-def]
    """Import an optional dependency lazily or fail with the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(module.split(".")[0], extra) from exc
