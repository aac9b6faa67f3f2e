"""Per-op cost formulas: FLOPs and bytes as pure functions of tensor shapes.

One registry, filled by :func:`formula`, which also names the ops a formula
costs as they are: ``@formula("memory", torch=["aten.clone", ...], onnx=["Concat", ...])``
(a new op is that one decorator; ``roofline ops`` and both frontends read it).  Ops whose
attributes a formula reads (matmul's K, a norm's kind) keep their row in the frontend's key
table, beside the code that reads them.  Registering a name or an op twice is an error.

Conventions (say them exactly):

* FLOP = one floating-point operation; a multiply-add is 2 FLOPs.
* Bytes (default): compulsory traffic of this op alone — every input tensor
  read once from main memory, every output written once (``unfused``).  An
  embedding reads only the rows it gathers.
* Matmul and convolution FLOPs match ``torch.utils.flop_counter`` exactly
  (``2 * M * K * N``; a bias add is an epilogue and adds no FLOPs here).
* Causal attention counts only the unmasked (lower-triangle) score pairs.
* Per-element FLOP constants for elementwise ops, norms and softmax are in
  :data:`ELEMENTWISE_FLOPS` and :data:`NORM_FLOPS`; a transcendental (exp,
  log, tanh, erf, sqrt, ...) counts as 1 FLOP.

>>> from roofline.work.costs import T, cost
>>> c = cost("matmul", [T((128, 64), 2), T((64, 32), 2)], [T((128, 32), 2)])
>>> c.flops, c.bytes_read, c.bytes_written
(524288.0, 20480.0, 8192.0)

Frontends map their op names to these formulas in data tables of :class:`OpRule`
(``frontends.torch.OPS``, ``frontends.onnx.OPS``; ``roofline ops`` prints them), which
each frontend registers here when imported (:func:`register_table`, which adds the ops the formulas
declared, :data:`TARGETS`): this module imports no frontend.
A user gives an op a formula, or replaces a built-in one, with :func:`register_op`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

#: FLOPs per output element of elementwise ops and activations.
ELEMENTWISE_FLOPS: dict[str, float] = {
    # one arithmetic op or comparison each
    "add": 1, "sub": 1, "mul": 1, "div": 1, "neg": 1, "abs": 1, "maximum": 1, "minimum": 1,
    "relu": 1, "leaky_relu": 2, "clamp": 2, "hardtanh": 2, "where": 1, "eq": 1, "ne": 1, "lt": 1, "le": 1,
    "gt": 1, "ge": 1, "sign": 1, "floor": 1, "ceil": 1, "round": 1, "reciprocal": 1, "square": 1,
    "addcmul": 2, "addcdiv": 2, "lerp": 3, "fma": 2,
    # transcendentals count 1 each
    "exp": 1, "log": 1, "sqrt": 1, "rsqrt": 1, "sin": 1, "cos": 1, "tanh": 1, "erf": 1, "pow": 1,
    # composites: the sum of their parts
    "sigmoid": 4,      # neg, exp, add 1, reciprocal
    "silu": 5,         # sigmoid (4) + mul
    "gelu": 5,         # x * 0.5 * (1 + erf(x / sqrt 2)): div, erf, add, mul, mul
    "gelu_tanh": 9,    # 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))): 3 mul cube, mul, add, mul, tanh, add, mul
    "softplus": 3,     # exp, add, log
    "mish": 7,         # softplus (3) + tanh + mul (+2 for the threshold)
    "hardswish": 4,    # add, clamp (2), mul ... / 6 folded
    "hardsigmoid": 3,
    "elu": 3, "selu": 4, "celu": 3,
    "rope": 3,         # rotary embedding: x*cos + rotate(x)*sin per element
    "dropout": 2,      # compare + scale
    "copy": 0, "cast": 0, "fill": 0,
    # backward (gradient) kernels, per element of the gradient produced
    "relu_backward": 1,      # where(y > 0, g, 0)
    "sigmoid_backward": 3,   # g * y * (1 - y)
    "tanh_backward": 3,      # g * (1 - y^2)
    "silu_backward": 9,      # sigmoid (4) + g * s * (1 + x * (1 - s)) (5)
    "gelu_backward": 11,     # cdf (4) + pdf exp(-x^2/2) (4) + x * pdf (1) + add (1) + g * (1)
    "softmax_backward": 4,   # y * (g - sum(g * y)): mul, sum, sub, mul
}

#: FLOPs per input element of normalisations, before the affine part.
#: layer/group/instance: mean (1), centre (1), square-accumulate (2), scale by 1/std (1) = 5.
#: rms: square-accumulate (2), scale (1) = 3.  batch (inference, statistics given): centre + scale = 2.
#: backward (any of them, with the weight/bias gradients): g*w (1), two row sums (3), rescale (4), dw/db (3) = 11.
NORM_FLOPS: dict[str, float] = {"layer": 5, "group": 5, "instance": 5, "rms": 3, "batch": 2, "batch_train": 5,
                                "backward": 11}
#: Added per element when the norm has a learned scale (1) and shift (1).
NORM_AFFINE_FLOPS = {"scale": 1, "scale_shift": 2}
#: Softmax per element: max (1), subtract (1), exp (1), sum (1), divide (1).
SOFTMAX_FLOPS = 5
#: FLOPs per output element of interpolation modes.
INTERPOLATE_FLOPS: dict[str, float] = {"nearest": 0, "linear": 3, "bilinear": 7, "bicubic": 31, "trilinear": 15}

KIND_UNIT = {"matmul": "matrix", "conv": "matrix", "attention": "matrix"}


@dataclass(frozen=True)
class T:
    """A tensor as the cost formulas see it: a shape and bytes per element."""

    shape: tuple[int, ...]
    itemsize: float

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> float:
        return self.numel * self.itemsize


@dataclass(frozen=True)
class Cost:
    """What one op costs: FLOPs, bytes read and written, op kind, unit.

    ``weight_bytes`` is the part of ``bytes_read`` that is parameters (inputs
    :func:`cost` was told are weights; of a gathered table only the rows read).
    """

    kind: str
    flops: float
    bytes_read: float
    bytes_written: float
    weight_bytes: float = 0.0

    @property
    def unit(self) -> str:
        return KIND_UNIT.get(self.kind, "vector")


Formula = Callable[..., Cost]
FORMULAS: dict[str, Formula] = {}
FRONTENDS = ("torch", "onnx")


@dataclass(frozen=True)
class OpRule:
    """One row of a frontend's op table: the formula an op uses and what it counts."""

    op: str
    formula: str
    counts: str = ""

    @property
    def description(self) -> str:
        """What is counted: ``counts``, else the first line of the formula's docstring."""
        if self.counts:
            return self.counts
        doc = getattr(FORMULAS.get(self.formula), "__doc__", None) or ""
        return doc.strip().splitlines()[0] if doc.strip() else ""


#: frontend -> op -> its row, for the ops a formula declared with :func:`formula` (``torch=``, ``onnx=``), in
#: the order declared; each frontend's table takes them in when it registers (:func:`register_table`).
TARGETS: dict[str, dict[str, OpRule]] = {fe: {} for fe in FRONTENDS}
#: frontend -> the op table it ships, registered by the frontend's module when it is imported
#: (:func:`register_table`): the frontends sit above this module, which never imports them.
_TABLES: dict[str, dict[str, OpRule]] = {}


def formula(name: str, *, torch: Sequence[str] = (), onnx: Sequence[str] = (), counts: str = ""
            ) -> Callable[[Formula], Formula]:
    """Register a cost formula under ``name``, and the ops that use it as they are (no attribute of the op
    read): ``torch`` (overload packets, 'aten.mm') and ``onnx`` (op types, 'MatMul'; 'com.me.Op' outside the
    default domain).  The PyTorch frontend applies the formula to the op's tensors, the ONNX one to the node's
    data inputs; ``counts`` is their ``roofline ops`` line (default: the docstring's first line).  A second
    registration of ``name``, or of an op some formula already has, is an error (:func:`unregister_formula`
    undoes one).  An op whose attributes the formula reads stays in its frontend's table with the code that
    reads them (``roofline.frontends.torch_ops.ATTRS``, ``roofline.frontends.onnx.ops``).

    >>> @formula("roofline_doc.twice", torch=["roofline_doc.twice"], onnx=["com.roofline_doc.Twice"])
    ... def twice(inputs, outputs):
    ...     '''2 FLOPs per output element'''
    ...     return Cost("elementwise", 2.0 * outputs[0].numel, *traffic(inputs, outputs))
    >>> TARGETS["onnx"]["com.roofline_doc.Twice"].formula, cost("roofline_doc.twice", [T((4,), 4)], [T((4,), 4)]).flops
    ('roofline_doc.twice', 8.0)
    >>> unregister_formula("roofline_doc.twice")
    """
    targets = {"torch": list(torch), "onnx": list(onnx)}

    def register(fn: Formula) -> Formula:
        if name in FORMULAS:
            raise ValueError(f"cost formula {name!r} is already registered")
        for fe, ops in targets.items():
            for i, op in enumerate(ops):
                if op in TARGETS[fe] or op in _TABLES.get(fe, {}) or op in ops[:i]:
                    raise ValueError(f"{fe} op {op!r} already has a cost formula (formula {name!r})")
        FORMULAS[name] = fn
        for fe, ops in targets.items():
            for op in ops:
                rule = TARGETS[fe][op] = OpRule(op, name, counts)
                if fe in _TABLES:  # the frontend is imported: its table (what it looks ops up in) has it now
                    _TABLES[fe][op] = rule
        return fn

    return register


def declared(frontend: str, name: str) -> dict[str, OpRule]:
    """The ops formula ``name`` declared for ``frontend`` (:data:`TARGETS`), in order: for a frontend's table that
    places them among its own rows (where it does not, they follow its rows)."""
    return {op: rule for op, rule in TARGETS[frontend].items() if rule.formula == name}


def unregister_formula(name: str) -> None:
    """Remove formula ``name`` and the ops it declared (from the frontends' tables too)."""
    FORMULAS.pop(name, None)
    for fe, ops in TARGETS.items():
        for op in [op for op, rule in ops.items() if rule.formula == name]:
            rule = ops.pop(op)
            if _TABLES.get(fe, {}).get(op) is rule:
                del _TABLES[fe][op]


def cost(name: str, inputs: Sequence[T], outputs: Sequence[T], *, weights: Sequence[bool] = (),
         **attrs: Any) -> Cost:
    """Apply the formula ``name`` to tensors ``inputs`` -> ``outputs``.

    ``weights[i]`` says input ``i`` is a parameter: its bytes read count as weight bytes.
    """
    return with_weights(FORMULAS[name](list(inputs), list(outputs), **attrs), name, inputs, outputs, weights)


def with_weights(c: Cost, name: str, inputs: Sequence[T], outputs: Sequence[T], weights: Sequence[bool]) -> Cost:
    """``c`` with its weight bytes: the bytes read of the inputs flagged in ``weights``.

    A gather (:data:`SOURCE_READ`) reads only part of its source: a weight table counts the rows read.
    """
    if not any(weights):
        return c
    w = 0.0
    for i, (t, is_w) in enumerate(zip(inputs, weights, strict=False)):
        if is_w:
            w += SOURCE_READ[name](list(inputs), list(outputs)) if i == 0 and name in SOURCE_READ else t.nbytes
    return Cost(c.kind, c.flops, c.bytes_read, c.bytes_written, float(min(w, c.bytes_read)))


def _aten(names: str) -> list[str]:
    """'mm bmm' -> ['aten.mm', 'aten.bmm']: aten overload packets as the PyTorch frontend keys them."""
    return [f"aten.{n}" for n in names.split()]


# -- formulas on sizes (no tensors): the LLM model calls these with symbolic token counts -------------
def gemm_flops(m: Any, k: Any, n: Any) -> Any:
    """An (m x k) @ (k x n) product: 2 m k n FLOPs (a multiply-add is 2)."""
    return 2 * m * k * n


def attention_flops(pairs: Any, heads: Any, dk: Any, dv: Any) -> Any:
    """Scores QK^T (2 dk per pair) and the weighted sum PV (2 dv per pair), per head: 2 pairs heads (dk + dv)."""
    return 2 * pairs * heads * (dk + dv)


def aligned_causal_pairs(queries: Any, keys: Any) -> Any:
    """Visible (query, key) pairs when the last query sees every key (a prefill continuing a KV cache).

    ``causal_pairs(q, k, offset=k - q)`` for q <= k in closed form (works on arrays):
    query i sees k - q + i + 1 keys, summed over i: q k - q (q - 1) / 2.
    """
    return queries * keys - queries * (queries - 1) / 2


def traffic(inputs: Sequence[T], outputs: Sequence[T]) -> tuple[float, float]:
    """Compulsory traffic: (bytes read, bytes written)."""
    return float(sum(t.nbytes for t in inputs)), float(sum(t.nbytes for t in outputs))


def _cost(kind: str, flops: float, inputs: Sequence[T], outputs: Sequence[T]) -> Cost:
    r, w = traffic(inputs, outputs)
    return Cost(kind, float(flops), r, w)


@formula("matmul")
def matmul(inputs: list[T], outputs: list[T], k: int | None = None) -> Cost:
    """A @ B (batched, broadcasting; an optional bias input adds bytes only): 2 * numel(out) * K."""
    if k is None:
        k = inputs[0].shape[-1]
    return _cost("matmul", 2 * outputs[0].numel * k, inputs, outputs)


@formula("conv")
def conv(inputs: list[T], outputs: list[T], transposed: bool = False) -> Cost:
    """Convolution, any groups/stride/dilation/padding: 2 * N * spatial * prod(weight shape).

    ``spatial`` is the output's spatial size (the input's for a transposed conv),
    as in torch.utils.flop_counter.conv_flop_count.
    """
    x, w, y = inputs[0], inputs[1], outputs[0]
    spatial = math.prod((x.shape if transposed else y.shape)[2:])
    return _cost("conv", 2 * x.shape[0] * spatial * math.prod(w.shape), inputs, outputs)


def causal_pairs(queries: int, keys: int, offset: int = 0) -> int:
    """Unmasked (query, key) pairs of a causal mask: key j visible to query i when j <= i + offset.

    offset 0 is torch's ``is_causal`` (top-left aligned); ``keys - queries`` aligns
    the last query with the last key (a prefill continuing a KV cache).
    """
    # sum over i of min(keys, max(0, i + 1 + offset))
    total = 0
    first_full = max(0, keys - offset - 1)  # queries i >= first_full see all keys
    partial = min(queries, first_full)
    lo = max(0, -offset)  # queries below lo see nothing
    if partial > lo:
        a, b = lo + 1 + offset, partial + offset  # arithmetic series of visible counts
        total += (a + b) * (partial - lo) // 2
    total += max(0, queries - max(partial, lo)) * keys
    return int(total)


@formula("attention")
def attention(inputs: list[T], outputs: list[T], causal: bool = False, causal_offset: int = 0,
              seq_first: bool = False) -> Cost:
    """Fused scaled-dot-product attention: QK^T (2*L*S*E) and PV (2*L*S*Ev) per batch x head.

    Shapes are (..., heads, L, E) (SDPA's layout), or (batch, L, heads, E) with
    ``seq_first`` (the flash/efficient kernels' layout).  Heads are the query's
    (GQA shares K/V across them).  Causal masking counts only the unmasked pairs
    (about half of L*S).  Bytes: q, k, v (and mask) read, output written; no
    L x S tensor touches memory.
    """
    q, k, v = inputs[0], inputs[1], inputs[2]
    if seq_first:
        heads = math.prod(q.shape[:-3]) * q.shape[-2]
        L, E, S, Ev = q.shape[-3], q.shape[-1], k.shape[-3], v.shape[-1]
    else:
        heads = math.prod(q.shape[:-2])
        L, E, S, Ev = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
    pairs = causal_pairs(L, S, causal_offset) if causal else L * S
    return _cost("attention", 2 * heads * pairs * (E + Ev), inputs, outputs)


@formula("elementwise")
def elementwise(inputs: list[T], outputs: list[T], op: str = "add") -> Cost:
    """Per-element FLOPs from :data:`ELEMENTWISE_FLOPS` times the output size."""
    return _cost("elementwise", ELEMENTWISE_FLOPS[op] * outputs[0].numel, inputs, outputs)


@formula("norm")
def norm(inputs: list[T], outputs: list[T], norm: str = "layer", affine: str = "") -> Cost:
    """Normalisation: :data:`NORM_FLOPS` (+ affine) per input element."""
    per = NORM_FLOPS[norm] + NORM_AFFINE_FLOPS.get(affine, 0)
    return _cost("norm", per * inputs[0].numel, inputs, outputs)


@formula("softmax", torch=_aten("_softmax _log_softmax _safe_softmax softmax log_softmax"),
         onnx=["Softmax", "LogSoftmax", "Hardmax"])
def softmax(inputs: list[T], outputs: list[T]) -> Cost:
    """Softmax (or log-softmax): 5 FLOPs per element."""
    return _cost("softmax", SOFTMAX_FLOPS * inputs[0].numel, inputs, outputs)


@formula("reduction", torch=_aten("""sum mean amax amin max min prod var std var_mean std_mean linalg_vector_norm norm
                                    argmax argmin cumsum cumprod logsumexp all any count_nonzero aminmax nansum topk
                                    histc bincount"""),
         onnx=["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
               "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "CumSum", "TopK"])
def reduction(inputs: list[T], outputs: list[T]) -> Cost:
    """Sum/mean/max/...: one FLOP per input element."""
    return _cost("reduction", inputs[0].numel, inputs, outputs)


@formula("pool")
def pool(inputs: list[T], outputs: list[T], kernel: Sequence[int] = ()) -> Cost:
    """Max/avg pooling: prod(kernel) FLOPs per output element (adaptive/global: one per input element)."""
    if kernel:
        return _cost("reduction", math.prod(kernel) * outputs[0].numel, inputs, outputs)
    return _cost("reduction", inputs[0].numel, inputs, outputs)


@formula("interpolate")
def interpolate(inputs: list[T], outputs: list[T], mode: str = "nearest") -> Cost:
    """Resize: :data:`INTERPOLATE_FLOPS` per output element."""
    return _cost("elementwise", INTERPOLATE_FLOPS[mode] * outputs[0].numel, inputs, outputs)


# -- the ops that move data: 0 FLOPs (their targets declared here, the frontends' tables take them in) ------
#: aten ops costed as :func:`memory`: copies, concatenation, padding, fills, scatters, random fills.
_ATEN_MOVE = """
clone _to_copy copy_ contiguous cat stack index_put index_put_ _index_put_impl_
scatter scatter_ scatter_add scatter_add_ scatter_reduce masked_scatter index_add index_add_ index_copy index_copy_
index_fill index_fill_ repeat repeat_interleave tril triu tril_ triu_ flip roll constant_pad_nd reflection_pad1d
reflection_pad2d reflection_pad3d replication_pad1d replication_pad2d replication_pad3d zeros ones full zeros_like
ones_like full_like fill fill_ zero_ arange linspace scalar_tensor new_zeros new_ones new_full lift_fresh_copy
select_scatter slice_scatter diagonal_scatter as_strided_scatter embedding_dense_backward
max_pool2d_with_indices_backward max_pool3d_with_indices_backward _pdist_forward rand randn randint rand_like
randn_like randint_like bernoulli bernoulli_ uniform_ normal_ masked_select nonzero"""
#: ONNX op types costed as :func:`memory`.
_ONNX_MOVE = ["Transpose", "Concat", "Cast", "CastLike", "Expand", "Tile", "Pad", "Split", "ScatterND",
              "ScatterElements", "Scatter", "DepthToSpace", "SpaceToDepth", "ReverseSequence", "Compress", "OneHot",
              "NonZero", "Range", "EyeLike", "Trilu", "ConstantOfShape", "Unique", "MaxUnpool", "RandomNormal",
              "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli", "CenterCropPad", "Col2Im",
              "DynamicQuantizeLinear"]


@formula("embedding", torch=_aten("embedding embedding_bag _embedding_bag"))
def embedding(inputs: list[T], outputs: list[T]) -> Cost:
    """Row gather: 0 FLOPs; reads the indices and only the rows gathered, writes the output.

    inputs = [table (V, D), indices]; bytes read = numel(indices) * D * itemsize + indices.
    """
    idx = inputs[1]
    return Cost("embedding", 0.0, _rows_read(inputs, outputs) + idx.nbytes, traffic([], outputs)[1])


def _rows_read(inputs: list[T], outputs: list[T]) -> float:
    """Bytes an embedding reads from its table (V, D): the rows its indices pick."""
    table, idx = inputs[0], inputs[1]
    return float(idx.numel * math.prod(table.shape[1:]) * table.itemsize)


@formula("slice", onnx=["Slice"])
def slice_(inputs: list[T], outputs: list[T]) -> Cost:
    """Slice: 0 FLOPs; reads only the elements it keeps (numel of each output x input 0's itemsize)."""
    read = sum(t.numel * inputs[0].itemsize for t in outputs)
    return Cost("memory", 0.0, float(read), traffic([], outputs)[1])


@formula("gather", torch=_aten("index _unsafe_index index_select gather take _unsafe_masked_index"),
         onnx=["GatherElements", "GatherND"])
def gather(inputs: list[T], outputs: list[T]) -> Cost:
    """Index/gather: 0 FLOPs; reads the index tensors and at most one source element per output element.

    inputs = [source, *indices].  A gather of 5 rows from a (100, 8) fp32 table with int64
    indices reads 5 * 8 * 4 + 5 * 8 = 200 bytes, not the whole 3,200-byte table.
    """
    read = _picked(inputs, outputs) + sum(t.nbytes for t in inputs[1:])
    return Cost("memory", 0.0, float(read), traffic([], outputs)[1])


def _picked(inputs: list[T], outputs: list[T]) -> float:
    """Bytes a gather reads from its source: at most one element per output element."""
    return float(min(inputs[0].nbytes, outputs[0].numel * inputs[0].itemsize))


@formula("memory", torch=_aten(_ATEN_MOVE), onnx=_ONNX_MOVE)
def memory(inputs: list[T], outputs: list[T]) -> Cost:
    """Copies, concatenation, casts, gathers: 0 FLOPs, compulsory bytes."""
    return _cost("memory", 0.0, inputs, outputs)


@formula("lrn")
def lrn(inputs: list[T], outputs: list[T], size: int = 5) -> Cost:
    """Local response normalisation across ``size`` channels: (size + 5) FLOPs per element.

    square each input (1), sum ``size`` squared neighbours (size), bias + alpha/size * sum (2),
    raise to beta (1), divide the input by it (1).
    """
    return _cost("norm", (size + 5) * inputs[0].numel, inputs, outputs)


# -- recurrent, quantisation and fused-norm formulas (the ONNX frontend) ---
@formula("rnn")
def rnn(inputs: list[T], outputs: list[T], gates: int = 1, hidden: int = 0, directions: int = 1,
        batch_first: bool = False) -> Cost:
    """RNN/GRU/LSTM: 2 * seq * batch * directions * gates * hidden * (features + hidden).

    Per step and direction, ``gates`` x ``hidden`` outputs from (features + hidden) inputs;
    input 0 is (seq, batch, features), or (batch, seq, features) with ``batch_first``.
    """
    seq, batch, features = inputs[0].shape[0], inputs[0].shape[1], inputs[0].shape[2]
    if batch_first:
        batch, seq = seq, batch
    return _cost("matmul", 2 * seq * batch * directions * gates * hidden * (features + hidden), inputs, outputs)


@formula("qkv_attention")
def qkv_attention(inputs: list[T], outputs: list[T], heads: int = 1, causal: bool = False) -> Cost:
    """QKV projection plus fused self-attention: 2 * B * S * D * 3H + attention on (B, heads, S, H / heads).

    inputs = [x (B, S, D), weights (D, 3H), ...] (onnxruntime's com.microsoft Attention).
    """
    x, w = inputs[0], inputs[1]
    b, s = x.shape[0], x.shape[1]
    q = T((b, heads, s, w.shape[1] // 3 // heads), x.itemsize)
    proj = 2 * b * s * x.shape[2] * w.shape[1]
    return _cost("attention", proj + attention([q, q, q], [q], causal=causal).flops, inputs, outputs)


@formula("einsum")
def einsum(inputs: list[T], outputs: list[T], contracted: int = 1) -> Cost:
    """Einsum: 2 * numel(out) * contracted for a product of 2+ operands, else max(contracted, 1) per element.

    ``contracted`` is the product of the sizes of the indices absent from the output.
    """
    if len(inputs) > 1 and contracted > 1:
        return matmul(inputs, outputs, k=contracted)
    return _cost("elementwise", max(contracted, 1) * outputs[0].numel, inputs, outputs)


@formula("variadic")
def variadic(inputs: list[T], outputs: list[T], extra: int = 0) -> Cost:
    """Sum/Max/Min/Mean of n inputs: (n - 1 + extra) FLOPs per output element (Mean's divide: extra 1)."""
    return _cost("elementwise", (max(len(inputs) - 1, 0) + extra) * outputs[0].numel, inputs, outputs)


@formula("softsign", onnx=["Softsign"])
def softsign(inputs: list[T], outputs: list[T]) -> Cost:
    """x / (1 + |x|): 3 FLOPs per output element (abs, add 1, divide)."""
    return _cost("elementwise", 3 * outputs[0].numel, inputs, outputs)


@formula("quick_gelu", onnx=["com.microsoft.QuickGelu"])
def quick_gelu(inputs: list[T], outputs: list[T]) -> Cost:
    """x * sigmoid(1.702 x): 8 FLOPs per output element (two sigmoid-sized steps, 2 * 4)."""
    return _cost("elementwise", 2 * ELEMENTWISE_FLOPS["sigmoid"] * outputs[0].numel, inputs, outputs)


@formula("quantize_linear", onnx=["QuantizeLinear"])
def quantize_linear(inputs: list[T], outputs: list[T]) -> Cost:
    """Quantize: 5 FLOPs per output element (divide by the scale, round, add the zero point, saturate: 2)."""
    return _cost("elementwise", 5 * outputs[0].numel, inputs, outputs)


@formula("dequantize_linear", onnx=["DequantizeLinear"])
def dequantize_linear(inputs: list[T], outputs: list[T]) -> Cost:
    """Dequantize: 2 FLOPs per output element (subtract the zero point, multiply by the scale)."""
    return _cost("elementwise", 2 * outputs[0].numel, inputs, outputs)


@formula("skip_norm")
def skip_norm(inputs: list[T], outputs: list[T], norm: str = "layer", affine: str = "") -> Cost:
    """Residual add + normalisation: NORM_FLOPS[norm] + 1 per learned scale / shift + 1 per element of input 0."""
    per = NORM_FLOPS[norm] + NORM_AFFINE_FLOPS.get(affine, 0) + 1
    return _cost("norm", per * inputs[0].numel, inputs, outputs)


#: Formulas that read only part of input 0 (gathers): bytes read from it.
SOURCE_READ: dict[str, Callable[[list[T], list[T]], float]] = {"embedding": _rows_read, "gather": _picked}


# -- collectives ------------------------------------------------------------------------------------
#: nccl-tests' bus-bandwidth factors (NVIDIA nccl-tests, doc/PERFORMANCE.md): bytes each rank sends over its
#: link per message byte, for ``n`` ranks.  The message is the whole buffer: all-reduce's input, all-gather's
#: output, reduce-scatter's input, all-to-all's input.  Keys are torch.distributed's collective names as the
#: profiler records them (``record_param_comms``'s "Collective name").
BUS_FACTORS: dict[str, Callable[[int], float]] = {
    **dict.fromkeys(("allreduce", "all_reduce", "allreduce_coalesced", "all_reduce_coalesced"),
                    lambda n: 2 * (n - 1) / n),
    **dict.fromkeys(("allgather", "all_gather", "_allgather_base", "allgather_into_tensor_coalesced",
                     "all_gather_into_tensor", "reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor",
                     "reduce_scatter_tensor_coalesced", "alltoall", "all_to_all", "alltoall_base",
                     "all_to_all_single"), lambda n: (n - 1) / n),
    **dict.fromkeys(("broadcast", "reduce", "send", "recv", "recvAnySource", "gather", "scatter"), lambda n: 1.0),
}
#: FLOPs per message element that a reduction adds on each rank (ring reduce-scatter: (n-1)/n of the message).
REDUCING = frozenset({"allreduce", "all_reduce", "allreduce_coalesced", "all_reduce_coalesced", "reduce_scatter",
                      "_reduce_scatter_base", "reduce_scatter_tensor", "reduce_scatter_tensor_coalesced", "reduce"})
#: Element sizes of the dtype names torch.distributed records (c10::ScalarType names).
COMMS_DTYPE_BYTES = {"Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Long": 8, "Int": 4, "Short": 2, "Char": 1,
                     "Byte": 1, "Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1, "ComplexFloat": 8}


def collective(name: str, message_bytes: float, ranks: int, element_bytes: float = 4) -> Cost:
    """One rank's share of a collective over ``ranks`` ranks: link bytes = message bytes x bus factor
    (:data:`BUS_FACTORS`; 1 for a collective not listed), and the additions of a reducing one.

    >>> c = collective("allreduce", 8e6, 4)   # 2 * (4 - 1) / 4 = 1.5 link bytes per message byte
    >>> c.bytes_read, c.flops                 # adds: (4 - 1) / 4 of the 2e6 fp32 elements
    (12000000.0, 1500000.0)
    """
    n = max(1, int(ranks))
    factor = BUS_FACTORS.get(name, lambda n: 1.0)(n) if n > 1 else 0.0
    adds = (n - 1) / n * message_bytes / element_bytes if name in REDUCING else 0.0
    return Cost("collective", ELEMENTWISE_FLOPS["add"] * adds, factor * message_bytes, 0.0)


# -- op tables and user formulas ------------------------------------------------------------------
#: (frontend, op) -> a user's formula; looked up before the frontend's own table.
USER_FORMULAS: dict[tuple[str, str], Formula] = {}


def register_op(frontend: str, op: str, fn: Formula, *, override: bool = False) -> None:
    """Give ``op`` a cost formula ``fn(inputs: list[T], outputs: list[T]) -> Cost``, or replace a built-in one.

    ``frontend`` is 'torch' (``op`` as torch names the overload packet: 'aten.mm', 'mylib.fused_mlp') or
    'onnx' (the node's op type, with its domain when not the default one: 'Gemm', 'com.me.FusedMLP').
    Replacing a formula the frontend already has needs ``override=True``; :func:`unregister_op` undoes it.
    (What the frontend has is its registered table, :func:`builtin_ops`: known once the frontend is imported,
    as ``roofline.from_torch`` / ``roofline.from_onnx`` do.)
    The function receives the op's tensor inputs and outputs as :class:`T` (shape, bytes per element).
    """
    if frontend not in FRONTENDS:
        raise ValueError(f"frontend {frontend!r} is not one of {', '.join(FRONTENDS)}")
    if not callable(fn):
        raise TypeError(f"the formula for {op!r} is not callable")
    if not override and ((frontend, op) in USER_FORMULAS or op in _TABLES.get(frontend, {})
                         or op in TARGETS[frontend]):
        raise ValueError(f"{frontend} op {op!r} already has a cost formula; pass override=True to replace it")
    if not override and frontend not in _TABLES:
        _UNCHECKED.add((frontend, op))  # checked against the frontend's table when it registers
    else:
        _UNCHECKED.discard((frontend, op))
    USER_FORMULAS[(frontend, op)] = fn


def apply_user(frontend: str, op: str, fn: Formula, inputs: list[T], outputs: list[T]) -> Cost:
    """A user's formula applied to an op's tensors; anything but a :class:`Cost` back is one clear error."""
    from roofline.core.errors import RooflineError

    c = fn(inputs, outputs)
    if not isinstance(c, Cost):
        raise RooflineError(f"the cost formula registered for {frontend} op {op} returned {type(c).__name__}, "
                            "not a roofline.work.costs.Cost")
    return c


def unregister_op(frontend: str, op: str) -> None:
    """Remove a formula given by :func:`register_op` (the built-in one, if any, applies again)."""
    USER_FORMULAS.pop((frontend, op), None)
    _UNCHECKED.discard((frontend, op))


#: user formulas given without override=True before their frontend's table was registered: a duplicate of a
#: built-in formula among them is the same error, raised when the table arrives
_UNCHECKED: set[tuple[str, str]] = set()


def register_table(frontend: str, table: dict[str, OpRule]) -> None:
    """Record the op table ``frontend`` ships (``roofline.frontends.torch`` and ``roofline.frontends.onnx`` call
    this when imported; ``roofline ops`` imports both first), completed with the ops the formulas declared
    (:data:`TARGETS`, after the table's own rows; a formula registered later adds its ops then).  An op both in
    the table and declared, or a second, different table, is an error."""
    if frontend not in FRONTENDS:
        raise ValueError(f"frontend {frontend!r} is not one of {', '.join(FRONTENDS)}")
    if frontend not in _TABLES:
        both = [op for op in TARGETS[frontend] if op in table and table[op] is not TARGETS[frontend][op]]
        if both:
            raise ValueError(f"{frontend} op {both[0]!r} is in the frontend's table and declared by formula "
                             f"{TARGETS[frontend][both[0]].formula!r}")
        table.update(TARGETS[frontend])
    clash = sorted(op for f, op in _UNCHECKED if f == frontend and op in table)
    if clash:
        for op in clash:  # undone, so the frontend (and its built-in formulas) can still be imported after the error
            USER_FORMULAS.pop((frontend, op), None)
            _UNCHECKED.discard((frontend, op))
        raise ValueError(f"{frontend} op {clash[0]!r} already has a cost formula; pass override=True to replace it "
                         "(it was registered before the frontend was imported, and has been removed)")
    known = _TABLES.setdefault(frontend, table)
    if known is not table:
        raise ValueError(f"the {frontend} frontend's op table is registered twice")
    _UNCHECKED.difference_update({(f, op) for f, op in _UNCHECKED if f == frontend})


def builtin_ops(frontend: str) -> dict[str, OpRule]:
    """The op table a frontend ships: op name -> :class:`OpRule` (registered when the frontend is imported:
    ``roofline.from_torch`` / ``roofline.from_onnx`` import theirs)."""
    table = _TABLES.get(frontend)
    if table is None:
        if frontend not in FRONTENDS:
            raise ValueError(f"frontend {frontend!r} is not one of {', '.join(FRONTENDS)}")
        raise LookupError(f"the {frontend} frontend's op table is registered when roofline.frontends.{frontend} "
                          "is imported, and it is not yet")
    return table
