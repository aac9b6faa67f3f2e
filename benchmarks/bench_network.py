"""Does one network bench run predict another?  And how long does --quick take?  (a script, not a test)

    python benchmarks/bench_network.py [NPROC]

Runs ``torchrun --nproc-per-node NPROC -m roofline.bench.network --quick`` (gloo over loopback here;
NCCL where CUDA is) twice, one after the other, and checks issue 18's figures: each collective's fit from
run 1 has R^2 >= 0.95 on log time, and predicts run 2's median time within 25% at every size; the
--quick wall time with 2 processes is at most 60 s.  Prints each collective's worst size.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from roofline.system import System


def run(tmp: Path, name: str, nproc: int) -> float:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}",
                        f"--master-port={port}", "-m", "roofline.bench.network", "--quick", "--device", "xeon-8480",
                        "--out", str(tmp / f"{name}.json")], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"run {name} failed: {r.stderr[-1500:]}")
    return time.perf_counter() - t0


def main() -> int:
    nproc = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    tmp = Path(tempfile.mkdtemp())
    walls = [run(tmp, "one", nproc), run(tmp, "two", nproc)]
    a, b = System.load(tmp / "one.json").tiers[0], System.load(tmp / "two.json").tiers[0]
    print(f"{nproc} ranks, gloo; load average (1 min) {os.getloadavg()[0]:.2f}")
    print(f"{'collective':16} {'R^2 run 1':>10} {'worst |pred/meas - 1|':>22} {'at':>10}  targets: R^2 >= 0.95, <= 25%")
    ok = True
    for name, m in a.measured.items():
        errs = [(abs(m.time(s) / med - 1), s) for s, med, _, _ in b.measured[name].points]
        worst, at = max(errs)
        ok &= m.r2 >= 0.95 and worst <= 0.25
        print(f"{name:16} {m.r2:>10.3f} {worst:>22.0%} {int(at):>10,d} B  {'yes' if m.r2 >= 0.95 and worst <= .25 else 'NO'}")
    print(f"--quick wall (torchrun included): {walls[0]:.1f} s and {walls[1]:.1f} s (target <= 60 s): "
          f"{'yes' if max(walls) <= 60 else 'NO'}")
    return 0 if ok and max(walls) <= 60 else 1


if __name__ == "__main__":
    sys.exit(main())
