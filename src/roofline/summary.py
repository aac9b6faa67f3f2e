"""The facts a person reads, derived once from an :class:`~roofline.analysis.Analysis`.

Renderers (terminal, chart, HTML, compare) read these and compute nothing of
the model themselves, so they cannot disagree.  The definitions:

- **binding roof**: the compute ceiling or memory level (or the interconnect)
  that carries the most roofline time, each op's time counted at the roof that
  bounds it: a compute-bound op at its compute ceiling, a memory-bound op at
  its memory level.
- **dominant ceiling**: the compute ceiling carrying the most roofline time
  over all ops, bound either way (the roof whose ridge the chart marks).
- **measured**: measured ops against their own predictions only (like with
  like), and how many ops were measured.
- **headline**: one sentence of the answer, which every report and the terminal
  lead with: what ran where, its roofline time (per token for LLMs), the bound
  and the binding roof, the throughput, the measured time when there is one, and
  the best lever computed on that device (when advice was computed).

>>> from roofline import Device, Op, Workload, analyze
>>> dev = Device.simple("seed", "100 GFLOP/s", "10 GB/s")
>>> s = summarize(analyze(Workload.from_ops([Op("app", flops=0.8e9, bytes_read=4e9)]), dev))
>>> s.binding.describe()
'DRAM 10 GB/s (memory, 100% of the time)'
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from roofline.analysis import Analysis
from roofline.device import ComputeCeiling, MemoryCeiling
from roofline.llm_report import report
from roofline.text import shorten
from roofline.units import (
    format_bandwidth,
    format_count,
    format_flops,
    format_ratio,
    format_seconds,
    format_share,
    format_speedup,
)
from roofline.workload import TraceRecord

if TYPE_CHECKING:
    from roofline.advice import Advice, Lever
    from roofline.llm_report import LLMReport


@dataclass(frozen=True)
class BindingRoof:
    """The roof carrying the most roofline time: ``kind`` compute | memory | interconnect."""

    kind: str
    name: str  # "bf16 matrix", "HBM", "NVLink"
    value: float  # FLOP/s (compute) or B/s
    time: float  # roofline seconds carried by this roof
    share: float  # of the whole roofline time

    @property
    def label(self) -> str:
        """'bf16 matrix 989.4 TFLOP/s' or 'HBM 3.35 TB/s'."""
        return f"{self.name} {format_flops(self.value) if self.kind == 'compute' else format_bandwidth(self.value)}"

    def describe(self) -> str:
        """'HBM 3.35 TB/s (memory, 92% of the time)'."""
        return f"{self.label} ({self.kind}, {format_share(self.share)} of the time)"


@dataclass(frozen=True)
class MeasuredSummary:
    """Measured ops against their own predictions: ``predicted`` and ``measured`` seconds summed over them."""

    ops: int  # ops with a measured time
    of_ops: int  # ops in the workload
    predicted: float  # roofline seconds of the measured ops (x count)
    measured: float  # their measured seconds (x count)
    judged_at_cache: dict[str, int]  # level -> measured ops judged against it instead of main memory
    above_roof: int

    @property
    def ratio(self) -> float:
        """Roofline time / measured time of the measured ops (1 = at the roof)."""
        return self.predicted / self.measured if self.measured > 0 else math.nan


@dataclass(frozen=True)
class Ratio:
    """A predicted / measured ratio with its spread: ``low``..``high`` (whole model: the prediction over the
    measured q3 and q1; per op: the quartiles of the ops' ratios)."""

    value: float
    low: float
    high: float

    def describe(self) -> str:
        """'0.42 (0.40..0.44)'; a small ratio keeps two significant digits: '0.0012 (0.0011..0.0013)'."""
        return f"{format_ratio(self.value)} ({format_ratio(self.low)}..{format_ratio(self.high)})"


@dataclass(frozen=True)
class ForecastSummary:
    """The forecast beside the bound (:mod:`roofline.forecast`), and both against measured times when there are some.

    ``parts``: seconds of the whole forecast in the roof itself, below the roof, and overhead;
    ``by_verdict``: share of the forecast held by ops whose forecast is dominated by each term.
    Measured (``None`` without): ``whole_bound`` / ``whole_forecast`` = bound / forecast over the model timed
    whole without the profiler; ``op_bound`` / ``op_forecast`` = per-op ratios against the profiler's
    per-op times (median and quartiles over the measured ops; the bound of a measured op is its
    cache-aware judged time); ``profiler_cost``: a profiled run's wall time over an unprofiled one, - 1.
    """

    total: float
    bound: float
    parts: dict[str, float]
    by_verdict: dict[str, float]
    framework: str
    overhead: float
    calibration: str
    notes: tuple[str, ...]
    whole_bound: Ratio | None = None
    whole_forecast: Ratio | None = None
    op_bound: Ratio | None = None
    op_forecast: Ratio | None = None
    ops_measured: int = 0
    profiler_cost: float = math.nan

    def describe(self) -> str:
        """'forecast 1.2 ms beside a 0.4 ms bound: roof 33%, below roof 50%, overhead 17%'."""
        text = f"forecast {format_seconds(self.total)} beside the {format_seconds(self.bound)} bound"
        if self.total > 0:
            text += ": " + ", ".join(f"{k} {format_share(v / self.total)}" for k, v in self.parts.items())
        return text

    def describe_measured(self) -> str:
        """'vs measured: whole model bound 0.42 (0.40..0.44), forecast 0.97 (...); per op (median of 200) ...'."""
        bits = []
        if self.whole_bound is not None and self.whole_forecast is not None:
            bits.append(f"whole model: bound/measured {self.whole_bound.describe()}, "
                        f"forecast/measured {self.whole_forecast.describe()}")
        if self.op_bound is not None and self.op_forecast is not None:
            bits.append(f"per op (median and quartiles of {self.ops_measured}): bound/measured "
                        f"{self.op_bound.describe()}, forecast/measured {self.op_forecast.describe()}")
        if math.isfinite(self.profiler_cost):
            bits.append(f"the profiler made a run {format_share(abs(self.profiler_cost))} "
                        f"{'slower' if self.profiler_cost >= 0 else 'faster'}")
        return "; ".join(bits)


def forecast_summary(a: Analysis) -> ForecastSummary | None:
    """The forecast facts of ``a``; None when it was analysed without a forecast."""
    f = a.forecast
    if f is None:
        return None
    w = a.workload
    cal = f.calibration.describe() if f.calibration is not None else ""
    out = ForecastSummary(f.total_time, a.total_time, f.parts(), f.share_by_verdict(), f.framework, f.overhead, cal,
                          f.notes)
    run = w.measured
    seconds = w.columns["measured_seconds"]
    m = np.isfinite(seconds) & (seconds > 0)
    whole_bound = whole_forecast = op_bound = op_forecast = None
    cost = math.nan
    if run is not None and run.timing.median > 0:
        t = run.timing

        def whole(x: float) -> Ratio:
            return Ratio(x / t.median, x / t.high if t.high > 0 else math.nan, x / t.low if t.low > 0 else math.nan)

        whole_bound, whole_forecast = whole(a.total_time), whole(f.total_time)
        if run.profiled_seconds > 0:
            cost = run.profiled_seconds / t.median - 1.0
    if m.any():
        def per_op(x: np.ndarray) -> Ratio:
            q1, med, q3 = np.percentile(x[m] / seconds[m], [25, 50, 75])
            return Ratio(float(med), float(q1), float(q3))

        op_bound, op_forecast = per_op(a.judged_time), per_op(f.time)
    from dataclasses import replace

    return replace(out, whole_bound=whole_bound, whole_forecast=whole_forecast, op_bound=op_bound,
                   op_forecast=op_forecast, ops_measured=int(m.sum()), profiler_cost=cost)


def trace_lines(t: TraceRecord, top: int = 5) -> list[str]:
    """What a profiler trace held, for the terminal and the report: the time its ops hold, the largest
    shares in no op (with why), and each rank with the slowest marked."""
    what = "kernel" if t.device_type == "cuda" else "op"
    lines = [f"trace: {t.file}; placed ops hold {format_seconds(t.op_seconds)} of {format_seconds(t.trace_seconds)} "
             f"{what} time ({1 - t.unmatched_share:.1%})" + (f"; {t.steps} profiler steps" if t.steps else "")]
    if t.unmatched and t.trace_seconds > 0:
        shown = ", ".join(f"{u.name} {u.seconds / t.trace_seconds:.1%} ({u.reason})" for u in t.unmatched[:top])
        more = f"; {len(t.unmatched) - top} more in the JSON" if len(t.unmatched) > top else ""
        lines.append(f"trace time in no op ({t.unmatched_share:.1%}): {shown}{more}")
    for r in t.ranks:
        lines.append(f"rank {r.rank}: {format_seconds(r.seconds)} busy, ops {format_seconds(r.op_seconds)}, "
                     f"collectives {format_seconds(r.collective_seconds)} ({r.ops} ops; {r.file})"
                     + ("  <- slowest, shown" if r.rank == t.slowest_rank else ""))
    return lines


@dataclass(frozen=True)
class Summary:
    """Everything the renderers print about one analysis, computed once."""

    analysis: Analysis
    binding: BindingRoof
    dominant: ComputeCeiling
    roofs_used: tuple[tuple[ComputeCeiling, float], ...]  # compute ceilings by roofline time carried, most first
    share_by_bound: dict[str, float]
    measured: MeasuredSummary | None
    llm: LLMReport | None = None
    advice: Advice | None = None
    fallbacks: tuple[tuple[str, int], ...] = ()  # ('bf16 matrix -> fp32 matrix', ops): roofs asked for, not there
    forecast: ForecastSummary | None = None
    trace: TraceRecord | None = None  # the profiler trace the workload was read from

    @property
    def total_time(self) -> float:
        return self.analysis.total_time

    @property
    def ridge(self) -> float:
        """The ridge the charts mark: the dominant ceiling over main memory, in FLOP/B."""
        return self.dominant.flops / self.analysis.device.main_memory.bandwidth

    def describe_fallbacks(self) -> str:
        """'bf16 matrix -> fp32 matrix (10 ops)': the roofs ops asked for that the device lacks ('' for none)."""
        return ", ".join(f"{fb} ({n} op{'s' if n > 1 else ''})" for fb, n in self.fallbacks)

    @property
    def attainable_flops(self) -> float:
        a = self.analysis
        return a.total_flops / a.total_time if a.total_time > 0 else math.nan


def headline(s: Summary, shown: Callable[[str], str] = shorten) -> str:
    """One sentence of the answer.  Names from files go through ``shown`` (default: shortened past 256
    characters); each renderer still escapes the sentence for its medium.

    >>> from roofline import Device, Op, Workload, analyze
    >>> dev = Device.simple("seed", "100 GFLOP/s", "10 GB/s")
    >>> headline(summarize(analyze(Workload.from_ops([Op("app", flops=0.8e9, bytes_read=4e9)], title="app"), dev)))
    'app on seed: 400 ms (roofline bound), memory-bound on DRAM 10 GB/s (100% of the time); attainable 2 GFLOP/s.'
    """
    from roofline import arguments as arg

    arg.need(s, Summary, "headline", "s", "a Summary (roofline.summarize(analysis))")
    arg.function(shown, "headline", "shown")
    a = s.analysis
    b = s.binding
    lead = measurement_warning(s)
    time = f"{format_seconds(a.total_time)} (roofline bound)"
    rate = f"attainable {format_flops(s.attainable_flops)}" if a.total_time > 0 else ""
    r = s.llm
    if r is not None:
        if r.tpot is not None and r.spec.phase != "prefill":
            time = f"{format_seconds(r.tpot)} per token (roofline bound)"
        elif r.ttft is not None:
            time = f"{format_seconds(r.ttft)} to the first token (roofline bound)"
        kind = "prompt" if r.spec.phase == "prefill" else "output"
        rate = f"{format_count(r.tokens_per_s)} {kind} tokens/s"
    text = f"{shown(a.workload.title)} on {shown(a.device.name)}: {time}"
    text += f", {b.kind}-bound on {shown(b.label)} ({format_share(b.share)} of the time)" if b.time > 0 else ", no time (no FLOPs, no bytes)"
    if rate:
        text += f"; {rate}"
    f = s.forecast
    if f is not None and f.total > 0:
        top = max(f.parts.items(), key=lambda kv: kv[1])
        text += f"; forecast {format_seconds(f.total)} (most in {top[0]}: {format_share(top[1] / f.total)})"
    m = s.measured
    if m is not None and m.measured > 0:
        vs = f"{format_count(m.measured / m.predicted)}x their bound" if m.predicted > 0 else "their bound is 0"
        text += f"; measured {format_seconds(m.measured)} for {m.ops} of {m.of_ops} ops ({vs})"
    lever = best_lever(s)
    if lever is not None:
        text += f"; best lever here: {lever.name} ({format_speedup(lever.speedup)})"
    return (f"{shown(lead)}. " if lead else "") + text + "."


def measurement_warning(s: Summary) -> str | None:
    """The warning that leads every output of ``s`` (headline, chart caption, HTML top), or None: the device's
    measurement was disturbed or inconsistent (:func:`roofline.bench.quality.warning`), or the forecast ran on a
    calibration flagged as noisy (``Calibration.quality``)."""
    from roofline.bench.quality import warning

    dev = s.analysis.device
    parts = [w] if (w := warning(dev.metadata)) else []
    cal = s.analysis.forecast.calibration if s.analysis.forecast is not None else None
    if cal is not None and cal.quality:
        parts.append(f"NOISY calibration ({cal.date}), the forecast uses it: {'; '.join(cal.quality)}")
    return " | ".join(parts) or None


def best_lever(s: Summary) -> Lever | None:
    """The computed lever with the largest speed-up on the analysed device itself (another device is not a lever
    the user can pull on this machine); None without advice or levers."""
    if s.advice is None:
        return None
    here = [lv for lv in s.advice.levers if lv.name != "device"]
    return max(here, key=lambda lv: lv.speedup) if here else None


def roofs_of_ops(a: Analysis) -> tuple[list[ComputeCeiling], list[MemoryCeiling]]:
    """Every compute ceiling and memory level some op is bounded or judged by: what a chart of ``a`` must draw.

    Ceilings fastest first; levels slowest first (main memory before caches)."""
    ceilings = sorted({id(c): c for c in (a.ceilings[j] for j in np.unique(a.ceiling_index))}.values(),
                      key=lambda c: -c.flops)
    used = np.unique(np.concatenate([a.level_index, a.judged_level_index]))
    levels = sorted({id(m): m for m in (a.levels[j] for j in used if j >= 0)}.values(), key=lambda m: m.bandwidth)
    return ceilings, levels


def drawn_ceilings(a: Analysis) -> list[ComputeCeiling]:
    """The compute roofs every chart of ``a`` draws (one rule for the PNG, the HTML and the notebook chart):
    each ceiling an op is bounded by, plus the fastest of the device's ceilings in the precisions the ops
    use, fastest first.  A roof in a precision no op uses is not drawn (no fp8 roof over a bf16 workload)."""
    used = {c.key: c for c in roofs_of_ops(a)[0]}
    precisions = {c.precision for c in used.values()}
    same = [c for c in a.device.compute if c.precision in precisions] or list(a.device.compute)
    fastest = max(same, key=lambda c: c.flops)
    used.setdefault(fastest.key, fastest)
    return sorted(used.values(), key=lambda c: -c.flops)


def ceiling_times(a: Analysis) -> np.ndarray:
    """Roofline seconds (x count) per entry of ``a.ceilings``, every op counted at its compute ceiling."""
    return np.bincount(a.ceiling_index, weights=a.total_op_time, minlength=len(a.ceilings))


def dominant_ceiling(a: Analysis) -> ComputeCeiling:
    """The compute ceiling carrying the most roofline time; the device's fastest when no op takes time."""
    t = ceiling_times(a)
    if len(t) and t.sum() > 0:
        return a.ceilings[int(np.argmax(t))]
    return max(a.device.compute, key=lambda c: c.flops)


def binding_roof(a: Analysis) -> BindingRoof:
    """The compute ceiling or memory level that carries the most roofline time (module docs)."""
    total = a.total_time
    compute_bound = a.compute_time >= a.memory_time
    weights = a.total_op_time
    by_ceiling = np.bincount(a.ceiling_index[compute_bound], weights=weights[compute_bound],
                             minlength=len(a.ceilings))
    mem = ~compute_bound
    link = mem & (a.level_index < 0)
    by_level = np.bincount(a.level_index[mem & ~link], weights=weights[mem & ~link], minlength=len(a.levels))
    link_time = float(weights[link].sum())
    candidates: list[tuple[float, str, str, float]] = []
    for j, t in enumerate(by_ceiling):
        candidates.append((float(t), "compute", a.ceilings[j].label, a.ceilings[j].flops))
    for j, t in enumerate(by_level):
        candidates.append((float(t), "memory", a.levels[j].level, a.levels[j].bandwidth))
    if link_time > 0:
        ic = a.device.interconnect
        candidates.append((link_time, "interconnect", (ic.name if ic else "") or "interconnect",
                           ic.bandwidth if ic else a.device.main_memory.bandwidth))
    if not candidates or max(c[0] for c in candidates) <= 0:
        main = a.device.main_memory
        return BindingRoof("memory", main.level, main.bandwidth, 0.0, 0.0)
    t, kind, name, value = max(candidates, key=lambda c: c[0])  # first wins a tie: compute before memory
    return BindingRoof(kind, name, value, t, t / total if total > 0 else 0.0)


def measured_summary(a: Analysis) -> MeasuredSummary | None:
    """Measured ops vs their own predictions; None when nothing was measured."""
    w = a.workload
    if not w.has_measurements:
        return None
    seconds = w.columns["measured_seconds"]
    m = np.isfinite(seconds)
    count = w.columns["count"]
    judged = a.judged_level[a.judged_at_cache & m]
    levels, counts = np.unique(judged, return_counts=True)
    return MeasuredSummary(int(m.sum()), len(w), float(a.total_op_time[m].sum()), float(seconds[m] @ count[m]),
                           dict(zip(levels.tolist(), counts.tolist(), strict=True)), int(a.above_roof.sum()))


def llm_report(a: Analysis) -> LLMReport | None:
    """The LLM facts (time per token, throughput, footprint, largest and ridge batch) of an LLM workload."""
    return None if a.workload.llm is None else report(a)


def summarize(a: Analysis, *, advice: Advice | None = None) -> Summary:
    """All the facts of ``a`` (``advice``, when the caller computed it, travels with them)."""
    from roofline import arguments as arg

    arg.need(a, Analysis, "summarize", "a", "an Analysis")
    if advice is not None and not hasattr(advice, "levers"):  # (advice sits above this layer: by its shape)
        raise arg.type_error("summarize", "advice", "an Advice (roofline.advise(analysis)) or None", advice)
    t = ceiling_times(a)
    used = tuple((a.ceilings[j], float(t[j])) for j in np.argsort(-t, kind="stable") if t[j] > 0)
    counts = np.bincount(a.ceiling_index, minlength=len(a.ceilings))
    fallbacks = tuple((fb, int(counts[j])) for j, fb in enumerate(a.fallbacks) if fb and counts[j])
    return Summary(a, binding_roof(a), dominant_ceiling(a), used, a.time_share_by_bound(), measured_summary(a),
                   llm_report(a), advice, fallbacks, forecast_summary(a), a.workload.trace)


def describe_measured(m: MeasuredSummary) -> str:
    """'measured: 2 of 3 ops, 1.2 ms vs 0.9 ms roofline (0.75 of the measured time)'."""
    from roofline.units import format_seconds

    return (f"measured: {m.ops} of {m.of_ops} ops; their roofline time {format_seconds(m.predicted)} vs "
            f"{format_seconds(m.measured)} measured (roofline / measured = {m.ratio:.3g})")
