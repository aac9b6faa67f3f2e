"""The one exception type for bad user input.

The CLI turns :class:`RooflineError` into ``roofline: error: <message>`` and
exit code 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from types import ModuleType


class RooflineError(ValueError):
    """Bad user input: a one-line message naming the file, field and value."""

    def __init__(self, message: str, *, where: str | None = None) -> None:
        from roofline.core.text import one_line, shown_path

        # always one line; names quoted in it come from files: control characters shown, long ones shortened
        # (a long path keeps its head and tail, so the message after it is never cut off)
        super().__init__(one_line(f"{shown_path(where)}: {message}" if where else message))


class MissingExtraError(RooflineError, ImportError):
    """An optional dependency is not installed; names the extra to install."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(
            f"{package} is not installed; install it with: pip install 'roofline[{extra}]'"
        )


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type name when it has none), for one-line errors."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def require(module: str, extra: str) -> ModuleType:
    """Import an optional dependency lazily or fail with the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(module.split(".")[0], extra) from exc


def env_limit(env: str, default: int) -> int:
    """A stated limit on work (sizes, nodes, points): environment variable ``env`` when set, else ``default``.

    >>> env_limit("ROOFLINE_NO_SUCH_LIMIT", 10)
    10
    """
    import os

    text = os.environ.get(env, "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise RooflineError(f"environment variable {env}={text[:40]!r} must be a positive integer")
    return int(text)
