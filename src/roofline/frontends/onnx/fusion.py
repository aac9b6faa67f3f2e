"""Runtime fusions: decomposed patterns costed as the one kernel a runtime runs for them.

Exporters decompose what runtimes (and the PyTorch frontend) run as one kernel.  With fuse=True
three patterns are costed as one op each, as onnxruntime's graph optimizer fuses them:

* MatMul + Add(constant bias) -> MatMul with a bias epilogue (no bias FLOPs);
* Div/Mul -> Erf -> Add 1 -> Mul x -> Mul .5 -> Gelu (5 FLOPs per element);
* MatMul(q, k^T) [scale] [mask] -> Softmax -> MatMul(., v) -> fused attention (no L x S tensor in
  memory; a constant mask built from Trilu is causal), absorbing the Transpose/Split layout ops
  that only feed it (q/k/v are read once, in whatever layout) and a Transpose of its output.

:func:`plan_fusions` only plans: it returns the nodes absorbed and the fused ops that replace them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from roofline.frontends.onnx.load import TensorInfo
from roofline.frontends.onnx.ops import ENTRIES, Entry, NodeView, node_traffic
from roofline.work.costs import Cost, T, cost

_LAYOUT = frozenset({"Transpose", "Split", "Squeeze", "Unsqueeze", "Reshape", "Flatten", "Identity"})


@dataclass
class Fused:
    """A fused op replacing a pattern of nodes: costed by ``entry`` over ``inputs`` -> ``outputs``."""

    name: str
    op_type: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]
    entry: Entry


@dataclass(frozen=True)
class _Graph:
    """One graph as the matcher sees it, and the plan so far (``absorbed``, ``fused``, ``fusions``)."""

    nodes: Any
    tensors: Mapping[str, TensorInfo]
    consts: set[str]
    producer: dict[str, int]
    consumers: dict[str, list[int]]
    outputs: set[str]
    live: set[int]
    absorbed: set[int] = field(default_factory=set)
    fused: dict[int, Fused] = field(default_factory=dict)
    fusions: dict[str, int] = field(default_factory=dict)

    def sole(self, t: str) -> int | None:
        """The only node reading ``t`` (None: several, none, or ``t`` is a graph output)."""
        c = self.consumers.get(t, [])
        return c[0] if len(c) == 1 and t not in self.outputs else None

    def free(self, i: int | None, *types: str) -> bool:
        """Node ``i`` is an op of the default domain, one of ``types``, and not yet part of a fusion."""
        return i is not None and i in self.live and i not in self.absorbed and i not in self.fused \
            and self.nodes[i].op_type in types and self.nodes[i].domain in ("", "ai.onnx")

    def scalar(self, t: str | None) -> bool:
        """``t`` is a constant of one element."""
        s = self.tensors.get(t) if t is not None else None
        return t in self.consts and s is not None and s.shape is not None and math.prod(s.shape) == 1

    def shape(self, t: str) -> tuple[int, ...] | None:
        s = self.tensors.get(t)
        return None if s is None else s.shape

    def fuse(self, pattern: str, at: int, op: Fused, absorbed: Sequence[int]) -> None:
        """Plan ``op`` in place of node ``at``, the nodes ``absorbed`` dropped."""
        self.fused[at] = op
        self.absorbed.update(absorbed)
        self.fusions[pattern] = self.fusions.get(pattern, 0) + 1


def _other(n: Any, t: str) -> str | None:
    """The input of ``n`` that is not ``t``, when there is exactly one."""
    rest = [x for x in n.input if x != t]
    return rest[0] if len(rest) == 1 else None


def _renamed(name: str, old: str, new: str, fallback: str) -> str:
    return name.replace(old, new) if old in name else f"{name or fallback}_{new.lower()}"


def _graph(graph: Any, ops: list[int], tensors: Mapping[str, TensorInfo], consts: set[str]) -> _Graph:
    """Producers and consumers of every tensor (Shape / Size read no data: they never block a fusion)."""
    producer: dict[str, int] = {}
    consumers: dict[str, list[int]] = {}
    for i, n in enumerate(graph.node):
        for o in n.output:
            if o:
                producer[o] = i
        if n.op_type in ("Shape", "Size"):
            continue
        for x in n.input:
            if x:
                consumers.setdefault(x, []).append(i)
    return _Graph(graph.node, tensors, consts, producer, consumers, {o.name for o in graph.output}, set(ops))


def plan_fusions(graph: Any, ops: list[int], tensors: Mapping[str, TensorInfo], consts: set[str],
                 fusions: dict[str, int]) -> tuple[set[int], dict[int, Fused]]:
    """Plan the fusions among the op nodes ``ops``: (nodes absorbed, node -> the fused op emitted there).

    ``fusions`` counts the patterns fused (pattern -> count).
    """
    g = _graph(graph, ops, tensors, consts)
    for i in ops:  # attention first: its mask add must not pass for a bias
        if g.free(i, "Softmax"):
            _fuse_attention(g, i)
    for i in ops:
        if g.free(i, "MatMul"):
            _fuse_bias(g, i)
    for i in ops:
        if g.free(i, "Erf"):
            _fuse_gelu(g, i)
    for pattern, n in g.fusions.items():
        fusions[pattern] = fusions.get(pattern, 0) + n
    return g.absorbed, g.fused


# -- MatMul + bias -----------------------------------------------------------------------------
def _fuse_bias(g: _Graph, i: int) -> None:
    """MatMul ``i`` whose only reader adds a constant bias along its last axis: a MatMul with a bias epilogue."""
    n = g.nodes[i]
    a = g.sole(n.output[0])
    if a is None or not g.free(a, "Add"):
        return
    bias = _other(g.nodes[a], n.output[0])
    out, bshape = g.shape(n.output[0]), g.shape(bias) if bias else None
    if bias in g.consts and out and bshape is not None and len(bshape) == 1 and bshape[0] == out[-1] and \
            g.shape(g.nodes[a].output[0]) == out:
        fused = Fused(n.name or f"MatMul_{i}", "MatMul", [n.input[0], n.input[1], str(bias)],
                      [g.nodes[a].output[0]], {}, ENTRIES["MatMul"])
        g.fuse("MatMul+bias", i, fused, [a])


# -- erf GELU ----------------------------------------------------------------------------------
def _gelu_input(g: _Graph, i: int) -> tuple[int, str] | None:
    """(the Div/Mul scaling x by a constant, x) feeding only Erf ``i``."""
    erf_in = g.nodes[i].input[0]
    d = g.producer.get(erf_in)
    if d is None or not g.free(d, "Div", "Mul") or g.sole(erf_in) != i:
        return None
    x = next((t for t in g.nodes[d].input if not g.scalar(t)), None)
    if x is None or not g.scalar(_other(g.nodes[d], x)):
        return None
    return d, x


def _gelu_tail(g: _Graph, add: int, x: str) -> tuple[list[int], str] | None:
    """After Erf -> Add 1: the multiplies by x and 0.5, in either order: (their nodes, the GELU output)."""
    add_out = g.nodes[add].output[0]
    m1 = g.sole(add_out)
    if m1 is None or not g.free(m1, "Mul"):
        return None
    m1_out = g.nodes[m1].output[0]
    rest = _other(g.nodes[m1], add_out)
    if rest == x:  # (1 + erf) * x, then * 0.5
        m2 = g.sole(m1_out)
        if m2 is None or not g.free(m2, "Mul") or not g.scalar(_other(g.nodes[m2], m1_out)):
            return None
        return [m1, m2], g.nodes[m2].output[0]
    half = g.producer.get(rest) if rest is not None else None  # (x * 0.5) * (1 + erf)
    if half is None or rest is None or not g.free(half, "Mul") or g.sole(rest) != m1 or x not in g.nodes[half].input:
        return None
    return [half, m1], m1_out


def _fuse_gelu(g: _Graph, i: int) -> None:
    """x * 0.5 * (1 + erf(x / sqrt 2)) around Erf ``i``: one Gelu op."""
    n = g.nodes[i]
    head = _gelu_input(g, i)
    if head is None:
        return
    d, x = head
    add = g.sole(n.output[0])
    if add is None or not g.free(add, "Add") or not g.scalar(_other(g.nodes[add], n.output[0])):
        return
    tail = _gelu_tail(g, add, x)
    if tail is None:
        return
    group = [d, i, add, *tail[0]]
    gelu = Fused(_renamed(n.name, "Erf", "Gelu", f"Erf_{i}"), "Gelu", [x], [tail[1]], {}, ENTRIES["Gelu"])
    g.fuse("GELU", group[-1], gelu, group[:-1])


# -- attention ---------------------------------------------------------------------------------
def _score_step(g: _Graph, p: int, mask: str | None) -> tuple[str, str | None] | None:
    """Through node ``p`` (a constant scale, or a mask Add / Where) to the scores: (its scores input, mask)."""
    pn = g.nodes[p]
    if pn.op_type in ("Mul", "Div"):
        nxt = next((x for x in pn.input if not g.scalar(x)), None)
        return None if nxt is None or not g.scalar(_other(pn, nxt)) else (nxt, mask)
    if mask is not None:
        return None
    if pn.op_type == "Add":
        nxt = next((x for x in pn.input if x in g.producer and
                    g.nodes[g.producer[x]].op_type in ("MatMul", "Mul", "Div", "Add")), None)
        return None if nxt is None else (nxt, _other(pn, nxt))
    branches = [x for x in pn.input[1:] if x not in g.consts]  # Where(cond, a, b): the non-constant branch
    return (branches[0], pn.input[0]) if len(branches) == 1 else None


def _scores(g: _Graph, softmax: int) -> tuple[int, list[int], str | None] | None:
    """Back from the softmax through scale and mask to MatMul(q, k^T): (that MatMul, the nodes passed, mask)."""
    pattern, mask = [softmax], None
    t, consumer = g.nodes[softmax].input[0], softmax
    for _ in range(5):
        p = g.producer.get(t)
        if p is None or g.sole(t) != consumer or not g.free(p, "MatMul", "Mul", "Div", "Add", "Where"):
            return None
        if g.nodes[p].op_type == "MatMul":
            return p, [*pattern, p], mask
        step = _score_step(g, p, mask)
        if step is None:
            return None
        pattern.append(p)
        (t, mask), consumer = step, p
    return None


def _unscaled(g: _Graph, x: str, m1: int, pattern: list[int]) -> str:
    """``x`` before a Mul / Div by a constant scalar that only feeds MatMul ``m1`` (added to ``pattern``)."""
    p = g.producer.get(x)
    if p is not None and g.free(p, "Mul", "Div") and g.sole(x) == m1:
        pn = g.nodes[p]
        y = next((z for z in pn.input if not g.scalar(z)), None)
        if y is not None and g.scalar(_other(pn, y)):
            pattern.append(p)
            return y
    return x


def _untransposed(g: _Graph, kt: str, pattern: list[int]) -> tuple[str, bool]:
    """(k, whether it is still k^T): through a Transpose swapping the last two axes that feeds the pattern."""
    p = g.producer.get(kt)
    if p is not None and g.free(p, "Transpose") and g.sole(kt) in pattern:
        perm = next((list(a.ints) for a in g.nodes[p].attribute if a.name == "perm"), [])
        if len(perm) >= 2 and perm[-2:] == [len(perm) - 1, len(perm) - 2] and perm[:-2] == list(range(len(perm) - 2)):
            pattern.append(p)
            return g.nodes[p].input[0], False
    return kt, True


def _layout_chain(g: _Graph, qkv: Sequence[str], keep: set[int]) -> set[int]:
    """The layout ops (Transpose / Split / Squeeze / Reshape chains) that feed q, k, v and nothing else."""
    chain: set[int] = set()
    for x in qkv:
        p = g.producer.get(x)
        while p is not None and g.nodes[p].op_type in _LAYOUT and g.nodes[p].domain in ("", "ai.onnx") and \
                p not in g.absorbed and p not in g.fused and g.nodes[p].input:
            chain.add(p)
            p = g.producer.get(g.nodes[p].input[0])
    changed = True
    while changed:  # drop the ops whose results are also read outside the pattern
        changed = False
        for c in list(chain):
            if any(o in g.outputs or any(u not in chain and u not in keep for u in g.consumers.get(o, []))
                   for o in g.nodes[c].output if o):
                chain.discard(c)
                changed = True
    return chain


def _reads(g: _Graph, qkv: Sequence[str], chain: set[int], mask: str | None) -> tuple[bool, list[str]]:
    """(causal, the tensors the fused op reads): q, k, v before the absorbed layout ops, and a non-causal mask."""
    causal = bool(mask) and mask in g.consts and _built_by(g, str(mask), "Trilu")
    reads = [str(mask)] if mask and not causal else []
    for x in qkv:
        p = g.producer.get(x)
        while p is not None and p in chain:
            x = g.nodes[p].input[0]
            p = g.producer.get(x)
        if x not in reads:
            reads.append(x)
    return causal, reads


def _attention_entry(q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...], causal: bool) -> Entry:
    """Fused attention on q (.., L, E), k (.., S, E), v (.., S, Ev); the fused node's own traffic."""
    q4, k4, v4 = T(q, 1), T(k, 1), T(v, 1)

    def entry(n: NodeView) -> Cost:
        return node_traffic(cost("attention", [q4, k4, v4], [q4], causal=causal), n)

    return entry


def _fuse_attention(g: _Graph, i: int) -> None:
    """MatMul(q, k^T) [scale] [mask] -> Softmax ``i`` -> MatMul(., v): one fused attention op."""
    sm = g.nodes[i]
    m2 = g.sole(sm.output[0])
    if m2 is None or not g.free(m2, "MatMul") or g.nodes[m2].input[0] != sm.output[0]:
        return
    scores = _scores(g, i)
    if scores is None:
        return
    m1, pattern, mask = scores
    q = _unscaled(g, g.nodes[m1].input[0], m1, pattern)
    k, k_transposed = _untransposed(g, _unscaled(g, g.nodes[m1].input[1], m1, pattern), pattern)
    v = g.nodes[m2].input[1]
    qsh, ksh, vsh = g.shape(q), g.shape(k), g.shape(v)
    if not (qsh and ksh and vsh and g.shape(g.nodes[m2].output[0])) or len(qsh) < 2 or len(ksh) < 2:
        return
    if k_transposed:
        ksh = (*ksh[:-2], ksh[-1], ksh[-2])
    chain = _layout_chain(g, (q, k, v), set(pattern) | {m2})
    causal, reads = _reads(g, (q, k, v), chain, mask)
    out = g.nodes[m2].output[0]
    after = g.sole(out)
    absorbed = [p for p in pattern if p != m2] + [c for c in chain if c in g.live]
    if after is not None and g.free(after, "Transpose"):
        absorbed.append(after)
        out = g.nodes[after].output[0]
    fused = Fused(_renamed(sm.name, "Softmax", "Attention", f"Softmax_{i}"), "Attention", reads, [out], {},
                  _attention_entry(qsh, ksh, vsh, causal))
    g.fuse("attention", m2, fused, absorbed)


def _built_by(g: _Graph, name: str, op_type: str, limit: int = 64) -> bool:
    """Whether a constant's producing subgraph contains an ``op_type`` node (e.g. Trilu: a causal mask)."""
    todo, seen = [name], set[int]()
    while todo and len(seen) < limit:
        p = g.producer.get(todo.pop())
        if p is None or p in seen:
            continue
        seen.add(p)
        if g.nodes[p].op_type == op_type:
            return True
        todo.extend(x for x in g.nodes[p].input if x)
    return False
