"""The bench's DRAM kernel against the C yardstick's, alternated within seconds (a script; issue 32).

``bench_ceilings.py`` compares the DRAM roof of one ``roofline bench --quick`` run with the better of two C
yardstick runs taken before and after it, about 30 s apart.  On a VM whose memory bandwidth drifts with its
neighbours (on the Zen 5 VM of 2026-12-02 the C triad read 86-97 GB/s in one minute and 49-52 a few minutes
later), that compares two moments, not two kernels.  This script takes the time out: each round measures the
bench's own in-place kernel (``roofline.bench._kernels.stream``, kind ``ERT_ADD``: x = x + s over 128 MiB, the
long-sample method the DRAM roof is the best of, >= 50 ms samples, best of 7) in this process, then runs the
C yardstick (in place over the same 128 MiB, best pass) straight after, and prints their ratio per round and
the median.

    python benchmarks/bench_dram_ab.py [ROUNDS]        # default 8; about 3 s a round
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

# libgomp's settings before it starts, as roofline.bench.cpu sets them for the bench's child process
for _key, _value in (("OMP_WAIT_POLICY", "passive"), ("OMP_PROC_BIND", "spread"), ("OMP_PLACES", "cores")):
    os.environ.setdefault(_key, _value)
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

import bench_ceilings  # noqa: E402
import numba  # noqa: E402
import numpy as np  # noqa: E402

from roofline.bench import _kernels as kernels  # noqa: E402
from roofline.bench.sampling import measure_rate  # noqa: E402
from roofline.bench.sweep import ERT_BYTES_PER_ELEMENT, spin_up, stream_call  # noqa: E402

WORKING_SET = 128 * 2**20  # bytes: the DRAM working set of roofline bench --quick on this kind of host
THREADS = 2


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    with tempfile.TemporaryDirectory() as tmp:
        exe, _ = bench_ceilings.build(Path(tmp))
        buf = np.random.default_rng(0).random(WORKING_SET // 8)
        buf += 0.5
        out = np.zeros(THREADS)
        ratios = []
        for r in range(rounds):
            spin_up(numba, kernels, THREADS)
            stat, _ = measure_rate(stream_call(kernels, kernels.ERT_ADD, buf, buf, buf, 1, THREADS, out),
                                   float(ERT_BYTES_PER_ELEMENT * buf.size), 7, 0.05, THREADS, "A/B in place")
            ys = bench_ceilings.run_yardstick(exe, WORKING_SET // 24)
            ratios.append(stat.best / ys["inplace_best"])
            print(f"round {r}: bench in-place {stat.best / 1e9:6.1f} GB/s, C in-place {ys['inplace_best'] / 1e9:6.1f}, "
                  f"C triad {ys['triad_best'] / 1e9:6.1f}; bench / C {ratios[-1]:.3f}; load {os.getloadavg()[0]:.2f}",
                  flush=True)
    print(f"median bench / C in place: {statistics.median(ratios):.3f} ({min(ratios):.3f}..{max(ratios):.3f}) "
          f"over {rounds} rounds (target of the DRAM roof: 0.95..1.10)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
