"""The LLM batch sweep as a chart: throughput against per-token latency (matplotlib, imported lazily)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from roofline.core.text import for_chart

if TYPE_CHECKING:
    from roofline.llm.metrics import BatchSweep


def plot_sweep(sweep: BatchSweep, path: str, *, title: str = "") -> None:
    """Throughput (tokens/s) against per-token latency (ms), one point per batch; matplotlib, lazily."""
    from roofline.core.errors import require

    require("matplotlib", "all")
    from roofline.render.chart import new_figure

    fig = new_figure((7, 4.5), dpi=100)
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.12, right=0.97, top=0.92, bottom=0.12)  # fixed before labels are placed in pixels
    lat = sweep.latency * 1e3
    ax.plot(lat, sweep.tokens_per_s, "-", color="tab:blue", lw=1, zorder=1)
    # throughput on a log axis: batch 1, 2, 4 (a doubling each) sit as far apart as 64, 128, 256
    ax.set_yscale("log")
    ok = sweep.fits
    if ok.any():
        ax.scatter(lat[ok], sweep.tokens_per_s[ok], s=12, color="tab:blue", zorder=2, label="fits in memory")
    if (~ok).any():
        ax.scatter(lat[~ok], sweep.tokens_per_s[~ok], s=12, facecolors="none", edgecolors="tab:red", zorder=2,
                   label="does not fit")
    _batch_labels(fig, ax, sweep, lat)
    if sweep.ridge_batch is not None and sweep.batch[0] <= sweep.ridge_batch <= sweep.batch[-1]:
        i = int(np.searchsorted(sweep.batch, sweep.ridge_batch))
        ax.axvline(lat[i], color="gray", ls=":", lw=1)
        ax.annotate(f"ridge batch {sweep.ridge_batch}", (lat[i], ax.get_ylim()[0]), textcoords="offset points",
                    xytext=(3, 5), fontsize=7, color="gray")
    xlabel = "time to first token (ms)" if sweep.phase == "prefill" else "time per output token (ms)"
    ylabel = "prompt tokens/s" if sweep.phase == "prefill" else "output tokens/s (whole batch)"
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel + " [log scale]")
    ax.set_title((for_chart(title) if title else "batch sweep: throughput vs latency") + " (labels: batch)", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    import io

    from roofline.core.fileio import write_bytes_atomic

    buf = io.BytesIO()
    fig.savefig(buf, format=path.rsplit(".", 1)[-1].lower(), bbox_inches="tight")
    write_bytes_atomic(path, buf.getvalue())


def _batch_labels(fig: Any, ax: Any, sweep: BatchSweep, lat: np.ndarray) -> None:
    """Batch labels at the powers of two and the last batch, each beside its point, skipped where it would
    overlap a label already placed (checked in pixels, smallest batch first)."""
    ax.set_xlim(*ax.get_xlim())  # the limits (and so the pixel positions) are final before any label goes
    ax.set_ylim(*ax.get_ylim())
    renderer = fig.canvas.get_renderer()
    placed: list[Any] = []
    for i, b in enumerate(sweep.batch):
        if not (b & (b - 1) == 0 or i == len(sweep.batch) - 1):
            continue
        t = ax.annotate(str(b), (lat[i], sweep.tokens_per_s[i]), textcoords="offset points", xytext=(4, -10),
                        fontsize=7, gid="batch-label")
        box = t.get_window_extent(renderer)  # the annotation's own: its offset applied
        if any(box.overlaps(p) for p in placed):
            t.remove()
            continue
        placed.append(box)
