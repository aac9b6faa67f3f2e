"""The classic log-log roofline chart, generalised (matplotlib; PNG, SVG or PDF by extension).

One horizontal roof per shown compute ceiling, one slope per memory level;
the device's achievable (sustained) figures for the roofs drawn, dashed and
labelled "achievable" (what the forecast runs on, beside the bound, never in
its place), as its theoretical (spec) roofs are dashed grey and labelled
"theoretical" ("nominal-clock spec" where a measured roof beats it); the ridge point of the main roof marked; the memory-bound (left of the ridge)
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
colour of its own when its line would look like another's).  Ops whose markers
overlap share one label ("8 matmuls"); the legend never names an op, and the
caption lists the top ``TOP_OPS`` ops when one has no label of its own
(``max_labels`` labels at most are tried).  Compute roofs: the precisions the
ops use only (:func:`roofline.words.summary.drawn_ceilings`).

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
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from roofline.core.text import for_chart
from roofline.core.units import format_bandwidth, format_flops, scale_for
from roofline.hardware.device import ComputeCeiling, Device, MemoryCeiling
from roofline.render.frame import Frame, Point
from roofline.render.labels import place_labels
from roofline.render.style import (
    ACHIEVABLE_COLOR,
    ACHIEVABLE_DASH,
    ACHIEVABLE_LABEL_COLOR,
    COMPUTE_COLOR,
    DPI,
    FIGSIZE,
    JUDGED_MARKERS,
    KIND_COLORS,
    MEMORY_COLOR,
    ROOF_COLOR,
    SLOPE_COLORS,
    SPEC_COLOR,
    point_size,
)
from roofline.words.summary import Summary, chart_heading, drawn_ceilings, summarize

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from roofline.engine.analysis import Analysis

MAX_POINTS = 5000  # beyond this only the top ops by time are drawn
#: the widest axis range drawn (log axes): matplotlib cannot place ticks and labels across the whole float range
AXIS_MIN, AXIS_MAX = 1e-200, 1e200


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


def achievable_roofs(device: Device, ceilings: Sequence[ComputeCeiling], levels: Sequence[MemoryCeiling]
                     ) -> tuple[list[tuple[ComputeCeiling, ComputeCeiling]], list[tuple[MemoryCeiling, MemoryCeiling]]]:
    """The device's sustained figures for the given roofs only: (peak roof, achievable roof) pairs, compute
    then memory (roofs without a figure of their own have none: the forecast runs on their peak)."""
    compute = [(c, x) for c in ceilings if (x := device.achievable_ceiling(c)) is not None]
    memory = [(m, y) for m in levels if (y := device.achievable_level(m)) is not None]
    return compute, memory


def finite(values: Sequence[float]) -> list[float]:
    return [float(v) for v in values if v > 0 and math.isfinite(v)]


def decade(v: float, up: bool, margin: float) -> float:
    """``v`` rounded out to a power of ten, ``margin`` decades beyond, within AXIS_MIN..AXIS_MAX."""
    e = math.log10(v) + (margin if up else -margin)
    e = math.ceil(e) if up else math.floor(e)
    return 10.0 ** max(min(e, math.log10(AXIS_MAX)), math.log10(AXIS_MIN))


def span(lo: float, hi: float, decades: int = 2) -> tuple[float, float]:
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
           ceilings: Sequence[ComputeCeiling] | None, levels: Sequence[str] | None) -> Frame:
    if ceilings is None:
        if analysis is not None:  # the ops' roofs and the fastest in their precisions (summary.drawn_ceilings)
            ceilings = drawn_ceilings(analysis)
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
    xs_all = [p.intensity for p in pts] + [c.ridge(m) for c in ceilings for m in mems]
    xs = finite(xs_all) or [1.0]
    x_lo, x_hi = decade(min(xs), False, 1), decade(max(xs), True, 1)
    drawn = {c.precision for c in ceilings}
    spec = [r for r in device.bench.spec if r.precision in drawn] if device.bench is not None else []
    ys_all = [p.flops for p in pts if p.flops > 0] + [c.flops for c in ceilings] + [r.flops for r in spec] + [
        main.bandwidth * x_lo]
    ys = finite(ys_all) or [1.0]
    y_lo = decade(min(ys), False, 0.3)
    y_hi = decade(max(ys), True, 0.5)  # room above the top roof for the region labels
    x_lo, x_hi = span(x_lo, x_hi)
    y_lo, y_hi = span(y_lo, y_hi)
    clipped = (len(xs) < len(xs_all) or len(ys) < len(ys_all) or not (AXIS_MIN < x_lo and x_hi < AXIS_MAX)
               or not (AXIS_MIN < y_lo and y_hi < AXIS_MAX))
    scale, unit = scale_for(max(c.flops for c in ceilings), "FLOP/s")
    # the summary holds the ridge it marks (its dominant roof over main memory): read, not computed again
    ridge_at = (summary.ridge if summary is not None and top == summary.dominant and main == device.main_memory
                else top.ridge(main))
    ach, ach_mems = achievable_roofs(device, ceilings, mems)
    return Frame(ceilings, spec, mems, main, top, min(max(ridge_at, x_lo), x_hi), x_lo, x_hi, y_lo, y_hi, scale,
                 unit, clipped, ach, ach_mems, device.achievable_bandwidth(main),
                 max(device.achievable_flops(c) for c in ceilings), ridge_at)




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
    the fastest in the precisions they use, :func:`roofline.words.summary.drawn_ceilings`;
    every ceiling for a bare device).  ``levels``: which
    memory levels (default: all the device has).  ``summary``: the analysis's facts
    (:func:`roofline.words.summary.summarize`; computed when not given): the ridge marked is
    the dominant ceiling's, and the title names the binding roof.  Labels are placed in
    pixels for ``figsize``: resizing the returned Figure afterwards can make them collide.

    The Figure is built without pyplot (no backend is switched); in a notebook it shows itself.
    """
    from roofline.core import arguments as arg

    if not isinstance(subject, Device) and not (hasattr(subject, "workload") and hasattr(subject, "device")):
        raise arg.type_error("plot", "subject", "an Analysis or a Device", subject)  # (renderers import no Analysis)
    arg.positive_int(max_labels, "plot", "max_labels", minimum=0)
    if title is not None:
        arg.text(title, "plot", "title", empty=True)
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
    _set_axes(ax, f, device, analysis, title, summary)
    if own:  # the layout is final before any label is placed: placement works in pixels
        fig.tight_layout()
    labels = _draw_roofs(ax, f)
    shown_kinds = _draw_points(ax, pts, f.scale)
    place_labels(ax, fig, f, pts, labels, shown_kinds, max_labels)
    return fig


def _set_axes(ax: Axes, f: Frame, device: Device, analysis: Analysis | None, title: str | None,
              summary: Summary | None) -> None:
    """Log axes over the frame's ranges, SI-prefixed FLOP/s ticks, the notes under the x axis title (clipped
    ranges, ops with no FLOPs), the grid, and the heading (naming the binding roof when there are facts)."""
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
        heading += "".join(f"\n{for_chart(line)}" for line in chart_heading(summary))  # the headline's rule
    ax.set_title(heading, fontsize=12 if summary is None else 11, pad=10)  # clear of the top y tick label


#: a label to place: (role, text, the Line2D it names (a region: its x range), text style)
LabelSpec = tuple[str, str, Any, dict[str, Any]]


def _draw_roofs(ax: Axes, f: Frame) -> list[LabelSpec]:
    """Regions, compute roofs (measured solid/dashed, theoretical grey, achievable teal), memory slopes (and
    achievable ones) and the ridge.

    Returns the labels to place, most important first: (role, text, the Line2D it names, text style)."""
    # regions: left of the ridge memory-bound, right compute-bound
    ax.axvspan(f.x_lo, f.ridge, color=MEMORY_COLOR, zorder=0, lw=0)
    ax.axvspan(f.ridge, f.x_hi, color=COMPUTE_COLOR, zorder=0, lw=0)
    region = {"fontsize": 11, "alpha": 0.8, "style": "italic", "zorder": 6}
    labels: list[LabelSpec] = [("region", "memory-bound", (f.x_lo, f.ridge), {**region, "color": "#1f4e79"}),
                               ("region", "compute-bound", (f.ridge, f.x_hi), {**region, "color": "#a0522d"})]
    labels += _draw_compute_roofs(ax, f)
    labels += _draw_achievable(ax, f)
    labels += _draw_slopes(ax, f)
    # the ridge point and its dotted line; its label goes beside the line
    ax.plot([f.ridge], [f.top.flops / f.scale], "o", ms=8, mfc="white", mec=ROOF_COLOR, mew=2, zorder=7, gid="ridge")
    line = ax.axvline(f.ridge, color=ROOF_COLOR, lw=0.8, ls=":", zorder=2, gid="ridge-line")
    labels.append(("ridge", f"ridge {f.ridge_at:.3g} FLOP/B", line,
                   {"fontsize": 9, "color": ROOF_COLOR, "rotation": 90}))
    order = {"roof": 0, "ridge": 1, "slope": 2, "region": 3}  # most important first: placed first
    return sorted(labels, key=lambda lb: order[lb[0]])


def _draw_compute_roofs(ax: Axes, f: Frame) -> list[LabelSpec]:
    """The compute roofs, horizontal from where they meet the main slope, the marked (dominant) one solid and
    labelled first, then the theoretical (spec) roofs dashed grey; roofs at the same height share one label
    ("fp8 matrix, int8 matrix 1.979 PFLOP/s")."""
    labels: list[LabelSpec] = []
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
    kinds: dict[float, str] = {}  # 'theoretical', or 'nominal-clock spec' where a measured roof beats it
    for r in sorted(f.spec, key=lambda r: -r.flops):
        measured = max((c.flops for c in f.ceilings if (c.unit, c.precision) == (r.unit, r.precision)), default=None)
        if kinds.get(r.flops) != "nominal-clock spec":
            kinds[r.flops] = r.label(measured)
        (line,) = ax.plot([_clip(r.flops / f.main.bandwidth, f), f.x_hi], [r.flops / f.scale] * 2, ls=(0, (6, 3)),
                          color=SPEC_COLOR, lw=1.1, zorder=2, gid="roof")
        if r.flops not in spec_groups:
            spec_groups[r.flops] = []
            labels.append(("roof", "", line, {"fontsize": 8.5, "color": "#6a6a6a"}))
        spec_groups[r.flops].append(f"{for_chart(r.precision)} {for_chart(r.unit)}")
    texts = [f"{', '.join(names)} {format_flops(flops)}" for (_, flops), names in groups.items()]
    texts += [f"{', '.join(names)} {format_flops(flops)} ({kinds[flops]})" for flops, names in spec_groups.items()]
    return [(role, text, line, style) for (role, _, line, style), text in zip(labels, texts, strict=True)]


def _draw_slopes(ax: Axes, f: Frame) -> list[LabelSpec]:
    """The memory slopes up to the fastest shown roof (the main one labelled first, then fastest first), then
    the achievable slopes up to where they meet the fastest drawn roof's achievable figure."""
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
    labels: list[LabelSpec] = [s for _, s in sorted(slopes, key=lambda s: s[0])]
    xe = _clip(f.achievable_peak / f.achievable_bandwidth, f) if f.achievable_mems else f.x_hi
    for _, m in sorted(f.achievable_mems, key=lambda pair: -pair[1].bandwidth):
        xx = np.append(x[x <= xe], xe)
        with np.errstate(over="ignore", under="ignore"):
            yy = xx * m.bandwidth / f.scale
        (line,) = ax.plot(xx, yy, ls=ACHIEVABLE_DASH, color=ACHIEVABLE_COLOR, lw=1.1, zorder=2, gid="achievable")
        labels.append(("slope", f"{for_chart(m.level)} achievable {format_bandwidth(m.bandwidth)}", line,
                       {"fontsize": 8.5, "color": ACHIEVABLE_LABEL_COLOR}))
    return labels


def _draw_achievable(ax: Axes, f: Frame) -> list[LabelSpec]:
    """The achievable compute roofs of the roofs drawn (dashed teal, from where they meet the achievable main
    slope); roofs at one height share a label ('bf16 matrix achievable 794.5 TFLOP/s')."""
    out: list[LabelSpec] = []
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


def _clip(x: float, f: Frame) -> float:
    """``x`` within the drawn x range (an inf or underflowed ridge is drawn at the axis edge)."""
    return min(max(x, f.x_lo), f.x_hi) if x == x else f.x_hi



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
        group = sorted(group, key=point_size, reverse=True)
        x = [p.intensity for p in group]
        y = [p.flops / scale for p in group]
        sizes = [point_size(p) for p in group]
        color = KIND_COLORS.get(kind, "#555555")
        if measured:
            ax.scatter(x, y, s=sizes, facecolors="white", edgecolors=color, linewidths=1.8, zorder=5, marker=marker)
        else:
            h = ax.scatter(x, y, s=sizes, color=color, edgecolors="white", linewidths=0.6, zorder=5, alpha=0.9)
            shown_kinds.setdefault(kind, h)
    return shown_kinds



def chart_bytes(subject: Analysis | Device, fmt: str = "png", *, title: str | None = None, **kw: Any) -> bytes:
    """The chart as PNG/SVG/PDF bytes."""
    return figure_bytes(plot(subject, title=title, **kw), fmt)


def save_chart(subject: Analysis | Device, path: str | Path, *, title: str | None = None, **kw: Any) -> None:
    """Render to PNG/SVG/PDF (by extension), written all-or-nothing."""
    from roofline.core.fileio import write_bytes_atomic
    from roofline.render.paths import check_chart_path

    check_chart_path(path)
    write_bytes_atomic(path, chart_bytes(subject, Path(path).suffix.lower().lstrip("."), title=title, **kw))
