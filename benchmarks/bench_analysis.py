"""Analysis throughput: 10^6 synthetic ops against a catalog device.

Prints a table (figure, measured, target, ratio).  Target: >= 2e6 ops/s for
``analyze`` on 10^6 ops.  Median of several runs; one warm-up run first.

    python benchmarks/bench_analysis.py [--ops 1000000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from roofline import analyze, get_device
from roofline.work.workload import Workload
from roofline.work.workload_columns import OP_KINDS


def synthetic(n: int, seed: int = 0) -> Workload:
    rng = np.random.default_rng(seed)
    kinds = np.asarray(OP_KINDS, dtype=object)[rng.integers(0, len(OP_KINDS), n)]
    precisions = np.asarray(["bf16", "fp16", "fp32", "fp8"], dtype=object)[rng.integers(0, 4, n)]
    units = np.where(np.isin(kinds, ["matmul", "conv", "attention"]), "matrix", "vector")
    return Workload.from_columns(
        name=[f"op{i % 5000}" for i in range(n)],
        kind=kinds.tolist(), precision=precisions.tolist(), unit=units.tolist(),
        flops=rng.lognormal(20, 3, n), bytes_read=rng.lognormal(18, 2, n), bytes_written=rng.lognormal(16, 2, n),
        group=[f"model.layers.{i % 80}.block{i % 7}" for i in range(n)],
        title="synthetic")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    device = get_device("h100")
    t0 = time.perf_counter()
    w = synthetic(args.ops)
    build = time.perf_counter() - t0
    analyze(w, device)  # warm-up
    times, group_times = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        a = analyze(w, device)
        _ = a.attainable_flops, a.bound, a.share  # the per-op results people read
        times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        a.by("group", depth=3)
        a.by("kind")
        group_times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    rate = args.ops / med
    rows = [
        ("ops", f"{args.ops:,}", "", ""),
        ("build workload (from_columns) [s]", f"{build:.3f}", "", ""),
        ("analyze median [s]", f"{med:.4f}", f"<= {args.ops / 2e6:.3f}", f"{(args.ops / 2e6) / med:.2f}x"),
        ("analyze min..max [s]", f"{min(times):.4f}..{max(times):.4f}", "", ""),
        ("analyze throughput [ops/s]", f"{rate:,.0f}", ">= 2,000,000", f"{rate / 2e6:.2f}x"),
        ("group-bys (depth-3 module + kind) median [s]", f"{statistics.median(group_times):.4f}", "", ""),
    ]
    w0 = max(len(r[0]) for r in rows)
    print(f"{'figure':<{w0}}  {'measured':>22}  {'target':>14}  {'ratio':>7}")
    for r in rows:
        print(f"{r[0]:<{w0}}  {r[1]:>22}  {r[2]:>14}  {r[3]:>7}")


if __name__ == "__main__":
    main()
