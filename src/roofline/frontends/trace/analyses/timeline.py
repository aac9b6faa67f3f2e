"""What every trace analysis shares, computed once per trace: the kernels by stream in time order, each joined
to its launch call (``args.correlation``) and to its op's roofline point, the profiler steps, and interval
arithmetic on sorted, disjoint intervals (unions, intersections, the covered length inside windows).

Kernel kinds, as HTA's kernel breakdown names them (``hta/analyzers/breakdown_analysis.py``): communication
(NCCL kernels, every naming: :func:`~roofline.frontends.trace.comms.is_nccl_kernel`), memory (``Memcpy`` and
``Memset`` rows: ``gpu_memcpy`` / ``gpu_memset``) and compute (every other kernel).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.frontends.trace.columns import ANNOTATION, CPU_OP, KERNEL, RUNTIME, TraceEvents
from roofline.frontends.trace.comms import is_nccl_kernel

KINDS = ("compute", "communication", "memory")
COMPUTE, COMM, MEMORY = range(len(KINDS))
MEMORY_PREFIXES = ("Memcpy", "Memset", "memcpy", "memset")
_STEP = re.compile(r"ProfilerStep#(\d+)$")
US = 1e-6  # microseconds -> seconds


def kind_of(name: str) -> int:
    """A kernel's kind (a code into :data:`KINDS`) by its name."""
    if is_nccl_kernel(name):
        return COMM
    return MEMORY if name.startswith(MEMORY_PREFIXES) else COMPUTE


@dataclass(frozen=True)
class OpPoints:
    """The roofline point of each placed op (rows of the analysis), as the analyses read it."""

    name: list[str]  # per row
    bound: np.ndarray  # per row: 'compute', 'memory', 'interconnect', 'latency'
    efficiency: np.ndarray  # per row: judged roofline time / measured time (nan: not measured)
    roof_seconds: np.ndarray  # per row: judged roofline time, s
    measured: np.ndarray  # per row: measured seconds (nan: none)
    flops: np.ndarray  # per row: FLOPs of one call
    bytes: np.ndarray  # per row: bytes moved by one call
    roof: np.ndarray  # per row: the binding roof's name ('fp32 vector', 'HBM', 'interconnect')
    roof_rate: np.ndarray  # per row: that roof, FLOP/s when compute-bound, else B/s

    @classmethod
    def of(cls, analysis: Any) -> OpPoints:
        """Each op's point: a compute-bound op on its compute ceiling, any other on the memory level (or link)
        it is judged at (the analysis's ``judged_level``), at that level's bandwidth."""
        a, w = analysis, analysis.workload
        names = [w.strings("name", i) for i in range(len(w))]
        bound = np.asarray(a.bound)
        compute = bound == "compute"
        labels = np.asarray([c.label for c in a.ceilings] + [""])[np.where(compute, a.ceiling_index, -1)]
        level_bw = np.asarray([m.bandwidth for m in a.levels] + [0.0])[a.judged_level_index]
        bandwidth = np.where(a.judged_level_index >= 0, level_bw, np.asarray(a.bandwidth, dtype=float))
        return cls(names, bound, np.asarray(a.efficiency, dtype=float), np.asarray(a.judged_time, dtype=float),
                   np.asarray(w.columns["measured_seconds"], dtype=float),
                   np.asarray(w.columns["flops"], dtype=float), np.asarray(w.bytes, dtype=float),
                   np.where(compute, labels, np.asarray(a.judged_level)),
                   np.where(compute, np.asarray(a.peak_flops, dtype=float), bandwidth))


@dataclass(frozen=True)
class RooflinePoint:
    """Where some kernel instances sit under their ops' roofs (:func:`point_of`)."""

    op: str  # the op they spend the most time under
    bound: str  # that op's bound: 'compute', 'memory', 'interconnect', 'latency'
    roof: str  # its binding roof: 'fp32 vector', 'HBM', 'interconnect'
    unit: str  # the binding unit: 'FLOP/s' (compute-bound) or 'B/s'
    intensity: float  # FLOP/B of their share of the ops' work (nan: no bytes)
    attained: float  # their rate in the binding unit, over the instances under that roof
    roof_rate: float  # the roof, in that unit
    of_roof: float  # attained / roof_rate (nan: no work in that unit)
    efficiency: float  # judged roofline time / measured, over every instance with a point


def point_of(t: Timeline, pos: np.ndarray) -> RooflinePoint | None:
    """The roofline point of the kernels at timeline positions ``pos`` (None: none launched by a placed op
    with a measured time).

    Each instance, ``d`` long under an op measured ``m`` (the sum of its kernels), carries ``d / m`` of the
    op's FLOPs, bytes and judged roofline time.  The point's op, bound and roof are those of the op the
    instances spend the most time under; ``attained`` is the FLOPs (compute-bound) or bytes carried by the
    instances under that roof over their duration, so ``of_roof = attained / roof_rate``; ``efficiency`` is
    ``sum(carried roofline time) / sum(d)`` over every instance (the ops' time-weighted efficiency)."""
    p = t.points
    if p is None or not len(pos):
        return None
    rows = t.row[pos]
    d = (t.end[pos] - t.start[pos]) * US
    ok = rows >= 0
    r0 = np.maximum(rows, 0)
    ok &= np.isfinite(p.measured[r0]) & (p.measured[r0] > 0)
    if not ok.any():
        return None
    rows, d = rows[ok], d[ok]
    w = d / p.measured[rows]  # each instance's share of its op's call
    by_op, inverse = np.unique(rows, return_inverse=True)
    main = int(by_op[int(np.argmax(np.bincount(inverse.reshape(-1), weights=d)))])
    flops, moved = float((w * p.flops[rows]).sum()), float((w * p.bytes[rows]).sum())
    compute = str(p.bound[main]) == "compute"
    same = p.roof[rows] == p.roof[main]
    work = (w * (p.flops[rows] if compute else p.bytes[rows]))[same]
    seconds = float(d[same].sum())
    attained = float(work.sum()) / seconds if seconds > 0 else float("nan")
    rate = float(p.roof_rate[main])
    roof_time = w * p.roof_seconds[rows]
    fin = np.isfinite(roof_time)
    return RooflinePoint(p.name[main], str(p.bound[main]), str(p.roof[main]), "FLOP/s" if compute else "B/s",
                         flops / moved if moved > 0 else float("nan"), attained, rate,
                         attained / rate if rate > 0 and work.sum() > 0 else float("nan"),
                         float(roof_time[fin].sum() / d[fin].sum()) if d[fin].sum() > 0 else float("nan"))


@dataclass(frozen=True)
class Timeline:
    """One trace's kernels (sorted by stream, then start) with their launches, ops and kinds; its steps."""

    ev: TraceEvents
    index: np.ndarray  # event index of each kernel
    stream: np.ndarray  # thread code (pid = device, tid = stream) of each kernel
    start: np.ndarray  # us
    end: np.ndarray  # us
    kind: np.ndarray  # int8 code into KINDS
    launch: np.ndarray  # event index of the launch call (cuda_runtime with the same correlation), -1: none
    row: np.ndarray  # the placed op (a row of the analysis) that launched it, -1: none
    steps: tuple[tuple[str, float, float], ...]  # (ProfilerStep#N, start us, end us), in time order
    points: OpPoints | None

    @property
    def gpu(self) -> bool:
        return len(self.index) > 0

    @property
    def linked(self) -> int:
        """Kernels joined to a launch call."""
        return int((self.launch >= 0).sum())

    def stream_name(self, code: int) -> str:
        pid, tid = self.ev.threads[code]
        return f"device {pid} stream {tid}"

    def thread_name(self, code: int) -> str:
        pid, tid = self.ev.threads[code]
        return f"pid {pid} thread {tid}"

    def name(self, k: int) -> str:
        """Kernel ``k``'s name (``k`` a position in the timeline)."""
        return self.ev.names[int(self.ev.name[self.index[k]])]

    def op(self, k: int) -> str:
        r = int(self.row[k])
        return self.points.name[r] if self.points is not None and r >= 0 else ""

    def stream_bounds(self) -> np.ndarray:
        """Where each stream's kernels begin in the timeline, and the end (len + 1 entries)."""
        change = np.flatnonzero(np.diff(self.stream)) + 1
        return np.concatenate([[0], change, [len(self.stream)]]).astype(np.int64)


def timeline(ev: TraceEvents, owner: np.ndarray | None = None, analysis: Any = None) -> Timeline:
    """The :class:`Timeline` of ``ev``; ``owner`` (per event: its placed op's row, -1: none: the placer's) and
    ``analysis`` (the workload's roofline analysis) give each kernel its op's roofline point."""
    k = np.flatnonzero(ev.cat == KERNEL)
    k = k[np.lexsort((ev.ts[k], ev.thread[k]))]
    kinds = np.fromiter((kind_of(n) for n in ev.names), dtype=np.int8, count=len(ev.names))
    launch = join_launches(ev, k)
    row = np.full(len(k), -1, dtype=np.int64)
    if owner is not None and len(k):
        has = launch >= 0
        row[has] = owner[launch[has]]
    start = ev.ts[k]
    return Timeline(ev, k, ev.thread[k].astype(np.int64), start, start + ev.dur[k], kinds[ev.name[k]], launch, row,
                    profiler_steps(ev), OpPoints.of(analysis) if analysis is not None else None)


def join_launches(ev: TraceEvents, kernels: np.ndarray) -> np.ndarray:
    """Per kernel, the event index of the launch call with its correlation id (-1: none), by a sorted join."""
    launches = np.flatnonzero((ev.cat == RUNTIME) & (ev.correlation >= 0))
    out = np.full(len(kernels), -1, dtype=np.int64)
    if not len(launches) or not len(kernels):
        return out
    corr = ev.correlation[launches]
    order = np.argsort(corr, kind="stable")
    corr, launches = corr[order], launches[order]
    want = ev.correlation[kernels]
    pos = np.minimum(np.searchsorted(corr, want), len(corr) - 1)
    hit = (corr[pos] == want) & (want >= 0)
    out[hit] = launches[pos[hit]]
    return out


def profiler_steps(ev: TraceEvents) -> tuple[tuple[str, float, float], ...]:
    """The ``ProfilerStep#N`` annotations (name, start, end in us), in time order."""
    codes = {i: n for i, n in enumerate(ev.names) if _STEP.match(n)}
    if not codes:
        return ()
    at = np.flatnonzero((ev.cat == ANNOTATION) & np.isin(ev.name, np.fromiter(codes, dtype=np.int64)))
    at = at[np.argsort(ev.ts[at], kind="stable")]
    return tuple((codes[int(ev.name[i])], float(ev.ts[i]), float(ev.ts[i] + ev.dur[i])) for i in at)


def cpu_ops(ev: TraceEvents) -> np.ndarray:
    """The cpu_op events (their indices)."""
    return np.flatnonzero(ev.cat == CPU_OP)


def union(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as sorted, disjoint intervals (touching ones merged)."""
    if not len(start):
        return np.zeros(0), np.zeros(0)
    order = np.argsort(start, kind="stable")
    s, e = start[order], end[order]
    reach = np.maximum.accumulate(e)
    new = np.concatenate([[True], s[1:] > reach[:-1]])
    first = np.flatnonzero(new)
    last = np.concatenate([first[1:] - 1, [len(s) - 1]])
    return s[first], reach[last]


def length(start: np.ndarray, end: np.ndarray) -> float:
    return float((end - start).sum())


def intersect(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The intersection of two sets of sorted, disjoint intervals (where both cover), as sorted intervals."""
    t = np.concatenate([a[0], b[0], a[1], b[1]])
    d = np.concatenate([np.ones(len(a[0]) + len(b[0]), dtype=np.int64), -np.ones(len(a[1]) + len(b[1]), dtype=np.int64)])
    order = np.lexsort((d, t))  # at one instant, ends (-1) before starts: touching intervals do not overlap
    t, count = t[order], np.cumsum(d[order])
    on = np.flatnonzero(count == 2)
    return t[on], t[on + 1]


def covered(intervals: tuple[np.ndarray, np.ndarray], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per window [lo, hi), the length of sorted, disjoint ``intervals`` inside it (no loop over windows)."""
    s, e = intervals
    cum = np.concatenate([[0.0], np.cumsum(e - s)])

    def before(t: np.ndarray) -> np.ndarray:  # covered length before t
        j = np.searchsorted(s, t, side="right")  # intervals starting at or before t
        inside = np.where(j > 0, np.clip(t - s[np.maximum(j - 1, 0)], 0.0, (e - s)[np.maximum(j - 1, 0)]), 0.0) \
            if len(s) else np.zeros(len(t))
        return cum[np.maximum(j - 1, 0)] * (j > 0) + inside

    return before(np.asarray(hi, dtype=float)) - before(np.asarray(lo, dtype=float))
