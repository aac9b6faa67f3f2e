"""How the CPU bench samples and reports: its configuration, rates with their spread, and provenance.

A rate is sampled by :func:`measure_rate` (reps grown until one sample lasts long enough); a roof is the
best of its samples (as STREAM reports), with the interquartile range beside it (:class:`Stat`), and
:func:`best_of` picks the best of every method that ran at one (unit, precision, level).
"""

from __future__ import annotations

import functools
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError
from roofline.core.stats import SPREAD_WARN, quartiles, relative_spread
from roofline.hardware.ceilings import MethodFigure
from roofline.hardware.device import Provenance

KiB = 1024
MiB = 1024 * 1024


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
    """Seconds a call measured itself (e.g. inside its threads); :func:`timeit` takes them as they are."""


def timeit(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    result = fn()
    return float(result) if isinstance(result, Timed) else time.perf_counter() - t0


def measure_rate(call: Callable[[int], Any], work_per_rep: float, repeats: int, min_seconds: float,
                 threads: int = 0, what: str = "") -> tuple[Stat, int]:
    """Rates (work per second) of ``call(reps)``; reps chosen so one sample takes >= ``min_seconds``.

    The first call warms up (page faults, caches, lazy compilation); then reps grow until a call
    lasts ``min_seconds``.  With ``threads``, each sample's process CPU time is checked against
    threads x its wall time (:func:`roofline.bench.contention.sample_disturbed`): a disturbed sample
    is measured again, up to :data:`~roofline.bench.contention.RESAMPLE_BUDGET` x ``repeats`` extra
    samples; what stays disturbed is counted in :data:`roofline.bench.contention.TALLY` (``what``).
    """
    call(1)
    reps = 1
    for _ in range(40):  # grow until one sample is long enough (call overhead hides in short ones)
        t = timeit(functools.partial(call, reps))
        if t >= min_seconds:
            break
        reps = max(reps * 2, math.ceil(reps * 1.2 * min_seconds / max(t, 1e-9)))
    rates = _samples(lambda: timeit(lambda: call(reps)), work_per_rep * reps, repeats, threads, what)
    return Stat.of(rates), reps


def _samples(sample: Callable[[], float], work: float, repeats: int, threads: int, what: str) -> list[float]:
    """``repeats`` rates of ``sample()``; with ``threads``, disturbed ones replaced within the budget."""
    from roofline.bench import contention

    if not threads:
        return [work / max(sample(), 1e-9) for _ in range(repeats)]
    clean: list[float] = []
    disturbed: list[float] = []
    budget = math.ceil(contention.RESAMPLE_BUDGET * repeats)
    tally = contention.TALLY
    while len(clean) < repeats and len(clean) + len(disturbed) < repeats + budget:
        c0, w0 = time.process_time(), time.perf_counter()
        seconds = sample()
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        tally.checked += 1
        rate = work / max(seconds, 1e-9)
        if contention.sample_disturbed(wall, cpu, threads):
            tally.disturbed += 1
            disturbed.append(rate)
        else:
            clean.append(rate)
    kept = disturbed[: repeats - len(clean)] if len(clean) < repeats else []
    if kept:
        tally.kept_disturbed += len(kept)
        tally.where[what or "unnamed"] = tally.where.get(what or "unnamed", 0) + len(kept)
    return clean + kept


class Stages:
    """Progress over weighted stages."""

    def __init__(self, report: Progress, weights: dict[str, float]) -> None:
        self.report, self.weights, self.base = report, weights, 0.02

    def at(self, name: str, fraction: float, what: str) -> None:
        self.report(self.base + self.weights[name] * fraction, what)

    def done(self, name: str) -> None:
        self.base += self.weights[name]


def stat_provenance(stat: Stat, cfg: BenchConfig, date: str, method: str, details: dict[str, Any], note: str = "") -> Provenance:
    return Provenance(kind="measured", source="roofline bench", method=method, date=date, repeats=len(stat.samples),
                      spread=(stat.q1, stat.q3), note=note,
                      details={**details, "spread_kind": "interquartile range", "mode": cfg.mode})


def warn_spread(what: str, stat: Stat, warnings: list[str]) -> None:
    if stat.rel_spread > SPREAD_WARN:
        warnings.append(f"{what}: spread {stat.rel_spread:.0%} of the median (> {SPREAD_WARN:.0%}); "
                        "the machine was busy or noisy, rerun or use --full")


def best_of(methods: list[tuple[str, Stat, dict[str, Any]]], statistic: str) -> tuple[float, Provenance, Stat, dict[str, Any]]:
    """(best figure, its method name, its Stat, its details) over ``methods``, plus every method's figure."""
    name, stat, details = max(methods, key=lambda m: m[1].best)
    figures = tuple(MethodFigure(m, s.best, (s.q1, s.q3), statistic.format(n=len(s.samples))) for m, s, _ in methods)
    return stat.best, Provenance(method=name, methods=figures), stat, details
