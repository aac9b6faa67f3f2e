"""Compute/communication overlap: how much of the communication kernels' time compute kernels ran beside.

As HTA's ``get_comm_comp_overlap`` defines it (``hta/analyzers/communication_analysis.py``): per rank (one trace)
and per profiler step, the time where a communication kernel and a compute kernel both run (the intersection of
the two unions of intervals, over every stream) over the communication time (the union of the communication
kernels).  1.0: every collective hidden behind compute; 0: fully exposed.  Memory kernels count as neither.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.frontends.trace.analyses.timeline import COMM, COMPUTE, US, Timeline, covered, intersect, length, union


@dataclass(frozen=True)
class StepOverlap:
    step: str
    comm: float  # s of communication in the step
    overlapped: float  # s of it beside compute
    ratio: float  # overlapped / comm (nan without communication)


@dataclass(frozen=True)
class Overlap:
    comm: float
    compute: float
    overlapped: float
    ratio: float  # nan without communication
    steps: tuple[StepOverlap, ...]


def overlap(t: Timeline) -> Overlap:
    """The overlap of ``t`` (the module docstring); per step when the trace has profiler steps."""
    comm = union(t.start[t.kind == COMM], t.end[t.kind == COMM])
    comp = union(t.start[t.kind == COMPUTE], t.end[t.kind == COMPUTE])
    both = intersect(comm, comp)
    c, o = length(*comm), length(*both)
    steps: tuple[StepOverlap, ...] = ()
    if t.steps:
        lo = np.asarray([s for _, s, _ in t.steps])
        hi = np.asarray([e for _, _, e in t.steps])
        sc, so = covered(comm, lo, hi), covered(both, lo, hi)
        steps = tuple(StepOverlap(name, float(a) * US, float(b) * US, float(b / a) if a > 0 else float("nan"))
                      for (name, _, _), a, b in zip(t.steps, sc.tolist(), so.tolist(), strict=True))
    return Overlap(c * US, length(*comp) * US, o * US, o / c if c > 0 else float("nan"), steps)
