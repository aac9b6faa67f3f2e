"""The cross-rank view as one image (matplotlib; ``--ranks out.png``, ``.svg`` or ``.pdf``): the rank x step
heat map of step time, the per-rank stacked bar (compute / exposed comm / memcpy / idle), and the straggler's
ops against the median rank's (achieved FLOP/s against FLOPs per byte, log-log).

It only reads the view (:class:`roofline.frontends.trace.crossrank.MultiRankTrace`); the HTML page
(:mod:`roofline.render.ranks`) draws the same three figures with plotly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roofline.core.text import visible
from roofline.render.chart import figure_bytes, flops_tick, new_figure

if TYPE_CHECKING:
    from roofline.frontends.trace.crossrank import MultiRankTrace

MS = 1e3
#: stacked parts, bottom up: (label, Breakdown field, colour)
BARS = (("compute", "compute", "#4c72b0"), ("exposed comm", "comm_exposed", "#dd8452"),
        ("memcpy", "memcpy", "#55a868"), ("idle", "idle", "#c7c7c7"))
MAX_TICKS = 32  # rank / step tick labels shown at most (every k-th beyond)
MAX_CELL_LABELS = 160  # heat-map cells labelled with their value at most (beyond, the colour bar alone)


def _ticks(ax_set: Any, labels: list[str]) -> None:
    step = max(1, -(-len(labels) // MAX_TICKS))
    ax_set(range(0, len(labels), step), labels[::step])


def render_image(view: MultiRankTrace, fmt: str = "png") -> bytes:
    """The three figures side by side (the third only when a straggler is named)."""
    panels = 3 if view.stragglers else 2
    fig = new_figure(figsize=(6.5 * panels, 5.0), dpi=110)
    fig.set_layout_engine("constrained")  # titles, outside legend and colour bar kept apart
    axes = fig.subplots(1, panels)
    ranks = [f"rank {t.key}" for t in view.totals]
    heat, bar = axes[0], axes[1]
    img = heat.imshow([[v * MS for v in row] for row in view.step_seconds], aspect="auto", cmap="viridis",
                      interpolation="nearest")
    fig.colorbar(img, ax=heat, label="step time [ms]")
    rows = view.step_seconds
    if len(rows) * (len(rows[0]) if rows else 0) <= MAX_CELL_LABELS:  # each cell's value, where there is room
        lo, hi = min(min(r) for r in rows), max(max(r) for r in rows)
        for i, row in enumerate(rows):
            for j, v in enumerate(row):
                dark = hi > lo and (v - lo) / (hi - lo) < 0.5 or hi == lo  # viridis: dark below its middle
                heat.text(j, i, f"{v * MS:.4g}", ha="center", va="center", fontsize="x-small",
                          color="white" if dark else "black")
    _ticks(heat.set_yticks, ranks)
    _ticks(heat.set_xticks, [str(n) for n in view.steps])
    heat.set_xlabel("ProfilerStep")
    heat.set_title("step time per rank and step")
    bottom = [0.0] * len(view.totals)
    x = list(range(len(view.totals)))
    for label, field, colour in BARS:
        h = [getattr(t, field) * MS for t in view.totals]
        bar.bar(x, h, bottom=bottom, label=label, color=colour, width=0.8)
        bottom = [b + v for b, v in zip(bottom, h, strict=True)]
    _ticks(bar.set_xticks, ranks)
    bar.tick_params(axis="x", labelrotation=90 if len(ranks) > 8 else 0)
    bar.set_ylabel("ms, summed over the common steps")
    bar.set_title("per rank: what filled its steps")
    bar.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    if view.stragglers:
        _straggler(axes[2], view)
    fig.suptitle(visible(view.headline()), fontsize="medium")
    return figure_bytes(fig, fmt)


def _straggler(ax: Any, view: MultiRankTrace) -> None:
    s = view.stragglers[0]
    for pts, label, marker in ((s.median_points, f"rank {s.median_rank} (median)", "o"),
                               (s.points, f"rank {s.rank} (straggler: {s.cause})", "x")):
        ax.scatter([p.intensity for p in pts], [p.achieved_flops for p in pts], label=label, marker=marker,
                   s=36, alpha=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("FLOPs per byte")
    ax.set_ylabel("achieved FLOP/s")
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, pos: flops_tick(v)))
    ax.margins(0.15)
    ax.set_title(f"ops of rank {s.rank} against the median rank {s.median_rank}")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    top = sorted(s.slow_ops, key=lambda o: -(o.seconds - o.median_seconds) * o.calls)[:3]
    for o in top:  # the slow ops, named beside the straggler's point
        if o.flops > 0 and o.bytes > 0 and o.seconds > 0:
            ax.annotate(visible(f"{o.name} {o.ratio:.2f}x")[:40], (o.flops / o.bytes, o.flops / o.seconds),
                        textcoords="offset points", xytext=(-8, -14), ha="right", fontsize="small")
