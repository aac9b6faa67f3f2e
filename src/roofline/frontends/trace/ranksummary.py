"""One rank's compact summary (what a worker returns for a rank: never the events), built from its trace.

Per profiler step (``ProfilerStep#N``; the whole trace as step 0 without one):

* compute: the union of compute intervals (GPU: kernels other than NCCL and
  memory copies; CPU: ``cpu_op`` events other than the collective ones: :mod:`.comms`);
* communication: the union of collective intervals (GPU: NCCL kernels; CPU:
  gloo's ``gloo:<collective>`` scopes, else ``record_param_comms``), split
  into *exposed* (no compute running: ``|comm U compute| - |compute|``) and
  *overlapped* (``|comm| - exposed``);
* memcpy: memory copies and sets beyond compute and communication
  (``|all| - |comm U compute|``);
* idle: the step's span in which none of these runs (``span - |all|``).

A GPU step's span runs from the first to the last kernel launched inside its
``ProfilerStep`` (the launch's time on the CPU); a CPU step's is the
``ProfilerStep`` itself.  Each collective is kept (:class:`Collective`: step,
kind, process group, sequence number, seconds), in order, so the driver can
line it up with the same collective on the other members of its group (a GPU
collective's group and sequence number are those of the ``record_param_comms``
its NCCL kernel was launched in).  Ops are
kept aggregated by their cost (name, kind, precision, unit, FLOPs, bytes):
count and total measured seconds, the :data:`MAX_OPS` largest by time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.core.stats import Timing
from roofline.frontends.trace.comms import (
    COMMS_EVENT,
    GROUP_KEY,
    SEQ_KEY,
    collective_kind,
    is_cpu_comm,
    is_nccl_kernel,
    name_mask,
)
from roofline.frontends.trace.events import ANNOTATION, CPU_OP, KERNEL, RUNTIME, TraceEvents
from roofline.work.workload import Workload

MAX_OPS = 4000  # distinct op costs kept per rank (about 100 bytes each: the summary stays well under 1 MB)
_STEP = re.compile(r"ProfilerStep#(\d+)$")


@dataclass(frozen=True)
class Breakdown:
    """What filled a span of one rank's time, in seconds: the span and its parts (they add up to it).

    ``key`` says which span: a profiler step's number (each of :attr:`RankSummary.steps`) or the rank (each of
    :attr:`~roofline.frontends.trace.crossrank.MultiRankTrace.totals`: the sums over the common steps)."""

    key: int
    seconds: float
    compute: float
    comm_exposed: float
    comm_overlapped: float
    memcpy: float
    idle: float

    @staticmethod
    def total(key: int, parts: list[Breakdown]) -> Breakdown:
        """The sum of ``parts`` (each figure added up), keyed ``key``."""
        return Breakdown(key, *(sum(getattr(b, f) for b in parts) for f in PARTS))


#: the figures of a :class:`Breakdown`, in order (the span, then what filled it)
PARTS = ("seconds", "compute", "comm_exposed", "comm_overlapped", "memcpy", "idle")


@dataclass(frozen=True)
class OpFigures:
    """Ops of one cost on one rank: how many, their FLOPs and bytes each, and their measured seconds in all."""

    name: str
    kind: str
    precision: str
    unit: str
    flops: float
    bytes: float
    count: int
    seconds: float


@dataclass(frozen=True)
class Collective:
    """One collective call of a rank: its step, kind, process group and sequence number in that group (``""``
    and -1 where the trace does not say: then the order within the group is what lines ranks up), seconds."""

    step: int
    name: str
    group: str
    seq: int
    seconds: float


@dataclass(frozen=True)
class RankSummary:
    """What a worker returns for one rank (at most about 1 MB; never events)."""

    rank: int | None
    file: str
    world_size: int | None
    device_type: str
    events: int
    busy_seconds: float  # the workload's whole-run time (ProfilerStep sum, else the busy span)
    op_seconds: float
    collective_seconds: float
    op_count: int
    steps: tuple[Breakdown, ...]  # keyed by ProfilerStep number
    collectives: tuple[Collective, ...]  # in order of their start
    ops: tuple[OpFigures, ...]
    #: per step (as steps): the idle before its last collective starts, the idle that can make it late (idle
    #: after it is waiting, for the next step or for others); a step without a collective: all its idle
    arrival_idle: tuple[float, ...] = ()

    @property
    def step_seconds(self) -> float:
        """Its steps' time, all steps together (what makes a rank the slowest: the per-rank table's step time)."""
        return sum(s.seconds for s in self.steps)

    @property
    def step_timing(self) -> Timing:
        """Its time per profiler step: median and quartiles over its steps."""
        return Timing.of([s.seconds for s in self.steps] or [0.0])


def _union(starts: np.ndarray, ends: np.ndarray) -> float:
    """The measure of a union of intervals (same units as the inputs)."""
    if len(starts) == 0:
        return 0.0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], np.maximum.accumulate(ends[order])
    gaps = np.maximum(0.0, s[1:] - e[:-1])  # a new piece starts after everything before it ended
    return float(e[-1] - s[0] - gaps.sum())


def _classes(ev: TraceEvents) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Boolean masks (compute, comm, memcpy) over the events, and whether the trace has GPU kernels (names
    tested once per distinct name, by :mod:`.comms`)."""
    kern = ev.cat == KERNEL
    gpu = bool(kern.any())
    if gpu:
        comm = kern & name_mask(ev.names, ev.name, is_nccl_kernel)
        mem = kern & name_mask(ev.names, ev.name, lambda n: n.lower().startswith(("memcpy", "memset")))
        return kern & ~comm & ~mem, comm, mem, True
    is_comm = name_mask(ev.names, ev.name, is_cpu_comm)
    gloo = (ev.cat == ANNOTATION) & name_mask(ev.names, ev.name, lambda n: n.startswith("gloo:"))
    comm = gloo if gloo.any() else (ev.cat == CPU_OP) & name_mask(ev.names, ev.name, lambda n: n == COMMS_EVENT)
    compute = (ev.cat == CPU_OP) & ~is_comm
    return compute, comm, np.zeros(len(ev), dtype=bool), False


def _launches(ev: TraceEvents) -> np.ndarray:
    """Per event, the launch (a runtime call with the same correlation id) of a kernel; -1 for the rest."""
    out = np.full(len(ev), -1, dtype=np.int64)
    launches = np.flatnonzero((ev.cat == RUNTIME) & (ev.correlation >= 0))
    by_corr = dict(zip(ev.correlation[launches].tolist(), launches.tolist(), strict=True))
    kern = np.flatnonzero(ev.cat == KERNEL)
    out[kern] = [by_corr.get(c, -1) for c in ev.correlation[kern].tolist()]
    return out


def _step_windows(ev: TraceEvents, gpu: bool, launch: np.ndarray
                  ) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray]:
    """Step numbers, their windows (start, end in us) and each event's step index (-1: in no step)."""
    names = ev.names
    steps = [(int(m.group(1)), i) for i in np.flatnonzero(ev.cat == ANNOTATION).tolist()
             if (m := _STEP.match(names[ev.name[i]]))]
    steps.sort(key=lambda s: ev.ts[s[1]])
    ts, end = ev.ts, ev.ts + ev.dur
    if not steps:
        numbers = [0]
        cpu_lo, cpu_hi = np.array([ts.min() if len(ev) else 0.0]), np.array([end.max() if len(ev) else 0.0])
    else:
        numbers = [n for n, _ in steps]
        idx = np.array([i for _, i in steps])
        cpu_lo, cpu_hi = ts[idx], end[idx]
    # each event's step by its (CPU) start; a kernel's by its launch's start
    at = ts.copy()
    if gpu:
        kern = ev.cat == KERNEL
        at[kern] = np.where(launch[kern] >= 0, ts[np.maximum(launch[kern], 0)], np.nan)
    k = np.searchsorted(cpu_lo, at, side="right") - 1
    inside = (k >= 0) & (at <= cpu_hi[np.clip(k, 0, None)])
    step_of = np.where(inside, k, -1)
    if not steps:
        step_of[:] = 0
    lo, hi = cpu_lo.copy(), cpu_hi.copy()
    if gpu:
        kern_mask = ev.cat == KERNEL
        for j in range(len(numbers)):
            mine = kern_mask & (step_of == j)
            lo[j], hi[j] = (ts[mine].min(), end[mine].max()) if mine.any() else (0.0, 0.0)
    return numbers, lo, hi, step_of


def step_figures(ev: TraceEvents) -> tuple[tuple[Breakdown, ...], tuple[Collective, ...], tuple[float, ...]]:
    """Per-step breakdown (see the module docstring), the collectives in order, and per step the idle before its
    last collective starts (:attr:`RankSummary.arrival_idle`)."""
    compute, comm, mem, gpu = _classes(ev)
    launch = _launches(ev) if gpu else np.zeros(0, dtype=np.int64)
    numbers, lo, hi, step_of = _step_windows(ev, gpu, launch)
    ts, end = ev.ts, ev.ts + ev.dur
    out: list[Breakdown] = []
    arrival: list[float] = []
    for j, number in enumerate(numbers):
        a, b = lo[j], hi[j]
        mine = step_of == j

        def span(mask: np.ndarray, a: float = a, b: float = b, mine: np.ndarray = mine) -> tuple[np.ndarray, ...]:
            m = mask & mine
            return np.clip(ts[m], a, b), np.clip(end[m], a, b)

        (cs, ce), (ms, me), (ys, ye) = span(compute), span(comm), span(mem)
        c = _union(cs, ce)
        cm = _union(np.concatenate([cs, ms]), np.concatenate([ce, me]))
        m = _union(ms, me)
        all_s, all_e = np.concatenate([cs, ms, ys]), np.concatenate([ce, me, ye])
        everything = _union(all_s, all_e)
        exposed = cm - c
        idle = max(0.0, (b - a) - everything)
        out.append(Breakdown(number, (b - a) * 1e-6, c * 1e-6, exposed * 1e-6, (m - exposed) * 1e-6,
                               (everything - cm) * 1e-6, idle * 1e-6))
        # idle before the step's last collective starts (its arrival); none after it (waiting, not lateness)
        cut = float(ms.max()) if len(ms) else b
        before = _union(np.minimum(all_s, cut), np.minimum(all_e, cut)) if len(ms) else everything
        arrival.append(max(0.0, (cut - a) - before) * 1e-6 if len(ms) else idle * 1e-6)
    kept = comm & (step_of >= 0)
    order = np.flatnonzero(kept)[np.argsort(ts[kept], kind="stable")]
    call_of = _comms_calls(ev, launch, order) if gpu else ev.call[order]
    colls = []
    for i, c in zip(order.tolist(), call_of.tolist(), strict=True):
        call = ev.calls[c] if c >= 0 else {}
        group, seq = call.get(GROUP_KEY, ""), call.get(SEQ_KEY, -1)
        colls.append(Collective(numbers[step_of[i]], collective_kind(ev.names[ev.name[i]]),
                                group if isinstance(group, str) else str(group),
                                seq if isinstance(seq, int) and not isinstance(seq, bool) else -1,
                                float(ev.dur[i]) * 1e-6))
    return tuple(out), tuple(colls), tuple(arrival)


def _comms_calls(ev: TraceEvents, launch: np.ndarray, kernels: np.ndarray) -> np.ndarray:
    """Per NCCL kernel, the recorded call of the ``record_param_comms`` its launch ran inside (on the launch's
    thread; -1 when none): where its process group and sequence number are.  One search per thread."""
    rp = np.flatnonzero((ev.cat == CPU_OP) & (ev.call >= 0)
                        & name_mask(ev.names, ev.name, lambda n: n == COMMS_EVENT))
    out = np.full(len(kernels), -1, dtype=np.int64)
    at = launch[kernels] if len(kernels) else np.zeros(0, dtype=np.int64)
    for th in np.unique(ev.thread[at[at >= 0]]).tolist():
        mine = rp[ev.thread[rp] == th]
        mine = mine[np.argsort(ev.ts[mine], kind="stable")]
        which = np.flatnonzero((at >= 0) & (ev.thread[np.maximum(at, 0)] == th))
        t = ev.ts[at[which]]
        p = np.searchsorted(ev.ts[mine], t, side="right") - 1  # the last one started by the launch
        ok = p >= 0
        inside = np.zeros(len(which), dtype=bool)
        inside[ok] = ev.ts[mine[p[ok]]] + ev.dur[mine[p[ok]]] >= t[ok]
        out[which[inside]] = ev.call[mine[p[inside]]]
    return out


def op_figures(w: Workload) -> tuple[OpFigures, ...]:
    """The workload's ops aggregated by cost, the :data:`MAX_OPS` largest by measured time."""
    secs = np.nan_to_num(w.columns["measured_seconds"] * w.columns["count"])
    keys: dict[tuple[Any, ...], list[float]] = {}
    flops, nbytes, count = w.columns["flops"], w.bytes, w.columns["count"]
    for i in range(len(w)):
        key = (w.strings("name", i), w.strings("kind", i), w.strings("precision", i), w.strings("unit", i),
               float(flops[i]), float(nbytes[i]))
        rec = keys.setdefault(key, [0, 0.0])
        rec[0] += int(count[i])
        rec[1] += float(secs[i])
    ops = [OpFigures(k[0], k[1], k[2], k[3], k[4], k[5], int(c), s) for k, (c, s) in keys.items()]
    ops.sort(key=lambda o: -o.seconds)
    return tuple(ops[:MAX_OPS])


def summarize_rank(ev: TraceEvents, w: Workload, file: str, index: int) -> RankSummary:
    """The summary of one rank from its events and its placed workload (``index``: its place in the list,
    the rank when the trace does not say)."""
    t, run = w.trace, w.measured
    assert t is not None and run is not None
    dist = ev.meta.get("distributedInfo")
    world = dist.get("world_size") if isinstance(dist, dict) else None
    collective = w.column("kind") == "collective"
    secs = np.nan_to_num(w.columns["measured_seconds"] * w.columns["count"])
    steps, colls, arrival = step_figures(ev)
    return RankSummary(t.rank if t.rank is not None else index, file,
                       world if isinstance(world, int) and not isinstance(world, bool) else None,
                       t.device_type, t.events, run.timing.median, float(secs.sum()),
                       float(secs[collective].sum()), len(w), steps, colls, op_figures(w), arrival)
