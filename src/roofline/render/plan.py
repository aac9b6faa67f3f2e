"""The planner's drawing: the ranked table and the lines around it (:func:`plan_text`, reading a PlanResult and
its PlanWords), and the chart of where each ranked layout's step time goes (matplotlib).

Two panels sharing the layouts (best on top): the whole time, stacked by part; and, on a scale of its own,
each part other than the ops as a share of that time, so that communication a few percent of the step is
a bar one can read (labelled with its percentage), not a sliver at the end of the first panel.  The legend
lists only the parts that take time in some layout drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roofline.core.text import display, for_chart
from roofline.core.units import format_count, format_gib, format_seconds

if TYPE_CHECKING:
    from roofline.planner.result import PlanResult, PlanRow
    from roofline.words.plan import PlanWords

#: colours of the parts: the ops, the bubble, then each collective, the optimizer
COLORS = {"ops": "#1f4e79", "bubble": "#bdbdbd", "optimizer": "#7f7f7f"}
COMM_COLORS = ("#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")


def drawn_parts(estimates: list[Any]) -> list[str]:
    """The parts to draw and list in the legend, in the order the estimates name them: those that take time
    (> 0 s) in at least one layout."""
    names = dict.fromkeys(k for e in estimates for k in e.parts())
    return [n for n in names if any(e.parts().get(n, 0.0) > 0 for e in estimates)]


def plan_figure(estimates: list[Any], title: str) -> Any:
    """Horizontal stacked bars, one per layout (best on top): each part of its step (or per-token) time, and
    beside them each part but the ops as a share of that time, with percent labels."""
    from matplotlib.figure import Figure

    labels = [for_chart(e.describe()) for e in estimates]
    names = drawn_parts(estimates)
    fig = Figure(figsize=(14, 1.9 + 0.45 * len(estimates)), dpi=110)
    ax, share_ax = fig.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [3, 2]})
    comm = iter(COMM_COLORS * 4)
    colors = {n: COLORS.get(n) or next(comm) for n in names}
    ys = list(range(len(estimates)))[::-1]
    totals = [sum(e.parts().values()) for e in estimates]
    left = [0.0] * len(estimates)
    share_left = [0.0] * len(estimates)
    for n in names:
        widths = [e.parts().get(n, 0.0) for e in estimates]
        label = n if n in COLORS else f"{n} (exposed)"
        ax.barh(ys, widths, left=left, color=colors[n], label=for_chart(label), height=0.6)
        left = [a + b for a, b in zip(left, widths, strict=True)]
        if n == "ops":
            continue
        shares = [w / t if t > 0 else 0.0 for w, t in zip(widths, totals, strict=True)]
        share_ax.barh(ys, shares, left=share_left, color=colors[n], height=0.6)
        share_left = [a + b for a, b in zip(share_left, shares, strict=True)]
    for y, e, total in zip(ys, estimates, left, strict=True):
        ax.text(total, y, f"  {format_seconds(total)}, {format_count(e.tokens_per_second)} tok/s", va="center",
                fontsize=8)
    top = max(share_left, default=0.0) or 0.01
    for y, s in zip(ys, share_left, strict=True):
        share_ax.text(s + top * 0.02, y, _percent(s), va="center", fontsize=8)
    ax.set_yticks(ys, labels, fontsize=8)
    ax.set_xlabel("time [s] per output token" if hasattr(estimates[0], "ttft")
                  else "forecast [s] per step (what the layouts are ranked by;\n"
                       "exposed communication by the overlap rules)", fontsize=8)
    ax.set_xlim(0, max(left) * 1.35)
    share_ax.set_xlim(0, top * 1.25)
    share_ax.xaxis.set_major_formatter(_percent)
    what = (["communication"] if any(n not in COLORS for n in names) else []) + [
        n for n in ("bubble", "optimizer") if n in names]
    share_ax.set_xlabel(f"share of that time: {', '.join(what) or 'nothing'}\n(everything but the ops)", fontsize=8)
    share_ax.grid(True, axis="x", alpha=0.3)
    fig.suptitle(for_chart(title), fontsize=10)
    handles, texts = ax.get_legend_handles_labels()
    share_ax.legend(handles, texts, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, framealpha=0.9,
                    borderaxespad=0.0)
    fig.tight_layout()
    return fig


def _percent(x: float, pos: int | None = None) -> str:
    """A share as a percentage with two significant digits ('2.8%', '0.49%', '12%'; ticks never repeat)."""
    return "0%" if x == 0 else f"{x * 100:.2g}%"


def plan_bytes(estimates: list[Any], title: str, path: str) -> bytes:
    """The chart as the bytes of ``path``'s format (.png, .svg, .pdf)."""
    from roofline.render.chart import figure_bytes  # at call time: the text alone does not load the chart's modules

    return figure_bytes(plan_figure(estimates, title), path.rsplit(".", 1)[-1].lower())


def plan_text(result: PlanResult, words: PlanWords) -> str:
    """The plan as text: the answer, how the layouts were found, the settings and notes, the ranked table, the
    best layout's communication and memory, the glossary (wrapped to the terminal)."""
    from roofline.render.fit import wrap

    lines = [words.answer, words.header, words.settings, *words.notes, *plan_table(result), *words.best,
             words.glossary]
    return wrap("\n".join(lines) + "\n")


def plan_table(result: PlanResult) -> list[str]:
    """The ranked layouts, one line each (the columns that fit the width; $/Mtok with a price)."""
    from roofline.render.fit import Column, table_lines  # at call time: the width tests watch the module's

    priced = result.price is not None
    if result.serving:
        rows = [_serving_cells(r) for r in result.rows]
        columns = [Column("#", keep=True), Column("layout", kind="label", keep=True), Column("per token", keep=True),
                   Column("bound", priority=3), Column("tokens/s", keep=True), Column("ttft", priority=5),
                   Column("exposed comm", priority=2), Column("memory", priority=4),
                   Column("binding", kind="text", keep=True, min_width=12),
                   *((Column("$/Mtok", priority=6),) if priced else ())]
        return table_lines(columns, rows, title="ranked by tokens/s", indent=0, more="--json has every figure")
    rows = [_training_cells(r) for r in result.rows]
    columns = [Column("#", keep=True), Column("layout", kind="label", keep=True), Column("forecast", keep=True),
               Column("bound", priority=3), Column("MFU", priority=7), Column("TFLOP/s", priority=2),
               Column("tokens/s", priority=6), Column("bubble", priority=4), Column("exposed comm", priority=5),
               Column("memory", priority=1), Column("binding", kind="text", keep=True, min_width=12),
               *((Column("$/Mtok", priority=8),) if priced else ())]
    return table_lines(columns, rows, title="ranked by forecast", indent=0, more="--json has every figure")


def _common_cells(r: PlanRow) -> dict[str, str]:
    e = r.estimate
    return {"layout": e.describe() + ("" if e.fits else " (does not fit)"), "bound": format_seconds(e.bound),
            "tokens/s": format_count(e.tokens_per_second), "exposed comm": format_seconds(e.exposed_comm),
            "memory": format_gib(e.memory_total), "binding": display(e.binding),
            "$/Mtok": "" if r.usd_per_mtok is None else f"{r.usd_per_mtok:.3g}"}


def _serving_cells(r: PlanRow) -> dict[str, str]:
    e: Any = r.estimate
    return {"#": str(r.rank), "per token": format_seconds(e.time), "ttft": format_seconds(e.ttft),
            **_common_cells(r)}


def _training_cells(r: PlanRow) -> dict[str, str]:
    e: Any = r.estimate
    return {"#": f"{r.rank}{'~' if r.marked_tied else ' '}",  # '~' after the rank: tied with the best
            "forecast": format_seconds(e.time), "MFU": f"{e.mfu:.1%}", "TFLOP/s": f"{e.model_tflops_per_device:.1f}",
            "bubble": f"{e.bubble_share:.1%}", **_common_cells(r)}
