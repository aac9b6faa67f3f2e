"""The classic log-log roofline chart, generalised (matplotlib; PNG, SVG or PDF by extension).

One horizontal roof per shown compute ceiling, one slope per memory level,
each labelled on its line; the ridge point of the main roof marked; the
memory-bound (left of the ridge) and compute-bound (right) regions shaded;
predicted points (filled, on the roof) and measured points (hollow, joined to
their prediction) labelled without overlap, up to ``max_labels`` (the top ops
by time; the rest unlabelled).

>>> from roofline import Device, Op, Workload, analyze
>>> from roofline.render.chart import plot
>>> fig = plot(analyze(Workload.from_ops([Op("app", flops=8e8, bytes_read=4e9)]),
...                    Device.simple("seed", "100 GFLOP/s", "10 GB/s")))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from roofline.analysis import Analysis
from roofline.device import ComputeCeiling, Device, MemoryCeiling, SpecRoof
from roofline.summary import Summary, summarize
from roofline.text import for_chart
from roofline.units import format_bandwidth, format_flops, scale_for

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.transforms import Bbox

MEMORY_COLOR = "#d6e6f5"
COMPUTE_COLOR = "#fbe3c8"
ROOF_COLOR = "#222222"
SPEC_COLOR = "#8a8a8a"  # theoretical (spec) roofs: dashed grey, labelled "theoretical"
SLOPE_COLORS = ("#1f4e79", "#2e75b6", "#5b9bd5", "#9dc3e6")
KIND_COLORS = {
    "matmul": "#d62728", "conv": "#9467bd", "attention": "#e377c2", "elementwise": "#2ca02c", "norm": "#17becf",
    "softmax": "#bcbd22", "reduction": "#8c564b", "embedding": "#7f7f7f", "memory": "#1f77b4",
    "collective": "#ff7f0e", "other": "#555555",
}
JUDGED_MARKERS = {"L1": "^", "L2": "s", "L3": "p"}  # measured points judged against a cache level's slope
MAX_POINTS = 5000  # beyond this only the top ops by time are drawn
#: the widest axis range drawn (log axes): matplotlib cannot place ticks and labels across the whole float range
AXIS_MIN, AXIS_MAX = 1e-200, 1e200


@dataclass
class Point:
    """A point to draw: (intensity FLOP/B, FLOP/s); ``measured`` draws it hollow."""

    label: str
    intensity: float
    flops: float
    kind: str = "other"
    measured: bool = False
    weight: float = 1.0  # share of time, sets the marker size
    partner: int | None = None  # index of the predicted point a measured one joins
    judged: str = ""  # measured: the cache level it is judged against ("" = its predicted roof's level)


def points_of(a: Analysis, limit: int = MAX_POINTS) -> list[Point]:
    """Predicted (and measured) points of an analysis, longest ops first."""
    w = a.workload
    pts: list[Point] = []
    flops = w.columns["flops"]
    for i in a.order()[:limit]:
        ai = float(a.intensity[i])
        if flops[i] <= 0 or not 0 < ai < math.inf or not 0 < a.attainable_flops[i] < math.inf:
            continue  # nothing to place on a log-log chart (an intensity that underflowed to 0 included)
        name = w.strings("name", i)
        group = w.strings("group", i)
        label = name if not group or group.endswith(name) else f"{group.split('.')[-1]}.{name}"
        kind = w.strings("kind", i)
        pts.append(Point(label, ai, float(a.attainable_flops[i]), kind, False, float(a.share[i])))
        if np.isfinite(a.achieved_flops[i]):
            judged = a.judged_label(i) if a.judged_at_cache[i] else ""
            pts.append(Point(label, ai, float(a.achieved_flops[i]), kind, True, float(a.share[i]), len(pts) - 1,
                             judged))
    return pts


@dataclass
class _Frame:
    """What one chart draws and where: roofs, slopes, the marked ridge, axis ranges and scale."""

    ceilings: Sequence[ComputeCeiling]
    spec: list[SpecRoof]  # theoretical roofs of the precisions drawn
    mems: list[MemoryCeiling]
    main: MemoryCeiling
    top: ComputeCeiling  # the roof whose ridge is marked
    ridge: float
    x_lo: float
    x_hi: float
    y_lo: float
    y_hi: float
    scale: float
    unit: str
    clipped: bool = False  # an axis range was clipped to AXIS_MIN..AXIS_MAX (a note goes on the chart)


def _finite(values: Sequence[float]) -> list[float]:
    return [float(v) for v in values if v > 0 and math.isfinite(v)]


def _decade(v: float, up: bool, margin: float) -> float:
    """``v`` rounded out to a power of ten, ``margin`` decades beyond, within AXIS_MIN..AXIS_MAX."""
    e = math.log10(v) + (margin if up else -margin)
    e = math.ceil(e) if up else math.floor(e)
    return 10.0 ** max(min(e, math.log10(AXIS_MAX)), math.log10(AXIS_MIN))


def _span(lo: float, hi: float, decades: int = 2) -> tuple[float, float]:
    """A range at least ``decades`` wide (everything clipped to one edge would make the axis singular)."""
    if hi >= lo * 10**decades:
        return lo, hi
    if lo * 10**decades <= AXIS_MAX:
        return lo, lo * 10**decades
    return AXIS_MAX / 10**decades, AXIS_MAX


def _gmean(a: float, b: float) -> float:
    """Geometric mean without overflow (a and b > 0)."""
    return 10 ** ((math.log10(a) + math.log10(b)) / 2)


def _frame(device: Device, pts: Sequence[Point], summary: Summary | None, analysis: Analysis | None,
           ceilings: Sequence[ComputeCeiling] | None, levels: Sequence[str] | None) -> _Frame:
    if ceilings is None:
        if analysis is not None:
            used = {analysis.ceilings[j].key: analysis.ceilings[j] for j in np.unique(analysis.ceiling_index)}
            fastest = max(device.compute, key=lambda c: c.flops)
            used[fastest.key] = fastest
            ceilings = sorted(used.values(), key=lambda c: -c.flops)
        else:
            ceilings = sorted(device.compute, key=lambda c: -c.flops)
    mems = sorted((m for m in device.memory if levels is None or m.level in levels), key=lambda m: m.bandwidth)
    main = device.main_memory if device.main_memory in mems else mems[0]
    # the roof whose ridge is marked: the one carrying most op time (summary.dominant), else the fastest
    top = summary.dominant if summary is not None and summary.dominant in ceilings else ceilings[0]
    # axis ranges: every point, every ridge, a decade of margin; numbers at the float extremes (a ridge of
    # 1e308 / 1e-300 is inf) are clipped to what matplotlib can draw, with a note on the chart
    xs_all = [p.intensity for p in pts] + [c.flops / m.bandwidth for c in ceilings for m in mems]
    xs = _finite(xs_all) or [1.0]
    x_lo, x_hi = _decade(min(xs), False, 1), _decade(max(xs), True, 1)
    drawn = {c.precision for c in ceilings}
    spec = [r for r in device.bench.spec if r.precision in drawn] if device.bench is not None else []
    ys_all = [p.flops for p in pts if p.flops > 0] + [c.flops for c in ceilings] + [r.flops for r in spec] + [
        main.bandwidth * x_lo]
    ys = _finite(ys_all) or [1.0]
    y_lo = _decade(min(ys), False, 0.3)
    y_hi = _decade(max(ys), True, 0.5)  # room above the top roof for the region labels
    x_lo, x_hi = _span(x_lo, x_hi)
    y_lo, y_hi = _span(y_lo, y_hi)
    clipped = (len(xs) < len(xs_all) or len(ys) < len(ys_all) or not (AXIS_MIN < x_lo and x_hi < AXIS_MAX)
               or not (AXIS_MIN < y_lo and y_hi < AXIS_MAX))
    scale, unit = scale_for(max(c.flops for c in ceilings), "FLOP/s")
    ridge = min(max(top.flops / main.bandwidth, x_lo), x_hi)
    return _Frame(ceilings, spec, mems, main, top, ridge, x_lo, x_hi, y_lo, y_hi, scale, unit, clipped)


def plot(subject: Analysis | Device, *, title: str | None = None, max_labels: int = 30,
         points: Sequence[Point] = (), ceilings: Sequence[ComputeCeiling] | None = None,
         levels: Sequence[str] | None = None, ax: Axes | None = None, summary: Summary | None = None) -> Figure:
    """Draw the roofline of a device (and an analysis's points) and return the Figure.

    ``ceilings``: which compute roofs to draw (default: the ones the ops use plus
    the device's fastest; every ceiling for a bare device).  ``levels``: which
    memory levels (default: all the device has).  ``summary``: the analysis's facts
    (:func:`roofline.summary.summarize`; computed when not given): the ridge marked is
    the dominant ceiling's, and the title names the binding roof.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    if isinstance(subject, Analysis):
        device, analysis = subject.device, subject
        pts = points_of(analysis) + list(points)
        summary = summary or summarize(analysis)
    else:
        device, analysis, pts = subject, None, list(points)
    f = _frame(device, pts, summary, analysis, ceilings, levels)
    own = ax is None
    if ax is None:
        fig, ax = plt.subplots(figsize=(10, 6.5), dpi=110)
    else:
        from matplotlib.figure import SubFigure

        parent = ax.figure
        # an Axes in a SubFigure: its root Figure (the one with savefig, the one returned)
        fig = parent.figure if isinstance(parent, SubFigure) else parent
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(f.x_lo, f.x_hi)
    ax.set_ylim(f.y_lo / f.scale, f.y_hi / f.scale)
    ax.set_xlabel("arithmetic intensity [FLOP/byte]")
    ax.set_ylabel(f"performance [{f.unit}]")
    ax.grid(True, which="major", color="white", lw=0.8, alpha=0.8, zorder=1)
    # names from files: no mathtext ('$' escaped), control characters visible, long ones shortened
    heading = for_chart(title or (f"{analysis.workload.title} on {device.name}" if analysis
                                  else f"{device.name} roofline"))
    if summary is not None:
        heading += f"\nbinding roof: {for_chart(summary.binding.describe())}"
    ax.set_title(heading, fontsize=12 if summary is None else 11)
    if own:  # the layout is final before any label is placed: placement works in pixels
        fig.tight_layout()
    _draw_roofs(ax, fig, f)
    shown_kinds = _draw_points(ax, pts, f.scale)
    _label_points(ax, fig, pts, f.scale, max_labels)
    _legend(ax, pts, shown_kinds)
    if f.clipped:
        ax.text(0.01, 0.04, f"axis ranges clipped to {AXIS_MIN:g} .. {AXIS_MAX:g}: some roofs or points lie outside "
                "(see the tables)", transform=ax.transAxes, fontsize=7.5, color="#a00000", va="bottom")
    if analysis is not None:
        hidden = int(np.sum(analysis.workload.columns["flops"] <= 0))
        if hidden:
            ax.text(0.01, 0.01, f"{hidden} op(s) with 0 FLOPs (data movement) not drawn; they are in the tables",
                    transform=ax.transAxes, fontsize=7.5, color="#444444", va="bottom")
    return fig


def _draw_roofs(ax: Axes, fig: Figure, f: _Frame) -> None:
    """Regions, compute roofs (measured solid/dashed, theoretical grey), memory slopes and the ridge."""
    # regions: left of the ridge memory-bound, right compute-bound
    ax.axvspan(f.x_lo, f.ridge, color=MEMORY_COLOR, zorder=0, lw=0)
    ax.axvspan(f.ridge, f.x_hi, color=COMPUTE_COLOR, zorder=0, lw=0)
    ax.text(_gmean(f.x_lo, f.ridge) if f.ridge > f.x_lo * 10 else f.x_lo * 1.5, f.y_hi / f.scale / 1.6,
            "memory-bound", ha="center", va="top", fontsize=11, color="#1f4e79", alpha=0.8, style="italic")
    ax.text(_gmean(f.ridge, f.x_hi), f.y_hi / f.scale / 1.6, "compute-bound", ha="center", va="top", fontsize=11,
            color="#a0522d", alpha=0.8, style="italic")
    # compute roofs: horizontal from where they meet the main slope
    for c in f.ceilings:
        top = c is f.top
        ax.plot([_clip(c.flops / f.main.bandwidth, f), f.x_hi], [c.flops / f.scale] * 2, "-" if top else "--",
                color=ROOF_COLOR, lw=2.2 if top else 1.3, zorder=3)
    for r in f.spec:
        ax.plot([_clip(r.flops / f.main.bandwidth, f), f.x_hi], [r.flops / f.scale] * 2, ls=(0, (6, 3)),
                color=SPEC_COLOR, lw=1.1, zorder=2)
    _roof_labels(ax, fig, [(f"{for_chart(c.label)} {format_flops(c.flops)}", c.flops, ROOF_COLOR)
                           for c in f.ceilings]
                 + [(f"{for_chart(r.precision)} {for_chart(r.unit)} {format_flops(r.flops)} (theoretical)", r.flops,
                     SPEC_COLOR)
                    for r in f.spec], f.main.bandwidth, f.scale, f.x_hi)
    # memory slopes: up to the fastest shown roof
    x = np.geomspace(f.x_lo, f.x_hi, 512)
    peak = f.ceilings[0].flops
    for k, m in enumerate(sorted(f.mems, key=lambda m: -m.bandwidth)):
        main = m is f.main
        color = ROOF_COLOR if main else SLOPE_COLORS[min(k, len(SLOPE_COLORS) - 1)]
        xe = _clip(peak / m.bandwidth, f)
        xx = np.append(x[x <= xe], xe)
        with np.errstate(over="ignore", under="ignore"):
            yy = xx * m.bandwidth / f.scale
        ax.plot(xx, yy, "-" if main else ":", color=color, lw=2.2 if main else 1.4, zorder=3)
        _slope_label(ax, for_chart(m.level) + " " + format_bandwidth(m.bandwidth), m.bandwidth / f.scale, f.x_lo, xe,
                     color, k)
    # ridge point, written up its dotted line near the x axis, where no roof label goes
    ax.plot([f.ridge], [f.top.flops / f.scale], "o", ms=8, mfc="white", mec=ROOF_COLOR, mew=2, zorder=7)
    ax.axvline(f.ridge, color=ROOF_COLOR, lw=0.8, ls=":", zorder=2)
    ax.text(f.ridge, f.y_lo / f.scale * 1.4, f"ridge {f.top.flops / f.main.bandwidth:.3g} FLOP/B", rotation=90,
            ha="right", va="bottom",
            fontsize=9, zorder=8, color=ROOF_COLOR)


def _clip(x: float, f: _Frame) -> float:
    """``x`` within the drawn x range (an inf or underflowed ridge is drawn at the axis edge)."""
    return min(max(x, f.x_lo), f.x_hi) if x == x else f.x_hi


def _draw_points(ax: Axes, pts: Sequence[Point], scale: float) -> dict[str, Any]:
    """Predicted points (filled, by kind) and measured ones (hollow, joined to their prediction)."""
    shown_kinds: dict[str, Any] = {}
    for p in pts:
        if not (0 < p.intensity < math.inf and 0 < p.flops < math.inf):
            continue  # a log axis has no place for it (an achieved rate that overflowed, a 0)
        color = KIND_COLORS.get(p.kind, "#555555")
        size = 30 + 270 * math.sqrt(max(p.weight, 0.0))
        if p.measured:
            if p.partner is not None:
                q = pts[p.partner]
                ax.plot([q.intensity, p.intensity], [q.flops / scale, p.flops / scale], color=color, lw=0.9,
                        alpha=0.7, zorder=4)
            ax.scatter([p.intensity], [p.flops / scale], s=size, facecolors="white", edgecolors=color,
                       linewidths=1.8, zorder=5, marker=JUDGED_MARKERS.get(p.judged, "s") if p.judged else "D")
        else:
            h = ax.scatter([p.intensity], [p.flops / scale], s=size, color=color, edgecolors="white",
                           linewidths=0.6, zorder=5, alpha=0.9)
            shown_kinds.setdefault(p.kind, h)
    return shown_kinds


def _legend(ax: Axes, pts: Sequence[Point], shown_kinds: dict[str, Any]) -> None:
    handles = list(shown_kinds.values())
    labels = [for_chart(k) for k in shown_kinds]
    if any(p.measured for p in pts):
        from matplotlib.lines import Line2D

        if shown_kinds:
            handles.append(Line2D([], [], marker="o", ls="", color="#555555"))
            labels.append("predicted (on the roof)")
        if any(p.measured and not p.judged for p in pts):
            handles.append(Line2D([], [], marker="D", ls="", mfc="white", mec="#555555"))
            labels.append("measured")
        for level in sorted({p.judged for p in pts if p.measured and p.judged}):
            handles.append(Line2D([], [], marker=JUDGED_MARKERS.get(level, "s"), ls="", mfc="white", mec="#555555"))
            labels.append(f"measured, judged vs {for_chart(level)} (working set fits)")
    if handles:
        ax.legend(handles, labels, loc="lower right", fontsize=8.5, framealpha=0.9,
                  title="op kind" if shown_kinds else None, title_fontsize=8.5)


def _renderer(fig: Figure) -> RendererBase:
    """``fig`` drawn, and its renderer (label placement measures text in pixels)."""
    fig.canvas.draw()
    renderer: RendererBase = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # Agg's; stubs type the base canvas
    return renderer


def _roof_labels(ax: Axes, fig: Figure, roofs: Sequence[tuple[str, float, str]], bandwidth: float, scale: float,
                 x_hi: float) -> None:
    """Label every roof (text, FLOP/s, colour) on its line without overlaps: right end above the line,
    else further left, else below."""
    renderer = _renderer(fig)
    placed: list[Bbox] = []
    for text, flops, color in sorted(roofs, key=lambda r: -r[1]):  # fastest first
        y = flops / scale
        # a light box: a line passing behind (another roof, a theoretical one) never strikes the label through
        t = ax.text(x_hi / 1.15, y * 1.06, text, ha="right", va="bottom", fontsize=8.5, color=color, zorder=6,
                    bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.75})
        box = t.get_window_extent(renderer)
        decade = ax.transData.transform((10.0, 1.0))[0] - ax.transData.transform((1.0, 1.0))[0]
        # the label's width (and height) as a factor along x (y); capped: across 500 decades a decade is < 1 pixel
        width = 10 ** min(box.width / max(decade, 1e-9), 300.0)
        rise = ax.transData.transform((1.0, 10.0))[1] - ax.transData.transform((1.0, 1.0))[1]
        line = 10 ** min(box.height / max(rise, 1e-9), 300.0)
        right = [x_hi / 1.15 / (1.15 * width) ** k for k in range(4)]
        candidates: list[tuple[float, float, Literal["bottom", "top"]]] = [(x, y * 1.06, "bottom") for x in right]
        candidates += [(x, y / 1.06, "top") for x in right]
        candidates += [(right[0], y / 1.06 / line**j, "top") for j in (1, 2, 3)]  # stacked further down
        for x, ty, va in candidates:
            if x / width < flops / bandwidth:  # the label must sit over its own roof
                continue
            t.set_position((x, ty))
            t.set_verticalalignment(va)
            if not any(t.get_window_extent(renderer).overlaps(b) for b in placed):
                break
        else:
            t.set_position(candidates[0][:2])
            t.set_verticalalignment("bottom")
        placed.append(t.get_window_extent(renderer))


def _slope_label(ax: Axes, text: str, bw_scaled: float, x_lo: float, x_end: float, color: str, k: int = 0) -> None:
    """Write ``text`` along a slope, rotated to its on-screen angle; the k-th slope's label sits further left."""
    xm = math.sqrt(x_lo * x_end) if x_end > x_lo * 100 else x_lo * 2
    xm /= 5.0**k  # neighbouring slopes are close: stagger their labels
    xm = max(xm, x_lo * 3)
    p1 = ax.transData.transform((xm, xm * bw_scaled))
    p2 = ax.transData.transform((xm * 2, xm * 2 * bw_scaled))
    if not (np.isfinite(p1).all() and np.isfinite(p2).all() and 0 < xm * bw_scaled < math.inf):
        return  # off the drawable range (numbers at the float extremes): the clipped-axis note says so
    angle = math.degrees(math.atan2(p2[1] - p1[1], p2[0] - p1[0]))
    ax.annotate(text, (xm, xm * bw_scaled), xytext=(0, 5), textcoords="offset points", rotation=angle,
                rotation_mode="anchor", fontsize=8.5, color=color, ha="left", va="bottom", zorder=6)


def _label_points(ax: Axes, fig: Figure, pts: Sequence[Point], scale: float, max_labels: int) -> None:
    """Greedy non-overlapping labels for the top ``max_labels`` points (by time)."""
    renderer = _renderer(fig)
    taken = []  # display-space boxes (x0, y0, x1, y1)
    for p in pts:
        x, y = ax.transData.transform((p.intensity, p.flops / scale))
        r = 5 + 8 * math.sqrt(max(p.weight, 0.0))
        taken.append((x - r, y - r, x + r, y + r))
    from matplotlib.text import Text

    for existing in ax.texts:  # roof, slope, ridge and region labels stay readable
        e = Text.get_window_extent(existing, renderer)
        taken.append((e.x0 - 2, e.y0 - 2, e.x1 + 2, e.y1 + 2))
    ax_box = ax.get_window_extent(renderer)
    seen: set[tuple[str, bool]] = set()
    n = 0
    offsets = [(dx * s, dy * s) for s in (1, 2, 3, 4.5) for dx, dy in
               ((10, 8), (10, -14), (-10, 8), (-10, -14), (0, 14), (0, -20), (16, -3), (-16, -3))]
    for p in pts:
        if n >= max_labels:
            break
        if p.measured or (p.label, p.measured) in seen:
            continue
        seen.add((p.label, p.measured))
        x, y = ax.transData.transform((p.intensity, p.flops / scale))
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        text = for_chart(p.label if len(p.label) <= 28 else p.label[:26] + "…")
        t = ax.annotate(text, (p.intensity, p.flops / scale), xytext=(0, 0), textcoords="offset pixels",
                        fontsize=7.5, zorder=9, ha="left", va="bottom",
                        bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.75},
                        arrowprops={"arrowstyle": "-", "color": "#777777", "lw": 0.6})
        ext = Text.get_window_extent(t, renderer)  # the text alone, not its leader line
        w, h = ext.width + 4, ext.height + 4  # + the label's rounded box padding
        placed = False
        for dx, dy in offsets:
            x0 = x + dx if dx >= 0 else x + dx - w
            y0 = y + dy
            box = (x0, y0, x0 + w, y0 + h)
            inside = box[0] >= ax_box.x0 and box[2] <= ax_box.x1 and box[1] >= ax_box.y0 and box[3] <= ax_box.y1
            if inside and not any(_overlap(box, b) for b in taken):
                t.set_position((dx, dy))
                t.set_horizontalalignment("left" if dx >= 0 else "right")
                taken.append(box)
                placed = True
                n += 1
                break
        if not placed:
            t.remove()


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return not (a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1])


def chart_bytes(subject: Analysis | Device, fmt: str = "png", *, title: str | None = None, **kw: Any) -> bytes:
    """The chart as PNG/SVG/PDF bytes."""
    import io

    import matplotlib.pyplot as plt

    fig = plot(subject, title=title, **kw)
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def save_chart(subject: Analysis | Device, path: str | Path, *, title: str | None = None, **kw: Any) -> None:
    """Render to PNG/SVG/PDF (by extension), written all-or-nothing."""
    from roofline.fileio import write_bytes_atomic
    from roofline.render import check_chart_path

    check_chart_path(path)
    write_bytes_atomic(path, chart_bytes(subject, Path(path).suffix.lower().lstrip("."), title=title, **kw))
