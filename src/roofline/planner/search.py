"""Every layout of a training step or a serving replica on a system estimated, those that fit ranked."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from roofline.core.errors import RooflineError
from roofline.hardware.system import System
from roofline.llm.training import TrainingRun
from roofline.planner.cache import Cache
from roofline.planner.dims import divisors, tp_fits
from roofline.planner.layout import Layout
from roofline.planner.serve import ServingEstimate, ServingRun, estimate_serving, serving_layouts
from roofline.planner.train import Estimate, estimate, layouts

#: layouts named as the nearest to fitting (or the nearest batches that divide) when none does
NEAREST = 3


@dataclass(frozen=True)
class Plan:
    """Ranked layouts: the ones that fit (most tokens per second first), how many were tried, how many did
    not fit memory, and the search's wall time."""

    run: TrainingRun | ServingRun
    system: System
    ranked: tuple[Estimate | ServingEstimate, ...]
    tried: int
    too_big: int
    seconds: float
    uneven: int = 0  # layouts whose groups split unevenly over the nodes (skipped)
    nearest: tuple[Estimate | ServingEstimate, ...] = ()  # of those past memory, the ones nearest to fitting


def plan(run: TrainingRun | ServingRun, system: System, *, top: int = 10, overlap: float = 0.0,
         overlaps: tuple[bool, ...] = (True, False, True, True), fixed: dict[str, Any] | None = None,
         **options: Any) -> Plan:
    """Every layout (:func:`layouts` for training, :func:`serving_layouts` for serving) estimated; those
    that fit memory ranked by tokens per second (training: the forecast step time, the global batch being
    fixed).  ``overlap``: serving's hidden share; ``overlaps``: training's (dp, tp, pp, ep) overlap rules
    (:mod:`roofline.planner.overlap`).  ``fixed``: Layout fields (``{"tp": 8, "pp": 2}``) every layout tried
    keeps; the rest are searched."""
    import time as clock

    t0 = clock.perf_counter()
    fits: list[Estimate | ServingEstimate] = []
    near: list[Estimate | ServingEstimate] = []
    tried = too_big = uneven = 0
    cache = Cache(system)
    serving = isinstance(run, ServingRun)
    candidates: Iterable[Layout] = (serving_layouts(run, system, overlap=overlap) if isinstance(run, ServingRun)
                                    else layouts(run, system, overlap=overlaps, **options))
    if isinstance(run, TrainingRun):  # every shard shape's forecast in one batch: layouts share them
        candidates = [lay for lay in candidates if not fixed or all(getattr(lay, k) == v for k, v in fixed.items())]
        cache.prefetch_forecasts(run, {(lay.tp, lay.cp, lay.ep, lay.micro_batch) for lay in candidates})
    for lay in candidates:
        if fixed and any(getattr(lay, k) != v for k, v in fixed.items()):
            continue
        tried += 1
        try:
            e: Estimate | ServingEstimate = (estimate_serving(run, lay, system, cache) if isinstance(run, ServingRun)
                                             else estimate(run, lay, system, cache, checked=True))
        except RooflineError:  # a group that splits unevenly over the nodes: not a layout to run
            uneven += 1
            continue
        if e.fits:
            fits.append(e)
        else:
            too_big += 1
            if not fits:
                near.append(e)
                if len(near) > 64:
                    near = sorted(near, key=lambda x: x.memory_total)[:NEAREST]
    # ties (ZeRO stages that cost no time): less memory first
    fits.sort(key=lambda e: (-e.tokens_per_second, e.memory_total))
    assert serving or all(isinstance(e, Estimate) for e in fits)
    nearest = () if fits else tuple(sorted(near, key=lambda x: x.memory_total)[:NEAREST])
    return Plan(run, system, tuple(fits[:top]), tried, too_big, clock.perf_counter() - t0, uneven, nearest)


def no_layout_divides(run: TrainingRun, system: System) -> str:
    """Why no training layout divides ``system``, in one line: the constraint that failed for the shapes
    tp x cp x pp x dp that split the devices, and the nearest global batches that do divide (with a layout)."""
    a, n, d = run.arch, system.devices, system.domain
    tps = [t for t in divisors(d) if tp_fits(a, t)]
    if not tps:
        return f"no tp within a scale-up domain of {d} devices divides {a.name}'s {a.heads} heads and its widths"
    notes = [] if all(run.seq % t == 0 for t in tps) else [
        f"sequence parallelism splits the {run.seq} tokens over tp {', '.join(str(t) for t in tps if run.seq % t == 0)} "
        "only"]
    tps = [t for t in tps if run.seq % t == 0]
    offers: dict[int, str] = {}
    for tp in tps:
        for pp in (p for p in divisors(n // tp) if p <= a.layers):
            dp = n // (tp * pp)
            for gb in (run.global_batch // dp * dp, -(-run.global_batch // dp) * dp):
                if gb >= max(dp * pp, 1) and gb != run.global_batch:
                    offers.setdefault(gb, Layout(tp=tp, pp=pp, dp=dp).describe().replace(" zero1 mb1 selective", ""))
    near = sorted(offers, key=lambda gb: (abs(gb - run.global_batch), gb))[:NEAREST]
    if not any(c > 1 and run.seq % (2 * c) == 0 for c in divisors(n)):
        notes.append(f"no cp > 1 splits the {run.seq}-token sequence into 2 cp equal chunks")
    seq = f" ({'; '.join(notes)})" if notes else ""
    return (f"global batch {run.global_batch} is no whole number (>= pp) of micro-batches over the data-parallel "
            f"ranks of any tp x pp x dp of {n} devices{seq}; nearest that divide: "
            + ", ".join(f"--global-batch {gb} ({offers[gb]})" for gb in near))
