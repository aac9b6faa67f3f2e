"""MoE training: the planner's bound and forecast against published step times (a script, not a timed test).

Each row is a published, measured training step of a mixture-of-experts model on H100 (DGX H100: 8 per node,
NVLink 4, one 400 Gb/s NIC per GPU), cited below with the layout its publisher states.  Per row: measured, bound,
forecast, bound/measured, forecast/measured, whether the memory model fits the published layout, and where the
forecast's time goes (ops, bubble, each exposed collective, SM contention).  The step times are for checking the
forecast only: nothing in the planner is fitted to them.  Targets (issue 50): bound <= measured on every row;
forecast/measured median in [0.85, 1.15], every row in [0.67, 1.5].

What a row cannot state in the planner's grammar is said in its ``note``: interleaving the planner refuses for the
uneven stages (Megatron-Core's flexible layouts, the moe-pipe work), recomputation of named modules taken as
``selective``, FSDP taken as ZeRO 3, the A2A dispatcher (no DeepEP) timed as DeepEP all the same.

Run: ``PYTHONPATH=src python benchmarks/bench_moe.py``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from roofline.catalog import get_system
from roofline.llm.config import load_arch
from roofline.llm.training import TrainingRun
from roofline.planner.layout import Layout
from roofline.planner.train import estimate

DGXC = ("NVIDIA/dgxc-benchmarking deepseek_v3/pretraining/README.md @ 1f6d9f40e4117d7c71b726f86074ac01c29f87f5, "
        "'H100 Performance' (NeMo 25.04, BF16, synthetic data, iterations 11-44)")
ZOO = ("yanring/Megatron-MoE-ModelZoo best_practice/Qwen3/readme.md @ c1ad0b5c89f425d60febddc38e7f741a16f08bd1, "
       "'Performance Results' (256 H100, NVLink 4, InfiniBand 8x50 GB/s, BF16)")
ISSUE = "issue 50's table (a published run; its source not given in the issue and not found: uncited, a check only)"


@dataclass(frozen=True)
class Row:
    model: str
    gpus: int
    global_batch: int
    layout: Layout
    measured: float  # seconds per step
    source: str
    note: str = ""
    precision: str = "bf16"


ROWS = (
    Row("deepseek-v3", 512, 4096, Layout(tp=2, pp=8, dp=32, ep=64, etp=1, zero=1, micro_batch=1,
                                         recompute="selective", overlap_ep=False), 48.948, DGXC,
        "tp2 pp8 ep64 etp1 dp32 vp1 mbs1; dispatcher not stated (NeMo 25.04: no A2A overlap, taken off)"),
    Row("deepseek-v3", 1024, 8192, Layout(tp=2, pp=16, dp=32, ep=64, etp=1, zero=1, micro_batch=1,
                                          recompute="selective", overlap_ep=False), 52.04, DGXC,
        "tp2 pp16 ep64 etp1 dp32 vp1 mbs1; as above"),
    Row("qwen3-235b-a22b", 256, 2048, Layout(tp=2, pp=8, dp=16, ep=32, etp=1, zero=1, micro_batch=1,
                                             recompute="selective", overlap_ep=False), 19.7, ZOO,
        "DeepEP tp2 ep32 pp8 etp1 dp16; VPP 4 not taken (94 layers over 8 stages); recompute norm, act"),
    Row("qwen3-235b-a22b", 256, 2048, Layout(tp=2, pp=8, dp=16, ep=32, etp=1, zero=1, micro_batch=1,
                                             recompute="selective"), 17.6, ZOO,
        "the same with '+1f1b overlap' (--overlap-ep on)"),
    Row("qwen3-235b-a22b", 256, 2048, Layout(tp=2, pp=1, dp=128, ep=8, etp=1, zero=3, micro_batch=4,
                                             recompute="full", overlap_ep=False), 17.6, ZOO,
        "DeepEP tp2 ep8 edp32 dp128 FSDP (ZeRO 3) mbs4 full recompute; A2A overlap not stated (default off)"),
    Row("qwen3-235b-a22b", 256, 2048, Layout(tp=4, pp=8, dp=8, ep=8, etp=1, zero=1, micro_batch=1,
                                             recompute="none", overlap_ep=False), 29.0, ZOO,
        "DeepEP tp4 ep8 pp8 edp4 etp1 dp8; VPP 4 not taken"),
    Row("deepseek-v3", 256, 512, Layout(tp=1, pp=4, dp=64, ep=64, zero=3, micro_batch=1, recompute="full"),
        8.18, ISSUE, "tp1 pp4 ep64 dp64 zero3 (DeepEP, balanced); recompute as the memory model needs"),
    Row("deepseek-v3", 1024, 8192, Layout(tp=2, pp=8, dp=64, ep=64, zero=1, micro_batch=1, recompute="full"),
        25.3, ISSUE, "tp2 pp8 ep64 dp64, etp not given (the dispatch as etp 1: NVIDIA's published layout of that shape, "
        "dgxc-benchmarking deepseek_v3/pretrain/megatron_bridge/README.md @ 46e42015: tp2 pp8 ep64 etp1 vp4)"),
    Row("deepseek-v3", 1024, 8192, Layout(tp=2, pp=8, dp=64, ep=64, etp=2, zero=1, micro_batch=1,
                                          recompute="full"), 25.3, ISSUE,
        "the same with etp 2 (= tp, Megatron-Core's default without --expert-tensor-parallel-size)"),
)


def where(e: object, top: int = 4) -> str:
    parts = e.parts()  # type: ignore[attr-defined]
    total = sum(parts.values()) or 1.0
    best = sorted(parts.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{k} {v / total:.0%}" for k, v in best if v > 0)


def main() -> None:
    print(f"{'model':17} {'GPUs':>5} {'layout':44} {'meas':>6} {'bound':>6} {'fcst':>6} {'b/m':>5} {'f/m':>5} fits"
          "  where the forecast goes")
    cited: list[float] = []
    for r in ROWS:
        run = TrainingRun(load_arch(r.model), seq=4096, global_batch=r.global_batch, precision=r.precision)
        e = estimate(run, r.layout, get_system("dgx-h100", nodes=r.gpus // 8))
        fm, bm = e.time / r.measured, e.bound / r.measured
        if r.source is not ISSUE:
            cited.append(fm)
        ep = " ep-overlap" if r.layout.overlap_ep else ""
        print(f"{r.model:17} {r.gpus:>5} {r.layout.describe() + ep:44} {r.measured:6.2f} {e.bound:6.2f} {e.time:6.2f} "
              f"{bm:5.2f} {fm:5.2f} {'yes' if e.fits else 'no ':4} {where(e)}")
        print(f"{'':24}{r.note}")
    print(f"\ncited rows: forecast/measured median {statistics.median(cited):.2f}, range "
          f"{min(cited):.2f}-{max(cited):.2f}")
    print("sources:\n  " + "\n  ".join(sorted({r.source for r in ROWS})))


if __name__ == "__main__":
    main()
