"""The one spread definition: timings and rates are summarised by their median and interquartile range.

Every measured figure (a bench roof, an audit kernel, a measured model or op,
a timed callable) keeps its median and its quartiles q1..q3, computed as
``numpy.percentile`` does (linear interpolation).  Its *spread* is
(q3 - q1) / median; above :data:`SPREAD_WARN` (10%) the figure comes with a
warning.  Why quartiles: on a shared, noisy machine a few samples are far off
(a preempted run); the interquartile range ignores them where a 10th..90th
percentile window, with ten samples, is set by the single fastest and slowest.

An op above its roof is flagged only beyond its own fast-side spread,
(median - q1) / median, at least :data:`MIN_TOLERANCE`; with a single sample
it has no spread and gets :data:`SINGLE_SAMPLE_TOLERANCE`.

>>> t = Timing.of([1.0, 1.1, 1.2, 1.3, 5.0])
>>> t.median, t.low, t.high, round(t.spread, 3)
(1.2, 1.1, 1.3, 0.167)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError

SPREAD_KIND = "interquartile range"
SPREAD_WARN = 0.10  # a figure whose (q3 - q1) / median is above this comes with a warning
MIN_TOLERANCE = 0.02  # the above-roof tolerance is never below this (clock and profiler granularity)
SINGLE_SAMPLE_TOLERANCE = 0.10  # for an op measured once: no spread of its own to go by
MIN_BATCH_SECONDS = 2e-3  # time calls in batches at least this long, so the clock's resolution does not matter


def quartiles(samples: Sequence[float] | np.ndarray) -> tuple[float, float, float]:
    """(q1, median, q3) of ``samples``, interpolated linearly as numpy.percentile does."""
    q1, med, q3 = np.percentile(np.asarray(samples, dtype=float), [25, 50, 75])
    return float(q1), float(med), float(q3)


def relative_spread(low: float, high: float, median: float) -> float:
    """(q3 - q1) / median; infinite for a median that is not positive."""
    return (high - low) / median if median > 0 else math.inf


@dataclass(frozen=True)
class Timing:
    """Seconds per run over ``repeats``: median and quartiles (``low`` = q1, ``high`` = q3)."""

    median: float
    low: float
    high: float
    repeats: int

    @property
    def spread(self) -> float:
        """(q3 - q1) / median."""
        return relative_spread(self.low, self.high, self.median)

    def tolerance(self) -> float:
        """The above-roof tolerance of a point timed this way (module docs give the rule)."""
        if self.repeats < 2:
            return SINGLE_SAMPLE_TOLERANCE
        return max((self.median - self.low) / self.median if self.median > 0 else 0.0, MIN_TOLERANCE)

    @classmethod
    def of(cls, samples: Sequence[float]) -> Timing:
        q1, med, q3 = quartiles(samples)
        return cls(med, q1, q3, len(samples))

    def to_dict(self) -> dict[str, float]:
        return {"median": self.median, "q1": self.low, "q3": self.high, "repeats": self.repeats}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], field: str, where: str) -> Timing:
        from roofline.core.fileio import as_int, as_number

        return cls(as_number(d.get("median"), f"{field}.median", where, minimum=0.0),
                   as_number(d.get("q1"), f"{field}.q1", where, minimum=0.0),
                   as_number(d.get("q3"), f"{field}.q3", where, minimum=0.0),
                   as_int(d.get("repeats"), f"{field}.repeats", where, minimum=1))

    def warning(self, what: str) -> str | None:
        from roofline.core.units import format_seconds

        if self.spread <= SPREAD_WARN:
            return None
        return (f"timing spread {self.spread:.0%} (above {SPREAD_WARN:.0%}) for {what}: median "
                f"{format_seconds(self.median)}, quartiles {format_seconds(self.low)}..{format_seconds(self.high)} "
                f"of {self.repeats} repeats; measured figures are uncertain")


@dataclass(frozen=True)
class OpTimings:
    """Per-op seconds per run over its samples: q1, median, q3 and the sample count (NaN / 0 when unmeasured)."""

    low: np.ndarray
    median: np.ndarray
    high: np.ndarray
    samples: np.ndarray

    @classmethod
    def of(cls, per_run: np.ndarray) -> OpTimings:
        """From a (runs, ops) array of seconds, NaN where a run has no time for the op."""
        per_run = np.atleast_2d(np.asarray(per_run, dtype=float))
        samples = np.isfinite(per_run).sum(axis=0)
        seen = samples > 0
        q = np.full((3, per_run.shape[1]), np.nan)
        if seen.any():
            q[:, seen] = np.nanpercentile(per_run[:, seen], [25, 50, 75], axis=0)
        return cls(q[0], q[1], q[2], samples)

    def tolerance(self) -> np.ndarray:
        """Per op: above-roof tolerance from its own fast-side spread (module docs give the rule)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            fast = np.where(self.median > 0, (self.median - self.low) / self.median, 0.0)
        return np.where(self.samples >= 2, np.maximum(np.nan_to_num(fast), MIN_TOLERANCE), SINGLE_SAMPLE_TOLERANCE)

    def to_dict(self) -> dict[str, list[Any]]:
        from roofline.core.fileio import json_numbers

        return {"q1": json_numbers(self.low), "median": json_numbers(self.median), "q3": json_numbers(self.high),
                "samples": [int(k) for k in self.samples.tolist()]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], n: int, field: str, where: str) -> OpTimings:
        """Columns of ``n`` values each (null = not measured), checked."""
        from roofline.core.fileio import as_list, as_number

        def col(key: str, minimum: float = 0.0) -> np.ndarray:
            values = as_list(d.get(key), f"{field}.{key}", where)
            if len(values) != n:
                from roofline.core.errors import RooflineError

                raise RooflineError(f"{field}.{key} has {len(values)} values, the workload has {n} ops", where=where)
            return np.asarray([math.nan if v is None else as_number(v, f"{field}.{key}[{i}]", where, minimum=minimum)
                               for i, v in enumerate(values)], dtype=float)

        return cls(col("q1"), col("median"), col("q3"), col("samples").astype(np.int64))


def time_calls(fn: Callable[[], Any], *, repeats: int, warmup: int, sync: Callable[[], Any] | None = None,
               clock: Callable[[], float] = time.perf_counter) -> Timing:
    """Median and spread of ``fn()``'s run time; short calls are timed in batches.

    ``clock``: seconds, read around each batch (a test injects one to check this logic without a quiet host).
    """
    if repeats < 1 or warmup < 0:
        raise RooflineError(f"repeats must be >= 1 and warmup >= 0, got repeats={repeats}, warmup={warmup}")
    for _ in range(warmup):
        fn()
    if sync:
        sync()
    t0 = clock()
    fn()
    if sync:
        sync()
    once = clock() - t0
    inner = max(1, min(10_000, math.ceil(MIN_BATCH_SECONDS / max(once, 1e-9))))
    samples = []
    for _ in range(repeats):
        t0 = clock()
        for _ in range(inner):
            fn()
        if sync:
            sync()
        samples.append((clock() - t0) / inner)
    return Timing.of(samples)
