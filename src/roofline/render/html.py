"""The interactive, self-contained HTML report (plotly, embedded inline: opens offline).

One file holds plotly.js, the roofline chart(s) and every table.  Chart: one
trace per compute ceiling and per memory level (click the legend, or use the
buttons, to toggle them), the device's achievable (sustained) figures for them
dashed and labelled "achievable", the op points by kind (hover: name, module,
kind, FLOPs, bytes, intensity, bound, time, efficiency, and the forecast when
there is one), measured points joined to their prediction by a line.  Tables:
per op (with the forecast's columns when there is one) and per group, sortable
by a click on a header.  Then the summary, the advice, the device's provenance, the
workload's assumptions, warnings and unsupported ops.

Every string that came from a model or a file is escaped: in HTML with
:func:`html.escape`, and in the chart's JSON with ``<``/``>``/``&`` written as
``\\u003c``/``\\u003e``/``\\u0026`` (so nothing can close the ``<script>``) and
HTML-escaped again because plotly renders hover text as HTML.

>>> from roofline import Device, Op, Workload, analyze
>>> from roofline.render.html import render_html
>>> a = analyze(Workload.from_ops([Op("<b>app</b>", flops=8e8, bytes_read=4e9)]),
...             Device.simple("seed", "100 GFLOP/s", "10 GB/s"))
>>> page = render_html(a)
>>> "&lt;b&gt;app&lt;/b&gt;" in page and "<b>app</b>" not in page
True
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from roofline.render.chart import ACHIEVABLE_COLOR, achievable_roofs
from roofline.summary import Summary, dominant_ceiling, headline, roofs_of_ops, summarize
from roofline.text import LIMIT, display, for_html
from roofline.units import format_bandwidth, format_bytes, format_flop, format_flops, format_seconds, format_share

if TYPE_CHECKING:
    from roofline.advice import Advice
    from roofline.analysis import Analysis
    from roofline.device import Device
    from roofline.llm_report import LLMReport

KIND_COLORS = {
    "matmul": "#d62728", "conv": "#9467bd", "attention": "#e377c2", "elementwise": "#2ca02c", "norm": "#17becf",
    "softmax": "#bcbd22", "reduction": "#8c564b", "embedding": "#7f7f7f", "memory": "#1f77b4",
    "collective": "#ff7f0e", "other": "#555555",
}
DEVICE_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
MAX_POINTS = 3000  # chart points beyond this: only the top ops by time are drawn
MAX_TABLE_ROWS = 1000  # per-op table rows beyond this: only the top ops by time


#: any text longer than this is shortened on the page (a name alone: text.LIMIT)
TEXT_LIMIT = 8 * LIMIT
#: the chart's axes span at most 10**-AXIS_DECADES .. 10**AXIS_DECADES (JavaScript doubles end near 1e308)
AXIS_DECADES = 300


def esc(value: Any) -> str:
    """HTML-escape anything (quotes too), control characters visible, very long text shortened."""
    return html.escape(display(value, TEXT_LIMIT), quote=True)


def name(value: Any) -> str:
    """A name from a file (op, module, device, memory level) for HTML or plotly text: escaped and shortened."""
    return for_html(value)


@dataclass
class Section:
    """One analysis in a report: its heading, the analysis, optional advice, optional extra chart."""

    title: str
    analysis: Analysis
    advice: Advice | None = None
    note: str = ""
    summary: Summary | None = None  # the facts, when the caller has them (else summarised from analysis, advice)


# ----------------------------------------------------------------------------- chart data
def _ai(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.3g}"


def _hover(a: Analysis, i: int, measured: bool) -> str:
    """Hover text for op ``i``: escaped, because plotly renders hover text as HTML."""
    w = a.workload
    sec = w.columns["measured_seconds"][i]
    lines = [
        f"<b>{name(w.strings('name', i))}</b>" + (" (measured)" if measured else " (predicted)"),
        f"module: {name(w.strings('group', i) or '-')}" + (f" ({name(w.strings('module_type', i))})"
                                                          if w.strings("module_type", i) else ""),
        f"kind: {esc(w.strings('kind', i))}, {esc(w.strings('precision', i))} {esc(w.strings('unit', i))}"
        + (f" x{w.columns['count'][i]:g}" if w.columns["count"][i] != 1 else ""),
        f"FLOPs: {format_flop(w.columns['flops'][i])}, bytes: {format_bytes(w.bytes[i])}",
        f"intensity: {_ai(float(a.intensity[i]))} FLOP/B, bound: {a.bound[i]} ({esc(a.ceiling_label(i))}, "
        f"{name(a.level_label(i))})",
        f"roofline time: {format_seconds(a.time[i])}, attainable {format_flops(a.attainable_flops[i])}",
    ]
    fc = a.forecast
    if fc is not None:  # beside the bound, never in its place
        ratio = float(fc.over_measured(w.columns["measured_seconds"][i:i + 1])[0])
        lines.append(f"forecast: {format_seconds(fc.time[i])} ({esc(fc.verdict[i])}; efficiency "
                     f"{_pct(fc.efficiency[i])})" + (f", forecast/measured {ratio:.3g}" if np.isfinite(ratio) else ""))
    if np.isfinite(sec):
        lines.append(f"measured: {format_seconds(sec)}, achieved {format_flops(a.achieved_flops[i])}, "
                     f"{format_bandwidth(a.achieved_bandwidth[i])}, efficiency {_pct(a.efficiency[i])}")
        if a.above_roof[i]:
            lines.append("<b>ABOVE THE ROOF</b>: check units, FLOP counting or the chosen ceiling")
    return "<br>".join(lines)


def _ranges(a_list: Sequence[Analysis], xs: list[float], ys: list[float]) -> tuple[float, float, float, float]:
    ridges = [c.flops / m.bandwidth for a in a_list for c in _shown_ceilings(a)[0] for m in a.device.memory]
    xs = [x for x in xs + ridges if x > 0 and math.isfinite(x)] or [1.0]
    x_lo = _clip_decade(math.floor(math.log10(min(xs))) - 1)
    x_hi = max(_clip_decade(math.ceil(math.log10(max(xs))) + 1), x_lo + 1)
    ys = [y for y in ys if y > 0 and math.isfinite(y)]
    ys += [c.flops for a in a_list for c in a.device.compute]
    ys += [a.device.main_memory.bandwidth * 10.0**x_lo for a in a_list]
    ys = [y for y in ys if y > 0 and math.isfinite(y)] or [1.0]
    y_lo = _clip_decade(math.floor(math.log10(min(ys)) - 0.3))
    y_hi = max(_clip_decade(math.ceil(math.log10(max(ys)) + 0.3)), y_lo + 1)
    return x_lo, x_hi, y_lo, y_hi


def _clip_decade(e: int) -> int:
    """An axis end (a power of ten) within what plotly draws: numbers at the float extremes are clipped."""
    return max(-AXIS_DECADES, min(AXIS_DECADES, int(e)))


def _shown_ceilings(a: Analysis) -> tuple[list[Any], set[tuple[str, str]]]:
    """All the device's compute ceilings (fastest first) and the keys shown by default (used + fastest)."""
    used = {c.key for c in roofs_of_ops(a)[0]}
    used.add(max(a.device.compute, key=lambda c: c.flops).key)
    return sorted(a.device.compute, key=lambda c: -c.flops), used


def _point_traces(a: Analysis, *, color: str | None = None, prefix: str = "", group: str | None = None,
                  symbol: str = "circle") -> tuple[list[dict[str, Any]], list[float], list[float]]:
    w = a.workload
    flops = w.columns["flops"]
    order = [int(i) for i in a.order()[:MAX_POINTS] if flops[i] > 0 and math.isfinite(a.intensity[i])]
    traces: list[dict[str, Any]] = []
    xs: list[float] = []
    ys: list[float] = []
    by_kind: dict[str, list[int]] = {}
    for i in order:
        by_kind.setdefault(w.strings("kind", i) if color is None else "ops", []).append(i)
    for kind, idx in by_kind.items():
        x = [float(a.intensity[i]) for i in idx]
        y = [float(a.attainable_flops[i]) for i in idx]
        xs += x
        ys += y
        traces.append({
            "type": "scatter", "mode": "markers", "name": f"{prefix}{name(kind)}", "x": x, "y": y,
            "hovertext": [_hover(a, i, False) for i in idx], "hoverinfo": "text",
            "legendgroup": group or "points", "legendgrouptitle": {"text": "ops (predicted, on the roof)"} if group is None else None,
            "marker": {"color": color or KIND_COLORS.get(kind, "#555555"), "symbol": symbol, "opacity": 0.85,
                       "size": [6 + 22 * math.sqrt(max(float(a.share[i]), 0.0)) for i in idx],
                       "line": {"color": "white", "width": 0.6}},
        })
    meas = [i for i in order if np.isfinite(a.achieved_flops[i])]
    if meas:
        x = [float(a.intensity[i]) for i in meas]
        y = [float(a.achieved_flops[i]) for i in meas]
        ys += y
        above = [bool(a.above_roof[i]) for i in meas]
        traces.append({
            "type": "scatter", "mode": "markers", "name": f"{prefix}measured", "x": x, "y": y,
            "hovertext": [_hover(a, i, True) for i in meas], "hoverinfo": "text",
            "legendgroup": group or "measured", "legendgrouptitle": {"text": "measured"} if group is None else None,
            "marker": {"symbol": "diamond-open", "size": 10, "color": ["#ff0000" if b else (color or "#222222")
                                                                        for b in above], "line": {"width": 2}},
        })
        lx: list[float | None] = []
        ly: list[float | None] = []
        for i in meas:
            lx += [float(a.intensity[i]), float(a.intensity[i]), None]
            ly += [float(a.attainable_flops[i]), float(a.achieved_flops[i]), None]
        traces.append({"type": "scatter", "mode": "lines", "name": f"{prefix}predicted → measured", "x": lx, "y": ly,
                       "hoverinfo": "skip", "legendgroup": group or "measured",
                       "line": {"color": color or "#777777", "width": 1, "dash": "dot"}})
    return [{k: v for k, v in t.items() if v is not None} for t in traces], xs, ys


def _intensity_tick(x: float) -> str:
    return f"{x:g}"


def _flops_tick(y: float) -> str:
    """'100 T' for 1e14 FLOP/s: the axis title carries the unit."""
    return format_flops(y).removesuffix("FLOP/s").strip()


def _decade_ticks(lo: float, hi: float, fmt: Callable[[float], str]) -> dict[str, Any]:
    """Log-axis ticks at every power of ten between ``lo`` and ``hi`` (exponents), labelled in one style
    (``fmt``: '100 TFLOP/s', '0.01'); no minor-tick labels."""
    decades = [10.0**e for e in range(math.ceil(lo), math.floor(hi) + 1)]
    return {"tickmode": "array", "tickvals": decades, "ticktext": [fmt(v) for v in decades], "minor": {"showgrid": True}}


def figure(a: Analysis, summary: Summary | None = None) -> dict[str, Any]:
    """The plotly figure of one analysis, as plain ``{"data": [...], "layout": {...}}``.

    The ridge marked is the dominant ceiling's (:mod:`roofline.summary`)."""
    summary = summary or summarize(a)
    device = a.device
    points, xs, ys = _point_traces(a)
    x_lo, x_hi, y_lo, y_hi = _ranges([a], xs, ys)
    ceilings, shown = _shown_ceilings(a)
    main = device.main_memory
    traces: list[dict[str, Any]] = []
    roof_idx: list[int] = []
    level_idx: list[int] = []
    default_vis: list[Any] = []
    for c in ceilings:
        x0 = c.flops / main.bandwidth
        vis: Any = True if c.key in shown else "legendonly"
        roof_idx.append(len(traces))
        default_vis.append(vis)
        traces.append({"type": "scatter", "mode": "lines", "name": f"{name(c.label)} {format_flops(c.flops)}",
                       "x": [x0, 10.0**x_hi], "y": [c.flops, c.flops], "visible": vis, "legendgroup": "compute",
                       "legendgrouptitle": {"text": "compute roofs (click to toggle)"},
                       "hovertext": f"{name(c.label)} roof {format_flops(c.flops)}<br>{esc(c.provenance.describe())}",
                       "hoverinfo": "text", "line": {"color": "#222222", "width": 2.5 if c.key in shown else 1.5,
                                                     "dash": "solid" if c.key in shown else "dash"}})
    peak = max(c.flops for c in device.compute)
    for k, m in enumerate(sorted(device.memory, key=lambda m: m.bandwidth)):
        xe = peak / m.bandwidth
        xx = [10.0**x_lo, xe]
        level_idx.append(len(traces))
        default_vis.append(True)
        traces.append({"type": "scatter", "mode": "lines", "name": f"{name(m.level)} {format_bandwidth(m.bandwidth)}",
                       "x": xx, "y": [v * m.bandwidth for v in xx], "legendgroup": "memory",
                       "legendgrouptitle": {"text": "memory roofs (click to toggle)"},
                       "hovertext": f"{name(m.level)} {format_bandwidth(m.bandwidth)}<br>"
                                    f"{esc(m.provenance.describe())}",
                       "hoverinfo": "text",
                       "line": {"color": "#1f4e79" if m is main else ("#2e75b6", "#5b9bd5", "#9dc3e6")[min(k, 2)],
                                "width": 2.5 if m is main else 1.5, "dash": "solid" if m is main else "dot"}})
    # achievable (sustained) figures, dashed: each compute roof's shown with it, the main level's slope in
    # "main memory only" (they meet where the forecast's roofs meet, as the peak roofs do)
    ach, ach_mems = achievable_roofs(device, ceilings, list(device.memory))
    ach_bw = device.achievable_bandwidth(main)
    ach_peak = max(device.achievable_flops(c) for c in device.compute)
    main_only: dict[int, Any] = {}
    for peak_c, c in ach:
        vis = True if peak_c.key in shown else "legendonly"
        main_only[len(traces)] = vis
        default_vis.append(vis)
        traces.append(_achievable_trace(f"{name(c.label)} achievable {format_flops(c.flops)}",
                                        [c.flops / ach_bw, 10.0**x_hi], [c.flops, c.flops], c.provenance.describe()))
    for m, x in sorted(ach_mems, key=lambda pair: pair[1].bandwidth):
        xx = [10.0**x_lo, ach_peak / x.bandwidth]
        main_only[len(traces)] = True if m is main else "legendonly"
        default_vis.append(True)
        traces.append(_achievable_trace(f"{name(x.level)} achievable {format_bandwidth(x.bandwidth)}", xx,
                                        [v * x.bandwidth for v in xx], x.provenance.describe()))
    n_roofs = len(traces)
    traces += points
    default_vis += [True] * len(points)
    # buttons: restyle the 'visible' of every trace
    all_roofs = [True] * n_roofs + [True] * len(points)
    used_main = [default_vis[i] if i in roof_idx else main_only[i] if i in main_only else
                 (True if traces[i]["name"].startswith(name(main.level) + " ") else "legendonly")
                 for i in range(n_roofs)] + [True] * len(points)
    top = summary.dominant
    ridge = min(max(summary.ridge, 10.0**x_lo), 10.0**x_hi)
    layout = {
        "xaxis": {"type": "log", "range": [x_lo, x_hi], "title": {"text": "arithmetic intensity [FLOP/byte]"},
                  **_decade_ticks(x_lo, x_hi, _intensity_tick)},
        "yaxis": {"type": "log", "range": [y_lo, y_hi], "title": {"text": "performance [FLOP/s]"},
                  **_decade_ticks(y_lo, y_hi, _flops_tick)},
        "hovermode": "closest", "height": 620, "margin": {"l": 70, "r": 20, "t": 50, "b": 60},
        "legend": {"groupclick": "toggleitem", "font": {"size": 11}},
        "shapes": [{"type": "rect", "xref": "x", "yref": "paper", "x0": 10.0**x_lo, "x1": ridge, "y0": 0, "y1": 1,
                    "fillcolor": "#d6e6f5", "opacity": 0.45, "line": {"width": 0}, "layer": "below"},
                   {"type": "rect", "xref": "x", "yref": "paper", "x0": ridge, "x1": 10.0**x_hi, "y0": 0, "y1": 1,
                    "fillcolor": "#fbe3c8", "opacity": 0.45, "line": {"width": 0}, "layer": "below"}],
        "annotations": [{"x": math.log10(ridge), "y": min(max(math.log10(top.flops), y_lo), y_hi),
                         "text": f"ridge {summary.ridge:.3g} FLOP/B",
                         "showarrow": True, "arrowhead": 0, "ax": 40, "ay": 30, "bgcolor": "white"},
                        {"x": 0.01, "y": 0.98, "xref": "paper", "yref": "paper", "text": "memory-bound",
                         "showarrow": False, "xanchor": "left", "font": {"color": "#1f4e79"}},
                        {"x": 0.99, "y": 0.98, "xref": "paper", "yref": "paper", "text": "compute-bound",
                         "showarrow": False, "xanchor": "right", "font": {"color": "#a0522d"}}],
        "updatemenus": [{"type": "buttons", "direction": "right", "x": 0, "y": 1.09, "xanchor": "left",
                         "showactive": False, "pad": {"b": 4}, "buttons": [
                             {"label": "used roofs", "method": "restyle", "args": [{"visible": default_vis}]},
                             {"label": "all precision ceilings + memory levels", "method": "restyle",
                              "args": [{"visible": all_roofs}]},
                             {"label": "main memory only", "method": "restyle", "args": [{"visible": used_main}]}]}],
    }
    return {"data": traces, "layout": layout}


def _achievable_trace(label: str, x: list[float], y: list[float], provenance: str) -> dict[str, Any]:
    """An achievable (sustained) roof or slope: dashed, as the chart draws it (render.chart.ACHIEVABLE_COLOR)."""
    return {"type": "scatter", "mode": "lines", "name": label, "x": x, "y": y, "legendgroup": "achievable",
            "legendgrouptitle": {"text": "achievable roofs (the forecast's; the bound stays on the peaks)"},
            "hovertext": f"{label}<br>{esc(provenance)}", "hoverinfo": "text",
            "line": {"color": ACHIEVABLE_COLOR, "width": 1.5, "dash": "dash"}}


def compare_figure(analyses: Sequence[Analysis], title: str = "devices compared",
                   labels: Sequence[str] | None = None) -> dict[str, Any]:
    """Every device's roofs its ops are bounded or judged by (:func:`roofline.summary.roofs_of_ops`: the dominant
    ceiling solid, other ceilings dashed, cache levels dotted) and its points, one colour per device."""
    labels = [name(x) for x in (labels if labels is not None else [a.device.name for a in analyses])]
    traces: list[dict[str, Any]] = []
    xs_all: list[float] = []
    ys_all: list[float] = []
    per: list[tuple[Analysis, list[dict[str, Any]], str]] = []
    symbols = ("circle", "square", "triangle-up", "x", "star", "diamond", "cross", "pentagon")
    for k, a in enumerate(analyses):
        color = DEVICE_COLORS[k % len(DEVICE_COLORS)]
        pts, xs, ys = _point_traces(a, color=color, prefix=f"{labels[k]}: ", group=f"d{k}",
                                    symbol=symbols[k % len(symbols)])
        xs_all += xs
        ys_all += ys
        per.append((a, pts, color))
    x_lo, x_hi, y_lo, y_hi = _ranges(list(analyses), xs_all, ys_all)
    for k, (a, pts, color) in enumerate(per):
        # every roof this device's ops are bounded or judged by: the dominant ceiling solid, the others dashed
        top = dominant_ceiling(a)
        ceilings, levels = roofs_of_ops(a)
        peak = max(c.flops for c in ceilings) if ceilings else top.flops
        for c in ceilings or [top]:
            x0 = c.flops / a.device.main_memory.bandwidth
            traces.append({"type": "scatter", "mode": "lines", "name": f"{labels[k]}: {name(c.label)} {format_flops(c.flops)}",
                           "x": [min(max(x0, 10.0**x_lo), 10.0**x_hi), 10.0**x_hi], "y": [c.flops, c.flops],
                           "legendgroup": f"d{k}", "hoverinfo": "text",
                           "hovertext": f"{labels[k]}: {name(c.label)} roof {format_flops(c.flops)}",
                           "line": {"color": color, "width": 2.5 if c is top else 1.5,
                                    "dash": "solid" if c is top else "dash"}})
        for m in levels:
            xx = [10.0**x_lo, min(max(peak / m.bandwidth, 10.0**x_lo), 10.0**x_hi)]
            main = m is a.device.main_memory
            traces.append({"type": "scatter", "mode": "lines",
                           "name": f"{labels[k]}: {name(m.level)} {format_bandwidth(m.bandwidth)}",
                           "x": xx, "y": [v * m.bandwidth for v in xx], "legendgroup": f"d{k}", "hoverinfo": "text",
                           "hovertext": f"{labels[k]}: {name(m.level)} {format_bandwidth(m.bandwidth)}, "
                                        f"ridge with {name(top.label)} {top.flops / m.bandwidth:.3g} FLOP/B",
                           "line": {"color": color, "width": 2.5 if main else 1.5, "dash": "solid" if main else "dot"}})
        traces += pts
    layout = {
        "title": {"text": esc(title)},
        "xaxis": {"type": "log", "range": [x_lo, x_hi], "title": {"text": "arithmetic intensity [FLOP/byte]"},
                  **_decade_ticks(x_lo, x_hi, _intensity_tick)},
        "yaxis": {"type": "log", "range": [y_lo, y_hi], "title": {"text": "performance [FLOP/s]"},
                  **_decade_ticks(y_lo, y_hi, _flops_tick)},
        "hovermode": "closest", "height": 620, "legend": {"groupclick": "togglegroup", "font": {"size": 11}},
    }
    return {"data": traces, "layout": layout}


def _json(obj: Any) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' survive, so nothing can close the tag.  A number that
    is not finite (a ridge of 1e308 / 1e-300) becomes null: plotly leaves a gap."""
    text = json.dumps(_finite(obj), allow_nan=False, default=_json_default)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _finite(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _finite(obj.tolist())
    if isinstance(obj, np.floating):
        return _finite(float(obj))
    return obj


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


# ----------------------------------------------------------------------------- HTML pieces
def _num(v: float, text: str) -> str:
    """A table cell that sorts by ``v``."""
    key = "" if v is None or not math.isfinite(v) else repr(float(v))
    if v is not None and math.isinf(v):
        key = "1e308" if v > 0 else "-1e308"
    return f'<td class="n" data-v="{key}">{esc(text)}</td>'


def _pct(x: float) -> str:
    """Efficiency as a percentage with 3 significant digits (0.06% must not print as 0%)."""
    return f"{x * 100:.3g}%"


def _txt(text: str) -> str:
    """A text cell (names from files among them): escaped and shortened."""
    return f"<td>{name(text)}</td>"


def _opt(v: float, fmt: Any) -> str:
    return "-" if v is None or not math.isfinite(v) else fmt(v)


def summary_items(s: Summary) -> list[str]:
    """Summary lines (plain text, escaped later): the terminal's headline, then time by kind."""
    from roofline.render.terminal import summary_lines

    lines = list(summary_lines(s))
    kinds = s.analysis.by("kind")
    if kinds and s.total_time > 0:
        lines.append("time by kind: " + ", ".join(f"{r.name} {format_share(r.share)}" for r in kinds if r.share >= 0.005))
    return lines


def ops_table(a: Analysis, limit: int = MAX_TABLE_ROWS) -> str:
    w = a.workload
    measured = w.has_measurements
    fc = a.forecast
    fc_ratio = fc.over_measured(w.columns["measured_seconds"]) if fc is not None else np.array([])
    heads = ["#", "op", "module", "kind", "count", "FLOPs", "bytes", "FLOP/B", "bound", "ceiling", "attainable",
             "time", "share"] + (["measured", "achieved", "efficiency"] if measured else [])
    if fc is not None:  # beside the bound, never in its place
        heads += ["forecast", "fc verdict"] + (["fc/meas"] if measured else [])
    rows = []
    order = a.order()
    for rank, i in enumerate(order[:limit], 1):
        count = w.columns["count"][i]
        cells = [_num(rank, str(rank)), _txt(w.strings("name", i)), _txt(w.strings("group", i)),
                 _txt(w.strings("kind", i)), _num(count, f"{count:g}"),
                 _num(w.columns["flops"][i], format_flop(w.columns["flops"][i])),
                 _num(w.bytes[i], format_bytes(w.bytes[i])), _num(a.intensity[i], _ai(float(a.intensity[i]))),
                 _txt(a.bound[i]), _txt(a.ceiling_label(i) + (f" ({a.fallback(i)})" if a.fallback(i) else "")),
                 _num(a.attainable_flops[i], format_flops(a.attainable_flops[i])),
                 _num(a.total_op_time[i], format_seconds(a.total_op_time[i])), _num(a.share[i], f"{a.share[i]:.1%}")]
        if measured:
            sec = w.columns["measured_seconds"][i] * count
            cells += [_num(sec, _opt(sec, format_seconds)),
                      _num(a.achieved_flops[i], _opt(a.achieved_flops[i], format_flops)),
                      _num(a.efficiency[i], _opt(a.efficiency[i], _pct))]
        if fc is not None:
            total = fc.total_op_time[i]  # x count, as the time column
            cells += [_num(total, _opt(total, format_seconds)), _txt(str(fc.verdict[i]))]
            if measured:
                ratio = fc_ratio[i]
                cells.append(_num(ratio, _opt(ratio, lambda x: f"{x:.3g}")))
        cls = ' class="above"' if a.above_roof[i] else ""
        rows.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    more = len(order) - limit
    foot = f'<p class="note">{more} more ops not listed (the chart and the JSON/CSV exports have all)</p>' if more > 0 else ""
    return _table(heads, rows, "ops") + foot


def groups_table(a: Analysis, key: str, label: str, depth: int | None = None, limit: int = 200) -> str:
    rows = []
    measured = a.workload.has_measurements
    for r in [r for r in a.by(key, depth) if r.ops > 0][:limit]:
        cells = [_txt(r.name), _num(r.ops, str(r.ops)), _num(r.flops, format_flop(r.flops)),
                 _num(r.bytes, format_bytes(r.bytes)), _num(r.intensity, _ai(r.intensity)), _txt(r.bound),
                 _num(r.time, format_seconds(r.time)), _num(r.share, f"{r.share:.1%}")]
        if measured:
            cells.append(_num(r.measured_seconds, _opt(r.measured_seconds, format_seconds)))
        rows.append("<tr>" + "".join(cells) + "</tr>")
    heads = [label, "ops", "FLOPs", "bytes", "FLOP/B", "bound", "time", "share"] + (["measured"] if measured else [])
    return _table(heads, rows, f"by-{key}")


def _table(heads: list[str], rows: list[str], cls: str) -> str:
    head = "".join(f'<th title="click to sort">{esc(h)}</th>' for h in heads)
    return (f'<table class="sortable {esc(cls)}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def provenance_html(a: Analysis) -> str:
    d = a.device
    rows = []
    for c in sorted(d.compute, key=lambda c: -c.flops):
        rows.append(f"<tr>{_txt('compute ' + c.label)}{_txt(format_flops(c.flops))}{_txt(c.provenance.describe())}</tr>")
    for m in d.memory:
        cap = f", {format_bytes(m.capacity)}" if m.capacity else ""
        rows.append(f"<tr>{_txt('memory ' + m.level)}{_txt(format_bandwidth(m.bandwidth) + cap)}"
                    f"{_txt(m.provenance.describe())}</tr>")
    if d.interconnect is not None:
        ic = d.interconnect
        rows.append(f"<tr>{_txt('interconnect ' + ic.name)}{_txt(format_bandwidth(ic.bandwidth))}"
                    f"{_txt(ic.provenance.describe())}</tr>")
    meta = "".join(f"<li>{esc(k)}: {esc(_brief(v))}</li>" for k, v in dict(d.metadata).items())
    return (f"<p>{esc(d.name)} ({esc(d.vendor or '-')}, {esc(d.kind)})</p>"
            + _table(["ceiling", "value", "provenance"], rows, "provenance")
            + bench_html(d) + _details("Machine and settings", f"<ul>{meta}</ul>" if meta else ""))


def _brief(value: Any, limit: int = 160) -> str:
    """A metadata value for reading: numbers to 4 significant digits, long lists as their count and ends."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        if len(value) > 6:
            return f"{len(value)} values, {_brief(value[0])} .. {_brief(value[-1])}"
        text = ", ".join(_brief(v) for v in value)
    elif isinstance(value, dict):
        text = ", ".join(f"{k}: {_brief(v)}" for k, v in value.items())
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def bench_html(d: Device) -> str:
    """What ``roofline bench`` measured, rounded: threads, native precisions, spec roofs, the audit, the ERT fit."""
    b = d.bench
    if b is None:
        return ""
    rows = [f"<tr>{_txt('threads')}{_txt(str(b.threads or '?'))}</tr>",
            f"<tr>{_txt('native precisions')}{_txt(', '.join(b.native) or '-')}</tr>"]
    rows += [f"<tr>{_txt(f'spec {r.precision} {r.unit}')}{_txt(format_flops(r.flops))}</tr>" for r in b.spec]
    for r in b.audit:
        raised = f"; raised {r.raised}" if r.raised else ""
        rows.append(f"<tr>{_txt('audit: ' + r.kernel)}"
                    f"{_txt(f'efficiency {r.efficiency:.2f} vs {r.roof}, {r.level} (spread {r.noise:.0%}){raised}')}</tr>")
    ert = b.ert
    if ert is not None and ert.deviation:
        worst = f"{ert.deviation[ert.worst]:+.0%} at {ert.intensity[ert.worst]:.3g} FLOP/B"
        rows.append(f"<tr>{_txt('ERT curve')}{_txt(f'{len(ert.flops)} points; largest deviation from the roofs {worst}')}</tr>")
    return _details("Bench details (rounded)", _table(["measured", "figure"], rows, "bench"))


def _list(title: str, items: Sequence[str]) -> str:
    if not items:
        return ""
    return f"<h4>{esc(title)}</h4><ul>" + "".join(f"<li>{esc(x)}</li>" for x in items) + "</ul>"


def advice_html(advice: Advice) -> str:
    parts = []
    for block in advice.blocks():
        items = "".join(f"<li>{esc(x)}</li>" for x in block.lines)
        parts.append(f"<h4>{esc(block.heading)}</h4><ul>{items}</ul>")
    return "".join(parts)


def llm_html(report: LLMReport | None) -> str:
    """LLM runs (roofline.llm): the same TTFT / time per token / tokens/s / memory / ridge-batch lines the
    terminal prints under the table; '' for other workloads."""
    if report is None:
        return ""
    from roofline.render.terminal import llm_text

    lines = llm_text(report).splitlines()
    items = "".join(f"<li>{esc(x.strip().removeprefix('* '))}</li>" for x in lines[1:])
    return f"<h3>LLM inference</h3><p>{esc(lines[0].removeprefix('LLM: '))}</p><ul>{items}</ul>"


def caption(s: Summary) -> str:
    """What to look at in the chart of ``s`` (plain text)."""
    a = s.analysis
    main = a.device.main_memory
    return (f"Each point is an op: across, its arithmetic intensity (FLOP per byte moved); up, the FLOP/s its roofs "
            f"allow (bigger points take more of the time). Left of the ridge ({s.ridge:.3g} "
            f"FLOP/B for {s.dominant.label} over {main.level}) an op is memory-bound, right of it compute-bound. "
            f"Here the binding roof is {s.binding.label}."
            + (f" Ops asking for a roof this device lacks run on the next one: {s.describe_fallbacks()}."
               if s.fallbacks else "")
            + _achievable_caption(a.device))


def _achievable_caption(d: Device) -> str:
    """' Dashed lines labelled "achievable": ...' when the device has sustained figures ('' otherwise)."""
    figures = [f"{c.label} {format_flops(c.flops)}" for c in d.achievable_compute]
    figures += [f"{m.level} {format_bandwidth(m.bandwidth)}" for m in d.achievable_memory]
    if not figures:
        return ""
    return (f" Dashed lines labelled \"achievable\" are the device's sustained figures ({', '.join(figures)}): "
            "the roofs the forecast runs on, shown beside the peak roofs, which the roofline bound keeps.")


COMPARE_CAPTION = ("One colour per device: the roofs its ops are bounded or judged by (solid: the ceiling carrying "
                   "the most time; dashed: other ceilings; dotted: cache levels) and its ops. An op sits at the same "
                   "intensity on every device; the vertical gap between two devices' points is the speed-up their "
                   "roofs allow.")


def _details(title: str, body: str, *, open_: bool = False) -> str:
    """A collapsed block (``<details>``): the page stays short, everything stays one click away."""
    return f"<details{' open' if open_ else ''}><summary>{esc(title)}</summary>{body}</details>" if body else ""


def _section_html(s: Section, facts: Summary, k: int, charts: list[tuple[str, dict[str, Any]]], *,
                  open_summary: bool = True) -> str:
    a = s.analysis
    w = a.workload
    div = f"chart{k}"
    charts.append((div, figure(a, facts)))
    summary = "".join(f"<li>{esc(x)}</li>" for x in summary_items(facts)[1:])  # [0] is the headline
    if w.source:
        summary += f"<li>source: {esc(w.source)}</li>"
    unsupported = [f"{u.name} x{u.count} ({format_bytes(u.bytes)} counted, 0 FLOPs)" for u in w.unsupported]
    parts = [f'<section id="s{k}"><h2>{esc(s.title)}</h2>', f'<p class="headline">{esc(headline(facts))}</p>']
    if s.note:
        parts.append(f'<p class="note">{esc(s.note)}</p>')
    parts += [f'<figure><div id="{div}" class="chart"></div><figcaption>{esc(caption(facts))} Hover a point for its '
              'figures; click a legend entry to hide or show it; the buttons switch between the roofs the ops use, '
              'every precision ceiling and memory level, and main memory only. Hollow diamonds are measured; a '
              'dotted line joins each to its prediction.</figcaption></figure>',
              _details("Summary", f"<ul>{summary}</ul>" + llm_html(facts.llm), open_=open_summary)]
    if facts.advice is not None:
        parts.append(_details("Advice (levers with their computed effect)", advice_html(facts.advice)))
    parts += [_details(f"Ops by roofline time ({len(w)})", ops_table(a)),
              _details("By module", groups_table(a, "group", "module")),
              _details("By kind", groups_table(a, "kind", "kind")),
              _details("Device and provenance", provenance_html(a)),
              _details("Workload: bytes model, assumptions, warnings",
                       f"<p>bytes model: {esc(w.bytes_model)}</p>" + _list("Assumptions", w.assumptions)
                       + _list("Warnings", [*w.warnings, *a.warnings])
                       + (_list("Unsupported ops (no FLOP formula)", unsupported) or "<p>unsupported ops: none</p>")),
              "</section>"]
    return "".join(parts)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1300px;padding:1em 2em;color:#222}
h1{font-size:1.6em}h2{border-bottom:2px solid #ccc;padding-top:.6em}h3{margin-top:1.4em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0;max-width:100%}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f2f2f2;cursor:pointer;user-select:none;position:sticky;top:0}
th.asc::after{content:" \\25B2"}th.desc::after{content:" \\25BC"}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.above td{background:#ffe0e0}
.note{color:#555;font-size:.85em}.chart{min-height:620px}
.headline{font-size:1.15em;font-weight:600;background:#f4f8fc;border-left:4px solid #1f4e79;padding:.5em .8em}
figure{margin:0}figcaption{color:#555;font-size:.85em;margin:.3em 0 .8em}
details{margin:.4em 0}details>summary{cursor:pointer;font-weight:600;font-size:1.05em;padding:.2em 0}
ul.answers li{margin:.3em 0;font-weight:600}ul.answers a{color:#1f4e79;text-decoration:none}
"""

_SORT_JS = """
(function(){
  function key(td){var v=td.getAttribute('data-v');if(v===null)return td.textContent.toLowerCase();
    return v===''?-Infinity:parseFloat(v);}
  document.querySelectorAll('table.sortable').forEach(function(t){
    t.querySelectorAll('th').forEach(function(th){
      th.addEventListener('click',function(){
        var i=th.cellIndex,asc=!th.classList.contains('asc'),b=t.tBodies[0];
        t.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc');});
        th.classList.add(asc?'asc':'desc');
        var rows=Array.prototype.slice.call(b.rows);
        rows.sort(function(r,s){var x=key(r.cells[i]),y=key(s.cells[i]);
          if(x<y)return asc?-1:1;if(x>y)return asc?1:-1;return 0;});
        rows.forEach(function(r){b.appendChild(r);});
      });
    });
  });
})();
"""


def render_report(sections: Sequence[Section], title: str = "roofline report", *,
                  extra_charts: Sequence[tuple[str, dict[str, Any]]] = (), intro: Sequence[str] = ()) -> str:
    """A whole self-contained page: one section per analysis, plotly.js inline (no network needed).

    ``extra_charts``: (heading, plotly figure dict) pairs drawn before the sections (e.g. a device comparison).
    ``intro``: plain-text paragraphs under the title.
    """
    from roofline.errors import require

    offline = require("plotly.offline", "html")
    charts: list[tuple[str, dict[str, Any]]] = []
    facts = [s.summary or summarize(s.analysis, advice=s.advice) for s in sections]
    body: list[str] = [f"<h1>{esc(title)}</h1>"]
    # the answer first: one sentence per section, each linking to its section
    if len(sections) > 1:  # (one section leads with its own headline right below)
        body.append('<ul class="answers">' + "".join(f'<li><a href="#s{k}">{esc(headline(f))}</a></li>'
                                                    for k, f in enumerate(facts)) + "</ul>")
    body += [f"<p>{esc(p)}</p>" for p in intro]
    for j, (heading, fig) in enumerate(extra_charts):
        div = f"extra{j}"
        charts.append((div, fig))
        body.append(f'<h2>{esc(heading)}</h2><figure><div id="{div}" class="chart"></div>'
                    f"<figcaption>{esc(COMPARE_CAPTION)}</figcaption></figure>")
    for k, (s, f) in enumerate(zip(sections, facts, strict=True)):
        body.append(_section_html(s, f, k, charts, open_summary=len(sections) == 1))
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    from roofline.version import __version__

    body.append(f'<p class="note">generated by roofline {esc(__version__)} on {stamp}; '
                "the roofline time is a lower bound under the bytes model stated above.</p>")
    plots = "".join(
        f"Plotly.newPlot({json.dumps(div)}, FIG[{j}].data, FIG[{j}].layout, "
        '{"responsive": true, "displaylogo": false});'
        for j, (div, _) in enumerate(charts))
    figs = "[" + ",".join(_json(fig) for _, fig in charts) + "]"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{_CSS}</style>"
            f"<script>{offline.get_plotlyjs()}</script></head><body>"
            + "".join(body)
            + f"<script>var FIG={figs};{plots}</script><script>{_SORT_JS}</script></body></html>\n")


def render_html(analysis: Analysis, title: str | None = None, *, summary: Summary | None = None) -> str:
    """The report of one analysis as a string.  Advice appears when ``summary`` carries it
    (:func:`roofline.summary.summarize` with ``advice=``): the renderer computes none."""
    title = title or f"{display(analysis.workload.title)} on {display(analysis.device.name)}"
    return render_report([Section(title, analysis, summary=summary)], f"roofline report: {title}")


def save_html(analysis: Analysis, path: str | Path, title: str | None = None, *,
              summary: Summary | None = None) -> None:
    """Write the report, all-or-nothing (see :func:`render_html`)."""
    from roofline.fileio import write_text_atomic

    write_text_atomic(path, render_html(analysis, title, summary=summary))


def save_report(sections: Sequence[Section], path: str | Path, title: str = "roofline report", **kw: Any) -> None:
    from roofline.fileio import write_text_atomic

    write_text_atomic(path, render_report(sections, title, **kw))


#: The notebook table's sorter: self-contained (no network, no library), bound to the tables of its own
#: output only (``__ROOT__`` is replaced by the output's id), once per table however often it runs.  The
#: "click to sort" hint is set by the script, so a viewer that strips scripts makes no such claim.
_NOTEBOOK_SORT_JS = """
(function(){
  var root=document.getElementById('__ROOT__');if(!root)return;
  function key(td){var v=td.getAttribute('data-v');if(v===null)return td.textContent.toLowerCase();
    return v===''?-Infinity:parseFloat(v);}
  root.querySelectorAll('table.sortable').forEach(function(t){
    if(t.getAttribute('data-sorter'))return;t.setAttribute('data-sorter','1');
    var heads=t.querySelectorAll('th');
    heads.forEach(function(th){
      th.setAttribute('data-label',th.textContent);th.title='click to sort';th.style.cursor='pointer';
      th.addEventListener('click',function(){
        var i=th.cellIndex,asc=th.getAttribute('data-dir')!=='asc',b=t.tBodies[0];
        heads.forEach(function(h){h.removeAttribute('data-dir');h.textContent=h.getAttribute('data-label');});
        th.setAttribute('data-dir',asc?'asc':'desc');th.textContent+=asc?' \u25B2':' \u25BC';
        var rows=Array.prototype.slice.call(b.rows);
        rows.sort(function(r,s){var x=key(r.cells[i]),y=key(s.cells[i]);
          if(x<y)return asc?-1:1;if(x>y)return asc?1:-1;return 0;});
        rows.forEach(function(r){b.appendChild(r);});
      });
    });
  });
})();
"""


#: Up to this many ops the notebook chart is inline SVG; beyond, a PNG (an SVG grows by ~270 bytes a point).
NOTEBOOK_SVG_OPS = 500


def _notebook_chart(a: Analysis, summary: Summary) -> str:
    """The chart as inline SVG (matplotlib escapes its text; a PNG past :data:`NOTEBOOK_SVG_OPS` ops),
    or one line saying why there is none."""
    import base64
    import io

    try:
        from roofline.render.chart import plot

        fig = plot(a, max_labels=10, figsize=(8, 5.2), summary=summary)  # labels are placed for this size
        if len(a.workload) > NOTEBOOK_SVG_OPS:
            png = io.BytesIO()
            fig.savefig(png, format="png", bbox_inches="tight", dpi=100)
            out = f'<img alt="roofline chart" src="data:image/png;base64,{base64.b64encode(png.getvalue()).decode()}">'
        else:
            buf = io.StringIO()
            fig.savefig(buf, format="svg", bbox_inches="tight")
            svg = buf.getvalue()
            out = svg[svg.find("<svg"):]  # drop the XML prolog
        return out  # the figure is no pyplot figure (render.chart builds it alone): nothing to close
    except Exception as exc:  # a notebook repr must never raise
        return f"<p>(chart unavailable: {esc(exc)})</p>"


def notebook_html(a: Analysis, top: int = 10) -> str:
    """Jupyter ``_repr_html_``: summary, the chart as an inline SVG (no plotly needed; a PNG for a large
    workload) and the top ops.

    The ops table sorts on a click on its header: a small inline script (:data:`_NOTEBOOK_SORT_JS`, no
    network) bound to this output's own tables by a unique id.
    """
    import uuid

    root = f"roofline-{uuid.uuid4().hex}"
    facts = summarize(a)  # once: the summary list and the chart both read it
    table = ops_table(a, limit=top).replace(' title="click to sort"', "")  # the script adds the hint
    return "".join([f'<div id="{root}">',
                    "<ul>" + "".join(f"<li>{esc(x)}</li>" for x in summary_items(facts)) + "</ul>",
                    _notebook_chart(a, facts), table, "</div>",
                    f"<script>{_NOTEBOOK_SORT_JS.replace('__ROOT__', root)}</script>"])
