"""A user's model named on the command line: ``MODULE:CALLABLE`` and ``--input SHAPE[:DTYPE]``.

``MODULE`` is a dotted module name or a path to a ``.py`` file; ``CALLABLE``
returns an ``nn.Module`` or a ``(module, inputs)`` pair.  Used by ``roofline
torch`` (traced on the meta device) and by :func:`roofline.measurement.measure_target`
(built for real and timed); bad input is a one-line :class:`~roofline.core.errors.RooflineError`.

>>> parse_input("8x512:int64")
((8, 512), 'int64')

Shapes are bounded (:func:`roofline.core.limits.check_dims`): each dimension at most ``ROOFLINE_MAX_DIM``
(default 10**12, an environment variable), and the element count must fit int64.

User code is the user's: an exception raised while importing MODULE or calling
CALLABLE (or, in ``roofline torch``, while running the model's forward) is reported
as one line naming the target with the exception's type and message
(:func:`user_code`), and so is a ``SystemExit`` (``sys.exit(7)``, ``builtins:exit``):
the command exits 2, never with the user's status.  ``KeyboardInterrupt`` is not
caught (Ctrl-C keeps exit 130), and an exception raised by roofline's own code keeps
its traceback (it is a roofline bug).  A dotted ``MODULE`` is imported with the
current directory on ``sys.path``, as ``python -m`` does.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from roofline.core.errors import RooflineError, require
from roofline.core.limits import check_dims
from roofline.core.precision import TORCH_DTYPES

#: roofline's own source folder: exceptions raised from here are roofline bugs, not the user's
_OWN = str(Path(__file__).resolve().parents[1])


def parse_input(spec: str) -> tuple[tuple[int, ...], str]:
    """'1x3x224x224:bf16' -> ((1, 3, 224, 224), 'bfloat16')."""
    shape_text, _, dtype = spec.strip().partition(":")
    dtype = dtype.strip().lower() or "fp32"
    if dtype not in TORCH_DTYPES:
        raise RooflineError(f"--input {spec!r}: unknown dtype {dtype!r}; use one of {', '.join(TORCH_DTYPES)}")
    try:
        shape = tuple(int(d) for d in shape_text.lower().split("x"))
    except ValueError:
        shape = ()
    if not shape or any(d < 0 for d in shape):
        raise RooflineError(f"--input {spec!r}: expected a shape like 1x3x224x224 (non-negative integers)")
    return check_dims(shape, f"--input {spec!r}"), TORCH_DTYPES[dtype]


def load_callable(target: str) -> Any:
    """'pkg.mod:fn' or 'path/to/file.py:fn' -> the callable; bad input -> RooflineError."""
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise RooflineError(f"{target!r}: expected MODULE:CALLABLE, e.g. models.py:build or my_pkg.models:build")
    if module_name.endswith(".py") or "/" in module_name or "\\" in module_name:
        module = _import_file(Path(module_name), module_name)
    else:
        module = _import_module(module_name, target)
    fn = getattr(module, attr, None)
    if fn is None:
        raise RooflineError(f"{module_name} has no attribute {attr!r}")
    if not callable(fn):
        raise RooflineError(f"{target}: {attr!r} is a {type(fn).__name__}, not a callable")
    return fn


def _import_module(module_name: str, target: str) -> Any:
    """Import a dotted ``module_name`` with the current directory first on ``sys.path`` (as ``python -m``
    does), for this import only; not found -> a one-line error naming where it looked and PYTHONPATH."""
    try:
        cwd = os.getcwd()
    except OSError:  # the current directory was removed: nothing there to import
        cwd = ""
    added = bool(cwd) and cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    importlib.invalidate_caches()  # a module written after an earlier import in this process is found too
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            # the user's module itself (not a package it imports) is missing
            as_file = f"{module_name.replace('.', '/')}.py:{target.rpartition(':')[2]}"
            raise RooflineError(
                f"cannot import module {module_name!r}: no module named {exc.name!r} in the current directory "
                f"({cwd}) or on sys.path; add its folder to PYTHONPATH (e.g. PYTHONPATH=src) or give a file "
                f"path (path/to/{as_file})") from exc
        raise RooflineError(f"cannot import module {module_name!r}: {_describe(exc)}") from exc
    except (Exception, SystemExit) as exc:
        raise RooflineError(f"cannot import module {module_name!r}: {_describe(exc)}") from exc
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)


def _import_file(path: Path, where: str) -> Any:
    if not path.is_file():
        raise RooflineError("no such file", where=where)
    name = f"_roofline_user_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise RooflineError("cannot import this file as Python", where=where)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))  # let the file import its neighbours
    try:
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        raise RooflineError(f"import failed: {_describe(exc)}", where=where) from exc
    finally:
        sys.path.remove(str(path.resolve().parent))
    return module


def _line(exc: BaseException) -> str:
    return (str(exc).strip() or type(exc).__name__).splitlines()[0]


def _describe(exc: BaseException) -> str:
    """'ValueError: bad shape', or 'called sys.exit(7)' for a SystemExit."""
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r}) (SystemExit)"
    return f"{type(exc).__name__}: {_line(exc)}"


def _raised_by_roofline(exc: BaseException) -> bool:
    """Whether the innermost Python frame of ``exc``'s traceback is roofline's own code (a bug: keep it)."""
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    return last is not None and str(Path(last).resolve()).startswith(_OWN)


@contextlib.contextmanager
def user_code(target: str, doing: str = "raised") -> Iterator[None]:
    """Run the user's code: its exceptions and SystemExit become one line naming ``target``.

    Exceptions raised by roofline's own code and KeyboardInterrupt pass through unchanged.
    """
    try:
        yield
    except RooflineError:
        raise
    except SystemExit as exc:
        raise RooflineError(f"{target} {_describe(exc)}; a model must not exit the process") from None
    except Exception as exc:
        if _raised_by_roofline(exc):
            raise
        raise RooflineError(f"{target} {doing} {_describe(exc)}") from exc


def call_target(target: str, *, meta: bool = True) -> tuple[Any, tuple[Any, ...]]:
    """Call the user's CALLABLE (under ``torch.device("meta")`` when ``meta``): (module, the inputs it returned or ())."""
    torch = require("torch", "torch")
    fn = load_callable(target)
    with user_code(target), torch.device("meta") if meta else contextlib.nullcontext():
        made = fn()
    inputs: tuple[Any, ...] = ()
    if isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], torch.nn.Module):
        made, given = made
        inputs = tuple(given) if isinstance(given, (list, tuple)) else (given,)
    if not isinstance(made, torch.nn.Module):
        raise RooflineError(f"{target} returned a {type(made).__name__}; expected an nn.Module or a (module, inputs) pair")
    return made, inputs


__all__ = ["call_target", "load_callable", "parse_input", "user_code"]
