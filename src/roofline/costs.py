"""Per-op cost formulas: FLOPs and bytes as pure functions of tensor shapes.

One registry, filled by :func:`formula`; the PyTorch frontend (aten op ->
formula) and the ONNX frontend (op type -> formula) each keep a key table over
these same functions.  Registering a name twice is an error.

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

>>> from roofline.costs import T, cost
>>> c = cost("matmul", [T((128, 64), 2), T((64, 32), 2)], [T((128, 32), 2)])
>>> c.flops, c.bytes_read, c.bytes_written
(524288.0, 20480.0, 8192.0)
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
    """What one op costs: FLOPs, bytes read and written, op kind, unit."""

    kind: str
    flops: float
    bytes_read: float
    bytes_written: float

    @property
    def unit(self) -> str:
        return KIND_UNIT.get(self.kind, "vector")


Formula = Callable[..., Cost]
FORMULAS: dict[str, Formula] = {}


def formula(name: str) -> Callable[[Formula], Formula]:
    """Register a cost formula under ``name``; a second registration is an error."""

    def register(fn: Formula) -> Formula:
        if name in FORMULAS:
            raise ValueError(f"cost formula {name!r} is already registered")
        FORMULAS[name] = fn
        return fn

    return register


def cost(name: str, inputs: Sequence[T], outputs: Sequence[T], **attrs: Any) -> Cost:
    """Apply the formula ``name`` to tensors ``inputs`` -> ``outputs``."""
    return FORMULAS[name](list(inputs), list(outputs), **attrs)


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


@formula("softmax")
def softmax(inputs: list[T], outputs: list[T]) -> Cost:
    """Softmax (or log-softmax): 5 FLOPs per element."""
    return _cost("softmax", SOFTMAX_FLOPS * inputs[0].numel, inputs, outputs)


@formula("reduction")
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


@formula("embedding")
def embedding(inputs: list[T], outputs: list[T]) -> Cost:
    """Row gather: 0 FLOPs; reads the indices and only the rows gathered, writes the output.

    inputs = [table (V, D), indices]; bytes read = numel(indices) * D * itemsize + indices.
    """
    table, idx = inputs[0], inputs[1]
    row_bytes = math.prod(table.shape[1:]) * table.itemsize
    return Cost("embedding", 0.0, idx.numel * row_bytes + idx.nbytes, traffic([], outputs)[1])


@formula("gather")
def gather(inputs: list[T], outputs: list[T]) -> Cost:
    """Index/gather: 0 FLOPs; reads the index tensors and at most one source element per output element.

    inputs = [source, *indices].  A gather of 5 rows from a (100, 8) fp32 table with int64
    indices reads 5 * 8 * 4 + 5 * 8 = 200 bytes, not the whole 3,200-byte table.
    """
    src, out = inputs[0], outputs[0]
    read = min(src.nbytes, out.numel * src.itemsize) + sum(t.nbytes for t in inputs[1:])
    return Cost("memory", 0.0, float(read), traffic([], outputs)[1])


@formula("memory")
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
