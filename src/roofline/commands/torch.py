"""``roofline torch``: per-module roofline of a PyTorch model, traced on the meta device."""

from __future__ import annotations

import argparse
from typing import Any

from roofline.commands._common import (
    EXAMPLE_HELP,
    add_device_option,
    add_output_options,
    add_tf32_option,
    check_outputs,
    emit,
    resolve,
)
from roofline.core.errors import RooflineError, require
from roofline.frontends.target import call_target, parse_input, user_code

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

User code: an exception raised by CALLABLE or by the model's forward, or a
sys.exit() in either, is the user's bug: one line naming MODULE:CALLABLE with the
exception's type and message, exit 2.  Ctrl-C still exits 130.
"""



def register(subparsers: argparse._SubParsersAction) -> None:
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
    add_tf32_option(p)
    p.set_defaults(func=run, group_by="module")


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
    from roofline.engine.analysis import analyze
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
    with user_code(args.target, "raised while tracing its forward:"):
        workload = from_torch(model, *inputs, mode="training" if args.training else "inference")
    analysis = analyze(workload, device, tf32=args.tf32)
    emit(analysis, args, title=f"{workload.title} on {device.name}")
    return 0
