"""Does one network bench run predict another?  And how long does --quick take?  (a script, not a test)

    python benchmarks/bench_network.py [NPROC] [--full]

Runs ``torchrun --nproc-per-node NPROC -m roofline.commands.bench_network --quick`` (``--full``: the full sizes, 8 B
to 1 GiB; gloo over loopback here, NCCL where CUDA is) twice, one after the other, and checks issue 18's figures: each collective's fit from
run 1 has R^2 >= 0.95 on log time, and predicts run 2's median time within 25% at every size; the
--quick wall time with 2 processes is at most 60 s.  Prints each collective's worst size, and beside it
the machine's own reproducibility: how far run 2's medians are from run 1's at the same sizes, no fit
involved (no model predicts a run better than the machine repeats it).  With 2 processes it then times
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

from roofline.system import System


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
    print(f"{'collective':16} {'R^2 run 1':>10} {'fit 1 vs run 2: worst':>22} {'at':>12} "
          f"{'run 1 vs run 2: worst':>22} {'at':>12}  targets: R^2 >= 0.95, fit <= 25%")
    ok = True
    for name, m in a.measured.items():
        worst, at = max((abs(m.time(s) / med - 1), s) for s, med, _, _ in b.measured[name].points)
        again, where = max((abs(med2 / med1 - 1), s) for (s, med1, _, _), (_, med2, _, _)
                           in zip(m.points, b.measured[name].points, strict=True))
        ok &= m.r2 >= 0.95 and worst <= 0.25
        print(f"{name:16} {m.r2:>10.3f} {worst:>22.0%} {int(at):>10,d} B {again:>22.0%} {int(where):>10,d} B  "
              f"{'yes' if m.r2 >= 0.95 and worst <= .25 else 'NO'}")
    limit = 60 if quick else math.inf  # the wall target is --quick's
    print(f"{'--quick' if quick else 'full'} wall (torchrun included): {walls[0]:.1f} s and {walls[1]:.1f} s"
          + (f" (target <= 60 s): {'yes' if max(walls) <= limit else 'NO'}" if quick else ""))
    if nproc == 2:  # the tests' tensor-parallel MLP, timed for real, against run 1's all-reduce fit
        from roofline.collectives import on_tier

        torchrun("tp_mlp", 2, str(Path(__file__).parents[1] / "tests" / "tp_mlp.py"), str(tmp / "mlp.json"))
        mlp = json.loads((tmp / "mlp.json").read_text())
        predicted = on_tier("all_reduce", mlp["bytes"], 2, a, 2).time
        print(f"TP MLP all-reduce of {mlp['bytes']:,d} B after its GEMMs: measured {mlp['all_reduce'] * 1e3:.3g} ms, "
              f"predicted from run 1 {predicted * 1e3:.3g} ms (measured / predicted {mlp['all_reduce'] / predicted:.2f})")
    return 0 if ok and max(walls) <= limit else 1


if __name__ == "__main__":
    sys.exit(main())
