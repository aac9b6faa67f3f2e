"""Random recorded aten calls, as torch.profiler writes them with ``record_shapes=True``, over the op groups the
closed-form route (:mod:`roofline.frontends.trace.shapes`) covers, and a trace file made of them.

The argument layouts are copied from a CPU trace recorded here with torch 2.13 (``aten::addmm``: types
``['float', 'float', 'float', 'Scalar', 'Scalar']``, concrete ``['', '', '', '1', '1']``; ``aten::cat``: a
``TensorList`` whose dims are a list of shapes; ``aten::_to_copy``'s dtype as a c10::ScalarType code, '5' for
half).  About one call in 30 is made invalid on purpose (inner dimensions that differ, shapes that do not
broadcast, a reduction over a dimension past the rank): the meta route refuses those, and the closed form must
leave them to it.  Used by tests/test_trace_shapes.py (the two routes cross-checked) and by
benchmarks/bench_trace_shapes.py (the 250,000-shape trace).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

FLOATS = ("float", "float", "c10::BFloat16", "c10::Half")  # fp32 twice as often
Call = tuple[str, dict[str, Any]]


def _contiguous(dims: list[int]) -> list[int]:
    out, acc = [], 1
    for d in reversed(dims):
        out.append(acc)
        acc *= max(d, 1)
    return out[::-1]


class _Args:
    """One call's recorded argument columns, filled argument by argument."""

    def __init__(self) -> None:
        self.types: list[Any] = []
        self.dims: list[Any] = []
        self.strides: list[Any] = []
        self.concrete: list[str] = []

    def tensor(self, dims: list[int], dtype: str = "float", strides: list[int] | None = None) -> _Args:
        self.types.append(dtype)
        self.dims.append(list(dims))
        self.strides.append(strides if strides is not None else _contiguous(dims))
        self.concrete.append("")
        return self

    def scalar(self, value: Any) -> _Args:
        self.types.append("ScalarList" if isinstance(value, list) else "Scalar")
        self.dims.append([])
        self.strides.append([])
        self.concrete.append(str(value))
        return self

    def none(self) -> _Args:
        self.types.append("")
        self.dims.append([])
        self.strides.append([])
        self.concrete.append("")
        return self

    def tensors(self, shapes: list[list[int]]) -> _Args:
        self.types.append("TensorList")
        self.dims.append([list(s) for s in shapes])
        self.strides.append([])
        self.concrete.append("")
        return self

    def call(self, name: str) -> Call:
        return f"aten::{name}", {"Input type": self.types, "Input Dims": self.dims, "Input Strides": self.strides,
                                 "Concrete Inputs": self.concrete}


class Draw:
    """Seeded draws of calls; ``big`` sizes go up to 4096 (distinct shapes for a large trace), else up to 64."""

    def __init__(self, seed: int, big: bool = False, bad: float = 1 / 30) -> None:
        self.r = random.Random(seed)
        self.top = 4096 if big else 64
        self.bad = bad

    def n(self, lo: int = 1) -> int:
        return self.r.randint(lo, self.top)

    def dt(self) -> str:
        return self.r.choice(FLOATS)

    def broken(self) -> bool:
        return self.r.random() < self.bad

    def other(self, d: int) -> int:
        """A size that is not ``d`` (an invalid call's mismatch)."""
        return d + self.r.randint(1, 7)

    def shape(self, lo: int = 1, hi: int = 4) -> list[int]:
        rank = self.r.randint(lo, hi)
        return [self.r.randint(1, 16) if i < rank - 2 else self.n() for i in range(rank)]

    def broadcast_partner(self, shape: list[int]) -> list[int]:
        """A shape that broadcasts with ``shape``: a suffix of it with some sizes 1."""
        k = self.r.randint(0, len(shape))
        out = [1 if self.r.random() < 0.3 else d for d in shape[len(shape) - k:]]
        if self.broken() and out:
            out[-1] = self.other(shape[-1]) if shape[-1] != 1 else 3
        return out

    # -- the op groups ---------------------------------------------------------------------------------
    def mm(self) -> Call:
        m, k, n = self.n(), self.n(), self.n()
        dt = self.dt()
        transposed = self.r.random() < 0.3  # a weight read through its transpose, as F.linear's mm records it
        b = _Args().tensor([m, k], dt)
        b.tensor([self.other(k) if self.broken() else k, n], dt, [1, k] if transposed else None)
        return b.call("mm")

    def addmm(self) -> Call:
        m, k, n = self.n(), self.n(), self.n()
        dt = self.dt()
        bias = self.r.choice([[n], [m, n], [1, n]])
        return (_Args().tensor(bias, dt).tensor([m, k], dt).tensor([self.other(k) if self.broken() else k, n], dt,
                                                                   [1, k]).scalar(1).scalar(1).call("addmm"))

    def bmm(self) -> Call:
        b, m, k, n = self.r.randint(1, 16), self.n(), self.n(), self.n()
        dt = self.dt()
        return _Args().tensor([b, m, k], dt).tensor([b, self.other(k) if self.broken() else k, n], dt).call("bmm")

    def baddbmm(self) -> Call:
        b, m, k, n = self.r.randint(1, 16), self.n(), self.n(), self.n()
        dt = self.dt()
        return (_Args().tensor(self.r.choice([[b, m, n], [1, m, n], [n]]), dt).tensor([b, m, k], dt)
                .tensor([b, self.other(k) if self.broken() else k, n], dt).scalar(self.r.choice([0, 1]))
                .scalar(1).call("baddbmm"))

    def matmul(self) -> Call:
        k = self.n()
        a, b = self.shape(1, 4), self.shape(1, 4)
        a[-1] = k
        b[-2 if len(b) > 1 else -1] = k
        dt = self.dt()
        return _Args().tensor(a, dt).tensor(b, dt).call("matmul")

    def linear(self) -> Call:
        x = self.shape(2, 3)
        o, dt = self.n(), self.dt()
        b = _Args().tensor(x, dt).tensor([o, x[-1]], dt)
        (b.tensor([o], dt) if self.r.random() < 0.5 else b.none())
        return b.call("linear")

    def conv(self) -> Call:
        nd = self.r.choice([1, 2, 2, 3])
        groups = self.r.choice([1, 1, 2])
        cin, cout = groups * self.r.randint(1, 16), groups * self.r.randint(1, 16)
        kernel = [self.r.randint(1, 3) for _ in range(nd)]
        stride = [self.r.randint(1, 2) for _ in range(nd)]
        pad = [self.r.randint(0, 1) for _ in range(nd)]
        dil = [self.r.randint(1, 2) for _ in range(nd)]
        spatial = [self.r.randint(1, 12 if nd == 3 else 40) for _ in range(nd)]
        transposed = self.r.random() < 0.25
        dt = self.dt()
        b = _Args().tensor([self.r.randint(1, 4), cin, *spatial], dt)
        b.tensor([cin, cout // groups, *kernel] if transposed else [cout, cin // groups, *kernel], dt)
        (b.tensor([cout], dt) if self.r.random() < 0.5 else b.none())
        b.scalar(stride).scalar(pad).scalar(dil)
        name = self.r.choice(["convolution", "convolution", "_convolution", "conv2d"])
        if name == "conv2d":  # composite: conv2d(input, weight, bias, stride, padding, dilation, groups)
            return b.scalar(groups).call("conv2d")
        b.scalar(transposed).scalar([self.r.randint(0, s - 1) for s in stride] if transposed else [0] * nd)
        b.scalar(groups)
        if name == "_convolution":
            b.scalar(False).scalar(False).scalar(True).scalar(True)
        return b.call(name)

    UNARY = ("relu", "gelu", "silu", "exp", "tanh", "sigmoid", "neg", "rsqrt", "sqrt", "abs", "relu_", "silu_",
             "sigmoid_", "exp_", "log", "sin", "reciprocal", "erf", "hardswish", "mish")

    def unary(self) -> Call:
        name = self.r.choice(self.UNARY)
        b = _Args().tensor(self.shape(1, 4), self.dt())
        if name == "gelu":
            b.none()  # approximate: a string, recorded as ''
        return b.call(name)

    BINARY = ("add", "sub", "mul", "div", "maximum", "minimum", "add_", "mul_", "sub_", "div_", "eq", "lt", "gt",
              "ne", "pow")

    def binary(self) -> Call:
        name = self.r.choice(self.BINARY)
        a = self.shape(1, 4)
        dt = self.dt()
        kind = self.r.random()
        b = _Args().tensor(a, dt)
        if kind < 0.2 and name not in ("maximum", "minimum"):  # a Python number
            b.scalar(self.r.choice([2, 0.5, -1, 3.0]))
        elif kind < 0.3:  # a 0-dim tensor of another dtype (a wrapped number as the profiler records it)
            b.tensor([], self.r.choice(["double", "long int", "float"]), [])
        else:
            other = list(a) if name.endswith("_") and self.r.random() < 0.5 else self.broadcast_partner(a)
            b.tensor(other, dt if self.r.random() < 0.8 else self.dt())
        if name.rstrip("_") in ("add", "sub"):  # alpha: add.Tensor's keyword, add.Scalar's third argument
            b.scalar(self.r.choice([1, 1, 2]))
        return b.call(name)

    def where(self) -> Call:
        a = self.shape(1, 4)
        dt = self.dt()
        return (_Args().tensor(self.broadcast_partner(a), "bool").tensor(a, dt)
                .tensor(self.broadcast_partner(a), dt).call("where"))

    REDUCE = ("sum", "mean", "amax", "amin")

    def reduction(self) -> Call:
        name = self.r.choice(self.REDUCE)
        a = self.shape(1, 4)
        dims = sorted(self.r.sample(range(len(a)), self.r.randint(1, len(a))))
        dims = [d - len(a) if self.r.random() < 0.5 else d for d in dims]
        if self.broken():
            dims = [len(a) + 1]
        b = _Args().tensor(a, self.dt())
        if name == "sum" and self.r.random() < 0.2:
            return b.none().call("sum")  # sum(self, *, dtype=None): everything
        b.scalar(dims).scalar(self.r.choice([True, False]))
        if name in ("sum", "mean"):
            b.none()
        return b.call(name)

    def softmax(self) -> Call:
        a = self.shape(1, 4)
        dim = self.r.randint(-len(a), len(a) - 1) if not self.broken() else len(a) + 2
        name = self.r.choice(["_softmax", "_log_softmax", "softmax", "log_softmax"])
        b = _Args().tensor(a, self.dt()).scalar(dim)
        return (b.scalar(False) if name.startswith("_") else b.none()).call(name)

    def norm(self) -> Call:
        a = self.shape(2, 4)
        k = self.r.randint(1, min(2, len(a) - 1))
        normalized = a[len(a) - k:]
        if self.broken():
            normalized = [normalized[0] + 1, *normalized[1:]]
        dt = self.dt()
        name = self.r.choice(["native_layer_norm", "layer_norm", "_fused_rms_norm", "rms_norm"])
        b = _Args().tensor(a, dt).scalar(normalized)
        (b.tensor(normalized, dt) if self.r.random() < 0.7 else b.none())
        if "layer" in name:
            (b.tensor(normalized, dt) if self.r.random() < 0.7 else b.none())
            b.scalar(1e-5)
            return (b.scalar(True) if name == "layer_norm" else b).call(name)
        return (b.scalar(1e-6) if self.r.random() < 0.5 else b.none()).call(name)

    def embedding(self) -> Call:
        v, d = self.n(), self.n()
        idx = self.shape(1, 3)
        return (_Args().tensor([v, d], self.dt()).tensor(idx, "long int").scalar(-1).scalar(False).scalar(False)
                .call("embedding"))

    def copy(self) -> Call:
        a = self.shape(1, 4)
        dt = self.dt()
        kind = self.r.choice(["copy_", "_to_copy", "clone", "to", "contiguous"])
        if kind == "copy_":
            return _Args().tensor(a, self.dt()).tensor(self.broadcast_partner(a), dt).scalar(False).call("copy_")
        if kind == "_to_copy":
            code = self.r.choice([5, 6, 15])  # half, float, bfloat16
            return (_Args().tensor(a, dt).scalar(code).none().none().none().scalar(False).none().call("_to_copy"))
        if kind == "clone":
            return _Args().tensor(a, dt).none().call("clone")
        if kind == "to":
            return _Args().tensor(a, dt).scalar(self.r.choice([5, 6, 15])).scalar(False).scalar(False).none().call("to")
        return _Args().tensor(a, dt).scalar(0).call("contiguous")

    def cat(self) -> Call:
        a = self.shape(1, 4)
        dim = self.r.randint(-len(a), len(a) - 1)
        parts = []
        for _ in range(self.r.randint(1, 4)):
            p = list(a)
            p[dim] = self.r.randint(1, 32)
            parts.append(p)
        if self.broken() and len(a) > 1:
            parts[-1][dim - 1 if dim != -len(a) else dim + 1] += 1
        return _Args().tensors(parts).scalar(dim).call("cat")

    def index(self) -> Call:
        a = self.shape(1, 3)
        dt = self.dt()
        dim = self.r.randint(-len(a), len(a) - 1)
        if self.r.random() < 0.5:
            return (_Args().tensor(a, dt).scalar(dim).tensor([self.n()], self.r.choice(["long int", "int"]))
                    .call("index_select"))
        idx = [self.r.randint(1, d) for d in a]
        if self.broken():
            idx = idx + [2]
        return _Args().tensor(a, dt).scalar(dim).tensor(idx, "long int").scalar(False).call("gather")

    def attention(self) -> Call:
        bsz, h, lq, lk, e = self.r.randint(1, 4), self.r.randint(1, 8), self.n(), self.n(), self.r.choice([16, 64])
        ev = e if self.r.random() < 0.8 else self.r.choice([32, 128])
        dt = self.dt()
        ke = self.other(e) if self.broken() else e
        name = self.r.choice(["scaled_dot_product_attention", "_scaled_dot_product_flash_attention_for_cpu",
                              "_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention"])
        causal = self.r.random() < 0.5
        b = _Args().tensor([bsz, h, lq, e], dt).tensor([bsz, h, lk, ke], dt).tensor([bsz, h, lk, ev], dt)
        if name == "scaled_dot_product_attention":
            (b.tensor(self.r.choice([[lq, lk], [bsz, 1, lq, lk]]), dt) if self.r.random() < 0.2 else b.none())
            return b.scalar(0.0).scalar(causal and b.types[3] == "").none().scalar(False).call(name)
        if name == "_scaled_dot_product_flash_attention_for_cpu":
            return b.scalar(0.0).scalar(causal).none().none().call(name)
        if name == "_scaled_dot_product_efficient_attention":
            return b.none().scalar(self.r.choice([True, False])).scalar(0.0).scalar(causal).none().call(name)
        return b.scalar(0.0).scalar(causal).scalar(False).none().call(name)

    def groups(self) -> list[Callable[[], Call]]:
        """The 17 op groups, each drawn equally often (``where`` is drawn in the binary group)."""
        return [self.mm, self.addmm, self.bmm, self.baddbmm, self.matmul, self.linear, self.conv, self.unary,
                self.binary, self.reduction, self.softmax, self.norm, self.embedding, self.copy, self.cat,
                self.index, self.attention]

    def one(self) -> Call:
        g = self.r.choice(self.groups())
        return g() if g != self.binary or self.r.random() < 0.85 else self.where()


def draw(n: int, seed: int = 0, big: bool = False) -> list[Call]:
    """``n`` calls drawn over the op groups (seeded)."""
    d = Draw(seed, big)
    return [d.one() for _ in range(n)]


#: ops that decompose before dispatch (CompositeImplicitAutograd): a trace shows their work as children, so a
#: trace of top-level calls leaves them out (alone, their time would be unplaced)
COMPOSITE = frozenset(f"aten::{n}" for n in ("matmul", "linear", "conv2d", "softmax", "log_softmax", "layer_norm",
                                              "to", "contiguous", "_fused_rms_norm"))


def distinct(n: int, seed: int = 0) -> Iterator[Call]:
    """``n`` calls with distinct recorded arguments (large sizes; repeats and :data:`COMPOSITE` ops skipped)."""
    d = Draw(seed, big=True, bad=0.0)
    seen: set[str] = set()
    while len(seen) < n:
        name, args = d.one()
        if name in COMPOSITE:
            continue
        key = name + json.dumps(args, separators=(",", ":"))
        if key not in seen:
            seen.add(key)
            yield name, args


#: aten ops the closed form does not cover (a 'mixed' trace's other half): each rebuilt on meta tensors
OTHER = ("aten::native_group_norm", "aten::upsample_nearest2d", "aten::max_pool2d_with_indices", "aten::roll")


def other_call(r: random.Random) -> Call:
    """A call of an op left to the meta route (:data:`OTHER`), distinct by its sizes."""
    name = r.choice(OTHER)
    n, c, h, w = r.randint(1, 8), 4 * r.randint(1, 64), r.randint(2, 256), r.randint(2, 256)
    b = _Args().tensor([n, c, h, w])
    if name == "aten::native_group_norm":
        b.tensor([c]).tensor([c]).scalar(n).scalar(c).scalar(h * w).scalar(4).scalar(1e-5)
    elif name == "aten::upsample_nearest2d":
        b.scalar([2 * h, 2 * w]).none().none()
    elif name == "aten::max_pool2d_with_indices":
        b.scalar([2, 2]).scalar([2, 2]).scalar([0, 0]).scalar([1, 1]).scalar(False)
    else:
        b.scalar([1]).scalar([2])
    return b.call(name.removeprefix("aten::"))


def write_trace(path: Path, calls: int, seed: int = 0, other: float = 0.0) -> int:
    """A CPU trace of ``calls`` top-level aten calls, each with distinct recorded arguments (``other``: the share
    of them from :data:`OTHER`, left to the meta route); streamed to ``path``; its size in bytes."""
    r = random.Random(seed + 1)
    fast = distinct(calls, seed)
    seen: set[str] = set()
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": [], "traceEvents": [\n')
        ts = 1000.0
        for i in range(calls):
            if other and r.random() < other:
                while True:
                    name, args = other_call(r)
                    key = json.dumps(args)
                    if key not in seen:
                        seen.add(key)
                        break
            else:
                name, args = next(fast)
            dur = round(r.uniform(2.0, 50.0), 3)
            ev = {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": round(ts, 3), "dur": dur,
                  "args": {"External id": i + 1, **args}}
            f.write(("," if i else "") + json.dumps(ev, separators=(",", ":")) + "\n")
            ts += dur + 1.0
        f.write("]}\n")
    return path.stat().st_size
