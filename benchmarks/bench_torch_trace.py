"""Trace time and peak RSS of roofline's PyTorch frontend vs FlopCounterMode alone, same models, same run.

    PYTHONPATH=src python3 benchmarks/bench_torch_trace.py [--repeat 5]

Cases: the hand-written ResNet-50 (tests/models.py) at 1x3x224x224, and a
Llama-2-7B-shaped config (tests/configs/llama2_7b.json, bf16) for a 1024-token
prefill and one decode step at KV 1024, all on the meta device.  Every
(case, tool) runs in a fresh subprocess, so peak RSS (ru_maxrss) is that
tool's alone, as is its cold call (imports, first-use registration).  Warm time:
both tools in one further process, alternating, median of --repeat calls each
(load on a shared machine hits both alike); the ratio uses the warm medians.  Target: roofline
<= 2x FlopCounterMode (it also counts bytes, attribution and unsupported ops).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = {
    "resnet50 1x3x224x224": ("resnet", {}),
    "llama-2-7b prefill 1024": ("hf", {"phase": "prefill", "batch": 1, "seq_len": 1024}),
    "llama-2-7b decode kv 1024": ("hf", {"phase": "decode", "batch": 1, "kv_len": 1024}),
}

CHILD = r'''
import json, resource, statistics, sys, time
sys.path.insert(0, sys.argv[1] + "/tests")
kind, tool, repeat, params = sys.argv[2], sys.argv[3], int(sys.argv[4]), json.loads(sys.argv[5])
import torch
from torch.utils.flop_counter import FlopCounterMode
from roofline.frontends.torch import from_torch

def setup():
    if kind == "resnet":
        import models
        model, x = models.resnet50()
        return model, x, {}
    from roofline.frontends.hf import prepare
    model, kwargs, _ = prepare(sys.argv[1] + "/tests/configs/llama2_7b.json", dtype="bf16", **params)
    return model, (), kwargs

def run_once():
    model, args, kwargs = setup()  # a fresh model (and KV cache) per call, outside the timed part
    t = time.perf_counter()
    if tool == "roofline":
        w = from_torch(model, *args, kwargs=kwargs)
        flops = float(w.columns["flops"][[k in ("matmul", "conv") for k in w.column("kind")]].sum())
        n = len(w)
    else:
        with FlopCounterMode(display=False) as fc, torch.no_grad():
            model(*args, **kwargs)
        flops, n = float(fc.get_total_flops()), 0
    return time.perf_counter() - t, flops, n

if tool == "both":  # timing: both tools in this one process, alternating, so load changes hit both alike
    times = {"fcm": [], "roofline": []}
    for t in ("fcm", "roofline"):
        tool = t
        run_once()  # warm-up
    for _ in range(repeat):
        for t in ("fcm", "roofline"):
            tool = t
            times[t].append(run_once()[0])
    print(json.dumps({t: statistics.median(v) for t, v in times.items()}))
else:  # peak RSS and the cold call: this tool alone in a fresh process
    cold, flops, n = run_once()
    print(json.dumps({"cold": cold, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                      "flops": flops, "ops": n}))
'''


def measure(kind: str, tool: str, repeat: int, params: dict) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONWARNINGS="ignore")
    out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), kind, tool, str(repeat), json.dumps(params)],
                         capture_output=True, text=True, env=env, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"{kind}/{tool} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5, help="warm calls per (case, tool); the median is reported")
    args = ap.parse_args()
    header = (f"{'case':27s} {'FCM warm':>9s} {'ours warm':>9s} {'ratio':>6s} {'target':>6s} {'FCM cold':>9s} "
              f"{'ours cold':>9s} {'FCM RSS':>8s} {'ours RSS':>8s} {'ops':>5s} {'FCM GFLOP':>10s} {'ours mm+conv':>12s}")
    print(header)
    print("-" * len(header))
    for case, (kind, params) in CASES.items():
        f = measure(kind, "fcm", args.repeat, params)
        r = measure(kind, "roofline", args.repeat, params)
        warm = measure(kind, "both", args.repeat, params)
        f["warm"], r["warm"] = warm["fcm"], warm["roofline"]
        ratio = r["warm"] / f["warm"]
        print(f"{case:27s} {f['warm']:8.3f}s {r['warm']:8.3f}s {ratio:5.2f}x {'<=2x':>6s} {f['cold']:8.2f}s "
              f"{r['cold']:8.2f}s {f['rss'] / 2**20:6.0f}MB {r['rss'] / 2**20:6.0f}MB {r['ops']:5d} "
              f"{f['flops'] / 1e9:10.2f} {r['flops'] / 1e9:12.2f}")
    print("FCM = torch.utils.flop_counter.FlopCounterMode alone; ours = roofline.from_torch (FLOPs, bytes, modules).")
    print("FCM counts SDPA (decomposed on meta) as bmm; ours counts it as attention (causal: lower triangle), so")
    print("'ours mm+conv' excludes attention; FCM also misses grouped-mm experts (none in these models).")


if __name__ == "__main__":
    main()
