"""ONNX frontend speed: load + shape inference + cost + analyze, per light model-zoo graph.

The nine "light" graphs ship with the onnx package (onnx/backend/test/data/light).
Prints a table (model, nodes, ops, GFLOP, MB moved, median / min..max seconds,
target, ratio).  Target: DenseNet-121 (~1,750 nodes) <= 1 s.  Median of several
runs after one warm-up (imports, first shape inference).

    python benchmarks/bench_onnx.py [--repeats 5] [--device h100]
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import time

import onnx

from roofline import analyze, from_onnx, get_device

TARGETS = {"densenet121": 1.0}  # seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--device", default="h100")
    args = ap.parse_args()
    device = get_device(args.device)
    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    paths = sorted(glob.glob(os.path.join(light, "*.onnx")))
    if not paths:
        raise SystemExit(f"no light models under {light}")
    analyze(from_onnx(paths[0]), device)  # warm-up
    rows = []
    for path in paths:
        name = os.path.basename(path)[len("light_"):-len(".onnx")]
        nodes = len(onnx.load(path, load_external_data=False).graph.node)
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            w = from_onnx(path)
            a = analyze(w, device)
            _ = a.by("module_type")
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        target = TARGETS.get(name)
        rows.append((name, f"{nodes}", f"{len(w)}", f"{w.total_flops / 1e9:.3f}", f"{w.total_bytes / 1e6:.1f}",
                     f"{med:.4f}", f"{min(times):.4f}..{max(times):.4f}",
                     f"<= {target:g}" if target else "", f"{target / med:.1f}x" if target else ""))
    head = ("model", "nodes", "ops", "GFLOP", "MB moved", "median [s]", "min..max [s]", "target [s]", "ratio")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print(f"ONNX load + analyse on {device.name}, median of {args.repeats} runs")
    print("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths, strict=False))))
    for r in rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=False))))


if __name__ == "__main__":
    main()
