"""The kernel breakdown: the top kernels by time, their duration distributions, the share of communication,
compute and memory kernels (kinds: :mod:`.timeline`), each kernel on its ops' roofline points.

A kernel's roofline point is its launching ops': each instance is given the share of its op's judged roofline
time that its duration is of the op's measured time, so a kernel name's efficiency is
``sum(roof share) / sum(duration)`` over its instances joined to a placed op (the time-weighted efficiency of
the ops that launch it), and its bound is the bound of the op it spends the most time under.  On a CPU-only
trace the breakdown is of the placed ops' own times (the report's table), so it is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.frontends.trace.analyses.timeline import KINDS, US, Timeline

TOP = 10


@dataclass(frozen=True)
class KernelRow:
    name: str
    kind: str  # 'compute', 'communication', 'memory'
    count: int
    seconds: float
    share: float  # of all kernel time
    step_share: float  # of the profiler steps' time (of the kernels' span without steps)
    q: tuple[float, float, float, float, float]  # duration min, 25%, median, 75%, max (s)
    op: str  # the op it spends the most time under ('' when launched by none)
    bound: str  # that op's bound
    efficiency: float  # judged roofline time / measured, over its ops (nan: no roofline point)


@dataclass(frozen=True)
class KernelBreakdown:
    kernels: int
    distinct: int
    seconds: float  # all kernel time
    by_kind: tuple[tuple[str, float, float], ...]  # (kind, seconds, share)
    rows: tuple[KernelRow, ...]  # the top kernels by time


def kernel_breakdown(t: Timeline, top: int = TOP) -> KernelBreakdown:
    """The breakdown of ``t``'s kernels (the module docstring)."""
    dur = t.end - t.start
    total = float(dur.sum())
    names = t.ev.name[t.index]
    codes, inverse = np.unique(names, return_inverse=True)
    inverse = inverse.reshape(-1)
    per = np.bincount(inverse, weights=dur, minlength=len(codes))
    by_kind = tuple((KINDS[j], float(dur[t.kind == j].sum()) * US, float(dur[t.kind == j].sum()) / total if total
                     else 0.0) for j in range(len(KINDS)))
    steps = sum(e - s for _, s, e in t.steps) or (float(t.end.max() - t.start.min()) if len(dur) else 0.0)
    roof = _roof_share(t, dur)
    rows = []
    for c in np.argsort(-per, kind="stable")[:top].tolist():
        mine = np.flatnonzero(inverse == c)
        d = dur[mine]
        q = tuple(float(x) * US for x in np.percentile(d, [0, 25, 50, 75, 100]))
        op, bound, eff = _point(t, mine, d, roof)
        rows.append(KernelRow(t.ev.names[int(codes[c])], KINDS[int(t.kind[mine[0]])], len(mine), float(per[c]) * US,
                              float(per[c]) / total if total else 0.0, float(per[c]) / steps if steps else 0.0,
                              q, op, bound, eff))  # type: ignore[arg-type]
    return KernelBreakdown(len(dur), len(codes), total * US, by_kind, tuple(rows))


def _roof_share(t: Timeline, dur: np.ndarray) -> np.ndarray:
    """Per kernel, its share of its op's judged roofline time (us; nan: no op or no roofline point)."""
    out = np.full(len(dur), np.nan)
    p = t.points
    if p is None:
        return out
    has = t.row >= 0
    r = t.row[has]
    with np.errstate(divide="ignore", invalid="ignore"):
        out[has] = p.roof_seconds[r] / US * dur[has] / (p.measured[r] / US)
    return out


def _point(t: Timeline, mine: np.ndarray, d: np.ndarray, roof: np.ndarray) -> tuple[str, str, float]:
    """(op, bound, efficiency) of one kernel name's instances ``mine`` (durations ``d``)."""
    p = t.points
    rows = t.row[mine]
    has = (rows >= 0) & np.isfinite(roof[mine])
    if p is None or not has.any():
        return "", "", float("nan")
    r, w = np.unique(rows[has], return_inverse=True)
    main = int(r[int(np.argmax(np.bincount(w.reshape(-1), weights=d[has])))])
    eff = float(roof[mine][has].sum() / d[has].sum()) if d[has].sum() > 0 else float("nan")
    return p.name[main], str(p.bound[main]), eff
