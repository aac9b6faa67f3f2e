"""The ONNX op table: op type -> the :mod:`roofline.work.costs` formula it uses, and the code applying it to a node.

:data:`OPS` (op type -> :class:`~roofline.work.costs.OpRule`) is the table as data, what
``roofline ops`` prints; :data:`ENTRIES` (op type -> entry) is the dispatch.  Both are
built from the one list of rows in :data:`_ROWS` and the op types the formulas declared themselves
(``@costs.formula(name, onnx=[...])``, costed over the node's data inputs), so they list the same op types.
An entry reads a :class:`NodeView` (the node's tensors and attributes) and returns a
:class:`~roofline.work.costs.Cost`; :func:`node_cost` adds the node's weight bytes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from roofline.work import costs
from roofline.work.costs import ELEMENTWISE_FLOPS, Cost, Formula, OpRule, T, cost, traffic, with_weights

MS = "com.microsoft"
#: Data inputs per op type where some inputs are metadata (shapes, axes, starts/ends, scalars).
DATA_INPUTS: dict[str, tuple[int, ...]] = {
    "Slice": (0,), "Expand": (0,), "Tile": (0,), "Pad": (0,), "Resize": (0,), "Upsample": (0,), "TopK": (0,),
    "Split": (0,), "CumSum": (0,), "Clip": (0,), "Trilu": (0,), "ConstantOfShape": (), "Range": (),
    "OneHot": (0,), "ReduceSum": (0,), "ReduceMean": (0,), "ReduceMax": (0,), "ReduceMin": (0,),
    "ReduceProd": (0,), "ReduceL1": (0,), "ReduceL2": (0,), "ReduceLogSum": (0,), "ReduceLogSumExp": (0,),
    "ReduceSumSquare": (0,), "Squeeze": (0,), "Unsqueeze": (0,), "Reshape": (0,), "CenterCropPad": (0,),
}
#: Minimum input rank of ops whose cost formulas index shapes.
MIN_RANK = {"MatMul": 1, "MatMulInteger": 1, "Gemm": 2, "Conv": 3, "ConvTranspose": 3, "ConvInteger": 3,
            "MaxPool": 3, "AveragePool": 3, "LpPool": 3}
#: Op types whose precision is int8 whatever their tensors say (integer matmuls and convolutions).
INT8_OPS = frozenset({"MatMulInteger", "ConvInteger", "QLinearConv", "QLinearMatMul"})


@dataclass
class NodeView:
    """What a key-table entry sees of one node: its tensors (None where absent) and attributes.

    ``outs`` are the present outputs.  ``names`` are the input tensors' names; an input named
    in ``consts`` (an initializer or a folded constant) is a weight.
    """

    op_type: str
    inputs: list[T | None]
    outs: list[T]
    attrs: dict[str, Any]
    opset: int
    names: Sequence[str] = ()
    consts: AbstractSet[str] = frozenset()

    def data(self, indices: Sequence[int] | None = None) -> list[T]:
        """The present input tensors at ``indices`` (all by default)."""
        if indices is None:
            return [t for t in self.inputs if t is not None]
        return [t for i in indices if i < len(self.inputs) and (t := self.inputs[i]) is not None]

    def data_inputs(self) -> list[T]:
        """The present data inputs (:data:`DATA_INPUTS`: metadata inputs left out)."""
        return self.data(DATA_INPUTS.get(self.op_type))

    def is_weight(self, i: int) -> bool:
        """Input ``i`` is a constant: read as a weight."""
        return i < len(self.names) and self.names[i] in self.consts

    def weighed_inputs(self) -> tuple[list[T], list[bool]]:
        """(:meth:`data_inputs`, for each of them whether it is a weight)."""
        idx = DATA_INPUTS.get(self.op_type)
        data: list[T] = []
        weights: list[bool] = []
        for i in range(len(self.inputs)) if idx is None else idx:
            if i < len(self.inputs) and (t := self.inputs[i]) is not None:
                data.append(t)
                weights.append(i < len(self.names) and self.names[i] in self.consts)
        return data, weights


Entry = Callable[[NodeView], Cost]


def node_traffic(c: Cost, n: NodeView) -> Cost:
    """``c``'s kind and FLOPs with the node's own compulsory traffic (its data inputs and outputs)."""
    r, w = traffic(n.data(), n.outs)
    return Cost(c.kind, c.flops, r, w)


# -- entries -----------------------------------------------------------------------------------
def _on_data(name: str, **attrs: Any) -> Entry:
    """Formula ``name`` over the node's data inputs (:data:`DATA_INPUTS`)."""
    return lambda n: cost(name, n.data_inputs(), n.outs, **attrs)


def _on_all(name: str, **attrs: Any) -> Entry:
    """Formula ``name`` over every present input (metadata inputs included)."""
    return lambda n: cost(name, n.data(), n.outs, **attrs)


def _gelu(n: NodeView) -> Cost:
    return cost("elementwise", n.data(), n.outs, op="gelu_tanh" if n.attrs.get("approximate") == "tanh" else "gelu")


def _conv(n: NodeView) -> Cost:
    return cost("conv", n.data(), n.outs, transposed=n.op_type == "ConvTranspose")


def _conv_at(n: NodeView, w_index: int) -> Cost:
    """A quantised conv: x (input 0) and w (input ``w_index``) first, the scales / zero points after."""
    x, w = n.inputs[0], n.inputs[w_index]
    assert x is not None and w is not None
    rest = [t for i, t in enumerate(n.inputs) if i not in (0, w_index) and t is not None]
    return cost("conv", [x, w, *rest], n.outs)


def _conv_integer(n: NodeView) -> Cost:
    return _conv_at(n, 1)


def _qlinear_conv(n: NodeView) -> Cost:
    # inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, [bias]
    return _conv_at(n, 3)


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
    k = n.attrs.get("K")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"attribute K (the inner dimension, a whole number >= 1) is {'missing' if k is None else k}")
    return cost("matmul", n.data(), n.outs, k=k)


def _einsum(n: NodeView) -> Cost:
    """The contracted size: the product of the index sizes absent from the output."""
    eq = str(n.attrs.get("equation", "")).replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    sizes: dict[str, int] = {}
    for term, t in zip(lhs.split(","), n.data(), strict=False):
        if "..." in term:  # ellipsis dims are batch-like: they appear in the output
            continue
        for c, d in zip([c for c in term if c.isalpha()], t.shape, strict=False):
            sizes[c] = max(sizes.get(c, 1), d)
    if not rhs and "->" not in eq:  # implicit output: letters seen once, sorted
        rhs = "".join(sorted(c for c in sizes if lhs.count(c) == 1))
    return cost("einsum", n.data(), n.outs, contracted=math.prod(d for c, d in sizes.items() if c not in rhs))


def _heads_view(t: T, heads: int) -> T:
    """A rank-4 (batch, heads, seq, head_dim) view of a 3-D (batch, seq, heads*head_dim) tensor."""
    if len(t.shape) != 3:
        return t
    return T((t.shape[0], heads, t.shape[1], t.shape[2] // heads), t.itemsize)


def _with_past(t: T, past_len: int) -> T:
    """Keys or values (..., seq, dim) extended by a cache of ``past_len`` positions."""
    return T((*t.shape[:-2], t.shape[-2] + past_len, t.shape[-1]), t.itemsize) if past_len else t


def _past(n: NodeView) -> T | None:
    """The past key cache input: ONNX Attention input 4, MultiHeadAttention 6, GroupQueryAttention 3."""
    at = {"Attention": 4, "GroupQueryAttention": 3}.get(n.op_type, 6)
    return n.inputs[at] if len(n.inputs) > at else None


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
        q = k = v = T((q.shape[0], heads, q.shape[1], q.shape[-1]), q.itemsize)
    past = _past(n)
    past_len = past.shape[-2] if past is not None and len(past.shape) == 4 else 0
    q4 = _heads_view(q, heads)
    k4, v4 = _with_past(_heads_view(k, kv_heads), past_len), _with_past(_heads_view(v, kv_heads), past_len)
    causal = bool(n.attrs.get("is_causal", n.attrs.get("unidirectional", 0))) or n.op_type == "GroupQueryAttention"
    # ONNX Attention aligns the causal frontier by the cached length (past_key), so with no cache it is top-left
    # even when K is longer than Q (onnx.reference op_attention); the contrib ops align the last query with the last key
    offset = past_len if not ms else k4.shape[-2] - q4.shape[-2]
    return node_traffic(cost("attention", [q4, k4, v4], [q4], causal=causal, causal_offset=offset if causal else 0), n)


def _ms_attention(n: NodeView) -> Cost:
    return cost("qkv_attention", n.data(), n.outs, heads=int(n.attrs.get("num_heads", 1)),
                causal=bool(n.attrs.get("unidirectional", 0)))


def _affine(n: NodeView, scale: int, shift: int) -> str:
    """'scale_shift', 'scale' or '': which of the learned scale / shift inputs the node has."""
    def has(i: int) -> bool:
        return len(n.inputs) > i and n.inputs[i] is not None

    return "scale_shift" if has(shift) else "scale" if has(scale) else ""


def _norm(norm: str) -> Entry:
    def entry(n: NodeView) -> Cost:
        if n.op_type == "BatchNormalization":
            kind = "batch_train" if n.attrs.get("training_mode", 0) else "batch"
            return cost("norm", n.data(), n.outs, norm=kind, affine="scale_shift")
        return cost("norm", n.data(), n.outs, norm=norm, affine=_affine(n, 1, 2))

    return entry


def _skip_norm(norm: str) -> Entry:
    """com.microsoft Skip(Simplified)LayerNormalization: inputs x, skip, gamma, [beta]."""

    def entry(n: NodeView) -> Cost:
        affine = "scale_shift" if norm == "layer" and len(n.inputs) > 3 and n.inputs[3] is not None else "scale"
        return cost("skip_norm", n.data(), n.outs, norm=norm, affine=affine)

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
    """Gather reads only what it gathers (plus the indices): the embedding formula on a 2-D view.

    A constant table is a weight table (kind ``embedding``, weight bytes the rows read);
    gathering from an activation is a plain ``memory`` op with no weight bytes.
    """
    data, idx = n.inputs[0], n.inputs[1]
    assert data is not None and idx is not None
    axis = int(n.attrs.get("axis", 0)) % max(len(data.shape), 1)
    rows = data.shape[axis] if data.shape else 1
    table = T((rows, data.numel // max(rows, 1)), data.itemsize)
    is_table = n.is_weight(0)
    c = cost("embedding", [table, idx], n.outs, weights=[is_table, False])
    return c if is_table else dataclasses.replace(c, kind="memory")


def _rnn(gates: int) -> Entry:
    def entry(n: NodeView) -> Cost:
        return cost("rnn", n.data(), n.outs, gates=gates, hidden=int(n.attrs.get("hidden_size", 0)),
                    directions=2 if n.attrs.get("direction", "forward") == "bidirectional" else 1,
                    batch_first=bool(n.attrs.get("layout", 0)))

    return entry


def other(n: NodeView) -> Cost:
    """An op type without a formula: its compulsory bytes, 0 FLOPs, kind ``other``."""
    return dataclasses.replace(cost("memory", n.data_inputs(), n.outs), kind="other")


#: Entries that count the weight bytes they read themselves (a gather: only the rows it gathers).
_OWN_WEIGHTS: frozenset[Entry] = frozenset({_gather})


def node_cost(entry: Entry, n: NodeView) -> Cost:
    """``entry``'s cost of node ``n``, weight bytes included: its constant data inputs, each read whole."""
    c = entry(n)
    if entry in _OWN_WEIGHTS or n.consts.isdisjoint(n.names):
        return c
    data, weights = n.weighed_inputs()
    return with_weights(c, "memory", data, n.outs, weights)


# -- the table ---------------------------------------------------------------------------------
Row = tuple[str, OpRule, Entry]


def _rows(formula: str, entry: Entry, *ops: str, counts: str = "") -> list[Row]:
    return [(op, OpRule(op, formula, counts), entry) for op in ops]


def _declared(formula: str) -> list[Row]:
    """The op types ``formula`` declared (``@costs.formula(name, onnx=[...])``), placed here in the table: the
    formula over the node's data inputs.  (Declared op types not placed follow the table's rows.)"""
    return [(op, rule, _on_data(formula)) for op, rule in costs.declared("onnx", formula).items()]


def _elementwise(op: str, *ops: str) -> list[Row]:
    """Op types costed as ``ELEMENTWISE_FLOPS[op]`` FLOPs per output element."""
    return _rows("elementwise", _on_all("elementwise", op=op), *ops,
                 counts=f"{ELEMENTWISE_FLOPS[op]:g} FLOP(s) per output element ({op})")


_ONE_OP = ("Not", "And", "Or", "Xor", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "BitShift", "Mod",
           "IsNaN", "IsInf", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh")
_NORM_COUNTS = "the norm's FLOPs per input element (NORM_FLOPS) + 1 per learned scale and shift"

_ROWS: list[Row] = [
    # matrix multiplies and convolutions
    *_rows("matmul", _matmul, "MatMul", "MatMulInteger", "QLinearMatMul", f"{MS}.FusedMatMul",
           f"{MS}.MatMulIntegerToFloat", counts="2 * numel(out) * K, K the last dimension of A"),
    *_rows("matmul", _gemm, "Gemm", counts="2 * M * K * N, K from A (its first dimension with transA)"),
    *_rows("matmul", _matmul_nbits, f"{MS}.MatMulNBits", counts="2 * numel(out) * K, K the attribute (B is packed)"),
    *_rows("conv", _conv, "Conv", "ConvTranspose", f"{MS}.FusedConv"),
    *_rows("conv", _conv_integer, "ConvInteger"),
    *_rows("conv", _qlinear_conv, "QLinearConv"),
    *_rows("einsum", _einsum, "Einsum"),
    *_rows("rnn", _rnn(1), "RNN", counts="the rnn formula with 1 gate"),
    *_rows("rnn", _rnn(3), "GRU", counts="the rnn formula with 3 gates"),
    *_rows("rnn", _rnn(4), "LSTM", counts="the rnn formula with 4 gates"),
    # attention
    *_rows("attention", _attention, "Attention", f"{MS}.MultiHeadAttention", f"{MS}.GroupQueryAttention",
           counts="fused attention: 2 * heads * visible (query, key) pairs * (E + Ev), a KV cache included"),
    *_rows("qkv_attention", _ms_attention, f"{MS}.Attention"),
    # normalisation, softmax
    *_rows("norm", _norm("batch"), "BatchNormalization",
           counts="2 FLOPs per element (5 in training mode) + 2 for the scale and shift"),
    *_rows("norm", _norm("layer"), "LayerNormalization", f"{MS}.LayerNormalization", counts=_NORM_COUNTS),
    *_rows("norm", _norm("instance"), "InstanceNormalization", counts=_NORM_COUNTS),
    *_rows("norm", _norm("group"), "GroupNormalization", counts=_NORM_COUNTS),
    *_rows("norm", _norm("rms"), "RMSNormalization", f"{MS}.SimplifiedLayerNormalization", counts=_NORM_COUNTS),
    *_rows("skip_norm", _skip_norm("layer"), f"{MS}.SkipLayerNormalization"),
    *_rows("skip_norm", _skip_norm("rms"), f"{MS}.SkipSimplifiedLayerNormalization"),
    *_rows("norm", _on_data("norm", norm="instance"), "MeanVarianceNormalization",
           counts="5 FLOPs per input element, as instance norm"),
    *_rows("norm", _on_data("norm", norm="rms"), "LpNormalization",
           counts="3 FLOPs per input element, as RMS norm: square-accumulate (2) + scale (1)"),
    *_rows("lrn", _lrn, "LRN"),
    *_declared("softmax"),
    # pooling and reductions
    *_rows("pool", _pool, "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"),
    *_declared("reduction"),
    *_rows("interpolate", _resize, "Resize", "Upsample"),
    # elementwise and activations
    *_elementwise("add", "Add"), *_elementwise("sub", "Sub"), *_elementwise("mul", "Mul"),
    *_elementwise("div", "Div"), *_elementwise("neg", "Neg"), *_elementwise("abs", "Abs"),
    *_elementwise("relu", "Relu", "ThresholdedRelu"), *_elementwise("leaky_relu", "LeakyRelu", "PRelu"),
    *_elementwise("clamp", "Clip", "Shrink"), *_elementwise("where", "Where"), *_elementwise("eq", "Equal"),
    *_elementwise("lt", "Less"), *_elementwise("le", "LessOrEqual"), *_elementwise("gt", "Greater"),
    *_elementwise("ge", "GreaterOrEqual"), *_elementwise("sign", "Sign"), *_elementwise("floor", "Floor"),
    *_elementwise("ceil", "Ceil"), *_elementwise("round", "Round"), *_elementwise("reciprocal", "Reciprocal"),
    *_elementwise("exp", "Exp"), *_elementwise("log", "Log"), *_elementwise("sqrt", "Sqrt"),
    *_elementwise("sin", "Sin"), *_elementwise("cos", "Cos"), *_elementwise("tanh", "Tanh"),
    *_elementwise("erf", "Erf"), *_elementwise("pow", "Pow"), *_elementwise("sigmoid", "Sigmoid"),
    *_elementwise("hardsigmoid", "HardSigmoid"), *_elementwise("hardswish", "HardSwish"),
    *_elementwise("softplus", "Softplus"), *_elementwise("mish", "Mish"), *_elementwise("elu", "Elu"),
    *_elementwise("selu", "Selu"), *_elementwise("celu", "Celu"),
    *_elementwise("gelu", f"{MS}.Gelu", f"{MS}.BiasGelu"), *_elementwise("gelu_tanh", f"{MS}.FastGelu"),
    *_elementwise("add", *_ONE_OP),  # one op (or one transcendental) each
    *_rows("elementwise", _gelu, "Gelu", counts="5 FLOPs per output element (erf), 9 with approximate='tanh'"),
    *_declared("softsign"), *_declared("quick_gelu"), *_declared("quantize_linear"), *_declared("dequantize_linear"),
    *_rows("variadic", _on_all("variadic"), "Sum", "Max", "Min", counts="n - 1 FLOPs per output element, n inputs"),
    *_rows("variadic", _on_all("variadic", extra=1), "Mean", counts="n FLOPs per output element: n - 1 adds, a divide"),
    # data movement: 0 FLOPs, compulsory bytes (Slice, GatherElements, GatherND and the copies: declared with their
    # formulas, roofline.work.costs.formula)
    *_rows("embedding", _gather, "Gather",
           counts="0 FLOPs; reads the indices and the slices gathered along the axis, writes the output"),
]


def _table(rows: list[Row]) -> tuple[dict[str, OpRule], dict[str, Entry]]:
    """(op table, dispatch) from the rows; an op type listed twice is an error."""
    ops: dict[str, OpRule] = {}
    entries: dict[str, Entry] = {}
    for op, rule, entry in rows:
        if op in ops:
            raise ValueError(f"ONNX op {op!r} is listed twice")
        ops[op], entries[op] = rule, entry
    return ops, entries


#: ONNX op type (``domain.Op`` outside the default domain) -> its formula and what it counts.
#: ENTRIES: the same op types -> the code applying the formula to a node.
OPS, ENTRIES = _table(_ROWS)
costs.register_table("onnx", OPS)  # what `roofline ops` lists and register_op checks against; adds costs.TARGETS
#: the op types a formula declared (``@costs.formula(name, onnx=[...])``): the formula over the node's data inputs
ENTRIES.update({op: _on_data(rule.formula) for op, rule in OPS.items() if op not in ENTRIES})


def _user_entry(key: str, fn: Formula) -> Entry:
    """A user formula (:func:`roofline.work.costs.register_op`) as an entry: it gets the node's data inputs and outputs."""
    return lambda n: costs.apply_user("onnx", key, fn, n.data_inputs(), n.outs)


def entry_for(key: str) -> Entry | None:
    """The entry for op ``key``: a user's formula first (``costs.USER_FORMULAS``), else the table's (a formula's
    declared op type: the formula over the node's data inputs), else None."""
    fn = costs.USER_FORMULAS.get(("onnx", key))
    if fn is not None:
        return _user_entry(key, fn)
    entry = ENTRIES.get(key)
    rule = OPS.get(key) if entry is None else None  # declared by a formula registered after this module's import
    return _on_data(rule.formula) if rule is not None else entry
