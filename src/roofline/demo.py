"""The embedded default job behind ``roofline demo``.

1. The textbook example: peak 100 GFLOP/s, bandwidth 10 GB/s, one application
   point at 0.2 FLOP/B achieving 0.8 GFLOP/s; then the same point on a catalog GPU.
2. This machine, measured quickly (``roofline bench --quick``; cached, so the
   second run is instant).
3. Llama-3-8B prefill (1024 tokens) and decode (batch 1, 1024 tokens of
   context) from the bundled config, on this machine and on a catalog GPU.
4. With torch installed, a small CNN (:class:`DemoCNN`) measured for real on
   this CPU: predicted and measured points side by side.

Everything lands in ``outdir``: ``index.html`` (the interactive report, with
advice) and one PNG per analysis.  The return value lists the files.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from roofline.catalog import get_device
from roofline.core.errors import RooflineError
from roofline.engine.analysis import Analysis, analyze
from roofline.hardware.device import Device
from roofline.words.summary import Summary, summarize
from roofline.work.workload import Op, Workload

if TYPE_CHECKING:
    import torch

DEMO_GPU = "h100"
DEMO_LLM = "llama-3-8b"


class _BenchOverrides(TypedDict, total=False):
    """BenchConfig fields that :func:`roofline.bench.run_bench` takes as ``**overrides``."""

    max_bytes: int
    repeats: int


#: A tiny benchmark for tests (seconds, not a minute): small sweep, few repeats.
TINY_BENCH: _BenchOverrides = {"max_bytes": 1 << 22, "repeats": 3}


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
    titles: dict[str, str] = field(default_factory=dict)
    summaries: dict[str, Summary] = field(default_factory=dict)  # with the levers on each section's own device
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def report(self) -> Path:
        return self.outdir / "index.html"

    def add(self, key: str, a: Analysis, title: str) -> None:
        self.analyses[key] = a
        self.titles[key] = title


def demo_cnn(batch: int = 16) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """A small CNN (conv/bn/relu/pool/linear) and a batch of 32x32 images, on the CPU, in fp32."""
    from roofline.core.errors import require

    require("torch", "torch")  # MissingExtraError (an ImportError) naming the extra when torch is missing
    import torch
    from torch import nn

    class DemoCNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(16)
            self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
            self.bn2 = nn.BatchNorm2d(32)
            self.pool = nn.MaxPool2d(2)
            self.fc1 = nn.Linear(32 * 8 * 8, 256)
            self.fc2 = nn.Linear(256, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = torch.relu(self.bn1(self.conv1(x)))
            x = self.pool(torch.relu(self.bn2(self.conv2(x))))
            return self.fc2(torch.relu(self.fc1(torch.flatten(x, 1))))

    gen = torch.Generator().manual_seed(0)
    model = DemoCNN().eval()
    return model, (torch.randn(batch, 3, 32, 32, generator=gen),)


def local_device(*, quick: bool = True, tiny: bool = False, progress: Callable[[str], None] | None = None) -> Device:
    """This machine: the cached bench result, else a fresh quick (or full) measurement, cached."""
    from roofline import bench

    if not tiny:
        try:
            return bench.load_local_device()
        except RooflineError:
            pass
    if progress:
        progress("measuring this machine (roofline bench --quick, about a minute; cached afterwards) ...")
    overrides: _BenchOverrides = TINY_BENCH if tiny else {}
    device = bench.run_bench(quick=quick, full=not quick, **overrides)
    if not tiny:
        try:
            bench.save_local_device(device)
        except (RooflineError, OSError):
            pass
    return device


def prepare_outdir(outdir: str | Path) -> Path:
    """Create the output folder (before any work), or a one-line error saying why it cannot be."""
    from roofline.core.fileio import check_writable

    path = Path(outdir)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RooflineError(f"cannot write: cannot create the folder ({exc.strerror or exc})", where=str(path)) from None
    check_writable(path / "index.html")
    return path


def run_demo(outdir: str | Path = "roofline-report", *, quick: bool = True, tiny: bool = False,
             local: Device | None = None, progress: Callable[[str], None] | None = None) -> DemoResult:
    """Analyse the embedded workloads and write ``index.html`` plus one PNG per analysis into ``outdir``.

    ``quick``: the quick benchmark when this machine has no cached measurement.  ``tiny``: a
    seconds-long benchmark and fewer repeats (for tests).  ``local``: use this device instead of
    measuring.
    """
    out = DemoResult(prepare_outdir(outdir))
    gpu = get_device(DEMO_GPU)
    t0 = time.perf_counter()
    seed = seed_workload()
    predicted_only = seed.replace(measured_seconds=[float("nan")])  # the 1 s was measured on the textbook machine
    out.add("seed", analyze(seed, seed_device()), "seed example on the textbook machine")
    out.add("seed-gpu", analyze(predicted_only, gpu), f"seed example on {gpu.name}")

    t = time.perf_counter()
    here = local or local_device(quick=quick, tiny=tiny, progress=progress)
    out.seconds["bench"] = time.perf_counter() - t
    _add_llm(out, here, gpu)
    t = time.perf_counter()
    _add_cnn(out, here, tiny)
    out.seconds["measure"] = time.perf_counter() - t
    _write_report(out, here, gpu)
    out.seconds["total"] = time.perf_counter() - t0
    return out


def _add_llm(out: DemoResult, here: Device, gpu: Device) -> None:
    """Llama-3-8B prefill and decode on this machine and on the demo GPU."""
    try:
        from roofline.frontends.llm import from_llm

        for phase in ("prefill", "decode"):
            w = from_llm(DEMO_LLM, phase=phase, batch=1, prompt=1024)
            out.add(f"llama-{phase}-local", analyze(w, here), f"Llama-3-8B {phase} on this machine ({here.name})")
            out.add(f"llama-{phase}-gpu", analyze(w, gpu), f"Llama-3-8B {phase} on {gpu.name}")
    except ImportError as exc:
        out.notes.append(f"skipped Llama-3-8B: {exc}")


def _add_cnn(out: DemoResult, here: Device, tiny: bool) -> None:
    """The small CNN, traced and measured on this CPU (torch)."""
    try:
        from roofline.measurement import measure

        batch = 4 if tiny else 16
        model, inputs = demo_cnn(batch)
        a = measure(model, *inputs, device=here, repeats=3 if tiny else 10, warmup=1 if tiny else 2,
                    profile_runs=1 if tiny else 3, title=f"small CNN ({batch}x3x32x32, fp32)")
        out.add("cnn-measured", a, "small CNN measured on this CPU (predicted vs measured)")
    except ImportError:
        out.notes.append("skipped the measured CNN: torch is not installed (pip install 'roofline[torch]')")


def _write_report(out: DemoResult, here: Device, gpu: Device) -> None:
    """A chart per analysis and the HTML report, each section led by its summary (levers on its own device)."""
    from roofline.render.chart import save_chart
    from roofline.render.html import Section, compare_figure, save_report
    from roofline.words.advice import advise

    sections = []
    for key, a in out.analyses.items():
        path = out.outdir / f"{key}.png"
        # levers on the section's own device, as every --html report (another device is the comparison's job)
        out.summaries[key] = summarize(a, advice=advise(a, devices=False))
        save_chart(a, path, title=out.titles[key], summary=out.summaries[key])
        out.files.append(path)
        sections.append(Section(out.titles[key], a, summary=out.summaries[key]))
    extra, answers = [], []
    if "llama-decode-local" in out.analyses:
        from roofline.words.comparison import answer, compare

        pair = [out.analyses["llama-decode-local"], out.analyses["llama-decode-gpu"]]
        extra.append(("Llama-3-8B decode: this machine vs " + gpu.name,
                      compare_figure(pair, "Llama-3-8B decode", [here.name, gpu.name])))
        answers.append(answer(pair[0].workload, compare(pair[0].workload, [here, gpu])))  # its headline
    intro = [f"This machine: {here.name}, measured by roofline bench ({_bench_line(here)}).",
             "Each section leads with its answer, then the roofline chart (hover the points, toggle the roofs in the "
             "legend); below it, one click each: the summary, the advice with computed effects, the per-op and "
             "per-group tables (click a header to sort), the device's provenance and bench details, and the "
             "workload's assumptions."]
    save_report(sections, out.report, title="roofline demo", extra_charts=extra, intro=intro,
                extra_headlines=answers)
    out.files.insert(0, out.report)


def _bench_line(d: Device) -> str:
    from roofline.core.units import format_bandwidth, format_flops

    best = max(d.compute, key=lambda c: c.flops)
    return (f"peak {format_flops(best.flops)} ({best.label}), "
            + ", ".join(f"{m.level} {format_bandwidth(m.bandwidth)}" for m in d.memory))
