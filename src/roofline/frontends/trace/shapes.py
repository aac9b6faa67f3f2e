"""Closed-form outputs of the common aten calls a trace records: what the meta route computes, without it.

:mod:`.replay` rebuilds a recorded call on meta tensors and runs the op to learn its outputs; about 150-1,100 us
a call (measured here on torch 2.13: mm 170 us, addmm 820 us, native_layer_norm 1,300 us, fused rms_norm
1,100 us), so a trace of 250,000 distinct shapes took past a minute.  For the overloads in :data:`RULES` the
output shapes and dtypes follow from the input shapes in closed form (the meta kernels' own rules: broadcasting,
``2 * M * K * N``'s M and N, a convolution's output size, the ``logsumexp`` of a fused attention kernel...);
:class:`ClosedForm` computes them on :class:`Recorded` tensors (a shape, strides and a dtype, no storage) and
the call is then costed by the same code as the meta route (``Recorder.cost_of``, ``fused_call``: the FLOP and
byte formulas stay in :mod:`roofline.work.costs` and ``torch.utils.flop_counter``).  Anything a rule is not sure
of (a dtype it does not promote, a shape the kernel may refuse, an empty tensor) raises :class:`Unknown` and the
call goes to the meta route.  tests/test_trace_shapes.py checks the two routes on 2,000 random calls.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

#: the largest storage (bytes) a recorded tensor may span here; past it the meta route says what torch says
MAX_BYTES = 2**62


class Unknown(Exception):
    """The closed form cannot say what the call returns: the meta route rebuilds it."""


class Recorded:
    """A recorded tensor as the cost code reads one: shape, strides, dtype (a ``torch.dtype``), and no storage.

    It iterates and indexes as its shape, as ``torch.Size`` does: ``torch.utils.flop_counter``'s formulas receive
    whatever is not a ``torch.Tensor`` unchanged and unpack it as a shape (``m, k = a_shape``).
    """

    __slots__ = ("shape", "strides", "dtype", "layout")

    def __init__(self, shape: tuple[int, ...], dtype: Any, layout: Any, strides: tuple[int, ...] | None = None
                 ) -> None:
        self.shape = shape
        self.dtype = dtype
        self.layout = layout
        self.strides = strides if strides is not None else contiguous(shape)

    def dim(self) -> int:
        return len(self.shape)

    def size(self, i: int) -> int:
        return self.shape[i]

    def element_size(self) -> int:
        return int(self.dtype.itemsize)

    def stride(self) -> tuple[int, ...]:
        return self.strides

    def numel(self) -> int:
        return math.prod(self.shape)

    def untyped_storage(self) -> Any:
        raise NotImplementedError("a recorded tensor has no storage")

    def __iter__(self) -> Iterator[int]:
        return iter(self.shape)

    def __len__(self) -> int:
        return len(self.shape)

    def __getitem__(self, i: Any) -> Any:
        return self.shape[i]

    def __repr__(self) -> str:
        return f"Recorded({list(self.shape)}, {self.dtype})"


def contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides of ``shape`` (as ``torch.empty`` gives)."""
    out = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        out[i] = out[i + 1] * max(shape[i + 1], 1)
    return tuple(out)


def broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast of ``shapes`` (numpy's rules); :class:`Unknown` when they do not broadcast."""
    n = max(len(s) for s in shapes)
    out = [1] * n
    for s in shapes:
        for i, d in enumerate(s, n - len(s)):
            if d != 1:
                if out[i] not in (1, d):
                    raise Unknown("shapes do not broadcast")
                out[i] = d
    return tuple(out)


def _dim(d: Any, rank: int) -> int:
    """A dimension argument wrapped into 0 .. rank - 1 (:class:`Unknown` when out of range)."""
    if not isinstance(d, int) or isinstance(d, bool) or not -max(rank, 1) <= d < max(rank, 1):
        raise Unknown("dimension out of range")
    return d % max(rank, 1)


def _ints(v: Any, n: int | None = None) -> list[int]:
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v) \
            or (n is not None and len(v) != n):
        raise Unknown("not a list of sizes")
    return list(v)


Rule = Callable[["ClosedForm", dict[str, Any]], Any]
#: str(OpOverload) ('aten.mm.default') -> the rule giving its output(s) from its bound arguments
RULES: dict[str, Rule] = {}


def rule(*overloads: str) -> Callable[[Rule], Rule]:
    """Register a rule for aten overloads given as 'packet.overload' ('mm.default'); once each."""
    def register(fn: Rule) -> Rule:
        for o in overloads:
            key = f"aten.{o}"
            if key in RULES:
                raise ValueError(f"closed-form rule for {key} registered twice")
            RULES[key] = fn
        return fn
    return register


class ClosedForm:
    """The outputs of recorded calls in closed form (:data:`RULES`), with the dtype rules of ``torch``."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.strided = torch.strided
        self.floating = frozenset({torch.float16, torch.bfloat16, torch.float32, torch.float64})
        self.index = frozenset({torch.int64, torch.int32})
        self._promoted: dict[tuple[Any, ...], Any] = {}
        self._bound: dict[Any, tuple[Rule | None, list[tuple[str, Callable[[Any], bool], bool]]]] = {}

    def tensor(self, shape: tuple[int, ...], dtype: Any, strides: tuple[int, ...] | None = None) -> Recorded:
        """A recorded tensor (``strides`` of the shape's length, or None: contiguous); :class:`Unknown` for one
        whose storage torch may refuse (negative strides, past :data:`MAX_BYTES`)."""
        size = dtype.itemsize
        if strides is None:
            if math.prod(shape) * size >= MAX_BYTES:
                raise Unknown("a tensor past the storage torch can address")
            return Recorded(shape, dtype, self.strided, contiguous(shape))
        span = 1
        for d, s in zip(shape, strides, strict=True):
            if s < 0:
                raise Unknown("negative strides")
            if d:
                span += (d - 1) * s
        if span * size >= MAX_BYTES or math.prod(shape) * size >= MAX_BYTES:
            raise Unknown("a tensor past the storage torch can address")
        return Recorded(shape, dtype, self.strided, strides)

    def out(self, shape: tuple[int, ...], dtype: Any) -> Recorded:
        return self.tensor(tuple(shape), dtype)

    def outputs(self, op: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """The output(s) of overload ``op`` (an OpOverload) called with ``args`` and ``kwargs``; :class:`Unknown`
        where no rule covers the call, or an argument is not of the type its schema says (a value the kernel
        may refuse is left to the meta route, which tries the next overload)."""
        got = self._bound.get(op)
        if got is None:
            fn = RULES.get(str(op))
            got = self._bound[op] = (fn, [_kind(a) for a in op._schema.arguments] if fn else [])
        fn, kinds = got
        if fn is None:
            raise Unknown("no closed form")
        bound = {}
        for (name, check, optional), v in zip(kinds, [*args, *kwargs.values()], strict=True):
            if not (v is None and optional or check(v)):
                raise Unknown(f"argument {name} of a type the rule does not take")
            if type(v) is Recorded and 0 in v.shape:
                raise Unknown("an empty tensor")  # kernels treat them apart (cat skips 1-D ones, amax refuses)
            bound[name] = v
        return fn(self, bound)

    def float_(self, *ts: Any) -> None:
        """:class:`Unknown` unless each tensor is floating (fp16, bf16, fp32, fp64): the rules promote those only."""
        for t in ts:
            if not isinstance(t, Recorded) or t.dtype not in self.floating:
                raise Unknown("not a floating-point tensor")

    def same(self, *ts: Any) -> Any:
        """The one dtype of ``ts`` (tensors or None), floating; :class:`Unknown` when they differ."""
        ts = tuple(t for t in ts if t is not None)
        self.float_(*ts)
        if any(t.dtype != ts[0].dtype for t in ts):
            raise Unknown("mixed dtypes")
        return ts[0].dtype

    def promote(self, x: Any, y: Any) -> Any:
        """``torch.result_type`` of two tensors or numbers (0-dim tensors and numbers rank below dimensioned
        tensors), on cached one-element meta tensors."""
        key = tuple((v.dtype, len(v.shape) == 0) if isinstance(v, Recorded) else type(v) for v in (x, y))
        got = self._promoted.get(key)
        if got is None:
            torch = self.torch
            args = [torch.empty(() if v.shape == () else (1,), dtype=v.dtype, device="meta")
                    if isinstance(v, Recorded) else v for v in (x, y)]
            got = self._promoted[key] = torch.result_type(*args)
        return got


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and (not isinstance(v, int) or abs(v) < 2**63)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2**63


#: schema type (as ``str(argument.type)`` writes it, less ``Optional[...]``) -> the values a rule takes for it
_CHECKS: dict[str, Callable[[Any], bool]] = {
    "Tensor": lambda v: isinstance(v, Recorded),
    "List[Tensor]": lambda v: isinstance(v, list) and all(isinstance(x, Recorded) for x in v),
    "bool": lambda v: isinstance(v, bool),
    "int": _int,
    "float": lambda v: _number(v) and not isinstance(v, bool),
    "number": _number,
    "List[int]": lambda v: isinstance(v, (list, tuple)) and all(_int(x) for x in v),
    "str": lambda v: isinstance(v, str),
    "Device": lambda v: True,  # the replay gives every device argument the meta device
}


def schema_type(arg: Any) -> tuple[str, bool]:
    """(its type less ``Optional[...]``, whether optional) of a schema argument, as ``str(argument.type)`` writes it
    (slow: read once per overload)."""
    kind = str(arg.type)
    optional = kind.startswith("Optional[")
    return (kind[9:-1] if optional else kind), optional


def _kind(arg: Any) -> tuple[str, Callable[[Any], bool], bool]:
    """(name, check, optional) of a schema argument; a dtype (schema type ``int``) is a ``torch.dtype`` here."""
    inner, optional = schema_type(arg)
    if arg.name == "dtype":
        return arg.name, lambda v: type(v).__name__ == "dtype", optional
    return arg.name, _CHECKS.get(inner, lambda v: False), optional


# -- matmul ---------------------------------------------------------------------------------------------------
@rule("mm.default")
def _mm(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    x, y = a["self"], a["mat2"]
    dt = cf.same(x, y)
    if x.dim() != 2 or y.dim() != 2 or x.shape[1] != y.shape[0]:
        raise Unknown("not (m, k) @ (k, n)")
    return cf.out((x.shape[0], y.shape[1]), dt)


def _plus_product(cf: ClosedForm, a: dict[str, Any], out: Recorded, first: str) -> Recorded:
    """``beta * self + alpha * (first @ ...)``: the product ``out``, once ``self`` (of ``first``'s dtype)
    broadcasts to it and beta and alpha are numbers."""
    cf.same(a["self"], a[first])
    if not (_number(a["beta"]) and _number(a["alpha"])) or broadcast(a["self"].shape, out.shape) != out.shape:
        raise Unknown("input does not broadcast to the product")
    return out


@rule("addmm.default")
def _addmm(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    return _plus_product(cf, a, _mm(cf, {"self": a["mat1"], "mat2": a["mat2"]}), "mat1")


@rule("bmm.default")
def _bmm(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    x, y = a["self"], a["mat2"]
    dt = cf.same(x, y)
    if x.dim() != 3 or y.dim() != 3 or x.shape[0] != y.shape[0] or x.shape[2] != y.shape[1]:
        raise Unknown("not (b, m, k) @ (b, k, n)")
    return cf.out((x.shape[0], x.shape[1], y.shape[2]), dt)


@rule("baddbmm.default")
def _baddbmm(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    return _plus_product(cf, a, _bmm(cf, {"self": a["batch1"], "mat2": a["batch2"]}), "batch1")


# -- convolution ----------------------------------------------------------------------------------------------
@rule("convolution.default", "_convolution.default")
def _convolution(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    x, w, bias = a["input"], a["weight"], a["bias"]
    dt = cf.same(x, w, bias)
    nd = x.dim() - 2
    if nd not in (1, 2, 3) or w.dim() != x.dim() or not isinstance(a["transposed"], bool):
        raise Unknown("not a 1-3-D convolution")
    stride, pad, dil, opad = (_ints(a[k], nd) for k in ("stride", "padding", "dilation", "output_padding"))
    groups, transposed = a["groups"], a["transposed"]
    if not isinstance(groups, int) or groups < 1 or min(stride) < 1 or min(dil) < 1 or min(pad) < 0 \
            or min(opad) < 0:
        raise Unknown("convolution arguments out of range")
    kernel = w.shape[2:]
    if transposed:
        cout = w.shape[1] * groups
        ok = x.shape[1] == w.shape[0] and w.shape[0] % groups == 0 \
            and all(o < s or o < d for o, s, d in zip(opad, stride, dil, strict=True))
        spatial = [(i - 1) * s - 2 * p + d * (k - 1) + o + 1
                   for i, s, p, d, k, o in zip(x.shape[2:], stride, pad, dil, kernel, opad, strict=True)]
    else:
        cout = w.shape[0]
        ok = x.shape[1] == w.shape[1] * groups and cout % groups == 0
        spatial = [(i + 2 * p - d * (k - 1) - 1) // s + 1
                   for i, s, p, d, k in zip(x.shape[2:], stride, pad, dil, kernel, strict=True)]
    if not ok or min(spatial) < 1 or (bias is not None and bias.shape != (cout,)):
        raise Unknown("convolution shapes do not agree")
    return cf.out((x.shape[0], cout, *spatial), dt)


# -- elementwise ----------------------------------------------------------------------------------------------
#: one-tensor ops that keep their input's shape and (floating) dtype; with their in-place forms
UNARY = """abs neg relu gelu silu exp exp2 expm1 log log2 log10 log1p tanh sigmoid rsqrt sqrt sin cos tan erf erfc
reciprocal hardswish hardsigmoid mish elu leaky_relu sign floor ceil trunc frac atan asin acos sinh cosh""".split()
_GELU = ("none", "tanh")


def _unary(cf: ClosedForm, a: dict[str, Any], inplace: bool) -> Recorded:
    x = a["self"]
    cf.float_(x)
    if "approximate" in a and a["approximate"] not in _GELU:
        raise Unknown("gelu approximation not known")
    return x if inplace else cf.out(x.shape, x.dtype)


for _name in UNARY:
    rule(f"{_name}.default")(lambda cf, a: _unary(cf, a, False))
    rule(f"{_name}_.default")(lambda cf, a: _unary(cf, a, True))

#: two-operand arithmetic (broadcast, promoted dtype) and comparisons (bool), by overload
ARITHMETIC = {"add": ("Tensor", "Scalar"), "sub": ("Tensor", "Scalar"), "mul": ("Tensor", "Scalar"),
              "div": ("Tensor", "Scalar", "Tensor_mode"), "rsub": ("Tensor",), "maximum": ("default",),
              "minimum": ("default",), "pow": ("Tensor_Tensor", "Tensor_Scalar")}
COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
_ROUNDING = (None, "trunc", "floor")


def _binary(cf: ClosedForm, a: dict[str, Any], inplace: bool, compare: bool) -> Recorded:
    x = a["self"]
    y = a.get("other", a.get("exponent"))
    cf.float_(x)
    if not isinstance(y, Recorded) and not (_number(y) and not isinstance(y, bool)):
        raise Unknown("not a number")
    if a.get("rounding_mode") not in _ROUNDING or ("alpha" in a and not _number(a["alpha"])):
        raise Unknown("an argument the kernel may refuse")
    dt = cf.promote(x, y)
    if dt not in cf.floating:
        raise Unknown("promoted past floating point")
    shape = broadcast(x.shape, y.shape) if isinstance(y, Recorded) else x.shape
    if inplace:
        if shape != x.shape:
            raise Unknown("an in-place result of another shape")
        return x
    return cf.out(shape, cf.torch.bool if compare else dt)


for _name, _overloads in ARITHMETIC.items():
    for _o in _overloads:
        rule(f"{_name}.{_o}")(lambda cf, a: _binary(cf, a, False, False))
        if _name in ("add", "sub", "mul", "div"):  # their in-place forms have the same overloads
            rule(f"{_name}_.{_o}")(lambda cf, a: _binary(cf, a, True, False))
for _name in COMPARE:
    rule(f"{_name}.Tensor", f"{_name}.Scalar")(lambda cf, a: _binary(cf, a, False, True))


@rule("where.self")
def _where(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    c, x, y = a["condition"], a["self"], a["other"]
    if c.dtype != cf.torch.bool:
        raise Unknown("condition not bool")
    cf.float_(x, y)
    return cf.out(broadcast(c.shape, x.shape, y.shape), cf.promote(x, y))


# -- reductions, softmax, norms -------------------------------------------------------------------------------
def _reduced(cf: ClosedForm, x: Recorded, dims: Any, keepdim: Any, dtype: Any) -> Recorded:
    cf.float_(x)
    if x.dim() == 0 or not isinstance(keepdim, bool) or (dtype is not None and dtype not in cf.floating):
        raise Unknown("a reduction the rule does not cover")
    picked = range(x.dim()) if dims is None or dims == [] else [_dim(d, x.dim()) for d in _ints(dims)]
    if len(set(picked)) != len(list(picked)):
        raise Unknown("a dimension twice")
    shape = tuple(1 if i in picked else d for i, d in enumerate(x.shape) if keepdim or i not in picked)
    return cf.out(shape, dtype or x.dtype)


@rule("sum.default")
def _sum(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    return _reduced(cf, a["self"], None, False, a["dtype"])


@rule("sum.dim_IntList", "mean.dim")
def _sum_dims(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    return _reduced(cf, a["self"], a["dim"], a["keepdim"], a["dtype"])


@rule("amax.default", "amin.default")
def _amax(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    return _reduced(cf, a["self"], a["dim"], a["keepdim"], None)


@rule("_softmax.default", "_log_softmax.default")
def _softmax(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    x = a["self"]
    cf.float_(x)
    _dim(a["dim"], x.dim())
    if a["half_to_float"] is not False:
        raise Unknown("half_to_float")
    return cf.out(x.shape, x.dtype)


def _normalized(cf: ClosedForm, x: Recorded, sizes: Any, *params: Any) -> tuple[int, ...]:
    """normalized_shape, checked against the input's last dimensions and the affine parameters'."""
    ns = tuple(_ints(sizes))
    cf.float_(x)
    if not ns or x.dim() < len(ns) or x.shape[x.dim() - len(ns):] != ns \
            or any(p is not None and (p.shape != ns or p.dtype not in cf.floating) for p in params):
        raise Unknown("normalized_shape does not match")
    return ns


@rule("native_layer_norm.default")
def _layer_norm(cf: ClosedForm, a: dict[str, Any]) -> tuple[Recorded, Recorded, Recorded]:
    x = a["input"]
    ns = _normalized(cf, x, a["normalized_shape"], a["weight"], a["bias"])
    if not _number(a["eps"]):
        raise Unknown("eps")
    stat = x.shape[:x.dim() - len(ns)] + (1,) * len(ns)
    acc = cf.torch.float32 if x.dtype in (cf.torch.float16, cf.torch.bfloat16) else x.dtype  # mean, rstd
    return cf.out(x.shape, x.dtype), cf.out(stat, acc), cf.out(stat, acc)


@rule("rms_norm.default")
def _rms_norm(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    """The fused op (``aten::rms_norm`` is recorded whole): the input's shape and dtype."""
    x = a["input"]
    _normalized(cf, x, a["normalized_shape"], a["weight"])
    if a["eps"] is not None and not _number(a["eps"]):
        raise Unknown("eps")
    return cf.out(x.shape, x.dtype)


# -- moving data: embedding, copies, cat, index ---------------------------------------------------------------
@rule("embedding.default")
def _embedding(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    w, idx = a["weight"], a["indices"]
    cf.float_(w)
    if w.dim() != 2 or idx.dtype not in cf.index:
        raise Unknown("not a (V, D) table and integer indices")
    return cf.out(idx.shape + w.shape[1:], w.dtype)


@rule("copy_.default")
def _copy(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    x, src = a["self"], a["src"]
    cf.float_(x, src)
    if broadcast(x.shape, src.shape) != x.shape or any(s == 0 and d > 1 for d, s in zip(x.shape, x.strides,
                                                                                          strict=True)):
        raise Unknown("source does not broadcast to the target, or an overlapping target")
    return x


@rule("_to_copy.default")
def _to_copy(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    x, dt = a["self"], a["dtype"]
    cf.float_(x)
    if (dt is not None and dt not in cf.floating) or a["layout"] is not None or a["memory_format"] is not None:
        raise Unknown("a conversion the rule does not cover")
    return cf.out(x.shape, dt or x.dtype)


@rule("clone.default")
def _clone(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    x = a["self"]
    cf.float_(x)
    if a["memory_format"] is not None:
        raise Unknown("memory format")
    return cf.out(x.shape, x.dtype)


@rule("cat.default")
def _cat(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    parts = a["tensors"]
    if not isinstance(parts, list) or not parts or not all(isinstance(p, Recorded) for p in parts):
        raise Unknown("not a tensor list")
    cf.same(*parts)
    rank = parts[0].dim()
    d = _dim(a["dim"], rank)
    if rank == 0 or any(p.dim() != rank or p.shape[:d] + p.shape[d + 1:] != parts[0].shape[:d] + parts[0].shape[d + 1:]
                        for p in parts):
        raise Unknown("parts do not agree")
    shape = list(parts[0].shape)
    shape[d] = sum(p.shape[d] for p in parts)
    return cf.out(tuple(shape), parts[0].dtype)


@rule("index_select.default")
def _index_select(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    x, idx = a["self"], a["index"]
    cf.float_(x)
    if x.dim() == 0 or idx.dim() != 1 or idx.dtype not in cf.index:
        raise Unknown("not a 1-D integer index")
    shape = list(x.shape)
    shape[_dim(a["dim"], x.dim())] = idx.shape[0]
    return cf.out(tuple(shape), x.dtype)


@rule("gather.default")
def _gather(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    x, idx = a["self"], a["index"]
    cf.float_(x)
    if x.dim() == 0 or idx.dim() != x.dim() or idx.dtype not in cf.index or not isinstance(a["sparse_grad"], bool):
        raise Unknown("not an index of the input's rank")
    _dim(a["dim"], x.dim())
    return cf.out(idx.shape, x.dtype)


# -- attention ------------------------------------------------------------------------------------------------
def _qkv(cf: ClosedForm, a: dict[str, Any], rank: int | None) -> tuple[Recorded, Recorded, Recorded]:
    q, k, v = a["query"], a["key"], a["value"]
    cf.same(q, k, v)
    if (rank is not None and q.dim() != rank) or q.dim() < 3 or k.dim() != q.dim() or v.dim() != q.dim():
        raise Unknown("query, key and value of another rank")
    if not _number(a.get("dropout_p", 0.0)) or not isinstance(a.get("is_causal", False), bool) \
            or a.get("scale") is not None and not _number(a["scale"]):
        raise Unknown("an argument the kernel may refuse")
    return q, k, v


@rule("scaled_dot_product_attention.default")
def _sdpa(cf: ClosedForm, a: dict[str, Any]) -> Recorded:
    """The fused op, run on meta as its math decomposition: softmax(q k^T + mask) v."""
    q, k, v = _qkv(cf, a, None)
    mask = a["attn_mask"]
    batch = q.shape[:-2]
    if k.shape[:-2] != batch or v.shape[:-2] != batch or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2] \
            or a["enable_gqa"] is not False:
        raise Unknown("query, key and value do not agree")
    if mask is not None:
        scores = (*batch, q.shape[-2], k.shape[-2])
        if a["is_causal"] or mask.dtype not in (q.dtype, cf.torch.bool) or broadcast(mask.shape, scores) != scores:
            raise Unknown("a mask the kernel may refuse")
    return cf.out((*batch, q.shape[-2], v.shape[-1]), q.dtype)


@rule("_scaled_dot_product_flash_attention_for_cpu.default")
def _flash_cpu(cf: ClosedForm, a: dict[str, Any]) -> tuple[Recorded, Recorded]:
    """torch's meta kernel: the output like the query; logsumexp (B, H, L) in the computation dtype."""
    q, _, _ = _qkv(cf, a, 4)
    if a["attn_mask"] is not None:
        raise Unknown("a mask")
    acc = cf.torch.float32 if q.dtype in (cf.torch.float16, cf.torch.bfloat16) else q.dtype
    return cf.out(q.shape, q.dtype), cf.out(q.shape[:3], acc)


@rule("_scaled_dot_product_efficient_attention.default")
def _efficient(cf: ClosedForm, a: dict[str, Any]) -> tuple[Recorded, ...]:
    """torch's meta kernel: output (B, H, L, Ev); logsumexp (B, H, L rounded up to 32, or 0) fp32; the philox
    seed and offset, one int64 each."""
    q, _, v = _qkv(cf, a, 4)
    if a["attn_bias"] is not None or not isinstance(a["compute_log_sumexp"], bool):
        raise Unknown("a bias")
    lse = (q.shape[0], q.shape[1], math.ceil(q.shape[2] / 32) * 32 if a["compute_log_sumexp"] else 0)
    long = cf.torch.int64
    return (cf.out((*q.shape[:3], v.shape[3]), q.dtype), cf.out(lse, cf.torch.float32), cf.out((), long),
            cf.out((), long))


@rule("_scaled_dot_product_flash_attention.default")
def _flash(cf: ClosedForm, a: dict[str, Any]) -> tuple[Any, ...]:
    """torch's meta kernel (CUDA builds): output like the query; logsumexp (B, H, L) fp32; the rng state (two
    uint64) and offset (one); an empty debug mask."""
    q, k, _ = _qkv(cf, a, 4)
    if a["return_debug_mask"] is not False:
        raise Unknown("a debug mask")
    u64 = cf.torch.uint64
    return (cf.out(q.shape, q.dtype), cf.out(q.shape[:3], cf.torch.float32), None, None, q.shape[2], k.shape[2],
            cf.out((2,), u64), cf.out((), u64), cf.out((0,), q.dtype))
