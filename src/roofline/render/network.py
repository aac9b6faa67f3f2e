"""The communication roofline: collective time against message size, measured points under the alpha-beta
model of each collective (matplotlib; reads a System with measured tiers, computes nothing)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from roofline.core.text import for_chart
from roofline.core.units import format_seconds
from roofline.render.chart import figure_bytes

COLORS = {"all_reduce": "#1f4e79", "all_gather": "#2ca02c", "reduce_scatter": "#ff7f0e", "all_to_all": "#9467bd",
          "send_recv": "#d62728"}


def network_figure(system: Any, extra: Sequence[tuple[str, str, float, float]] = ()) -> Any:
    """One panel per measured tier: log-log time vs bytes; each collective's fit drawn as a line (its
    latency floor alpha on the left, the bandwidth slope on the right) with the measured medians and
    their interquartile range as points.  ``extra``: (label, collective, bytes, measured seconds) of
    collectives measured elsewhere (a model's own all-reduce), drawn as stars beside their prediction
    (a cross on the collective's line)."""
    import numpy as np
    from matplotlib.figure import Figure

    tiers = [t for t in system.tiers if t.measured]
    fig = Figure(figsize=(7 * max(1, len(tiers)), 5), dpi=110)
    for k, tier in enumerate(tiers):
        ax = fig.add_subplot(1, len(tiers), k + 1)
        for name, m in tier.measured.items():
            color = COLORS.get(name, "#555555")
            pts = np.asarray(m.points, dtype=float)
            if len(pts):
                lo, hi = pts[:, 0].min() / 2, pts[:, 0].max() * 2
                xs = np.geomspace(lo, hi, 100)
                regime2 = (f"; from {m.split_bytes:.3g} B: {_model(m.alpha2, m.bandwidth2)}"
                           if m.split_bytes < float("inf") else "")
                ax.plot(xs, [m.time(x) for x in xs], color=color, lw=1.5,
                        label=for_chart(f"{name}: {_model(m.alpha, m.bandwidth)}{regime2} (R² {m.r2:.3f})"))
                ax.errorbar(pts[:, 0], pts[:, 1], yerr=[pts[:, 1] - pts[:, 2], pts[:, 3] - pts[:, 1]], fmt="o",
                            ms=4, color=color, mfc="white", capsize=2)
        for label, name, nbytes, seconds in extra if k == 0 else ():
            m = tier.measured.get(name)
            color = COLORS.get(name, "#555555")
            ax.plot([nbytes], [seconds], marker="*", ms=12, color=color, ls="none",
                    label=for_chart(f"{label}: measured {format_seconds(seconds)}"))
            if m is not None:
                ax.plot([nbytes], [m.time(nbytes)], marker="x", ms=10, color=color, ls="none",
                        label=for_chart(f"{label}: predicted {format_seconds(m.time(nbytes))}"))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("message size [bytes]")
        ax.set_ylabel("time [s]")
        ranks = next(iter(tier.measured.values())).ranks
        ax.set_title(for_chart(f"{tier.name}: {ranks} ranks (lines: alpha-beta fits; points: measured)"),
                     fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(for_chart(system.name), fontsize=10)
    fig.tight_layout()
    return fig


def _model(alpha: float, bandwidth: float) -> str:
    return f"{alpha * 1e6:.3g} us" + (f" + B / {bandwidth / 1e9:.3g} GB/s" if bandwidth < float("inf") else " flat")


def network_chart_bytes(system: Any, path: str, extra: Sequence[tuple[str, str, float, float]] = ()) -> bytes:
    return figure_bytes(network_figure(system, extra), path.rsplit(".", 1)[-1].lower())


def collective_lines(label: str, collective: str, f: Any) -> str:
    """nccl-tests' columns for one measured collective (a :class:`roofline.hardware.system.MeasuredCollective`): size,
    time, algbw, busbw, spread (:func:`roofline.bench.network.point_bandwidths`); then the fit."""
    import math

    from roofline.bench.network import point_bandwidths
    from roofline.core.units import format_bytes

    regime2 = (f"; from {format_bytes(f.split_bytes)}: {format_seconds(f.alpha2)} + bytes / "
               f"{f.bandwidth2 / 1e9:.3g} GB/s" if f.split_bytes < math.inf else "")
    lines = [f"{label} {collective} ({f.ranks} ranks): t = {format_seconds(f.alpha)} + bytes / "
             f"{f.bandwidth / 1e9:.3g} GB/s{regime2} (R^2 {f.r2:.3f} on log time)",
             f"  {'size':>10} {'time':>10} {'algbw GB/s':>11} {'busbw GB/s':>11} {'IQR':>6} {'fit':>8}"]
    for p in point_bandwidths(collective, f):
        lines.append(f"  {format_bytes(p.nbytes):>10} {format_seconds(p.median):>10} {p.algbw_gb_s:>11.3g} "
                     f"{p.busbw_gb_s:>11.3g} {p.spread:>6.0%} {p.fit_error:>+8.0%}")
    return "\n".join(lines)
