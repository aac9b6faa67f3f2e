"""The analyses asked for, run on one trace's shared :class:`~.timeline.Timeline` (one pass over the events to
build it; each analysis then reads its columns), with the ones that do not apply skipped and why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError
from roofline.frontends.trace.analyses.critical import CriticalPath, critical_path
from roofline.frontends.trace.analyses.idle import IdleTime, idle_time
from roofline.frontends.trace.analyses.kernels import KernelBreakdown, kernel_breakdown
from roofline.frontends.trace.analyses.launch import LaunchDelay, launch_delay
from roofline.frontends.trace.analyses.memory import MemoryTimeline, memory_timeline
from roofline.frontends.trace.analyses.overlap import Overlap, overlap
from roofline.frontends.trace.analyses.timeline import timeline
from roofline.frontends.trace.columns import TraceEvents

#: the analyses, in report order (``--analyses``)
ANALYSES = ("idle", "kernels", "overlap", "launch", "critical-path", "memory")
NO_KERNELS = "no GPU kernels in the trace (a CPU-only trace)"
NO_LINKS = ("no kernel carries the correlation id of a launch call (args.correlation; Kineto's ac2g flow events "
            "link the same pairs), so no CPU launch can be joined to its kernel")


@dataclass(frozen=True)
class TraceAnalyses:
    """The analyses of one trace (None where not asked for or skipped: ``skipped`` says why)."""

    path: str
    device: str  # 'cuda' (kernels in the trace) or 'cpu'
    asked: tuple[str, ...]
    idle: IdleTime | None = None
    kernels: KernelBreakdown | None = None
    overlap: Overlap | None = None
    launch: LaunchDelay | None = None
    critical_path: CriticalPath | None = None
    memory: MemoryTimeline | None = None
    skipped: tuple[tuple[str, str], ...] = ()  # (analysis, why)


def parse_analyses(text: str) -> tuple[str, ...]:
    """``'all'`` or a comma-separated list of :data:`ANALYSES` -> the names, in report order."""
    asked = [a.strip() for a in text.split(",") if a.strip()]
    if asked == ["all"]:
        return ANALYSES
    bad = [a for a in asked if a not in ANALYSES]
    if bad or not asked:
        raise RooflineError(f"--analyses {text!r}: give 'all' or a comma-separated list of {', '.join(ANALYSES)}")
    return tuple(a for a in ANALYSES if a in asked)


def run_analyses(ev: TraceEvents, asked: tuple[str, ...] = ANALYSES, owner: np.ndarray | None = None,
                 analysis: Any = None) -> TraceAnalyses:
    """The ``asked`` analyses of ``ev``; ``owner`` (the placer's op row per event) and ``analysis`` (the
    workload's roofline) put each kernel and op on its roofline point."""
    t = timeline(ev, owner, analysis)
    got: dict[str, Any] = {}
    skipped: list[tuple[str, str]] = []
    for a in asked:
        why = _why_not(a, t)
        if why:
            skipped.append((a, why))
            continue
        if a == "idle":
            got["idle"] = idle_time(t)
        elif a == "kernels":
            got["kernels"] = kernel_breakdown(t)
        elif a == "overlap":
            got["overlap"] = overlap(t)
        elif a == "launch":
            got["launch"] = launch_delay(t)
        elif a == "critical-path":
            got["critical_path"] = critical_path(t)
        else:
            got["memory"] = memory_timeline(ev, t.steps)
    return TraceAnalyses(ev.path, "cuda" if t.gpu else "cpu", asked, skipped=tuple(skipped), **got)


def _why_not(a: str, t: Any) -> str:
    """Why analysis ``a`` does not apply to timeline ``t`` ('' when it does)."""
    if a in ("kernels", "overlap", "launch", "critical-path") and not t.gpu:
        return NO_KERNELS + (": the op table above is the breakdown" if a == "kernels" else
                             ": the ops run one after another on the CPU; the op table is its path"
                             if a == "critical-path" else "")
    if a in ("launch", "critical-path") and not t.linked:
        return NO_LINKS
    if a == "overlap" and not (t.kind == 1).any():
        return "no communication kernels (NCCL) in the trace"
    if a == "memory" and not len(t.ev.mem_ts):
        return ("no memory events in the trace (record it with profile_memory=True: Kineto's [memory] instant "
                "events)")
    return ""
