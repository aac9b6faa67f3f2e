"""What an analysed trace's headline must add to the analysis: its profiler steps and how far off the bound it is.

* Profiler steps are not runs: a trace recorded with a schedule holds one
  ``ProfilerStep#N`` per iteration, and its whole-run time is their sum, one
  measurement.  The time per step is the median of the steps' spans with its
  quartiles (:attr:`TraceNotes.steps`; kept in the workload's
  ``info["profiler_steps"]`` by the placer, for display).
* A measured time more than :data:`FAR_OFF` times the roofline bound is not a
  kernel running below its roofs: it usually means the trace's times are not
  the device's (a CPU trace analysed against a GPU device), a busy host, or
  profiling overhead (a ``with_stack=True`` trace pays for every Python call).
  :attr:`TraceNotes.far_off` says which, the likeliest first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roofline.core.stats import Timing

FAR_OFF = 100.0  # measured over bound beyond this: the times are not the device's own work
STEPS_KEY = "profiler_steps"  # workload.info: the ProfilerStep spans' median, q1, q3 (seconds) and count (repeats)
NOTE_KEY = "headline_note"  # workload.info: the far-off note, which the terminal's summary leads with


@dataclass(frozen=True)
class TraceNotes:
    """The facts a trace's headline adds: time per profiler step, measured over the bound, and the note when that
    ratio is far off (None when it is not)."""

    steps: Timing | None  # per ProfilerStep: median and quartiles over the steps (None: fewer than two steps)
    whole: float  # the measured whole-run time (the steps' sum, else the busy span), seconds
    ratio: float  # whole / the roofline bound (inf: a bound of 0)
    far_off: str | None



def step_timing(info: dict[str, Any]) -> Timing | None:
    """The time per profiler step from a trace workload's ``info`` (None: fewer than two steps recorded)."""
    d = info.get(STEPS_KEY)
    if not isinstance(d, dict):
        return None
    return Timing(float(d["median"]), float(d["q1"]), float(d["q3"]), int(d["repeats"]))


def steps_info(spans: list[float]) -> dict[str, float] | None:
    """What the placer keeps in ``info[STEPS_KEY]``: the steps' median and quartiles and their count (seconds;
    None for fewer than two steps: one step is the whole run)."""
    return Timing.of(spans).to_dict() if len(spans) >= 2 else None


def trace_notes(a: Any) -> TraceNotes | None:
    """The notes of an analysed trace (an :class:`~roofline.engine.analysis.Analysis` of a workload read from a
    trace), None for any other analysis or one with no measured whole-run time."""
    w = a.workload
    run = w.measured
    if w.trace is None or run is None or not run.timing.median > 0:
        return None
    whole = run.timing.median
    bound = a.total_time
    ratio = whole / bound if bound > 0 else float("inf")
    note = None
    if ratio > FAR_OFF:
        recorded, kind = w.trace.device_type, a.device.kind
        if (recorded == "cuda") != (kind == "gpu"):
            likely = (f"the trace holds {'kernel' if recorded == 'cuda' else 'CPU'} times and {a.device.name} is a "
                      f"{kind}: analyse it against the device that ran it")
        elif recorded == "cuda":
            likely = ("kernels too small to reach their roofs (each takes a few µs whatever its work), or another "
                      "GPU than the one analysed")
        else:
            likely = ("another (smaller or busier) machine than the one analysed, or profiling overhead "
                      "(with_stack=True and record_shapes=True pay per call)")
        note = (f"the measured time is more than {FAR_OFF:g}x the roofline bound: rarely the work itself; it usually "
                f"means a CPU trace against a GPU device, a busy host, or profiling overhead; here, likely {likely}")
    return TraceNotes(step_timing(w.info), whole, ratio, note)
