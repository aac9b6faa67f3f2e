"""The classic log-log roofline chart, generalised (matplotlib; PNG, SVG or PDF by extension).

One horizontal roof per shown compute ceiling, one slope per memory level;
the device's achievable (sustained) figures for the roofs drawn, dashed and
labelled "achievable" (what the forecast runs on, beside the bound, never in
its place), as its theoretical (spec) roofs are dashed grey and labelled
"theoretical"; the ridge point of the main roof marked; the memory-bound (left of the ridge)
and compute-bound (right) regions shaded; predicted points (filled, on the
roof) and measured points (hollow, joined to their prediction).  Y ticks are
SI-prefixed FLOP/s ('100 TFLOP/s').

Labels are placed in display pixels, greedily, most important first: roofs
(roofs at one height share a label), the ridge, slopes, the region names, then
ops by time.  Each takes the first of its candidate positions (beside its line,
or around its point) whose box stays inside the axes, overlaps no placed label,
marker or the legend, and is crossed by no roof, slope, ridge,
measured-to-predicted or leader line; a leader line crosses no label.  A roof,
slope or ridge with no free position is named in the legend instead (in a
colour of its own when its line would look like another's), as is one of the
top ``TOP_OPS`` ops; other ops without room stay unlabelled (``max_labels`` at
most are tried).

Figures are built without pyplot (:func:`new_figure`): no backend is switched,
and in a notebook a chart shows itself (``_repr_png_``).

>>> from roofline import Device, Op, Workload, analyze
>>> from roofline.render.chart import plot
>>> fig = plot(analyze(Workload.from_ops([Op("app", flops=8e8, bytes_read=4e9)]),
...                    Device.simple("seed", "100 GFLOP/s", "10 GB/s")))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from roofline.device import ComputeCeiling, Device, MemoryCeiling, SpecRoof
from roofline.summary import Summary, summarize
from roofline.text import for_chart
from roofline.units import format_bandwidth, format_flops, scale_for

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    from roofline.analysis import Analysis

MEMORY_COLOR = "#d6e6f5"
COMPUTE_COLOR = "#fbe3c8"
ROOF_COLOR = "#222222"
SPEC_COLOR = "#8a8a8a"  # theoretical (spec) roofs: dashed grey, labelled "theoretical"
ACHIEVABLE_COLOR = "#00796b"  # achievable (sustained) roofs and slopes: dashed teal, labelled "achievable"
ACHIEVABLE_LABEL_COLOR = "#00695c"
ACHIEVABLE_DASH = (0, (3, 2))  # shorter dashes than the theoretical roofs' (6, 3): the two never look alike
SLOPE_COLORS = ("#1f4e79", "#2e75b6", "#5b9bd5", "#9dc3e6")
KIND_COLORS = {
    "matmul": "#d62728", "conv": "#9467bd", "attention": "#e377c2", "elementwise": "#2ca02c", "norm": "#17becf",
    "softmax": "#bcbd22", "reduction": "#8c564b", "embedding": "#7f7f7f", "memory": "#1f77b4",
    "collective": "#ff7f0e", "other": "#555555",
}
#: roofs named in the legend (no room on their line) are drawn in these, so each line matches its entry
LEGEND_ROOF_COLORS = ("#b2182b", "#1b7837", "#762a83", "#e08214", "#35978f", "#8c510a", "#c51b7d", "#4d4d4d")
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
    # achievable (sustained) figures of the roofs drawn: (peak roof, achievable one); where the achievable
    # roofs meet (the main level's sustained bandwidth, the fastest drawn roof's sustained FLOP/s)
    achievable: list[tuple[ComputeCeiling, ComputeCeiling]] = field(default_factory=list)
    achievable_mems: list[tuple[MemoryCeiling, MemoryCeiling]] = field(default_factory=list)
    achievable_bandwidth: float = math.nan
    achievable_peak: float = math.nan


def achievable_roofs(device: Device, ceilings: Sequence[ComputeCeiling], levels: Sequence[MemoryCeiling]
                     ) -> tuple[list[tuple[ComputeCeiling, ComputeCeiling]], list[tuple[MemoryCeiling, MemoryCeiling]]]:
    """The device's sustained figures for the given roofs only: (peak roof, achievable roof) pairs, compute
    then memory (roofs without a figure of their own have none: the forecast runs on their peak)."""
    compute = [(c, x) for c in ceilings if (x := device.achievable_ceiling(c)) is not None]
    memory = [(m, y) for m in levels if (y := device.achievable_level(m)) is not None]
    return compute, memory


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


def interconnect_roof(device: Device, analysis: Analysis | None) -> MemoryCeiling | None:
    """The device link as a slope to draw, when some op of ``analysis`` moves its bytes over it."""
    if analysis is None or device.interconnect is None or not (analysis.level_index < 0).any():
        return None
    ic = device.interconnect
    return MemoryCeiling(f"link: {ic.name or 'interconnect'}", ic.bandwidth, None, ic.provenance)


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
    link = interconnect_roof(device, analysis)
    if link is not None:  # collective ops sit under the link's slope (a network tier, roofline llm --system)
        mems = sorted([*mems, link], key=lambda m: m.bandwidth)
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
    ach, ach_mems = achievable_roofs(device, ceilings, mems)
    return _Frame(ceilings, spec, mems, main, top, ridge, x_lo, x_hi, y_lo, y_hi, scale, unit, clipped, ach,
                  ach_mems, device.achievable_bandwidth(main), max(device.achievable_flops(c) for c in ceilings))


FIGSIZE = (10.0, 6.5)  # inches
DPI = 110
GAP = 3.0  # pixels between a label and the line it names
PAD = 2.5  # pixels a label's light box reaches beyond its text (a placed label keeps this clear)
TOP_OPS = 5  # the ops by time always labelled (on the chart, else in the legend)


def new_figure(figsize: tuple[float, float] = FIGSIZE, dpi: float = DPI) -> Figure:
    """A Figure with its own Agg canvas, outside pyplot: no backend is switched, no figure is left open.

    It shows itself in a notebook (``_repr_png_``) whether or not pyplot was ever imported there.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = _figure_class()(figsize=figsize, dpi=dpi)
    FigureCanvasAgg(fig)
    return fig


def figure_bytes(fig: Figure, fmt: str = "png") -> bytes:
    """``fig`` as PNG/SVG/PDF bytes (cropped to what is drawn)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, bbox_inches="tight")
    return buf.getvalue()


_FIGURE_CLASS: list[type[Figure]] = []


def _figure_class() -> type[Figure]:
    """matplotlib's Figure with a ``_repr_png_`` (made on first use: matplotlib is imported lazily)."""
    if not _FIGURE_CLASS:
        from matplotlib.figure import Figure

        class RooflineFigure(Figure):
            """A Figure that IPython displays as a PNG without pyplot's inline backend."""

            def _repr_png_(self) -> bytes:
                return figure_bytes(self, "png")

        RooflineFigure.__module__, RooflineFigure.__qualname__ = __name__, "RooflineFigure"  # picklable by name
        _FIGURE_CLASS.append(RooflineFigure)
    return _FIGURE_CLASS[0]


def __getattr__(name: str) -> Any:
    """``RooflineFigure``, made on first use (unpickling a chart finds it here)."""
    if name == "RooflineFigure":
        return _figure_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def flops_tick(value: float) -> str:
    """A y tick label: SI-prefixed FLOP/s ('100 TFLOP/s'); a power of ten outside the prefixes' range."""
    if not (value > 0 and math.isfinite(value)):
        return ""
    if 1e-12 <= value < 1e21:
        return format_flops(value, 3)
    return f"{value:.0e} FLOP/s"


def scaled_tick(value: float, pos: int | None = None, *, scale: float = 1.0) -> str:
    """A tick formatter for an axis drawn in units of ``scale`` FLOP/s (picklable with functools.partial)."""
    return flops_tick(value * scale)


def plot(subject: Analysis | Device, *, title: str | None = None, max_labels: int = 30,
         points: Sequence[Point] = (), ceilings: Sequence[ComputeCeiling] | None = None,
         levels: Sequence[str] | None = None, ax: Axes | None = None, summary: Summary | None = None,
         figsize: tuple[float, float] = FIGSIZE) -> Figure:
    """Draw the roofline of a device (and an analysis's points) and return the Figure.

    ``ceilings``: which compute roofs to draw (default: the ones the ops use plus
    the device's fastest; every ceiling for a bare device).  ``levels``: which
    memory levels (default: all the device has).  ``summary``: the analysis's facts
    (:func:`roofline.summary.summarize`; computed when not given): the ridge marked is
    the dominant ceiling's, and the title names the binding roof.  Labels are placed in
    pixels for ``figsize``: resizing the returned Figure afterwards can make them collide.

    The Figure is built without pyplot (no backend is switched); in a notebook it shows itself.
    """
    if isinstance(subject, Device):
        device, analysis, pts = subject, None, list(points)
    else:
        device, analysis = subject.device, subject
        pts = points_of(analysis) + list(points)
        summary = summary or summarize(analysis)
    f = _frame(device, pts, summary, analysis, ceilings, levels)
    own = ax is None
    if ax is None:
        fig = new_figure(figsize)
        ax = fig.add_subplot()
    else:
        from matplotlib.figure import SubFigure

        parent = ax.figure
        # an Axes in a SubFigure: its root Figure (the one with savefig, the one returned)
        fig = parent.figure if isinstance(parent, SubFigure) else parent
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(f.x_lo, f.x_hi)
    ax.set_ylim(f.y_lo / f.scale, f.y_hi / f.scale)
    ax.yaxis.set_major_formatter(FuncFormatter(partial(scaled_tick, scale=f.scale)))
    ax.yaxis.set_minor_formatter(NullFormatter())
    notes = []
    if f.clipped:
        notes.append(f"axis ranges clipped to {AXIS_MIN:g} .. {AXIS_MAX:g}: some roofs or points lie outside "
                     "(see the tables)")
    if analysis is not None:
        hidden = int(np.sum(analysis.workload.columns["flops"] <= 0))
        if hidden:
            notes.append(f"{hidden} op(s) with 0 FLOPs (data movement) not drawn; they are in the tables")
    # notes go under the axis title, where no line or label can cross them
    ax.set_xlabel("\n".join(["arithmetic intensity [FLOP/byte]", *notes]))
    ax.set_ylabel("performance")  # the ticks carry the unit: "100 TFLOP/s"
    ax.grid(True, which="major", color="white", lw=0.8, alpha=0.8, zorder=1)
    # names from files: no mathtext ('$' escaped), control characters visible, long ones shortened
    heading = for_chart(title or (f"{analysis.workload.title} on {device.name}" if analysis
                                  else f"{device.name} roofline"))
    if summary is not None:
        heading += f"\nbinding roof: {for_chart(summary.binding.describe())}"
    ax.set_title(heading, fontsize=12 if summary is None else 11, pad=10)  # clear of the top y tick label
    if own:  # the layout is final before any label is placed: placement works in pixels
        fig.tight_layout()
    labels = _draw_roofs(ax, f)
    shown_kinds = _draw_points(ax, pts, f.scale)
    _place_labels(ax, fig, f, pts, labels, shown_kinds, max_labels)
    return fig


@dataclass
class _Label:
    """A label to place: its text artist, what it names, and the handle that stands for it in the legend."""

    text: Text
    role: str  # roof, slope, ridge, region, op
    candidates: list[tuple[float, float, float, float]]  # pixel boxes to try, best first
    handle: Any = None  # legend handle when it cannot be placed (None: dropped instead)
    anchor: tuple[float, float] | None = None  # op labels: the point (pixels) a leader line joins
    radius: float = 0.0  # op labels: the point's marker radius (pixels)
    line: Any = None  # roofs and slopes: the Line2D named
    box: tuple[float, float, float, float] | None = None


def _draw_roofs(ax: Axes, f: _Frame) -> list[tuple[str, str, Any, dict[str, Any]]]:
    """Regions, compute roofs (measured solid/dashed, theoretical grey, achievable teal), memory slopes (and
    achievable ones) and the ridge.

    Returns the labels to place: (role, text, the Line2D it names, text style)."""
    labels: list[tuple[str, str, Any, dict[str, Any]]] = []
    # regions: left of the ridge memory-bound, right compute-bound
    ax.axvspan(f.x_lo, f.ridge, color=MEMORY_COLOR, zorder=0, lw=0)
    ax.axvspan(f.ridge, f.x_hi, color=COMPUTE_COLOR, zorder=0, lw=0)
    region = {"fontsize": 11, "alpha": 0.8, "style": "italic", "zorder": 6}
    labels.append(("region", "memory-bound", (f.x_lo, f.ridge), {**region, "color": "#1f4e79"}))
    labels.append(("region", "compute-bound", (f.ridge, f.x_hi), {**region, "color": "#a0522d"}))
    # compute roofs: horizontal from where they meet the main slope; the marked (dominant) roof's label first;
    # roofs at the same height share one label ("fp8 matrix, int8 matrix 1.979 PFLOP/s")
    groups: dict[tuple[bool, float], list[str]] = {}
    for c in sorted(f.ceilings, key=lambda c: (c is not f.top, -c.flops)):
        top = c is f.top
        (line,) = ax.plot([_clip(c.flops / f.main.bandwidth, f), f.x_hi], [c.flops / f.scale] * 2,
                          "-" if top else "--", color=ROOF_COLOR, lw=2.2 if top else 1.3, zorder=3, gid="roof")
        same = next((k for k in groups if k[1] == c.flops), None)
        if same is None:
            groups[(top, c.flops)] = [for_chart(c.label)]
            labels.append(("roof", "", line, {"fontsize": 8.5, "color": ROOF_COLOR}))
        else:
            groups[same].append(for_chart(c.label))
    spec_groups: dict[float, list[str]] = {}
    for r in sorted(f.spec, key=lambda r: -r.flops):
        (line,) = ax.plot([_clip(r.flops / f.main.bandwidth, f), f.x_hi], [r.flops / f.scale] * 2, ls=(0, (6, 3)),
                          color=SPEC_COLOR, lw=1.1, zorder=2, gid="roof")
        if r.flops not in spec_groups:
            spec_groups[r.flops] = []
            labels.append(("roof", "", line, {"fontsize": 8.5, "color": "#6a6a6a"}))
        spec_groups[r.flops].append(f"{for_chart(r.precision)} {for_chart(r.unit)}")
    texts = [f"{', '.join(names)} {format_flops(flops)}" for (_, flops), names in groups.items()]
    texts += [f"{', '.join(names)} {format_flops(flops)} (theoretical)" for flops, names in spec_groups.items()]
    labels = labels[:2] + [(role, text, line, style) for (role, _, line, style), text in zip(labels[2:], texts,
                                                                                              strict=True)]
    labels += _draw_achievable(ax, f)
    # memory slopes: up to the fastest shown roof; the main one labelled first, then fastest first
    x = np.geomspace(f.x_lo, f.x_hi, 512)
    peak = f.ceilings[0].flops
    slopes = []
    for k, m in enumerate(sorted(f.mems, key=lambda m: -m.bandwidth)):
        main = m is f.main
        color = ROOF_COLOR if main else SLOPE_COLORS[min(k, len(SLOPE_COLORS) - 1)]
        xe = _clip(peak / m.bandwidth, f)
        xx = np.append(x[x <= xe], xe)
        with np.errstate(over="ignore", under="ignore"):
            yy = xx * m.bandwidth / f.scale
        (line,) = ax.plot(xx, yy, "-" if main else ":", color=color, lw=2.2 if main else 1.4, zorder=3, gid="roof")
        slopes.append((not main, ("slope", f"{for_chart(m.level)} {format_bandwidth(m.bandwidth)}", line,
                                  {"fontsize": 8.5, "color": color})))
    labels += [s for _, s in sorted(slopes, key=lambda s: s[0])]
    # achievable slopes: up to where they meet the fastest drawn roof's achievable figure
    xe = _clip(f.achievable_peak / f.achievable_bandwidth, f) if f.achievable_mems else f.x_hi
    for _, m in sorted(f.achievable_mems, key=lambda pair: -pair[1].bandwidth):
        xx = np.append(x[x <= xe], xe)
        with np.errstate(over="ignore", under="ignore"):
            yy = xx * m.bandwidth / f.scale
        (line,) = ax.plot(xx, yy, ls=ACHIEVABLE_DASH, color=ACHIEVABLE_COLOR, lw=1.1, zorder=2, gid="achievable")
        labels.append(("slope", f"{for_chart(m.level)} achievable {format_bandwidth(m.bandwidth)}", line,
                       {"fontsize": 8.5, "color": ACHIEVABLE_LABEL_COLOR}))
    # the ridge point and its dotted line; its label goes beside the line
    ax.plot([f.ridge], [f.top.flops / f.scale], "o", ms=8, mfc="white", mec=ROOF_COLOR, mew=2, zorder=7, gid="ridge")
    line = ax.axvline(f.ridge, color=ROOF_COLOR, lw=0.8, ls=":", zorder=2, gid="ridge-line")
    labels.append(("ridge", f"ridge {f.top.flops / f.main.bandwidth:.3g} FLOP/B", line,
                   {"fontsize": 9, "color": ROOF_COLOR, "rotation": 90}))
    order = {"roof": 0, "ridge": 1, "slope": 2, "region": 3}  # most important first: placed first
    return sorted(labels, key=lambda lb: order[lb[0]])


def _draw_achievable(ax: Axes, f: _Frame) -> list[tuple[str, str, Any, dict[str, Any]]]:
    """The achievable compute roofs of the roofs drawn (dashed teal, from where they meet the achievable main
    slope); roofs at one height share a label ('bf16 matrix achievable 794.5 TFLOP/s')."""
    out: list[tuple[str, str, Any, dict[str, Any]]] = []
    names: dict[float, list[str]] = {}
    for _, c in sorted(f.achievable, key=lambda pair: -pair[1].flops):
        if c.flops in names:
            names[c.flops].append(for_chart(c.label))
            continue
        (line,) = ax.plot([_clip(c.flops / f.achievable_bandwidth, f), f.x_hi], [c.flops / f.scale] * 2,
                          ls=ACHIEVABLE_DASH, color=ACHIEVABLE_COLOR, lw=1.1, zorder=2, gid="achievable")
        names[c.flops] = [for_chart(c.label)]
        out.append(("roof", "", line, {"fontsize": 8.5, "color": ACHIEVABLE_LABEL_COLOR}))
    return [(role, f"{', '.join(names[flops])} achievable {format_flops(flops)}", line, style)
            for (role, _, line, style), flops in zip(out, names, strict=True)]


def _clip(x: float, f: _Frame) -> float:
    """``x`` within the drawn x range (an inf or underflowed ridge is drawn at the axis edge)."""
    return min(max(x, f.x_lo), f.x_hi) if x == x else f.x_hi


def _marker_points(size: float) -> float:
    """The marker's radius in points for a scatter size ``size`` (points squared)."""
    return math.sqrt(size) / 2


def _size(p: Point) -> float:
    return 30 + 270 * math.sqrt(max(p.weight, 0.0))


def _draw_points(ax: Axes, pts: Sequence[Point], scale: float) -> dict[str, Any]:
    """Predicted points (filled, by kind) and measured ones (hollow, joined to their prediction).

    One scatter per kind (and per marker for measured points), not per point: 5,000 points draw in a
    fraction of a second instead of seconds; each batch draws its biggest points first so small ones
    stay visible on top."""
    shown_kinds: dict[str, Any] = {}
    batches: dict[tuple[str, bool, str], list[Point]] = {}
    for p in pts:
        if not (0 < p.intensity < math.inf and 0 < p.flops < math.inf):
            continue  # a log axis has no place for it (an achieved rate that overflowed, a 0)
        if p.measured and p.partner is not None:
            q = pts[p.partner]
            ax.plot([q.intensity, p.intensity], [q.flops / scale, p.flops / scale],
                    color=KIND_COLORS.get(p.kind, "#555555"), lw=0.9, alpha=0.7, zorder=4, gid="connector")
        marker = (JUDGED_MARKERS.get(p.judged, "s") if p.judged else "D") if p.measured else "o"
        batches.setdefault((p.kind, p.measured, marker), []).append(p)
    for (kind, measured, marker), group in batches.items():
        group = sorted(group, key=_size, reverse=True)
        x = [p.intensity for p in group]
        y = [p.flops / scale for p in group]
        sizes = [_size(p) for p in group]
        color = KIND_COLORS.get(kind, "#555555")
        if measured:
            ax.scatter(x, y, s=sizes, facecolors="white", edgecolors=color, linewidths=1.8, zorder=5, marker=marker)
        else:
            h = ax.scatter(x, y, s=sizes, color=color, edgecolors="white", linewidths=0.6, zorder=5, alpha=0.9)
            shown_kinds.setdefault(kind, h)
    return shown_kinds


def _legend_entries(pts: Sequence[Point], shown_kinds: dict[str, Any]) -> tuple[list[Any], list[str]]:
    from matplotlib.lines import Line2D

    handles = list(shown_kinds.values())
    labels = [for_chart(k) for k in shown_kinds]
    if any(p.measured for p in pts):
        if shown_kinds:
            handles.append(Line2D([], [], marker="o", ls="", color="#555555"))
            labels.append("predicted (on the roof)")
        if any(p.measured and not p.judged for p in pts):
            handles.append(Line2D([], [], marker="D", ls="", mfc="white", mec="#555555"))
            labels.append("measured")
        for level in sorted({p.judged for p in pts if p.measured and p.judged}):
            handles.append(Line2D([], [], marker=JUDGED_MARKERS.get(level, "s"), ls="", mfc="white", mec="#555555"))
            labels.append(f"measured, judged vs {for_chart(level)} (working set fits)")
    return handles, labels


def _renderer(fig: Figure) -> RendererBase:
    """The renderer label placement measures text with (any canvas: Agg's, or a notebook's own)."""
    get = getattr(fig.canvas, "get_renderer", None)
    renderer: RendererBase = get() if get is not None else fig._get_renderer()  # type: ignore[attr-defined]
    return renderer


Box = tuple[float, float, float, float]  # pixels: x0, y0, x1, y1


class _Space:
    """What is already on the chart, in pixels: label boxes and markers (no overlap) and lines (no crossing)."""

    def __init__(self, frame: Box) -> None:
        self.frame = frame
        self.boxes = np.empty((0, 4))  # labels, markers, the legend
        self.labels = np.empty((0, 4))  # labels and the legend: what a leader line must not cross
        self.markers = np.empty((0, 4))
        self.segments = np.empty((0, 4))

    def add_box(self, box: Box, label: bool = True) -> None:
        self.boxes = np.vstack([self.boxes, box])
        if label:
            self.labels = np.vstack([self.labels, box])
        else:
            self.markers = np.vstack([self.markers, box])

    def add_segments(self, segs: np.ndarray) -> None:
        if len(segs):
            self.segments = np.vstack([self.segments, segs])

    def free(self, box: Box) -> bool:
        """``box`` lies inside the axes, overlaps no box (touching allowed) and no line crosses it."""
        fx0, fy0, fx1, fy1 = self.frame
        x0, y0, x1, y1 = box
        if x0 < fx0 or y0 < fy0 or x1 > fx1 or y1 > fy1:
            return False
        b = self.boxes
        if len(b) and bool(np.any((b[:, 0] < x1) & (x0 < b[:, 2]) & (b[:, 1] < y1) & (y0 < b[:, 3]))):
            return False
        return not crosses(self.segments, box)

    def leader_free(self, seg: tuple[float, float, float, float]) -> bool:
        """A leader line from a label to its point crosses no other label, nor a marker other than the ones
        on its point."""
        x, y = seg[2], seg[3]
        m = self.markers
        m = m[~((m[:, 0] <= x) & (x <= m[:, 2]) & (m[:, 1] <= y) & (y <= m[:, 3]))]
        b = np.vstack([self.labels, m])
        return not (len(b) and bool(np.any(segment_hits(np.asarray([seg]), b))))


def segment_hits(segs: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """For one segment and many boxes, or many segments and one box: which pairs intersect (Liang-Barsky)."""
    x0, y0, x1, y1 = (segs[:, k] for k in range(4))
    bx0, by0, bx1, by1 = (boxes[:, k] for k in range(4))
    dx, dy = x1 - x0, y1 - y0
    t0 = np.zeros(np.broadcast(x0, bx0).shape)
    t1 = np.ones_like(t0)
    ok = np.ones(t0.shape, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        for p, q in ((-dx, x0 - bx0), (dx, bx1 - x0), (-dy, y0 - by0), (dy, by1 - y0)):
            p = np.broadcast_to(p, t0.shape)
            q = np.broadcast_to(q, t0.shape)
            r = q / p
            ok &= ~((p == 0) & (q < 0))
            t0 = np.where(p < 0, np.maximum(t0, r), t0)
            t1 = np.where(p > 0, np.minimum(t1, r), t1)
    return ok & (t0 < t1)


def crosses(segments: np.ndarray, box: Box) -> bool:
    """Whether any segment (rows x0, y0, x1, y1) passes through the inside of ``box`` (touching allowed)."""
    if not len(segments):
        return False
    x0, y0, x1, y1 = box
    inner = np.asarray([[x0 + 0.25, y0 + 0.25, x1 - 0.25, y1 - 0.25]])
    return bool(np.any(segment_hits(segments, inner)))


def line_segments(line: Any) -> np.ndarray:
    """A Line2D's drawn path as pixel segments (rows x0, y0, x1, y1), non-finite vertices dropped."""
    with np.errstate(all="ignore"):
        xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
    xy = xy[np.isfinite(xy).all(axis=1)]
    if len(xy) < 2:
        return np.empty((0, 4))
    return np.hstack([xy[:-1], xy[1:]])


def _straight(segs: np.ndarray) -> np.ndarray:
    """A straight polyline (a slope on log-log axes) as its one segment."""
    return segs if len(segs) <= 1 else np.asarray([[*segs[0, :2], *segs[-1, 2:]]])


def _place_labels(ax: Axes, fig: Figure, f: _Frame, pts: Sequence[Point],
                  labels: list[tuple[str, str, Any, dict[str, Any]]], shown_kinds: dict[str, Any],
                  max_labels: int) -> None:
    """Place every label greedily, most important first, where it overlaps nothing and no line crosses it.

    Roofs, slopes and the ridge that find no place go to the legend; ops beyond the top TOP_OPS are dropped."""
    from matplotlib.lines import Line2D

    renderer = _renderer(fig)
    ab = ax.get_window_extent(renderer)
    frame = (ab.x0 + 2, ab.y0 + 2, ab.x1 - 2, ab.y1 - 2)
    lines = [ln for ln in ax.get_lines() if ln.get_gid() in ("roof", "achievable", "ridge-line", "connector")]
    segments = np.vstack([_straight(line_segments(ln)) if ln.get_gid() in ("roof", "achievable")
                          else line_segments(ln) for ln in lines] or [np.empty((0, 4))])
    px_per_pt = fig.dpi / 72.0
    markers: list[Box] = []
    for p in pts:
        with np.errstate(all="ignore"):
            x, y = ax.transData.transform((p.intensity, p.flops / f.scale))
        if math.isfinite(x) and math.isfinite(y):
            r = _marker_points(_size(p)) * px_per_pt + 1.5
            markers.append((x - r, y - r, x + r, y + r))
    ridge_marker = ax.transData.transform((f.ridge, f.top.flops / f.scale))
    if np.isfinite(ridge_marker).all():
        r = 6 * px_per_pt
        markers.append((ridge_marker[0] - r, ridge_marker[1] - r, ridge_marker[0] + r, ridge_marker[1] + r))
    todo: list[_Label] = []
    for role, text, what, style in labels:
        t = ax.text(0, 0, text, ha="left", va="bottom", **style,
                    bbox={"boxstyle": "square,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.7}
                    if role != "region" else None)
        w, h = _extent(t, renderer)
        if role == "region":
            lo, hi = what
            cands = _region_candidates(ax, frame, lo, hi, w, h)
            handle = None
        elif role == "ridge":
            cands = _ridge_candidates(line_segments(what), frame, w, h)
            handle = Line2D([], [], marker="o", ls=":", lw=0.8, ms=7, mfc="white", mec=ROOF_COLOR, mew=2,
                            color=ROOF_COLOR)
        else:
            segs = _straight(line_segments(what))
            cands = (_roof_candidates if role == "roof" else _slope_candidates)(segs, frame, w, h)
            handle = Line2D([], [], color=what.get_color(), ls=what.get_linestyle(), lw=what.get_linewidth())
        todo.append(_Label(t, role, cands, handle, line=what if role in ("roof", "slope") else None))
    # op labels: the top ops by time (predicted points), each name once
    seen: set[str] = set()
    ops: list[_Label] = []
    for p in pts:
        if len(ops) >= max_labels:
            break
        if p.measured or p.label in seen:
            continue
        seen.add(p.label)
        with np.errstate(all="ignore"):
            x, y = ax.transData.transform((p.intensity, p.flops / f.scale))
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        text = for_chart(p.label if len(p.label) <= 28 else p.label[:26] + "…")
        t = ax.text(0, 0, text, fontsize=7.5, zorder=9, ha="left", va="bottom", gid="op-label",
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8})
        w, h = _extent(t, renderer)
        r = _marker_points(_size(p)) * px_per_pt
        top = len(ops) < TOP_OPS
        handle = (Line2D([], [], marker="o", ls="", color=KIND_COLORS.get(p.kind, "#555555")) if top else None)
        ops.append(_Label(t, "op", _op_candidates(x, y, r, w, h, far=top), handle, anchor=(x, y),
                          radius=r))
    todo += ops
    # the legend (lower right) is in the way of labels; labels that find no place join it, so place again
    handles, names = _legend_entries(pts, shown_kinds)
    moved: list[_Label] = []
    legend = None
    for _ in range(len(todo) + 1):
        if legend is not None:
            legend.remove()
        extra_h = [lb.handle for lb in moved]
        extra_n = [lb.text.get_text() for lb in moved]
        legend = None
        space = _Space(frame)
        for m in markers:
            space.add_box(m, label=False)
        space.add_segments(segments)
        if handles or extra_h:
            style = {"fontsize": 8, "framealpha": 1.0, "title": "op kind" if shown_kinds else None,
                     "title_fontsize": 8}
            legend = ax.legend(handles + extra_h, names + extra_n, loc="lower right", **style)
            lb_box = legend.get_window_extent(renderer)
            if lb_box.y1 > frame[3] or lb_box.x0 < frame[0]:  # taller (wider) than the axes: beside them
                legend.remove()
                legend = ax.legend(handles + extra_h, names + extra_n, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                                   borderaxespad=0.0, **style)
            else:
                space.add_box((lb_box.x0 - 2, lb_box.y0 - 2, lb_box.x1 + 2, lb_box.y1 + 2))
            legend.set_zorder(10)
        failed = _greedy(space, [lb for lb in todo if lb not in moved])
        new = [lb for lb in failed if lb.handle is not None and lb not in moved]
        if not new:
            break
        moved += new
        _recolor(moved, todo)
    for lb in todo:
        if lb.box is None or lb in moved:
            lb.text.remove()
            continue
        _put(ax, lb)


def _recolor(moved: Sequence[_Label], todo: Sequence[_Label]) -> None:
    """A roof named in the legend whose line looks like another roof's (dashed black ones all look alike)
    gets a colour of its own, on the chart and in the legend."""
    def style(lb: _Label) -> tuple[str, str, str, float]:
        return lb.role, str(lb.line.get_color()), str(lb.line.get_linestyle()), float(lb.line.get_linewidth())

    lines = [lb for lb in todo if lb.line is not None]
    used = {str(lb.line.get_color()) for lb in lines}
    free = [c for c in LEGEND_ROOF_COLORS if c not in used]
    for lb in moved:
        if lb.line is None or not free or sum(style(x) == style(lb) for x in lines) < 2:
            continue
        color = free.pop(0)
        lb.line.set_color(color)
        lb.handle.set_color(color)


def _extent(t: Text, renderer: RendererBase) -> tuple[float, float]:
    """The width and height in pixels of ``t``'s box (text, without a leader line, plus its light box)."""
    from matplotlib.text import Text

    e = Text.get_window_extent(t, renderer)
    return e.width + 2 * PAD, e.height + 2 * PAD


def _greedy(space: _Space, todo: Sequence[_Label]) -> list[_Label]:
    """Each label at its first free candidate, in order; the ones that found none."""
    failed = []
    for lb in todo:
        lb.box = None
        for box in lb.candidates:
            if not space.free(box):
                continue
            if lb.anchor is not None and not _near(box, lb.anchor, lb.radius):
                seg = _leader(box, lb.anchor)
                if not space.leader_free(seg):
                    continue
                lb.box = box
                space.add_box(box)
                space.add_segments(np.asarray([seg]))
                break
            lb.box = box
            space.add_box(box)
            break
        if lb.box is None:
            failed.append(lb)
    return failed


def _near(box: Box, anchor: tuple[float, float], radius: float) -> bool:
    """The label touches its point's marker (``radius`` pixels): no leader line needed."""
    x, y = anchor
    dx = max(box[0] - x, 0.0, x - box[2])
    dy = max(box[1] - y, 0.0, y - box[3])
    return max(dx, dy) <= radius + 4.0


def _leader(box: Box, anchor: tuple[float, float]) -> tuple[float, float, float, float]:
    """The leader line from the label's box centre to its point, less the part inside the box."""
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    x, y = anchor
    # where the centre-to-point line leaves the box
    tx = (box[2] - cx) / abs(x - cx) if x != cx else math.inf
    ty = (box[3] - cy) / abs(y - cy) if y != cy else math.inf
    t = min(tx, ty, 1.0)
    return (cx + (x - cx) * t, cy + (y - cy) * t, x, y)


def _put(ax: Axes, lb: _Label) -> None:
    """Move the label's text to its placed box (data coordinates: the chart saves at any dpi), with a
    leader line to its point when it is away from it."""
    assert lb.box is not None
    inverse = ax.transData.inverted()
    x0, y0 = inverse.transform((lb.box[0] + PAD, lb.box[1] + PAD))
    lb.text.set_position((float(x0), float(y0)))
    if lb.anchor is not None and not _near(lb.box, lb.anchor, lb.radius):
        a, b = inverse.transform(np.asarray(_leader(lb.box, lb.anchor)).reshape(2, 2))
        ax.plot([a[0], b[0]], [a[1], b[1]], color="#777777", lw=0.6, zorder=8, gid="leader")


def _roof_candidates(segs: np.ndarray, frame: Box, w: float, h: float) -> list[Box]:
    """Over its horizontal roof from the right end leftwards, within the roof's length; then under it."""
    if not len(segs):
        return []
    xs, ly = min(segs[0, 0], segs[0, 2]), segs[0, 1]
    xe = min(max(segs[0, 0], segs[0, 2]), frame[2]) - 4
    step = max(w / 3, 24.0)
    out: list[Box] = []
    k = 0
    while xe - k * step - w >= max(xs, frame[0]) + 2 and k < 40:
        x1 = xe - k * step
        out.append((x1 - w, ly + GAP, x1, ly + GAP + h))
        k += 1
    return out + [(x0, ly - GAP - h, x1, ly - GAP) for x0, _, x1, _ in out]


def _slope_candidates(segs: np.ndarray, frame: Box, w: float, h: float) -> list[Box]:
    """Beside its slope: above-left or below-right of a point on it (neither side crosses a rising line)."""
    if not len(segs):
        return []
    (x0, y0, x1, y1), = segs
    out: list[Box] = []
    for t in (0.3, 0.45, 0.15, 0.6, 0.75, 0.08, 0.9, 0.22, 0.38, 0.52, 0.68, 0.82):
        x, y = x0 + (x1 - x0) * t, y0 + (y1 - y0) * t
        if not (frame[0] <= x <= frame[2] and frame[1] <= y <= frame[3]):
            continue
        out.append((x - GAP - w, y + GAP, x - GAP, y + GAP + h))
        out.append((x + GAP, y - GAP - h, x + GAP + w, y - GAP))
    return out


def _ridge_candidates(segs: np.ndarray, frame: Box, w: float, h: float) -> list[Box]:
    """Up the ridge's dotted line from the x axis, left of it, then right of it."""
    if not len(segs):
        return []
    x = segs[0, 0]
    out: list[Box] = []
    for k in range(12):
        y0 = frame[1] + 4 + k * h / 3
        out.append((x - GAP / 2 - w, y0, x - GAP / 2, y0 + h))
        out.append((x + GAP / 2, y0, x + GAP / 2 + w, y0 + h))
    return out


def _region_candidates(ax: Axes, frame: Box, lo: float, hi: float, w: float, h: float) -> list[Box]:
    """Near the top of its shaded region, centred, else shifted; never outside the region."""
    with np.errstate(all="ignore"):
        x_lo = max(float(ax.transData.transform((lo, 1.0))[0]), frame[0])
        x_hi = min(float(ax.transData.transform((hi, 1.0))[0]), frame[2])
    if not (math.isfinite(x_lo) and math.isfinite(x_hi)) or x_hi - x_lo < w + 8:
        return []
    mid = (x_lo + x_hi) / 2
    out: list[Box] = []
    for k in range(6):
        y1 = frame[3] - 8 - k * h * 0.75
        for cx in (mid, mid - w / 2, mid + w / 2, x_lo + w / 2 + 4, x_hi - w / 2 - 4):
            if x_lo + 2 <= cx - w / 2 and cx + w / 2 <= x_hi - 2:
                out.append((cx - w / 2, y1 - h, cx + w / 2, y1))
    return out


def _op_candidates(x: float, y: float, r: float, w: float, h: float, far: bool) -> list[Box]:
    """Around the point: touching its marker first (no leader line), then further out with a leader line;
    ``far`` (a top op) reaches further."""
    out: list[Box] = []
    near = r + 2
    # beside the marker: upper right, lower right, upper left, lower left, right, left, above, below
    for x0, y0 in ((x + near * 0.7, y + near * 0.7), (x + near * 0.7, y - near * 0.7 - h),
                   (x - near * 0.7 - w, y + near * 0.7), (x - near * 0.7 - w, y - near * 0.7 - h),
                   (x + near, y - h / 2), (x - near - w, y - h / 2), (x - w / 2, y + near), (x - w / 2, y - near - h)):
        out.append((x0, y0, x0 + w, y0 + h))
    dists = (r + 16, r + 30, r + 50, r + 75, r + 105, r + 140, r + 185, r + 240) if far else (r + 16, r + 30)
    angles = (45, -45, 135, -135, 90, -90, 0, 180, 20, -20, 160, -160, 65, -65, 115, -115)
    for d in dists:
        for a in angles:
            c, s = math.cos(math.radians(a)), math.sin(math.radians(a))
            ax_, ay = x + d * c, y + d * s
            x0 = ax_ if c > 0.3 else ax_ - w if c < -0.3 else ax_ - w / 2
            y0 = ay if s > 0.3 else ay - h if s < -0.3 else ay - h / 2
            out.append((x0, y0, x0 + w, y0 + h))
    return out


def chart_bytes(subject: Analysis | Device, fmt: str = "png", *, title: str | None = None, **kw: Any) -> bytes:
    """The chart as PNG/SVG/PDF bytes."""
    return figure_bytes(plot(subject, title=title, **kw), fmt)


def save_chart(subject: Analysis | Device, path: str | Path, *, title: str | None = None, **kw: Any) -> None:
    """Render to PNG/SVG/PDF (by extension), written all-or-nothing."""
    from roofline.fileio import write_bytes_atomic
    from roofline.render.paths import check_chart_path

    check_chart_path(path)
    write_bytes_atomic(path, chart_bytes(subject, Path(path).suffix.lower().lstrip("."), title=title, **kw))
