"""Measure this CPU's hierarchical roofline: bandwidth per level, FMA peaks, GEMM ceilings, ERT curve.

A roof is the best that any of our kernels achieves at that (unit, precision,
level): every method below contributes a figure, the roof is the largest, and
every method's figure is kept in the ceiling's provenance (``methods``).  Each
figure is the best of N samples (as STREAM reports its best time); the spread
(interquartile range) is reported beside it.  Methods:

- **Bandwidth sweep**: read (sum), write (fill), copy and triad kernels
  (numba, one contiguous chunk per thread, repeated inside the parallel
  region) over working sets from ``min_bytes`` to ``max_bytes`` in geometric
  steps, on all threads and on one.  Bytes are counted as STREAM does: per
  fp64 element read 8, write 8, copy 16, triad 24 (``a = b + s*c``: two reads,
  one write); write-allocate traffic is not counted.  The *working set* is the
  total size of the arrays a kernel touches.  Memory levels come from the
  plateaus of the all-thread triad curve (:mod:`roofline.bench.levels`); a
  level's roof is the best of read, copy and triad on its plateau; main
  memory's, the best of long read/copy/triad samples at the largest working
  set and an in-place update x = x + s (16 B per element, no write-allocate).
- **FMA peak**: explicit vector FMA chains in LLVM IR (:mod:`roofline.bench.fma`),
  shaped for the ISA (AVX-512, AVX2, NEON), one OS thread pinned per CPU.
- **GEMM**: numpy's BLAS (fp64, fp32) in both layouts, ``A @ B`` and
  ``x @ W.T`` (the nn.Linear layout), torch fp32 ``linear``, and torch
  bf16/fp16 only where the CPU computes them natively (:mod:`roofline.bench.spec`),
  over growing sizes.  A CPU has no matrix unit: its GEMMs run on the vector
  units, so each GEMM is also a method of the vector roof.
- **ERT curve**: an in-place kernel doing 1, 2, 4, ... 1024 FLOPs per element
  (16 B moved per element) over a DRAM-sized array, compared with
  ``min(peak, AI x DRAM bandwidth)``; its top is a method of the fp64 roof.
- **Audit** (:mod:`roofline.bench.audit`): real kernels judged against the
  finished roofs; one that beats its roof beyond its own spread raises it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import replace
from types import ModuleType
from typing import Any

import numpy as np

from roofline.bench import contention, fma, machine, spec
from roofline.bench.gemm import blas_limiter, time_gemms, torch_threads
from roofline.bench.sampling import (
    ROOF_STATISTIC,
    BenchConfig,
    Progress,
    Stages,
    Stat,
    Timed,
    best_of,
    check_threads,
    measure_rate,
    stat_provenance,
    warn_spread,
)
from roofline.bench.sweep import (
    DRAM_SLICES,
    check_memory,
    default_max_bytes,
    ert_curve,
    long_samples,
    memory_levels,
    merge_slices,
    run_sweep,
    sweep_facts,
    sweep_sizes,
    threading_layer,
)
from roofline.core.errors import RooflineError, require
from roofline.hardware.bench_facts import BENCH_VERSION, BenchFacts, CacheInfo, ErtCurve, SpecRoof
from roofline.hardware.device import ComputeCeiling, Device, MemoryCeiling


class _Kernels:
    """The compiled numba kernels, loaded once (compiling or reading numba's cache).

    Loading sets process-wide OpenMP and numba settings (and libgomp then pins the calling
    thread to one CPU): :func:`roofline.bench.run_bench` measures in a child process
    (:mod:`roofline.bench._worker`) so they never reach the caller's.
    """

    _loaded: tuple[ModuleType, ModuleType, float] | None = None

    @classmethod
    def get(cls) -> tuple[ModuleType, ModuleType, float]:
        numba = require("numba", "bench")
        if cls._loaded is None:
            # OpenMP is the fastest layer here (its team is reused, ~30 % more DRAM bandwidth than numba's
            # workqueue on a 2-core VM), but spinning OpenMP workers can stall a parallel region for a whole
            # scheduler tick when another process wants the core (16 ms seen on a 2-core VM): ask for
            # passive waiting before libgomp starts, and one thread per core, pinned (as STREAM is run):
            # an unpinned worker that migrates mid-sample cost up to 30 % of DRAM bandwidth here.
            # A user's own settings win.
            if "NUMBA_THREADING_LAYER" not in os.environ:
                os.environ.setdefault("OMP_WAIT_POLICY", "passive")
                os.environ.setdefault("OMP_PROC_BIND", "spread")
                os.environ.setdefault("OMP_PLACES", "cores")
                numba.config.THREADING_LAYER_PRIORITY = ["omp", "tbb", "workqueue"]
                numba.config.THREADING_LAYER = "default"
            t0 = time.perf_counter()
            from roofline.bench import _kernels as k

            x = np.ones(4 * k.ERT_BLOCK)
            out = np.zeros(1)
            numba.set_num_threads(1)
            for kind in range(6):
                k.stream(kind, x, x, x, 0.5, 1, 1, 1, out)
            fma.compiled_shape("fp64"), fma.compiled_shape("fp32")  # JIT-compile the LLVM FMA kernels
            cls._loaded = (numba, k, time.perf_counter() - t0)
        return cls._loaded


def run_cpu_bench(config: BenchConfig | None = None, progress: Progress | None = None) -> Device:
    """Measure this machine and return it as a :class:`~roofline.hardware.device.Device` (kind ``cpu``).

    >>> from roofline.bench.cpu import BenchConfig, run_cpu_bench          # doctest: +SKIP
    >>> dev = run_cpu_bench(BenchConfig.quick())                           # doctest: +SKIP
    >>> dev.main_memory.level, dev.main_memory.provenance.kind            # doctest: +SKIP
    ('DRAM', 'measured')
    """
    cfg = config or BenchConfig.quick()
    threads = check_threads(cfg.threads or None)
    cfg = replace(cfg, threads=threads)
    report = progress or (lambda frac, what: None)
    wall0 = time.perf_counter()
    contention.TALLY.reset()
    before = contention.snapshot()
    warnings: list[str] = []
    caches, max_bytes, shortage = _working_sets(cfg, threads, warnings)
    spec_roofs, flags = spec.this_cpu_spec(threads)
    native = spec.native_precisions(flags)

    report(0.0, "compiling kernels (numba, LLVM)")
    numba, k, compile_seconds = _Kernels.get()
    if threads > numba.config.NUMBA_NUM_THREADS:
        raise RooflineError(f"--threads: {threads} is more than NUMBA_NUM_THREADS={numba.config.NUMBA_NUM_THREADS}")
    date = machine.now()
    sizes = sweep_sizes(cfg.min_bytes, max_bytes, cfg.points_per_octave)
    thread_counts = [threads] + ([1] if cfg.single_thread and threads > 1 else [])
    # progress: rough share of wall time per stage
    stage = Stages(report, {"sweep": 0.45, "fma": 0.05, "ert": 0.1, "gemm": 0.2, "audit": 0.2})
    rng = np.random.default_rng(12345)
    curves, long_runs = run_sweep(numba, k, sizes, thread_counts, threads, cfg, rng, stage)
    peaks = {(prec, t): _fma_peak(prec, t, cfg) for t in thread_counts for prec in ("fp64", "fp32")}
    stage.done("fma")
    ert, ert_stats = ert_curve(k, max_bytes, threads, cfg, rng, lambda f, what: stage.at("ert", f, what))
    stage.done("ert")
    gemms = time_gemms(cfg, threads, native, warnings, lambda f, what: stage.at("gemm", f, what))
    numba.set_num_threads(threads)
    long_runs, dram_slices = _later_dram_slices(k, sizes[-1], threads, cfg, rng, long_runs, warnings)
    memory, level_info = memory_levels(sizes, curves, threads, caches, cfg, date, shortage, warnings, long_runs,
                                       dram_slices)
    compute = _compute_ceilings(peaks, (ert_stats, ert.working_set_bytes), gemms, threads, cfg, date, warnings)
    ert = _ert_against_roofs(ert, compute, memory, warnings)
    warnings += _precision_warnings(native)
    meta = _metadata(cfg, threads, numba, compile_seconds, level_info, shortage)
    facts = BenchFacts(version=BENCH_VERSION, machine=machine.fingerprint(), isa=tuple(meta["isa"]),
                       native=native, spec=spec_roofs, threads=threads, sweep=sweep_facts(sizes, curves), ert=ert,
                       caches=tuple(CacheInfo(level, c["size"], c.get("instances", 1), c["capacity"])
                                    for level, c in sorted(caches.items())))
    device = Device(name=f"local: {meta['cpu_model']} ({threads} thread{'s' if threads > 1 else ''})", vendor="",
                    kind="cpu", aliases=("local",), compute=tuple(compute), memory=tuple(memory), metadata=meta,
                    bench=facts)
    if cfg.audit:
        device, messages = audit_device(device, threads, full=cfg.mode == "full",
                                        progress=lambda f, what: stage.at("audit", f, what))
        warnings += messages
    meta.update(_quality(device, spec_roofs, flags, threads, before, warnings))
    meta["warnings"] = warnings
    meta["wall_seconds"] = round(time.perf_counter() - wall0, 2)
    report(1.0, "done")
    return replace(device, metadata=meta)


def _later_dram_slices(k: ModuleType, ws: int, threads: int, cfg: BenchConfig, rng: np.random.Generator,
                       first: dict[str, Stat], warnings: list[str]) -> tuple[dict[str, Stat], list[float]]:
    """Main memory's long samples again, late in the run (:data:`roofline.bench.sweep.DRAM_SLICES`), over a
    fresh working set of the sweep's largest size (the sweep's buffer is gone: one DRAM-sized array at a time,
    as :func:`roofline.bench.sweep.check_memory` allows), merged with the first slice."""
    slices = [first]
    for _ in range(DRAM_SLICES - 1):
        buf = rng.random(ws // 8)
        buf += 0.5
        slices.append(long_samples(k, buf, threads, cfg))
        del buf
    return merge_slices(slices, warnings)


def _working_sets(cfg: BenchConfig, threads: int, warnings: list[str]) -> tuple[dict[str, dict[str, Any]], int,
                                                                                 dict[str, Any] | None]:
    """(the caches sysfs reports, the sweep's largest working set, the memory shortage that shrank it, if any)."""
    caches = machine.sysfs_caches(threads)
    max_bytes = cfg.max_bytes or default_max_bytes(caches, cfg.mode)
    shortage = check_memory(max_bytes, cfg.min_bytes)
    if shortage:
        max_bytes = shortage["used_bytes"]
        warnings.append(shortage["note"])
    return caches, max_bytes, shortage


def _ert_against_roofs(ert: ErtCurve, compute: list[ComputeCeiling], memory: list[MemoryCeiling],
                       warnings: list[str]) -> ErtCurve:
    """The ERT curve with the fitted roofline's prediction at each intensity, min(fp64 peak, AI x DRAM); a
    deviation beyond 25 % is warned about."""
    dram_bw = next(m.bandwidth for m in memory if m.level == "DRAM")
    fp64_vector = next(c.flops for c in compute if c.key == ("vector", "fp64"))
    ert = replace(ert, model_flops=tuple(min(fp64_vector, a * dram_bw) for a in ert.intensity))
    worst = ert.deviation[ert.worst]
    if abs(worst) > 0.25:
        warnings.append(f"ERT curve deviates from min(peak, AI x DRAM bandwidth) by up to "
                        f"{worst:+.0%} (at {ert.intensity[ert.worst]:.3g} FLOP/B); see bench.ert")
    return ert


def _precision_warnings(native: tuple[str, ...]) -> list[str]:
    """The 16-bit precisions this CPU lacks (the spec check is :func:`_quality`'s)."""
    warnings: list[str] = []
    missing = [p for p in ("bf16", "fp16") if p not in native]
    if missing:
        warnings.append(f"no native {'/'.join(missing)} arithmetic on this CPU (its flags lack "
                        f"{', '.join(n for p in missing for n in spec.NATIVE_FLAGS[p])}): no {'/'.join(missing)} "
                        "roof is published, so such ops fall back to the fp32 roofs (recorded on each op)")
    return warnings


def _quality(device: Device, spec_roofs: tuple[SpecRoof, ...], flags: set[str], threads: int,
             before: contention.Snapshot, warnings: list[str]) -> dict[str, Any]:
    """The run's quality record (:mod:`roofline.bench.quality`) and spec clock, from the finished roofs:
    contention over the whole run, the ISA rules, the spec check (its warnings go to ``warnings``)."""
    from roofline.bench import consistency, quality

    cores = os.cpu_count() or 1
    disturbed = contention.window_causes(before, contention.snapshot(), threads, cores) + contention.TALLY.causes()
    inconsistent = consistency.device_findings(device, flags)
    vector = {c.precision: c.flops for c in device.compute if c.unit == "vector"}
    spec_warnings, spec_causes, clock = spec.judge_spec(vector, spec_roofs, spec.this_cpu_clocks())
    warnings += spec_warnings
    notes = [w for w in spec_warnings if "unverified" in w]
    return {"quality": quality.assess(disturbed, inconsistent + spec_causes, notes,
                                      samples=contention.TALLY.to_dict()),
            "spec_clock": clock}


def _metadata(cfg: BenchConfig, threads: int, numba: ModuleType, compile_seconds: float, level_info: dict[str, Any],
              shortage: dict[str, Any] | None) -> dict[str, Any]:
    """The machine and the settings measured under (OpenMP, numba), for display; the figures are in the bench facts."""
    meta = machine.machine_metadata()
    meta.update({
        "mode": cfg.mode,
        "numba_threading_layer": threading_layer(numba),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
        "omp_proc_bind": f"{os.environ.get('OMP_PROC_BIND', '')} {os.environ.get('OMP_PLACES', '')}".strip(),
        "compile_seconds": round(compile_seconds, 3),
        "levels": level_info,
    })
    if shortage:
        meta["memory_shortage"] = shortage
    return meta


def audit_device(device: Device, threads: int, *, full: bool = False,
                 progress: Progress | None = None) -> tuple[Device, list[str]]:
    """:func:`roofline.bench.audit.run_audit` with this module's timing (best, median, quartiles of calls)."""
    from roofline.bench import audit

    limiter, _ = blas_limiter(threads)

    def time_call(call: Callable[[], Any]) -> tuple[float, float, float, float, int]:
        def reps_call(reps: int) -> None:
            with limiter(), torch_threads(threads):
                for _ in range(reps):
                    call()

        stat, reps = measure_rate(reps_call, 1.0, 7 if full else 5, 0.02)
        # rates are calls per second: the fast quartile of times is 1 / q3 of rates
        return 1.0 / stat.median, 1.0 / stat.q3, 1.0 / stat.q1, 1.0 / stat.best, len(stat.samples) * reps

    return audit.run_audit(device, time_call, full=full, progress=progress)


def _fma_peak(prec: str, threads: int, cfg: BenchConfig) -> Stat:
    """The register-resident FMA kernel (:mod:`roofline.bench.fma`) on ``threads`` threads."""
    shape = fma.compiled_shape(prec)
    iters = 10_000
    # more samples than elsewhere: each is short, and a ceiling must not hang on one busy moment
    stat, _ = measure_rate(lambda reps: Timed(fma.run_fma_peak(prec, reps * iters, threads)),
                           float(shape.flops_per_iteration * iters * threads), max(15, 2 * cfg.repeats),
                           cfg.fma_sample_seconds, threads, f"{prec} FMA")
    return stat


def _compute_ceilings(peaks: dict[tuple[str, int], Stat], ert: tuple[list[Stat], float],
                      gemms: dict[tuple[str, str], tuple[Stat, dict[str, Any], str]], threads: int,
                      cfg: BenchConfig, date: str, warnings: list[str]) -> list[ComputeCeiling]:
    """Each compute roof is the best of every method that runs on that (unit, precision).

    Vector: the FMA kernel, the ERT curve's top (fp64), and every GEMM of that precision (a CPU
    has no matrix unit: its GEMMs run on the vector units).  Matrix: every GEMM of that precision
    and, for fp64/fp32, the vector roof's methods too: a GEMM runs on those same FMA units, so a
    larger or better-tuned GEMM than the bench's can reach the FMA peak (bench version 3; before,
    the matrix roof was the best measured GEMM, which a 256x4096x4096 torch addmm beat).
    """
    by_prec: dict[str, list[tuple[str, Stat, dict[str, Any]]]] = {}
    for (prec, _layout), (stat, details, method) in gemms.items():
        by_prec.setdefault(prec, []).append((method, stat, details))
    out: list[ComputeCeiling] = []
    vector_methods: dict[str, list[tuple[str, Stat, dict[str, Any]]]] = {}
    for prec in ("fp64", "fp32"):
        shape = fma.compiled_shape(prec)
        methods = [(f"LLVM FMA kernel ({shape.chains} x {shape.lanes}-lane {prec} chains per thread, "
                    f"{shape.bits}-bit)", peaks[(prec, threads)],
                    {"threads": threads, "chains_per_thread": shape.chains, "lanes": shape.lanes,
                     "vector_bits": shape.bits, "working_set_bytes": 0,
                     **({"single_thread_flops": peaks[(prec, 1)].best} if (prec, 1) in peaks and threads > 1 else {})})]
        ert_stats, ert_bytes = ert
        if prec == "fp64" and ert_stats:
            top = max(ert_stats, key=lambda s: s.best)
            methods.append(("numba ERT in-place FMA curve (its top)", top,
                            {"threads": threads, "working_set_bytes": ert_bytes}))
        vector_methods[prec] = methods
        methods = methods + by_prec.get(prec, [])
        out.append(_ceiling("vector", prec, methods, cfg, date, warnings))
    for prec, methods in by_prec.items():
        out.append(_ceiling("matrix", prec, methods + vector_methods.get(prec, []), cfg, date, warnings))
    return out


def _ceiling(unit: str, prec: str, methods: list[tuple[str, Stat, dict[str, Any]]], cfg: BenchConfig,
             date: str, warnings: list[str]) -> ComputeCeiling:
    value, best, stat, details = best_of(methods, ROOF_STATISTIC)
    note = (f"the best of {len(methods)} method(s) (every method's figure in 'methods'); "
            f"each figure is {ROOF_STATISTIC.format(n='N')}, as STREAM reports; 1 FMA = 2 FLOPs")
    warn_spread(f"{prec} {unit} roof ({best.method})", stat, warnings)
    return ComputeCeiling(unit, prec, value, replace(stat_provenance(stat, cfg, date, best.method, details, note=note),
                                                     methods=best.methods))


# -- pieces ---------------------------------------------------------------------------


