"""ONNX file -> :class:`~roofline.work.workload.Workload`: per-node FLOPs and bytes from the graph alone.

The package: :mod:`.load` (loading, limits, shape inference, constant folding), :mod:`.ops`
(the op table :data:`OPS` and the per-op cost code), :mod:`.fusion` (runtime fusions), :mod:`.walk`
(graph and subgraph walking, emitting ops); this module holds :func:`from_onnx`.

No runtime runs and no weight is read: the graph is loaded with
``load_external_data=False``, symbolic dimensions are bound (by the caller, or
to 1 with a warning), ``onnx.shape_inference`` gives every tensor's shape, and
each node's op type keys into the cost formulas of :mod:`roofline.work.costs` (the
same formulas the PyTorch frontend uses; :data:`OPS` is the ONNX op table).

What is counted, and how:

* One op per node, ``name`` = ``group`` = the node name (``loop/body_node`` inside
  a subgraph), ``module_type`` = the op type; so ``Analysis.by("module_type")``
  groups by op type and ``Analysis.by("name")`` by node.
* Bytes: the unfused compulsory-traffic model (every data input read once, every
  output written once).  Initializers and constant-folded tensors read by a node
  are its weights (``weight_bytes``) at their stored dtype.  Metadata inputs
  (shapes, axes, starts/ends) are not traffic.
* Constant subgraphs (``Constant``, ``ConstantOfShape`` of a constant, shape
  arithmetic on ``Shape`` outputs) are folded away, as an inference runtime does.
* Views move nothing and are not ops: Reshape, Squeeze, Unsqueeze, Flatten,
  Identity, Dropout (inference), Shape, Size.
* Unknown op types become kind ``other`` ops carrying their bytes and are listed
  in ``Workload.unsupported``; nodes whose shapes cannot be inferred are listed
  in ``Workload.unsupported`` (as ``"<OpType> (shape unknown)"``), in
  ``info["unknown_shape_nodes"]`` and in a warning.  Nothing is dropped silently.
* Loop/Scan bodies run ``count`` = trip count times when it is static (a constant
  ``M``, the scanned axis length); otherwise once, with a warning.  ``If``
  counts the taken branch when the condition is constant, else the costlier one
  (with a warning).

Bounded work, whatever the file says (each limit is stated in its error and set by an
environment variable, a positive integer):

* ``ROOFLINE_ONNX_MAX_DEPTH`` (default 8): Loop / Scan / If subgraphs nested deeper
  are refused.
* ``ROOFLINE_ONNX_MAX_NODES`` (default 1,000,000): nodes walked in all, subgraphs
  expanded (each ``If`` branch is walked once, whatever the nesting).
* ``ROOFLINE_MAX_DIM`` (default 10**12): a dimension given in ``input_shapes`` /
  ``--input`` (:func:`roofline.core.limits.check_dims`).
* Constant folding evaluates shapes, not data: a node is evaluated only when its
  result holds at most ``_STATIC_MAX`` (4,096) elements, judged from its inputs
  *before* it runs; a bigger one (``Range`` to 3e8, ``ConstantOfShape`` /
  ``Expand`` / ``Tile`` to huge shapes) stays unknown, with a warning.

Malformed graphs are one-line errors naming the node: an attribute whose type is
not the one the op's schema declares, ``group`` / ``strides`` / ``kernel_shape`` /
``dilations`` < 1, negative ``pads``, a ``perm`` that is not a permutation, ``If``
without branches, ``Loop`` / ``Scan`` without a body, a trip count that is negative
or not a whole number, MatMul / Gemm / Conv inputs of too small a rank.

>>> import os, onnx, roofline
>>> zoo = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
>>> w = roofline.from_onnx(os.path.join(zoo, "light_resnet50.onnx"), {"gpu_0/data_0": (1, 3, 224, 224)})
>>> round(w.total_flops / 1e9, 2)  # conv + gemm 8.18 (4.09 G multiply-adds) + BN, ReLU, pooling
8.24
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roofline.core.errors import RooflineError, require
from roofline.frontends.onnx.load import (
    DEFAULT_DIM,
    LIMITS,
    bind_inputs,
    check_external_data,
    check_versions,
    infer,
    limit,
    load_model,
)
from roofline.frontends.onnx.ops import ENTRIES, OPS, NodeView
from roofline.frontends.onnx.walk import VIEW_OPS, Ctx, walk_graph
from roofline.work.workload import Workload, WorkloadBuilder


def _proto(onnx: Any, model: str | os.PathLike[str] | Any) -> tuple[Any, str, Path | None]:
    """(a ModelProto of our own, where it came from, the folder of its external data files)."""
    if isinstance(model, (str, os.PathLike)):
        return load_model(model), str(model), Path(model).resolve().parent
    if not isinstance(model, onnx.ModelProto):
        raise RooflineError(f"expected a path to an .onnx file or an onnx.ModelProto, got {type(model).__name__}")
    proto = onnx.ModelProto()
    proto.CopyFrom(model)
    return proto, model.graph.name or "model", None


def _report(ctx: Ctx, builder: WorkloadBuilder, where: str) -> None:
    """The walk's assumptions and warnings; an error when nothing was countable."""
    builder.assume("inference graph: constant subgraphs (Constant, ConstantOfShape of constants, shape "
                   "arithmetic) folded away; views (Reshape, Squeeze, Unsqueeze, Flatten, Identity, "
                   "Dropout) move no bytes; initializers count as weight reads of the nodes that use them")
    if ctx.fusions:
        builder.assume("fused as onnxruntime runs them: " + ", ".join(f"{n} {k}" for k, n in ctx.fusions.items())
                       + " (bias adds are matmul epilogues; attention keeps no L x S tensor in memory, a constant "
                       "Trilu-built mask counts as causal, and the Transpose/Split ops that only reshuffle its "
                       "q, k, v and output are absorbed); fuse=False / --no-fuse for one op per node")
    if ctx.unknown_nodes:
        shown = ", ".join(ctx.unknown_nodes[:8]) + (f" and {len(ctx.unknown_nodes) - 8} more"
                                                     if len(ctx.unknown_nodes) > 8 else "")
        builder.warn(f"{len(ctx.unknown_nodes)} node(s) with shapes onnx could not infer are not counted: {shown}")
    unknown_types = sorted(u.name for u in builder.unsupported.values() if not u.name.endswith("(shape unknown)"))
    if unknown_types:
        builder.warn(f"op type(s) without a FLOP formula, counted as bytes only: {', '.join(unknown_types)}")
    if not len(builder):
        raise RooflineError(f"no countable ops: {ctx.nodes} node(s), {ctx.views} view(s), {ctx.folded} "
                            f"constant(s), {len(ctx.unknown_nodes)} with unknown shapes", where=where)


def _arguments(model: Any, input_shapes: Any, default_dim: Any, fuse: Any, title: Any) -> None:
    """The API boundary (:mod:`roofline.core.arguments`), before the file is read: a path or a ModelProto;
    shapes a mapping of names to a shape (a list/tuple of whole numbers, or '1x3x224x224') or a
    symbol's whole number; default_dim a whole number >= 1."""
    from roofline.core import arguments as arg

    if isinstance(model, (str, bytes, os.PathLike)):
        arg.path(model, "from_onnx", "model")
    elif type(model).__name__ != "ModelProto":
        raise arg.type_error("from_onnx", "model", "a path to an .onnx file or an onnx.ModelProto", model)
    if input_shapes is not None:
        arg.mapping(input_shapes, "from_onnx", "input_shapes", "a mapping of input names to shapes")
        for k, v in input_shapes.items():
            f = f"input_shapes[{k!r}]"
            arg.need(k, str, "from_onnx", f"a key of input_shapes ({k!r})", "an input or symbol name (str)")
            if isinstance(v, str):
                continue
            if isinstance(v, int) and not isinstance(v, bool):
                arg.positive_int(v, "from_onnx", f)
                continue
            if not isinstance(v, (list, tuple)):
                raise arg.type_error("from_onnx", f, "a shape (a tuple of whole numbers or '1x3x224x224') or a "
                                     "whole number", v)
            for i, d in enumerate(v):
                arg.positive_int(d, "from_onnx", f"{f}[{i}]")
    arg.positive_int(default_dim, "from_onnx", "default_dim")
    arg.boolean(fuse, "from_onnx", "fuse")
    if title is not None:
        arg.text(title, "from_onnx", "title", empty=True)


def from_onnx(model: str | os.PathLike[str] | Any, input_shapes: Mapping[str, Any] | None = None, *,
              default_dim: int = DEFAULT_DIM, fuse: bool = True, title: str | None = None) -> Workload:
    """Per-node FLOPs and bytes of an ONNX model, from its graph alone.

    ``model``: a path to an ``.onnx`` file (external weight files are never read) or a
    loaded ``onnx.ModelProto`` (not modified).  ``input_shapes`` maps a graph input name to
    its shape (a tuple or ``"1x3x224x224"``), or a symbolic dimension name to its value
    (``{"batch": 8}``).  Symbolic dimensions left unbound are set to ``default_dim`` with
    a warning.  ``fuse`` (default on) costs MatMul + bias, decomposed erf-GELU and
    MatMul-Softmax-MatMul attention as one op each, as onnxruntime fuses them (listed in
    ``Workload.assumptions``); ``fuse=False`` gives one op per node.

    >>> import onnx, roofline
    >>> from onnx import helper as h, TensorProto as TP
    >>> g = h.make_graph([h.make_node("MatMul", ["a", "b"], ["y"], name="mm")], "g",
    ...     [h.make_tensor_value_info("a", TP.FLOAT, ["n", 64]), h.make_tensor_value_info("b", TP.FLOAT, [64, 32])],
    ...     [h.make_tensor_value_info("y", TP.FLOAT, None)])
    >>> w = roofline.from_onnx(h.make_model(g), input_shapes={"a": (128, 64)})
    >>> w.total_flops  # 2 * 128 * 64 * 32
    524288.0
    """
    _arguments(model, input_shapes, default_dim, fuse, title)
    onnx = require("onnx", "onnx")
    require("onnx.shape_inference", "onnx")
    require("onnx.numpy_helper", "onnx")
    proto, where, base = _proto(onnx, model)
    opset = check_versions(proto, where)
    builder = WorkloadBuilder()
    check_external_data(proto, base, builder, where)
    shapes, symbols = bind_inputs(proto, dict(input_shapes or {}), default_dim, builder, where)
    inferred, tensors = infer(onnx, proto, symbols, builder, where)
    ctx = Ctx(onnx, opset, list(proto.opset_import), symbols, builder, fuse, where=where)
    consts = {i.name for i in inferred.graph.initializer}
    walk_graph(ctx, inferred.graph, tensors, consts, {}, "", 1.0)
    _report(ctx, builder, where)
    producer = " ".join(p for p in (proto.producer_name, proto.producer_version) if p)
    info = {"frontend": "onnx", "model": where, "opset": opset, "ir_version": int(proto.ir_version),
            "producer": producer, "nodes": ctx.nodes, "folded_constant_nodes": ctx.folded,
            "view_nodes": ctx.views, "fusions": dict(ctx.fusions), "unknown_shape_nodes": list(ctx.unknown_nodes),
            "input_shapes": {k: list(v) for k, v in shapes.items()}, "symbols": dict(symbols)}
    return builder.build(title=title or Path(where).stem, source=f"onnx: {where}", info=info)


__all__ = ["DEFAULT_DIM", "ENTRIES", "LIMITS", "OPS", "VIEW_OPS", "NodeView", "from_onnx", "limit"]
