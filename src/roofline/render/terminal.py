"""Terminal tables (rich): summary, per-op or per-group table sorted by time, unsupported ops, warnings.

``render(analysis) -> str``: plain text, or with ANSI colours when ``color=True``.
"""

from __future__ import annotations

import io
import math
import shutil
import sys

import numpy as np

from roofline.analysis import Analysis
from roofline.units import format_bandwidth, format_bytes, format_flop, format_flops, format_seconds

GROUP_KEYS = {"module": "group", "group": "group", "type": "module_type", "module_type": "module_type",
              "kind": "kind", "op": "module_type", "node": "name", "name": "name", "precision": "precision"}


def _console(color: bool):  # type: ignore[no-untyped-def]
    from rich.console import Console

    width = max(shutil.get_terminal_size((180, 40)).columns, 150)
    return Console(file=io.StringIO(), record=True, width=width, force_terminal=color, color_system="standard" if color else None,
                   highlight=False, soft_wrap=False)


def summary_lines(a: Analysis) -> list[str]:
    """The headline: device, roofline time, totals, where the time goes."""
    d = a.device
    t = np.bincount(a.ceiling_index, weights=a.total_op_time, minlength=len(a.ceilings))
    used = dict.fromkeys(f"{a.ceilings[j].label} {format_flops(a.ceilings[j].flops)}" for j in np.argsort(-t) if t[j] > 0)
    roofs = ", ".join(used)  # two asked-for pairs may share one roof after a fallback
    mems = ", ".join(f"{m.level} {format_bandwidth(m.bandwidth)}" for m in a.levels)
    lines = [
        f"device: {d.name} — roofs used: {roofs or '-'}; {mems}",
        f"workload: {a.workload.title} — {len(a.workload)} ops, {format_flop(a.total_flops)}, "
        f"{format_bytes(a.total_bytes)} moved, intensity {_ai(a.total_flops / a.total_bytes if a.total_bytes else math.inf)} FLOP/B",
        f"roofline time: {format_seconds(a.total_time)}"
        + (f" (attainable {format_flops(a.total_flops / a.total_time)})" if a.total_time > 0 else ""),
    ]
    share = a.time_share_by_bound()
    if share:
        lines.append("time by bound: " + ", ".join(f"{k} {v:.0%}" for k, v in share.items()))
    if a.workload.has_measurements:
        m = a.total_measured_seconds
        lines.append(f"measured: {format_seconds(m)} (roofline / measured = {a.total_time / m:.3g}, i.e. {a.total_time / m:.1%} of the roof)")
        judged = a.judged_level[a.judged_at_cache]
        if len(judged):
            levels, counts = np.unique(judged, return_counts=True)
            lines.append("measured points judged vs a cache level (working set fits): "
                         + ", ".join(f"{k} vs {lvl}" for lvl, k in zip(levels.tolist(), counts.tolist(), strict=True)))
    lines.append(f"bytes model: {a.workload.bytes_model}")
    return lines


def render(a: Analysis, *, top: int = 20, group_by: str | None = None, depth: int | None = None,
           title: str | None = None, color: bool | None = None) -> str:
    """The full terminal report as a string."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    if color is None:
        color = sys.stdout.isatty()
    con = _console(color)
    if title:
        con.print(f"[bold]{title}[/bold]")
    for line in summary_lines(a):
        con.print(line, markup=False)
    measured = a.workload.has_measurements
    if group_by:
        key = GROUP_KEYS.get(group_by, group_by)
        rows = a.by(key, depth)
        t = Table(title=f"by {group_by}" + (f" (depth {depth})" if depth else ""), title_justify="left",
                  box=box.SIMPLE_HEAD)
        for col in (group_by, "ops", "FLOPs", "bytes", "FLOP/B", "bound", "attainable", "time", "share",
                    *(("measured", "efficiency") if measured else ())):
            t.add_column(col, justify="left" if col in (group_by, "bound") else "right", overflow="fold")
        for r in rows[:top]:
            cells = [r.name, str(r.ops), format_flop(r.flops), format_bytes(r.bytes), _ai(r.intensity), r.bound,
                     format_flops(r.attainable_flops), format_seconds(r.time), f"{r.share:.1%}"]
            if measured:
                eff = r.time / r.measured_seconds if r.measured_seconds == r.measured_seconds and r.measured_seconds > 0 else math.nan
                cells += [_opt(r.measured_seconds, format_seconds), _opt(eff, lambda e: f"{e:.0%}")]
            t.add_row(*map(escape, cells))
        con.print(t)
        hidden = len(rows) - top
    else:
        order = a.order()
        t = Table(title="ops by roofline time", title_justify="left", box=box.SIMPLE_HEAD)
        for col in ("op", "kind", "count", "FLOPs", "bytes", "FLOP/B", "attainable", "time", "share",
                    *(("measured", "efficiency") if measured else ()), "verdict"):
            t.add_column(col, justify="left" if col in ("op", "kind", "verdict") else "right",
                         overflow="fold", max_width=48 if col == "op" else None,
                         no_wrap=col not in ("op", "verdict"), min_width=36 if col == "verdict" else None)
        w = a.workload
        for i in order[:top]:
            name = w.strings("name", i)
            group = w.strings("group", i)
            label = f"{group}:{name}" if group and group != name else name
            cells = [label, w.strings("kind", i), f"{w.columns['count'][i]:g}", format_flop(w.columns["flops"][i]),
                     format_bytes(w.bytes[i]), _ai(a.intensity[i]), format_flops(a.attainable_flops[i]),
                     format_seconds(a.total_op_time[i]), f"{a.share[i]:.1%}"]
            if measured:
                cells += [_opt(w.columns["measured_seconds"][i] * w.columns["count"][i], format_seconds),
                          _opt(a.efficiency[i], lambda e: f"{e:.0%}")]
            cells.append(a.verdict(i))
            # escaped: names come from files, and a verdict's [bracketed notes] would read as rich markup
            t.add_row(*map(escape, cells), style="red" if a.above_roof[i] else None)
        con.print(t)
        hidden = len(order) - top
    if hidden > 0:
        con.print(f"... and {hidden} more (use --top N)", markup=False)
    unsupported = a.workload.unsupported
    if unsupported:
        con.print("unsupported ops (no FLOP formula; counted with 0 FLOPs and their bytes): "
                  + ", ".join(f"{u.name} x{u.count}" for u in unsupported), markup=False)
    for note in a.workload.assumptions:
        con.print(f"assumption: {note}", markup=False)
    for note in [*a.workload.warnings, *a.warnings]:
        con.print(f"warning: {note}", markup=False, style="yellow")
    return con.export_text(styles=color)


def _ai(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.3g}"


def _opt(x: float, fmt) -> str:  # type: ignore[no-untyped-def]
    return "-" if x is None or not np.isfinite(x) else fmt(x)
