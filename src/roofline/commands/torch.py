"""``roofline torch``: per-module roofline of a PyTorch model, traced on the meta device."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from roofline.commands._common import EXAMPLE_HELP, add_device_option, add_output_options, check_outputs, emit, resolve
from roofline.errors import RooflineError, require
from roofline.frontends.torch import DTYPE_NAMES

EPILOG = """\
examples:
  roofline torch mymodels.py:build_resnet --input 1x3x224x224 --device h100
  roofline torch my_pkg.models:make_lm --input 8x1024:int64 --device a100 --group-by type
  roofline torch mymodels.py:build_resnet --input 64x3x224x224:bf16 --training --device h100 -o chart.png

MODULE is a dotted module name or a path to a .py file; CALLABLE returns an nn.Module,
or a (module, inputs) pair.  It is called under torch.device("meta"), so the model is
built without allocating weights; --input SHAPE[:DTYPE] (dtype fp32 by default; int64
for token ids) replaces the returned inputs.  --group-by module|type|kind (default
module) with --depth N cuts module paths to N parts.  Ops without a FLOP formula are
listed as unsupported, with their bytes counted.
"""



def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("torch", help="roofline of a PyTorch nn.Module (per aten op, grouped by module)",
                              description="Trace a PyTorch model on the meta device: FLOPs and bytes of every "
                                          "aten op, grouped by module, placed under a device's roofs.",
                              epilog=EPILOG, formatter_class=EXAMPLE_HELP)
    p.add_argument("target", metavar="MODULE:CALLABLE", help="e.g. models.py:build or my_pkg.models:build")
    p.add_argument("--input", "-i", action="append", default=[], metavar="SHAPE[:DTYPE]",
                   help="an input tensor, e.g. 1x3x224x224 or 8x512:int64; repeat for several inputs")
    p.add_argument("--training", action="store_true", help="forward + backward from the sum of the outputs")
    add_device_option(p, required=False)
    p.add_argument("--measure", action="store_true",
                   help="also run the model for real on this CPU (built without meta, random inputs) and time every "
                        "op with torch.profiler: measured points next to the predicted ones (--device defaults to local)")
    p.add_argument("--repeats", type=int, default=10, metavar="N", help="with --measure: timed runs (default 10)")
    add_output_options(p, group_by=("module", "type", "kind"))
    p.set_defaults(func=run, group_by="module")


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
        path = Path(module_name)
        if not path.is_file():
            raise RooflineError("no such file", where=module_name)
        name = f"_roofline_user_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise RooflineError("cannot import this file as Python", where=module_name)
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(path.resolve().parent))  # let the file import its neighbours
        try:
            sys.modules[name] = module
            spec.loader.exec_module(module)
        except Exception as exc:
            raise RooflineError(f"import failed: {type(exc).__name__}: {_line(exc)}", where=module_name) from exc
        finally:
            sys.path.remove(str(path.resolve().parent))
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


def build(target: str, specs: list[str]) -> tuple[Any, tuple[Any, ...]]:
    """Call the user's CALLABLE on the meta device: (meta model, meta inputs)."""
    torch = require("torch", "torch")
    parsed = [parse_input(s) for s in specs]  # check every --input before running user code
    model, inputs = call_target(target)
    if any(t.device.type != "meta" for t in (*model.parameters(), *model.buffers())):
        model = model.to("meta")  # built before our meta context (e.g. at import): drop the real weights
    if parsed:
        inputs = tuple(torch.empty(shape, dtype=getattr(torch, dtype), device="meta") for shape, dtype in parsed)
    else:
        inputs = tuple(t.to("meta") if isinstance(t, torch.Tensor) else t for t in inputs)
    if not inputs:
        raise RooflineError(f"{target} returned a module without inputs; give --input SHAPE[:DTYPE]")
    return model, inputs


def run(args: argparse.Namespace) -> int:
    from roofline.analysis import analyze
    from roofline.frontends.torch import from_torch

    check_outputs(args)
    if args.device is None and not args.measure:
        raise RooflineError("--device is required (it defaults to 'local' only with --measure)")
    device = resolve(args.device or "local")
    if getattr(args, "measure", False):
        if args.training:
            raise RooflineError("--measure times inference only; drop --training")
        from roofline.measurement import measure_target

        measured = measure_target(args.target, args.input, device, repeats=args.repeats)
        emit(measured, args, title=f"{measured.workload.title} on {device.name}")
        return 0
    model, inputs = build(args.target, args.input)
    workload = from_torch(model, *inputs, mode="training" if args.training else "inference")
    analysis = analyze(workload, device)
    emit(analysis, args, title=f"{workload.title} on {device.name}")
    return 0
