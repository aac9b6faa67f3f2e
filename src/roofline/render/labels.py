"""Labels of the roofline chart placed in display pixels, greedily, most important first.

Roofs (roofs at one height share a label), the ridge, slopes, the region names, then ops by time.  Each
label takes the first of its candidate positions (beside its line, or around its point) whose box stays
inside the axes, overlaps no placed label, marker or the legend, and is crossed by no roof, slope, ridge,
measured-to-predicted or leader line; a leader line crosses no label.  A roof, slope or ridge with no free
position is named in the legend instead (in a colour of its own when its line would look like another's).

Ops whose markers overlap form a pile labelled once ("8 matmuls", "8 matmuls + 2 attention ops"), with a
leader line; an op label with no room is dropped.  The legend names op kinds, measured/predicted and roofs,
never an op: when one of the top ``TOP_OPS`` ops has no label of its own, the caption (under the x axis)
lists them.  The legend goes where it covers no marker and no line, else beside the axes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from roofline.core.text import for_chart
from roofline.core.units import format_share
from roofline.render.style import (
    GAP,
    JUDGED_MARKERS,
    LEGEND_ROOF_COLORS,
    PAD,
    ROOF_COLOR,
    TOP_OPS,
    marker_points,
    point_size,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    from roofline.render.frame import Frame, Point


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


def place_labels(ax: Axes, fig: Figure, f: Frame, pts: Sequence[Point],
                 labels: list[tuple[str, str, Any, dict[str, Any]]], shown_kinds: dict[str, Any],
                 max_labels: int) -> None:
    """Place every label greedily, most important first, where it overlaps nothing and no line crosses it.

    Roofs, slopes and the ridge that find no place go to the legend; ops beyond the top TOP_OPS are dropped."""
    renderer = _renderer(fig)
    ab = ax.get_window_extent(renderer)
    frame = (ab.x0 + 2, ab.y0 + 2, ab.x1 - 2, ab.y1 - 2)
    segments, markers = _obstacles(ax, fig, f, pts)
    todo = _line_labels(ax, labels, renderer, frame) + _op_labels(ax, fig, f, pts, renderer, max_labels)
    moved = _place_beside_legend(ax, frame, markers, segments, todo, _legend_entries(pts, shown_kinds),
                                 bool(shown_kinds), renderer)
    for lb in todo:
        if lb.box is None or lb in moved:
            lb.text.remove()
            continue
        _put(ax, lb)
    shown = {lb.text.get_text() for lb in todo if lb.role == "op" and lb.box is not None}
    caption = top_ops_caption(pts, shown, int(fig.get_figwidth() * 12))
    if caption:  # under the axis title and its notes, where no line or label can cross it
        ax.set_xlabel(f"{ax.get_xlabel()}\n{caption}")


def _obstacles(ax: Axes, fig: Figure, f: Frame, pts: Sequence[Point]) -> tuple[np.ndarray, list[Box]]:
    """What labels must keep clear of, in pixels: the lines no label may cross (roofs, achievable roofs,
    the ridge line, measured-to-predicted lines) and the markers (every point, the ridge point)."""
    lines = [ln for ln in ax.get_lines() if ln.get_gid() in ("roof", "achievable", "ridge-line", "connector")]
    segments = np.vstack([_straight(line_segments(ln)) if ln.get_gid() in ("roof", "achievable")
                          else line_segments(ln) for ln in lines] or [np.empty((0, 4))])
    px_per_pt = fig.dpi / 72.0
    markers: list[Box] = []
    for p in pts:
        with np.errstate(all="ignore"):
            x, y = ax.transData.transform((p.intensity, p.flops / f.scale))
        if math.isfinite(x) and math.isfinite(y):
            r = marker_points(point_size(p)) * px_per_pt + 1.5
            markers.append((x - r, y - r, x + r, y + r))
    ridge_marker = ax.transData.transform((f.ridge, f.top.flops / f.scale))
    if np.isfinite(ridge_marker).all():
        r = 6 * px_per_pt
        markers.append((ridge_marker[0] - r, ridge_marker[1] - r, ridge_marker[0] + r, ridge_marker[1] + r))
    return segments, markers


def _line_labels(ax: Axes, labels: list[tuple[str, str, Any, dict[str, Any]]], renderer: RendererBase,
                 frame: Box) -> list[_Label]:
    """The labels of roofs, slopes, the ridge and the regions, each with its candidate boxes and the legend
    handle that stands for it when it finds no place (regions have none: they are dropped)."""
    from matplotlib.lines import Line2D

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
    return todo


#: a pile's label: "6 matmuls" (kinds not in here: "3 <kind> ops"; two kinds joined by " + "; more: "7 ops")
PLURALS = {"matmul": "matmuls", "conv": "convs", "norm": "norms", "softmax": "softmaxes", "reduction": "reductions",
           "embedding": "embeddings", "collective": "collectives"}


@dataclass
class Pile:
    """Predicted points whose markers overlap (in pixels), the longest first: labelled as one."""

    x: float
    y: float
    radius: float
    points: list[Point]

    def text(self) -> str:
        """The op's name for one point; '6 matmuls' for a pile, '8 matmuls + 2 attention ops' for two kinds,
        '7 ops' for more."""
        if len(self.points) == 1:
            label = self.points[0].label
            return for_chart(label if len(label) <= 28 else label[:26] + "…")
        counts: dict[str, int] = {}
        for p in self.points:
            counts[p.kind] = counts.get(p.kind, 0) + 1
        if len(counts) > 2:
            return f"{len(self.points)} ops"
        return " + ".join(f"{n} {_plural(kind, n)}" for kind, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def _plural(kind: str, n: int) -> str:
    """'matmuls', 'attention ops' (one: 'matmul', 'attention op')."""
    if n == 1:
        return for_chart(kind) if kind in PLURALS else f"{for_chart(kind)} op"
    return PLURALS.get(kind, f"{for_chart(kind)} ops")


def piles(ax: Axes, f: Frame, pts: Sequence[Point], px_per_pt: float) -> list[Pile]:
    """The predicted points (each name once, longest first) grouped where their markers overlap the marker of
    a longer op already placed: five matmuls on one decode point are one pile, labelled once."""
    seen: set[str] = set()
    out: list[Pile] = []
    for p in pts:
        if p.measured or p.label in seen:
            continue
        seen.add(p.label)
        with np.errstate(all="ignore"):
            x, y = ax.transData.transform((p.intensity, p.flops / f.scale))
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        r = marker_points(point_size(p)) * px_per_pt
        home = next((g for g in out if math.hypot(g.x - x, g.y - y) < g.radius + r), None)
        if home is None:
            out.append(Pile(float(x), float(y), r, [p]))
        else:
            home.points.append(p)
    return out


def _op_labels(ax: Axes, fig: Figure, f: Frame, pts: Sequence[Point], renderer: RendererBase,
               max_labels: int) -> list[_Label]:
    """The labels of the top ops by time (predicted points), one per pile of overlapping markers ('6 matmuls'),
    at most ``max_labels``; the top ``TOP_OPS`` reach further from their point.  An op label that finds no
    place is dropped (never put in the legend: the legend names kinds and roofs; the caption lists the top
    ops)."""
    px_per_pt = fig.dpi / 72.0
    ops: list[_Label] = []
    for g in piles(ax, f, pts, px_per_pt)[:max_labels]:
        t = ax.text(0, 0, g.text(), fontsize=7.5, zorder=9, ha="left", va="bottom", gid="op-label",
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8})
        w, h = _extent(t, renderer)
        far = len(ops) < TOP_OPS or len(g.points) > 1
        ops.append(_Label(t, "op", _op_candidates(g.x, g.y, g.radius, w, h, far=far), None, anchor=(g.x, g.y),
                          radius=g.radius))
    return ops


def top_ops_caption(pts: Sequence[Point], shown: set[str], chars: int) -> str:
    """'top ops by time: a (24%), b (24%), ...' when one of the top ``TOP_OPS`` ops is not named by a label of
    its own on the chart (it is in a pile, or found no place); '' when every one is.  Wrapped at ``chars``."""
    top: list[Point] = []
    for p in pts:
        if not p.measured and p.label not in {q.label for q in top}:
            top.append(p)
        if len(top) == TOP_OPS:
            break
    if all(for_chart(p.label if len(p.label) <= 28 else p.label[:26] + "…") in shown for p in top):
        return ""
    items = [f"{for_chart(p.label)} ({format_share(p.weight)})" for p in top]
    lines, line = [], "top ops by time:"
    for item in items:
        if len(line) + len(item) + 2 > chars and line != "top ops by time:":
            lines.append(line + ",")
            line = "  " + item
        else:
            line += ("," if not line.endswith(":") else "") + " " + item
    return "\n".join([*lines, line])


def _place_beside_legend(ax: Axes, frame: Box, markers: list[Box], segments: np.ndarray, todo: list[_Label],
                         legend_entries: tuple[list[Any], list[str]], by_kind: bool,
                         renderer: RendererBase) -> list[_Label]:
    """Place ``todo`` around the legend (where :func:`_legend` puts it: covering nothing, else beside the axes).
    Labels that find no place join the legend, which then changes size: place again until none joins.
    Returns the labels moved to the legend."""
    handles, names = legend_entries
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
            legend = _legend(ax, space, handles + extra_h, names + extra_n, len(handles) if by_kind else 0, renderer)
        failed = _greedy(space, [lb for lb in todo if lb not in moved])
        new = [lb for lb in failed if lb.handle is not None and lb not in moved]
        if not new:
            break
        moved += new
        _recolor(moved, todo)
    return moved


#: where the legend may go inside the axes, tried in this order; beside the axes when it covers something in all
LEGEND_PLACES: tuple[Any, ...] = ("lower right", "upper left", "lower left", "center right", "upper right")


def _legend(ax: Axes, space: _Space, handles: list[Any], names: list[str], kinds: int,
            renderer: RendererBase) -> Any:
    """The legend in the first of :data:`LEGEND_PLACES` where it covers no marker and no line (roof, slope,
    ridge, connector) and fits the axes, its box then kept clear of labels; else beside the axes (upper
    right, outside), where it covers nothing."""
    # titled by what it lists: the first ``kinds`` entries are op kinds (and measured/predicted markers)
    title = ("op kind" if len(handles) == kinds else "op kind, roofs") if kinds else None
    style: dict[str, Any] = {"fontsize": 8, "framealpha": 1.0, "title": title, "title_fontsize": 8}
    for loc in LEGEND_PLACES:
        legend = ax.legend(handles, names, loc=loc, **style)
        b = legend.get_window_extent(renderer)
        box = (b.x0 - 2, b.y0 - 2, b.x1 + 2, b.y1 + 2)
        if space.free(box):
            space.add_box(box)
            legend.set_zorder(10)
            return legend
        legend.remove()
    legend = ax.legend(handles, names, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **style)
    legend.set_zorder(10)
    return legend


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
