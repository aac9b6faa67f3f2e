"""The HTML report's interactive charts as plotly figures, plain ``{"data": [...], "layout": {...}}`` dicts.

One trace per compute ceiling and per memory level (click the legend, or use the buttons, to toggle them),
the device's achievable (sustained) figures for them dashed and labelled "achievable", the op points by
kind (hover: name, module, kind, FLOPs, bytes, intensity, bound, time, efficiency, and the forecast when
there is one), measured points joined to their prediction by a line.  Hover text is HTML-escaped (plotly
renders it as HTML), and :func:`script_json` writes a figure safe inside ``<script>``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from roofline.core.fileio import json_ready
from roofline.core.units import format_bandwidth, format_bytes, format_flop, format_flops, format_seconds
from roofline.render.chart import achievable_roofs
from roofline.render.html_parts import esc, intensity_text, name, pct
from roofline.render.style import ACHIEVABLE_COLOR
from roofline.words.summary import Summary, dominant_ceiling, drawn_ceilings, roofs_of_ops, summarize

if TYPE_CHECKING:
    from roofline.engine.analysis import Analysis

KIND_COLORS = {
    "matmul": "#d62728", "conv": "#9467bd", "attention": "#e377c2", "elementwise": "#2ca02c", "norm": "#17becf",
    "softmax": "#bcbd22", "reduction": "#8c564b", "embedding": "#7f7f7f", "memory": "#1f77b4",
    "collective": "#ff7f0e", "other": "#555555",
}
DEVICE_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
MAX_POINTS = 3000  # chart points beyond this: only the top ops by time are drawn
#: the chart's axes span at most 10**-AXIS_DECADES .. 10**AXIS_DECADES (JavaScript doubles end near 1e308)
AXIS_DECADES = 300


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
        f"intensity: {intensity_text(float(a.intensity[i]))} FLOP/B, bound: {a.bound[i]} ({esc(a.ceiling_label(i))}, "
        f"{name(a.level_label(i))})",
        f"roofline time: {format_seconds(a.time[i])}, attainable {format_flops(a.attainable_flops[i])}",
    ]
    fc = a.forecast
    if fc is not None:  # beside the bound, never in its place
        ratio = float(fc.over_measured(w.columns["measured_seconds"][i:i + 1])[0])
        lines.append(f"forecast: {format_seconds(fc.time[i])} ({esc(fc.verdict[i])}; efficiency "
                     f"{pct(fc.efficiency[i])})" + (f", forecast/measured {ratio:.3g}" if np.isfinite(ratio) else ""))
    if np.isfinite(sec):
        lines.append(f"measured: {format_seconds(sec)}, achieved {format_flops(a.achieved_flops[i])}, "
                     f"{format_bandwidth(a.achieved_bandwidth[i])}, efficiency {pct(a.efficiency[i])}")
        if a.above_roof[i]:
            lines.append("<b>ABOVE THE ROOF</b>: check units, FLOP counting or the chosen ceiling")
    return "<br>".join(lines)


def _ranges(a_list: Sequence[Analysis], xs: list[float], ys: list[float]) -> tuple[float, float, float, float]:
    ridges = [c.ridge(m) for a in a_list for c in _shown_ceilings(a)[0] for m in a.device.memory]
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
    """All the device's compute ceilings (fastest first) and the keys shown by default: the roofs every chart
    draws (:func:`roofline.words.summary.drawn_ceilings`: the ops' ones and the fastest in their precisions); the
    others are in the legend only, for the 'all precision ceilings' button."""
    return sorted(a.device.compute, key=lambda c: -c.flops), {c.key for c in drawn_ceilings(a)}


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

    The ridge marked is the dominant ceiling's (:mod:`roofline.words.summary`)."""
    summary = summary or summarize(a)
    points, xs, ys = _point_traces(a)
    x_lo, x_hi, y_lo, y_hi = _ranges([a], xs, ys)
    ceilings, shown = _shown_ceilings(a)
    traces, default_vis, roof_idx = _peak_traces(a, ceilings, shown, x_lo, x_hi)
    main_only = _achievable_traces(a, ceilings, shown, x_lo, x_hi, traces, default_vis)
    n_roofs = len(traces)
    traces += points
    default_vis += [True] * len(points)
    # buttons: restyle the 'visible' of every trace
    all_roofs = [True] * n_roofs + [True] * len(points)
    main = a.device.main_memory
    used_main = [default_vis[i] if i in roof_idx else main_only[i] if i in main_only else
                 (True if traces[i]["name"].startswith(name(main.level) + " ") else "legendonly")
                 for i in range(n_roofs)] + [True] * len(points)
    buttons = [{"label": "used roofs", "method": "restyle", "args": [{"visible": default_vis}]},
               {"label": "all precision ceilings + memory levels", "method": "restyle",
                "args": [{"visible": all_roofs}]},
               {"label": "main memory only", "method": "restyle", "args": [{"visible": used_main}]}]
    return {"data": traces, "layout": _layout(summary, (x_lo, x_hi, y_lo, y_hi), buttons)}


def _peak_traces(a: Analysis, ceilings: list[Any], shown: set[tuple[str, str]], x_lo: float, x_hi: float
                 ) -> tuple[list[dict[str, Any]], list[Any], list[int]]:
    """Every compute roof (the ones in ``shown`` drawn, the others in the legend only) and every memory slope:
    the traces, their default visibility, and which traces are compute roofs."""
    device = a.device
    main = device.main_memory
    traces: list[dict[str, Any]] = []
    roof_idx: list[int] = []
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
        default_vis.append(True)
        traces.append({"type": "scatter", "mode": "lines", "name": f"{name(m.level)} {format_bandwidth(m.bandwidth)}",
                       "x": xx, "y": [v * m.bandwidth for v in xx], "legendgroup": "memory",
                       "legendgrouptitle": {"text": "memory roofs (click to toggle)"},
                       "hovertext": f"{name(m.level)} {format_bandwidth(m.bandwidth)}<br>"
                                    f"{esc(m.provenance.describe())}",
                       "hoverinfo": "text",
                       "line": {"color": "#1f4e79" if m is main else ("#2e75b6", "#5b9bd5", "#9dc3e6")[min(k, 2)],
                                "width": 2.5 if m is main else 1.5, "dash": "solid" if m is main else "dot"}})
    return traces, default_vis, roof_idx


def _achievable_traces(a: Analysis, ceilings: list[Any], shown: set[tuple[str, str]], x_lo: float, x_hi: float,
                       traces: list[dict[str, Any]], default_vis: list[Any]) -> dict[int, Any]:
    """The achievable (sustained) figures, dashed, appended to ``traces``: each compute roof's shown with it,
    the main level's slope in "main memory only" (they meet where the forecast's roofs meet, as the peak
    roofs do).  Returns each new trace's visibility under "main memory only"."""
    device = a.device
    main = device.main_memory
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
        traces[-1]["visible"] = vis  # as its peak roof: a precision the ops do not use starts hidden
    for m, x in sorted(ach_mems, key=lambda pair: pair[1].bandwidth):
        xx = [10.0**x_lo, ach_peak / x.bandwidth]
        main_only[len(traces)] = True if m is main else "legendonly"
        default_vis.append(True)
        traces.append(_achievable_trace(f"{name(x.level)} achievable {format_bandwidth(x.bandwidth)}", xx,
                                        [v * x.bandwidth for v in xx], x.provenance.describe()))
    return main_only


def _layout(summary: Summary, ranges: tuple[float, float, float, float], buttons: list[dict[str, Any]]
            ) -> dict[str, Any]:
    """Log axes with decade ticks, the memory-bound and compute-bound regions shaded either side of the
    dominant ceiling's ridge, the ridge and region annotations, and the visibility buttons."""
    x_lo, x_hi, y_lo, y_hi = ranges
    top = summary.dominant
    ridge = min(max(summary.ridge, 10.0**x_lo), 10.0**x_hi)
    return {
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
                         "showactive": False, "pad": {"b": 4}, "buttons": buttons}],
    }


def _achievable_trace(label: str, x: list[float], y: list[float], provenance: str) -> dict[str, Any]:
    """An achievable (sustained) roof or slope: dashed, as the chart draws it (render.chart.ACHIEVABLE_COLOR)."""
    return {"type": "scatter", "mode": "lines", "name": label, "x": x, "y": y, "legendgroup": "achievable",
            "legendgrouptitle": {"text": "achievable roofs (the forecast's; the bound stays on the peaks)"},
            "hovertext": f"{label}<br>{esc(provenance)}", "hoverinfo": "text",
            "line": {"color": ACHIEVABLE_COLOR, "width": 1.5, "dash": "dash"}}


def compare_figure(analyses: Sequence[Analysis], title: str = "devices compared",
                   labels: Sequence[str] | None = None) -> dict[str, Any]:
    """Every device's roofs its ops are bounded or judged by (:func:`roofline.words.summary.roofs_of_ops`: the dominant
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
                                        f"ridge with {name(top.label)} {top.ridge(m):.3g} FLOP/B",
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


def script_json(obj: Any) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' survive, so nothing can close the tag.  A number that
    is not finite (a ridge of 1e308 / 1e-300) becomes null: plotly leaves a gap."""
    text = json.dumps(json_ready(obj), allow_nan=False, default=_json_default)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
