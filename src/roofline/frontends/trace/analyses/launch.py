"""Kernel launch delay: from the CPU's launch call to the kernel's start on the GPU, and the launch-bound stretches.

Joined through ``args.correlation`` (the launch call and its kernel carry the same id; Kineto's ``ac2g`` flow
events link the same pairs).  Per kernel, as HTA's ``get_cuda_kernel_launch_stats`` reads them
(``hta/analyzers/cuda_kernel_analysis.py``): the launch delay is the kernel's start less the launch call's end;
a *short* kernel runs for less time than its launch call took on the CPU (the GPU outpaces the host).

A kernel is *launch-bound* when its launch call started after the previous kernel on its stream had ended (the
host-wait gap of :mod:`.idle`): the GPU had nothing queued.  A launch-bound stretch is a run of at least
:data:`MIN_STRETCH` consecutive launch-bound kernels on one stream, from the first's start to the last's end:
there the step time is the CPU's, and faster kernels would not shorten it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.frontends.trace.analyses.timeline import US, Timeline

MIN_STRETCH = 3
TOP = 5


@dataclass(frozen=True)
class LaunchStretch:
    stream: str
    start: float  # s from the first kernel's start
    seconds: float
    kernels: int
    busy: float  # share of the stretch the stream's kernels ran


@dataclass(frozen=True)
class SlowLaunch:
    kernel: str
    op: str
    delay: float  # s


@dataclass(frozen=True)
class LaunchDelay:
    kernels: int
    linked: int  # kernels joined to a launch call
    median: float  # s
    p90: float
    max: float
    launch_median: float  # the launch calls' own CPU time, median (s)
    short_kernels: int  # kernels shorter than their launch call
    launch_bound: int  # kernels whose launch came after the stream had drained
    stretch_seconds: float  # the stretches' time
    stretches: tuple[LaunchStretch, ...]  # the longest
    slowest: tuple[SlowLaunch, ...]  # the longest delays


def launch_delay(t: Timeline) -> LaunchDelay:
    """The launch delays of ``t``'s kernels joined to a launch (the caller checks there are some)."""
    ev = t.ev
    has = t.launch >= 0
    lk = t.launch[has]
    call_end = ev.ts[lk] + ev.dur[lk]
    delay = t.start[has] - call_end
    dur = (t.end - t.start)[has]
    bounds = t.stream_bounds()
    first = np.zeros(len(t.index), dtype=bool)
    first[bounds[:-1]] = True
    prev_end = np.concatenate([[np.inf], t.end[:-1]])
    launch_ts = np.where(has, ev.ts[np.maximum(t.launch, 0)], -np.inf)
    bound = (launch_ts > prev_end) & ~first
    stretches = _stretches(t, bound)
    order = np.argsort(-delay, kind="stable")[:TOP]
    where = np.flatnonzero(has)
    slowest = tuple(SlowLaunch(t.name(int(where[j])), t.op(int(where[j])), float(delay[j]) * US) for j in order.tolist())
    q = np.percentile(delay, [50, 90, 100]) * US if len(delay) else np.zeros(3)
    return LaunchDelay(len(t.index), int(has.sum()), float(q[0]), float(q[1]), float(q[2]),
                       float(np.median(ev.dur[lk])) * US if len(lk) else 0.0, int((dur < ev.dur[lk]).sum()),
                       int(bound.sum()), sum(s.seconds for s in stretches), tuple(sorted(stretches,
                                                                                         key=lambda s: -s.seconds)[:TOP]),
                       slowest)


def _stretches(t: Timeline, bound: np.ndarray) -> list[LaunchStretch]:
    """Runs of >= MIN_STRETCH consecutive launch-bound kernels on one stream (a kernel and the one before it on
    its stream: a launch-bound kernel's run starts at its predecessor, whose end the host did not keep up with)."""
    if not len(bound):
        return []
    # a run: consecutive True in `bound` (a stream's first kernel is never bound: runs stay within a stream)
    edges = np.diff(np.concatenate([[0], bound.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)  # [start, end) in timeline positions
    keep = ends - starts >= MIN_STRETCH
    t0 = float(t.start.min())
    out = []
    for a, b in zip(starts[keep].tolist(), ends[keep].tolist(), strict=True):
        span = float(t.end[b - 1] - t.start[a])
        busy = float((t.end[a:b] - t.start[a:b]).sum())
        out.append(LaunchStretch(t.stream_name(int(t.stream[a])), (float(t.start[a]) - t0) * US, span * US, b - a,
                                 busy / span if span > 0 else 1.0))
    return out
