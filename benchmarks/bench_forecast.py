"""Does the forecast predict real times?  Calibrate with the fixed suite, then forecast held-out models (a script).

One run, on this machine's CPU, in one process, ``ROUNDS`` times (default 3; this VM's speed drifts by
tens of percent over minutes, so each round calibrates right before it measures, and the table quotes
the median round per model):

1. ``run_calibration`` on the cached local device (``roofline bench`` first): the fixed suite, measured
   and fitted (full suite unless ``--quick``);
2. the held-out models, built here with random weights and measured for real with ``roofline.measure``
   on the calibrated device: GPT-2 small from its config (768 wide, 12 layers, 12 heads, vocabulary
   50257) at sequence 128 and 512; a ResNet-18-style CNN at 224x224, batch 1 and 16; an MLP (4 linear
   layers with ReLU, batch 256) at widths 512, 1536 and 4096;
3. the overlap check: every (aten op, input shapes, dtype) a held-out model dispatches against every
   one the suite dispatches (costed ops only); it must be zero;
4. per model: the share of measured ops whose bound (the cache-aware judged time, as a measured point
   is judged) is at most the op's profiled time; the median op's |forecast / measured - 1|; the whole
   model's bound and forecast over its unprofiled median time.  Targets: bound <= measured for >= 95%
   of ops and for every whole model; median op within 25%; every whole model within 15%.

    python benchmarks/bench_forecast.py [ROUNDS] [--quick]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from roofline.bench import load_local_device  # noqa: E402
from roofline.bench.calibrate import run_calibration, suite  # noqa: E402
from roofline.measurement import measure  # noqa: E402

GPT2_SMALL = {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257,
              "n_positions": 1024}


class Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                     if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.b1(self.c1(x)))
        return torch.relu(self.b2(self.c2(y)) + self.down(x))


class ResNet18(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        chans = [(64, 64, 1), (64, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1),
                 (256, 512, 2), (512, 512, 1)]
        self.blocks = nn.Sequential(*(Block(a, b, s) for a, b, s in chans))
        self.fc = nn.Linear(512, 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1), 1))


def mlp(width: int) -> nn.Module:
    return nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width))


def held_out() -> list[tuple[str, nn.Module, tuple[Any, ...]]]:
    import transformers

    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    cfg = transformers.AutoConfig.for_model(**GPT2_SMALL)
    cfg._attn_implementation = "sdpa"
    gpt2 = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    cnn = ResNet18().eval()
    out: list[tuple[str, nn.Module, tuple[Any, ...]]] = [
        ("GPT-2 small seq 128", gpt2, (torch.randint(0, 50257, (1, 128), generator=g),)),
        ("GPT-2 small seq 512", gpt2, (torch.randint(0, 50257, (1, 512), generator=g),)),
        ("ResNet-18 CNN batch 1", cnn, (torch.randn(1, 3, 224, 224, generator=g),)),
        ("ResNet-18 CNN batch 16", cnn, (torch.randn(16, 3, 224, 224, generator=g),)),
    ]
    for width in (512, 1536, 4096):
        out.append((f"MLP width {width}", mlp(width).eval(), (torch.randn(256, width, generator=g),)))
    return out


def signatures(call: Any) -> set[tuple[str, tuple[tuple[int, ...], ...], str]]:
    """(aten op, input shapes, dtype) of every costed op ``call()`` dispatches."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from roofline.frontends.torch import OPS

    seen: set[tuple[str, tuple[tuple[int, ...], ...], str]] = set()

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            name = f"aten.{func.overloadpacket.__name__}"
            if name in OPS:
                tensors = [a for a in args if isinstance(a, torch.Tensor)]
                for a in args:
                    if isinstance(a, (list, tuple)):
                        tensors += [t for t in a if isinstance(t, torch.Tensor)]
                seen.add((name, tuple(tuple(t.shape) for t in tensors),
                          str(tensors[0].dtype) if tensors else ""))
            return func(*args, **(kwargs or {}))

    with torch.inference_mode(), Record():
        call()
    return seen


def one_round(quick: bool, models: list[tuple[str, nn.Module, tuple[Any, ...]]], suite_sigs: set[Any],
              load: list[float]) -> tuple[Any, list[tuple[Any, ...]], list[float]]:
    """Calibrate, then measure and forecast every held-out model: (calibration, rows, per-op errors)."""
    device = load_local_device()
    t0 = time.perf_counter()
    cal, calibrated = run_calibration(device, quick=quick)
    print(f"calibration: {cal.describe()} in {time.perf_counter() - t0:.0f} s; {len(cal.failed)} suite op(s) failed")
    for f in cal.failed:
        print(f"  failed: {f}")
    rows = []
    errors: list[float] = []
    for name, model, inputs in models:
        overlap = signatures(lambda model=model, inputs=inputs: model(*inputs)) & suite_sigs
        load.append(os.getloadavg()[0])
        a = measure(model, *inputs, device=calibrated, repeats=7, warmup=2, profile_runs=3, title=name)
        f = a.forecast
        assert f is not None and a.workload.measured is not None
        sec = a.workload.columns["measured_seconds"]
        m = np.isfinite(sec) & (sec > 0)
        err = np.abs(f.time[m] / sec[m] - 1.0)
        errors += err.tolist()
        whole = a.workload.measured.timing.median
        rows.append((name, int(m.sum()), len(a.workload), len(overlap), float(np.mean(a.judged_time[m] <= sec[m])),
                     float(np.median(err)), float(np.mean(err <= 0.25)), a.total_time / whole, f.total_time / whole,
                     whole, a.workload.measured.timing.spread, a.workload.measured.profiled_seconds / whole - 1.0))
    return cal, rows, errors


def print_rows(rows: list[tuple[Any, ...]]) -> None:
    print(f"{'held-out model':24} {'ops':>9} {'overlap':>7} {'bound<=meas':>11} {'median op err':>13} "
          f"{'ops in 25%':>10} {'bound/meas':>10} {'fc/meas':>8} {'whole':>9} {'IQR':>5} {'profiler':>8}")
    for r in rows:
        print(f"{r[0]:24} {r[1]:>4}/{r[2]:<4} {r[3]:>7} {r[4]:>11.1%} {r[5]:>13.1%} {r[6]:>10.0%} {r[7]:>10.3f} "
              f"{r[8]:>8.3f} {r[9] * 1e3:>7.2f}ms {r[10]:>5.0%} {r[11]:>+8.0%}")


def main() -> int:
    quick = "--quick" in sys.argv
    numbers = [a for a in sys.argv[1:] if a.isdigit()]
    rounds = int(numbers[0]) if numbers else 3
    load: list[float] = [os.getloadavg()[0]]
    print(f"device: {load_local_device().name}; {rounds} round(s), each: calibrate, then every held-out model")
    g = torch.Generator().manual_seed(1)
    suite_sigs: set[Any] = set()
    for op in suite(quick):
        fn, inputs = op.make(torch, g)
        suite_sigs |= signatures(lambda fn=fn, inputs=inputs: fn(*inputs))
    models = held_out()
    per_round = []
    errors: list[float] = []
    for k in range(rounds):
        print(f"\nround {k + 1}")
        _, rows, err = one_round(quick, models, suite_sigs, load)
        print_rows(rows)
        per_round.append(rows)
        errors += err
    # per model, the median over rounds of each figure (the machine drifts between minutes: rounds are side by side)
    med_rows = []
    for j in range(len(models)):
        cells = [r[j] for r in per_round]
        med_rows.append((cells[0][0], cells[0][1], cells[0][2], max(c[3] for c in cells),
                         *(float(np.median([c[i] for c in cells])) for i in range(4, 12))))
    print(f"\nmedian over {rounds} round(s)")
    print_rows(med_rows)
    overlap_total = sum(r[3] for r in med_rows)
    all_bound = sum(r[4] * r[1] for r in med_rows) / sum(r[1] for r in med_rows)
    med = float(np.median(errors))
    worst_whole = max(abs(r[8] - 1) for r in med_rows)
    spread = [max(r[j][8] for r in per_round) / min(r[j][8] for r in per_round) - 1 for j in range(len(models))]
    print()
    print(f"{'figure':56} {'value':>8} {'target':>8} ok")
    checks = [
        ("overlap of suite and held-out (op, shapes, dtype)", f"{overlap_total}", "0", overlap_total == 0),
        ("ops with bound <= measured (all models, median round)", f"{all_bound:.1%}", ">= 95%", all_bound >= 0.95),
        ("whole models with bound <= measured (every round)",
         f"{sum(all(r[j][7] <= 1 for r in per_round) for j in range(len(models)))}/{len(models)}", "all",
         all(r[j][7] <= 1 for r in per_round for j in range(len(models)))),
        ("median op |forecast/measured - 1| (all models, rounds)", f"{med:.1%}", "<= 25%", med <= 0.25),
        ("worst whole model |forecast/measured - 1| (median round)", f"{worst_whole:.1%}", "<= 15%",
         worst_whole <= 0.15),
    ]
    for label, value, target, ok in checks:
        print(f"{label:56} {value:>8} {target:>8} {'yes' if ok else 'NO'}")
    print(f"largest spread of one model's forecast/measured across rounds: {max(spread):.0%}")
    print(f"load average (1 min) at the start and before each model: {', '.join(f'{x:.2f}' for x in load)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
