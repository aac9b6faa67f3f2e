"""The memory timeline: the allocator's allocated bytes over time, per device, from Kineto's ``[memory]`` instant
events (``profile_memory=True``; each carries the allocation's ``Bytes``, negative for a free, and the
allocator's ``Total Allocated`` after it).

Per device: the peak and when it happened (and in which profiler step), the allocated bytes at the start and
end, what was allocated and freed, per step the peak and the bytes still allocated at its end (steady growth
from step to step is a leak, or a cache filling), and the timeline sampled to at most :data:`SAMPLES` points
(each sample the largest value in its bin, so the peak is kept) for a chart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.frontends.trace.columns import TraceEvents

SAMPLES = 200
US = 1e-6


@dataclass(frozen=True)
class StepMemory:
    step: str
    peak: float  # bytes
    end: float  # bytes allocated at the step's end


@dataclass(frozen=True)
class DeviceMemory:
    device: str  # 'cuda:0', 'cpu'
    events: int
    peak: float  # bytes
    peak_at: float  # s from the first memory event of the trace
    peak_step: str  # '' outside every profiler step
    start: float  # bytes allocated before the first event
    end: float  # after the last
    allocated: float  # bytes of every allocation
    freed: float
    steps: tuple[StepMemory, ...]
    samples: tuple[tuple[float, float], ...]  # (s, bytes)


@dataclass(frozen=True)
class MemoryTimeline:
    devices: tuple[DeviceMemory, ...]


def memory_timeline(ev: TraceEvents, steps: tuple[tuple[str, float, float], ...] = ()) -> MemoryTimeline:
    """The memory timeline of ``ev`` (the module docstring); ``steps``: (name, start us, end us)."""
    t0 = float(ev.mem_ts.min()) if len(ev.mem_ts) else 0.0
    out = []
    for dev in np.unique(ev.mem_device).tolist():
        mine = np.flatnonzero(ev.mem_device == dev)
        mine = mine[np.argsort(ev.mem_ts[mine], kind="stable")]
        ts, total, nbytes = ev.mem_ts[mine], ev.mem_total[mine].astype(float), ev.mem_bytes[mine].astype(float)
        p = int(np.argmax(total))
        at = float(ts[p])
        in_step = [name for name, s, e in steps if s <= at < e]
        out.append(DeviceMemory("cpu" if dev < 0 else f"cuda:{dev}", len(mine), float(total[p]), (at - t0) * US,
                                in_step[0] if in_step else "", float(total[0] - nbytes[0]), float(total[-1]),
                                float(nbytes[nbytes > 0].sum()), float(-nbytes[nbytes < 0].sum()),
                                _per_step(ts, total, steps), _samples(ts - t0, total)))
    return MemoryTimeline(tuple(out))


def _per_step(ts: np.ndarray, total: np.ndarray, steps: tuple[tuple[str, float, float], ...]) -> tuple[StepMemory, ...]:
    if not steps:
        return ()
    a = np.searchsorted(ts, [s for _, s, _ in steps], side="left").tolist()
    b = np.searchsorted(ts, [e for _, _, e in steps], side="left").tolist()
    return tuple(StepMemory(name, float(total[i:j].max()), float(total[j - 1]))
                 for (name, _, _), i, j in zip(steps, a, b, strict=True) if j > i)


def _samples(t: np.ndarray, total: np.ndarray) -> tuple[tuple[float, float], ...]:
    """At most SAMPLES points: the largest value in each of SAMPLES equal time bins (the peak is one of them)."""
    if len(t) <= SAMPLES:
        return tuple((float(a) * US, float(b)) for a, b in zip(t, total, strict=True))
    span = float(t[-1] - t[0]) or 1.0
    bins = np.minimum(((t - t[0]) / span * SAMPLES).astype(np.int64), SAMPLES - 1)
    order = np.lexsort((-total, bins))  # by bin, the largest value first within each
    first = order[np.flatnonzero(np.diff(bins[order], prepend=-1))]
    return tuple((float(t[k]) * US, float(total[k])) for k in np.sort(first).tolist())
