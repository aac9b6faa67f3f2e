"""A user's model named on the command line: ``MODULE:CALLABLE`` and ``--input SHAPE[:DTYPE]``.

``MODULE`` is a dotted module name or a path to a ``.py`` file; ``CALLABLE``
returns an ``nn.Module`` or a ``(module, inputs)`` pair.  Used by ``roofline
torch`` (traced on the meta device) and by :func:`roofline.measurement.measure_target`
(built for real and timed); bad input is a one-line :class:`~roofline.errors.RooflineError`.

>>> parse_input("8x512:int64")
((8, 512), 'int64')
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from roofline.errors import RooflineError, require
from roofline.frontends.torch import DTYPE_NAMES


def parse_input(spec: str) -> tuple[tuple[int, ...], str]:
    """'1x3x224x224:bf16' -> ((1, 3, 224, 224), 'bfloat16')."""
    shape_text, _, dtype = spec.strip().partition(":")
    dtype = dtype.strip().lower() or "fp32"
    if dtype not in DTYPE_NAMES:
        raise RooflineError(f"--input {spec!r}: unknown dtype {dtype!r}; use one of {', '.join(DTYPE_NAMES)}")
    try:
        shape = tuple(int(d) for d in shape_text.lower().split("x"))
    except ValueError:
        shape = ()
    if not shape or any(d < 0 for d in shape):
        raise RooflineError(f"--input {spec!r}: expected a shape like 1x3x224x224 (non-negative integers)")
    return shape, DTYPE_NAMES[dtype]


def load_callable(target: str) -> Any:
    """'pkg.mod:fn' or 'path/to/file.py:fn' -> the callable; bad input -> RooflineError."""
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise RooflineError(f"{target!r}: expected MODULE:CALLABLE, e.g. models.py:build or my_pkg.models:build")
    if module_name.endswith(".py") or "/" in module_name or "\\" in module_name:
        module = _import_file(Path(module_name), module_name)
    else:
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            raise RooflineError(f"cannot import module {module_name!r}: {type(exc).__name__}: {_line(exc)}") from exc
    fn = getattr(module, attr, None)
    if fn is None:
        raise RooflineError(f"{module_name} has no attribute {attr!r}")
    if not callable(fn):
        raise RooflineError(f"{target}: {attr!r} is a {type(fn).__name__}, not a callable")
    return fn


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
    except Exception as exc:
        raise RooflineError(f"import failed: {type(exc).__name__}: {_line(exc)}", where=where) from exc
    finally:
        sys.path.remove(str(path.resolve().parent))
    return module


def _line(exc: BaseException) -> str:
    return (str(exc).strip() or type(exc).__name__).splitlines()[0]


def call_target(target: str, *, meta: bool = True) -> tuple[Any, tuple[Any, ...]]:
    """Call the user's CALLABLE (under ``torch.device("meta")`` when ``meta``): (module, the inputs it returned or ())."""
    torch = require("torch", "torch")
    fn = load_callable(target)
    try:
        with torch.device("meta") if meta else contextlib.nullcontext():
            made = fn()
    except Exception as exc:
        raise RooflineError(f"{target} raised {type(exc).__name__}: {_line(exc)}") from exc
    inputs: tuple[Any, ...] = ()
    if isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], torch.nn.Module):
        made, given = made
        inputs = tuple(given) if isinstance(given, (list, tuple)) else (given,)
    if not isinstance(made, torch.nn.Module):
        raise RooflineError(f"{target} returned a {type(made).__name__}; expected an nn.Module or a (module, inputs) pair")
    return made, inputs


__all__ = ["call_target", "load_callable", "parse_input"]
