"""ONNX file -> :class:`~roofline.workload.Workload`: per-node FLOPs and bytes from the graph alone.

No runtime runs and no weight is read: the graph is loaded with
``load_external_data=False``, symbolic dimensions are bound (by the caller, or
to 1 with a warning), ``onnx.shape_inference`` gives every tensor's shape, and
each node's op type keys into the cost formulas of :mod:`roofline.costs` (the
same formulas the PyTorch frontend uses; :data:`ONNX_OPS` is the ONNX key table).

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
  ``--input`` (:func:`roofline.frontends.target.check_dims`).
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

import dataclasses
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline.costs import Cost, T, cost, traffic
from roofline.errors import RooflineError, require
from roofline.workload import Op, Workload, WorkloadBuilder

#: Bound to a symbolic dimension nobody named (e.g. a dynamic batch axis), with a warning.
DEFAULT_DIM = 1
#: limit name -> (default, environment variable)
LIMITS = {"depth": (8, "ROOFLINE_ONNX_MAX_DEPTH"), "nodes": (1_000_000, "ROOFLINE_ONNX_MAX_NODES")}


def limit(name: str) -> int:
    """The current value of limit ``name`` (:data:`LIMITS`): its environment variable, else the default."""
    from roofline.errors import env_limit

    default, env = LIMITS[name]
    return env_limit(env, default)

# -- ONNX element types ----------------------------------------------------------------------
# TensorProto.DataType codes -> (bytes per element, precision for the compute roof).
# Integer/bool tensors (shape arithmetic, masks, indices) run on the vector ALUs: fp32 is the
# nearest ceiling the data model has for them.  FLOAT4E2M1 has no fp4 ceiling: int4 (same width).
_ELEM: dict[int, tuple[float, str]] = {
    1: (4, "fp32"), 2: (1, "int8"), 3: (1, "int8"), 4: (2, "fp32"), 5: (2, "fp32"), 6: (4, "fp32"),
    7: (8, "fp32"), 8: (8, "fp32"), 9: (1, "fp32"), 10: (2, "fp16"), 11: (8, "fp64"), 12: (4, "fp32"),
    13: (8, "fp32"), 14: (8, "fp32"), 15: (16, "fp64"), 16: (2, "bf16"), 17: (1, "fp8"), 18: (1, "fp8"),
    19: (1, "fp8"), 20: (1, "fp8"), 21: (0.5, "int4"), 22: (0.5, "int4"), 23: (0.5, "int4"),
    24: (1, "fp8"), 25: (0.25, "int4"), 26: (0.25, "int4"),
}
#: Element types whose precision names a real compute ceiling (used to pick an op's precision).
_NUMERIC_ELEM = {1, 2, 3, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23, 24}

# -- op classes --------------------------------------------------------------------------------
#: Views and metadata: no bytes move, no op is emitted.
VIEW_OPS = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Dropout", "Shape", "Size",
                      "Optional", "OptionalGetElement", "OptionalHasElement"})
#: Never constant-folded (random, or with side effects).
_NO_FOLD = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli",
                      "Multinomial", "Loop", "Scan", "If"})
#: Data inputs per op type where some inputs are metadata (shapes, axes, starts/ends, scalars).
_DATA_INPUTS: dict[str, tuple[int, ...]] = {
    "Slice": (0,), "Expand": (0,), "Tile": (0,), "Pad": (0,), "Resize": (0,), "Upsample": (0,), "TopK": (0,),
    "Split": (0,), "CumSum": (0,), "Clip": (0,), "Trilu": (0,), "ConstantOfShape": (), "Range": (),
    "OneHot": (0,), "ReduceSum": (0,), "ReduceMean": (0,), "ReduceMax": (0,), "ReduceMin": (0,),
    "ReduceProd": (0,), "ReduceL1": (0,), "ReduceL2": (0,), "ReduceLogSum": (0,), "ReduceLogSumExp": (0,),
    "ReduceSumSquare": (0,), "Squeeze": (0,), "Unsqueeze": (0,), "Reshape": (0,), "CenterCropPad": (0,),
}
_MS = "com.microsoft"
#: Folding these over a weight keeps the weight's stored bytes (QDQ int8 weights, fp16 weights cast up).
_STORED_ALIAS = frozenset({"DequantizeLinear", "Cast", "Transpose", "Reshape", "Squeeze", "Unsqueeze", "Flatten",
                           "Identity"})


@dataclass
class NodeView:
    """What a key-table entry sees of one node: its tensors (None where absent) and attributes."""

    op_type: str
    inputs: list[T | None]
    outputs: list[T | None]
    attrs: dict[str, Any]
    opset: int

    def data(self, indices: Sequence[int] | None = None) -> list[T]:
        idx = range(len(self.inputs)) if indices is None else indices
        return [t for i in idx if i < len(self.inputs) and (t := self.inputs[i]) is not None]

    @property
    def outs(self) -> list[T]:
        return [t for t in self.outputs if t is not None]


# -- the ONNX key table: op type -> cost over roofline.costs formulas ---------------------------
Entry = Callable[[NodeView], Cost]


def _flops_only(kind: str, flops: float, n: NodeView) -> Cost:
    """A Cost with the given FLOPs and the node's own compulsory traffic (its data inputs/outputs)."""
    r, w = traffic(n.data(), n.outs)
    return Cost(kind, float(flops), r, w)


def _ew(op: str, per: float = 1.0) -> Entry:
    """Elementwise: ``ELEMENTWISE_FLOPS[op]`` per output element, times ``per``."""

    def entry(n: NodeView) -> Cost:
        c = cost("elementwise", n.data(), n.outs, op=op)
        return c if per == 1 else dataclasses.replace(c, flops=c.flops * per)

    return entry


def _variadic(extra: float = 0.0) -> Entry:
    """Sum/Max/Min/Mean of n inputs: n - 1 binary ops per element (+ ``extra``, e.g. Mean's divide)."""

    def entry(n: NodeView) -> Cost:
        c = cost("elementwise", n.data(), n.outs, op="add")
        return dataclasses.replace(c, flops=c.flops * (max(len(n.data()) - 1, 0) + extra))

    return entry


def _simple(name: str, **attrs: Any) -> Entry:
    return lambda n: cost(name, n.data(_DATA_INPUTS.get(n.op_type)), n.outs, **attrs)


def _gelu(n: NodeView) -> Cost:
    return cost("elementwise", n.data(), n.outs, op="gelu_tanh" if n.attrs.get("approximate") == "tanh" else "gelu")


def _conv(n: NodeView) -> Cost:
    return cost("conv", n.data(), n.outs, transposed=n.op_type == "ConvTranspose")


def _conv_integer(n: NodeView) -> Cost:
    x, w = n.inputs[0], n.inputs[1]
    assert x is not None and w is not None
    rest = [t for t in n.data() if t is not x and t is not w]
    return cost("conv", [x, w, *rest], n.outs)


def _qlinear_conv(n: NodeView) -> Cost:
    # inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, [bias]
    x, w = n.inputs[0], n.inputs[3]
    assert x is not None and w is not None
    rest = [t for i, t in enumerate(n.inputs) if i not in (0, 3) and t is not None]
    return cost("conv", [x, w, *rest], n.outs)


def _matmul(n: NodeView) -> Cost:
    a = n.inputs[0]
    assert a is not None
    return cost("matmul", n.data(), n.outs, k=a.shape[-1])


def _gemm(n: NodeView) -> Cost:
    a = n.inputs[0]
    assert a is not None
    return cost("matmul", n.data(), n.outs, k=a.shape[0] if n.attrs.get("transA", 0) else a.shape[-1])


def _matmul_nbits(n: NodeView) -> Cost:
    # com.microsoft MatMulNBits: B is packed (N, blocks, blob); K is an attribute
    return cost("matmul", n.data(), n.outs, k=int(n.attrs["K"]))


def _einsum(n: NodeView) -> Cost:
    """2 x numel(output) x product of the contracted index sizes (indices absent from the output)."""
    eq = str(n.attrs.get("equation", "")).replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    sizes: dict[str, int] = {}
    for term, t in zip(terms, n.data(), strict=False):
        letters = [c for c in term if c.isalpha()]
        if "..." in term:  # ellipsis dims are batch-like: they appear in the output
            continue
        for c, d in zip(letters, t.shape, strict=False):
            sizes[c] = max(sizes.get(c, 1), d)
    if not rhs and "->" not in eq:  # implicit output: letters seen once, sorted
        rhs = "".join(sorted(c for c in sizes if lhs.count(c) == 1))
    k = math.prod(d for c, d in sizes.items() if c not in rhs)
    kind = "matmul" if len(terms) > 1 and k > 1 else "elementwise"
    if kind == "elementwise":
        return _flops_only("elementwise", max(k, 1) * n.outs[0].numel, n)
    return cost("matmul", n.data(), n.outs, k=k)


def _attention_core(q: T, k: T, v: T, q_heads: int, kv_heads: int) -> tuple[T, T, T]:
    """Rank-4 (batch, heads, seq, head_dim) views of 3-D (batch, seq, heads*head_dim) tensors."""
    if len(q.shape) == 3:
        q = T((q.shape[0], q_heads, q.shape[1], q.shape[2] // q_heads), q.itemsize)
    if len(k.shape) == 3:
        k = T((k.shape[0], kv_heads, k.shape[1], k.shape[2] // kv_heads), k.itemsize)
    if len(v.shape) == 3:
        v = T((v.shape[0], kv_heads, v.shape[1], v.shape[2] // kv_heads), v.itemsize)
    return q, k, v


def _attention(n: NodeView) -> Cost:
    """ONNX Attention (opset 23) and com.microsoft MultiHeadAttention / GroupQueryAttention.

    Fused: no (seq x seq) tensor touches memory.  With a KV cache the keys are past + new
    and query i sees keys j <= i + past length.
    """
    ms = n.op_type != "Attention"
    q, k, v = n.inputs[0], n.inputs[1], n.inputs[2]
    assert q is not None
    heads = int(n.attrs.get("num_heads" if ms else "q_num_heads", 1) or 1)
    kv_heads = int(n.attrs.get("kv_num_heads", heads) or heads)
    if k is None or v is None:  # MultiHeadAttention with packed QKV: (B, L, H, 3, D) in `query`
        d = q.shape[-1]
        q = k = v = T((q.shape[0], heads, q.shape[1], d), q.itemsize)
    past = n.inputs[4] if not ms and len(n.inputs) > 4 else (n.inputs[6] if ms and len(n.inputs) > 6 else None)
    if n.op_type == "GroupQueryAttention":
        past = n.inputs[3] if len(n.inputs) > 3 else None
    q4, k4, v4 = _attention_core(q, k, v, heads, kv_heads)
    past_len = past.shape[-2] if past is not None and len(past.shape) == 4 else 0
    if past_len:
        k4 = T((*k4.shape[:-2], k4.shape[-2] + past_len, k4.shape[-1]), k4.itemsize)
        v4 = T((*v4.shape[:-2], v4.shape[-2] + past_len, v4.shape[-1]), v4.itemsize)
    causal = bool(n.attrs.get("is_causal", n.attrs.get("unidirectional", 0))) or n.op_type == "GroupQueryAttention"
    # ONNX Attention aligns the causal frontier by the cached length (past_key), so with no cache it is top-left
    # even when K is longer than Q (onnx.reference op_attention); the contrib ops align the last query with the last key
    offset = past_len if not ms else k4.shape[-2] - q4.shape[-2]
    c = cost("attention", [q4, k4, v4], [q4], causal=causal, causal_offset=offset if causal else 0)
    return _flops_only("attention", c.flops, n)


def _ms_attention(n: NodeView) -> Cost:
    """com.microsoft Attention: QKV projection (input @ weights) plus fused attention."""
    x, w = n.inputs[0], n.inputs[1]
    assert x is not None and w is not None
    heads = int(n.attrs.get("num_heads", 1))
    hidden = w.shape[1] // 3
    b, s = x.shape[0], x.shape[1]
    proj = 2 * b * s * x.shape[2] * w.shape[1]
    q = T((b, heads, s, hidden // heads), x.itemsize)
    causal = bool(n.attrs.get("unidirectional", 0))
    att = cost("attention", [q, q, q], [q], causal=causal)
    return _flops_only("attention", proj + att.flops, n)


def _norm(norm: str) -> Entry:
    def entry(n: NodeView) -> Cost:
        data = n.data()
        if n.op_type == "BatchNormalization":
            kind = "batch_train" if n.attrs.get("training_mode", 0) else "batch"
            return cost("norm", data, n.outs, norm=kind, affine="scale_shift")
        has_shift = len(n.inputs) > 2 and n.inputs[2] is not None
        affine = "scale_shift" if has_shift else "scale" if len(n.inputs) > 1 and n.inputs[1] is not None else ""
        return cost("norm", data, n.outs, norm=norm, affine=affine)

    return entry


def _skip_norm(norm: str) -> Entry:
    """com.microsoft Skip(Simplified)LayerNormalization: residual add (1 per element) + the norm."""

    def entry(n: NodeView) -> Cost:
        x = n.inputs[0]
        assert x is not None
        affine = "scale_shift" if norm == "layer" and len(n.inputs) > 3 and n.inputs[3] is not None else "scale"
        c = cost("norm", n.data(), n.outs, norm=norm, affine=affine)
        return dataclasses.replace(c, flops=c.flops + x.numel)

    return entry


def _lrn(n: NodeView) -> Cost:
    return cost("lrn", n.data(), n.outs, size=int(n.attrs.get("size", 5)))


def _pool(n: NodeView) -> Cost:
    kernel = tuple(int(k) for k in n.attrs.get("kernel_shape", ()))
    return cost("pool", n.data(), n.outs, kernel=kernel)


def _resize(n: NodeView) -> Cost:
    x, y = n.inputs[0], n.outs[0]
    assert x is not None
    mode = str(n.attrs.get("mode", "nearest"))
    scaled = sum(1 for a, b in zip(x.shape, y.shape, strict=False) if a != b) or 2
    if mode in ("linear", "bilinear"):
        mode = {1: "linear", 3: "trilinear"}.get(scaled, "bilinear")
    elif mode == "cubic":
        mode = "bicubic"
    elif mode != "nearest":
        mode = "nearest"
    return cost("interpolate", [x], n.outs, mode=mode)


def _gather(n: NodeView) -> Cost:
    """Gather reads only what it gathers (plus the indices): the embedding formula on a 2-D view."""
    data, idx = n.inputs[0], n.inputs[1]
    assert data is not None and idx is not None
    axis = int(n.attrs.get("axis", 0)) % max(len(data.shape), 1)
    rows = data.shape[axis] if data.shape else 1
    table = T((rows, data.numel // max(rows, 1)), data.itemsize)
    return cost("embedding", [table, idx], n.outs)


def _slice(n: NodeView) -> Cost:
    """Slice reads only the elements it keeps."""
    x = n.inputs[0]
    assert x is not None
    kept = [T(t.shape, x.itemsize) for t in n.outs]
    return cost("memory", kept, n.outs)


def _rnn(gates: int) -> Entry:
    """RNN/GRU/LSTM: per step and direction, (gates x hidden) outputs from (input + hidden) inputs."""

    def entry(n: NodeView) -> Cost:
        x = n.inputs[0]
        assert x is not None
        hidden = int(n.attrs.get("hidden_size", 0))
        dirs = 2 if n.attrs.get("direction", "forward") == "bidirectional" else 1
        seq, batch, features = x.shape[0], x.shape[1], x.shape[2]
        if n.attrs.get("layout", 0):
            batch, seq = seq, batch
        return _flops_only("matmul", 2 * seq * batch * dirs * gates * hidden * (features + hidden), n)

    return entry


_memory = _simple("memory")
_reduction = _simple("reduction")
_softmax = _simple("softmax")

#: ONNX op type (``domain.Op`` outside the default domain) -> cost entry over :mod:`roofline.costs`.
ONNX_OPS: dict[str, Entry] = {
    # matrix multiplies and convolutions
    "MatMul": _matmul, "Gemm": _gemm, "MatMulInteger": _matmul, "QLinearMatMul": _matmul,
    f"{_MS}.FusedMatMul": _matmul, f"{_MS}.MatMulNBits": _matmul_nbits, f"{_MS}.MatMulIntegerToFloat": _matmul,
    "Conv": _conv, "ConvTranspose": _conv, "ConvInteger": _conv_integer, "QLinearConv": _qlinear_conv,
    f"{_MS}.FusedConv": _conv, "Einsum": _einsum,
    "RNN": _rnn(1), "GRU": _rnn(3), "LSTM": _rnn(4),
    # attention
    "Attention": _attention, f"{_MS}.MultiHeadAttention": _attention, f"{_MS}.GroupQueryAttention": _attention,
    f"{_MS}.Attention": _ms_attention,
    # normalisation, softmax
    "BatchNormalization": _norm("batch"), "LayerNormalization": _norm("layer"),
    "InstanceNormalization": _norm("instance"), "GroupNormalization": _norm("group"),
    "RMSNormalization": _norm("rms"), f"{_MS}.SimplifiedLayerNormalization": _norm("rms"),
    f"{_MS}.LayerNormalization": _norm("layer"),
    f"{_MS}.SkipLayerNormalization": _skip_norm("layer"), f"{_MS}.SkipSimplifiedLayerNormalization": _skip_norm("rms"),
    "MeanVarianceNormalization": _simple("norm", norm="instance"),
    "LpNormalization": _simple("norm", norm="rms"),  # square-accumulate (2) + scale (1), as RMS
    "LRN": _lrn,
    "Softmax": _softmax, "LogSoftmax": _softmax, "Hardmax": _softmax,
    # pooling and reductions
    "MaxPool": _pool, "AveragePool": _pool, "LpPool": _pool,
    "GlobalAveragePool": _pool, "GlobalMaxPool": _pool, "GlobalLpPool": _pool,
    **{op: _reduction for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                                 "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax",
                                 "ArgMin", "CumSum", "TopK")},
    "Resize": _resize, "Upsample": _resize,
    # elementwise and activations (ELEMENTWISE_FLOPS names; "add" x n = n one-op steps)
    "Add": _ew("add"), "Sub": _ew("sub"), "Mul": _ew("mul"), "Div": _ew("div"), "Neg": _ew("neg"),
    "Abs": _ew("abs"), "Relu": _ew("relu"), "LeakyRelu": _ew("leaky_relu"), "PRelu": _ew("leaky_relu"),
    "ThresholdedRelu": _ew("relu"), "Clip": _ew("clamp"), "Shrink": _ew("clamp"), "Where": _ew("where"),
    "Equal": _ew("eq"), "Less": _ew("lt"), "LessOrEqual": _ew("le"), "Greater": _ew("gt"),
    "GreaterOrEqual": _ew("ge"), "Sign": _ew("sign"), "Floor": _ew("floor"), "Ceil": _ew("ceil"),
    "Round": _ew("round"), "Reciprocal": _ew("reciprocal"), "Exp": _ew("exp"), "Log": _ew("log"),
    "Sqrt": _ew("sqrt"), "Sin": _ew("sin"), "Cos": _ew("cos"), "Tanh": _ew("tanh"), "Erf": _ew("erf"),
    "Pow": _ew("pow"), "Sigmoid": _ew("sigmoid"), "HardSigmoid": _ew("hardsigmoid"),
    "HardSwish": _ew("hardswish"), "Softplus": _ew("softplus"), "Mish": _ew("mish"), "Elu": _ew("elu"),
    "Selu": _ew("selu"), "Celu": _ew("celu"), "Gelu": _gelu,
    "Softsign": _ew("add", 3),  # abs, add 1, divide
    "QuantizeLinear": _ew("add", 5),  # divide by scale, round, add zero point, saturate (2)
    "DequantizeLinear": _ew("add", 2),  # subtract zero point, multiply by scale
    f"{_MS}.Gelu": _ew("gelu"), f"{_MS}.FastGelu": _ew("gelu_tanh"), f"{_MS}.BiasGelu": _ew("gelu"),
    f"{_MS}.QuickGelu": _ew("sigmoid", 2),  # x * sigmoid(1.702 x): ~ two sigmoid-sized steps
    **{op: _ew("add") for op in ("Not", "And", "Or", "Xor", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot",
                                 "BitShift", "Mod", "IsNaN", "IsInf", "Tan", "Asin", "Acos", "Atan", "Sinh",
                                 "Cosh", "Asinh", "Acosh", "Atanh")},  # one op (or one transcendental) each
    "Sum": _variadic(), "Max": _variadic(), "Min": _variadic(), "Mean": _variadic(extra=1),
    # data movement: 0 FLOPs, compulsory bytes
    "Gather": _gather, "Slice": _slice, "GatherElements": _simple("gather"), "GatherND": _simple("gather"),
    **{op: _memory for op in ("Transpose", "Concat", "Cast", "CastLike", "Expand", "Tile", "Pad", "Split",
                              "ScatterND", "ScatterElements", "Scatter",
                              "DepthToSpace", "SpaceToDepth", "ReverseSequence", "Compress", "OneHot",
                              "NonZero", "Range", "EyeLike", "Trilu", "ConstantOfShape", "Unique", "MaxUnpool",
                              "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                              "Bernoulli", "CenterCropPad", "Col2Im", "DynamicQuantizeLinear")},
}


# -- loading -----------------------------------------------------------------------------------
def _load(path: str | os.PathLike[str]) -> Any:
    """Parse an .onnx file without reading external weight data; one-line errors for bad files."""
    onnx = require("onnx", "onnx")
    where = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise RooflineError("no such file", where=where) from None
    except OSError as exc:
        raise RooflineError(f"cannot read: {exc.strerror or exc.__class__.__name__}", where=where) from None
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


def _check_versions(model: Any, where: str) -> int:
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


def _check_external_data(model: Any, base: Path | None, builder: WorkloadBuilder, where: str) -> None:
    """External weights are never read; say so clearly when their files are missing."""
    missing: dict[str, int] = {}
    external = 0
    for init in model.graph.initializer:
        if init.data_location != 1:  # TensorProto.EXTERNAL
            continue
        external += 1
        location = next((e.value for e in init.external_data if e.key == "location"), "")
        if base is not None and location and not (base / location).is_file():
            missing[location] = missing.get(location, 0) + 1
    if external:
        builder.assume(f"{external} initializer(s) hold external data: sizes come from their declared "
                       "dims and dtype; the weight files are never read")
    for location, n in missing.items():
        builder.warn(f"{where}: external data file {location!r} ({n} initializer(s)) not found beside the "
                     "model; the analysis does not need the weights and continues from their shapes")


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
    from roofline.frontends.target import check_dims

    return check_dims(dims, f"input {name!r}")


def _dims_text(dims: Sequence[Any]) -> str:
    return "x".join(str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in dims) or "scalar"


def _bind_inputs(model: Any, input_shapes: Mapping[str, Any], default_dim: int, builder: WorkloadBuilder,
                 where: str) -> tuple[dict[str, tuple[int, ...]], dict[str, int]]:
    """Write concrete dims into the graph inputs; returns (input shapes, symbol bindings)."""
    g = model.graph
    inits = {i.name for i in g.initializer}
    real = [i for i in g.input if i.name not in inits]
    by_name = {i.name: i for i in real}
    symbols_declared = {d.dim_param for i in real for d in i.type.tensor_type.shape.dim if d.dim_param}
    shapes: dict[str, tuple[int, ...]] = {}
    symbols: dict[str, int] = {}
    for key, value in input_shapes.items():
        if key in by_name:
            shapes[key] = _parse_shape(value, key)
        elif key in symbols_declared and isinstance(value, int) and not isinstance(value, bool):
            if value < 1:
                raise RooflineError(f"input {key!r}: symbolic dimension {value} must be >= 1", where=where)
            from roofline.frontends.target import check_dims

            symbols[key] = check_dims((int(value),), f"input {key!r}")[0]
        else:
            names = ", ".join(sorted(by_name)) or "(none)"
            extra = f"; symbolic dims: {', '.join(sorted(symbols_declared))}" if symbols_declared else ""
            raise RooflineError(f"input {key!r} is not an input of the model; its inputs: {names}{extra}",
                                where=where)
    # user-given shapes first: they also bind the symbols they fill in
    for name, shape in shapes.items():
        tt = by_name[name].type.tensor_type
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
    for i in real:
        tt = i.type.tensor_type
        if not i.type.HasField("tensor_type"):
            continue
        if i.name in shapes:
            if not tt.HasField("shape") or not tt.shape.dim:
                tt.shape.Clear()
                for v in shapes[i.name]:
                    tt.shape.dim.add().dim_value = v
                continue
            for d, v in zip(tt.shape.dim, shapes[i.name], strict=False):
                d.Clear()
                d.dim_value = v
            continue
        if not tt.HasField("shape"):
            builder.warn(f"input {i.name!r} declares no shape; give one (input_shapes / --input "
                         f"{i.name}=...) or nodes that read it stay uncounted")
            continue
        bound = []
        for axis, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                bound.append(d.dim_value)
                continue
            sym = d.dim_param
            if sym and sym in symbols:
                v = symbols[sym]
            else:
                v = default_dim
                label = f"{sym!r}" if sym else "unnamed"
                builder.warn(f"input {i.name!r} dimension {axis} ({label}) is symbolic; assumed {v} "
                             f"(set it with input_shapes / --input {i.name}=...)")
                if sym:
                    symbols[sym] = v
            d.Clear()
            d.dim_value = v
            bound.append(v)
        shapes[i.name] = tuple(bound)
    return shapes, symbols


# -- the walk ----------------------------------------------------------------------------------
@dataclass
class _Tensor:
    shape: tuple[int, ...] | None  # None: unknown
    elem: int


@dataclass
class _Ctx:
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

    def trial(self) -> _Ctx:
        """A context for walking an If branch on the side (own ops and counters, shared limits)."""
        return _Ctx(self.onnx, self.opset, self.opsets, self.symbols, WorkloadBuilder(), self.fuse,
                    stored=self.stored, where=self.where, depth=self.depth, expanded=self.expanded,
                    schemas=self.schemas)

    def adopt(self, other: _Ctx) -> None:
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


def _tensor_of(vi: Any, symbols: Mapping[str, int]) -> _Tensor | None:
    if not vi.type.HasField("tensor_type"):
        return None
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return _Tensor(None, tt.elem_type)
    dims: list[int] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value") and d.dim_value >= 0:
            dims.append(d.dim_value)
        elif d.dim_param in symbols:
            dims.append(symbols[d.dim_param])
        else:
            return _Tensor(None, tt.elem_type)
    return _Tensor(tuple(dims), tt.elem_type)


def _collect(graph: Any, symbols: Mapping[str, int], into: dict[str, _Tensor]) -> None:
    """Shapes declared in a graph: initializers (dims), inputs, value_info, outputs (known wins)."""
    for init in graph.initializer:
        into[init.name] = _Tensor(tuple(init.dims), init.data_type)
    for vi in (*graph.input, *graph.value_info, *graph.output):
        t = _tensor_of(vi, symbols)
        if t is not None and (t.shape is not None or vi.name not in into):
            into[vi.name] = t


def _small_value(ctx: _Ctx, graph: Any, name: str, const_values: Mapping[str, Any]) -> Any:
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


def _precision(names: Sequence[str], tensors: Mapping[str, _Tensor]) -> str:
    for name in names:
        t = tensors.get(name) if name else None
        if t is not None and t.elem in _NUMERIC_ELEM:
            return _ELEM[t.elem][1]
    return "fp32"


def _as_t(t: _Tensor | None) -> T | None:
    if t is None or t.shape is None:
        return None
    return T(t.shape, _ELEM.get(t.elem, (4, "fp32"))[0])


# -- runtime fusions ----------------------------------------------------------------------------
# Exporters decompose what runtimes (and the PyTorch frontend) run as one kernel.  With fuse=True
# three patterns are costed as one op each, as onnxruntime's graph optimizer fuses them:
#   MatMul + Add(constant bias)                -> MatMul with a bias epilogue (no bias FLOPs)
#   Div/Mul -> Erf -> Add 1 -> Mul x -> Mul .5  -> Gelu (5 FLOPs per element)
#   MatMul(q, k^T) [scale] [mask] -> Softmax -> MatMul(., v) -> fused attention (no L x S tensor in
#       memory; a constant mask built from Trilu is causal), absorbing the Transpose/Split layout
#       ops that only feed it (q/k/v are read once, in whatever layout) and a Transpose of its output.
_LAYOUT = frozenset({"Transpose", "Split", "Squeeze", "Unsqueeze", "Reshape", "Flatten", "Identity"})


@dataclass
class _Fused:
    name: str
    op_type: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]
    entry: Entry


def _renamed(name: str, old: str, new: str, fallback: str) -> str:
    return name.replace(old, new) if old in name else f"{name or fallback}_{new.lower()}"


def _plan_fusions(graph: Any, ops: list[int], tensors: Mapping[str, _Tensor], consts: set[str],
                  absorbed: set[int], fused: dict[int, _Fused], ctx: _Ctx) -> None:
    nodes = graph.node
    live = set(ops)
    producer: dict[str, int] = {}
    consumers: dict[str, list[int]] = {}
    for i, n in enumerate(nodes):
        for o in n.output:
            if o:
                producer[o] = i
        if n.op_type in ("Shape", "Size"):  # metadata: reads no data, so it never blocks a fusion
            continue
        for x in n.input:
            if x:
                consumers.setdefault(x, []).append(i)
    outputs = {o.name for o in graph.output}

    def sole(t: str) -> int | None:
        c = consumers.get(t, [])
        return c[0] if len(c) == 1 and t not in outputs else None

    def free(i: int | None, *types: str) -> bool:
        return i is not None and i in live and i not in absorbed and i not in fused and nodes[i].op_type in types \
            and nodes[i].domain in ("", "ai.onnx")

    def scalar(t: str) -> bool:
        s = tensors.get(t)
        return t in consts and s is not None and s.shape is not None and math.prod(s.shape) == 1

    def other(n: Any, t: str) -> str | None:
        rest = [x for x in n.input if x != t]
        return rest[0] if len(rest) == 1 else None

    def shape(t: str) -> tuple[int, ...] | None:
        s = tensors.get(t)
        return None if s is None else s.shape

    for i in ops:  # attention first: its mask add must not pass for a bias
        if free(i, "Softmax"):
            _fuse_attention(i, nodes, tensors, consts, absorbed, fused, ctx, producer, consumers, sole, free,
                            scalar, other, shape, live, outputs)

    for i in ops:  # MatMul + constant bias
        n = nodes[i]
        if not free(i, "MatMul"):
            continue
        a = sole(n.output[0])
        if not free(a, "Add"):
            continue
        assert a is not None
        bias = other(nodes[a], n.output[0])
        out, bshape = shape(n.output[0]), shape(bias) if bias else None
        if bias in consts and out and bshape is not None and len(bshape) == 1 and bshape[0] == out[-1] and \
                shape(nodes[a].output[0]) == out:
            fused[i] = _Fused(n.name or f"MatMul_{i}", "MatMul", [n.input[0], n.input[1], str(bias)],
                              [nodes[a].output[0]], {}, _matmul)
            absorbed.add(a)
            ctx.fusions["MatMul+bias"] = ctx.fusions.get("MatMul+bias", 0) + 1

    for i in ops:  # erf GELU
        n = nodes[i]
        if not free(i, "Erf"):
            continue
        d = producer.get(n.input[0])
        if not free(d, "Div", "Mul") or sole(n.input[0]) != i:
            continue
        assert d is not None
        x = next((t for t in nodes[d].input if not scalar(t)), None)
        if x is None or other(nodes[d], x) is None or not scalar(str(other(nodes[d], x))):
            continue
        add = sole(n.output[0])
        if not free(add, "Add") or not scalar(str(other(nodes[add], n.output[0]))):  # type: ignore[index]
            continue
        assert add is not None
        m1 = sole(nodes[add].output[0])
        if not free(m1, "Mul"):
            continue
        assert m1 is not None
        rest = other(nodes[m1], nodes[add].output[0])
        group: list[int]
        if rest == x:
            m2 = sole(nodes[m1].output[0])
            if not free(m2, "Mul") or not scalar(str(other(nodes[m2], nodes[m1].output[0]))):  # type: ignore[index]
                continue
            assert m2 is not None
            group, out = [d, i, add, m1, m2], nodes[m2].output[0]
        else:
            half = producer.get(str(rest))
            if not free(half, "Mul") or sole(str(rest)) != m1 or x not in nodes[half].input:  # type: ignore[index]
                continue
            assert half is not None
            group, out = [d, i, add, half, m1], nodes[m1].output[0]
        fused[group[-1]] = _Fused(_renamed(n.name, "Erf", "Gelu", f"Erf_{i}"), "Gelu", [x], [out], {}, _ew("gelu"))
        absorbed.update(group[:-1])
        ctx.fusions["GELU"] = ctx.fusions.get("GELU", 0) + 1



def _fuse_attention(i: int, nodes: Any, tensors: Mapping[str, _Tensor], consts: set[str], absorbed: set[int],
                    fused: dict[int, _Fused], ctx: _Ctx, producer: Mapping[str, int],
                    consumers: Mapping[str, list[int]], sole: Any, free: Any, scalar: Any, other: Any, shape: Any,
                    live: set[int], graph_outputs: set[str]) -> None:
    sm = nodes[i]
    m2 = sole(sm.output[0])
    if not free(m2, "MatMul") or nodes[m2].input[0] != sm.output[0]:
        return
    v = nodes[m2].input[1]
    pattern, mask = [i], None
    t, consumer = sm.input[0], i
    m1 = None
    for _ in range(5):  # back from the softmax through scale and mask to MatMul(q, k^T)
        p = producer.get(t)
        if p is None or sole(t) != consumer or not free(p, "MatMul", "Mul", "Div", "Add", "Where"):
            return
        pn = nodes[p]
        if pn.op_type == "MatMul":
            m1 = p
            break
        if pn.op_type in ("Mul", "Div"):
            nxt = next((x for x in pn.input if not scalar(x)), None)
            if nxt is None or not scalar(str(other(pn, nxt))):
                return
        elif pn.op_type == "Add":
            nxt = next((x for x in pn.input if producer.get(x) is not None and
                        nodes[producer[x]].op_type in ("MatMul", "Mul", "Div", "Add")), None)
            if nxt is None or mask is not None:
                return
            mask = other(pn, nxt)
        else:  # Where(cond, a, b): the scores are the non-constant branch
            branches = [x for x in pn.input[1:] if x not in consts]
            if len(branches) != 1 or mask is not None:
                return
            nxt, mask = branches[0], pn.input[0]
        pattern.append(p)
        t, consumer = str(nxt), p
    if m1 is None:
        return
    pattern.append(m1)
    qs, kts = nodes[m1].input[0], nodes[m1].input[1]

    def unscale(x: str) -> str:
        p = producer.get(x)
        if free(p, "Mul", "Div") and sole(x) == m1:
            pn = nodes[p]
            y = next((z for z in pn.input if not scalar(z)), None)
            if y is not None and scalar(str(other(pn, y))):
                pattern.append(p)
                return y
        return x

    q, kt = unscale(qs), unscale(kts)
    k, k_transposed = kt, True
    p = producer.get(kt)
    if free(p, "Transpose") and sole(kt) in pattern:
        perm = next((list(a.ints) for a in nodes[p].attribute if a.name == "perm"), [])
        if len(perm) >= 2 and perm[-2:] == [len(perm) - 1, len(perm) - 2] and perm[:-2] == list(range(len(perm) - 2)):
            pattern.append(p)
            k, k_transposed = nodes[p].input[0], False
    qsh, ksh, vsh, osh = shape(q), shape(k), shape(v), shape(nodes[m2].output[0])
    if not (qsh and ksh and vsh and osh) or len(qsh) < 2 or len(ksh) < 2:
        return
    if k_transposed:
        ksh = (*ksh[:-2], ksh[-1], ksh[-2])
    causal = False
    reads: list[str] = []
    if mask:
        if mask in consts and _built_by(mask, "Trilu", nodes, producer):
            causal = True
        else:
            reads.append(mask)
    # layout ops that only feed q, k, v (Transpose/Split/Squeeze/Reshape chains) are absorbed
    chain: set[int] = set()
    for x in (q, k, v):
        p = producer.get(x)
        while p is not None and nodes[p].op_type in _LAYOUT and nodes[p].domain in ("", "ai.onnx") and \
                p not in absorbed and p not in fused and nodes[p].input:
            chain.add(p)
            p = producer.get(nodes[p].input[0])
    keep = set(pattern) | {m2}
    changed = True
    while changed:
        changed = False
        for c in list(chain):
            if any(o in graph_outputs or any(u not in chain and u not in keep for u in consumers.get(o, []))
                   for o in nodes[c].output if o):
                chain.discard(c)
                changed = True
    for x in (q, k, v):
        p = producer.get(x)
        while p is not None and p in chain:
            x = nodes[p].input[0]
            p = producer.get(x)
        if x not in reads:
            reads.append(x)
    out = nodes[m2].output[0]
    after = sole(out)
    if free(after, "Transpose"):
        absorbed.add(after)
        out = nodes[after].output[0]
    q4, k4, v4 = (T(qsh, 1), T(ksh, 1), T(vsh, 1))

    def entry(n: NodeView) -> Cost:
        c = cost("attention", [q4, k4, v4], [q4], causal=causal)
        return _flops_only("attention", c.flops, n)

    absorbed.update(p for p in pattern if p != m2)
    absorbed.update(c for c in chain if c in live)
    fused[m2] = _Fused(_renamed(sm.name, "Softmax", "Attention", f"Softmax_{i}"), "Attention", reads, [out],
                       {}, entry)
    ctx.fusions["attention"] = ctx.fusions.get("attention", 0) + 1


def _built_by(name: str, op_type: str, nodes: Any, producer: Mapping[str, int], limit: int = 64) -> bool:
    """Whether a constant's producing subgraph contains an ``op_type`` node (e.g. Trilu: a causal mask)."""
    todo, seen = [name], set()
    while todo and len(seen) < limit:
        p = producer.get(todo.pop())
        if p is None or p in seen:
            continue
        seen.add(p)
        if nodes[p].op_type == op_type:
            return True
        todo.extend(x for x in nodes[p].input if x)
    return False


def _attr(onnx: Any, a: Any) -> Any:
    value = onnx.helper.get_attribute_value(a)
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


#: attributes whose every value must be >= 1 (or >= 0 for pads) where the op has them
_AT_LEAST = {"group": 1, "strides": 1, "dilations": 1, "kernel_shape": 1, "pads": 0}
#: minimum input rank of ops whose cost formulas index shapes
_MIN_RANK = {"MatMul": 1, "MatMulInteger": 1, "Gemm": 2, "Conv": 3, "ConvTranspose": 3, "ConvInteger": 3,
             "MaxPool": 3, "AveragePool": 3, "LpPool": 3}


def _check_attributes(ctx: _Ctx, node: Any, name: str) -> None:
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


def _walk(ctx: _Ctx, graph: Any, tensors: dict[str, _Tensor], consts: set[str], const_values: dict[str, Any],
          prefix: str, count: float) -> None:
    onnx = ctx.onnx
    # pass 1: classify nodes; constant subgraphs fold (as an inference runtime does)
    ops: list[int] = []
    top = limit("nodes")
    for index, node in enumerate(graph.node):
        ctx.nodes += 1
        ctx.expanded[0] += 1
        if ctx.expanded[0] > top:
            raise RooflineError(f"more than {top:,} nodes with subgraphs expanded (Loop / Scan / If bodies; set "
                                "ROOFLINE_ONNX_MAX_NODES to raise the limit)", where=ctx.where)
        op_type, default = node.op_type, node.domain in ("", "ai.onnx")
        if default:
            _check_attributes(ctx, node, prefix + (node.name or f"{op_type}_{index}"))
        present = [i for i in node.input if i]
        if op_type == "Constant" and default:
            consts.update(node.output)
            value = next((a for a in node.attribute if a.name == "value"), None)
            if value is not None and node.output:
                t = value.t
                tensors[node.output[0]] = _Tensor(tuple(t.dims), t.data_type)
                if math.prod(t.dims) <= 16:
                    const_values[node.output[0]] = onnx.numpy_helper.to_array(t)
            ctx.folded += 1
        elif op_type in ("Loop", "Scan", "If") and default:
            ops.append(index)
        elif op_type in ("Shape", "Size") and default:
            t = tensors.get(node.input[0])
            if t is not None and t.shape is not None:
                consts.update(node.output)  # static once shapes are known: shape arithmetic folds
            ctx.views += 1
        elif op_type not in _NO_FOLD and present and all(i in consts for i in present):
            consts.update(o for o in node.output if o)
            ctx.folded += 1
            src = _as_t(tensors.get(node.input[0]))
            if op_type in _STORED_ALIAS and src is not None and node.output and node.output[0]:
                # a dequantized / cast / transposed weight is still read at its stored size
                ctx.stored[node.output[0]] = ctx.stored.get(node.input[0], src.nbytes)
        elif op_type in VIEW_OPS and default:
            ctx.views += 1
        else:
            ops.append(index)
    # pass 2: runtime fusions (MatMul + bias, erf-GELU, attention)
    absorbed: set[int] = set()
    fused: dict[int, _Fused] = {}
    if ctx.fuse:
        _plan_fusions(graph, ops, tensors, consts, absorbed, fused, ctx)
    # pass 3: one op per remaining node
    for index in ops:
        node = graph.node[index]
        name = prefix + (node.name or f"{node.op_type}_{index}")
        if node.op_type in ("Loop", "Scan", "If") and node.domain in ("", "ai.onnx"):
            _subgraph(ctx, node, name, tensors, consts, const_values, count, graph)
            continue
        if index in absorbed:
            continue
        f = fused.get(index)
        if f is not None:
            _emit(ctx, prefix + f.name, f.op_type, f.op_type, f.inputs, f.outputs, f.attrs, tensors, consts,
                  count, f.entry)
            continue
        key = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        _emit(ctx, name, key, node.op_type, list(node.input), list(node.output),
              {a.name: _attr(onnx, a) for a in node.attribute}, tensors, consts, count, ONNX_OPS.get(key))


def _emit(ctx: _Ctx, name: str, key: str, op_type: str, inputs: list[str], outputs: list[str],
          attrs: dict[str, Any], tensors: Mapping[str, _Tensor], consts: set[str], count: float,
          entry: Entry | None) -> None:
    """Cost one node (or fused pattern) and add it; unknown shapes and op types are recorded, not dropped."""
    data_idx = _DATA_INPUTS.get(op_type)
    ins = [_as_t(tensors.get(i)) if i else None for i in inputs]
    for k, i in enumerate(inputs):
        if i in ctx.stored and (t := ins[k]) is not None and t.numel:
            ins[k] = T(t.shape, ctx.stored[i] / t.numel)
    outs = [_as_t(tensors.get(o)) if o else None for o in outputs]
    rank = _MIN_RANK.get(key)
    if rank is not None:
        for k in range(min(2, len(ins))):
            if (t := ins[k]) is not None and len(t.shape) < rank:
                raise RooflineError(f"node {name!r} ({op_type}): input {inputs[k]!r} has rank {len(t.shape)} "
                                    f"({'scalar' if not t.shape else 'x'.join(map(str, t.shape))}); {op_type} needs "
                                    f"rank >= {rank}", where=ctx.where)
    needed = range(len(ins)) if data_idx is None else data_idx
    if any(ins[i] is None for i in needed if i < len(ins) and inputs[i]) or \
            any(o is None for o, n in zip(outs, outputs, strict=False) if n):
        ctx.unknown_nodes.append(name)
        ctx.builder.add_unsupported(f"{key} (shape unknown)")
        return
    view = NodeView(op_type, ins, outs, attrs, ctx.opset)
    if entry is None:
        c = dataclasses.replace(cost("memory", view.data(_DATA_INPUTS.get(op_type)), view.outs), kind="other")
        ctx.builder.add_unsupported(key, (c.bytes_read + c.bytes_written) * count)
    else:
        c = entry(view)
    weight = sum(t.nbytes for i in needed if i < len(ins) and (t := ins[i]) is not None and inputs[i] in consts)
    if c.kind == "embedding":  # a gather reads only the rows it gathers
        idx = ins[1]
        if inputs[0] in consts:
            weight = c.bytes_read - (idx.nbytes if idx is not None else 0)
        else:
            weight, c = 0.0, dataclasses.replace(c, kind="memory")
    weight = min(weight, c.bytes_read)
    precision = "int8" if key in ("MatMulInteger", "ConvInteger", "QLinearConv", "QLinearMatMul") \
        else _precision([*inputs, *outputs], tensors)
    ctx.builder.add_op(Op(name, kind=c.kind, flops=c.flops, bytes_read=c.bytes_read, bytes_written=c.bytes_written,
                          precision=precision, unit=c.unit, count=count, group=name, module_type=op_type,
                          weight_bytes=weight))


def _subgraph(ctx: _Ctx, node: Any, name: str, tensors: dict[str, _Tensor], consts: set[str],
              const_values: dict[str, Any], count: float, graph: Any) -> None:
    """Loop / Scan / If: infer the body's shapes standalone, then walk it ``trip count`` times."""
    attrs = {a.name: a for a in node.attribute}
    op = node.op_type

    def graph_attr(key: str) -> Any:
        a = attrs.get(key)
        if a is None:
            raise RooflineError(f"{op} node {name!r}: missing attribute {key!r} (its subgraph)", where=ctx.where)
        if a.type != ctx.onnx.AttributeProto.GRAPH:
            raise RooflineError(f"{op} node {name!r}: attribute {key!r} must be a graph", where=ctx.where)
        return a.g

    if op == "If":
        branches = [("then_branch", graph_attr("then_branch")), ("else_branch", graph_attr("else_branch"))]
        cond = _small_value(ctx, graph, node.input[0], const_values) if node.input else None
        if cond is not None and getattr(cond, "size", 0) >= 1:
            taken = branches[0] if bool(cond.reshape(-1)[0]) else branches[1]
            _body(ctx, taken[1], [], f"{name}/{taken[0]}/", tensors, consts, const_values, count)
            return
        # unknown condition: count the costlier branch (an upper bound), say so; each branch is walked once
        best: tuple[float, str, _Ctx] | None = None
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
        return
    body = graph_attr("body")
    if op == "Loop":
        trips = None
        if node.input[0]:
            value = _small_value(ctx, graph, node.input[0], const_values)
            if value is not None and getattr(value, "size", 0) >= 1:
                first = value.reshape(-1)[0]
                if value.dtype.kind not in "iu" or first < 0:
                    raise RooflineError(f"Loop node {name!r}: trip count {first.item()!r} must be a whole number >= 0 "
                                        f"(an int64 scalar)", where=ctx.where)
                trips = int(first)
        carried = [tensors.get(i) for i in node.input[2:]]
        # body inputs: iteration number, condition, carried values
        known = [_Tensor((), 7), _Tensor((), 9), *carried]
        if trips is None:
            ctx.builder.warn(f"Loop node {name!r}: trip count not static; its body is counted once")
            trips = 1
    else:  # Scan (opset >= 9): the last num_scan_inputs inputs are scanned along their axes
        a = attrs.get("num_scan_inputs")
        n_scan = int(a.i) if a is not None and a.type == ctx.onnx.AttributeProto.INT else 0
        if not 1 <= n_scan <= len(node.input):
            raise RooflineError(f"Scan node {name!r}: attribute 'num_scan_inputs' must be an integer in "
                                f"1..{len(node.input)} (its inputs)", where=ctx.where)
        state = [tensors.get(i) for i in node.input[: len(node.input) - n_scan]]
        scanned = [tensors.get(i) for i in node.input[len(node.input) - n_scan:]]
        axes = list(attrs["scan_input_axes"].ints) if "scan_input_axes" in attrs else [0] * n_scan
        known = list(state)
        trips = None
        for t, axis in zip(scanned, axes, strict=False):
            if t is None or t.shape is None:
                known.append(None)
                continue
            axis %= len(t.shape)
            trips = t.shape[axis]
            known.append(_Tensor(t.shape[:axis] + t.shape[axis + 1:], t.elem))
        if trips is None:
            ctx.builder.warn(f"Scan node {name!r}: sequence length unknown; its body is counted once")
            trips = 1
    from roofline import workload as _workload

    top = getattr(_workload, "MAX_COUNT", math.inf)
    if count * max(trips, 1) > top:
        raise RooflineError(f"{op} node {name!r}: {trips:,} iterations" + (f" x {count:g} (enclosing loops)"
                                                                             if count > 1 else "")
                            + f" exceed the {top:g} repetitions an op may count", where=ctx.where)
    _body(ctx, body, known, f"{name}/", tensors, consts, const_values, count * max(trips, 1))


def _body(ctx: _Ctx, body: Any, known: list[_Tensor | None], prefix: str, outer: dict[str, _Tensor],
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
    inner: dict[str, _Tensor] = dict(outer)
    try:
        model = helper.make_model(g, opset_imports=ctx.opsets)
        model.ir_version = min(model.ir_version, onnx.IR_VERSION)
        big = _big_generator(onnx, model.graph)
        if big:
            ctx.builder.warn(f"{big} inside {prefix.rstrip('/')!r} would be materialised by onnx data propagation; "
                             "its shape inference runs without it (shapes, not data)")
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=not big).graph
    except Exception as exc:  # a body onnx cannot infer: walk it with what is declared
        ctx.builder.warn(f"shape inference failed inside {prefix.rstrip('/')!r}: {exc.__class__.__name__}")
        inferred = g
    _collect(inferred, ctx.symbols, inner)
    for vi, t in zip(body.input, known, strict=False):  # loop-carried values keep their first-iteration shape
        if t is not None and t.shape is not None:
            inner[vi.name] = t
    ctx.depth += 1
    try:
        _walk(ctx, body, inner, set(consts) | {i.name for i in body.initializer}, dict(const_values), prefix, count)
    finally:
        ctx.depth -= 1


# -- shape inference with static shape arithmetic ---------------------------------------------
#: Largest computed tensor (elements) treated as a static value (shape vectors, scalars).
_STATIC_MAX = 4096


def _infer(onnx: Any, proto: Any, symbols: Mapping[str, int], builder: WorkloadBuilder,
           where: str) -> tuple[Any, dict[str, _Tensor]]:
    """onnx shape inference, repeated while static shape arithmetic resolves more shapes.

    Exports with dynamic axes compute Reshape/Expand targets from ``Shape`` at run time
    (Shape -> Gather -> Div -> Cast -> Concat ...); onnx's data propagation covers only some
    of those ops.  Once the inputs are bound such tensors are static: evaluate them with
    ``onnx.reference``, feed them back as initializers, and infer again.  Returns the
    inferred model and the shape of every tensor it knows.
    """
    model = proto
    for _ in range(10):
        big = _big_generator(onnx, model.graph)
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
        tensors: dict[str, _Tensor] = {}
        _collect(inferred.graph, symbols, tensors)
        model = inferred
        if not (_contrib_shapes(onnx, inferred.graph, tensors) | _fold_static(onnx, inferred.graph, tensors, builder)):
            return inferred, tensors
    tensors = {}
    _collect(model.graph, symbols, tensors)
    return model, tensors


#: com.microsoft (onnxruntime contrib) ops onnx cannot infer whose output 0 has input 0's shape and type.
_CONTRIB_SAME_SHAPE = frozenset({"Gelu", "FastGelu", "BiasGelu", "QuickGelu", "SkipLayerNormalization",
                                 "SkipSimplifiedLayerNormalization", "SimplifiedLayerNormalization",
                                 "LayerNormalization", "BiasAdd", "RotaryEmbedding", "FusedConv"})


def _contrib_shapes(onnx: Any, g: Any, tensors: Mapping[str, _Tensor]) -> bool:
    """Declare output shapes of common onnxruntime contrib ops (onnx has no inference for them)."""
    added = False
    for n in g.node:
        if n.domain != _MS or not n.output or not n.input:
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


def _big_generator(onnx: Any, graph: Any) -> str | None:
    """A node of ``graph`` that would make more than ``_STATIC_MAX`` elements from constant inputs, or None.

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
            if size is None or size > _STATIC_MAX:
                return f"{n.op_type} node {n.name or n.output[0]!r}" + (f" ({size:.3g} elements)" if size else "")
    return None


def _fold_bound(n: Any, feeds: Mapping[str, Any]) -> float | None:
    """An upper bound on the elements node ``n`` would produce from ``feeds`` (None: cannot tell: do not run it).

    Judged before running, so constant folding never materialises a big tensor: the ops that make
    data out of small inputs (Range, ConstantOfShape, Expand, Tile, OneHot, Pad, Resize, ...) are sized
    from their inputs' values; any other op produces at most the broadcast of its inputs, or their total.
    """
    import numpy as np

    x = [feeds.get(i) if i else None for i in n.input]
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


def _fold_static(onnx: Any, g: Any, tensors: Mapping[str, _Tensor], builder: WorkloadBuilder | None = None) -> bool:
    """Replace static tensors read by nodes with unknown output shapes by initializers; True if any."""
    used = {i for n in g.node for i in n.input} | {o.name for o in g.output}
    unknown = [n for n in g.node
               if any(o in used and (tensors.get(o) is None or tensors[o].shape is None) for o in n.output if o)]
    if not unknown:
        return False
    producer = {o: n for n in g.node for o in n.output if o}
    inits = {i.name: i for i in g.initializer}
    values: dict[str, Any] = {}
    failed: set[str] = set()

    def value(t: str, depth: int = 0) -> Any:
        if t in values or t in failed or depth > 40:
            return values.get(t)
        v = None
        if t in inits:
            init = inits[t]
            if init.data_location != 1 and math.prod(init.dims) <= _STATIC_MAX:
                v = onnx.numpy_helper.to_array(init)
        elif t in producer:
            n = producer[t]
            if n.domain not in ("", "ai.onnx") or n.op_type in _NO_FOLD:
                v = None
            elif n.op_type in ("Shape", "Size"):
                s = tensors.get(n.input[0])
                if s is not None and s.shape is not None:
                    v = _shape_value(onnx, n, s.shape)
            elif not any((s := tensors.get(o)) is not None and s.shape is not None and math.prod(s.shape) > _STATIC_MAX
                         for o in n.output if o):  # never materialise big tensors (weights, activations)
                feeds = {}
                for i in n.input:
                    if i:
                        feeds[i] = value(i, depth + 1)
                        if feeds[i] is None:
                            break
                else:
                    size = _fold_bound(n, feeds)
                    if size is not None and size <= _STATIC_MAX:
                        v = _run_node(onnx, n, feeds, t)
                    elif size is not None and builder is not None:
                        builder.warn(f"{n.op_type} node {n.name or t!r} would compute {size:.3g} elements; constant "
                                     f"folding evaluates at most {_STATIC_MAX:,} (shapes, not data): its value stays "
                                     "unknown")
        if v is None or getattr(v, "size", _STATIC_MAX + 1) > _STATIC_MAX:
            failed.add(t)
            return None
        values[t] = v
        return v

    rewired: dict[str, str] = {}
    for n in unknown:
        for k, t in enumerate(n.input):
            if not t or t in inits or t not in producer or producer[t].op_type == "Constant":
                continue
            if t not in rewired and value(t) is None:
                continue
            if t not in rewired:
                rewired[t] = f"{t}::static"
                g.initializer.append(onnx.numpy_helper.from_array(values[t], rewired[t]))
            n.input[k] = rewired[t]
    return bool(rewired)


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


# -- entry point -------------------------------------------------------------------------------
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
    onnx = require("onnx", "onnx")
    require("onnx.shape_inference", "onnx")
    require("onnx.numpy_helper", "onnx")
    if isinstance(model, (str, os.PathLike)):
        where = str(model)
        proto = _load(model)
        base: Path | None = Path(model).resolve().parent
    else:
        if not isinstance(model, onnx.ModelProto):
            raise RooflineError(f"expected a path to an .onnx file or an onnx.ModelProto, got {type(model).__name__}")
        where = model.graph.name or "model"
        proto = onnx.ModelProto()
        proto.CopyFrom(model)
        base = None
    if default_dim < 1:
        raise RooflineError(f"default_dim must be >= 1, got {default_dim}")
    opset = _check_versions(proto, where)
    builder = WorkloadBuilder()
    _check_external_data(proto, base, builder, where)
    shapes, symbols = _bind_inputs(proto, dict(input_shapes or {}), default_dim, builder, where)
    inferred, tensors = _infer(onnx, proto, symbols, builder, where)
    ctx = _Ctx(onnx, opset, list(proto.opset_import), symbols, builder, fuse, where=where)
    consts = {i.name for i in inferred.graph.initializer}
    _walk(ctx, inferred.graph, tensors, consts, {}, "", 1.0)
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
    producer = " ".join(p for p in (proto.producer_name, proto.producer_version) if p)
    info = {"frontend": "onnx", "model": where, "opset": opset, "ir_version": int(proto.ir_version),
            "producer": producer, "nodes": ctx.nodes, "folded_constant_nodes": ctx.folded,
            "view_nodes": ctx.views, "fusions": dict(ctx.fusions), "unknown_shape_nodes": list(ctx.unknown_nodes),
            "input_shapes": {k: list(v) for k, v in shapes.items()}, "symbols": dict(symbols)}
    return builder.build(title=title or Path(where).stem, source=f"onnx: {where}", info=info)


__all__ = ["DEFAULT_DIM", "ONNX_OPS", "VIEW_OPS", "NodeView", "from_onnx"]
