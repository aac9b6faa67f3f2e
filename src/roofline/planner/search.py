"""Every layout of a training step or a serving replica on a system estimated, those that fit ranked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roofline.errors import RooflineError
from roofline.llm.training import TrainingRun
from roofline.planner.cache import _Cache
from roofline.planner.serve import ServingEstimate, ServingRun, estimate_serving, serving_layouts
from roofline.planner.train import Estimate, estimate, layouts
from roofline.system import System


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


def plan(run: TrainingRun | ServingRun, system: System, *, top: int = 10, overlap: float = 0.0,
         **options: Any) -> Plan:
    """Every layout (:func:`layouts` for training, :func:`serving_layouts` for serving) estimated; those
    that fit memory ranked by tokens per second (training: the step time, the global batch being fixed)."""
    import time as clock

    t0 = clock.perf_counter()
    fits: list[Estimate | ServingEstimate] = []
    tried = too_big = uneven = 0
    cache = _Cache(system)
    serving = isinstance(run, ServingRun)
    candidates = (serving_layouts(run, system, overlap=overlap) if isinstance(run, ServingRun)
                  else layouts(run, system, overlap=overlap, **options))
    for lay in candidates:
        tried += 1
        try:
            e: Estimate | ServingEstimate = (estimate_serving(run, lay, system, cache) if isinstance(run, ServingRun)
                                             else estimate(run, lay, system, cache))
        except RooflineError:  # a group that splits unevenly over the nodes: not a layout to run
            uneven += 1
            continue
        if e.fits:
            fits.append(e)
        else:
            too_big += 1
    # ties (ZeRO stages that cost no time): less memory first
    fits.sort(key=lambda e: (-e.tokens_per_second, e.memory_total))
    assert serving or all(isinstance(e, Estimate) for e in fits)
    return Plan(run, system, tuple(fits[:top]), tried, too_big, clock.perf_counter() - t0, uneven)
