"""Is `roofline bench --quick` as good as a plain-C yardstick and BLAS?  (a script, not a test)

One run, side by side on the same machine:

1. builds a C yardstick with the system compiler (``cc -O3 -march=native -fopenmp``): a
   STREAM triad (a = b + s*c, 24 B per element, OpenMP static schedule, first touch in
   parallel, huge pages requested with madvise as numpy does for large arrays) over the same DRAM working set ``roofline bench --quick`` uses, and an FMA peak
   kernel (16 vector accumulators per thread in registers with AVX-512, 12 with AVX2);
2. runs the yardstick, then numpy DGEMM, then ``roofline bench --quick`` (a fresh
   process with a cold numba cache, so compile time is included), then the yardstick again;
3. prints a table of ratios against the targets:
   DRAM triad >= 0.95 x yardstick triad; fp64 compute ceiling >= 0.95 x max(yardstick FMA,
   DGEMM); --quick wall time <= 60 s.

The yardstick figures are medians over passes (first pass dropped), averaged over the two
yardstick runs bracketing each bench run; the bench's figures are its own medians.  These
machines are noisy, so the whole comparison runs ``ROUNDS`` times (default 2) and the table
shows the median over rounds (the wall time: the slowest round).

    python benchmarks/bench_ceilings.py [ROUNDS]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from roofline.bench import machine  # noqa: E402
from roofline.bench.cpu import default_max_bytes  # noqa: E402

YARDSTICK_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
#include <sys/mman.h>
#ifdef __AVX512F__
#define VB 64
#define NACC 16
#else
#define VB 32
#define NACC 12
#endif
typedef double vd __attribute__((vector_size(VB)));
#define VL (VB / 8)
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    long n = atol(argv[1]); int ntimes = atoi(argv[2]); long iters = atol(argv[3]);
    /* 2 MiB-aligned and madvise(MADV_HUGEPAGE), as numpy does for large arrays: kernel vs kernel, same pages */
    size_t bytes = ((n * sizeof(double)) + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    double *a = aligned_alloc(2u << 20, bytes), *b = aligned_alloc(2u << 20, bytes), *c = aligned_alloc(2u << 20, bytes);
    madvise(a, bytes, MADV_HUGEPAGE); madvise(b, bytes, MADV_HUGEPAGE); madvise(c, bytes, MADV_HUGEPAGE);
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) { a[i] = 1.0; b[i] = 2.0 + (i & 7); c[i] = 0.5 + (i & 3); }
    double s = 0.5, *t = malloc(ntimes * sizeof(double));
    for (int k = 0; k < ntimes; k++) {
        double t0 = omp_get_wtime();
        #pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
        t[k] = omp_get_wtime() - t0;
    }
    qsort(t + 1, ntimes - 1, sizeof(double), cmp);  /* pass 0 is the warm-up */
    printf("triad_median %.6e\ntriad_best %.6e\n", 24.0 * n / t[1 + (ntimes - 1) / 2], 24.0 * n / t[1]);
    double ft[7]; int nth = 1; double sink = 0;
    for (int k = 0; k < 7; k++) {
        double t0 = omp_get_wtime();
        #pragma omp parallel reduction(+:sink)
        {
            #pragma omp single
            nth = omp_get_num_threads();
            vd acc[NACC], al, be;
            for (int l = 0; l < VL; l++) { al[l] = 0.999; be[l] = 0.001; }
            for (int j = 0; j < NACC; j++) for (int l = 0; l < VL; l++) acc[j][l] = 1.0 + j + l;
            for (long it = 0; it < iters; it++) {
                #pragma GCC unroll 16
                for (int j = 0; j < NACC; j++) acc[j] = acc[j] * al + be;
                __asm__ volatile("" : "+x"(al));  /* alpha stays opaque: no folding of two steps */
            }
            for (int j = 0; j < NACC; j++) for (int l = 0; l < VL; l++) sink += acc[j][l];
        }
        ft[k] = omp_get_wtime() - t0;
    }
    qsort(ft, 7, sizeof(double), cmp);
    double flops = 2.0 * NACC * VL * (double)iters * nth;
    printf("fma_median %.6e\nfma_best %.6e\nthreads %d\nsink %g\n", flops / ft[3], flops / ft[0], nth, sink);
    return 0;
}
"""


def build(workdir: Path) -> Path:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        sys.exit("no C compiler (cc/gcc) found")
    src = workdir / "yardstick.c"
    exe = workdir / "yardstick"
    src.write_text(YARDSTICK_C)
    subprocess.run([cc, "-O3", "-march=native", "-fopenmp", str(src), "-o", str(exe)], check=True)
    return exe


def run_yardstick(exe: Path, elements: int) -> dict[str, float]:
    out = subprocess.run([str(exe), str(elements), "20", "20000000"], check=True, capture_output=True, text=True,
                         # passive waiting: with spinning OpenMP threads, a busy neighbour on a 2-core machine
                         # stalls whole passes (the numba side uses its passive workqueue layer too)
                         env={**os.environ, "OMP_PROC_BIND": "spread", "OMP_PLACES": "cores",
                              "OMP_WAIT_POLICY": "passive"}).stdout
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def dgemm(n: int = 2048, repeats: int = 5) -> float:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    a @ b
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t0)
    return 2.0 * n**3 / statistics.median(times)


def one_round(exe: Path, ws: int, tmpdir: Path, k: int) -> dict[str, float]:
    """Yardstick, DGEMM, `roofline bench --quick` (cold numba cache), yardstick again."""
    ys1 = run_yardstick(exe, ws // 24)
    gemm = dgemm()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "ROOFLINE_CACHE_DIR": str(tmpdir / f"cache{k}"),
           "NUMBA_CACHE_DIR": str(tmpdir / f"numba-cache{k}")}  # cold numba cache: compile time included
    out_json = tmpdir / f"local{k}.json"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "roofline.cli", "bench", "--quick", "--out", str(out_json)],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    ys2 = run_yardstick(exe, ws // 24)
    dev = json.loads(out_json.read_text())
    fp64 = {c["unit"]: c["flops"] for c in dev["compute"] if c["precision"] == "fp64"}
    return {
        "ys_triad": (ys1["triad_median"] + ys2["triad_median"]) / 2,
        "ys_triad_best": max(ys1["triad_best"], ys2["triad_best"]),
        "ys_fma": (ys1["fma_median"] + ys2["fma_median"]) / 2,
        "dgemm": gemm,
        "dram": next(m["bandwidth"] for m in dev["memory"] if m["level"] == "DRAM"),
        "vector64": fp64.get("vector", 0.0),
        "matrix64": fp64.get("matrix", 0.0),
        "wall": wall,
        "compile": dev["metadata"].get("compile_seconds", float("nan")),
    }


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    threads = os.cpu_count() or 1
    ws = default_max_bytes(machine.sysfs_caches(threads), "quick")
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        exe = build(tmpdir)
        print(f"yardstick built; DRAM working set {ws / 2**20:.0f} MiB (triad: 3 arrays), {threads} threads, "
              f"{rounds} rounds", flush=True)
        results = [one_round(exe, ws, tmpdir, k) for k in range(rounds)]
    print()
    print(f"machine: {machine.cpu_model()}, {threads} threads")
    print(f"{'round':>5s} {'ys triad':>9s} {'(best)':>7s} {'bench DRAM':>10s} {'ys FMA':>8s} {'DGEMM':>7s} "
          f"{'bench v64':>9s} {'bench m64':>9s} {'wall s':>7s} {'compile s':>9s} {'DRAM ratio':>10s} {'fp64 ratio':>10s}")
    for k, r in enumerate(results):
        print(f"{k:5d} {r['ys_triad'] / 1e9:9.1f} {r['ys_triad_best'] / 1e9:7.1f} {r['dram'] / 1e9:10.1f} "
              f"{r['ys_fma'] / 1e9:8.1f} {r['dgemm'] / 1e9:7.1f} {r['vector64'] / 1e9:9.1f} {r['matrix64'] / 1e9:9.1f} "
              f"{r['wall']:7.1f} {r['compile']:9.2f} {r['dram'] / r['ys_triad']:10.2f} "
              f"{max(r['vector64'], r['matrix64']) / max(r['ys_fma'], r['dgemm']):10.2f}")

    def med(key: str) -> float:
        return statistics.median(r[key] for r in results)

    bench64 = statistics.median(max(r["vector64"], r["matrix64"]) for r in results)
    ref64 = statistics.median(max(r["ys_fma"], r["dgemm"]) for r in results)
    rows = [
        ("DRAM triad [GB/s]", med("dram") / 1e9, med("ys_triad") / 1e9, med("dram") / med("ys_triad"), ">= 0.95"),
        ("fp64 compute [GFLOP/s]", bench64 / 1e9, ref64 / 1e9, bench64 / ref64, ">= 0.95"),
        ("--quick wall [s] (cold numba cache)", max(r["wall"] for r in results), 60.0,
         max(r["wall"] for r in results) / 60.0, "<= 1.00"),
    ]
    head = f"{'figure (median over rounds; wall: max)':40s} {'bench':>10s} {'yardstick':>10s} {'ratio':>7s} {'target':>8s}  ok"
    print(head)
    print("-" * len(head))
    for name, got, ref, ratio, target in rows:
        ok = ratio >= 0.95 if target.startswith(">=") else ratio <= 1.0
        print(f"{name:40s} {got:10.2f} {ref:10.2f} {ratio:7.3f} {target:>8s}  {'yes' if ok else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
