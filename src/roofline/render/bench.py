"""Charts of a measured Device (a renderer): bandwidth vs working set, and the measured hierarchical roofline.

Both read only the Device (its ceilings and the typed bench facts ``bench.sweep`` / ``bench.ert``),
so ``roofline bench --show --plot DIR`` redraws a cached measurement.  Names from the device file
(device, levels, kernels) are drawn through :func:`roofline.core.text.for_chart` (no mathtext).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from roofline.core.fileio import write_bytes_atomic
from roofline.core.text import for_chart
from roofline.core.units import format_bandwidth, format_bytes
from roofline.hardware.device import Device

if TYPE_CHECKING:
    from matplotlib.figure import Figure

KERNEL_COLORS = {"read": "#1f77b4", "write": "#d62728", "copy": "#2ca02c", "triad": "#222222"}


def plot_bandwidth(device: Device, path: str | Path) -> None:
    """Bandwidth vs working set (log x), every kernel, all threads solid and one thread dashed;
    the detected levels drawn as bars over their working-set range; sysfs cache sizes as dotted lines."""
    from matplotlib.ticker import FuncFormatter

    from roofline.render.chart import new_figure

    facts = device.bench
    if facts is None or facts.sweep is None:
        raise ValueError(f"device {device.name!r} has no bandwidth sweep (run 'roofline bench')")
    sizes = facts.sweep.working_set_bytes
    fig = new_figure((10, 6))
    ax = fig.add_subplot()
    for c in facts.sweep.curves:
        style = "-" if c.threads == facts.threads else "--"
        ax.plot(sizes, [v / 1e9 for v in c.median], style, marker="o" if style == "-" else None, ms=3,
                color=KERNEL_COLORS.get(c.kernel, "#555555"), lw=1.6 if style == "-" else 1.0,
                alpha=1.0 if style == "-" else 0.6,
                label=f"{for_chart(c.kernel)}, {c.threads} thread{'s' if c.threads > 1 else ''}")
    for m in device.memory:
        ws = m.provenance.details.get("working_set_bytes")
        if not ws:
            continue
        ax.plot(ws, [m.bandwidth / 1e9] * 2, color="#ff7f0e", lw=6, alpha=0.45, solid_capstyle="butt")
        ax.annotate(f"{for_chart(m.level)} {format_bandwidth(m.bandwidth)}\n{format_bytes(ws[0])} .. {format_bytes(ws[1])}",
                    ((ws[0] * ws[1]) ** 0.5, m.bandwidth / 1e9), xytext=(0, 9), textcoords="offset points",
                    ha="center", va="bottom", fontsize=8, color="#a04000",
                    bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.8})
    for cache in facts.caches:
        if cache.capacity:
            ax.axvline(cache.capacity, color="#777777", ls=":", lw=1)
            ax.text(cache.capacity, 0.98, f" {for_chart(cache.level)} (sysfs) {format_bytes(cache.capacity)}",
                    transform=ax.get_xaxis_transform(), rotation=90, va="top", ha="right", fontsize=7.5,
                    color="#555555")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("working set [bytes, all arrays of the kernel]")
    ax.set_ylabel("bandwidth [GB/s] (STREAM byte counting)")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_bytes(v, 3)))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7.5, ncol=2, loc="lower left")
    ax.set_title(_lead(device) + f"{for_chart(device.name)}: bandwidth vs working set", fontsize=11)
    fig.tight_layout()
    _save(fig, path)


def plot_roofline(device: Device, path: str | Path) -> None:
    """The measured hierarchical roofline (every level, every precision) with the ERT curve's points."""
    from roofline.render.chart import Point, save_chart

    ert = device.bench.ert if device.bench is not None else None
    title = _lead(device) + f"{device.name}: measured roofline"
    points = []
    if ert is not None:
        points = [Point(f"ERT {f:g} FLOP/elem", ai, flops, kind="other", measured=True, weight=0.02)
                  for f, ai, flops in zip(ert.flops_per_element, ert.intensity, ert.flops, strict=True)]
        if ert.deviation:
            title += (f" (ERT points; largest deviation {ert.deviation[ert.worst]:+.0%} at "
                      f"{ert.intensity[ert.worst]:.3g} FLOP/B)")
    save_chart(device, path, title=title, points=points)


def _lead(device: Device) -> str:
    """The measurement's warning as the chart title's first line ('' for a clean run): it leads every output."""
    from roofline.bench.quality import warning

    text = warning(device.metadata)
    return "" if text is None else for_chart(text if len(text) <= 110 else text[:107] + "...") + "\n"


def _save(fig: Figure, path: str | Path) -> None:
    from roofline.render.chart import figure_bytes

    write_bytes_atomic(path, figure_bytes(fig, Path(path).suffix.lower().lstrip(".") or "png"))
