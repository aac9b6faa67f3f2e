"""The API boundary rule: every public function checks its arguments before it does anything with them.

A wrong *type* raises :class:`ArgumentTypeError` (both a :class:`~roofline.RooflineError` and a
``TypeError``); a wrong *value* raises :class:`~roofline.RooflineError` (a ``ValueError``).  The message
names the function, the parameter, what it accepts and what it got, as numpy and pandas do::

    analyze: device must be a Device or a device name (str), got int 7

so ``except TypeError`` / ``except ValueError`` work as in any Python library, and ``except
RooflineError`` (what the CLI turns into one ``roofline: error:`` line) catches both.

The same check speaks to whoever called it.  From Python it names the function and the parameter; from the
command line (the CLI runs each command inside :func:`as_cli`, naming the option that sets each parameter) it
names the option and the value as typed, the way argparse's own errors read::

    --devices '0': must be a whole number >= 1

:func:`called` gives that subject for a message a check writes itself.

>>> positive_int(3, "f", "n")
3
>>> try:
...     positive_int("3", "f", "n")
... except TypeError as exc:
...     print(exc)
f: n must be a whole number (int) >= 1, got str '3'
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import re
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from roofline.core.errors import RooflineError


class ArgumentTypeError(RooflineError, TypeError):
    """An argument of the wrong type given to a public function (a RooflineError and a TypeError)."""


def got(value: Any) -> str:
    """'int 7', "str 'x'", 'NoneType None': the type and the value, shortened, for a message."""
    from roofline.core.fileio import shown

    if value is None:
        return "None"
    try:
        text = shown(value, 40) if isinstance(value, (str, int, float, bool, list, dict, tuple)) else ""
    except Exception:  # a value whose repr fails is still named by its type
        text = ""
    return f"{type(value).__name__} {text}".strip()


#: the command-line option that sets each parameter, while a command runs (:func:`as_cli`); empty from Python
_OPTIONS: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "roofline_cli_options", default=types.MappingProxyType({}))
_UNSET = object()
#: the Python words of a rule that a command line has no use for: "(int)", "(str or os.PathLike)"
_PYTHON_WORDS = re.compile(r" \((?:int|str|float|bool|str or os\.PathLike)\)")


@contextlib.contextmanager
def as_cli(options: Mapping[str, str]) -> Iterator[None]:
    """Inside, a check on a parameter named in ``options`` (``"devices"``, or ``"diff_traces.b"`` for one function's)
    speaks of its option (``"--devices"``): the CLI's run of a command, with the command's options by destination.

    >>> with as_cli({"devices": "--devices"}):
    ...     try:
    ...         positive_int(0, "get_system", "devices")
    ...     except RooflineError as exc:
    ...         print(exc)
    --devices '0': must be a whole number >= 1
    """
    token = _OPTIONS.set({**_OPTIONS.get(), **options})
    try:
        yield
    finally:
        _OPTIONS.reset(token)


def option_for(func: str, param: str) -> str | None:
    """The command-line option setting ``func``'s ``param`` inside :func:`as_cli` (None from Python).  A parameter
    named with its option, as the serving config's are ("block_size (--block-size)"), is looked up by its name."""
    options = _OPTIONS.get()
    if not options:
        return None
    name = param.split(" (", 1)[0]
    return options.get(f"{func}.{name}") or options.get(name)


def as_typed(value: Any) -> str:
    """A value as the command line typed it, quoted and escaped: ``'0'``, ``'fifo'``, ``'\\x1b[31m'``."""
    from roofline.core.fileio import shown

    return shown("" if value is None else str(value), 80)


def called(func: str, param: str, value: Any = _UNSET) -> str:
    """The subject of a message about ``func``'s ``param``: ``"func: param"`` from Python, ``"--option 'value'"`` from
    the command line (:func:`as_cli`); a check writes ``f"{called(...)} must be ..."``.

    >>> called("Traffic", "isl", -1)
    'Traffic: isl'
    >>> with as_cli({"isl": "--isl"}):
    ...     called("Traffic", "isl", -1)
    "--isl '-1':"
    """
    flag = option_for(func, param)
    if flag is None:
        return f"{func}: {param}"
    return f"{flag}:" if value is _UNSET else f"{flag} {as_typed(value)}:"


def _message(func: str, param: str, accepts: str, value: Any) -> str:
    if option_for(func, param) is None:
        return f"{func}: {param} must be {accepts}, got {got(value)}"
    return f"{called(func, param, value)} must be {_PYTHON_WORDS.sub('', accepts)}"


def type_error(func: str, param: str, accepts: str, value: Any) -> ArgumentTypeError:
    return ArgumentTypeError(_message(func, param, accepts, value))


def value_error(func: str, param: str, accepts: str, value: Any) -> RooflineError:
    return RooflineError(_message(func, param, accepts, value))


def need(value: Any, types: type | tuple[type, ...], func: str, param: str, accepts: str) -> Any:
    """``value`` when it is an instance of ``types`` (bool is never an int here), else a type error."""
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise type_error(func, param, accepts, value)
    if not isinstance(value, types):
        raise type_error(func, param, accepts, value)
    return value


def boolean(value: Any, func: str, param: str) -> bool:
    return bool(need(value, bool, func, param, "True or False"))


def positive_int(value: Any, func: str, param: str, minimum: int = 1, maximum: int | None = None) -> int:
    """A whole number (an int, not a bool or a float) from ``minimum`` (to ``maximum``)."""
    rule = f"a whole number (int) >= {minimum}" + (f" and <= {maximum}" if maximum is not None else "")
    if isinstance(value, bool) or not isinstance(value, int):
        raise type_error(func, param, rule, value)
    if value < minimum or (maximum is not None and value > maximum):
        raise value_error(func, param, rule, value)
    return int(value)


def optional_int(value: Any, func: str, param: str, minimum: int = 1) -> int | None:
    return None if value is None else positive_int(value, func, param, minimum)


def number(value: Any, func: str, param: str, minimum: float | None = 0.0) -> float:
    """A finite real number (int or float, not a bool or a string) >= ``minimum``."""
    rule = "a finite number" + (f" >= {minimum:g}" if minimum is not None else "")
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not _is_numpy_number(value):
        raise type_error(func, param, rule, value)
    try:
        x = float(value)
    except OverflowError:
        raise value_error(func, param, rule, value) from None
    if not math.isfinite(x) or (minimum is not None and x < minimum):
        raise value_error(func, param, rule, value)
    return x


def _is_numpy_number(value: Any) -> bool:
    import numbers

    return isinstance(value, numbers.Real)


def number_or_callable(value: Any, func: str, param: str) -> Any:
    """A finite number >= 0, or a callable giving one (a kernel's FLOPs or bytes)."""
    if callable(value):
        return value
    if isinstance(value, bool) or not (isinstance(value, (int, float)) or _is_numpy_number(value)):
        raise type_error(func, param, "a finite number >= 0 or a callable returning one", value)
    return number(value, func, param)


def text(value: Any, func: str, param: str, empty: bool = False) -> str:
    """A string (non-blank unless ``empty``)."""
    s = need(value, str, func, param, "a string" if empty else "a non-empty string")
    if not empty and not s.strip():
        raise value_error(func, param, "a non-empty string", value)
    return str(s)


def choice(value: Any, allowed: Sequence[str], func: str, param: str) -> str:
    rule = "one of " + ", ".join(repr(a) for a in allowed)
    if not isinstance(value, str):
        raise type_error(func, param, rule, value)
    if value not in allowed:
        raise value_error(func, param, rule, value)
    return value


def function(value: Any, func: str, param: str) -> Callable[..., Any]:
    if not callable(value):
        raise type_error(func, param, "a callable", value)
    return value


def path(value: Any, func: str, param: str) -> str | os.PathLike[str]:
    """A path: str or os.PathLike (bytes are not: a path here is text)."""
    if isinstance(value, bytes) or not isinstance(value, (str, os.PathLike)):
        raise type_error(func, param, "a path (str or os.PathLike)", value)
    if isinstance(value, str) and not value.strip():
        raise value_error(func, param, "a non-empty path", value)
    return value


def paths(value: Any, func: str, param: str) -> list[str | os.PathLike[str]]:
    """One path, or a non-empty list/tuple of paths (a str is one path, never its characters)."""
    if isinstance(value, (str, os.PathLike)) and not isinstance(value, bytes):
        return [path(value, func, param)]
    if isinstance(value, (bytes, bytearray)) or not isinstance(value, Sequence) and not _iterable(value):
        raise type_error(func, param, "a path or a list of paths (str or os.PathLike)", value)
    items = list(value)
    if not items:
        raise value_error(func, param, "a path or a non-empty list of paths (no trace files given)", value)
    for i, p in enumerate(items):
        path(p, func, f"{param}[{i}]")
    return items


def _iterable(value: Any) -> bool:
    return hasattr(value, "__iter__") and not isinstance(value, Mapping)


def mapping(value: Any, func: str, param: str, accepts: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise type_error(func, param, accepts, value)
    return value


__all__ = ["ArgumentTypeError", "as_cli", "as_typed", "boolean", "called", "choice", "function", "got", "mapping", "need", "number",
           "number_or_callable", "option_for", "optional_int", "path", "paths", "positive_int", "text", "type_error",
           "value_error"]
