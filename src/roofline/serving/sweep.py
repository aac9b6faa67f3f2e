"""Rates swept: the highest Poisson rate whose p99 TTFT and TPOT meet an SLO, and the latency-throughput curve.

Per tp size: the rate doubles from ``start`` until the SLO is missed (at most :data:`DOUBLINGS` times), then
:data:`BISECTIONS` bisections between the last rate met and the first missed; every simulated rate is a point
of the curve.  Each point is a full simulation of the same number of requests with the same seed (the
arrival gaps scale with the rate, the lengths stay the same).  A rate "meets" the SLO only when its p99s do and
the run keeps up with it (:class:`~roofline.serving.figures.Load`: served within the tolerance of the rate
offered): a saturated rate, or one whose run is too short to reach steady state, misses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from roofline.core.errors import RooflineError
from roofline.hardware.device import Device
from roofline.serving.config import ServeConfig
from roofline.serving.figures import Slo
from roofline.serving.requests import Traffic
from roofline.serving.run import ServeResult, serve

DOUBLINGS = 12
BISECTIONS = 6


@dataclass(frozen=True)
class RateCurve:
    """One tp size: each simulated rate's result (sorted by rate) and the best rate meeting the SLO."""

    tp: int
    points: tuple[tuple[float, ServeResult], ...]
    best_rate: float | None

    @property
    def best(self) -> ServeResult | None:
        return next((r for rate, r in self.points if rate == self.best_rate), None)

    def kv_full_from(self) -> float | None:
        """The lowest simulated rate at which the KV cache filled (None: never)."""
        return next((rate for rate, r in self.points if r.figures.kv_cache_full_at_s is not None), None)

    def next_miss(self) -> tuple[float, ServeResult] | None:
        """The lowest simulated rate above the best that missed (None: none above it): what bounds the best, e.g.
        a run too short to reach steady state (more requests may find a higher rate)."""
        floor = -math.inf if self.best_rate is None else self.best_rate
        return next(((rate, r) for rate, r in self.points if rate > floor and not r.figures.meets_slo), None)

    def to_dict(self) -> dict[str, Any]:
        return {"tp": self.tp, "devices": self.points[0][1].devices if self.points else 0,
                "best_rate_per_s": self.best_rate, "kv_cache_full_from_rate_per_s": self.kv_full_from(),
                "points": [_point(rate, r) for rate, r in self.points]}


_KEYS = ("output_tokens_per_s", "requests_per_s", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s",
         "e2e_p99_s", "preemptions", "meets_slo", "load")


def _point(rate: float, r: ServeResult) -> dict[str, Any]:
    figures = r.figures.to_dict()
    return {"rate_per_s": rate, **{k: figures[k] for k in _KEYS if k in figures}}


@dataclass(frozen=True)
class Where:
    """The devices a sweep runs on: a ``device`` (one replica of tp devices) or a ``system`` (its devices / tp
    replicas), as :func:`roofline.serve` takes them."""

    device: str | Device | None = None
    system: str | None = None


def sweep_rate(model: Any, device: str | Device | None = None, *, system: str | None = None, tps: tuple[int, ...],
               traffic: Traffic, config: ServeConfig | None = None, slo: Slo, start: float = 1.0) -> list[RateCurve]:
    """A :class:`RateCurve` per tp size of :func:`roofline.serve` runs of ``traffic`` (its ``rate`` swept from
    ``start``; its lengths, request count and seed kept) under ``config``.  At most
    ``len(tps) x (DOUBLINGS + BISECTIONS + 1) x traffic.requests`` request-simulations
    (:func:`roofline.core.limits.max_serve_work`)."""
    from roofline.core import arguments as arg
    from roofline.core.limits import check_work, max_serve_work

    arg.need(slo, Slo, "sweep_rate", "slo", "an Slo")
    arg.need(traffic, Traffic, "sweep_rate", "traffic", "a Traffic")
    if isinstance(tps, (str, bytes)) or not isinstance(tps, (tuple, list)):
        raise arg.type_error("sweep_rate", "tps", "a non-empty tuple of whole numbers >= 1", tps)
    if not tps:
        raise arg.value_error("sweep_rate", "tps", "a non-empty tuple of whole numbers >= 1", tps)
    for i, tp in enumerate(tps):
        arg.positive_int(tp, "sweep_rate", f"tps[{i}]")
    arg.number(start, "sweep_rate", "start")
    if not start > 0:
        raise arg.value_error("sweep_rate", "start", "a finite number of requests/s > 0", start)
    if slo.ttft is None and slo.tpot is None:
        raise RooflineError("sweep_rate: slo must limit ttft or tpot (--sweep-rate needs --slo, e.g. "
                            "ttft=2s,tpot=200ms)")
    check_work("sweep_rate: requests x simulations", len(tps) * (DOUBLINGS + BISECTIONS + 1) * traffic.requests,
               max_serve_work(), "ROOFLINE_MAX_SERVE_WORK")
    if traffic.trace is not None or traffic.concurrency is not None:
        raise RooflineError("--sweep-rate sweeps Poisson rates: drop --trace and --concurrency")
    return [_curve(model, Where(device, system), tp, traffic, config, slo, start) for tp in tps]


def _curve(model: Any, where: Where, tp: int, traffic: Traffic, config: ServeConfig | None, slo: Slo,
           start: float) -> RateCurve:
    runs: dict[float, ServeResult] = {}

    def meets(rate: float) -> bool:
        runs[rate] = r = serve(model, where.device, system=where.system, tp=tp, traffic=replace(traffic, rate=rate),
                               config=config, slo=slo)
        return bool(r.figures.meets_slo)

    lo: float | None = None
    hi: float | None = None
    rate = start
    for _ in range(DOUBLINGS):
        if not meets(rate):
            hi = rate
            break
        lo, rate = rate, rate * 2
    if lo is None:  # even the start misses: search below it
        for _ in range(DOUBLINGS):
            rate /= 2
            if meets(rate):
                lo = rate
                break
            hi = rate
    if lo is not None and hi is not None:
        for _ in range(BISECTIONS):
            mid = math.sqrt(lo * hi)
            if meets(mid):
                lo = mid
            else:
                hi = mid
    return RateCurve(tp, tuple(sorted(runs.items())), lo)

