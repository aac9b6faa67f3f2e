"""Does one network bench run predict another?  And how long does --quick take?  (a script, not a test)

    python benchmarks/bench_network.py [NPROC] [--full]

Runs ``torchrun --nproc-per-node NPROC -m roofline.commands.bench_network --quick`` (``--full``: the full sizes, 8 B
to 1 GiB; gloo over loopback here, NCCL where CUDA is) twice, one after the other, and checks issue 18's figures: each collective's fit from
run 1 has R^2 >= 0.95 on log time, and predicts run 2's median time at every size within the larger of
25% and that size's own run-to-run spread (|run 2's median / run 1's - 1|, measured in this script, no
fit involved: no model predicts a run better than the machine repeats it; issue 32); the --quick wall time
with 2 processes is at most 60 s.  Prints, per collective, the size nearest to failing with its fit error,
its own spread and the allowance, and the worst spread at any size.  With 2 processes it then times
the tests' 2-rank tensor-parallel MLP (tests/tp_mlp.py) and sets its all-reduce beside run 1's prediction.
"""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from roofline.bench.network import cross_run_check
from roofline.hardware.system import System


def torchrun(name: str, nproc: int, *args: str) -> float:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}",
                        f"--master-port={port}", *args], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{name} failed: {r.stderr[-1500:]}")
    return time.perf_counter() - t0


def run(tmp: Path, name: str, nproc: int, quick: bool) -> float:
    return torchrun(f"run {name}", nproc, "-m", "roofline.commands.bench_network", *(["--quick"] if quick else []),
                    "--device", "xeon-8480", "--out", str(tmp / f"{name}.json"))


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--full"]
    quick = "--full" not in sys.argv[1:]
    nproc = int(args[0]) if args else 2
    tmp = Path(tempfile.mkdtemp())
    walls = [run(tmp, "one", nproc, quick), run(tmp, "two", nproc, quick)]
    a, b = System.load(tmp / "one.json").tiers[0], System.load(tmp / "two.json").tiers[0]
    print(f"{nproc} ranks, gloo, {'--quick' if quick else 'full (8 B .. 1 GiB)'}; "
          f"load average (1 min) {os.getloadavg()[0]:.2f}")
    print(f"{'collective':16} {'R^2 run 1':>9} {'fit 1 vs run 2':>14} {'its spread':>10} {'allowed':>8} {'at':>12} "
          f"{'worst spread':>12} {'at':>12}  targets: R^2 >= 0.95, fit <= max(25%, spread) at every size")
    ok = True
    for name, m in a.measured.items():
        rows = cross_run_check(m.time, [(s, med) for s, med, _, _ in m.points],
                               [(s, med) for s, med, _, _ in b.measured[name].points])
        size, err, spread, allowed, _ = max(rows, key=lambda r: r[1] / r[3])  # nearest to failing
        worst_spread = max(rows, key=lambda r: r[2])
        good = m.r2 >= 0.95 and all(r[4] for r in rows)
        ok &= good
        print(f"{name:16} {m.r2:>9.3f} {err:>14.0%} {spread:>10.0%} {allowed:>8.0%} {int(size):>10,d} B "
              f"{worst_spread[2]:>12.0%} {int(worst_spread[0]):>10,d} B  {'yes' if good else 'NO'}")
    limit = 60 if quick else math.inf  # the wall target is --quick's
    print(f"{'--quick' if quick else 'full'} wall (torchrun included): {walls[0]:.1f} s and {walls[1]:.1f} s"
          + (f" (target <= 60 s): {'yes' if max(walls) <= limit else 'NO'}" if quick else ""))
    if nproc == 2:  # the tests' tensor-parallel MLP, timed for real, against run 1's all-reduce fit
        from roofline.engine.collectives import on_tier

        torchrun("tp_mlp", 2, str(Path(__file__).parents[1] / "tests" / "tp_mlp.py"), str(tmp / "mlp.json"))
        mlp = json.loads((tmp / "mlp.json").read_text())
        predicted = on_tier("all_reduce", mlp["bytes"], 2, a, 2).time
        print(f"TP MLP all-reduce of {mlp['bytes']:,d} B after its GEMMs: measured {mlp['all_reduce'] * 1e3:.3g} ms, "
              f"predicted from run 1 {predicted * 1e3:.3g} ms (measured / predicted {mlp['all_reduce'] / predicted:.2f})")
    return 0 if ok and max(walls) <= limit else 1


if __name__ == "__main__":
    sys.exit(main())
