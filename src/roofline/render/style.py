"""The roofline chart's look, shared by the drawing (:mod:`roofline.render.chart`) and the label placement
(:mod:`roofline.render.labels`): colours, line dashes, markers, the figure's size, label gaps, marker sizes."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from roofline.render.frame import Point

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

FIGSIZE = (10.0, 6.5)  # inches
DPI = 110
GAP = 3.0  # pixels between a label and the line it names
PAD = 2.5  # pixels a label's light box reaches beyond its text (a placed label keeps this clear)
TOP_OPS = 5  # the ops by time always labelled (on the chart, else in the legend)


def marker_points(size: float) -> float:
    """The marker's radius in points for a scatter size ``size`` (points squared)."""
    return math.sqrt(size) / 2


def point_size(p: Point) -> float:
    """A point's scatter size (points squared): 30, growing with the square root of its share of the time."""
    return 30 + 270 * math.sqrt(max(p.weight, 0.0))
