"""Several devices' roofs and points on one log-log chart (matplotlib), for ``roofline compare``.

Each device (or device + precision) gets one colour: its main roof (the
compute ceiling carrying most of the time, and main memory) and its op points.

>>> from roofline import Op, Workload, analyze, get_device
>>> from roofline.render.compare import plot_compare
>>> w = Workload.from_ops([Op("gemm", kind="matmul", flops=2e12, bytes_read=1e9, precision="bf16", unit="matrix")])
>>> fig = plot_compare([analyze(w, get_device("h100")), analyze(w, get_device("l4"))])
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
from roofline.words.summary import dominant_ceiling

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from roofline.engine.analysis import Analysis

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*")


def plot_compare(analyses: Sequence[Analysis], *, title: str = "devices compared",
                 labels: Sequence[str] | None = None, max_points: int = 400) -> Figure:
    """One roof and one point cloud per analysis, on shared axes."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    from roofline.render.chart import AXIS_MAX, AXIS_MIN, decade, finite, new_figure, scaled_tick, span

    # names from files: no mathtext ('$' escaped), control characters visible, long ones shortened
    labels = [for_chart(x) for x in (labels if labels is not None else [a.device.name for a in analyses])]
    pts = []
    for a in analyses:
        order = [i for i in a.order()[:max_points] if a.workload.columns["flops"][i] > 0
                 and 0 < a.intensity[i] < math.inf and 0 < a.attainable_flops[i] < math.inf]
        pts.append((np.asarray([a.intensity[i] for i in order]), np.asarray([a.attainable_flops[i] for i in order]),
                    np.asarray([a.share[i] for i in order])))
    roofs = [(dominant_ceiling(a), a.device.main_memory) for a in analyses]
    # axis ranges clipped to what matplotlib draws (numbers at the float extremes), with a note when clipped
    xs_all = [*np.concatenate([p[0] for p in pts]).tolist(), *(c.flops / m.bandwidth for c, m in roofs)]
    xs = finite(xs_all) or [1.0]
    x_lo, x_hi = span(decade(max(min(xs), 1e-6), False, 1), decade(max(xs), True, 1))
    peak = max(c.flops for c, _ in roofs)
    ys_all = [*np.concatenate([p[1] for p in pts]).tolist(), *(m.bandwidth * x_lo for _, m in roofs), peak]
    ys = finite(ys_all) or [1.0]
    y_lo, y_top = span(decade(max(min(ys), 1.0), False, 0.3), min(peak * 3, AXIS_MAX))
    clipped = (len(xs) < len(xs_all) or len(ys) < len(ys_all) or not (AXIS_MIN < x_lo and x_hi < AXIS_MAX)
               or not y_top < AXIS_MAX)
    scale, unit = scale_for(peak, "FLOP/s")
    fig = new_figure((10, 6.5))
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    for k, ((c, m), (x, y, share)) in enumerate(zip(roofs, pts, strict=True)):
        color = COLORS[k % len(COLORS)]
        ridge = min(max(c.ridge(m), x_lo), x_hi)
        ax.plot([x_lo, ridge, x_hi], [x_lo * m.bandwidth / scale, c.flops / scale, c.flops / scale], color=color,
                lw=2, label=f"{labels[k]}: {for_chart(c.label)} {format_flops(c.flops)}, {for_chart(m.level)} "
                            f"{format_bandwidth(m.bandwidth)}")
        if len(x):
            ax.scatter(x, y / scale, s=20 + 200 * np.sqrt(np.maximum(share, 0)), color=color,
                       marker=MARKERS[k % len(MARKERS)], alpha=0.6, edgecolors="white", linewidths=0.5, zorder=5)
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo / scale, y_top / scale)
    ax.yaxis.set_major_formatter(FuncFormatter(partial(scaled_tick, scale=scale)))  # one style: '100 TFLOP/s'
    ax.yaxis.set_minor_formatter(NullFormatter())
    if clipped:
        ax.text(0.01, 0.01, f"axis ranges clipped to {AXIS_MIN:g} .. {AXIS_MAX:g}: some roofs or points lie outside",
                transform=ax.transAxes, fontsize=7.5, color="#a00000", va="bottom")
    ax.set_xlabel("arithmetic intensity [FLOP/byte]")
    ax.set_ylabel("performance")  # the ticks carry the unit
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(for_chart(title), fontsize=12)
    fig.tight_layout()
    return fig


def compare_chart_bytes(analyses: Sequence[Analysis], fmt: str = "png", **kw: Any) -> bytes:
    """The comparison chart as PNG/SVG/PDF bytes."""
    from roofline.render.chart import figure_bytes

    return figure_bytes(plot_compare(analyses, **kw), fmt)


def save_compare_chart(analyses: Sequence[Analysis], path: str | Path, **kw: Any) -> None:
    """PNG/SVG/PDF by extension, written all-or-nothing."""
    from roofline.core.fileio import write_bytes_atomic
    from roofline.render.paths import check_chart_path

    check_chart_path(path)
    write_bytes_atomic(path, compare_chart_bytes(analyses, Path(path).suffix.lower().lstrip("."), **kw))
