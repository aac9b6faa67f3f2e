"""How fast does the layout planner rank?  (a script, not a test)

    python benchmarks/bench_plan.py [ROUNDS]

Llama-3-70B training (global batch 1024 x 4096 tokens) on 64 nodes of DGX H100 (512 GPUs): every
layout of roofline.planner.layouts estimated and the fitting ones ranked, ROUNDS times (default 5).
The first round is cold (op tables, shard times and collective times computed); later rounds reuse only
the op tables (each plan() call builds its own shard and collective caches).  Target: >= 10,000 layouts
ranked per second (median round).
"""

from __future__ import annotations

import os
import statistics
import sys
import time

from roofline.catalog import get_system
from roofline.planner import TrainingRun, plan

TARGET = 10_000


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    run = TrainingRun.of("llama-3-70b", seq=4096, global_batch=1024)
    system = get_system("dgx-h100", nodes=64)
    rates, walls = [], []
    p = None
    for _ in range(rounds):
        t0 = time.perf_counter()
        p = plan(run, system, top=5)
        wall = time.perf_counter() - t0
        walls.append(wall)
        rates.append(p.tried / wall)
    assert p is not None
    median = statistics.median(rates[1:] or rates)
    print(f"{run.arch.name} training, global batch {run.global_batch} x {run.seq}, on {system.name} x {system.nodes} "
          f"({system.devices} devices); load average (1 min) {os.getloadavg()[0]:.2f}")
    print(f"{'figure':48} {'value':>12} {'target':>10}  ok")
    rows = [("layouts tried per plan", f"{p.tried:,}", "", ""),
            ("layouts past memory", f"{p.too_big:,}", "", ""),
            ("cold round: wall [s]", f"{walls[0]:.3f}", "", ""),
            ("cold round: layouts/s", f"{rates[0]:,.0f}", "", ""),
            (f"warm rounds ({len(rates) - 1}): median layouts/s", f"{median:,.0f}", f">= {TARGET:,}",
             "yes" if median >= TARGET else "NO"),
            ("warm rounds: slowest layouts/s", f"{min(rates[1:] or rates):,.0f}", "", "")]
    for label, value, target, ok in rows:
        print(f"{label:48} {value:>12} {target:>10}  {ok}")
    print("best layouts:")
    for e in p.ranked:
        print(f"  {e.layout.describe():40} step {e.time:.3f} s (bound {e.bound:.3f} s), "
              f"{e.tokens_per_second:,.0f} tokens/s, bubble {e.bubble_share:.1%}, binding {e.binding}, "
              f"{e.memory_total / 1e9:.1f} GB")
    return 0 if median >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
