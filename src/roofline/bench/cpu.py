"""Measure this CPU's hierarchical roofline: bandwidth per level, FMA peaks, GEMM ceilings, ERT curve.

Methods (each stated again in the provenance of the numbers it produces):

- **Bandwidth sweep**: read (sum), write (fill), copy and triad kernels
  (numba, one contiguous chunk per thread, repeated inside the parallel
  region) over working sets from ``min_bytes`` to ``max_bytes`` in geometric
  steps, on all threads and on one.  Bytes are counted as STREAM does: per
  fp64 element read 8, write 8, copy 16, triad 24 (``a = b + s*c``: two reads,
  one write); write-allocate traffic is not counted.  The *working set* is the
  total size of the arrays a kernel touches.  Memory levels come from the
  plateaus of the all-thread triad curve (:mod:`roofline.bench.levels`).
- **FMA peak**: every thread runs ``CHAINS`` independent FMA chains on a
  register-resident block (enough to cover FMA latency x throughput).
- **Matrix ceilings**: numpy's BLAS GEMM (fp64, fp32), and torch GEMM (bf16,
  fp16) when torch is installed, over growing sizes; the best median counts.
- **ERT curve**: an in-place kernel doing 1, 2, 4, ... 1024 FLOPs per element
  (16 B moved per element) over a DRAM-sized array, compared with
  ``min(peak, AI x DRAM bandwidth)``.

Every figure is the median of ``repeats`` samples, each at least
``min_sample_seconds`` long; its spread is the interquartile range.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from roofline.bench import levels as _levels
from roofline.bench import machine
from roofline.device import ComputeCeiling, Device, MemoryCeiling, Provenance
from roofline.errors import RooflineError, require
from roofline.units import format_bytes, format_flops

KiB = 1024
MiB = 1024 * 1024
#: STREAM byte counting per fp64 element, and arrays per kernel
KERNELS: dict[str, tuple[int, int]] = {"read": (8, 1), "write": (8, 1), "copy": (16, 2), "triad": (24, 3)}
STREAM_NOTE = ("STREAM byte counting per fp64 element: read 8 B, write 8 B, copy 16 B, triad 24 B "
               "(a[i] = b[i] + s*c[i]: two reads, one write); write-allocate traffic is not counted")
ERT_BYTES_PER_ELEMENT = 16  # in-place x[i] = f(x[i]): one 8-B read, one 8-B write
SPREAD_WARN = 0.10

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
    fma_sample_seconds: float = 0.005

    @classmethod
    def quick(cls, **overrides: Any) -> BenchConfig:
        return replace(cls(), **overrides)

    @classmethod
    def full(cls, **overrides: Any) -> BenchConfig:
        base = cls(mode="full", points_per_octave=6, repeats=11, min_sample_seconds=0.01,
                   gemm_sizes=(512, 1024, 2048, 4096), gemm_call_limit_seconds=2.0, fma_sample_seconds=0.02)
        return replace(base, **overrides)


@dataclass
class Stat:
    """Median and interquartile range of per-sample rates."""

    median: float
    q1: float
    q3: float
    samples: list[float] = field(default_factory=list)

    @property
    def rel_spread(self) -> float:
        return (self.q3 - self.q1) / self.median if self.median > 0 else float("inf")

    @classmethod
    def of(cls, rates: Sequence[float]) -> Stat:
        r = np.asarray(rates, dtype=float)
        q1, med, q3 = np.percentile(r, [25, 50, 75])
        return cls(float(med), float(q1), float(q3), [float(x) for x in r])


def check_threads(threads: int | None) -> int:
    """``threads`` validated against this machine (None or 0 mean every CPU)."""
    ncpu = os.cpu_count() or 1
    if threads is None:
        return ncpu
    if threads < 1 or threads > ncpu:
        raise RooflineError(f"--threads: {threads} is out of range; this machine has {ncpu} CPU(s), use 1..{ncpu}")
    return threads


def _timeit(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure_rate(call: Callable[[int], Any], work_per_rep: float, repeats: int, min_seconds: float) -> tuple[Stat, int]:
    """Rates (work per second) of ``call(reps)``; reps chosen so one sample takes >= ``min_seconds``.

    The first call warms up (page faults, caches, lazy compilation); then reps grow until a call
    lasts ``min_seconds``.
    """
    call(1)
    reps = 1
    for _ in range(40):  # grow until one sample is long enough (call overhead hides in short ones)
        t = _timeit(lambda reps=reps: call(reps))
        if t >= min_seconds:
            break
        reps = max(reps * 2, math.ceil(reps * 1.2 * min_seconds / max(t, 1e-9)))
    rates = [work_per_rep * reps / max(_timeit(lambda: call(reps)), 1e-9) for _ in range(repeats)]
    return Stat.of(rates), reps


class _Kernels:
    """The compiled numba kernels, loaded once (compiling or reading numba's cache)."""

    _loaded: Any = None

    @classmethod
    def get(cls) -> tuple[Any, Any, float]:
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
            k.fma_peak64(np.ones(k.CHAINS64), 1, 1, 0.5, 0.5)
            k.fma_peak32(np.ones(k.CHAINS32, dtype=np.float32), 1, 1, np.float32(0.5), np.float32(0.5))
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

    report(0.0, "compiling kernels (numba)")
    numba, k, compile_seconds = _Kernels.get()
    if threads > numba.config.NUMBA_NUM_THREADS:
        raise RooflineError(f"--threads: {threads} is more than NUMBA_NUM_THREADS={numba.config.NUMBA_NUM_THREADS}")
    date = machine.now()
    sizes = sweep_sizes(cfg.min_bytes, max_bytes, cfg.points_per_octave)
    thread_counts = [threads] + ([1] if cfg.single_thread and threads > 1 else [])
    # progress weights: rough share of wall time per stage
    stages = {"sweep": 0.55, "fma": 0.05, "ert": 0.15, "gemm": 0.25}
    done = 0.03

    # -- bandwidth sweep -----------------------------------------------------------
    curves: dict[int, dict[str, list[Stat]]] = {t: {name: [] for name in KERNELS} for t in thread_counts}
    rng = np.random.default_rng(12345)
    # one buffer, touched once; each working set is a prefix of it (random, never zeros);
    # += in place: "rng.random(n) + 0.5" would hold two copies at once (_check_memory allows one)
    buf = rng.random(max(sizes) // 8)
    buf += 0.5
    total_steps = len(sizes) * len(thread_counts)
    step = 0
    for t in thread_counts:
        _spin_up(numba, k, t)
        out = np.zeros(t)
        for ws in sizes:
            for kind, (name, (bpe, narrays)) in enumerate(KERNELS.items()):
                n = (ws // 8) // narrays
                a, b, c = buf[:n], buf[n:2 * n] if narrays > 1 else buf[:n], buf[2 * n:3 * n] if narrays > 2 else buf[:n]
                stat, _ = measure_rate(lambda reps, kind=kind, a=a, b=b, c=c, t=t, out=out:
                                       k.stream(kind, a, b, c, 0.5, 1, reps, t, out),
                                       float(bpe * n), cfg.repeats, cfg.min_sample_seconds)
                curves[t][name].append(stat)
            step += 1
            report(done + stages["sweep"] * step / total_steps,
                   f"bandwidth sweep {format_bytes(ws)} on {t} thread{'s' if t > 1 else ''}")
    # -- main memory: long triad samples at the largest working set ------------------
    # The sweep's samples are a few ms; at DRAM sizes that is one pass and too noisy for the
    # figure every analysis divides by.  STREAM-style: several passes per sample, >= 50 ms each.
    tri = list(KERNELS).index("triad")
    n = (sizes[-1] // 8) // KERNELS["triad"][1]
    out = np.zeros(threads)
    _spin_up(numba, k, threads)
    a, b, c = buf[:n], buf[n:2 * n], buf[2 * n:3 * n]
    dram_stat, _ = measure_rate(lambda reps, a=a, b=b, c=c: k.stream(tri, a, b, c, 0.5, 1, reps, threads, out),
                                float(KERNELS["triad"][0] * n), max(7, cfg.repeats), max(0.05, cfg.min_sample_seconds))
    del buf, a, b, c
    done += stages["sweep"]

    # -- FMA peaks -----------------------------------------------------------------
    report(done, "FMA peak")
    # more samples than elsewhere: each is short, and a ceiling must not hang on one busy moment
    fma_repeats = max(11, 2 * cfg.repeats)

    def fma_peaks(t: int) -> dict[tuple[str, int], tuple[Stat, int]]:
        _spin_up(numba, k, t)
        x64 = rng.random(t * k.CHAINS64) + 0.5
        x32 = (rng.random(t * k.CHAINS32) + 0.5).astype(np.float32)
        return {
            ("fp64", t): measure_rate(lambda it: k.fma_peak64(x64, it * 1000, t, 0.999, 0.001),
                                      2.0 * k.CHAINS64 * t * 1000, fma_repeats, cfg.fma_sample_seconds),
            ("fp32", t): measure_rate(lambda it: k.fma_peak32(x32, it * 1000, t, np.float32(0.999), np.float32(0.001)),
                                      2.0 * k.CHAINS32 * t * 1000, fma_repeats, cfg.fma_sample_seconds),
        }

    peaks: dict[tuple[str, int], tuple[Stat, int]] = {}
    for t in thread_counts:
        peaks.update(fma_peaks(t))
    done += stages["fma"]

    # -- memory levels -------------------------------------------------------------
    memory, level_info = _memory_levels(sizes, curves, threads, caches, cfg, date, shortage, warnings, dram_stat)
    dram_bw = next(m.bandwidth for m in memory if m.level == "DRAM")

    # -- ERT curve -----------------------------------------------------------------
    numba.set_num_threads(threads)
    ert = _ert_curve(k, max_bytes, threads, cfg, peaks[("fp64", threads)][0].median, dram_bw, rng,
                     lambda f, what: report(done + stages["ert"] * f, what))
    ert_best = max(ert["flops"])
    if ert_best > 1.1 * peaks[("fp64", threads)][0].median:
        # the ERT kernel runs the same FMAs from memory: beating the peak kernel by > 10 % means the
        # peak was measured while the machine was busy; measure it once more and keep the better median
        first = peaks[("fp64", threads)][0].median
        again = fma_peaks(threads)
        for key, val in again.items():
            if val[0].median > peaks[key][0].median:
                peaks[key] = val
        warnings.append(f"FMA peak re-measured: the first fp64 figure ({format_flops(first)}) was below the ERT "
                        f"kernel's {format_flops(ert_best)}; now {format_flops(peaks[('fp64', threads)][0].median)}")
        ert = _ert_model(ert, peaks[("fp64", threads)][0].median, dram_bw)
    done += stages["ert"]

    # -- GEMM ----------------------------------------------------------------------
    gemms = _gemms(cfg, threads, warnings, lambda f, what: report(done + stages["gemm"] * f, what))
    numba.set_num_threads(threads)

    compute: list[ComputeCeiling] = []
    for prec, chains in (("fp64", k.CHAINS64), ("fp32", k.CHAINS32)):
        stat, reps = peaks[(prec, threads)]
        details: dict[str, Any] = {"threads": threads, "chains_per_thread": chains, "working_set_bytes":
                                   threads * chains * (8 if prec == "fp64" else 4), "fmas_per_sample": reps * 1000 * chains * threads}
        if (prec, 1) in peaks and threads > 1:
            details["single_thread_flops"] = peaks[(prec, 1)][0].median
        compute.append(ComputeCeiling("vector", prec, stat.median, _prov(
            stat, cfg, date, f"numba FMA chains ({prec})", details,
            note=f"{chains} independent FMA chains per thread in registers; 1 FMA = 2 FLOPs")))
        _warn_spread(f"{prec} vector FMA peak", stat, warnings)
    for prec, (stat, details, method) in gemms.items():
        compute.append(ComputeCeiling("matrix", prec, stat.median, _prov(stat, cfg, date, method, details,
                                                                        note="dense GEMM C = A @ B on random data; 2*n^3 FLOPs")))
        _warn_spread(f"{prec} GEMM", stat, warnings)

    meta = machine.machine_metadata(threads)
    meta.update({
        "mode": cfg.mode,
        "numba_threading_layer": _threading_layer(numba),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
        "omp_proc_bind": f"{os.environ.get('OMP_PROC_BIND', '')} {os.environ.get('OMP_PLACES', '')}".strip(),
        "compile_seconds": round(compile_seconds, 3),
        "levels": level_info,
        "sweep": {
            "working_set_bytes": sizes,
            "kernels": list(KERNELS),
            "bytes_counting": STREAM_NOTE,
            "curves": {str(t): {name: [s.median for s in stats] for name, stats in by.items()}
                       for t, by in curves.items()},
            "spread": {str(t): {name: [[s.q1, s.q3] for s in stats] for name, stats in by.items()}
                       for t, by in curves.items()},
        },
        "ert": ert,
        "caches_sysfs": caches,
    })
    if shortage:
        meta["memory_shortage"] = shortage
    if ert["max_abs_deviation"] > 0.25:
        warnings.append(f"ERT curve deviates from min(peak, AI x DRAM bandwidth) by up to "
                        f"{ert['max_deviation']:+.0%} (at {ert['at_intensity']:.3g} FLOP/B); see metadata.ert")
    meta["warnings"] = warnings
    meta["wall_seconds"] = round(time.perf_counter() - wall0, 2)
    report(1.0, "done")
    name = f"local: {meta['cpu_model']} ({threads} thread{'s' if threads > 1 else ''})"
    return Device(name=name, vendor="", kind="cpu", aliases=("local",), compute=tuple(compute),
                  memory=tuple(memory), metadata=meta)


# -- pieces ---------------------------------------------------------------------------

def _threading_layer(numba: Any) -> str:
    try:
        return str(numba.threading_layer())
    except ValueError:
        return "unknown"


def _spin_up(numba: Any, k: Any, threads: int, seconds: float = 0.1) -> None:
    """Keep ``threads`` threads busy for a moment before measuring with them.

    A worker that has been asleep tends to wake on the CPU of the thread that woke it; until the
    scheduler spreads them (milliseconds) two threads share one core and a short sample shows
    half the machine.
    """
    numba.set_num_threads(threads)
    x = np.full(threads * k.CHAINS64, 1.5)
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        k.fma_peak64(x, 2000, threads, 0.999, 0.001)


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
                   dram: Stat | None = None) -> tuple[list[MemoryCeiling], dict[str, Any]]:
    """Plateaus of the all-thread triad curve -> MemoryCeilings L1..DRAM, with notes on sysfs agreement.

    ``dram``: the long triad run at the largest working set; when given it is the DRAM figure (the
    sweep's plateau value is kept in the details).
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
    for i, (name, p) in enumerate(labelled):
        idx = slice(p.first, p.last + 1)
        others = {kname: float(np.median([s.median for s in curves[threads][kname][idx]])) for kname in KERNELS}
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
        stat = Stat(p.bandwidth, p.spread[0], p.spread[1], [s.median for s in curves[threads]["triad"][idx]])
        details = {"kernel": "triad", "threads": threads, "working_set_bytes": [p.start_bytes, p.end_bytes],
                   "sizes": p.points, "bytes_per_element": 24, "kernels": others}
        spread_kind = "interquartile range over the plateau's sizes"
        method, repeats = "numba STREAM triad sweep", cfg.repeats
        if name == "DRAM" and dram is not None:
            # working_set_bytes stays the plateau's range (where the level holds); the figure is measured at the end
            details["sweep_plateau_bandwidth"] = p.bandwidth
            details["figure_working_set_bytes"] = sizes[-1]
            notes.append(f"figure: {len(dram.samples)} triad samples of >= 50 ms at {format_bytes(sizes[-1])}")
            stat, spread_kind = dram, "interquartile range of the samples"
            method, repeats = "numba STREAM triad, long samples at the largest working set", len(dram.samples)
        if name in single:
            details["single_thread_bandwidth"] = single[name]
        prov = Provenance(kind="measured", source="roofline bench", method=method, date=date,
                          repeats=repeats, spread=(stat.q1, stat.q3), note="; ".join(notes),
                          details={**details, "spread_kind": spread_kind, "mode": cfg.mode})
        memory.append(MemoryCeiling(name, stat.median, capacity, prov))
        info["detected"].append({"level": name, "bandwidth": stat.median, "working_set_bytes": [p.start_bytes, p.end_bytes]})
        _warn_spread(f"{name} bandwidth", stat, warnings)
    for lvl in sorted(caps):
        if lvl not in names:
            msg = f"sysfs reports {lvl} ({format_bytes(caps[lvl])} for {threads} thread(s)) but no plateau was detected for it"
            info["notes"].append(msg)
    if "DRAM" not in names:
        # the sweep never reached main memory (memory shortage or a huge cache): best effort, said loudly
        tail = curves[threads]["triad"][-3:]
        last = dram or Stat.of([s.median for s in tail])
        msg = (f"no main-memory plateau detected up to {format_bytes(sizes[-1])}; DRAM is the triad bandwidth at the "
               "largest working sets and may be an overestimate")
        warnings.append(msg)
        info["notes"].append(msg)
        method = "numba STREAM triad, long samples at the largest working set" if dram else "numba STREAM triad sweep"
        prov = Provenance(kind="measured", source="roofline bench", method=method, date=date,
                          repeats=len(last.samples) if dram else cfg.repeats, spread=(last.q1, last.q3),
                          note="; ".join([STREAM_NOTE, msg] + ([shortage["note"]] if shortage else [])),
                          details={"kernel": "triad", "threads": threads, "working_set_bytes": [sizes[-len(tail)], sizes[-1]],
                                   "sizes": len(tail), "bytes_per_element": 24, "spread_kind": "interquartile range"})
        memory.append(MemoryCeiling("DRAM", last.median, machine.meminfo().get("MemTotal"), prov))
    # Device validation forbids duplicate levels; keep fastest first for readability
    memory.sort(key=lambda m: -m.bandwidth)
    return memory, info


def _ert_curve(k: Any, ws: int, threads: int, cfg: BenchConfig, peak: float, dram_bw: float,
               rng: np.random.Generator, report: Progress) -> dict[str, Any]:
    """ERT: GFLOP/s of an in-place kernel with 1..1024 FLOPs per element over a DRAM-sized array."""
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
        stat, _ = measure_rate(lambda reps, kind=kind, m=m: k.stream(kind, x, x, x, 0.5, m, reps, threads, out),
                               flops, max(3, cfg.repeats // 2), cfg.min_sample_seconds)
        rates.append(stat)
    ai = [(1 if f == 1 else 2 * (f // 2)) / ERT_BYTES_PER_ELEMENT for f in flops_per_elem]
    return _ert_model({
        "flops_per_element": flops_per_elem,
        "intensity": ai,
        "flops": [s.median for s in rates],
        "spread": [[s.q1, s.q3] for s in rates],
        "working_set_bytes": ws,
        "threads": threads,
        "bytes_per_element": ERT_BYTES_PER_ELEMENT,
        "note": ("model = min(fp64 vector FMA peak, AI x DRAM triad bandwidth); the ERT kernel updates in place "
                 "(16 B/element, no write-allocate), so at low AI it can beat a triad-derived slope"),
    }, peak, dram_bw)


def _ert_model(ert: dict[str, Any], peak: float, dram_bw: float) -> dict[str, Any]:
    """Add the roofline model min(peak, AI x bandwidth) and the measured curve's deviation from it."""
    model = [min(peak, a * dram_bw) for a in ert["intensity"]]
    dev = [f / m - 1.0 for f, m in zip(ert["flops"], model, strict=True)]
    worst = int(np.argmax(np.abs(dev)))
    return {**ert, "model_flops": model, "deviation": dev, "max_deviation": dev[worst],
            "max_abs_deviation": abs(dev[worst]), "at_intensity": ert["intensity"][worst]}


def _gemms(cfg: BenchConfig, threads: int, warnings: list[str], report: Progress) -> dict[str, tuple[Stat, dict[str, Any], str]]:
    """Best median GEMM rate per precision over growing sizes: numpy (fp64, fp32), torch (bf16, fp16)."""
    out: dict[str, tuple[Stat, dict[str, Any], str]] = {}
    rng = np.random.default_rng(7)
    limiter, blas_threads = _blas_limiter(threads)
    if blas_threads is None:
        warnings.append("BLAS thread count not controlled (install threadpoolctl); GEMM used the library default")
    blas = machine.blas_info()
    jobs: list[tuple[str, str]] = [("fp64", "numpy"), ("fp32", "numpy")]
    torch = None
    if cfg.torch_gemm:
        try:
            import torch  # noqa: F811 - optional
        except ImportError:
            torch = None
        if torch is not None:
            jobs += [("bf16", "torch"), ("fp16", "torch")]
    for j, (prec, lib) in enumerate(jobs):
        report(j / len(jobs), f"GEMM {prec} ({lib})")
        per_size: list[dict[str, Any]] = []
        best: Stat | None = None
        best_n = 0
        walk = sorted({n for n in (256, 512, *cfg.gemm_sizes) if n <= max(cfg.gemm_sizes)})
        for idx, n in enumerate(walk):
            if lib == "numpy":
                dtype = np.float64 if prec == "fp64" else np.float32
                a = rng.standard_normal((n, n)).astype(dtype)
                b = rng.standard_normal((n, n)).astype(dtype)
                c = np.empty((n, n), dtype=dtype)

                def call(reps: int, a: Any = a, b: Any = b, c: Any = c) -> None:
                    with limiter():
                        for _ in range(reps):
                            np.matmul(a, b, out=c)
            else:
                assert torch is not None
                tdtype = torch.bfloat16 if prec == "bf16" else torch.float16
                a = torch.randn(n, n).to(tdtype)
                b = torch.randn(n, n).to(tdtype)

                def call(reps: int, a: Any = a, b: Any = b) -> None:
                    old = torch.get_num_threads()
                    torch.set_num_threads(threads)
                    try:
                        for _ in range(reps):
                            torch.matmul(a, b)
                    finally:
                        torch.set_num_threads(old)
            call(1)  # warm-up (thread pools, JIT kernels)
            t_one = min(_timeit(lambda call=call: call(1)) for _ in range(3))
            stat, _ = measure_rate(call, 2.0 * n**3, max(3, cfg.repeats // 2 + 1), cfg.min_sample_seconds)
            per_size.append({"n": n, "flops": stat.median})
            if best is None or stat.median > best.median:
                best, best_n = stat, n
            # grow while the next size's call stays under the limit: some precisions have no fast path
            # on some CPUs (torch fp16 GEMM without AVX512-FP16 runs at ~1 GFLOP/s)
            if idx + 1 < len(walk) and t_one * (walk[idx + 1] / n) ** 3 > cfg.gemm_call_limit_seconds:
                break
        assert best is not None
        details: dict[str, Any] = {"threads": threads if lib == "torch" or blas_threads else "library default",
                                   "sizes": [r["n"] for r in per_size], "per_size": per_size, "best_n": best_n,
                                   "working_set_bytes": 3 * best_n * best_n * (8 if prec == "fp64" else 4 if prec == "fp32" else 2)}
        if lib == "numpy":
            details["blas"] = blas
            method = f"numpy.matmul ({blas.get('name', 'BLAS')} {blas.get('version', '')})".replace(" )", ")")
        else:
            details["torch"] = getattr(torch, "__version__", "")
            method = f"torch.matmul {prec} on CPU"
        out[prec] = (best, details, method)
    report(1.0, "GEMM done")
    return out


def _blas_limiter(threads: int) -> tuple[Callable[[], Any], int | None]:
    """A context-manager factory limiting BLAS threads (threadpoolctl), or a no-op."""
    import contextlib

    try:
        from threadpoolctl import threadpool_limits  # type: ignore[import-not-found]
    except ImportError:
        return contextlib.nullcontext, None
    return (lambda: threadpool_limits(limits=threads, user_api="blas")), threads

