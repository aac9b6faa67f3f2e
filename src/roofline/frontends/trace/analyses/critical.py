"""The critical path of one profiler step: the chain of work the step's end waited on, walked back from its
last kernel.

At a kernel ``k`` the walk asks what ``k`` waited for last:

* its **launch** (the launch call ended after the previous kernel on ``k``'s stream: the host was later than
  the stream): the path goes to the CPU, and back along the launching thread to the last synchronisation call
  (``cuda*Synchronize``) before the launch, whose end waited on the GPU: the path goes on from the kernel that
  ended last before it; without one, the CPU's time from the step's start is the path's beginning;
* else the **previous kernel on its stream** (stream order), with any gap between the two as idle on the path
  (waiting on another stream, an event or another rank).

Each segment is a kernel, CPU time, a synchronisation wait, launch latency or idle; the kernels on the path are
summed by op with the op's roofline point (shortening a kernel off the path does not shorten the step).  The
step is the one of median duration (all the trace without profiler steps).  Cross-stream event waits are not in
a Chrome trace; they show as idle on the path.  This follows the idea of HTA's critical path analysis
(``hta/analyzers/critical_path_analysis.py``) on the events the reader keeps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.frontends.trace.analyses.timeline import US, RooflinePoint, Timeline, point_of
from roofline.frontends.trace.columns import RUNTIME

SEGMENTS = ("kernel", "cpu", "launch", "sync", "idle")
TOP = 5


@dataclass(frozen=True)
class PathOp:
    op: str  # '' for kernels launched by no placed op (then `kernel` names it)
    kernel: str  # the op's longest kernel on the path
    seconds: float  # kernel time on the path
    share: float  # of the path's length (CriticalPath.share_of)
    step_share: float  # of the step's time (CriticalPath.step_share_of)
    point: RooflinePoint | None  # its kernels on the path on their ops' roofs (:func:`~.timeline.point_of`)


@dataclass(frozen=True)
class CriticalPath:
    step: str
    step_seconds: float  # the step's span (its ProfilerStep, or the trace's kernels)
    seconds: float  # the path's length (the sum of its segments)
    by_segment: tuple[tuple[str, float], ...]  # (segment kind, seconds)
    kernels: int  # kernels on the path
    ops: tuple[PathOp, ...]  # the ops with the most kernel time on the path
    share_of: str = "the critical path"  # what PathOp.share is a share of
    step_share_of: str = "step time"  # what PathOp.step_share is a share of


def critical_path(t: Timeline) -> CriticalPath:
    """The critical path of ``t``'s median step (the module docstring); the caller checks ``t`` has kernels
    joined to launches."""
    name, w0, w1 = _median_step(t)
    ev = t.ev
    launch_ts = np.where(t.launch >= 0, ev.ts[np.maximum(t.launch, 0)], t.start)
    mine = np.flatnonzero((launch_ts >= w0) & (launch_ts < w1))
    seg = dict.fromkeys(SEGMENTS, 0.0)
    on: list[int] = []
    if len(mine):
        _walk(t, int(mine[np.argmax(t.end[mine])]), w0, seg, on)
    step_span = (w1 - w0) if t.steps else float(t.end.max() - w0)
    ops = _path_ops(t, np.asarray(on, dtype=np.int64), sum(seg.values()), step_span)
    return CriticalPath(name, step_span * US, sum(seg.values()) * US, tuple((k, v * US) for k, v in seg.items()),
                        len(on), ops)


def _median_step(t: Timeline) -> tuple[str, float, float]:
    if not t.steps:
        return "the whole trace", float(min(t.start.min(), t.ev.ts.min())), float("inf")
    d = [e - s for _, s, e in t.steps]
    return t.steps[int(np.argsort(d, kind="stable")[(len(d) - 1) // 2])]


def _walk(t: Timeline, k: int, w0: float, seg: dict[str, float], on: list[int]) -> None:
    """Walk back from kernel ``k`` (a timeline position) to the step's start ``w0``, adding up ``seg``."""
    ev = t.ev
    sync = _syncs(t)
    by_end = np.argsort(t.end, kind="stable")
    ends = t.end[by_end]
    for _ in range(4 * len(t.index) + 4):  # each turn moves strictly back in time
        on.append(k)
        seg["kernel"] += float(t.end[k] - t.start[k])
        p = k - 1 if k > 0 and t.stream[k - 1] == t.stream[k] and t.end[k - 1] > w0 else -1
        p_end = float(t.end[p]) if p >= 0 else -np.inf
        L = int(t.launch[k])
        call_end = float(ev.ts[L] + ev.dur[L]) if L >= 0 else -np.inf
        if L >= 0 and call_end > p_end:
            seg["launch"] += max(0.0, float(t.start[k]) - call_end)
            s = _last_sync(sync, int(ev.thread[L]), float(ev.ts[L]), w0)
            if s < 0:
                seg["cpu"] += max(0.0, call_end - w0)
                return
            s_end = float(ev.ts[s] + ev.dur[s])
            seg["cpu"] += call_end - s_end
            j = int(np.searchsorted(ends, s_end + 1.0, side="right")) - 1  # the kernel the sync waited for
            if j < 0 or t.end[by_end[j]] <= w0:
                seg["sync"] += float(ev.dur[s])
                return
            k_next = int(by_end[j])
            seg["sync"] += max(0.0, s_end - float(t.end[k_next]))
            k = k_next
        elif p >= 0:
            seg["idle"] += max(0.0, float(t.start[k]) - p_end)
            k = p
        else:
            return


def _syncs(t: Timeline) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The synchronisation calls (``cuda*Synchronize``) per thread: their ends, sorted, and their event indices."""
    ev = t.ev
    names = np.fromiter(("Synchronize" in n for n in ev.names), dtype=bool, count=len(ev.names))
    s = np.flatnonzero((ev.cat == RUNTIME) & names[ev.name])
    ends = ev.ts[s] + ev.dur[s]
    out = {}
    for thread in np.unique(ev.thread[s]).tolist():
        mine = np.flatnonzero(ev.thread[s] == thread)
        order = mine[np.argsort(ends[mine], kind="stable")]
        out[int(thread)] = (ends[order], s[order])
    return out


def _last_sync(sync: dict[int, tuple[np.ndarray, np.ndarray]], thread: int, before: float, w0: float) -> int:
    """The last synchronisation call on ``thread`` ending at or before ``before`` and after ``w0`` (-1: none)."""
    if thread not in sync:
        return -1
    ends, idx = sync[thread]
    j = int(np.searchsorted(ends, before, side="right")) - 1
    return int(idx[j]) if j >= 0 and ends[j] > w0 else -1


def _path_ops(t: Timeline, on: np.ndarray, total: float, step: float) -> tuple[PathOp, ...]:
    """The kernels on the path summed by op name (by kernel name for kernels no placed op launched), each on
    its roofline point (:func:`~.timeline.point_of`, over its kernels on the path)."""
    if not len(on):
        return ()
    dur = t.end[on] - t.start[on]
    groups: dict[str, list[int]] = {}
    for j, k in enumerate(on.tolist()):
        groups.setdefault(t.op(k) or t.name(k), []).append(j)
    out = []
    for js in sorted(groups.values(), key=lambda v: -float(dur[v].sum()))[:TOP]:
        d = float(dur[js].sum())
        longest = int(on[js[int(np.argmax(dur[js]))]])
        out.append(PathOp(t.op(longest), t.name(longest), d * US, d / total if total > 0 else 0.0,
                          d / step if step > 0 else 0.0, point_of(t, on[js])))
    return tuple(out)
