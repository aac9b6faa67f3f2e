"""Rates swept: the highest Poisson rate whose p99 TTFT and TPOT meet an SLO, and the latency-throughput curve.

Per tp size: the rate doubles from ``start`` until the SLO is missed (at most :data:`DOUBLINGS` times), then
:data:`BISECTIONS` bisections between the last rate met and the first missed; every simulated rate is a point
of the curve.  Each point is a full simulation of the same number of requests with the same seed (the
arrival gaps scale with the rate, the lengths stay the same).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from roofline.core.errors import RooflineError
from roofline.serving.figures import Slo
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
        return next((rate for rate, r in self.points if r.figures.get("kv_cache_full_at_s") is not None), None)

    def to_dict(self) -> dict[str, Any]:
        return {"tp": self.tp, "devices": self.points[0][1].devices if self.points else 0,
                "best_rate_per_s": self.best_rate, "kv_cache_full_from_rate_per_s": self.kv_full_from(),
                "points": [{"rate_per_s": rate, **{k: r.figures[k] for k in _KEYS}} for rate, r in self.points]}


_KEYS = ("output_tokens_per_s", "requests_per_s", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s",
         "e2e_p99_s", "preemptions", "meets_slo")


def sweep_rate(model: Any, *, tps: tuple[int, ...], slo: Slo, start: float = 1.0, **kwargs: Any) -> list[RateCurve]:
    """A :class:`RateCurve` per tp size (``kwargs`` go to :func:`roofline.serve`; ``rate`` is swept)."""
    if slo.ttft is None and slo.tpot is None:
        raise RooflineError("--sweep-rate needs --slo (e.g. ttft=2s,tpot=200ms)")
    return [_curve(model, tp, slo, start, kwargs) for tp in tps]


def _curve(model: Any, tp: int, slo: Slo, start: float, kwargs: dict[str, Any]) -> RateCurve:
    runs: dict[float, ServeResult] = {}

    def meets(rate: float) -> bool:
        runs[rate] = r = serve(model, tp=tp, rate=rate, slo=slo, **kwargs)
        return bool(r.figures["meets_slo"])

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


def price_per_mtok(price_per_device_hour: float, devices: int, output_tokens_per_s: float) -> float:
    """US$ per million output tokens at ``output_tokens_per_s`` on ``devices`` devices at this hourly price."""
    return price_per_device_hour * devices / 3600.0 / output_tokens_per_s * 1e6
