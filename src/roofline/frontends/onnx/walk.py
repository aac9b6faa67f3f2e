"""The graph walk: every node of a graph, and of its Loop / Scan / If subgraphs, as ops of a workload.

Pass 1 classifies the nodes: constants fold, views move nothing, the rest are ops.
Pass 2 plans the runtime fusions (:mod:`.fusion`); pass 3 emits one op per remaining
node (or fused pattern), costed by the op table (:mod:`.ops`).  Subgraphs are shape-inferred
standalone and walked ``trip count`` times, within the limits of :mod:`.load`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from roofline.core.errors import RooflineError
from roofline.core.precision import ONNX_ELEM, ONNX_NUMERIC
from roofline.engine.gemm_shape import dims_from_flops
from roofline.frontends.onnx.fusion import Fused, plan_fusions
from roofline.frontends.onnx.load import NO_FOLD, TensorInfo, as_t, big_generator, collect, limit
from roofline.frontends.onnx.ops import DATA_INPUTS, INT8_OPS, MIN_RANK, Entry, NodeView, entry_for, node_cost, other
from roofline.work.costs import T
from roofline.work.workload import Op, WorkloadBuilder

#: Views and metadata: no bytes move, no op is emitted.
VIEW_OPS = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Dropout", "Shape", "Size",
                      "Optional", "OptionalGetElement", "OptionalHasElement"})

#: Folding these over a weight keeps the weight's stored bytes (QDQ int8 weights, fp16 weights cast up).
_STORED_ALIAS = frozenset({"DequantizeLinear", "Cast", "Transpose", "Reshape", "Squeeze", "Unsqueeze", "Flatten",
                           "Identity"})


@dataclass
class Ctx:
    """The walk's state: the model's opsets and symbols, the workload being built, counters and limits."""

    onnx: Any
    opset: int
    opsets: list[Any]
    symbols: dict[str, int]
    builder: WorkloadBuilder
    fuse: bool = True
    unknown_nodes: list[str] = field(default_factory=list)
    fusions: dict[str, int] = field(default_factory=dict)
    stored: dict[str, float] = field(default_factory=dict)  # folded weight -> bytes of its stored source
    folded: int = 0
    views: int = 0
    nodes: int = 0
    where: str = "model"
    depth: int = 0
    expanded: list[int] = field(default_factory=lambda: [0])  # nodes walked in all (shared with If trials)
    schemas: dict[str, Any] = field(default_factory=dict)

    def trial(self) -> Ctx:
        """A context for walking an If branch on the side (own ops and counters, shared limits)."""
        return Ctx(self.onnx, self.opset, self.opsets, self.symbols, WorkloadBuilder(), self.fuse,
                   stored=self.stored, where=self.where, depth=self.depth, expanded=self.expanded,
                   schemas=self.schemas)

    def adopt(self, other: Ctx) -> None:
        """Take over the ops, warnings and counts of a trial walk (instead of walking the branch again)."""
        b, o = self.builder, other.builder
        for c, column in o._rows.items():
            b._rows[c].extend(column)
        for u in o.unsupported.values():
            mine = b.unsupported.get(u.name)
            b.unsupported[u.name] = dataclasses.replace(u, count=u.count + (mine.count if mine else 0),
                                                        bytes=u.bytes + (mine.bytes if mine else 0.0))
        for message in o.warnings:
            b.warn(message)
        for message in o.assumptions:
            b.assume(message)
        self.unknown_nodes += other.unknown_nodes
        for k, n in other.fusions.items():
            self.fusions[k] = self.fusions.get(k, 0) + n
        self.folded += other.folded
        self.views += other.views
        self.nodes += other.nodes


def _small_value(ctx: Ctx, graph: Any, name: str, const_values: Mapping[str, Any]) -> Any:
    """The value of a small constant (trip counts, If conditions), or None."""
    if name in const_values:
        return const_values[name]
    for init in graph.initializer:
        if init.name == name and init.data_location != 1 and math.prod(init.dims) <= 16:
            try:
                return ctx.onnx.numpy_helper.to_array(init)
            except Exception:
                return None
    return None


def _precision(names: Sequence[str], tensors: Mapping[str, TensorInfo]) -> str:
    """The precision of the first tensor of a numeric element type (fp32 when none is)."""
    for name in names:
        t = tensors.get(name) if name else None
        if t is not None and t.elem in ONNX_NUMERIC:
            return ONNX_ELEM[t.elem][1]
    return "fp32"


def _attr(onnx: Any, a: Any) -> Any:
    """An attribute's value (strings decoded)."""
    value = onnx.helper.get_attribute_value(a)
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


#: attributes whose every value must be >= 1 (or >= 0 for pads) where the op has them
_AT_LEAST = {"group": 1, "strides": 1, "dilations": 1, "kernel_shape": 1, "pads": 0}


def _check_attributes(ctx: Ctx, node: Any, name: str) -> None:
    """Attribute types as the op's schema declares them, and the few values cost formulas divide by or index with."""
    onnx = ctx.onnx
    key = node.op_type
    declared = ctx.schemas.get(key)
    if declared is None:  # attribute name -> declared type code, once per op type
        try:
            declared = {n: int(a.type) for n, a in onnx.defs.get_schema(key, ctx.opset, "").attributes.items()}
        except Exception:  # onnx.defs.SchemaError: an op (or opset) onnx does not know; nothing to check against
            declared = {}
        ctx.schemas[key] = declared
    for a in node.attribute:
        aname, atype = a.name, a.type
        want = declared.get(aname)
        if want is not None and atype != want:
            got = onnx.AttributeProto.AttributeType.Name(atype) if atype in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                                                              13, 14) else str(atype)
            raise RooflineError(f"node {name!r} ({key}): attribute {aname!r} must be "
                                f"{onnx.AttributeProto.AttributeType.Name(want)}, got {got}", where=ctx.where)
        low = _AT_LEAST.get(aname)
        if low is not None and atype in (2, 7):  # INT, INTS
            values = [a.i] if atype == 2 else list(a.ints)
            if any(v < low for v in values):
                raise RooflineError(f"node {name!r} ({key}): attribute {aname!r} must be >= {low}, got "
                                    f"{values if atype == 7 else values[0]}", where=ctx.where)
        if aname == "perm" and key == "Transpose" and sorted(a.ints) != list(range(len(a.ints))):
            raise RooflineError(f"node {name!r} (Transpose): perm {list(a.ints)} is not a permutation of "
                                f"0..{len(a.ints) - 1}", where=ctx.where)


def walk_graph(ctx: Ctx, graph: Any, tensors: dict[str, TensorInfo], consts: set[str],
               const_values: dict[str, Any], prefix: str, count: float) -> None:
    """Walk ``graph``, its ops repeated ``count`` times, their names prefixed with ``prefix``."""
    ops = _classify(ctx, graph, tensors, consts, const_values, prefix)
    # pass 2: runtime fusions (MatMul + bias, erf-GELU, attention)
    absorbed, fused = plan_fusions(graph, ops, tensors, consts, ctx.fusions) if ctx.fuse else (set(), {})
    # pass 3: one op per remaining node
    for index in ops:
        node = graph.node[index]
        name = prefix + (node.name or f"{node.op_type}_{index}")
        if node.op_type in ("Loop", "Scan", "If") and node.domain in ("", "ai.onnx"):
            _subgraph(ctx, node, name, tensors, consts, const_values, count, graph)
        elif index not in absorbed:
            _emit(ctx, _node_op(ctx, node, name, fused.get(index), prefix), tensors, consts, count)


def _count_nodes(ctx: Ctx, graph: Any) -> None:
    """Count the graph's nodes; an error past ``ROOFLINE_ONNX_MAX_NODES`` nodes in all (subgraphs expanded)."""
    ctx.nodes += len(graph.node)
    ctx.expanded[0] += len(graph.node)
    top = limit("nodes")
    if ctx.expanded[0] > top:
        raise RooflineError(f"more than {top:,} nodes with subgraphs expanded (Loop / Scan / If bodies; set "
                            "ROOFLINE_ONNX_MAX_NODES to raise the limit)", where=ctx.where)


def _classify(ctx: Ctx, graph: Any, tensors: dict[str, TensorInfo], consts: set[str], const_values: dict[str, Any],
              prefix: str) -> list[int]:
    """Pass 1: constant subgraphs fold (as an inference runtime does), views are counted; returns the op nodes."""
    _count_nodes(ctx, graph)
    ops: list[int] = []
    for index, node in enumerate(graph.node):
        op_type, default = node.op_type, node.domain in ("", "ai.onnx")
        if default:
            _check_attributes(ctx, node, prefix + (node.name or f"{op_type}_{index}"))
        present = [i for i in node.input if i]
        if op_type == "Constant" and default:
            _constant(ctx, node, tensors, consts, const_values)
        elif op_type in ("Loop", "Scan", "If") and default:
            ops.append(index)
        elif op_type in ("Shape", "Size") and default:
            t = tensors.get(node.input[0])
            if t is not None and t.shape is not None:
                consts.update(node.output)  # static once shapes are known: shape arithmetic folds
            ctx.views += 1
        elif op_type not in NO_FOLD and present and all(i in consts for i in present):
            consts.update(o for o in node.output if o)  # constant inputs: the node folds
            ctx.folded += 1
            src = as_t(tensors.get(node.input[0]))
            if op_type in _STORED_ALIAS and src is not None and node.output and node.output[0]:
                # a dequantized / cast / transposed weight is still read at its stored size
                ctx.stored[node.output[0]] = ctx.stored.get(node.input[0], src.nbytes)
        elif op_type in VIEW_OPS and default:
            ctx.views += 1
        else:
            ops.append(index)
    return ops


def _constant(ctx: Ctx, node: Any, tensors: dict[str, TensorInfo], consts: set[str],
              const_values: dict[str, Any]) -> None:
    """A Constant node: its output is constant, and its value known when small."""
    consts.update(node.output)
    value = next((a for a in node.attribute if a.name == "value"), None)
    if value is not None and node.output:
        t = value.t
        tensors[node.output[0]] = TensorInfo(tuple(t.dims), t.data_type)
        if math.prod(t.dims) <= 16:
            const_values[node.output[0]] = ctx.onnx.numpy_helper.to_array(t)
    ctx.folded += 1


@dataclass(slots=True)
class _NodeOp:
    """One op to emit: a node, or a fused pattern, by its tensor names."""

    name: str
    key: str  # the op table key: op type, with its domain outside the default one
    op_type: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]
    entry: Entry | None  # None: no formula


def _node_op(ctx: Ctx, node: Any, name: str, fused: Fused | None, prefix: str) -> _NodeOp:
    """The op a node (or the fused pattern planned at it) emits."""
    if fused is not None:
        return _NodeOp(prefix + fused.name, fused.op_type, fused.op_type, fused.inputs, fused.outputs, fused.attrs,
                       fused.entry)
    key = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
    return _NodeOp(name, key, node.op_type, list(node.input), list(node.output),
                   {a.name: _attr(ctx.onnx, a) for a in node.attribute}, entry_for(key))


def _check_rank(ctx: Ctx, op: _NodeOp, ins: list[T | None]) -> None:
    """Ops whose formulas index shapes (:data:`MIN_RANK`): their first two inputs have the rank they need."""
    rank = MIN_RANK[op.key]
    for k in range(min(2, len(ins))):
        if (t := ins[k]) is not None and len(t.shape) < rank:
            raise RooflineError(f"node {op.name!r} ({op.op_type}): input {op.inputs[k]!r} has rank {len(t.shape)} "
                                f"({'scalar' if not t.shape else 'x'.join(map(str, t.shape))}); {op.op_type} needs "
                                f"rank >= {rank}", where=ctx.where)


def _view(ctx: Ctx, op: _NodeOp, tensors: Mapping[str, TensorInfo], consts: set[str]) -> NodeView | None:
    """The op's tensors (a folded weight at its stored size); None when a shape it needs is unknown."""
    ins = [as_t(tensors.get(i)) if i else None for i in op.inputs]
    for k, i in enumerate(op.inputs):
        if i in ctx.stored and (t := ins[k]) is not None and t.numel:
            ins[k] = T(t.shape, ctx.stored[i] / t.numel)
    outs = [as_t(tensors.get(o)) if o else None for o in op.outputs]
    if op.key in MIN_RANK:
        _check_rank(ctx, op, ins)
    data_idx = DATA_INPUTS.get(op.op_type)
    needed = range(len(ins)) if data_idx is None else data_idx
    if any(ins[i] is None for i in needed if i < len(ins) and op.inputs[i]) or \
            any(o is None for o, n in zip(outs, op.outputs, strict=False) if n):
        return None
    return NodeView(op.op_type, ins, [o for o in outs if o is not None], op.attrs, ctx.opset, op.inputs, consts)


def _emit(ctx: Ctx, op: _NodeOp, tensors: Mapping[str, TensorInfo], consts: set[str], count: float) -> None:
    """Cost one node (or fused pattern) and add it; unknown shapes and op types are recorded, not dropped."""
    view = _view(ctx, op, tensors, consts)
    if view is None:
        ctx.unknown_nodes.append(op.name)
        ctx.builder.add_unsupported(f"{op.key} (shape unknown)")
        return
    try:
        c = node_cost(op.entry or other, view)
    except RooflineError:
        raise
    except (KeyError, IndexError, ValueError, TypeError, ZeroDivisionError, OverflowError) as exc:
        # a node whose attributes or shapes its formula cannot take (MatMulNBits without K, a 2-D Attention):
        # one line naming it, never a traceback
        from roofline.core.errors import first_line

        raise RooflineError(f"node {op.name!r} ({op.op_type}): cannot be costed: {type(exc).__name__}: "
                            f"{first_line(exc)}", where=ctx.where) from None
    if op.entry is None:
        ctx.builder.add_unsupported(op.key, (c.bytes_read + c.bytes_written) * count)
    precision = "int8" if op.key in INT8_OPS else _precision([*op.inputs, *op.outputs], tensors)
    dims: dict[str, float] = (dims_from_flops(c.flops, view.outs[0].shape) or {}) if c.kind == "matmul" and view.outs \
        else {}
    ctx.builder.add_op(Op(op.name, kind=c.kind, flops=c.flops, bytes_read=c.bytes_read, bytes_written=c.bytes_written,
                          precision=precision, unit=c.unit, count=count, group=op.name, module_type=op.op_type,
                          weight_bytes=c.weight_bytes, m=dims.get("m", math.nan), n=dims.get("n", math.nan),
                          k=dims.get("k", math.nan), batch=dims.get("batch", math.nan)))


def _graph_attr(ctx: Ctx, node: Any, name: str, key: str) -> Any:
    """Subgraph attribute ``key`` of a Loop / Scan / If node; an error when it is missing or not a graph."""
    a = {a.name: a for a in node.attribute}.get(key)
    if a is None:
        raise RooflineError(f"{node.op_type} node {name!r}: missing attribute {key!r} (its subgraph)", where=ctx.where)
    if a.type != ctx.onnx.AttributeProto.GRAPH:
        raise RooflineError(f"{node.op_type} node {name!r}: attribute {key!r} must be a graph", where=ctx.where)
    return a.g


def _subgraph(ctx: Ctx, node: Any, name: str, tensors: dict[str, TensorInfo], consts: set[str],
              const_values: dict[str, Any], count: float, graph: Any) -> None:
    """Loop / Scan / If: infer the body's shapes standalone, then walk it ``trip count`` times."""
    if node.op_type == "If":
        _if(ctx, node, name, tensors, consts, const_values, count, graph)
        return
    body = _graph_attr(ctx, node, name, "body")
    if node.op_type == "Loop":
        known, trips = _loop(ctx, node, name, tensors, const_values, graph)
    else:
        known, trips = _scan(ctx, node, name, tensors)
    from roofline.work import workload_columns as _workload

    top = getattr(_workload, "MAX_COUNT", math.inf)
    if count * max(trips, 1) > top:
        raise RooflineError(f"{node.op_type} node {name!r}: {trips:,} iterations" + (f" x {count:g} (enclosing loops)"
                                                                                     if count > 1 else "")
                            + f" exceed the {top:g} repetitions an op may count", where=ctx.where)
    _body(ctx, body, known, f"{name}/", tensors, consts, const_values, count * max(trips, 1))


def _if(ctx: Ctx, node: Any, name: str, tensors: dict[str, TensorInfo], consts: set[str],
        const_values: dict[str, Any], count: float, graph: Any) -> None:
    """If: the taken branch when the condition is constant, else the costlier one (each walked once)."""
    branches = [("then_branch", _graph_attr(ctx, node, name, "then_branch")),
                ("else_branch", _graph_attr(ctx, node, name, "else_branch"))]
    cond = _small_value(ctx, graph, node.input[0], const_values) if node.input else None
    if cond is not None and getattr(cond, "size", 0) >= 1:
        label, taken = branches[0] if bool(cond.reshape(-1)[0]) else branches[1]
        _body(ctx, taken, [], f"{name}/{label}/", tensors, consts, const_values, count)
        return
    # unknown condition: count the costlier branch (an upper bound), say so
    best: tuple[float, str, Ctx] | None = None
    for label, g in branches:
        trial = ctx.trial()
        _body(trial, g, [], f"{name}/{label}/", dict(tensors), set(consts), dict(const_values), count)
        flops = float(sum(f * c for f, c in zip(trial.builder._rows["flops"], trial.builder._rows["count"],
                                                  strict=True)))
        if best is None or flops > best[0]:
            best = (flops, label, trial)
    assert best is not None
    ctx.builder.warn(f"If node {name!r}: condition not constant; counted the costlier branch ({best[1]})")
    ctx.adopt(best[2])


def _loop(ctx: Ctx, node: Any, name: str, tensors: Mapping[str, TensorInfo], const_values: Mapping[str, Any],
          graph: Any) -> tuple[list[TensorInfo | None], int]:
    """Loop: (the body's inputs: iteration number, condition, carried values; the trip count, 1 if not static)."""
    trips = None
    if node.input[0]:
        value = _small_value(ctx, graph, node.input[0], const_values)
        if value is not None and getattr(value, "size", 0) >= 1:
            first = value.reshape(-1)[0]
            if value.dtype.kind not in "iu" or first < 0:
                raise RooflineError(f"Loop node {name!r}: trip count {first.item()!r} must be a whole number >= 0 "
                                    f"(an int64 scalar)", where=ctx.where)
            trips = int(first)
    known = [TensorInfo((), 7), TensorInfo((), 9), *(tensors.get(i) for i in node.input[2:])]
    if trips is None:
        ctx.builder.warn(f"Loop node {name!r}: trip count not static; its body is counted once")
        trips = 1
    return known, trips


def _scan(ctx: Ctx, node: Any, name: str, tensors: Mapping[str, TensorInfo]) -> tuple[list[TensorInfo | None], int]:
    """Scan (opset >= 9): (the body's inputs: state, then one slice of each scanned input; the sequence length)."""
    attrs = {a.name: a for a in node.attribute}
    a = attrs.get("num_scan_inputs")
    n_scan = int(a.i) if a is not None and a.type == ctx.onnx.AttributeProto.INT else 0
    if not 1 <= n_scan <= len(node.input):
        raise RooflineError(f"Scan node {name!r}: attribute 'num_scan_inputs' must be an integer in "
                            f"1..{len(node.input)} (its inputs)", where=ctx.where)
    known = [tensors.get(i) for i in node.input[: len(node.input) - n_scan]]
    scanned = [tensors.get(i) for i in node.input[len(node.input) - n_scan:]]
    axes = list(attrs["scan_input_axes"].ints) if "scan_input_axes" in attrs else [0] * n_scan
    trips = None
    for t, axis in zip(scanned, axes, strict=False):
        if t is None or t.shape is None:
            known.append(None)
            continue
        axis %= len(t.shape)
        trips = t.shape[axis]
        known.append(TensorInfo(t.shape[:axis] + t.shape[axis + 1:], t.elem))
    if trips is None:
        ctx.builder.warn(f"Scan node {name!r}: sequence length unknown; its body is counted once")
        trips = 1
    return known, trips


def _body(ctx: Ctx, body: Any, known: list[TensorInfo | None], prefix: str, outer: dict[str, TensorInfo],
          consts: set[str], const_values: dict[str, Any], count: float) -> None:
    """Shape-infer a subgraph as a standalone model (outer values as inputs), then walk it."""
    onnx = ctx.onnx
    deepest = limit("depth")
    if ctx.depth + 1 > deepest:
        raise RooflineError(f"subgraph {prefix.rstrip('/')!r} is nested more than {deepest} deep (Loop / Scan / If; "
                            "set ROOFLINE_ONNX_MAX_DEPTH to raise the limit)", where=ctx.where)
    helper = onnx.helper
    g = onnx.GraphProto()
    g.CopyFrom(body)
    for vi, t in zip(g.input, known, strict=False):
        if t is not None and t.shape is not None:
            tt = vi.type.tensor_type
            tt.shape.Clear()
            tt.elem_type = tt.elem_type or t.elem
            for d in t.shape:
                tt.shape.dim.add().dim_value = d
    defined = {i.name for i in g.input} | {i.name for i in g.initializer} | {o for n in g.node for o in n.output}
    used = {i for n in g.node for i in n.input if i} | {o.name for o in g.output}
    for name in sorted(used - defined):  # outer-scope values
        t = outer.get(name)
        if t is not None:
            g.input.append(helper.make_tensor_value_info(name, t.elem or 1, t.shape))
    inner: dict[str, TensorInfo] = dict(outer)
    try:
        model = helper.make_model(g, opset_imports=ctx.opsets)
        model.ir_version = min(model.ir_version, onnx.IR_VERSION)
        big = big_generator(onnx, model.graph)
        if big:
            ctx.builder.warn(f"{big} inside {prefix.rstrip('/')!r} would be materialised by onnx data propagation; "
                             "its shape inference runs without it (shapes, not data)")
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=not big).graph
    except Exception as exc:  # a body onnx cannot infer: walk it with what is declared
        ctx.builder.warn(f"shape inference failed inside {prefix.rstrip('/')!r}: {exc.__class__.__name__}")
        inferred = g
    collect(inferred, ctx.symbols, inner)
    for vi, t in zip(body.input, known, strict=False):  # loop-carried values keep their first-iteration shape
        if t is not None and t.shape is not None:
            inner[vi.name] = t
    ctx.depth += 1
    try:
        walk_graph(ctx, body, inner, set(consts) | {i.name for i in body.initializer}, dict(const_values), prefix,
                   count)
    finally:
        ctx.depth -= 1

