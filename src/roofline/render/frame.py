"""What one roofline chart draws, shared by the drawing (:mod:`roofline.render.chart`), the label placement
(:mod:`roofline.render.labels`) and the look (:mod:`roofline.render.style`): its points and its frame."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from roofline.hardware.bench_facts import SpecRoof
from roofline.hardware.device import ComputeCeiling, MemoryCeiling


@dataclass
class Point:
    """A point to draw: (intensity FLOP/B, FLOP/s); ``measured`` draws it hollow."""

    label: str
    intensity: float
    flops: float
    kind: str = "other"
    measured: bool = False
    weight: float = 1.0  # share of time, sets the marker size
    partner: int | None = None  # index of the predicted point a measured one joins
    judged: str = ""  # measured: the cache level it is judged against ("" = its predicted roof's level)


@dataclass
class Frame:
    """What one chart draws and where: roofs, slopes, the marked ridge, axis ranges and scale."""

    ceilings: Sequence[ComputeCeiling]
    spec: list[SpecRoof]  # theoretical roofs of the precisions drawn
    mems: list[MemoryCeiling]
    main: MemoryCeiling
    top: ComputeCeiling  # the roof whose ridge is marked
    ridge: float
    x_lo: float
    x_hi: float
    y_lo: float
    y_hi: float
    scale: float
    unit: str
    clipped: bool = False  # an axis range was clipped to AXIS_MIN..AXIS_MAX (a note goes on the chart)
    # achievable (sustained) figures of the roofs drawn: (peak roof, achievable one); where the achievable
    # roofs meet (the main level's sustained bandwidth, the fastest drawn roof's sustained FLOP/s)
    achievable: list[tuple[ComputeCeiling, ComputeCeiling]] = field(default_factory=list)
    achievable_mems: list[tuple[MemoryCeiling, MemoryCeiling]] = field(default_factory=list)
    achievable_bandwidth: float = math.nan
    achievable_peak: float = math.nan
    ridge_at: float = math.nan  # the marked ridge (FLOP/B): the summary's, or ``top`` over ``main`` without one
