"""The facts a person reads, derived once from an :class:`~roofline.engine.analysis.Analysis`.

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

from roofline.core.stats import SPREAD_WARN, Timing
from roofline.core.text import shorten
from roofline.core.units import (
    format_bandwidth,
    format_count,
    format_flops,
    format_gib,
    format_ratio,
    format_seconds,
    format_share,
)
from roofline.engine.analysis import Analysis
from roofline.hardware.device import ComputeCeiling, MemoryCeiling
from roofline.words.llm_report import report
from roofline.work.workload import TraceRecord

if TYPE_CHECKING:
    from roofline.words.levers import Advice, Lever
    from roofline.words.llm_report import LLMReport

#: an op whose spread over its profiled runs, (q3 - q1) / median, is above this is marked noisy (the tables
#: mark its measured time, the summary lists it): the one spread limit of :mod:`roofline.core.stats`
NOISY_SPREAD = SPREAD_WARN


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
    """Measured ops against their own predictions: ``predicted`` and ``measured`` seconds summed over them.

    ``measured`` sums each op's median over the profiled runs (x count); ``measured_low`` / ``measured_high``
    the same sums of their q1 and q3 (equal to ``measured`` when the ops carry no per-run quartiles);
    ``whole``: the whole model timed without the profiler (median and quartiles over its repeats), which
    the headline leads with when there is one; ``noisy``: indices of the ops whose own spread over the
    profiled runs, (q3 - q1) / median, is above :data:`NOISY_SPREAD`.
    """

    ops: int  # ops with a measured time
    of_ops: int  # ops in the workload
    predicted: float  # roofline seconds of the measured ops (x count)
    measured: float  # their measured seconds (x count)
    judged_at_cache: dict[str, int]  # level -> measured ops judged against it instead of main memory
    above_roof: int
    measured_low: float = math.nan
    measured_high: float = math.nan
    whole: Timing | None = None
    noisy: tuple[int, ...] = ()
    profiled_runs: int = 0  # runs each op's median is over (0: times given, not profiled here)

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
    """The forecast beside the bound (:mod:`roofline.engine.forecast`), and both against measured times when there are some.

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
    uncalibrated: str = ""  # '' when calibrated, else what the forecast is (Forecast.uncalibrated)

    def describe(self) -> str:
        """'forecast 1.2 ms beside a 0.4 ms bound: roof 33%, below roof 50%, overhead 17%', with
        '(uncalibrated: forecast = bound ...)' after the times on a device without a calibration."""
        text = f"forecast {format_seconds(self.total)} beside the {format_seconds(self.bound)} bound"
        if self.uncalibrated:
            text += f" ({self.uncalibrated})"
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
                          f.notes, uncalibrated=f.uncalibrated)
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
        return self.dominant.ridge(self.analysis.device.main_memory)

    def describe_fallbacks(self) -> str:
        """'bf16 matrix -> fp32 matrix (10 ops)': the roofs ops asked for that the device lacks ('' for none)."""
        return ", ".join(f"{fb} ({n} op{'s' if n > 1 else ''})" for fb, n in self.fallbacks)

    @property
    def attainable_flops(self) -> float:
        a = self.analysis
        return a.total_flops / a.total_time if a.total_time > 0 else math.nan


def headline(s: Summary, shown: Callable[[str], str] = shorten) -> str:
    """One sentence of the answer, the deciding fact first.  Names from files go through ``shown`` (default:
    shortened past 256 characters); each renderer still escapes the sentence for its medium.

    The order: the measurement's warning (when there is one); an LLM prompt past the model's
    max_position_embeddings that only its rope scaling reaches (:func:`roofline.llm.spec.context_note`); for an
    LLM run that does not fit the device,
    that (:func:`fit_clause`); then the bound and the forecast on one time basis per clause, each labelled
    (LLMs: per output token with the matching tokens/s, TTFT, the whole run; :func:`llm_time_clauses`);
    the binding roof; the measured time (the whole model's when it was timed whole; :func:`measured_clause`);
    the best lever on this device.

    >>> from roofline import Device, Op, Workload, analyze
    >>> dev = Device.simple("seed", "100 GFLOP/s", "10 GB/s")
    >>> headline(summarize(analyze(Workload.from_ops([Op("app", flops=0.8e9, bytes_read=4e9)], title="app"), dev)))
    'app on seed: 400 ms (roofline bound), memory-bound on DRAM 10 GB/s (100% of the time); attainable 2 GFLOP/s.'
    """
    from roofline.core import arguments as arg

    arg.need(s, Summary, "headline", "s", "a Summary (roofline.summarize(analysis))")
    arg.function(shown, "headline", "shown")
    a = s.analysis
    b = s.binding
    lead = [shown(w)] if (w := measurement_warning(s)) else []
    r = s.llm
    if r is not None and r.context_note:
        lead.append(r.context_note)
    if r is not None and (fit := fit_clause(r, shown)):
        lead.append(fit)
    where = f"{shown(a.workload.title)} on {shown(a.device.name)}"
    f = s.forecast
    if r is not None:
        text = f"{where}: " + "; ".join(llm_time_clauses(r))
        whole = "the whole run's bound" if r.spec.phase == "generate" else "the bound"
        text += (f"; {b.kind}-bound on {shown(b.label)} ({format_share(b.share)} of {whole})" if b.time > 0
                 else "; no time (no FLOPs, no bytes)")
    else:
        text = f"{where}: {format_seconds(a.total_time)} (roofline bound)"
        text += (f", {b.kind}-bound on {shown(b.label)} ({format_share(b.share)} of the time)" if b.time > 0
                 else ", no time (no FLOPs, no bytes)")
        if a.total_time > 0:
            text += f"; attainable {format_flops(s.attainable_flops)}"
        if f is not None and f.total > 0:
            top = max(f.parts.items(), key=lambda kv: kv[1])
            text += f"; forecast {format_seconds(f.total)} (most in {top[0]}: {format_share(top[1] / f.total)}"
            text += f"; {f.uncalibrated})" if f.uncalibrated else ")"
    if s.measured is not None and (m := measured_clause(s.measured, a.total_time)):
        text += f"; {m}"
    lever = best_lever(s)
    if lever is not None:
        text += f"; best lever here: {lever.name} ({lever.effect()})"
    return "".join(f"{x}. " for x in lead) + text + "."


def chart_heading(s: Summary, shown: Callable[[str], str] = shorten, width: int = 120) -> list[str]:
    """The lines under a chart's title, the headline's rule in short: does-not-fit first, then the bound (and
    forecast) on one time basis per clause, then the binding roof; wrapped at ``width`` characters.

    >>> from roofline import Device, Op, Workload, analyze
    >>> dev = Device.simple("seed", "100 GFLOP/s", "10 GB/s")
    >>> chart_heading(summarize(analyze(Workload.from_ops([Op("app", flops=0.8e9, bytes_read=4e9)]), dev)))
    ['400 ms (roofline bound); binding roof: DRAM 10 GB/s (memory, 100% of the time)']
    """
    import textwrap

    r = s.llm
    parts = []
    fp = r.footprint if r is not None else None
    if r is not None and fp is not None and fp.fits is False and fp.capacity is not None:
        parts.append(f"does not fit: {format_gib(fp.total)} needed, {format_gib(fp.capacity)} on the device"
                     + (", fits with " + " / ".join(o.describe() for o in r.fits_with) if r.fits_with else ""))
    if r is not None:
        parts += llm_time_clauses(r)
    else:
        times = f"{format_seconds(s.total_time)} (roofline bound)"
        if s.forecast is not None and s.forecast.total > 0:
            times += f", {format_seconds(s.forecast.total)} forecast"
            times += f" ({s.forecast.uncalibrated})" if s.forecast.uncalibrated else ""
        parts.append(times)
    parts.append(f"binding roof: {shown(s.binding.describe())}")
    m = s.measured
    if m is not None and m.whole is not None:
        parts.append(f"measured {format_seconds(m.whole.median)} whole model ({runs_of(m.whole.repeats)})")
    elif m is not None and m.measured > 0:
        parts.append(f"measured {format_seconds(m.measured)} for {m.ops} of {m.of_ops} ops")
    lines: list[str] = []
    for part in parts:  # whole clauses per line: a number is never split from its unit
        if lines and len(lines[-1]) + 2 + len(part) <= width:
            lines[-1] += f"; {part}"
        else:
            lines += textwrap.wrap(part, width, break_long_words=False, break_on_hyphens=False) if len(part) > width \
                else [part]
    return lines


def fit_clause(r: LLMReport, shown: Callable[[str], str] = shorten) -> str | None:
    """'does not fit: 141.9 GiB needed, 79.15 GiB on NVIDIA H100 SXM5 80GB (weights 131.4 GiB, KV cache 6.25 GiB,
    activations 4.25 GiB); fits with tp 2 / int8 weights', or None when it fits (or the device lists no
    capacity).  Capacities in GiB as the device stores them (:attr:`Device.memory_capacity`); the ways to fit
    are computed (:func:`roofline.llm.metrics.fit_options`)."""
    fp = r.footprint
    if fp.fits is not False or fp.capacity is None:
        return None
    text = (f"does not fit: {format_gib(fp.total)} needed, {format_gib(fp.capacity)} on {shown(r.device)} "
            f"(weights {format_gib(fp.weights)}, KV cache {format_gib(fp.kv_cache)}, activations "
            f"{format_gib(fp.activations)})")
    if r.fits_with:
        return text + "; fits with " + " / ".join(o.describe() for o in r.fits_with)
    tried = "tp up to 8, int8/int4 weights or KV cache, " + ("" if r.spec.flash else "fused attention, ")
    return text + f"; no single change fits ({tried}a smaller batch)"


def llm_time_clauses(r: LLMReport) -> list[str]:
    """The bound and the forecast of an LLM run, one time basis per clause: per output token (decode, generate)
    with the matching tokens/s over the batch (batch / time per token), TTFT (prefill, generate), and the whole
    run (generate) with its output tokens/s (batch x gen / the whole run's time)."""
    s = r.spec
    out = []
    label = [r.uncalibrated] if r.uncalibrated else []  # said once, with the first forecast shown

    def forecast(seconds: float, rate: str = "") -> str:
        notes = [x for x in (rate, label.pop() if label else "") if x]
        return f", {format_seconds(seconds)} forecast" + (f" ({'; '.join(notes)})" if notes else "")

    if r.tpot is not None and s.phase != "prefill":
        rate = r.decode_rate(r.tpot)
        text = (f"per output token {format_seconds(r.tpot)} bound ({format_count(rate or 0)} tokens/s over the "
                f"batch of {s.batch:,})")
        if r.forecast_tpot:
            text += forecast(r.forecast_tpot, f"{format_count(r.decode_rate(r.forecast_tpot) or 0)} tokens/s")
        out.append(text)
    if r.ttft is not None:
        text = f"TTFT {format_seconds(r.ttft)} bound"
        if s.phase == "prefill":
            text += f" ({format_count(r.tokens_per_s)} prompt tokens/s)"
        if r.forecast_ttft:
            text += forecast(r.forecast_ttft, f"{format_count(s.batch * s.prompt / r.forecast_ttft)} prompt tokens/s"
                             if s.phase == "prefill" else "")
        out.append(text)
    if s.phase == "generate":
        text = (f"whole run ({r.basis()}) {format_seconds(r.latency)} bound "
                f"({format_count(r.tokens_per_s)} output tokens/s)")
        if r.forecast_latency:
            text += forecast(r.forecast_latency, f"{format_count(s.batch * s.gen / r.forecast_latency)} output tokens/s")
        out.append(text)
    return out


def runs_of(repeats: int) -> str:
    """'median of 10 runs', or 'one run' (a trace's whole run, or a single timing: no median to speak of).

    >>> runs_of(10), runs_of(1)
    ('median of 10 runs', 'one run')
    """
    return f"median of {repeats} runs" if repeats > 1 else "one run"


def measured_clause(m: MeasuredSummary, bound: float) -> str:
    """'measured 1.25 ms whole model (median of 10 runs, 1.21..1.3 ms; 3.4x the bound); per-op medians sum to
    2.1 ms (1.9..2.4 ms) for 10 of 10 ops, 1 noisy': the whole-model timing leads when there is one (a few slow
    profiled runs of one op cannot move it), the per-op sums beside it with their spread (sums of the ops'
    quartiles).  '' when nothing was timed."""
    ops = (f"{format_seconds(m.measured)}" + (f" ({_range(m.measured_low, m.measured_high)})"
                                             if m.measured_high > m.measured_low else "")
           + f" for {m.ops} of {m.of_ops} ops" + (f", {len(m.noisy)} noisy (spread > {format_share(NOISY_SPREAD)})"
                                                   if m.noisy else ""))
    t = m.whole
    if t is not None:
        vs = f"{format_count(t.median / bound)}x the bound" if bound > 0 else "the bound is 0"
        spread = f", {_range(t.low, t.high)}" if t.repeats > 1 else ""
        return (f"measured {format_seconds(t.median)} whole model ({runs_of(t.repeats)}{spread}; {vs}); "
                f"per-op medians sum to {ops}")
    if not m.measured > 0:
        return ""
    vs = f"{format_count(m.measured / m.predicted)}x their bound" if m.predicted > 0 else "their bound is 0"
    per = f"median of {m.profiled_runs} profiled runs per op; " if m.profiled_runs else ""
    return f"measured {ops} ({per}{vs})"


def _range(low: float, high: float) -> str:
    """'1.21..1.3 ms'."""
    return f"{format_seconds(low)}..{format_seconds(high)}"


def run_basis(s: Summary) -> str:
    """What one run of the analysed workload is, the basis of its tables' times: an LLM run's
    (:meth:`LLMReport.basis`), else 'one run of the workload'."""
    return f"the whole run ({s.llm.basis()})" if s.llm is not None else "one run of the workload"


def table_glossary(s: Summary, *, grouped: bool = False) -> str:
    """The line under a table of ``s``'s ops (or groups): what each time column is, on which basis."""
    a = s.analysis
    what = "its ops' " if grouped else ""
    parts = [f"time = {what}roofline bound (a lower bound) over {run_basis(s)}, every instance counted",
             "share = of the whole bound"]
    if a.forecast is not None:
        parts.append("forecast = the expected time, same basis")
    if a.workload.has_measurements:
        m = s.measured
        noisy = f", ± = spread over the profiled runs above {format_share(NOISY_SPREAD)}" if m and m.noisy else ""
        parts.append(f"measured = median over the profiled runs, every instance counted{noisy}")
    r = s.llm
    if r is not None and r.steps > 1:
        parts.append(f"decode ops ran {r.steps} steps: per output token = their time / {r.steps}")
    return "times: " + "; ".join(parts)


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
    """Measured ops vs their own predictions; None when nothing was measured (:class:`MeasuredSummary`)."""
    w = a.workload
    if not w.has_measurements:
        return None
    seconds = w.columns["measured_seconds"]
    m = np.isfinite(seconds)
    count = w.columns["count"]
    judged = a.judged_level[a.judged_at_cache & m]
    levels, counts = np.unique(judged, return_counts=True)
    measured = float(seconds[m] @ count[m])
    low = high = measured
    run = w.measured
    ops = run.ops if run is not None else None
    if ops is not None and len(ops.median) == len(w):
        q = m & np.isfinite(ops.low) & np.isfinite(ops.high)
        low = measured - float((seconds[q] - ops.low[q]) @ count[q])
        high = measured + float((ops.high[q] - seconds[q]) @ count[q])
    whole = run.timing if run is not None and run.timing.median > 0 else None
    return MeasuredSummary(int(m.sum()), len(w), float(a.total_op_time[m].sum()), measured,
                           dict(zip(levels.tolist(), counts.tolist(), strict=True)), int(a.above_roof.sum()),
                           low, high, whole, tuple(int(i) for i in np.flatnonzero(noisy_ops(a))),
                           run.profiled_runs if run is not None and ops is not None else 0)


def noisy_ops(a: Analysis) -> np.ndarray:
    """Per op: True when its measured time's spread over the profiled runs is above :data:`NOISY_SPREAD`
    (ops timed in fewer than two runs have no spread and are never marked)."""
    run = a.workload.measured
    ops = run.ops if run is not None else None
    if ops is None or len(ops.median) != len(a.workload):
        return np.zeros(len(a.workload), dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where(ops.median > 0, (ops.high - ops.low) / ops.median, 0.0)
    return (ops.samples >= 2) & (np.nan_to_num(spread) > NOISY_SPREAD)


def llm_report(a: Analysis) -> LLMReport | None:
    """The LLM facts (time per token, throughput, footprint, largest and ridge batch) of an LLM workload."""
    return None if a.workload.llm is None else report(a)


def summarize(a: Analysis, *, advice: Advice | None = None) -> Summary:
    """All the facts of ``a`` (``advice``, when the caller computed it, travels with them)."""
    from roofline.core import arguments as arg

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
    """'measured: 2 of 3 ops; their roofline time 0.9 ms vs 1.2 ms measured (sum of per-op medians; quartile sums
    1.1..1.4 ms; roofline / measured = 0.75); the whole model 1.0 ms (median of 10 runs, 0.98..1.1 ms)'."""
    spread = (f"; quartile sums {_range(m.measured_low, m.measured_high)}" if m.measured_high > m.measured_low
              else "")
    how = f"sum of per-op medians over {m.profiled_runs} profiled runs{spread}; " if m.profiled_runs else ""
    text = (f"measured: {m.ops} of {m.of_ops} ops; their roofline time {format_seconds(m.predicted)} vs "
            f"{format_seconds(m.measured)} measured ({how}roofline / measured = {m.ratio:.3g})")
    if m.whole is not None:
        t = m.whole
        text += (f"; the whole model {format_seconds(t.median)} ({runs_of(t.repeats)}"
                 + (f", {_range(t.low, t.high)})" if t.repeats > 1 else ")"))
    if m.noisy:
        text += (f"; {len(m.noisy)} op(s) with a spread over their profiled runs above {format_share(NOISY_SPREAD)}"
                 " (marked ± in the tables)")
    return text
