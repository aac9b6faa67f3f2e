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

    @classmethod
    def of(cls, analysis: Any) -> OpPoints:
        w = analysis.workload
        names = [w.strings("name", i) for i in range(len(w))]
        return cls(names, np.asarray(analysis.bound), np.asarray(analysis.efficiency, dtype=float),
                   np.asarray(analysis.judged_time, dtype=float),
                   np.asarray(w.columns["measured_seconds"], dtype=float))


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
