"""The CPU bench's bandwidth sweep and memory roofs, and its ERT curve.

Read (sum), write (fill), copy and triad kernels (numba, one contiguous chunk per thread) over working
sets from ``min_bytes`` to ``max_bytes`` in geometric steps, on all threads and on one; bytes counted as
STREAM does (:data:`STREAM_NOTE`).  Memory levels are the plateaus of the all-thread triad curve
(:mod:`roofline.bench.levels`); a level's roof is the best of read, copy and triad on its plateau; main
memory's, the best of long read/copy/triad samples and an in-place update, taken in two slices of the run
(:data:`DRAM_SLICES`).  The ERT curve runs 1..1024
FLOPs per element in place over a DRAM-sized array.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from types import ModuleType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from roofline.bench import levels as _levels
from roofline.bench import machine
from roofline.bench.sampling import (
    ROOF_STATISTIC,
    BenchConfig,
    KiB,
    MiB,
    Progress,
    Stages,
    Stat,
    best_of,
    measure_rate,
    stat_provenance,
    warn_spread,
)
from roofline.core.units import format_bytes
from roofline.hardware.bench_facts import ErtCurve, Sweep, SweepCurve
from roofline.hardware.device import MemoryCeiling

#: STREAM byte counting per fp64 element, and arrays per kernel
KERNELS: dict[str, tuple[int, int]] = {"read": (8, 1), "write": (8, 1), "copy": (16, 2), "triad": (24, 3)}


STREAM_NOTE = ("STREAM byte counting per fp64 element: read 8 B, write 8 B, copy 16 B, triad 24 B "
               "(a[i] = b[i] + s*c[i]: two reads, one write); write-allocate traffic is not counted")


ERT_BYTES_PER_ELEMENT = 16  # in-place x[i] = f(x[i]): one 8-B read, one 8-B write


#: the kernels whose bandwidth is a memory roof's method (write alone is shown, not used: real ops also read)
LONG_KERNELS = ("read", "copy", "triad")


#: main memory's roof also counts an in-place update, x = x + s: 16 B per element (no write-allocate traffic)
IN_PLACE = "in-place"


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


def run_sweep(numba: ModuleType, k: ModuleType, sizes: list[int], thread_counts: list[int], threads: int, cfg: BenchConfig,
           rng: np.random.Generator, stage: Stages) -> tuple[dict[int, dict[str, list[Stat]]], dict[str, Stat]]:
    """The bandwidth sweep (every kernel, every size, each thread count), then long samples at the largest size.

    The sweep's samples are a few ms; at DRAM sizes that is one pass and too noisy for the figure every
    analysis divides by.  STREAM-style, main memory gets several passes per sample, >= 50 ms each, for
    read, copy and triad.
    """
    curves: dict[int, dict[str, list[Stat]]] = {t: {name: [] for name in KERNELS} for t in thread_counts}
    # one buffer, touched once; each working set is a prefix of it (random, never zeros);
    # += in place: "rng.random(n) + 0.5" would hold two copies at once (check_memory allows one)
    buf = rng.random(max(sizes) // 8)
    buf += 0.5

    total_steps = len(sizes) * len(thread_counts)
    step = 0
    for t in thread_counts:
        spin_up(numba, k, t)
        out = np.zeros(t)
        for ws in sizes:
            for kind, (name, (bpe, narrays)) in enumerate(KERNELS.items()):
                n, a, b, c = split_arrays(buf, ws, narrays)
                stat, _ = measure_rate(stream_call(k, kind, a, b, c, 1, t, out),
                                       float(bpe * n), cfg.repeats, cfg.min_sample_seconds, t, f"sweep {name}")
                curves[t][name].append(stat)
            step += 1
            stage.at("sweep", step / total_steps,
                     f"bandwidth sweep {format_bytes(ws)} on {t} thread{'s' if t > 1 else ''}")
    spin_up(numba, k, threads)
    long_runs = long_samples(k, buf, threads, cfg)
    stage.done("sweep")
    return curves, long_runs


def split_arrays(buf: NDArray[np.float64], ws: int, narrays: int) -> tuple[int, Any, Any, Any]:
    """(elements per array, a, b, c): a working set of ``ws`` bytes as ``narrays`` consecutive views of ``buf``
    (the unused ones repeat the first)."""
    n = (ws // 8) // narrays
    return (n, buf[:n], buf[n:2 * n] if narrays > 1 else buf[:n], buf[2 * n:3 * n] if narrays > 2 else buf[:n])


def long_samples(k: ModuleType, buf: NDArray[np.float64], threads: int, cfg: BenchConfig) -> dict[str, Stat]:
    """One slice of main memory's long samples over all of ``buf``: read, copy, triad and in place, each the
    best of >= 7 samples of >= 50 ms (STREAM-style: several passes per sample)."""
    out = np.zeros(threads)
    runs: dict[str, Stat] = {}
    for name in (*LONG_KERNELS, IN_PLACE):
        kind = k.ERT_ADD if name == IN_PLACE else list(KERNELS).index(name)
        bpe, narrays = (ERT_BYTES_PER_ELEMENT, 1) if name == IN_PLACE else KERNELS[name]
        n, a, b, c = split_arrays(buf, buf.size * 8, narrays)
        runs[name], _ = measure_rate(stream_call(k, kind, a, b, c, 1, threads, out),
                                     float(bpe * n), max(7, cfg.repeats), max(0.05, cfg.min_sample_seconds),
                                     threads, f"DRAM {name}")
    return runs


#: main memory is sampled in two slices, at the sweep's end and after the GEMMs (about 20 s apart in --quick).
#: A roof is the best that any kernel achieves, and a shared host's memory bandwidth moves over tens of seconds:
#: on a 2-vCPU Zen 5 VM the same C in-place kernel read 125 GB/s and, minutes later, 55-64 (issue 32's
#: bench_ceilings.py and bench_dram_ab.py runs), while another tenant's memory traffic shows in no counter a
#: guest can read.  One instant would make the roof depend on when it was taken.
DRAM_SLICES = 2

#: slices whose best figures differ by more than this are reported (a note: the roof is the better slice)
SLICE_DRIFT_NOTE = 0.15


def merge_slices(slices: list[dict[str, Stat]], warnings: list[str]) -> tuple[dict[str, Stat], list[float]]:
    """Each kernel's samples over every slice (its roof is the best of them), and each slice's best figure
    over the kernels; a drift between slices beyond :data:`SLICE_DRIFT_NOTE` goes to ``warnings``.

    >>> a = {"read": Stat.of([50e9, 52e9])}; b = {"read": Stat.of([60e9, 61e9])}
    >>> runs, bests = merge_slices([a, b], w := [])
    >>> runs["read"].best, bests, len(w)
    (61000000000.0, [52000000000.0, 61000000000.0], 1)
    """
    merged = {name: Stat.of([x for sl in slices for x in sl[name].samples]) for name in slices[0]}
    bests = [max(s.best for s in sl.values()) for sl in slices]
    lo, hi = min(bests), max(bests)
    if len(bests) > 1 and hi > lo * (1 + SLICE_DRIFT_NOTE):
        warnings.append(f"main-memory bandwidth moved between the bench's {len(bests)} DRAM slices: "
                        + ", then ".join(f"{b / 1e9:.1f}" for b in bests)
                        + " GB/s (best kernel of each); the DRAM roof is the best slice. On a shared host, other "
                        "tenants' memory traffic moves it and shows in no counter this guest can read")
    return merged, bests


def stream_call(k: ModuleType, kind: int, a: NDArray[np.float64], b: NDArray[np.float64], c: NDArray[np.float64], m: int,
                 threads: int, out: NDArray[np.float64]) -> Callable[[int], float]:
    """``call(reps)``: kernel ``kind`` of :func:`roofline.bench._kernels.stream` (s = 0.5) ``reps`` times."""
    return lambda reps: k.stream(kind, a, b, c, 0.5, m, reps, threads, out)


def threading_layer(numba: ModuleType) -> str:
    try:
        return str(numba.threading_layer())
    except ValueError:
        return "unknown"


def spin_up(numba: ModuleType, k: ModuleType, threads: int, seconds: float = 0.1) -> None:
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


def check_memory(max_bytes: int, min_bytes: int) -> dict[str, Any] | None:
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


def memory_levels(sizes: list[int], curves: dict[int, dict[str, list[Stat]]], threads: int,
                  caches: dict[str, dict[str, Any]], cfg: BenchConfig, date: str,
                  shortage: dict[str, Any] | None, warnings: list[str],
                  long_runs: dict[str, Stat] | None = None,
                  dram_slices: list[float] | None = None) -> tuple[list[MemoryCeiling], dict[str, Any]]:
    """Plateaus of the all-thread triad curve -> MemoryCeilings L1..DRAM, with notes on sysfs agreement.

    Each level's bandwidth is the best of the read, copy and triad kernels on its plateau (every
    sample of every size on it); main memory's is the best of the long samples at the largest
    working set (``long_runs``: read, copy, triad and in place, over every slice; ``dram_slices``: each
    slice's best figure, recorded in the DRAM roof's details).
    """
    triad = np.array([s.median for s in curves[threads]["triad"]])
    caps = {lvl: float(c["capacity"]) for lvl, c in caches.items()}
    labelled = _levels.label_plateaus(_levels.detect_plateaus(sizes, triad), caps or None)
    single = _single_thread_levels(sizes, curves, threads, caches)
    info: dict[str, Any] = {"detected": [], "notes": []}
    memory: list[MemoryCeiling] = []
    names = [n for n, _ in labelled]
    if "DRAM" not in names:
        _assume_dram(labelled, sizes, triad, warnings, info)
    for i, (name, p) in enumerate(labelled):
        nxt = labelled[i + 1][1] if i + 1 < len(labelled) else None
        notes, capacity = _level_notes(name, p, nxt, caps, threads, shortage, info)
        idx = slice(p.first, p.last + 1)
        details: dict[str, Any] = {
            "threads": threads, "working_set_bytes": [p.start_bytes, p.end_bytes], "sizes": p.points,
            "kernels": {kname: float(np.median([s.median for s in curves[threads][kname][idx]])) for kname in KERNELS}}
        if name == "DRAM" and dram_slices:
            details["slice_best_bandwidths"] = dram_slices
        methods = _level_methods(name, p, sizes, curves[threads], details, long_runs)
        if name in single:
            details["single_thread_bandwidth"] = single[name]
        memory.append(memory_ceiling(name, capacity, methods, cfg, date, notes, warnings))
        info["detected"].append({"level": name, "bandwidth": memory[-1].bandwidth,
                                 "working_set_bytes": [p.start_bytes, p.end_bytes]})
    for lvl in sorted(caps):
        if lvl not in names:
            msg = f"sysfs reports {lvl} ({format_bytes(caps[lvl])} for {threads} thread(s)) but no plateau was detected for it"
            info["notes"].append(msg)
    # Device validation forbids duplicate levels; keep fastest first for readability
    memory.sort(key=lambda m: -m.bandwidth)
    return memory, info


def _single_thread_levels(sizes: list[int], curves: dict[int, dict[str, list[Stat]]], threads: int,
                          caches: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Each level's single-thread triad plateau (per-core cache sizes), where a single-thread sweep ran."""
    if 1 not in curves or threads <= 1:
        return {}
    caps1 = {lvl: float(c["size"]) for lvl, c in caches.items()}
    tri1 = np.array([s.median for s in curves[1]["triad"]])
    return {name: p.bandwidth for name, p in _levels.label_plateaus(_levels.detect_plateaus(sizes, tri1), caps1 or None)}


def _assume_dram(labelled: list[tuple[str, Any]], sizes: list[int], triad: NDArray[np.float64], warnings: list[str],
                 info: dict[str, Any]) -> None:
    """The sweep never reached main memory (memory shortage or a huge cache): best effort, said loudly."""
    msg = (f"no main-memory plateau detected up to {format_bytes(sizes[-1])}; DRAM is the bandwidth at the "
           "largest working set and may be an overestimate")
    warnings.append(msg)
    info["notes"].append(msg)
    first = max(0, len(sizes) - 3)
    tail = triad[first:]
    labelled.append(("DRAM", _levels.Plateau(first, len(sizes) - 1, sizes[first], sizes[-1], float(np.median(tail)),
                                             (float(tail.min()), float(tail.max())))))


def _level_notes(name: str, p: Any, nxt: Any, caps: dict[str, float], threads: int, shortage: dict[str, Any] | None,
                 info: dict[str, Any]) -> tuple[list[str], float | None]:
    """(notes, capacity) of one level: where its plateau ends against sysfs, and where its capacity came from."""
    notes = [STREAM_NOTE]
    cap = caps.get(name)
    if name != "DRAM" and cap:
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
    return notes, capacity


def _level_methods(name: str, p: Any, sizes: list[int], by_kernel: dict[str, list[Stat]], details: dict[str, Any],
                   long_runs: dict[str, Stat] | None) -> list[tuple[str, Stat, dict[str, Any]]]:
    """The methods of one level's roof: read, copy and triad on its plateau; for DRAM, the long samples."""
    idx = slice(p.first, p.last + 1)
    if name == "DRAM" and long_runs:
        # working_set_bytes stays the plateau's range (where the level holds); the figures are measured at the end
        details["sweep_plateau_bandwidth"] = p.bandwidth
        details["figure_working_set_bytes"] = sizes[-1]
        return [(f"numba {'STREAM ' + kname if kname in KERNELS else 'in-place x = x + s'}, long samples "
                 f"(>= 50 ms) at {format_bytes(sizes[-1])}", stat,
                 {**details, "kernel": kname,
                  "bytes_per_element": KERNELS[kname][0] if kname in KERNELS else ERT_BYTES_PER_ELEMENT})
                for kname, stat in long_runs.items()]
    return [(f"numba STREAM {kname} sweep, {p.points} size(s) on the plateau",
             Stat.of([x for s in by_kernel[kname][idx] for x in s.samples]),
             {**details, "kernel": kname, "bytes_per_element": KERNELS[kname][0]})
            for kname in LONG_KERNELS]


def memory_ceiling(level: str, capacity: float | None, methods: list[tuple[str, Stat, dict[str, Any]]],
                    cfg: BenchConfig, date: str, notes: list[str], warnings: list[str]) -> MemoryCeiling:
    value, best, stat, details = best_of(methods, ROOF_STATISTIC)
    notes = [*notes, f"the best of {len(methods)} kernel(s) (every figure in 'methods'); each figure is "
             f"{ROOF_STATISTIC.format(n='N')}, as STREAM reports"]
    warn_spread(f"{level} bandwidth ({best.method})", stat, warnings)
    return MemoryCeiling(level, value, capacity, replace(stat_provenance(stat, cfg, date, best.method, details,
                                                               note="; ".join(notes)), methods=best.methods))


def ert_curve(k: ModuleType, ws: int, threads: int, cfg: BenchConfig, rng: np.random.Generator,
               report: Progress) -> tuple[ErtCurve, list[Stat]]:
    """ERT: GFLOP/s of an in-place kernel with 1..1024 FLOPs per element over a DRAM-sized array.

    Returns the curve and each point's samples (for the roofs only; not kept).  The model
    ``min(peak, AI x DRAM)`` is added once the roofs are known.
    """
    n = ws // 8
    x = rng.random(n)
    x += 0.5  # in place: one DRAM-sized array, as check_memory assumed
    out = np.zeros(threads)
    flops_per_elem = [int(f) for f in cfg.ert_flops]
    rates: list[Stat] = []
    for i, f in enumerate(flops_per_elem):
        report(i / len(flops_per_elem), f"ERT curve: {f} FLOP/element")
        kind, m = (k.ERT_ADD, 0) if f == 1 else (k.ERT_FMA, f // 2)
        flops = float(n * (1 if f == 1 else 2 * m))
        # alpha = beta = 0.5: x -> 0.5x + 0.5 stays in [0.5, 1.5] (no overflow, no denormals)
        stat, _ = measure_rate(stream_call(k, kind, x, x, x, m, threads, out),
                               flops, max(3, cfg.repeats // 2), cfg.min_sample_seconds, threads, "ERT curve")
        rates.append(stat)
    ai = [(1 if f == 1 else 2 * (f // 2)) / ERT_BYTES_PER_ELEMENT for f in flops_per_elem]
    curve = ErtCurve(tuple(float(f) for f in flops_per_elem), tuple(ai), tuple(s.median for s in rates),
                     tuple((s.q1, s.q3) for s in rates), float(ws), threads,
                     note=(f"model = min(fp64 vector roof, AI x DRAM roof), the roofs being the best of every method "
                           f"(this curve included); the ERT kernel updates in place ({ERT_BYTES_PER_ELEMENT} "
                           "B/element, no write-allocate)"))
    return curve, rates


def sweep_facts(sizes: list[int], curves: dict[int, dict[str, list[Stat]]]) -> Sweep:
    """The bandwidth sweep as typed bench facts: one curve per (kernel, threads), medians and quartiles."""
    return Sweep(tuple(float(x) for x in sizes),
                 tuple(SweepCurve(name, t, tuple(s.median for s in stats), tuple((s.q1, s.q3) for s in stats))
                       for t, by in curves.items() for name, stats in by.items()),
                 STREAM_NOTE)
