"""``roofline plan --serve``'s drawing (reading only): the ranked deployments as text (:func:`deploy_text`, with
the :class:`~roofline.words.deploy.DeployWords` around them) and the Pareto front (:func:`front_bytes`).

The front is drawn as AIConfigurator and InferenceMAX draw theirs: tokens/s per GPU (y) against tokens/s per user
(x), one line through the priced deployments (within the TTFT limit) no other of their kind beats on both
(mean-static), aggregated and disaggregated apart; the simulated short list as crosses at their p99 figures; the best ringed; the TPOT limit a vertical line
(1 / TPOT tokens/s per user: to its right, within it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roofline.core.text import display, for_chart
from roofline.core.units import format_count, format_seconds

if TYPE_CHECKING:
    from roofline.planner.deploy_search import Row, SearchResult
    from roofline.words.deploy import DeployWords

#: colours: aggregated, disaggregated, the simulated crosses and the ring
AGG, DISAGG, SIM, RING = "#1f4e79", "#d62728", "#2ca02c", "#000000"


def deploy_text(r: SearchResult, words: DeployWords, top: int, price: float | None = None) -> str:
    """The search as text: the answer, the other statistic's best, how it was found, the settings, the ranked
    table (``top`` rows; $/Mtok with a ``price`` per device-hour), the glossary (wrapped to the terminal)."""
    from roofline.render.fit import wrap

    lines = [words.answer, words.other, words.header, words.settings, *deploy_table(r, top, price), words.glossary]
    return wrap("\n".join(lines) + "\n")


def deploy_table(r: SearchResult, top: int, price: float | None) -> list[str]:
    """The ranked deployments within the SLO, one line each (the columns that fit the width)."""
    from roofline.render.fit import Column, table_lines

    rows = [_cells(row, k, r.slo_stat, price) for k, row in enumerate(r.ranked[:top], 1)]
    if not rows:
        return ["(no deployment within the SLO)"]
    columns = [Column("#", keep=True), Column("deployment", kind="wrap", keep=True, min_width=24),
               Column("stat", keep=True), Column("tok/s/GPU", keep=True), Column("tok/s/user", keep=True),
               Column("TTFT", priority=5), Column("TPOT", priority=4), Column("GPUs", priority=2),
               Column("static tok/s/GPU", priority=3), *((Column("$/Mtok", priority=6),) if price else ())]
    return table_lines(columns, rows, title=f"ranked by tokens/s per GPU at the SLO ({r.slo_stat})", indent=0,
                       more="--json has every figure")


def _cells(row: Row, rank: int, stat: str, price: float | None) -> dict[str, str]:
    shown = stat if row.simulated else "mean-static"
    dev, user = row.figures(shown)[:2]
    ttft, tpot = row.times(shown)
    usd = price / 3600 / dev * 1e6 if price and dev > 0 else None
    return {"#": str(rank), "deployment": display(row.deployment.describe()), "stat": shown,
            "tok/s/GPU": format_count(dev), "tok/s/user": f"{user:.3g}",
            "TTFT": format_seconds(ttft) if ttft is not None else "", "TPOT": format_seconds(tpot) if tpot is not None
            else "", "GPUs": str(row.deployment.devices),
            "static tok/s/GPU": format_count(row.static.tokens_per_s_per_device),
            "$/Mtok": f"{usd:.3g}" if usd is not None else ""}


def front_figure(r: SearchResult, title: str) -> Any:
    """The Pareto front of the module docs (matplotlib)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 6), dpi=110)
    ax = fig.subplots()
    for disagg, color, name in ((False, AGG, "aggregated"), (True, DISAGG, "disaggregated")):
        pts = [row.figures("mean-static")[:2] for row in r.front if row.deployment.disaggregated == disagg]
        if pts:
            xs, ys = zip(*sorted((u, d) for d, u in pts), strict=True)
            ax.plot(xs, ys, "o-", color=color, ms=4, lw=1.2, label=f"{name}: Pareto front (mean-static)")
    sim = [row for row in r.simulated if row.poisson is not None and row.poisson.figures is not None]
    if sim:
        ax.plot([row.figures("p99")[1] for row in sim], [row.figures("p99")[0] for row in sim], "x", color=SIM,
                ms=9, mew=2, label="simulated (p99 under Poisson arrivals)", linestyle="none")
    best = r.best_by(r.slo_stat)
    if best is not None:
        dev, user = best.figures(r.slo_stat)[:2]
        ax.plot([user], [dev], "o", ms=18, mfc="none", mec=RING, mew=1.5, linestyle="none",
                label=for_chart(f"best ({r.slo_stat}): {best.deployment.describe()}, {format_count(dev)} tok/s/GPU"))
    ax.set_ylim(0, ax.get_ylim()[1] * 1.08)
    ax.set_xlim(left=0)
    tpot = r.opts.slo.tpot
    if tpot:
        ax.axvline(1 / tpot, color="#7f7f7f", ls="--", lw=1)
        ax.text(1 / tpot, ax.get_ylim()[1] * 0.98, f" TPOT limit {format_seconds(tpot)}", va="top", ha="left",
                fontsize=8, color="#555555")
    ax.set_xlabel("tokens/s per user (1 / TPOT)", fontsize=9)
    ax.set_ylabel("output tokens/s per GPU", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper right", framealpha=0.9)
    fig.suptitle(for_chart(title), fontsize=10)
    fig.tight_layout()
    return fig


def front_bytes(r: SearchResult, title: str, path: str) -> bytes:
    """The front as the bytes of ``path``'s format (.png, .svg, .pdf)."""
    from roofline.render.chart import figure_bytes

    return figure_bytes(front_figure(r, title), path.rsplit(".", 1)[-1].lower())
