"""The planner's chart: where each ranked layout's step time goes (matplotlib; reads a Plan, computes nothing)."""

from __future__ import annotations

from typing import Any

from roofline.render.chart import figure_bytes
from roofline.text import for_chart
from roofline.units import format_count, format_seconds

#: colours of the parts: the ops, the bubble, then each collective, the optimizer
COLORS = {"ops": "#1f4e79", "bubble": "#bdbdbd", "optimizer": "#7f7f7f"}
COMM_COLORS = ("#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")


def plan_figure(estimates: list[Any], title: str) -> Any:
    """Horizontal stacked bars, one per layout (best on top): each part of its step (or per-token) time."""
    from matplotlib.figure import Figure

    labels = [for_chart(e.describe()) for e in estimates]
    names = list(dict.fromkeys(k for e in estimates for k in e.parts()))
    fig = Figure(figsize=(12, 1.6 + 0.45 * len(estimates)), dpi=110)
    ax = fig.add_subplot(1, 1, 1)
    comm = iter(COMM_COLORS * 4)
    colors = {n: COLORS.get(n) or next(comm) for n in names}
    ys = list(range(len(estimates)))[::-1]
    left = [0.0] * len(estimates)
    for n in names:
        widths = [e.parts().get(n, 0.0) for e in estimates]
        label = n if n in COLORS else f"{n} (exposed)"
        ax.barh(ys, widths, left=left, color=colors[n], label=for_chart(label), height=0.6)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    for y, e, total in zip(ys, estimates, left, strict=True):
        ax.text(total, y, f"  {format_seconds(total)}, {format_count(e.tokens_per_second)} tok/s", va="center",
                fontsize=8)
    ax.set_yticks(ys, labels, fontsize=8)
    ax.set_xlabel("time [s] per output token" if hasattr(estimates[0], "ttft")
                  else "forecast [s] per step (what the layouts are ranked by; exposed communication by the overlap rules)")
    ax.set_xlim(0, max(left) * 1.35)
    ax.set_title(for_chart(title), fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, framealpha=0.9)
    fig.tight_layout()
    return fig


def plan_bytes(estimates: list[Any], title: str, path: str) -> bytes:
    """The chart as the bytes of ``path``'s format (.png, .svg, .pdf)."""
    return figure_bytes(plan_figure(estimates, title), path.rsplit(".", 1)[-1].lower())
