"""Are `roofline bench --quick`'s roofs true bounds?  Side by side with a plain-C yardstick and BLAS (a script).

One run, on the same machine, ``ROUNDS`` times (default 3):

1. builds a C yardstick with the system compiler (``cc -O3 -march=native -fopenmp``) and checks its
   assembly (packed FMAs in each FMA loop, no scalar FMA): a STREAM triad (a = b + s*c, 24 B per
   element, OpenMP static schedule, first touch in parallel, huge pages as numpy asks for them) over
   the DRAM working set ``roofline bench --quick`` uses (its read and in-place kernels over the whole
   set, as the bench's long samples are: one triad array is a third of it), and register-resident FMA loops written
   with intrinsics for the ISA at hand (AVX-512: 24 zmm chains, AVX2: 12 ymm, NEON: 24 q), fp64 and fp32;
2. runs the yardstick, numpy DGEMM and SGEMM (n=2048, best of A @ B and A @ B.T), then
   ``roofline bench --quick`` in a fresh process with a cold numba cache (compile time and the
   roof audit included), then the yardstick again;
3. prints, as the median over rounds with the spread (min..max): fp64 and fp32 vector roof / max(C FMA
   (best of 7), GEMM of that precision) in [0.95, 1.10]; DRAM roof / the best C kernel of the same kinds
   (triad, read, in place; best pass, as STREAM reports) in [0.95, 1.10]; every audit kernel's efficiency
   before raising <= 1.05; --quick wall <= 60 s (the slowest round); each round's quality flags
   (``disturbed`` / ``inconsistent``, issue 32) and the load average;
4. then ``roofline calibrate --quick`` ``--calibrate N`` times (default 3) on the last round's device,
   counting the runs refused or flagged as noisy.

On a quiet machine every flag is a false positive: the table counts them.  ``--under-load`` first
measures the quiet rounds, then starts one busy process per core beside the bench (a Python spin loop
each) and measures ``--loaded-rounds`` rounds (default 2) and one ``calibrate --quick`` under that load,
and prints the second table: each roof against the quiet median (target: within [0.9, 1.1], or the run
flagged or refused with its cause), whether an ISA-ratio-breaking run was cached unflagged (target: never),
and calibrate's verdict (target: refused or flagged).

    python benchmarks/bench_ceilings.py [ROUNDS] [--calibrate N] [--under-load] [--loaded-rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from roofline.bench import consistency, machine  # noqa: E402
from roofline.bench.sweep import default_max_bytes  # noqa: E402

YARDSTICK_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
#include <sys/mman.h>
/* Register-resident FMA chains with intrinsics for the ISA at hand; the accumulating form
   acc = acc + al * be (vfmadd231 / fmla) needs no register copies. NACC chains cover latency x pipes. */
#if defined(__AVX512F__)
#include <immintrin.h>
#define NACC 24
typedef __m512d vd; typedef __m512 vf;
#define SETD _mm512_set1_pd
#define SETF _mm512_set1_ps
#define FMAD(a, b, c) _mm512_fmadd_pd(a, b, c)
#define FMAF(a, b, c) _mm512_fmadd_ps(a, b, c)
#define LD 8
#define LF 16
#define ISA "avx512"
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define NACC 12
typedef __m256d vd; typedef __m256 vf;
#define SETD _mm256_set1_pd
#define SETF _mm256_set1_ps
#define FMAD(a, b, c) _mm256_fmadd_pd(a, b, c)
#define FMAF(a, b, c) _mm256_fmadd_ps(a, b, c)
#define LD 4
#define LF 8
#define ISA "avx2"
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#define NACC 24
typedef float64x2_t vd; typedef float32x4_t vf;
#define SETD vdupq_n_f64
#define SETF vdupq_n_f32
#define FMAD(a, b, c) vfmaq_f64(c, a, b)
#define FMAF(a, b, c) vfmaq_f32(c, a, b)
#define LD 2
#define LF 4
#define ISA "neon"
#else
#error "no FMA ISA for the yardstick"
#endif
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static double sum_d(vd v) { double t[LD]; double s = 0; __builtin_memcpy(t, &v, sizeof t); for (int i = 0; i < LD; i++) s += t[i]; return s; }
static double sum_f(vf v) { float t[LF]; double s = 0; __builtin_memcpy(t, &v, sizeof t); for (int i = 0; i < LF; i++) s += t[i]; return s; }
__attribute__((noinline)) double fma64(long iters, double a, double b) {
    vd acc[NACC], al = SETD(a), be = SETD(b);
    for (int j = 0; j < NACC; j++) acc[j] = SETD(1.0 + j);
    for (long it = 0; it < iters; it++) {
        #pragma GCC unroll 32
        for (int j = 0; j < NACC; j++) acc[j] = FMAD(al, be, acc[j]);
    }
    double s = 0; for (int j = 0; j < NACC; j++) s += sum_d(acc[j]); return s;
}
__attribute__((noinline)) double fma32(long iters, float a, float b) {
    vf acc[NACC], al = SETF(a), be = SETF(b);
    for (int j = 0; j < NACC; j++) acc[j] = SETF(1.0f + j);
    for (long it = 0; it < iters; it++) {
        #pragma GCC unroll 32
        for (int j = 0; j < NACC; j++) acc[j] = FMAF(al, be, acc[j]);
    }
    double s = 0; for (int j = 0; j < NACC; j++) s += sum_f(acc[j]); return s;
}
static void fma_peak(int prec, long iters, double *median, double *best, int *nth_out) {
    double ft[7]; int nth = 1; volatile double sink = 0;
    for (int k = 0; k < 7; k++) {
        double t0 = omp_get_wtime(), part = 0;
        #pragma omp parallel reduction(+:part)
        {
            #pragma omp single
            nth = omp_get_num_threads();
            part += prec == 64 ? fma64(iters, 0.999, 0.001) : fma32(iters, 0.999f, 0.001f);
        }
        ft[k] = omp_get_wtime() - t0; sink += part;
    }
    qsort(ft, 7, sizeof(double), cmp);
    double flops = 2.0 * NACC * (prec == 64 ? LD : LF) * (double)iters * nth;
    *median = flops / ft[3]; *best = flops / ft[0]; *nth_out = nth;
}
int main(int argc, char **argv) {
    long n = atol(argv[1]); int ntimes = atoi(argv[2]); long iters = atol(argv[3]);
    /* 2 MiB-aligned and madvise(MADV_HUGEPAGE), as numpy does for large arrays: kernel vs kernel, same pages */
    size_t bytes = ((n * sizeof(double)) + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    /* one block holds a, b and c, so read and in place run over the whole working set (3n elements),
       as the bench's long read and in-place samples do: one array of n would be a third of it, and a
       third of 128 MiB partly fits a 32 MiB L3 */
    double *all = aligned_alloc(2u << 20, 3 * bytes);
    madvise(all, 3 * bytes, MADV_HUGEPAGE);
    double *a = all, *b = all + bytes / sizeof(double), *c = all + 2 * (bytes / sizeof(double));
    long n3 = 3 * (long)(bytes / sizeof(double));
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < n3; i++) all[i] = 0.5 + (i & 3);
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
    /* the other kernels a DRAM roof is the best of: read (sum, 8 B) and in place (a = a + s, 16 B) */
    double sum = 0;
    for (int k = 0; k < ntimes; k++) {
        double t0 = omp_get_wtime(), part = 0;
        #pragma omp parallel for schedule(static) reduction(+:part)
        for (long i = 0; i < n3; i++) part += all[i];
        t[k] = omp_get_wtime() - t0; sum += part;
    }
    qsort(t + 1, ntimes - 1, sizeof(double), cmp);
    printf("read_best %.6e\nread_sum %g\n", 8.0 * n3 / t[1], sum);
    for (int k = 0; k < ntimes; k++) {
        double t0 = omp_get_wtime();
        #pragma omp parallel for schedule(static)
        for (long i = 0; i < n3; i++) all[i] = all[i] + s;
        t[k] = omp_get_wtime() - t0;
    }
    qsort(t + 1, ntimes - 1, sizeof(double), cmp);
    printf("inplace_best %.6e\n", 16.0 * n3 / t[1]);
    double med, best; int nth;
    fma_peak(64, iters, &med, &best, &nth);
    printf("fma64_median %.6e\nfma64_best %.6e\n", med, best);
    fma_peak(32, iters, &med, &best, &nth);
    printf("fma32_median %.6e\nfma32_best %.6e\nthreads %d\nchains %d\n", med, best, nth, NACC);
    return 0;
}
"""


def build(workdir: Path) -> tuple[Path, dict[str, int]]:
    """Compile the yardstick; return it and the packed FMA count in each kernel's loop (checked, not assumed)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        sys.exit("no C compiler (cc/gcc) found")
    src = workdir / "yardstick.c"
    exe = workdir / "yardstick"
    src.write_text(YARDSTICK_C)
    flags = ["-O3", "-march=native", "-fopenmp"]
    subprocess.run([cc, *flags, str(src), "-o", str(exe)], check=True)
    subprocess.run([cc, *flags, "-S", str(src), "-o", str(workdir / "yardstick.s")], check=True)
    asm = (workdir / "yardstick.s").read_text()
    counts = {}
    for name in ("fma64", "fma32"):
        body = asm.split(f"\n{name}:", 1)[1].split(".cfi_endproc", 1)[0]
        counts[name] = len(re.findall(r"^\s*(vfmadd\w+p[sd]|fmla)\s", body, re.M))
        if re.search(r"vfmadd\w+s[sd]\s", body):
            sys.exit(f"the C yardstick's {name} has scalar FMAs: it is no yardstick on this ISA")
    return exe, counts


def run_yardstick(exe: Path, elements: int) -> dict[str, float]:
    out = subprocess.run([str(exe), str(elements), "20", "20000000"], check=True, capture_output=True, text=True,
                         # passive waiting: with spinning OpenMP threads, a busy neighbour on a 2-core machine
                         # stalls whole passes (the numba side uses its passive workqueue layer too)
                         env={**os.environ, "OMP_PROC_BIND": "spread", "OMP_PLACES": "cores",
                              "OMP_WAIT_POLICY": "passive"}).stdout
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def gemm(dtype: type, n: int = 2048, repeats: int = 5) -> float:
    """Best of A @ B and A @ B.T (the nn.Linear layout), median of ``repeats`` calls each."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)).astype(dtype), rng.standard_normal((n, n)).astype(dtype)
    best = 0.0
    for bb in (b, b.T):
        a @ bb
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            a @ bb
            times.append(time.perf_counter() - t0)
        best = max(best, 2.0 * n**3 / statistics.median(times))
    return best


def bench_run(tmpdir: Path, k: int) -> tuple[dict[str, Any], float, int]:
    """`roofline bench --quick` in a fresh process with a cold numba cache: (its device JSON, wall s, exit code)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "ROOFLINE_CACHE_DIR": str(tmpdir / f"cache{k}"),
           "NUMBA_CACHE_DIR": str(tmpdir / f"numba-cache{k}")}  # cold numba cache: compile time included
    out_json = tmpdir / f"local{k}.json"
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "roofline.cli", "bench", "--quick", "--out", str(out_json)],
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    return (json.loads(out_json.read_text()) if out_json.exists() else {}), wall, r.returncode


def roofs(dev: dict[str, Any]) -> dict[str, float]:
    """fp64/fp32 vector and every memory level of a device JSON, by name."""
    out = {f"{c['precision']} {c['unit']}": c["flops"] for c in dev.get("compute", []) if c["unit"] == "vector"}
    out.update({m["level"]: m["bandwidth"] for m in dev.get("memory", [])})
    return out


def breaks_isa(dev: dict[str, Any]) -> list[str]:
    """The ISA rules (roofline.bench.consistency) on a device JSON: what the run broke, if anything."""
    compute = {(c["unit"], c["precision"]): c["flops"] for c in dev.get("compute", [])}
    mem = dev.get("memory", [])
    levels = [(m["level"], m["bandwidth"], None if i == len(mem) - 1 else m.get("capacity")) for i, m in enumerate(mem)]
    return consistency.isa_findings(compute, set(dev.get("bench", {}).get("isa", []))) + consistency.memory_findings(levels)


def one_round(exe: Path, ws: int, tmpdir: Path, k: int) -> dict[str, Any]:
    """Yardstick, DGEMM, SGEMM, `roofline bench --quick` (cold numba cache, audit included), yardstick again."""
    load0 = os.getloadavg()[0]
    ys1 = run_yardstick(exe, ws // 24)
    dgemm, sgemm = gemm(np.float64), gemm(np.float32)
    dev, wall, code = bench_run(tmpdir, k)
    ys2 = run_yardstick(exe, ws // 24)
    roof = {(c["unit"], c["precision"]): c["flops"] for c in dev.get("compute", [])}
    q = dev.get("metadata", {}).get("quality", {})
    return {
        "ys_triad": max(ys1["triad_best"], ys2["triad_best"]),
        "ys_mem_best": max(ys[k] for ys in (ys1, ys2) for k in ("triad_best", "read_best", "inplace_best")),
        "ys_mem_kind": max((ys[k], k.split("_")[0]) for ys in (ys1, ys2) for k in ("triad_best", "read_best",
                                                                                  "inplace_best"))[1],
        "ys_fma64": max(ys1["fma64_best"], ys2["fma64_best"]),
        "ys_fma32": max(ys1["fma32_best"], ys2["fma32_best"]),
        "dgemm": dgemm, "sgemm": sgemm,
        "dram": next((m["bandwidth"] for m in dev.get("memory", []) if m["level"] == "DRAM"), float("nan")),
        "dram_method": next((m.get("provenance", {}).get("method", "") for m in dev.get("memory", [])
                             if m["level"] == "DRAM"), ""),
        "vector64": roof.get(("vector", "fp64"), 0.0), "vector32": roof.get(("vector", "fp32"), 0.0),
        "roofs": roofs(dev), "wall": wall, "code": code,
        "flags": q.get("flags", []), "causes": q.get("causes", []), "attempts": q.get("attempts", 0),
        "isa_broken": breaks_isa(dev),
        "audit": {a["kernel"]: a["efficiency"] for a in dev.get("bench", {}).get("audit", [])},
        "raised": [a["kernel"] for a in dev.get("bench", {}).get("audit", []) if a.get("raised")],
        "load": (load0 + os.getloadavg()[0]) / 2,
    }


def calibrate_runs(tmpdir: Path, k: int, n: int) -> list[tuple[int, str]]:
    """`roofline calibrate --quick` ``n`` times on round ``k``'s cached device: (exit code, verdict line) each."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "ROOFLINE_CACHE_DIR": str(tmpdir / f"cache{k}")}
    out = []
    for _ in range(n):
        r = subprocess.run([sys.executable, "-m", "roofline.cli", "calibrate", "--quick"], env=env,
                           capture_output=True, text=True)
        text = r.stdout + r.stderr
        if r.returncode:
            verdict = "refused: " + (r.stderr.strip().splitlines() or ["?"])[-1][:150]
        elif text.startswith("WARNING: NOISY"):
            verdict = "flagged: " + text.splitlines()[0][len("WARNING: NOISY calibration: "):][:150]
        else:
            # the report wraps at the terminal's width (render.fit): its first sentence read across lines
            flat = " ".join(text.split())
            m = re.search(r"calibrated on .*?median error [\d.]+%", flat)
            verdict = "clean: " + (m.group(0) if m else "")[:150]
        out.append((r.returncode, verdict))
    return out


def med_spread(values: list[float]) -> str:
    return f"{statistics.median(values):8.3f} ({min(values):.3f}..{max(values):.3f})"


def quiet_table(results: list[dict[str, Any]], cal: list[tuple[int, str]]) -> dict[str, float]:
    """The quiet table; returns the median roofs (the under-load reference)."""
    cols = ("ys triad", "ys memmax", "bench DRAM", "ys FMA64", "DGEMM", "bench v64", "ys FMA32", "SGEMM", "bench v32",
            "wall s", "load")
    print("round " + " ".join(f"{c:>10s}" for c in cols) + "  flags (attempts)")
    for k, r in enumerate(results):
        vals = (r["ys_triad"] / 1e9, r["ys_mem_best"] / 1e9, r["dram"] / 1e9, r["ys_fma64"] / 1e9, r["dgemm"] / 1e9,
                r["vector64"] / 1e9, r["ys_fma32"] / 1e9, r["sgemm"] / 1e9, r["vector32"] / 1e9, r["wall"], r["load"])
        print(f"{k:5d} " + " ".join(f"{v:10.1f}" for v in vals) + f"  {','.join(r['flags']) or 'none'} ({r['attempts']})")
    rows: list[tuple[str, list[float], str, Any]] = [
        ("fp64 vector roof / max(C FMA, DGEMM)", [r["vector64"] / max(r["ys_fma64"], r["dgemm"]) for r in results],
         "0.95..1.10", lambda x: 0.95 <= x <= 1.10),
        ("fp32 vector roof / max(C FMA, SGEMM)", [r["vector32"] / max(r["ys_fma32"], r["sgemm"]) for r in results],
         "0.95..1.10", lambda x: 0.95 <= x <= 1.10),
        ("DRAM roof / best C kernel of the same kinds (triad, read, in place)",
         [r["dram"] / r["ys_mem_best"] for r in results], "0.95..1.10", lambda x: 0.95 <= x <= 1.10),
        ("  (DRAM roof / C triad, best pass)", [r["dram"] / r["ys_triad"] for r in results], "", None),
        ("--quick wall [s] (cold numba cache; with re-measuring)", [r["wall"] for r in results], "<= 60",
         lambda x: x <= 60),
    ]
    names = list(dict.fromkeys(n for r in results for n in r["audit"]))
    for name in names:
        rows.append((f"audit: {name}", [r["audit"][name] for r in results if name in r["audit"]], "<= 1.05",
                     lambda x: x <= 1.05))
    print()
    head = f"{'figure (median over rounds, min..max)':72s} {'value (spread)':>24s} {'target':>11s}  ok"
    print(head)
    print("-" * len(head))
    for name, vals, target, ok in rows:
        value = statistics.median(vals)
        print(f"{name[:72]:72s} {med_spread(vals):>24s} {target:>11s}  {'' if ok is None else ('yes' if ok(value) else 'NO')}")
    flagged = [k for k, r in enumerate(results) if r["flags"]]
    noisy = [c for c in cal if not c[1].startswith("clean")]
    print(f"{'bench --quick runs flagged (false positives if the machine was quiet)':72s} "
          f"{len(flagged):>10d} of {len(results):<11d} {'0':>11s}  {'yes' if not flagged else 'NO'}")
    print(f"{'calibrate --quick runs refused or flagged (false positives if quiet)':72s} "
          f"{len(noisy):>10d} of {len(cal):<11d} {'0':>11s}  {'yes' if not noisy else 'NO'}")
    for k in flagged:
        print(f"  round {k}: {results[k]['flags']}: {'; '.join(results[k]['causes'])[:300]}")
    for i, (_, verdict) in enumerate(cal):
        print(f"  calibrate {i}: {verdict}")
    print("DRAM roof's method per round: " + " | ".join(r["dram_method"][:60] for r in results))
    print("best C memory kernel per round: " + ", ".join(r["ys_mem_kind"] for r in results))
    print(f"roofs raised by the audit in any round: {', '.join(sorted({k for r in results for k in r['raised']})) or 'none'}")
    loads = ", ".join(f"{r['load']:.2f}" for r in results)
    print(f"load average (1 min) during the rounds: {loads}")
    keys = set.intersection(*(set(r["roofs"]) for r in results)) if results else set()
    return {key: statistics.median(r["roofs"][key] for r in results) for key in keys}


def loaded_table(quiet: dict[str, float], results: list[dict[str, Any]], cal: list[tuple[int, str]]) -> None:
    """Under load: each roof / the quiet median, the verdict, ISA-breaking runs cached unflagged."""
    keys = sorted(quiet)
    print("round " + " ".join(f"{k:>12s}" for k in keys) + "  flags (attempts)   in [0.9, 1.1] or flagged")
    bad = 0
    for k, r in enumerate(results):
        ratios = [r["roofs"].get(key, float("nan")) / quiet[key] for key in keys]
        inside = all(0.9 <= x <= 1.1 for x in ratios)
        ok = inside or bool(r["flags"]) or r["code"] == 2
        bad += not ok
        print(f"{k:5d} " + " ".join(f"{x:12.3f}" for x in ratios) + f"  {','.join(r['flags']) or 'none'} "
              f"({r['attempts']})  {'yes' if ok else 'NO'}")
        if r["flags"]:
            print(f"      causes: {'; '.join(r['causes'])[:400]}")
    unflagged = [k for k, r in enumerate(results) if r["isa_broken"] and "inconsistent" not in r["flags"]]
    print(f"runs outside [0.9, 1.1] of quiet and not flagged: {bad} (target 0)")
    print(f"runs breaking the ISA ratios cached without 'inconsistent': {len(unflagged)} (target 0)")
    for i, (code, verdict) in enumerate(cal):
        print(f"calibrate --quick under load {i}: exit {code}, {verdict}  "
              f"({'yes' if not verdict.startswith('clean') else 'NO'}: target refused or flagged)")


def progress(r: dict[str, Any], k: int) -> dict[str, Any]:
    """One line per finished round (a long run on a shared machine shows where it is)."""
    print(f"round {k} done: DRAM {r['dram'] / 1e9:.1f} GB/s, best C {r['ys_mem_best'] / 1e9:.1f}, v64 "
          f"{r['vector64'] / 1e9:.1f}, v32 {r['vector32'] / 1e9:.1f}, wall {r['wall']:.0f} s, load {r['load']:.2f}, "
          f"flags {r['flags']}", flush=True)
    return r


def busy(n: int) -> list[subprocess.Popen[bytes]]:
    """One spinning Python process per core."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("rounds", nargs="?", type=int, default=5)
    ap.add_argument("--calibrate", type=int, default=3)
    ap.add_argument("--under-load", action="store_true")
    ap.add_argument("--loaded-rounds", type=int, default=2)
    args = ap.parse_args()
    threads = os.cpu_count() or 1
    ws = default_max_bytes(machine.sysfs_caches(threads), "quick")
    flags = sorted(machine.cpu_flags() & {"avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "asimd", "sve"})
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        exe, fmas = build(tmpdir)
        print(f"yardstick built ({', '.join(f'{k}: {v} packed FMAs in its loop' for k, v in fmas.items())}); "
              f"DRAM working set {ws / 2**20:.0f} MiB (triad: 3 arrays of a third; read and in place: the whole set), {threads} threads, {args.rounds} rounds",
              flush=True)
        results = [progress(one_round(exe, ws, tmpdir, k), k) for k in range(args.rounds)]
        cal = calibrate_runs(tmpdir, args.rounds - 1, args.calibrate)
        print(f"calibrate: {cal}", flush=True)
        print(f"\nQUIET table. machine: {machine.cpu_model()}, {threads} threads, flags {' '.join(flags)}")
        quiet = quiet_table(results, cal)
        if not args.under_load:
            return 0
        spinners = busy(threads)
        try:
            loaded = [progress(one_round(exe, ws, tmpdir, 100 + k), 100 + k) for k in range(args.loaded_rounds)]
            lcal = calibrate_runs(tmpdir, 100, 1)
        finally:
            for p in spinners:
                p.kill()
                p.wait()
        print(f"\nUNDER LOAD table ({threads} busy processes beside the bench). machine: {machine.cpu_model()}, "
              f"{threads} threads, flags {' '.join(flags)}")
        loaded_table(quiet, loaded, lcal)
    return 0


if __name__ == "__main__":
    sys.exit(main())
