"""Loading an ONNX file and knowing its tensors: limits, input binding, shape inference, constant folding.

The model is parsed without its external weight data; the caller's input shapes (or
``DEFAULT_DIM``) bind the symbolic dimensions; ``onnx.shape_inference`` then gives every
tensor's shape, repeated while static shape arithmetic (folded with ``onnx.reference``,
never more than :data:`STATIC_MAX` elements at a time) resolves more of them.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline.core.errors import RooflineError, require
from roofline.core.precision import ONNX_ELEM
from roofline.frontends.onnx.ops import MS
from roofline.work.costs import T
from roofline.work.workload import WorkloadBuilder

DEFAULT_DIM = 1
#: limit name -> (default, environment variable)
LIMITS = {"depth": (8, "ROOFLINE_ONNX_MAX_DEPTH"), "nodes": (1_000_000, "ROOFLINE_ONNX_MAX_NODES")}


def limit(name: str) -> int:
    """The current value of limit ``name`` (:data:`LIMITS`): its environment variable, else the default."""
    from roofline.core.errors import env_limit

    default, env = LIMITS[name]
    return env_limit(env, default)

#: Never constant-folded (random, or with side effects).
NO_FOLD = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli",
                      "Multinomial", "Loop", "Scan", "If"})

# -- loading -----------------------------------------------------------------------------------
def load_model(path: str | os.PathLike[str]) -> Any:
    """Parse an .onnx file without reading external weight data; one-line errors for bad files."""
    onnx = require("onnx", "onnx")
    from roofline.core.fileio import max_input_bytes, read_bytes
    from roofline.core.text import shown_path

    where = shown_path(path)
    # the one input reader (regular files only); up to protobuf's 2 GiB even under a smaller input limit,
    # so a model past 2 GiB gets the message that says what to do
    data = read_bytes(path, limit=max(max_input_bytes(), 2**31))
    if len(data) >= 2**31:
        raise RooflineError(f"{len(data) / 2**30:.1f} GiB: protobuf cannot parse a single file over 2 GiB; save "
                            "the model with external data (onnx.save_model(..., save_as_external_data=True))",
                            where=where)
    looks_onnx = data[:1] == b"\x08"  # a serialized ModelProto starts with field 1 (ir_version), varint
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as exc:  # google.protobuf DecodeError and friends
        if looks_onnx:
            raise RooflineError(f"truncated or corrupt ONNX file ({len(data)} bytes): cannot parse the "
                                f"protobuf ({exc})", where=where) from None
        raise RooflineError("not an ONNX file (not a serialized ONNX ModelProto)", where=where) from None
    if not model.ir_version or not model.HasField("graph"):
        raise RooflineError("not an ONNX file (no IR version or no graph)", where=where)
    if not model.opset_import or not model.graph.output:
        raise RooflineError(f"truncated ONNX file ({len(data)} bytes): the model has no "
                            f"{'opset_import' if not model.opset_import else 'graph outputs'}", where=where)
    return model


def check_versions(model: Any, where: str) -> int:
    """The default-domain opset; an error when it or the IR version is newer than onnx knows."""
    onnx = require("onnx", "onnx")
    opset = 0
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            opset = int(o.version)
    newest = onnx.defs.onnx_opset_version()
    if opset > newest:
        raise RooflineError(f"opset {opset} is newer than the installed onnx {onnx.__version__} supports "
                            f"(up to opset {newest}); upgrade onnx: pip install -U onnx", where=where)
    if model.ir_version > onnx.IR_VERSION:
        raise RooflineError(f"IR version {model.ir_version} is newer than the installed onnx {onnx.__version__} "
                            f"supports (up to {onnx.IR_VERSION}); upgrade onnx: pip install -U onnx", where=where)
    return opset


def check_external_data(model: Any, base: Path | None, builder: WorkloadBuilder, where: str) -> None:
    """External weights are never read; say so clearly when their files are missing."""
    missing: dict[str, int] = {}
    external = 0
    for init in model.graph.initializer:
        if init.data_location != 1:  # TensorProto.EXTERNAL
            continue
        external += 1
        location = next((e.value for e in init.external_data if e.key == "location"), "")
        if base is not None and location and not _is_file(base, location):
            missing[location] = missing.get(location, 0) + 1
    if external:
        builder.assume(f"{external} initializer(s) hold external data: sizes come from their declared "
                       "dims and dtype; the weight files are never read")
    from roofline.core.text import shorten

    for location, n in missing.items():
        builder.warn(f"{where}: external data file {shorten(location, 120)!r} ({n} initializer(s)) not found "
                     "beside the model; the analysis does not need the weights and continues from their shapes")


def _is_file(base: Path, location: str) -> bool:
    """Whether the external data file exists; a name the OS refuses (too long, a NUL byte) does not."""
    try:
        return (base / location).is_file()
    except (OSError, ValueError):
        return False


def _parse_shape(value: Any, name: str) -> tuple[int, ...]:
    """(1, 3, 224, 224), [1, 3, 224, 224], '1x3x224x224' or '1,3,224,224' -> a tuple of ints > 0."""
    if isinstance(value, str):
        parts = [p for p in re.split(r"[x,\s]+", value.strip().strip("()[]")) if p]
    elif isinstance(value, int):
        parts = [value]
    else:
        parts = list(value)
    try:
        dims = tuple(int(p) for p in parts)
    except (TypeError, ValueError):
        raise RooflineError(f"input {name!r}: shape {value!r} must be integers like 1x3x224x224") from None
    if any(d <= 0 for d in dims):
        raise RooflineError(f"input {name!r}: shape {value!r} has a dimension <= 0")
    from roofline.core.limits import check_dims

    return check_dims(dims, f"input {name!r}")


def _dims_text(dims: Sequence[Any]) -> str:
    return "x".join(str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in dims) or "scalar"


def bind_inputs(model: Any, input_shapes: Mapping[str, Any], default_dim: int, builder: WorkloadBuilder,
                where: str) -> tuple[dict[str, tuple[int, ...]], dict[str, int]]:
    """Write concrete dims into the graph inputs; returns (input shapes, symbol bindings)."""
    g = model.graph
    inits = {i.name for i in g.initializer}
    real = [i for i in g.input if i.name not in inits]
    by_name = {i.name: i for i in real}
    shapes, symbols = _given(input_shapes, by_name, where)
    for name, shape in shapes.items():  # user-given shapes first: they also bind the symbols they fill in
        _check_given(by_name[name], shape, symbols, where)
    for i in real:
        tt = i.type.tensor_type
        if not i.type.HasField("tensor_type"):
            continue
        if i.name in shapes:
            _write_dims(tt, shapes[i.name])
        elif not tt.HasField("shape"):
            builder.warn(f"input {i.name!r} declares no shape; give one (input_shapes / --input "
                         f"{i.name}=...) or nodes that read it stay uncounted")
        else:
            shapes[i.name] = _bind_declared(i, symbols, default_dim, builder)
    return shapes, symbols


def _given(input_shapes: Mapping[str, Any], by_name: Mapping[str, Any],
           where: str) -> tuple[dict[str, tuple[int, ...]], dict[str, int]]:
    """The caller's input shapes and symbol values, checked: (input -> shape, symbol -> value)."""
    symbols_declared = {d.dim_param for i in by_name.values() for d in i.type.tensor_type.shape.dim if d.dim_param}
    shapes: dict[str, tuple[int, ...]] = {}
    symbols: dict[str, int] = {}
    for key, value in input_shapes.items():
        if key in by_name:
            shapes[key] = _parse_shape(value, key)
        elif key in symbols_declared and isinstance(value, int) and not isinstance(value, bool):
            if value < 1:
                raise RooflineError(f"input {key!r}: symbolic dimension {value} must be >= 1", where=where)
            from roofline.core.limits import check_dims

            symbols[key] = check_dims((int(value),), f"input {key!r}")[0]
        else:
            names = ", ".join(sorted(by_name)) or "(none)"
            extra = f"; symbolic dims: {', '.join(sorted(symbols_declared))}" if symbols_declared else ""
            raise RooflineError(f"input {key!r} is not an input of the model; its inputs: {names}{extra}",
                                where=where)
    return shapes, symbols


def _check_given(vi: Any, shape: tuple[int, ...], symbols: dict[str, int], where: str) -> None:
    """A given shape agrees with the input's declared rank and fixed dims; it binds the input's symbols."""
    name, tt = vi.name, vi.type.tensor_type
    dims = tt.shape.dim
    if tt.HasField("shape") and len(dims) != len(shape):
        raise RooflineError(f"input {name!r}: shape {'x'.join(map(str, shape))} has rank {len(shape)}, the "
                            f"model declares rank {len(dims)} ({_dims_text(dims)})", where=where)
    for axis, (d, v) in enumerate(zip(dims, shape, strict=False)):
        if d.HasField("dim_value") and d.dim_value > 0 and d.dim_value != v:
            raise RooflineError(f"input {name!r}: dimension {axis} is fixed to {d.dim_value} in the model, "
                                f"got {v} ({'x'.join(map(str, shape))})", where=where)
        if d.dim_param:
            symbols.setdefault(d.dim_param, v)


def _write_dims(tt: Any, shape: tuple[int, ...]) -> None:
    """Write a given shape into a tensor type (all of it where the model declares no dims)."""
    if not tt.HasField("shape") or not tt.shape.dim:
        tt.shape.Clear()
        for v in shape:
            tt.shape.dim.add().dim_value = v
        return
    for d, v in zip(tt.shape.dim, shape, strict=False):
        d.Clear()
        d.dim_value = v


def _bind_declared(vi: Any, symbols: dict[str, int], default_dim: int, builder: WorkloadBuilder) -> tuple[int, ...]:
    """Bind an input's declared dims: symbols to their values, unknown ones to ``default_dim`` (with a warning)."""
    bound = []
    for axis, d in enumerate(vi.type.tensor_type.shape.dim):
        if d.HasField("dim_value") and d.dim_value > 0:
            bound.append(d.dim_value)
            continue
        sym = d.dim_param
        if sym and sym in symbols:
            v = symbols[sym]
        else:
            v = default_dim
            label = f"{sym!r}" if sym else "unnamed"
            builder.warn(f"input {vi.name!r} dimension {axis} ({label}) is symbolic; assumed {v} "
                         f"(set it with input_shapes / --input {vi.name}=...)")
            if sym:
                symbols[sym] = v
        d.Clear()
        d.dim_value = v
        bound.append(v)
    return tuple(bound)


@dataclass
class TensorInfo:
    """What the walk knows of a tensor: its shape (None: unknown) and ONNX element type."""

    shape: tuple[int, ...] | None  # None: unknown
    elem: int


def _tensor_of(vi: Any, symbols: Mapping[str, int]) -> TensorInfo | None:
    """A value_info's tensor, its symbolic dims bound by ``symbols``; None when it is not a tensor."""
    if not vi.type.HasField("tensor_type"):
        return None
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return TensorInfo(None, tt.elem_type)
    dims: list[int] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value") and d.dim_value >= 0:
            dims.append(d.dim_value)
        elif d.dim_param in symbols:
            dims.append(symbols[d.dim_param])
        else:
            return TensorInfo(None, tt.elem_type)
    return TensorInfo(tuple(dims), tt.elem_type)


def collect(graph: Any, symbols: Mapping[str, int], into: dict[str, TensorInfo]) -> None:
    """Shapes declared in a graph: initializers (dims), inputs, value_info, outputs (known wins)."""
    for init in graph.initializer:
        into[init.name] = TensorInfo(tuple(init.dims), init.data_type)
    for vi in (*graph.input, *graph.value_info, *graph.output):
        t = _tensor_of(vi, symbols)
        if t is not None and (t.shape is not None or vi.name not in into):
            into[vi.name] = t


def as_t(t: TensorInfo | None) -> T | None:
    """The tensor as the cost formulas see it (None while its shape is unknown)."""
    if t is None or t.shape is None:
        return None
    return T(t.shape, ONNX_ELEM.get(t.elem, (4, "fp32"))[0])


# -- shape inference with static shape arithmetic ---------------------------------------------
#: Largest computed tensor (elements) treated as a static value (shape vectors, scalars).
STATIC_MAX = 4096


def infer(onnx: Any, proto: Any, symbols: Mapping[str, int], builder: WorkloadBuilder,
          where: str) -> tuple[Any, dict[str, TensorInfo]]:
    """onnx shape inference, repeated while static shape arithmetic resolves more shapes.

    Exports with dynamic axes compute Reshape/Expand targets from ``Shape`` at run time
    (Shape -> Gather -> Div -> Cast -> Concat ...); onnx's data propagation covers only some
    of those ops.  Once the inputs are bound such tensors are static: evaluate them with
    ``onnx.reference``, feed them back as initializers, and infer again.  Returns the
    inferred model and the shape of every tensor it knows.
    """
    model = proto
    for _ in range(10):
        big = big_generator(onnx, model.graph)
        if big:
            builder.warn(f"{where}: {big} would be materialised by onnx data propagation; shape inference runs "
                         "without it (shapes, not data)")
        try:
            inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False,
                                                         data_prop=not big)
        except Exception as exc:  # keep going with the shapes the file declares
            builder.warn(f"{where}: onnx shape inference failed ({exc.__class__.__name__}: "
                         f"{' '.join(str(exc).split())[:200]}); using declared shapes only")
            break
        tensors: dict[str, TensorInfo] = {}
        collect(inferred.graph, symbols, tensors)
        model = inferred
        if not (_contrib_shapes(onnx, inferred.graph, tensors) | _fold_static(onnx, inferred.graph, tensors, builder)):
            return inferred, tensors
    tensors = {}
    collect(model.graph, symbols, tensors)
    return model, tensors


#: com.microsoft (onnxruntime contrib) ops onnx cannot infer whose output 0 has input 0's shape and type.
_CONTRIB_SAME_SHAPE = frozenset({"Gelu", "FastGelu", "BiasGelu", "QuickGelu", "SkipLayerNormalization",
                                 "SkipSimplifiedLayerNormalization", "SimplifiedLayerNormalization",
                                 "LayerNormalization", "BiasAdd", "RotaryEmbedding", "FusedConv"})


def _contrib_shapes(onnx: Any, g: Any, tensors: Mapping[str, TensorInfo]) -> bool:
    """Declare output shapes of common onnxruntime contrib ops (onnx has no inference for them)."""
    added = False
    for n in g.node:
        if n.domain != MS or not n.output or not n.input:
            continue
        out = tensors.get(n.output[0])
        if out is not None and out.shape is not None:
            continue
        x = tensors.get(n.input[0])
        if x is None or x.shape is None:
            continue
        shape: tuple[int, ...] | None = None
        if n.op_type in _CONTRIB_SAME_SHAPE and n.op_type != "FusedConv":
            shape = x.shape
        elif n.op_type == "MatMulNBits":
            N = next((a.i for a in n.attribute if a.name == "N"), 0)
            shape = (*x.shape[:-1], N) if N else None
        elif n.op_type in ("MultiHeadAttention", "GroupQueryAttention") and len(x.shape) == 3:
            shape = x.shape
        elif n.op_type == "Attention" and len(n.input) > 1:
            w = tensors.get(n.input[1])
            shape = (*x.shape[:-1], w.shape[1] // 3) if w is not None and w.shape is not None else None
        if shape is not None:
            g.value_info.append(onnx.helper.make_tensor_value_info(n.output[0], x.elem, shape))
            added = True
    return added


#: ops whose output onnx's data propagation may materialise from constant inputs
_GENERATORS = frozenset({"Range", "ConstantOfShape", "Expand", "Tile"})


def big_generator(onnx: Any, graph: Any) -> str | None:
    """A node of ``graph`` that would make more than ``STATIC_MAX`` elements from constant inputs, or None.

    onnx's data propagation (``data_prop=True``) computes such a node's output in full (a Range to
    3e8 takes gigabytes): where one exists, shape inference runs without data propagation.
    """
    generators, constants = [], []
    for n in graph.node:  # one pass: protobuf field access is the cost on large graphs
        op = n.op_type
        if op in _GENERATORS:
            generators.append(n)
        elif op == "Constant":
            constants.append(n)
    if not generators:
        return None
    wanted = {i for n in generators for i in n.input if i}  # only the generators' inputs are read
    protos: dict[str, Any] = {}  # name -> a small constant's TensorProto, converted only when a generator needs it
    for init in graph.initializer:
        if init.name in wanted and init.data_location != 1 and math.prod(init.dims) <= 16:
            protos[init.name] = init
    for n in constants:
        if n.output and n.output[0] in wanted:
            a = next((a for a in n.attribute if a.name == "value"), None)
            if a is not None and math.prod(a.t.dims) <= 16:
                protos[n.output[0]] = a.t
    for n in generators:
        inputs = [i for i in n.input if i]
        if all(i in protos for i in inputs):
            size = _fold_bound(n, {i: onnx.numpy_helper.to_array(protos[i]) for i in inputs})
            if size is None or size > STATIC_MAX:
                return f"{n.op_type} node {n.name or n.output[0]!r}" + (f" ({size:.3g} elements)" if size else "")
    return None


def _fold_bound(n: Any, feeds: Mapping[str, Any]) -> float | None:
    """An upper bound on the elements node ``n`` would produce from ``feeds`` (None: cannot tell: do not run it).

    Judged before running, so constant folding never materialises a big tensor: the ops that make
    data out of small inputs (Range, ConstantOfShape, Expand, Tile, OneHot, Pad, Resize, ...) are sized
    from their inputs' values; any other op produces at most the broadcast of its inputs, or their total.
    """
    import numpy as np

    x: list[Any] = [feeds.get(i) if i else None for i in n.input]
    op = n.op_type
    try:
        if op == "Range":
            start, stop, step = (float(np.asarray(v).reshape(-1)[0]) for v in x[:3])
            if not all(map(math.isfinite, (start, stop, step))) or step == 0:
                return None
            return max(math.ceil((stop - start) / step), 0)
        if op == "ConstantOfShape":
            return float(math.prod(int(d) for d in np.asarray(x[0]).reshape(-1))) if x else 1.0
        if op == "Expand":
            return float(math.prod(np.broadcast_shapes(np.shape(x[0]), tuple(int(d) for d in x[1].reshape(-1)))))
        if op == "Tile":
            return float(np.size(x[0]) * math.prod(int(d) for d in np.asarray(x[1]).reshape(-1)))
        if op == "OneHot":
            return float(np.size(x[0]) * abs(int(np.asarray(x[1]).reshape(-1)[0])))
        if op in ("Resize", "Upsample", "Pad", "EyeLike", "Einsum", "Col2Im", "CenterCropPad", "MaxUnpool"):
            return None
        sizes = [float(np.size(v)) for v in x if v is not None]
        if op in ("MatMul", "Gemm", "MatMulInteger", "Gather", "GatherND", "GatherElements", "Conv"):
            return float(math.prod(sizes))
        try:
            broadcast = float(math.prod(np.broadcast_shapes(*(np.shape(v) for v in x if v is not None))))
        except ValueError:
            broadcast = 0.0
        return max(broadcast, sum(sizes), 1.0)
    except (TypeError, ValueError, IndexError, AttributeError, OverflowError):
        return None


def _fold_static(onnx: Any, g: Any, tensors: Mapping[str, TensorInfo], builder: WorkloadBuilder | None = None) -> bool:
    """Replace static tensors read by nodes with unknown output shapes by initializers; True if any."""
    used = {i for n in g.node for i in n.input} | {o.name for o in g.output}
    unknown = [n for n in g.node
               if any(o in used and (tensors.get(o) is None or tensors[o].shape is None) for o in n.output if o)]
    if not unknown:
        return False
    folder = _Folder(onnx, g, tensors, builder)
    rewired: dict[str, str] = {}
    for n in unknown:
        for k, t in enumerate(n.input):
            if not t or t in folder.inits or t not in folder.producer or folder.producer[t].op_type == "Constant":
                continue
            if t not in rewired and folder.value(t) is None:
                continue
            if t not in rewired:
                rewired[t] = f"{t}::static"
                g.initializer.append(onnx.numpy_helper.from_array(folder.values[t], rewired[t]))
            n.input[k] = rewired[t]
    return bool(rewired)


class _Folder:
    """Values of a graph's small static tensors, evaluated node by node (never over :data:`STATIC_MAX` elements)."""

    def __init__(self, onnx: Any, g: Any, tensors: Mapping[str, TensorInfo], builder: WorkloadBuilder | None) -> None:
        self.onnx, self.tensors, self.builder = onnx, tensors, builder
        self.producer = {o: n for n in g.node for o in n.output if o}
        self.inits = {i.name: i for i in g.initializer}
        self.values: dict[str, Any] = {}
        self.failed: set[str] = set()

    def value(self, t: str, depth: int = 0) -> Any:
        """The value of tensor ``t``, or None when it is not static or too big."""
        if t in self.values or t in self.failed or depth > 40:
            return self.values.get(t)
        v = None
        if t in self.inits:
            init = self.inits[t]
            if init.data_location != 1 and math.prod(init.dims) <= STATIC_MAX:
                v = self.onnx.numpy_helper.to_array(init)
        elif t in self.producer:
            v = self._computed(self.producer[t], t, depth)
        if v is None or getattr(v, "size", STATIC_MAX + 1) > STATIC_MAX:
            self.failed.add(t)
            return None
        self.values[t] = v
        return v

    def _computed(self, n: Any, t: str, depth: int) -> Any:
        """Output ``t`` of node ``n``: a shape read off, or the node run on its inputs' values."""
        if n.domain not in ("", "ai.onnx") or n.op_type in NO_FOLD:
            return None
        if n.op_type in ("Shape", "Size"):
            s = self.tensors.get(n.input[0])
            return _shape_value(self.onnx, n, s.shape) if s is not None and s.shape is not None else None
        if any((s := self.tensors.get(o)) is not None and s.shape is not None and math.prod(s.shape) > STATIC_MAX
               for o in n.output if o):  # never materialise big tensors (weights, activations)
            return None
        feeds = {}
        for i in n.input:
            if i:
                feeds[i] = self.value(i, depth + 1)
                if feeds[i] is None:
                    return None
        size = _fold_bound(n, feeds)
        if size is not None and size <= STATIC_MAX:
            return _run_node(self.onnx, n, feeds, t)
        if size is not None and self.builder is not None:
            self.builder.warn(f"{n.op_type} node {n.name or t!r} would compute {size:.3g} elements; constant "
                              f"folding evaluates at most {STATIC_MAX:,} (shapes, not data): its value stays unknown")
        return None


def _shape_value(onnx: Any, node: Any, shape: tuple[int, ...]) -> Any:
    import numpy as np

    if node.op_type == "Size":
        return np.array(math.prod(shape), dtype=np.int64)
    attrs = {a.name: a.i for a in node.attribute}
    return np.array(shape[attrs.get("start", 0):attrs.get("end")], dtype=np.int64)


def _run_node(onnx: Any, node: Any, feeds: Mapping[str, Any], want: str) -> Any:
    try:
        from onnx.reference import ReferenceEvaluator

        outs = ReferenceEvaluator(node).run(None, dict(feeds))
    except Exception:  # an op the reference evaluator cannot run here: leave the shape unknown
        return None
    for name, v in zip(node.output, outs, strict=False):
        if name == want:
            return v
    return None

