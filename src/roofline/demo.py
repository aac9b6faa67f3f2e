"""The embedded default job behind ``roofline demo``.

Part 1, the textbook example: peak 100 GFLOP/s, bandwidth 10 GB/s, one
application point at 0.2 FLOP/B achieving 0.8 GFLOP/s; then the same point on
a catalog GPU.  Every chart lands in ``outdir``; the return value lists them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from roofline.analysis import Analysis, analyze
from roofline.catalog import get_device
from roofline.device import Device
from roofline.workload import Op, Workload

DEMO_GPU = "h100"


def seed_workload() -> Workload:
    """The textbook application: 0.8 GFLOP over 4 GB (0.2 FLOP/B) measured at 1 s -> 0.8 GFLOP/s."""
    return Workload.from_ops([Op("app", flops=0.8e9, bytes_read=4e9, measured_seconds=1.0)],
                             title="seed example", source="roofline demo")


def seed_device() -> Device:
    return Device.simple("textbook machine", peak="100 GFLOP/s", bandwidth="10 GB/s")


@dataclass
class DemoResult:
    outdir: Path
    analyses: dict[str, Analysis] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def run_demo(outdir: str | Path = "roofline-report", *, quick: bool = True) -> DemoResult:
    """Analyse the embedded workloads and write every chart into ``outdir``."""
    from roofline.render.chart import save_chart

    out = DemoResult(Path(outdir))
    out.outdir.mkdir(parents=True, exist_ok=True)
    seed = seed_workload()
    predicted_only = seed.replace(measured_seconds=[float("nan")])  # the 1 s was measured on the textbook machine
    for key, device, work in (("seed", seed_device(), seed), ("seed-gpu", get_device(DEMO_GPU), predicted_only)):
        a = analyze(work, device)
        out.analyses[key] = a
        path = out.outdir / f"{key}.png"
        save_chart(a, path, title=f"seed example on {device.name}")
        out.files.append(path)
    return out
