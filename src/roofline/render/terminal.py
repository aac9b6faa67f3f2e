"""Terminal tables (rich): summary, per-op or per-group table sorted by time, unsupported ops, warnings.

``render(analysis) -> str``: plain text, or with ANSI colours when ``color=True``.
"""

from __future__ import annotations

import io
import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from roofline.core.text import display, one_line, visible
from roofline.core.units import (
    format_bandwidth,
    format_bytes,
    format_count,
    format_flop,
    format_flops,
    format_gib,
    format_seconds,
    format_share,
)
from roofline.words.summary import (
    ForecastSummary,
    Summary,
    binding_roof,
    describe_measured,
    headline,
    noisy_ops,
    summarize,
    table_glossary,
    trace_lines,
)

if TYPE_CHECKING:
    from rich.console import Console

    from roofline.engine.analysis import Analysis
    from roofline.hardware.device import Device
    from roofline.render.fit import Column
    from roofline.words.llm_report import LLMReport

GROUP_KEYS = {"module": "group", "group": "group", "type": "module_type", "module_type": "module_type",
              "kind": "kind", "op": "module_type", "node": "name", "name": "name", "precision": "precision"}


def _width() -> int:
    """The terminal's width (:func:`roofline.render.fit.terminal_width`: COLUMNS, else the tty's, else 120)."""
    from roofline.render.fit import terminal_width

    return terminal_width()


def _say(con: Console, line: str, style: str | None = None) -> None:
    """One line of prose, wrapped at the console's width (a number keeps its unit), printed as is."""
    from roofline.render.fit import wrap_line

    for piece in wrap_line(line, con.width):
        con.print(piece, markup=False, highlight=False, style=style)


def _console(color: bool) -> Console:
    """A recording console as wide as the terminal."""
    from rich.console import Console

    return Console(file=io.StringIO(), record=True, width=_width(), force_terminal=color, color_system="standard" if color else None,
                   highlight=False, soft_wrap=False)


def summary_lines(s: Summary, *, verbose: bool = True) -> list[str]:
    """The headline: device, roofline time, totals, the binding roof, where the time goes; the forecast beside
    the bound when there is one (its notes one line each when ``verbose`` or when there is only one, else
    counted on one line, as the assumptions are)."""
    a = s.analysis
    d = a.device
    # names from files (device, levels, title) in their display form: control characters visible, long ones cut
    used = dict.fromkeys(f"{display(c.label)} {format_flops(c.flops)}" for c, _ in s.roofs_used)
    roofs = ", ".join(used)  # two asked-for pairs may share one roof after a fallback
    mems = ", ".join(f"{display(m.level)} {format_bandwidth(m.bandwidth)}" for m in a.levels)
    lead = lead_lines(s)
    s = _trace_head(s)[0]  # a trace's whole-run time is one measurement: its ops' measured time instead
    lines = [
        *lead,
        f"device: {display(d.name)} — roofs used: {roofs or '-'}; {mems}" + _measured_by(d),
        f"workload: {display(a.workload.title)} — {len(a.workload)} ops, {format_flop(a.total_flops)}, "
        f"{format_bytes(a.total_bytes)} moved, intensity {_ai(a.total_flops / a.total_bytes if a.total_bytes else math.inf)} FLOP/B",
        f"roofline time: {format_seconds(a.total_time)}"
        + (f" (attainable {format_flops(s.attainable_flops)})" if a.total_time > 0 else ""),
        f"binding roof: {display(s.binding.describe(), 1024)}",
    ]
    if s.fallbacks:
        lines.append(f"fallbacks (no such roof on this device): {s.describe_fallbacks()}")
    if s.share_by_bound:
        lines.append("time by bound: " + ", ".join(f"{k} {format_share(v)}" for k, v in s.share_by_bound.items()))
    if s.measured is not None:
        lines.append(display(describe_measured(s.measured), 1024))
        if s.measured.judged_at_cache:
            lines.append("measured points judged vs a cache level (working set fits): "
                         + ", ".join(f"{k} vs {display(lvl)}" for lvl, k in s.measured.judged_at_cache.items()))
    if s.trace is not None:
        lines += [display(x, 1024) for x in trace_lines(s.trace)]
    if s.forecast is not None:
        lines += forecast_lines(s.forecast, verbose=verbose)
    lines.append(f"bytes model: {display(a.workload.bytes_model, 1024)}")
    return lines


def lead_lines(s: Summary) -> list[str]:
    """What a summary leads with: a trace's note when its measured time is far off the bound, then the headline
    (a trace's with its time per profiler step: steps are not runs)."""
    s, steps, note = _trace_head(s)
    head = headline(s, display)
    if steps:
        head = f"{head.removesuffix('.')}; {steps}."
    return [*([display(note, 1024)] if note else []), head]


def _trace_head(s: Summary) -> tuple[Summary, str | None, str | None]:
    """For a trace: the summary its headline is written from (its whole-run time is one measurement, not a median
    over runs: the ops' measured time against their bound instead), the time per profiler step and the note to
    lead with, both as the trace frontend put them in the workload's ``info`` (display facts)."""
    if s.trace is None:
        return s, None, None
    from dataclasses import replace

    info = s.analysis.workload.info
    note = info.get("headline_note")
    d = info.get("profiler_steps")
    steps = (f"{int(d['repeats'])} profiler steps: median {format_seconds(float(d['median']))} per step "
             f"({format_seconds(float(d['q1']))}..{format_seconds(float(d['q3']))})") if isinstance(d, dict) else None
    if s.measured is not None and s.measured.whole is not None:
        s = replace(s, measured=replace(s.measured, whole=None))
    return s, steps, note if isinstance(note, str) else None


def _measured_by(d: Device) -> str:
    """' (device file F, run R (started ...))' for a device measured by roofline bench, else ''."""
    from roofline.bench.quality import run_line

    text = run_line(d.metadata, str(d.metadata.get("device_file", "")))
    return f" ({display(text, 512)})" if text else ""


def analysis_repr(a: Analysis) -> str:
    """``repr(analysis)``: what on what, the roofline time and the binding roof, on one line."""
    head = f"<Analysis of '{one_line(a.workload.title, 80)}' on '{one_line(a.device.name, 80)}'"
    if not a.total_time > 0:
        return f"{head}: no roofline time (no FLOPs, no bytes)>"
    b = binding_roof(a)
    return (f"{head}: {format_seconds(a.total_time)}, {b.kind}-bound on {one_line(b.name, 40)} "
            f"({b.share:.0%} of the time)>")


def analysis_text(a: Analysis) -> str:
    """``print(analysis)``: the summary's headline lines, then the top 5 ops by roofline time."""
    lines = summary_lines(summarize(a))
    order = a.order()[:5]
    if len(order) and a.total_time > 0:
        lines.append(f"top {len(order)} of {len(a.workload):,} ops by roofline time:")
        lines += [f"  {a.share[i]:6.1%}  {format_seconds(float(a.total_op_time[i])):>9}  "
                  f"{one_line(a.workload.strings('name', int(i)), 60)}: {a.verdict(int(i))}" for i in order]
    return "\n".join(lines)


def forecast_lines(f: ForecastSummary, *, verbose: bool = True) -> list[str]:
    """The forecast beside the bound: its parts, what it rests on (overhead floor, calibration), how both
    compare with measured times, and its notes (one line each when ``verbose`` or only one, else counted)."""
    floor = (f"{f.framework} overhead floor {format_seconds(f.overhead)} per op" if f.overhead > 0
             else f"no {f.framework} overhead floor")
    calibration = f"calibration: {f.calibration}" if f.calibration else "no calibration (efficiency 1)"
    basis = f"the device's achievable roofs (its peaks where it has none), {floor}; {calibration}"
    lines = [display(f.describe(), 1024), display(f"forecast basis: {basis}", 1024)]
    measured = f.describe_measured()
    if measured:
        lines.append(display(f"forecast and bound vs measured: {measured}", 1024))
    if verbose or len(f.notes) == 1:
        lines += [f"forecast note: {display(note, 1024)}" for note in f.notes]
    elif f.notes:
        lines.append(f"forecast notes: {len(f.notes)} (--verbose lists them, so does the HTML report)")
    return lines


def render(a: Analysis, *, top: int = 20, group_by: str | None = None, depth: int | None = None,
           title: str | None = None, color: bool | None = None, summary: Summary | None = None,
           verbose: bool = False) -> str:
    """The full terminal report as a string (``summary``: the facts, when the caller has them).

    The assumptions are one line unless ``verbose``.  Everything fits the terminal (:mod:`roofline.render.fit`):
    table columns are shown whole or dropped and named under the table, names are shortened in the middle,
    prose wraps at spaces with every number beside its unit."""
    if color is None:
        color = sys.stdout.isatty()
    con = _console(color)
    if title:
        _say(con, display(title), style="bold")
    s = summary or summarize(a)
    for line in summary_lines(s, verbose=verbose):
        _say(con, line)
    if group_by:
        hidden = _group_table(con, a, group_by, depth, top)
    else:
        hidden = _op_table(con, a, top)
    if hidden > 0:
        _say(con, f"... and {hidden} more (use --top N)")
    _say(con, table_glossary(s, grouped=bool(group_by)))  # its own line, after the table
    _notes(con, a, verbose)
    text = con.export_text(styles=color)
    # plain text: no control character at all survives (with colour, only the product's own styles)
    return text if color else visible(text)


def _group_table(con: Console, a: Analysis, group_by: str, depth: int | None, top: int) -> int:
    """Print the top ``top`` groups by roofline time; returns how many more there are."""
    from roofline.render.fit import table_lines

    measured = a.workload.has_measurements
    key = GROUP_KEYS.get(group_by, group_by)
    groups = a.by(key, depth)
    rows = []
    for r in groups[:top]:
        row = {group_by: r.name, "ops": str(r.ops), "FLOPs": format_flop(r.flops), "bytes": format_bytes(r.bytes),
               "FLOP/B": _ai(r.intensity), "bound": r.bound, "attainable": format_flops(r.attainable_flops),
               "time": format_seconds(r.time), "share": f"{r.share:.1%}"}
        if measured:
            eff = r.time / r.measured_seconds if r.measured_seconds == r.measured_seconds and r.measured_seconds > 0 else math.nan
            row.update(measured=_opt(r.measured_seconds, format_seconds), efficiency=_opt(eff, format_share))
        rows.append({k: display(v) for k, v in row.items()})  # names from files: control characters visible
    # a module's row holds its own ops only (a block's residual add, not its layers) unless --depth sums the paths
    own = group_by == "module" and not depth
    title = f"by {group_by}" + (f" (depth {depth})" if depth else "") + (
        " (own ops: a block's row holds only the ops it runs itself; --depth N sums blocks)" if own else "")
    columns = _group_columns(group_by, measured, header="module (own ops)" if own else "")
    for line in table_lines(columns, rows, con.width, title=title, more="--csv has every column"):
        con.print(line, markup=False, highlight=False)
    return len(groups) - top


def _group_columns(group_by: str, measured: bool, header: str = "") -> list[Column]:
    """The group table's columns, lowest priority dropped first (the group, its time and bound stay)."""
    from roofline.render.fit import Column

    return [Column(group_by, header, kind="name", keep=True), Column("ops", priority=2), Column("FLOPs", priority=5),
            Column("bytes", priority=5), Column("FLOP/B", priority=4), Column("bound", kind="label", keep=True),
            Column("attainable", priority=3), Column("time", keep=True), Column("share", priority=9),
            *((Column("measured", priority=8), Column("efficiency", priority=7, requires=("measured",)))
              if measured else ())]


def _op_table(con: Console, a: Analysis, top: int) -> int:
    """Print the top ``top`` ops by roofline time (above-roof ones in red), with the columns that fit the
    console (:mod:`roofline.render.fit`); the verdicts' notes numbered under the table.  Returns how many
    more ops there are."""
    from roofline.render.fit import table_lines

    order = a.order()
    measured = a.workload.has_measurements
    fc = a.forecast
    fc_ratio = fc.over_measured(a.workload.columns["measured_seconds"]) if fc is not None else np.array([])
    notes: dict[str, int] = {}
    noisy = noisy_ops(a)
    rows = [_op_row(a, int(i), measured, fc_ratio, notes, bool(noisy[i])) for i in order[:top]]
    above = [bool(a.above_roof[i]) for i in order[:top]]
    footnotes = [f"[{k}] {display(text, 1024)}" for text, k in notes.items()]
    lines = table_lines(op_columns(measured, fc is not None), rows, con.width, title="ops by roofline time",
                        more="--csv has every column", notes=footnotes)
    for k, line in enumerate(lines):
        row = k - 2  # the title and the header come first
        con.print(line, markup=False, highlight=False, style="red" if 0 <= row < len(rows) and above[row] else None)
    return len(order) - top


def op_columns(measured: bool, forecast: bool) -> list[Column]:
    """The op table's columns.  Dropped first on a narrow terminal: count (FLOPs and bytes then shown as
    totals over the op's instances, as time is), kind, attainable, then the bound's details; with
    ``--forecast`` the forecast's columns go last.  The op, its time and its verdict stay."""
    from roofline.render.fit import Column

    return [Column("op", kind="name", keep=True), Column("kind", kind="label", priority=2),
            Column("count", priority=1),
            Column("FLOPs each", priority=6, instead=("count", "FLOPs", "FLOPs total")),
            Column("bytes each", priority=5, instead=("count", "bytes", "bytes total")),
            Column("FLOP/B", priority=4), Column("attainable", priority=3), Column("time", keep=True),
            Column("share", priority=12),
            *((Column("measured", priority=9), Column("efficiency", priority=8, requires=("measured",)))
              if measured else ()),
            *((Column("forecast", priority=11),
               *((Column("fc/meas", priority=7, requires=("forecast", "measured")),) if measured else ()),
               Column("fc verdict", kind="label", priority=3.5, requires=("forecast",)))
              if forecast else ()),
            Column("verdict", kind="text", keep=True, min_width=40)]


def _op_row(a: Analysis, i: int, measured: bool, fc_ratio: np.ndarray, notes: dict[str, int],
            noisy: bool = False) -> dict[str, str]:
    """One op's cells by column: the bound's, the measured ones, the forecast's beside the bound
    (``fc_ratio``: forecast / measured per op); FLOPs and bytes per instance and in total; the verdict's
    notes numbered in ``notes``; ``noisy``: its measured time is marked ``±``, see
    :func:`roofline.words.summary.noisy_ops`)."""
    w = a.workload
    name = w.strings("name", i)
    group = w.strings("group", i)
    count = float(w.columns["count"][i])
    flops, nbytes = float(w.columns["flops"][i]), float(w.bytes[i])
    row = {"op": f"{group}:{name}" if group and group != name else name, "kind": w.strings("kind", i),
           "count": f"{count:g}", "FLOPs each": format_flop(flops), "bytes each": format_bytes(nbytes),
           "FLOPs": format_flop(flops * count), "bytes": format_bytes(nbytes * count),
           "FLOP/B": _ai(a.intensity[i]), "attainable": format_flops(a.attainable_flops[i]),
           "time": format_seconds(a.total_op_time[i]), "share": f"{a.share[i]:.1%}"}
    if measured:
        row["measured"] = _opt(w.columns["measured_seconds"][i] * w.columns["count"][i], format_seconds)
        if noisy:
            row["measured"] += " ±"
        row["efficiency"] = _opt(a.efficiency[i], format_share)
    fc = a.forecast
    if fc is not None:  # beside the bound, never in its place: its own columns
        row["forecast"] = _opt(fc.total_op_time[i], format_seconds)
        row["fc verdict"] = str(fc.verdict[i])
        if measured:
            row["fc/meas"] = _opt(fc_ratio[i], _ratio)
    marks = "".join(f"[{notes.setdefault(f, len(notes) + 1)}]" for f in a.verdict_flags(i))
    row = {k: display(v) for k, v in row.items()}  # names from files: control characters visible, long ones cut
    row["verdict"] = display(a.short_verdict(i), 48) + (f" {marks}" if marks else "")
    return row


def _notes(con: Console, a: Analysis, verbose: bool) -> None:
    """Print the unsupported ops, the assumptions (one line unless ``verbose``) and the warnings."""
    unsupported = a.workload.unsupported
    if unsupported:
        _say(con, "unsupported ops (no FLOP formula; counted with 0 FLOPs and their bytes): "
                  + ", ".join(f"{display(u.name)} x{u.count}" for u in unsupported))
    notes = a.workload.assumptions
    if verbose or len(notes) == 1:
        for note in notes:
            _say(con, f"assumption: {display(note, 1024)}")
    elif notes:
        _say(con, f"assumptions: {len(notes)} modelling choices (--verbose lists them, so does the HTML report)")
    for note in a.assumptions[len(notes):]:  # the analysis's own (the TF32 rule): always in full
        _say(con, f"assumption: {display(note, 1024)}")
    for note in [*a.workload.warnings, *a.warnings]:
        _say(con, f"warning: {display(note, 1024)}", style="yellow")


def fit_width(text: str) -> str:
    """Prose lines wrapped at the terminal's width (at spaces: a number keeps its unit), indentation kept."""
    from roofline.render.fit import wrap

    return wrap(text, _width())


def _ai(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.3g}"


def _ratio(x: float) -> str:
    """A forecast / measured ratio: '1.25', '0.0312'."""
    return f"{x:.3g}"


def _opt(x: float | None, fmt: Callable[[float], str]) -> str:
    return "-" if x is None or not np.isfinite(x) else fmt(x)


def llm_text(r: LLMReport) -> str:
    """The LLM facts under the op table, plain text (first line: what ran where)."""

    s = r.spec
    p = s.precisions
    info = [f"{s.phase}", f"batch {s.batch}"]
    if s.phase in ("prefill", "generate"):
        info.append(f"prompt {s.prompt}")
    if s.phase == "generate":
        info.append(f"gen {s.gen}")
    if s.phase == "decode":
        info.append(f"context {s.context}")
    if s.tp > 1:
        info.append(f"tp {s.tp} (figures per device)")
    info.append(f"weights {p.weights}, activations {p.activations}, KV cache {p.kv_cache}"
                + (f" (int4 group {p.group_size})" if "int4" in (p.weights, p.kv_cache) else "")
                + (f", routed experts {p.experts} as shipped" if p.experts else ""))
    if s.ep > 1 or s.dp_attention:
        info.append(f"expert parallel {s.ep}" + (" with attention data-parallel" if s.dp_attention else ""))
    info.append("fused attention" if s.flash else "unfused attention")
    if s.arch.experts:
        info.append(f"MoE routing {s.moe_routing}, load {s.moe_load}")
    if s.mtp:
        info.append(f"{s.mtp} MTP module(s)")
    total, active = r.parameters, r.active_parameters
    lines = [f"LLM: {display(s.arch.name)} on {display(r.device)} — " + ", ".join(info)]
    lines.append(f"  parameters          {_count(total)}" + (f" ({_count(active)} active per token)"
                                                              if active != total else ""))
    for phase in ("prefill", "decode"):
        if phase in r.phase_time:
            fl, by = r.phase_flops[phase], r.phase_bytes[phase]
            lines.append(f"  {phase:<8s} total      {format_seconds(r.phase_time[phase])}, {format_flop(fl)}, "
                         f"{format_bytes(by)} moved (AI {fl / by:.3g} FLOP/B)")
    if r.ttft is not None:
        lines.append(f"  time to first token {format_seconds(r.ttft)}")
    if r.tpot is not None:
        lines.append(f"  time per token      {format_seconds(r.tpot)}  ({format_count(s.batch / r.tpot)} tokens/s over the batch)")
    if s.phase == "generate":
        lines.append(f"  end to end          {format_seconds(r.latency)} (TTFT + {s.gen} x time per token), "
                     f"{format_count(r.tokens_per_s)} output tokens/s")
    elif s.phase == "prefill":
        lines.append(f"  throughput          {format_count(r.tokens_per_s)} prompt tokens/s")
    if r.interconnect_time > 0:
        lines.append(f"  interconnect        {format_seconds(r.interconnect_time)} of all-reduce/all-gather")
    fp = r.footprint
    mem = (f"  memory per device   {format_gib(fp.weights)} weights + {format_gib(fp.kv_cache)} KV cache + "
           f"{format_gib(fp.activations)} activations = {format_gib(fp.total)}")
    if fp.capacity is not None:  # capacities in GiB, as nvidia-smi counts (Device.memory_capacity)
        mem += f" of {format_gib(fp.capacity)} ({'fits' if fp.fits else 'DOES NOT FIT'})"
    lines.append(mem)
    if r.max_batch is not None:
        lines.append(f"  largest batch       {r.max_batch} (at {s.max_context} tokens of KV cache per sequence)"
                     if r.max_batch else "  largest batch       none fits")
    if r.ridge_batch is not None:
        lines.append(f"  ridge batch         {r.ridge_batch} (decode GEMMs compute-bound from here, {p.gemm} matrix)")
    else:
        lines.append("  ridge batch         none below 65536 (decode GEMMs stay memory-bound)")
    for f in r.findings:
        lines.append(f"  * {display(f, 1024)}")
    return "\n".join(lines)


def _count(n: float) -> str:
    """6.738e9 -> '6.74 B'; 1.244e8 -> '124.4 M'."""
    return f"{n / 1e9:.2f} B" if n >= 1e9 else f"{n / 1e6:.1f} M"
