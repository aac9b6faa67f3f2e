"""The LLM batch sweep as a chart: throughput against per-token latency (matplotlib, imported lazily)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from roofline.text import for_chart

if TYPE_CHECKING:
    from roofline.llm.metrics import BatchSweep


def plot_sweep(sweep: BatchSweep, path: str, *, title: str = "") -> None:
    """Throughput (tokens/s) against per-token latency (ms), one point per batch; matplotlib, lazily."""
    from roofline.errors import require

    require("matplotlib", "all")
    from roofline.render.chart import new_figure

    fig = new_figure((7, 4.5), dpi=100)
    ax = fig.add_subplot()
    lat = sweep.latency * 1e3
    ax.plot(lat, sweep.tokens_per_s, "-", color="tab:blue", lw=1, zorder=1)
    ok = sweep.fits
    if ok.any():
        ax.scatter(lat[ok], sweep.tokens_per_s[ok], s=12, color="tab:blue", zorder=2, label="fits in memory")
    if (~ok).any():
        ax.scatter(lat[~ok], sweep.tokens_per_s[~ok], s=12, facecolors="none", edgecolors="tab:red", zorder=2,
                   label="does not fit")
    for i, b in enumerate(sweep.batch):
        if b & (b - 1) == 0 or i == len(sweep.batch) - 1:
            ax.annotate(str(b), (lat[i], sweep.tokens_per_s[i]), textcoords="offset points", xytext=(4, -10), fontsize=7)
    if sweep.ridge_batch is not None and sweep.batch[0] <= sweep.ridge_batch <= sweep.batch[-1]:
        i = int(np.searchsorted(sweep.batch, sweep.ridge_batch))
        ax.axvline(lat[i], color="gray", ls=":", lw=1)
        ax.annotate(f"ridge batch {sweep.ridge_batch}", (lat[i], ax.get_ylim()[0]), textcoords="offset points",
                    xytext=(3, 5), fontsize=7, color="gray")
    xlabel = "time to first token (ms)" if sweep.phase == "prefill" else "time per output token (ms)"
    ylabel = "prompt tokens/s" if sweep.phase == "prefill" else "output tokens/s (whole batch)"
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(for_chart(title) if title else "batch sweep: throughput vs latency (labels: batch)", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    import io

    from roofline.fileio import write_bytes_atomic

    buf = io.BytesIO()
    fig.savefig(buf, format=path.rsplit(".", 1)[-1].lower())
    write_bytes_atomic(path, buf.getvalue())
