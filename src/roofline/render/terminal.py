"""Terminal tables (rich): summary, per-op or per-group table sorted by time, unsupported ops, warnings.

``render(analysis) -> str``: plain text, or with ANSI colours when ``color=True``.
"""

from __future__ import annotations

import io
import math
import re
import shutil
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from roofline.summary import (
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
from roofline.text import display, for_terminal, one_line, shorten, visible
from roofline.units import (
    format_bandwidth,
    format_bytes,
    format_count,
    format_flop,
    format_flops,
    format_gib,
    format_seconds,
    format_share,
)

if TYPE_CHECKING:
    from rich.console import Console

    from roofline.analysis import Analysis
    from roofline.device import Device
    from roofline.llm_report import LLMReport

GROUP_KEYS = {"module": "group", "group": "group", "type": "module_type", "module_type": "module_type",
              "kind": "kind", "op": "module_type", "node": "name", "name": "name", "precision": "precision"}


def _width() -> int:
    """The terminal's width: COLUMNS, else the tty's, else 120 (at least 60)."""
    return max(shutil.get_terminal_size((120, 40)).columns, 60)


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
    lines = [
        headline(s, display),
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

    The assumptions are one line unless ``verbose``.  Tables fit the terminal: numbers never wrap (the op
    name and verdict columns fold instead)."""
    if color is None:
        color = sys.stdout.isatty()
    con = _console(color)
    if title:
        con.print(f"[bold]{for_terminal(title)}[/bold]")
    s = summary or summarize(a)
    for line in summary_lines(s, verbose=verbose):
        for piece in wrap_whole(line, con.width):
            con.print(piece, markup=False)
    if group_by:
        hidden = _group_table(con, a, group_by, depth, top)
    else:
        hidden = _op_table(con, a, top)
    if hidden > 0:
        con.print(f"... and {hidden} more (use --top N)", markup=False)
    for piece in wrap_whole(table_glossary(s, grouped=bool(group_by)), con.width):  # its own line, after the table
        con.print(piece, markup=False)
    _notes(con, a, verbose)
    text = con.export_text(styles=color)
    # plain text: no control character at all survives (with colour, only the product's own styles)
    return text if color else visible(text)


def _group_table(con: Console, a: Analysis, group_by: str, depth: int | None, top: int) -> int:
    """Print the top ``top`` groups by roofline time; returns how many more there are."""
    from rich import box
    from rich.table import Table

    measured = a.workload.has_measurements
    key = GROUP_KEYS.get(group_by, group_by)
    groups = a.by(key, depth)
    t = Table(title=f"by {group_by}" + (f" (depth {depth})" if depth else ""), title_justify="left",
              box=box.SIMPLE_HEAD)
    for col in (group_by, "ops", "FLOPs", "bytes", "FLOP/B", "bound", "attainable", "time", "share",
                *(("measured", "efficiency") if measured else ())):
        t.add_column(col, justify="left" if col in (group_by, "bound") else "right", overflow="fold",
                     no_wrap=col not in (group_by, "bound"))
    for r in groups[:top]:
        cells = [r.name, str(r.ops), format_flop(r.flops), format_bytes(r.bytes), _ai(r.intensity), r.bound,
                 format_flops(r.attainable_flops), format_seconds(r.time), f"{r.share:.1%}"]
        if measured:
            eff = r.time / r.measured_seconds if r.measured_seconds == r.measured_seconds and r.measured_seconds > 0 else math.nan
            cells += [_opt(r.measured_seconds, format_seconds), _opt(eff, format_share)]
        t.add_row(*map(for_terminal, cells))
    con.print(t)
    return len(groups) - top


def _op_table(con: Console, a: Analysis, top: int) -> int:
    """Print the top ``top`` ops by roofline time (above-roof ones in red), with the columns that fit the
    console; returns how many more ops there are."""
    from rich import box
    from rich.table import Table

    order = a.order()
    measured = a.workload.has_measurements
    fc = a.forecast
    fc_ratio = fc.over_measured(a.workload.columns["measured_seconds"]) if fc is not None else np.array([])
    noisy = noisy_ops(a)
    rows = [(_op_row(a, i, measured, fc_ratio, bool(noisy[i])), bool(a.above_roof[i])) for i in order[:top]]
    cols, op_width = _fitting_columns([r for r, _ in rows], con.width, measured, a.forecast is not None)
    t = Table(title="ops by roofline time", title_justify="left", box=box.SIMPLE_HEAD)
    for col in cols:
        t.add_column(col, justify="left" if col in ("op", "kind", "fc verdict", "verdict") else "right",
                     overflow="fold", max_width=op_width if col == "op" else None,
                     no_wrap=col not in ("op", "verdict"))
    for row, above in rows:
        row["op"] = _fit(row["op"], 2 * op_width)  # at most two lines; a cut name keeps its marker whole
        # escaped and shortened: names come from files (a 10 MB name would make rich's folding quadratic),
        # and a verdict's [bracketed notes] would read as rich markup
        t.add_row(*(for_terminal(row[c]) for c in cols), style="red" if above else None)
    con.print(t)
    return len(order) - top


def _op_row(a: Analysis, i: int, measured: bool, fc_ratio: np.ndarray, noisy: bool = False) -> dict[str, str]:
    """One op's cells by column: the bound's, the measured ones, the forecast's beside the bound
    (``fc_ratio``: forecast / measured per op; ``noisy``: its measured time is marked ``±``, see
    :func:`roofline.summary.noisy_ops`)."""
    w = a.workload
    name = w.strings("name", i)
    group = w.strings("group", i)
    row = {"op": f"{group}:{name}" if group and group != name else name, "kind": w.strings("kind", i),
           "count": f"{w.columns['count'][i]:g}", "FLOPs": format_flop(w.columns["flops"][i]),
           "bytes": format_bytes(w.bytes[i]), "FLOP/B": _ai(a.intensity[i]),
           "attainable": format_flops(a.attainable_flops[i]), "time": format_seconds(a.total_op_time[i]),
           "share": f"{a.share[i]:.1%}"}
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
    row["verdict"] = a.verdict(i)
    return row


def _notes(con: Console, a: Analysis, verbose: bool) -> None:
    """Print the unsupported ops, the assumptions (one line unless ``verbose``) and the warnings."""
    unsupported = a.workload.unsupported
    if unsupported:
        con.print("unsupported ops (no FLOP formula; counted with 0 FLOPs and their bytes): "
                  + ", ".join(f"{display(u.name)} x{u.count}" for u in unsupported), markup=False)
    notes = a.workload.assumptions
    if verbose or len(notes) == 1:
        for note in notes:
            con.print(f"assumption: {display(note, 1024)}", markup=False)
    elif notes:
        con.print(f"assumptions: {len(notes)} modelling choices (--verbose lists them, so does the HTML report)",
                  markup=False)
    for note in a.assumptions[len(notes):]:  # the analysis's own (the TF32 rule): always in full
        con.print(f"assumption: {display(note, 1024)}", markup=False)
    for note in [*a.workload.warnings, *a.warnings]:
        con.print(f"warning: {display(note, 1024)}", markup=False, style="yellow")


#: Columns of the op table, the ones dropped first on a narrow terminal first (op, time, share, verdict stay).
_OPTIONAL = ("count", "kind", "attainable", "FLOP/B", "bytes", "FLOPs")
#: With --forecast the user asked for the forecast's columns: the bound's details go first, the forecast last.
_OPTIONAL_FORECAST = ("count", "kind", "attainable", "fc verdict", "FLOP/B", "bytes", "FLOPs", "fc/meas", "forecast")


def _fitting_columns(rows: list[dict[str, str]], width: int, measured: bool,
                     forecast: bool = False) -> tuple[list[str], int]:
    """The op table's columns that fit ``width`` with their numbers on one line, and the op column's width:
    optional columns are dropped in :data:`_OPTIONAL` order until the rest fits beside 20 characters of op
    name and verdict each; the op column then takes half of what is left (20 to 48 characters)."""
    cols = ["op", "kind", "count", "FLOPs", "bytes", "FLOP/B", "attainable", "time", "share",
            *(("measured", "efficiency") if measured else ()),
            *(("forecast", *(("fc/meas",) if measured else ()), "fc verdict") if forecast else ()), "verdict"]

    def need(c: str) -> int:  # widest cell or header, plus rich's padding
        return max(len(c), *(len(r[c]) for r in rows)) + 3 if rows else len(c) + 3

    room = width - 2 * 20 - 6
    for drop in _OPTIONAL_FORECAST if forecast else _OPTIONAL:
        if sum(need(c) for c in cols if c not in ("op", "verdict")) <= room:
            break
        if drop in cols:
            cols.remove(drop)
    left = width - 6 - sum(need(c) for c in cols if c not in ("op", "verdict"))
    return cols, max(20, min(48, left // 2))


def wrap_whole(text: str, width: int) -> list[str]:
    """``text`` wrapped at spaces to ``width`` columns, never between a number and the word after it ('94.4 ms',
    '365 tokens/s'), continuation lines indented by two; a word longer than the width stays whole (rich folds it).

    >>> wrap_whole("TTFT 94.4 ms bound; whole run", 14)
    ['TTFT 94.4 ms', '  bound; whole', '  run']
    """
    words: list[str] = []
    for w in text.split(" "):
        if words and re.search(r"\d$", words[-1]) and re.match(r"[^\W\d_]|µ|%", w):
            words[-1] += f" {w}"  # a number and its unit (or the noun it counts) stay on one line
        else:
            words.append(w)
    lines: list[str] = []
    for w in words:
        if lines and len(lines[-1]) + 1 + len(w) <= width:
            lines[-1] += f" {w}"
        else:
            lines.append(w if not lines else f"  {w}")
    return lines or [""]


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters in all, its ``...[+N chars]`` marker included."""
    if len(text) <= width:
        return text
    marker = len(f"...[+{len(text)} chars]")
    return shorten(text, max(1, width - marker))


def fit_width(text: str) -> str:
    """Prose lines wrapped at the terminal's width (at spaces: a number is never split), indentation kept."""
    import textwrap

    width = _width()
    out = []
    for line in text.splitlines():
        indent = line[: len(line) - len(line.lstrip())]
        out += textwrap.wrap(line, width, subsequent_indent=indent + "  ", break_long_words=False,
                             break_on_hyphens=False) or [""]
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


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
                + (f" (int4 group {p.group_size})" if "int4" in (p.weights, p.kv_cache) else ""))
    info.append("fused attention" if s.flash else "unfused attention")
    if s.arch.experts:
        info.append(f"MoE routing {s.moe_routing}")
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
