"""The kernel breakdown: the top kernels by time, their duration distributions, the share of communication,
compute and memory kernels (kinds: :mod:`.timeline`), each kernel on its ops' roofline point
(:func:`~.timeline.point_of`: intensity, attained rate against the binding roof, efficiency).

Two shares, each saying what it is of: ``share`` of all GPU kernel time (:data:`SHARE_OF`), ``step_share`` of
the profiler steps' time (:data:`STEP_SHARE_OF`; without steps, of the kernels' span: :data:`SPAN_OF`).  On a
CPU-only trace the breakdown is of the placed ops' own times (the report's table), so it is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.frontends.trace.analyses.timeline import KINDS, US, RooflinePoint, Timeline, point_of

TOP = 10
SHARE_OF = "GPU kernel time"
STEP_SHARE_OF = "step time"
SPAN_OF = "the kernels' span"  # a trace without profiler steps


@dataclass(frozen=True)
class KernelRow:
    name: str
    kind: str  # 'compute', 'communication', 'memory'
    count: int
    seconds: float
    share: float  # of all GPU kernel time (KernelBreakdown.share_of)
    step_share: float  # of the profiler steps' time (KernelBreakdown.step_share_of)
    q: tuple[float, float, float, float, float]  # duration min, 25%, median, 75%, max (s)
    point: RooflinePoint | None  # on its ops' roofs (None: launched by no placed op, or no analysis)


@dataclass(frozen=True)
class KernelBreakdown:
    kernels: int
    distinct: int
    seconds: float  # all kernel time
    by_kind: tuple[tuple[str, float, float], ...]  # (kind, seconds, share)
    rows: tuple[KernelRow, ...]  # the top kernels by time
    share_of: str = SHARE_OF  # what KernelRow.share is a share of
    step_share_of: str = STEP_SHARE_OF  # what KernelRow.step_share is a share of


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
    rows = []
    for c in np.argsort(-per, kind="stable")[:top].tolist():
        mine = np.flatnonzero(inverse == c)
        q = tuple(float(x) * US for x in np.percentile(dur[mine], [0, 25, 50, 75, 100]))
        rows.append(KernelRow(t.ev.names[int(codes[c])], KINDS[int(t.kind[mine[0]])], len(mine), float(per[c]) * US,
                              float(per[c]) / total if total else 0.0, float(per[c]) / steps if steps else 0.0,
                              q, point_of(t, mine)))  # type: ignore[arg-type]
    return KernelBreakdown(len(dur), len(codes), total * US, by_kind, tuple(rows),
                           step_share_of=STEP_SHARE_OF if t.steps else SPAN_OF)

