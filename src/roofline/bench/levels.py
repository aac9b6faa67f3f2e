"""Find the memory-hierarchy plateaus in a bandwidth-vs-working-set curve.

A sweep of bandwidth over working sets (16 KiB .. beyond the last-level
cache) is a staircase: flat where the data fits one level, falling where it
spills to the next.  :func:`detect_plateaus` finds the flat runs; each run is
one level, its bandwidth the median of its points, and its working-set range
the first and last size in the run.  :func:`label_plateaus` names them L1, L2,
L3, DRAM, with the cache sizes the OS reports when they are known.

The detector works on log-bandwidth, so a tolerance means the same thing at
20 GB/s as at 500 GB/s, and it uses every point of a level, so one noisy
sample cannot split or hide one:

1. a running median of 3 removes single noisy samples;
2. for k = 1, 2, ... levels, dynamic programming finds the least-squares
   split of the curve into k constant runs; the answer is the largest k
   whose neighbouring levels all differ by at least ``min_step`` and whose
   runs all have ``min_points`` points (more levels than that is fitting noise);
3. inside each run, the points within ``flat_tol`` of its level give the
   working-set range (points on a transition between levels are left out).

>>> import numpy as np
>>> sizes = 2.0 ** np.arange(14, 28, 0.25)            # 16 KiB .. 128 MiB
>>> bw = np.where(sizes < 2**20, 200e9, 40e9)          # one cache, then DRAM
>>> [round(p.bandwidth / 1e9) for p in detect_plateaus(sizes, bw)]
[200, 40]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from roofline.core.stats import quartiles


@dataclass(frozen=True)
class Plateau:
    """A flat run of the curve: sizes[first..last] (inclusive) at ``bandwidth`` B/s."""

    first: int
    last: int
    start_bytes: float  # smallest working set in the run
    end_bytes: float  # largest working set in the run
    bandwidth: float  # median of the run's (raw) points, B/s
    spread: tuple[float, float]  # interquartile range of the run's points, B/s

    @property
    def points(self) -> int:
        return self.last - self.first + 1


def _segment(v: np.ndarray, k: int) -> list[tuple[int, int]]:
    """Best split of ``v`` into ``k`` runs with constant level (least squares), by dynamic programming."""
    n = len(v)
    c1 = np.concatenate([[0.0], np.cumsum(v)])
    c2 = np.concatenate([[0.0], np.cumsum(v * v)])

    def sse(i: int, j: int) -> float:  # v[i:j]
        m = j - i
        s = c1[j] - c1[i]
        return float(c2[j] - c2[i] - s * s / m)

    inf = float("inf")
    cost = np.full((k + 1, n + 1), inf)
    cut = np.zeros((k + 1, n + 1), dtype=int)
    cost[0, 0] = 0.0
    for seg in range(1, k + 1):
        for j in range(seg, n + 1):
            best, arg = inf, seg - 1
            for i in range(seg - 1, j):
                c = cost[seg - 1, i] + sse(i, j)
                if c < best:
                    best, arg = c, i
            cost[seg, j], cut[seg, j] = best, arg
    bounds = []
    j = n
    for seg in range(k, 0, -1):
        i = int(cut[seg, j])
        bounds.append((i, j - 1))
        j = i
    return bounds[::-1]


def detect_plateaus(sizes: Sequence[float] | NDArray[np.float64], bandwidths: Sequence[float] | NDArray[np.float64], *, min_step: float = 0.15,
                    min_points: int = 2, max_levels: int = 6, flat_tol: float = 0.12) -> list[Plateau]:
    """Plateaus of ``bandwidths`` over ascending ``sizes`` (bytes), smallest working set first.

    ``min_step``: neighbouring levels differ by at least this much (relative);
    ``min_points``: shortest run that counts as a level; ``flat_tol``: a point
    belongs to its level's working-set range when within this of the level
    (points on a transition between levels are left out).
    """
    x = np.asarray(sizes, dtype=float)
    y = np.asarray(bandwidths, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("sizes and bandwidths must be 1-D and the same length")
    n = len(x)
    if n == 0:
        return []
    if np.any(y <= 0) or np.any(np.diff(x) <= 0):
        raise ValueError("bandwidths must be > 0 and sizes strictly ascending")
    logy = np.log(y)
    smooth = logy.copy()
    if n >= 3:  # a running median of 3 removes single noisy samples
        smooth[1:-1] = np.median(np.stack([logy[:-2], logy[1:-1], logy[2:]]), axis=0)
    step = math.log1p(min_step)
    best: list[tuple[int, int]] = [(0, n - 1)]
    for k in range(2, min(max_levels, n // max(min_points, 1)) + 1):
        segs = _segment(smooth, k)
        if any(hi - lo + 1 < min_points for lo, hi in segs):
            continue
        levels = [float(np.median(smooth[lo:hi + 1])) for lo, hi in segs]
        if all(abs(a - b) >= step for a, b in zip(levels, levels[1:], strict=False)):
            best = segs
    out = []
    tol = math.log1p(flat_tol)
    for lo, hi in best:
        level = float(np.median(smooth[lo:hi + 1]))
        core = [i for i in range(lo, hi + 1) if abs(smooth[i] - level) <= tol]
        if len(core) < min_points:
            core = list(range(lo, hi + 1))
        first, last = core[0], core[-1]
        pts = y[first:last + 1]
        q1, _, q3 = quartiles(pts)
        out.append(Plateau(first, last, float(x[first]), float(x[last]), float(np.median(pts)), (float(q1), float(q3))))
    return out


def label_plateaus(plateaus: Sequence[Plateau], caches: Mapping[str, float] | None = None) -> list[tuple[str, Plateau]]:
    """Name each plateau L1, L2, L3 ... and main memory ``DRAM``.

    ``caches``: level name -> capacity in bytes as the OS reports it (for the
    threads used), e.g. ``{"L1": 64 KiB, "L2": 2 MiB, "L3": 32 MiB}``.  With it,
    a plateau takes the name of the smallest cache holding the middle of its
    working-set range (geometric mean of first and last size: a range's ends
    blur into the neighbouring levels); one that fits none is main memory.  Without it,
    plateaus are named in order and the last is main memory.  When two plateaus
    want the same cache name the longer keeps it and the other is dropped; main
    memory is always the last plateau.  A plateau slower than a later one is dropped.

    >>> from roofline.bench.levels import Plateau
    >>> p = [Plateau(0, 3, 16e3, 48e3, 300e9, (290e9, 310e9)), Plateau(6, 20, 2e5, 8e7, 30e9, (29e9, 31e9))]
    >>> [name for name, _ in label_plateaus(p, {"L1": 64e3, "L2": 2e6})]
    ['L1', 'DRAM']
    """
    # bandwidth falls with every level: a run slower than a later one is not a level but an artifact
    # (the smallest working sets, where each thread's chunk is so short that call overhead dominates)
    plateaus = [p for i, p in enumerate(plateaus) if all(p.bandwidth > q.bandwidth for q in plateaus[i + 1:])]
    if not plateaus:
        return []
    named: list[tuple[str, Plateau]] = []
    if caches:
        ordered = sorted(caches.items(), key=lambda kv: kv[1])
        for p in plateaus:
            mid = math.sqrt(p.start_bytes * p.end_bytes)
            name = next((lvl for lvl, cap in ordered if mid <= cap), "DRAM")
            named.append((name, p))
        if named[-1][0] != "DRAM" and plateaus[-1].start_bytes > ordered[-1][1]:
            named[-1] = ("DRAM", named[-1][1])
    else:
        for i, p in enumerate(plateaus):
            last = i == len(plateaus) - 1
            named.append(("DRAM" if last else f"L{i + 1}", p))
    # one plateau per name: for a cache the one with the most points; for main memory the last one
    # (a short run on the way down from the last cache also lies beyond it, but is not main memory)
    best: dict[str, tuple[str, Plateau]] = {}
    for name, p in named:
        if name not in best or name == "DRAM" or p.points > best[name][1].points:
            best[name] = (name, p)
    return sorted(best.values(), key=lambda np_: np_[1].first)
