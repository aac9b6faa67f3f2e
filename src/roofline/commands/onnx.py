"""``roofline onnx``: per-node roofline of an ONNX model, from the graph alone."""

from __future__ import annotations

import argparse

from roofline.commands._common import (
    EXAMPLE_HELP,
    add_device_option,
    add_output_options,
    add_tf32_option,
    check_outputs,
    emit,
    resolve,
)
from roofline.core.errors import RooflineError

EPILOG = """\
examples:
  roofline onnx resnet50.onnx --input data=1x3x224x224 --device h100-sxm
  roofline onnx model.onnx --input batch=8 --device a100 --group-by op -o chart.png --json out.json

--input NAME=SHAPE binds a graph input (1x3x224x224) or NAME=N a symbolic dimension (batch=8);
symbolic dimensions left unbound are set to 1 with a warning.  Weights are never read:
external-data files may be absent.  --group-by op: one row per op type; node: one per node.
MatMul+bias, erf-GELU and MatMul-Softmax-MatMul attention count as one op each, as onnxruntime
fuses them; --no-fuse counts one op per node.
Bounded: subgraphs nested at most ROOFLINE_ONNX_MAX_DEPTH (8) deep, ROOFLINE_ONNX_MAX_NODES (10**6)
nodes with subgraphs expanded, dimensions at most ROOFLINE_MAX_DIM (10**12); constant folding
computes shapes, not data (at most 4,096 elements per value).
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("onnx", help="roofline of an ONNX model (per node, from shape inference)",
                              description="Per-node FLOPs and bytes of an .onnx file placed under a device's roofs.",
                              epilog=EPILOG, formatter_class=EXAMPLE_HELP)
    p.add_argument("model", help="path to the .onnx file")
    p.add_argument("--input", "-i", action="append", default=[], metavar="NAME=SHAPE",
                   help="input shape (x=1x3x224x224) or symbolic dimension (batch=8); repeatable")
    p.add_argument("--no-fuse", action="store_true",
                   help="one op per node: do not fuse MatMul+bias, erf-GELU and attention patterns")
    add_device_option(p)
    add_output_options(p, group_by=("op", "node"))
    add_tf32_option(p)
    p.set_defaults(func=run)


def parse_inputs(specs: list[str]) -> dict[str, object]:
    """['x=1x3x224x224', 'batch=8'] -> {'x': '1x3x224x224', 'batch': 8} (shapes are parsed by from_onnx)."""
    out: dict[str, object] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise RooflineError(f"--input {spec!r}: expected NAME=SHAPE, e.g. x=1x3x224x224 or batch=8")
        if name in out:
            raise RooflineError(f"--input {name!r} given twice")
        out[name] = int(value) if value.isdigit() else value
    return out


def run(args: argparse.Namespace) -> int:
    from roofline.engine.analysis import analyze
    from roofline.frontends.onnx import from_onnx

    check_outputs(args)
    device = resolve(args.device)
    shapes = parse_inputs(args.input)
    workload = from_onnx(args.model, shapes, fuse=not args.no_fuse)
    analysis = analyze(workload, device, tf32=args.tf32)
    emit(analysis, args, title=f"{workload.title} on {device.name}")
    return 0
