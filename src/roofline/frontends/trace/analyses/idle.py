"""GPU idle time: per stream, the gaps between consecutive kernels, each with its cause where known.

As HTA's idle-time breakdown defines them (``hta/analyzers/breakdown_analysis.py``, ``get_idle_time_breakdown``),
a gap before kernel ``k`` on a stream is:

* **host wait** when ``k``'s launch call started after the previous kernel on the stream had ended (the CPU did
  not enqueue work fast enough);
* **kernel wait** when it is not a host wait and shorter than :data:`KERNEL_WAIT_US` (HTA's default
  ``consecutive_kernel_delay``, 30 ns: the device's own overhead between back-to-back kernels);
* **other**: the rest (waiting on another stream, a synchronisation, another rank in a collective).

The device-wide idle time is the span from the first kernel's start to the last kernel's end less the union of
every stream's kernels.  A CPU-only trace gets the same per thread: the gaps in the union of each thread's
cpu_ops (cause: not known without kernels).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.frontends.trace.analyses.timeline import US, Timeline, cpu_ops, length, union

KERNEL_WAIT_US = 0.03  # HTA's consecutive_kernel_delay default (30 ns)
CAUSES = ("host wait", "kernel wait", "other")
HOST, KERNEL_WAIT, OTHER = range(len(CAUSES))
TOP_GAPS = 5


@dataclass(frozen=True)
class StreamIdle:
    """One stream's (or, on a CPU trace, one thread's) busy and idle seconds between its first and last kernel."""

    stream: str
    kernels: int
    busy: float
    idle: float
    host_wait: float
    kernel_wait: float
    other: float


@dataclass(frozen=True)
class IdleGap:
    """One gap: where, how long (s), its cause, and the kernel after it (and the op that launched it)."""

    stream: str
    start: float  # s from the first kernel's start
    seconds: float
    cause: str
    before: str
    after: str
    op: str


@dataclass(frozen=True)
class IdleTime:
    device: str  # 'gpu' or 'cpu'
    span: float  # s: first kernel start to last kernel end (all streams)
    busy: float  # s: the union of every stream's kernels
    idle: float  # s: span - busy
    host_wait: float  # s, summed over streams
    kernel_wait: float
    other: float
    streams: tuple[StreamIdle, ...]
    gaps: tuple[IdleGap, ...]  # the longest, longest first

    @property
    def idle_share(self) -> float:
        return self.idle / self.span if self.span > 0 else 0.0


def idle_time(t: Timeline) -> IdleTime:
    """The idle time of ``t`` (the module docstring)."""
    if not t.gpu:
        return _cpu_idle(t)
    bounds = t.stream_bounds()
    gap = np.zeros(len(t.index))  # the gap before each kernel (0 for a stream's first)
    gap[1:] = t.start[1:] - t.end[:-1]
    first = np.zeros(len(t.index), dtype=bool)
    first[bounds[:-1]] = True
    gap[first] = 0.0
    prev_end = np.concatenate([[0.0], t.end[:-1]])
    launch_ts = np.where(t.launch >= 0, t.ev.ts[np.maximum(t.launch, 0)], -np.inf)
    cause = np.where(launch_ts > prev_end, HOST, np.where(gap < KERNEL_WAIT_US, KERNEL_WAIT, OTHER))
    gap = np.maximum(gap, 0.0)  # overlapping kernels on one stream (clock skew) are no gap
    streams = []
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        g, c = gap[a:b], cause[a:b]
        busy = length(*union(t.start[a:b], t.end[a:b]))
        streams.append(StreamIdle(t.stream_name(int(t.stream[a])), b - a, busy * US, float(g.sum()) * US,
                                  *(float(g[c == j].sum()) * US for j in range(len(CAUSES)))))
    t0 = float(t.start.min())
    span = float(t.end.max()) - t0
    busy = length(*union(t.start, t.end))
    top = np.argsort(-gap, kind="stable")[:TOP_GAPS]
    gaps = tuple(IdleGap(t.stream_name(int(t.stream[k])), (t.start[k] - gap[k] - t0) * US, gap[k] * US,
                         CAUSES[int(cause[k])], t.name(k - 1), t.name(k), t.op(k)) for k in top.tolist() if gap[k] > 0)
    host, kernel, other = (float(sum(getattr(s, f) for s in streams)) for f in ("host_wait", "kernel_wait", "other"))
    return IdleTime("gpu", span * US, busy * US, (span - busy) * US, host, kernel, other, tuple(streams), gaps)


def _cpu_idle(t: Timeline) -> IdleTime:
    """A CPU-only trace: per thread with cpu_ops, the gaps in the union of its ops (cause not known)."""
    ev = t.ev
    ops = cpu_ops(ev)
    if not len(ops):
        return IdleTime("cpu", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, (), ())
    threads = ev.thread[ops]
    streams, gaps = [], []
    t0, t1 = float(ev.ts[ops].min()), float((ev.ts[ops] + ev.dur[ops]).max())
    for code in np.unique(threads).tolist():
        mine = ops[threads == code]
        s, e = union(ev.ts[mine], ev.ts[mine] + ev.dur[mine])
        busy, span = length(s, e), float(e[-1] - s[0])
        g = s[1:] - e[:-1]
        streams.append(StreamIdle(t.thread_name(code), len(mine), busy * US, (span - busy) * US, 0.0, 0.0,
                                  (span - busy) * US))
        gaps += [IdleGap(t.thread_name(code), (float(e[j]) - t0) * US, float(g[j]) * US, "other", "", "", "")
                 for j in np.argsort(-g, kind="stable")[:TOP_GAPS].tolist()]
    all_s, all_e = union(ev.ts[ops], ev.ts[ops] + ev.dur[ops])
    busy = length(all_s, all_e)
    other = sum(s.other for s in streams)
    return IdleTime("cpu", (t1 - t0) * US, busy * US, (t1 - t0 - busy) * US, 0.0, 0.0, other, tuple(streams),
                    tuple(sorted(gaps, key=lambda g: -g.seconds)[:TOP_GAPS]))
