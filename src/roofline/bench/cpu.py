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

import functools
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from roofline.bench import fma, machine, spec
from roofline.bench import levels as _levels
from roofline.bench_facts import BENCH_VERSION, BenchFacts, CacheInfo, ErtCurve, SpecRoof, Sweep, SweepCurve
from roofline.ceilings import MethodFigure
from roofline.device import ComputeCeiling, Device, MemoryCeiling, Provenance
from roofline.errors import RooflineError, require
from roofline.stats import SPREAD_WARN, quartiles, relative_spread
from roofline.units import format_bytes

KiB = 1024
MiB = 1024 * 1024
#: STREAM byte counting per fp64 element, and arrays per kernel
KERNELS: dict[str, tuple[int, int]] = {"read": (8, 1), "write": (8, 1), "copy": (16, 2), "triad": (24, 3)}
STREAM_NOTE = ("STREAM byte counting per fp64 element: read 8 B, write 8 B, copy 16 B, triad 24 B "
               "(a[i] = b[i] + s*c[i]: two reads, one write); write-allocate traffic is not counted")
ERT_BYTES_PER_ELEMENT = 16  # in-place x[i] = f(x[i]): one 8-B read, one 8-B write
#: the kernels whose bandwidth is a memory roof's method (write alone is shown, not used: real ops also read)
LONG_KERNELS = ("read", "copy", "triad")
#: main memory's roof also counts an in-place update, x = x + s: 16 B per element (no write-allocate traffic)
IN_PLACE = "in-place"
ROOF_STATISTIC = "the best of {n} samples"

Progress = Callable[[float, str], None]  # (fraction done 0..1, what is running)


@dataclass(frozen=True)
class BenchConfig:
    """How hard to measure.  :meth:`quick` (default, ~1 minute on 2 cores) or :meth:`full`.

    Tests shrink everything (``BenchConfig.quick(max_bytes=1 << 20, repeats=3, ...)``).
    """

    mode: str = "quick"
    threads: int = 0  # 0: every CPU
    min_bytes: int = 16 * KiB
    max_bytes: int = 0  # 0: 4x the last-level cache (8x with full), at least 64 MiB
    points_per_octave: int = 3
    repeats: int = 5
    min_sample_seconds: float = 0.002
    single_thread: bool = True
    gemm_sizes: tuple[int, ...] = (1024, 2048)
    gemm_call_limit_seconds: float = 0.5  # stop growing a GEMM once one call takes this long
    torch_gemm: bool = True
    ert_flops: tuple[int, ...] = tuple(2**k for k in range(11))  # 1 .. 1024 FLOPs per element
    fma_sample_seconds: float = 0.02
    audit: bool = True  # run the roof audit at the end

    @classmethod
    def quick(cls, **overrides: Any) -> BenchConfig:
        return replace(cls(), **overrides)

    @classmethod
    def full(cls, **overrides: Any) -> BenchConfig:
        base = cls(mode="full", points_per_octave=6, repeats=11, min_sample_seconds=0.01,
                   gemm_sizes=(512, 1024, 2048, 4096), gemm_call_limit_seconds=2.0, fma_sample_seconds=0.05)
        return replace(base, **overrides)


@dataclass
class Stat:
    """Median and interquartile range of per-sample rates."""

    median: float
    q1: float
    q3: float
    samples: list[float] = field(default_factory=list)

    @property
    def best(self) -> float:
        """The fastest sample (a roof's figure: STREAM reports the best of its samples)."""
        return max(self.samples) if self.samples else self.median

    @property
    def rel_spread(self) -> float:
        return relative_spread(self.q1, self.q3, self.median)

    @classmethod
    def of(cls, rates: Sequence[float]) -> Stat:
        r = np.asarray(rates, dtype=float)
        q1, med, q3 = quartiles(r)
        return cls(float(med), float(q1), float(q3), [float(x) for x in r])


def check_threads(threads: int | None) -> int:
    """``threads`` validated against this machine (None or 0 mean every CPU)."""
    ncpu = os.cpu_count() or 1
    if threads is None:
        return ncpu
    if threads < 1 or threads > ncpu:
        raise RooflineError(f"--threads: {threads} is out of range; this machine has {ncpu} CPU(s), use 1..{ncpu}")
    return threads


class Timed(float):
    """Seconds a call measured itself (e.g. inside its threads); :func:`_timeit` takes them as they are."""


def _timeit(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    result = fn()
    return float(result) if isinstance(result, Timed) else time.perf_counter() - t0


def measure_rate(call: Callable[[int], Any], work_per_rep: float, repeats: int, min_seconds: float) -> tuple[Stat, int]:
    """Rates (work per second) of ``call(reps)``; reps chosen so one sample takes >= ``min_seconds``.

    The first call warms up (page faults, caches, lazy compilation); then reps grow until a call
    lasts ``min_seconds``.
    """
    call(1)
    reps = 1
    for _ in range(40):  # grow until one sample is long enough (call overhead hides in short ones)
        t = _timeit(functools.partial(call, reps))
        if t >= min_seconds:
            break
        reps = max(reps * 2, math.ceil(reps * 1.2 * min_seconds / max(t, 1e-9)))
    rates = [work_per_rep * reps / max(_timeit(lambda: call(reps)), 1e-9) for _ in range(repeats)]
    return Stat.of(rates), reps


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


def sweep_sizes(min_bytes: int, max_bytes: int, points_per_octave: int) -> list[int]:
    """Geometric working sets from min to max (inclusive), rounded to 4 KiB, deduplicated."""
    n = max(2, int(round(math.log2(max_bytes / min_bytes) * points_per_octave)) + 1)
    sizes = np.geomspace(min_bytes, max_bytes, n)
    out: list[int] = []
    for s in sizes:
        v = max(4 * KiB, int(round(s / (4 * KiB))) * 4 * KiB)
        if not out or v > out[-1]:
            out.append(v)
    return out


def default_max_bytes(caches: dict[str, dict[str, Any]], mode: str) -> int:
    """4x (quick) or 8x (full) the last-level cache, at least 64 MiB."""
    llc = max((c["capacity"] for c in caches.values()), default=0)
    return int(max(64 * MiB, (4 if mode == "quick" else 8) * llc))


def run_cpu_bench(config: BenchConfig | None = None, progress: Progress | None = None) -> Device:
    """Measure this machine and return it as a :class:`~roofline.device.Device` (kind ``cpu``).

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
    warnings: list[str] = []
    caches = machine.sysfs_caches(threads)
    max_bytes = cfg.max_bytes or default_max_bytes(caches, cfg.mode)
    shortage = _check_memory(max_bytes, cfg.min_bytes)
    if shortage:
        max_bytes = shortage["used_bytes"]
        warnings.append(shortage["note"])
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
    stage = _Stages(report, {"sweep": 0.45, "fma": 0.05, "ert": 0.1, "gemm": 0.2, "audit": 0.2})

    rng = np.random.default_rng(12345)
    curves, long_runs = _sweep(numba, k, sizes, thread_counts, threads, cfg, rng, stage)
    peaks = {(prec, t): _fma_peak(prec, t, cfg) for t in thread_counts for prec in ("fp64", "fp32")}
    stage.done("fma")
    memory, level_info = _memory_levels(sizes, curves, threads, caches, cfg, date, shortage, warnings, long_runs)
    ert, ert_stats = _ert_curve(k, max_bytes, threads, cfg, rng, lambda f, what: stage.at("ert", f, what))
    stage.done("ert")
    gemms = _gemms(cfg, threads, native, warnings, lambda f, what: stage.at("gemm", f, what))
    numba.set_num_threads(threads)
    compute = _compute_ceilings(peaks, (ert_stats, ert.working_set_bytes), gemms, threads, cfg, date, warnings)
    dram_bw = next(m.bandwidth for m in memory if m.level == "DRAM")
    fp64_vector = next(c.flops for c in compute if c.key == ("vector", "fp64"))
    ert = replace(ert, model_flops=tuple(min(fp64_vector, a * dram_bw) for a in ert.intensity))
    warnings += _precision_warnings(compute, spec_roofs, native)
    meta = _metadata(cfg, threads, numba, compile_seconds, level_info, shortage)
    worst = ert.deviation[ert.worst]
    if abs(worst) > 0.25:
        warnings.append(f"ERT curve deviates from min(peak, AI x DRAM bandwidth) by up to "
                        f"{worst:+.0%} (at {ert.intensity[ert.worst]:.3g} FLOP/B); see bench.ert")
    name = f"local: {meta['cpu_model']} ({threads} thread{'s' if threads > 1 else ''})"
    facts = BenchFacts(version=BENCH_VERSION, machine=machine.fingerprint(), isa=tuple(meta["isa"]),
                       native=native, spec=spec_roofs, threads=threads, sweep=_sweep_facts(sizes, curves), ert=ert,
                       caches=tuple(CacheInfo(level, c["size"], c.get("instances", 1), c["capacity"])
                                    for level, c in sorted(caches.items())))
    device = Device(name=name, vendor="", kind="cpu", aliases=("local",), compute=tuple(compute),
                    memory=tuple(memory), metadata=meta, bench=facts)
    if cfg.audit:
        device, messages = audit_device(device, threads, full=cfg.mode == "full",
                                        progress=lambda f, what: stage.at("audit", f, what))
        warnings += messages
    meta["warnings"] = warnings
    meta["wall_seconds"] = round(time.perf_counter() - wall0, 2)
    report(1.0, "done")
    return replace(device, metadata=meta)


def _precision_warnings(compute: list[ComputeCeiling], spec_roofs: tuple[SpecRoof, ...],
                        native: tuple[str, ...]) -> list[str]:
    """Vector roofs that disagree with the spec sheet, and the 16-bit precisions this CPU lacks."""
    warnings = spec.check_against_spec({c.precision: c.flops for c in compute if c.unit == "vector"}, spec_roofs)
    missing = [p for p in ("bf16", "fp16") if p not in native]
    if missing:
        warnings.append(f"no native {'/'.join(missing)} arithmetic on this CPU (its flags lack "
                        f"{', '.join(n for p in missing for n in spec.NATIVE_FLAGS[p])}): no {'/'.join(missing)} "
                        "roof is published, so such ops fall back to the fp32 roofs (recorded on each op)")
    return warnings


def _metadata(cfg: BenchConfig, threads: int, numba: ModuleType, compile_seconds: float, level_info: dict[str, Any],
              shortage: dict[str, Any] | None) -> dict[str, Any]:
    """The machine and the settings measured under (OpenMP, numba), for display; the figures are in the bench facts."""
    meta = machine.machine_metadata()
    meta.update({
        "mode": cfg.mode,
        "numba_threading_layer": _threading_layer(numba),
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

    limiter, _ = _blas_limiter(threads)

    def time_call(call: Callable[[], Any]) -> tuple[float, float, float, float, int]:
        def reps_call(reps: int) -> None:
            with limiter(), _torch_threads(threads):
                for _ in range(reps):
                    call()

        stat, reps = measure_rate(reps_call, 1.0, 7 if full else 5, 0.02)
        # rates are calls per second: the fast quartile of times is 1 / q3 of rates
        return 1.0 / stat.median, 1.0 / stat.q3, 1.0 / stat.q1, 1.0 / stat.best, len(stat.samples) * reps

    return audit.run_audit(device, time_call, full=full, progress=progress)


class _Stages:
    """Progress over weighted stages."""

    def __init__(self, report: Progress, weights: dict[str, float]) -> None:
        self.report, self.weights, self.base = report, weights, 0.02

    def at(self, name: str, fraction: float, what: str) -> None:
        self.report(self.base + self.weights[name] * fraction, what)

    def done(self, name: str) -> None:
        self.base += self.weights[name]


def _sweep(numba: ModuleType, k: ModuleType, sizes: list[int], thread_counts: list[int], threads: int, cfg: BenchConfig,
           rng: np.random.Generator, stage: _Stages) -> tuple[dict[int, dict[str, list[Stat]]], dict[str, Stat]]:
    """The bandwidth sweep (every kernel, every size, each thread count), then long samples at the largest size.

    The sweep's samples are a few ms; at DRAM sizes that is one pass and too noisy for the figure every
    analysis divides by.  STREAM-style, main memory gets several passes per sample, >= 50 ms each, for
    read, copy and triad.
    """
    curves: dict[int, dict[str, list[Stat]]] = {t: {name: [] for name in KERNELS} for t in thread_counts}
    # one buffer, touched once; each working set is a prefix of it (random, never zeros);
    # += in place: "rng.random(n) + 0.5" would hold two copies at once (_check_memory allows one)
    buf = rng.random(max(sizes) // 8)
    buf += 0.5

    def arrays(ws: int, narrays: int) -> tuple[int, Any, Any, Any]:
        n = (ws // 8) // narrays
        return (n, buf[:n], buf[n:2 * n] if narrays > 1 else buf[:n],
                buf[2 * n:3 * n] if narrays > 2 else buf[:n])

    total_steps = len(sizes) * len(thread_counts)
    step = 0
    for t in thread_counts:
        _spin_up(numba, k, t)
        out = np.zeros(t)
        for ws in sizes:
            for kind, (name, (bpe, narrays)) in enumerate(KERNELS.items()):
                n, a, b, c = arrays(ws, narrays)
                stat, _ = measure_rate(_stream_call(k, kind, a, b, c, 1, t, out),
                                       float(bpe * n), cfg.repeats, cfg.min_sample_seconds)
                curves[t][name].append(stat)
            step += 1
            stage.at("sweep", step / total_steps,
                     f"bandwidth sweep {format_bytes(ws)} on {t} thread{'s' if t > 1 else ''}")
    out = np.zeros(threads)
    _spin_up(numba, k, threads)
    long_runs: dict[str, Stat] = {}
    for name in (*LONG_KERNELS, IN_PLACE):
        kind = k.ERT_ADD if name == IN_PLACE else list(KERNELS).index(name)
        bpe, narrays = (ERT_BYTES_PER_ELEMENT, 1) if name == IN_PLACE else KERNELS[name]
        n, a, b, c = arrays(sizes[-1], narrays)
        long_runs[name], _ = measure_rate(_stream_call(k, kind, a, b, c, 1, threads, out),
                                          float(bpe * n), max(7, cfg.repeats), max(0.05, cfg.min_sample_seconds))
    stage.done("sweep")
    return curves, long_runs


def _stream_call(k: ModuleType, kind: int, a: NDArray[np.float64], b: NDArray[np.float64], c: NDArray[np.float64], m: int,
                 threads: int, out: NDArray[np.float64]) -> Callable[[int], float]:
    """``call(reps)``: kernel ``kind`` of :func:`roofline.bench._kernels.stream` (s = 0.5) ``reps`` times."""
    return lambda reps: k.stream(kind, a, b, c, 0.5, m, reps, threads, out)


def _fma_peak(prec: str, threads: int, cfg: BenchConfig) -> Stat:
    """The register-resident FMA kernel (:mod:`roofline.bench.fma`) on ``threads`` threads."""
    shape = fma.compiled_shape(prec)
    iters = 10_000
    # more samples than elsewhere: each is short, and a ceiling must not hang on one busy moment
    stat, _ = measure_rate(lambda reps: Timed(fma.run_fma_peak(prec, reps * iters, threads)),
                           float(shape.flops_per_iteration * iters * threads), max(15, 2 * cfg.repeats),
                           cfg.fma_sample_seconds)
    return stat


def _best_of(methods: list[tuple[str, Stat, dict[str, Any]]], statistic: str) -> tuple[float, Provenance, Stat, dict[str, Any]]:
    """(best figure, its method name, its Stat, its details) over ``methods``, plus every method's figure."""
    name, stat, details = max(methods, key=lambda m: m[1].best)
    figures = tuple(MethodFigure(m, s.best, (s.q1, s.q3), statistic.format(n=len(s.samples))) for m, s, _ in methods)
    return stat.best, Provenance(method=name, methods=figures), stat, details


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
    value, best, stat, details = _best_of(methods, ROOF_STATISTIC)
    note = (f"the best of {len(methods)} method(s) (every method's figure in 'methods'); "
            f"each figure is {ROOF_STATISTIC.format(n='N')}, as STREAM reports; 1 FMA = 2 FLOPs")
    _warn_spread(f"{prec} {unit} roof ({best.method})", stat, warnings)
    return ComputeCeiling(unit, prec, value, replace(_prov(stat, cfg, date, best.method, details, note=note),
                                                     methods=best.methods))


# -- pieces ---------------------------------------------------------------------------

def _threading_layer(numba: ModuleType) -> str:
    try:
        return str(numba.threading_layer())
    except ValueError:
        return "unknown"


def _spin_up(numba: ModuleType, k: ModuleType, threads: int, seconds: float = 0.1) -> None:
    """Keep ``threads`` threads busy for a moment before measuring with them.

    A worker that has been asleep tends to wake on the CPU of the thread that woke it; until the
    scheduler spreads them (milliseconds) two threads share one core and a short sample shows
    half the machine.
    """
    numba.set_num_threads(threads)
    x = np.full(threads * k.ERT_BLOCK, 1.5)
    out = np.zeros(threads)
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        k.stream(k.ERT_FMA, x, x, x, 0.5, 64, 200, threads, out)


def _check_memory(max_bytes: int, min_bytes: int) -> dict[str, Any] | None:
    """Shrink the largest working set when free memory cannot hold it (plus headroom)."""
    avail = machine.available_memory()
    if avail is None:
        return None
    need = max_bytes * 1.25 + 64 * MiB
    if avail >= need:
        return None
    used = int(max(min_bytes * 4, (avail - 64 * MiB) / 2)) // (4 * KiB) * (4 * KiB)
    used = max(used, 4 * KiB)
    return {"available_bytes": avail, "wanted_bytes": max_bytes, "used_bytes": used,
            "note": (f"only {format_bytes(avail)} of memory free; the largest working set was shrunk from "
                     f"{format_bytes(max_bytes)} to {format_bytes(used)}, so the DRAM figure may include cache effects")}


def _prov(stat: Stat, cfg: BenchConfig, date: str, method: str, details: dict[str, Any], note: str = "") -> Provenance:
    return Provenance(kind="measured", source="roofline bench", method=method, date=date, repeats=len(stat.samples),
                      spread=(stat.q1, stat.q3), note=note,
                      details={**details, "spread_kind": "interquartile range", "mode": cfg.mode})


def _warn_spread(what: str, stat: Stat, warnings: list[str]) -> None:
    if stat.rel_spread > SPREAD_WARN:
        warnings.append(f"{what}: spread {stat.rel_spread:.0%} of the median (> {SPREAD_WARN:.0%}); "
                        "the machine was busy or noisy, rerun or use --full")


def _memory_levels(sizes: list[int], curves: dict[int, dict[str, list[Stat]]], threads: int,
                   caches: dict[str, dict[str, Any]], cfg: BenchConfig, date: str,
                   shortage: dict[str, Any] | None, warnings: list[str],
                   long_runs: dict[str, Stat] | None = None) -> tuple[list[MemoryCeiling], dict[str, Any]]:
    """Plateaus of the all-thread triad curve -> MemoryCeilings L1..DRAM, with notes on sysfs agreement.

    Each level's bandwidth is the best of the read, copy and triad kernels on its plateau (every
    sample of every size on it); main memory's is the best of the long samples at the largest
    working set (``long_runs``: read, copy, triad and in place).
    """
    triad = np.array([s.median for s in curves[threads]["triad"]])
    caps = {lvl: float(c["capacity"]) for lvl, c in caches.items()}
    labelled = _levels.label_plateaus(_levels.detect_plateaus(sizes, triad), caps or None)
    single: dict[str, float] = {}
    if 1 in curves and threads > 1:
        caps1 = {lvl: float(c["size"]) for lvl, c in caches.items()}
        tri1 = np.array([s.median for s in curves[1]["triad"]])
        single = {name: p.bandwidth for name, p in _levels.label_plateaus(_levels.detect_plateaus(sizes, tri1), caps1 or None)}
    info: dict[str, Any] = {"detected": [], "notes": []}
    memory: list[MemoryCeiling] = []
    names = [n for n, _ in labelled]
    if "DRAM" not in names:
        # the sweep never reached main memory (memory shortage or a huge cache): best effort, said loudly
        msg = (f"no main-memory plateau detected up to {format_bytes(sizes[-1])}; DRAM is the bandwidth at the "
               "largest working set and may be an overestimate")
        warnings.append(msg)
        info["notes"].append(msg)
        first = max(0, len(sizes) - 3)
        tail = triad[first:]
        labelled.append(("DRAM", _levels.Plateau(first, len(sizes) - 1, sizes[first], sizes[-1], float(np.median(tail)),
                                                 (float(tail.min()), float(tail.max())))))
    for i, (name, p) in enumerate(labelled):
        idx = slice(p.first, p.last + 1)
        notes = [STREAM_NOTE]
        cap = caps.get(name)
        if name != "DRAM" and cap:
            nxt = labelled[i + 1][1] if i + 1 < len(labelled) else None
            edge = math.sqrt(p.end_bytes * nxt.start_bytes) if nxt else p.end_bytes
            if not (0.4 <= edge / cap <= 2.5):
                msg = (f"{name}: the detected plateau ends near {format_bytes(edge)} but sysfs reports "
                       f"{format_bytes(cap)} for {threads} thread(s)")
                notes.append(msg)
                info["notes"].append(msg)
        capacity: float | None = cap
        if name == "DRAM":
            capacity = machine.meminfo().get("MemTotal")
            if shortage:
                notes.append(shortage["note"])
        elif capacity is None:
            capacity = p.end_bytes
            notes.append("capacity: largest working set on the plateau (sysfs cache sizes not readable)")
        details: dict[str, Any] = {
            "threads": threads, "working_set_bytes": [p.start_bytes, p.end_bytes], "sizes": p.points,
            "kernels": {kname: float(np.median([s.median for s in curves[threads][kname][idx]])) for kname in KERNELS}}
        if name == "DRAM" and long_runs:
            # working_set_bytes stays the plateau's range (where the level holds); the figures are measured at the end
            details["sweep_plateau_bandwidth"] = p.bandwidth
            details["figure_working_set_bytes"] = sizes[-1]
            methods = [(f"numba {'STREAM ' + kname if kname in KERNELS else 'in-place x = x + s'}, long samples "
                        f"(>= 50 ms) at {format_bytes(sizes[-1])}", stat,
                        {**details, "kernel": kname,
                         "bytes_per_element": KERNELS[kname][0] if kname in KERNELS else ERT_BYTES_PER_ELEMENT})
                       for kname, stat in long_runs.items()]
        else:
            methods = [(f"numba STREAM {kname} sweep, {p.points} size(s) on the plateau",
                        Stat.of([x for s in curves[threads][kname][idx] for x in s.samples]),
                        {**details, "kernel": kname, "bytes_per_element": KERNELS[kname][0]})
                       for kname in LONG_KERNELS]
        if name in single:
            details["single_thread_bandwidth"] = single[name]
        memory.append(_memory_ceiling(name, capacity, methods, cfg, date, notes, warnings))
        info["detected"].append({"level": name, "bandwidth": memory[-1].bandwidth,
                                 "working_set_bytes": [p.start_bytes, p.end_bytes]})
    for lvl in sorted(caps):
        if lvl not in names:
            msg = f"sysfs reports {lvl} ({format_bytes(caps[lvl])} for {threads} thread(s)) but no plateau was detected for it"
            info["notes"].append(msg)
    # Device validation forbids duplicate levels; keep fastest first for readability
    memory.sort(key=lambda m: -m.bandwidth)
    return memory, info


def _memory_ceiling(level: str, capacity: float | None, methods: list[tuple[str, Stat, dict[str, Any]]],
                    cfg: BenchConfig, date: str, notes: list[str], warnings: list[str]) -> MemoryCeiling:
    value, best, stat, details = _best_of(methods, ROOF_STATISTIC)
    notes = [*notes, f"the best of {len(methods)} kernel(s) (every figure in 'methods'); each figure is "
             f"{ROOF_STATISTIC.format(n='N')}, as STREAM reports"]
    _warn_spread(f"{level} bandwidth ({best.method})", stat, warnings)
    return MemoryCeiling(level, value, capacity, replace(_prov(stat, cfg, date, best.method, details,
                                                               note="; ".join(notes)), methods=best.methods))


def _ert_curve(k: ModuleType, ws: int, threads: int, cfg: BenchConfig, rng: np.random.Generator,
               report: Progress) -> tuple[ErtCurve, list[Stat]]:
    """ERT: GFLOP/s of an in-place kernel with 1..1024 FLOPs per element over a DRAM-sized array.

    Returns the curve and each point's samples (for the roofs only; not kept).  The model
    ``min(peak, AI x DRAM)`` is added once the roofs are known.
    """
    n = ws // 8
    x = rng.random(n)
    x += 0.5  # in place: one DRAM-sized array, as _check_memory assumed
    out = np.zeros(threads)
    flops_per_elem = [int(f) for f in cfg.ert_flops]
    rates: list[Stat] = []
    for i, f in enumerate(flops_per_elem):
        report(i / len(flops_per_elem), f"ERT curve: {f} FLOP/element")
        kind, m = (k.ERT_ADD, 0) if f == 1 else (k.ERT_FMA, f // 2)
        flops = float(n * (1 if f == 1 else 2 * m))
        # alpha = beta = 0.5: x -> 0.5x + 0.5 stays in [0.5, 1.5] (no overflow, no denormals)
        stat, _ = measure_rate(_stream_call(k, kind, x, x, x, m, threads, out),
                               flops, max(3, cfg.repeats // 2), cfg.min_sample_seconds)
        rates.append(stat)
    ai = [(1 if f == 1 else 2 * (f // 2)) / ERT_BYTES_PER_ELEMENT for f in flops_per_elem]
    curve = ErtCurve(tuple(float(f) for f in flops_per_elem), tuple(ai), tuple(s.median for s in rates),
                     tuple((s.q1, s.q3) for s in rates), float(ws), threads,
                     note=(f"model = min(fp64 vector roof, AI x DRAM roof), the roofs being the best of every method "
                           f"(this curve included); the ERT kernel updates in place ({ERT_BYTES_PER_ELEMENT} "
                           "B/element, no write-allocate)"))
    return curve, rates


def _sweep_facts(sizes: list[int], curves: dict[int, dict[str, list[Stat]]]) -> Sweep:
    """The bandwidth sweep as typed bench facts: one curve per (kernel, threads), medians and quartiles."""
    return Sweep(tuple(float(x) for x in sizes),
                 tuple(SweepCurve(name, t, tuple(s.median for s in stats), tuple((s.q1, s.q3) for s in stats))
                       for t, by in curves.items() for name, stats in by.items()),
                 STREAM_NOTE)


def gemm_plan(native: tuple[str, ...], torch_gemm: bool, torch_available: bool) -> tuple[tuple[str, str, str], ...]:
    """(precision, library, layout) of every GEMM the bench times on a CPU with ``native`` precisions.

    numpy's BLAS fp64/fp32 in both layouts always; with torch GEMMs on (``torch_gemm``) and torch
    importable, torch fp32 ``linear`` and torch bf16/fp16 in both layouts for the native ones.  A
    precision roof exists only where one of its GEMMs is timed.

    >>> [p for p, lib, _ in gemm_plan(("fp64", "fp32", "bf16"), True, True) if lib == "torch"]
    ['fp32', 'bf16', 'bf16']
    >>> {p for p, _, _ in gemm_plan(("fp64", "fp32", "bf16"), False, True)}  # torch GEMMs off: no bf16 roof
    {'fp64', 'fp32'}
    """
    jobs = [(p, "numpy", layout) for p in ("fp64", "fp32") for layout in ("A@B", "x@W.T")]
    if torch_gemm and torch_available:
        jobs.append(("fp32", "torch", "x@W.T"))
        jobs += [(p, "torch", layout) for p in ("bf16", "fp16") if p in native for layout in ("A@B", "x@W.T")]
    return tuple(jobs)


def unmeasured_native_warnings(native: tuple[str, ...], jobs: tuple[tuple[str, str, str], ...],
                               torch_gemm: bool) -> list[str]:
    """A warning for each native 16-bit precision that ``jobs`` times no GEMM of (so it gets no roof)."""
    timed = {p for p, _, _ in jobs}
    missing = [p for p in ("bf16", "fp16") if p in native and p not in timed]
    if not missing:
        return []
    why = "torch GEMMs are off" if not torch_gemm else "torch is not installed (pip install 'roofline[torch]')"
    return [f"{'/'.join(missing)} is native on this CPU but no {'/'.join(missing)} GEMM was measured ({why}): "
            "no such roof is published, so those ops fall back to the fp32 roofs (recorded on each op)"]


def _gemms(cfg: BenchConfig, threads: int, native: tuple[str, ...], warnings: list[str],
           report: Progress) -> dict[tuple[str, str], tuple[Stat, dict[str, Any], str]]:
    """The best GEMM per (precision, library and layout) over growing sizes.

    numpy's BLAS fp64/fp32 as ``A @ B`` and ``x @ W.T``; torch fp32 ``linear``; torch bf16/fp16
    (``matmul`` and ``linear``) only in ``native`` precisions.
    """
    out: dict[tuple[str, str], tuple[Stat, dict[str, Any], str]] = {}
    rng = np.random.default_rng(7)
    limiter, blas_threads = _blas_limiter(threads)
    if blas_threads is None:
        warnings.append("BLAS thread count not controlled (install threadpoolctl); GEMM used the library default")
    blas = machine.blas_info()
    torch: ModuleType | None = None
    if cfg.torch_gemm:
        try:
            import torch as _torch
        except ImportError:
            pass
        else:
            torch = _torch
    jobs = gemm_plan(native, cfg.torch_gemm, torch is not None)
    warnings += unmeasured_native_warnings(native, jobs, cfg.torch_gemm)
    for j, (prec, lib, layout) in enumerate(jobs):
        report(j / len(jobs), f"GEMM {prec} {lib} {layout}")
        per_size: list[dict[str, Any]] = []
        best: Stat | None = None
        best_n = 0
        walk = sorted({n for n in (256, 512, *cfg.gemm_sizes) if n <= max(cfg.gemm_sizes)})
        for idx, n in enumerate(walk):
            call = _gemm_call(lib, prec, layout, n, rng, limiter, threads)
            call(1)  # warm-up (thread pools, JIT kernels)
            t_one = min(_timeit(functools.partial(call, 1)) for _ in range(3))
            stat, _ = measure_rate(call, 2.0 * n**3, max(3, cfg.repeats // 2 + 1), cfg.min_sample_seconds)
            per_size.append({"n": n, "flops": stat.median, "best": stat.best})
            if best is None or stat.best > best.best:
                best, best_n = stat, n
            # grow while the next size's call stays under the limit: some precisions have no fast path
            # on some CPUs (torch fp16 GEMM without AVX512-FP16 runs at ~1 GFLOP/s)
            if idx + 1 < len(walk) and t_one * (walk[idx + 1] / n) ** 3 > cfg.gemm_call_limit_seconds:
                break
        assert best is not None
        size = {"fp64": 8, "fp32": 4}.get(prec, 2)
        details: dict[str, Any] = {"threads": threads if lib == "torch" or blas_threads else "library default",
                                   "layout": layout, "sizes": [r["n"] for r in per_size], "per_size": per_size,
                                   "best_n": best_n, "working_set_bytes": 3 * best_n * best_n * size}
        if lib == "numpy":
            details["blas"] = blas
            method = f"numpy.matmul {layout} ({blas.get('name', 'BLAS')} {blas.get('version', '')})".replace(" )", ")")
        else:
            details["torch"] = getattr(torch, "__version__", "")
            method = f"torch {'linear' if layout == 'x@W.T' else 'matmul'} {prec} on CPU"
        out[(prec, f"{lib} {layout}")] = (best, details, f"{method}, n={best_n}")
    report(1.0, "GEMM done")
    return out


def _gemm_call(lib: str, prec: str, layout: str, n: int, rng: np.random.Generator, limiter: Callable[[], Any],
               threads: int) -> Callable[[int], None]:
    """``call(reps)`` running an n x n x n GEMM ``reps`` times in ``layout``."""
    if lib == "numpy":
        dtype = np.float64 if prec == "fp64" else np.float32
        a = rng.standard_normal((n, n)).astype(dtype)
        b = rng.standard_normal((n, n)).astype(dtype)
        c = np.empty((n, n), dtype=dtype)
        bb = b.T if layout == "x@W.T" else b

        def call(reps: int) -> None:
            with limiter():
                for _ in range(reps):
                    np.matmul(a, bb, out=c)
        return call
    import torch

    tdtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[prec]
    ta = torch.randn(n, n).to(tdtype)
    tb = torch.randn(n, n).to(tdtype)
    op = torch.nn.functional.linear if layout == "x@W.T" else torch.matmul

    def tcall(reps: int) -> None:
        with _torch_threads(threads):
            for _ in range(reps):
                op(ta, tb)
    return tcall


class _torch_threads:
    """torch's intra-op threads set to ``threads`` for a block, then restored (a no-op without torch)."""

    def __init__(self, threads: int) -> None:
        self.threads, self.old = threads, None

    def __enter__(self) -> None:
        import sys

        torch = sys.modules.get("torch")
        if torch is not None:
            self.old = torch.get_num_threads()
            torch.set_num_threads(self.threads)

    def __exit__(self, *exc: object) -> None:
        import sys

        torch = sys.modules.get("torch")
        if torch is not None and self.old is not None:
            torch.set_num_threads(self.old)


def _blas_limiter(threads: int) -> tuple[Callable[[], Any], int | None]:
    """A context-manager factory limiting BLAS threads (threadpoolctl), or a no-op."""
    import contextlib

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext, None
    return (lambda: threadpool_limits(limits=threads, user_api="blas")), threads

