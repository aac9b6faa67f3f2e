"""The figures of a serving run, defined once, from the per-request columns of every replica.

* TTFT = first token time - arrival (queueing + prefill: the first token comes from the prefill iteration);
* TPOT per request = (last token time - first token time) / (output tokens - 1), requests of 2+ tokens;
* end-to-end latency = last token time - arrival;
* p50 / p90 / p99 of each (``numpy.percentile``, linear);
* ``output_tokens_per_s`` = completed output tokens / makespan (first arrival to last token, over all
  replicas); ``per_device`` divides by the devices;
* goodput: under an SLO (``ttft``, ``tpot`` limits applied to the p99s, as MLPerf Inference's Server
  scenario does), the throughput when both p99s meet it, else 0; ``meets_slo`` says which;
  ``slo_attainment`` is the share of requests meeting both limits on their own;
* load (Poisson runs): the rate the requests arrived at (requests over their arrivals' span; the rate offered,
  as drawn) against the rate served (``requests_per_s``, requests over the makespan).  A run serving less than
  ``1 - SATURATION_TOLERANCE`` of the rate that arrived does not keep up, and
  never meets an SLO: either it is **saturated** (its queue grows), or it is **too short to reach steady
  state**: the requests still in flight when the last one arrives take about a request's lifetime to drain,
  and a drain of one lifetime costs more than the tolerance unless the arrivals span at least
  ``(1 - tol) / tol`` lifetimes (9 at 10 %).  A request's lifetime here is the p99 of its generation time
  (first token to last: no queueing in it), so a long enough run that still falls short is saturated.

Each figure is typed (:class:`ServingFigures`, :class:`Percentiles`); ``to_dict`` writes the JSON keys
(``ttft_p99_s``, ``per_device``, ...) where JSON is written, and ``from_dict`` reads them back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from roofline.core.errors import RooflineError
from roofline.serving.engine import ReplicaResult

PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class Slo:
    """Latency limits (seconds) on the p99 TTFT and TPOT (None: no limit)."""

    ttft: float | None = None
    tpot: float | None = None

    def __post_init__(self) -> None:
        from roofline.core import arguments as arg

        for name in ("ttft", "tpot"):
            v = getattr(self, name)
            if v is not None and not arg.number(v, "Slo", name, minimum=None) > 0:
                raise arg.value_error("Slo", name, "None or a finite number of seconds > 0", v)

    def describe(self) -> str:
        parts = [f"{k} {v * 1e3:g} ms" for k, v in (("TTFT", self.ttft), ("TPOT", self.tpot)) if v is not None]
        return "p99 " + ", ".join(parts)


_UNITS = {"ms": 1e-3, "s": 1.0, "us": 1e-6}


def parse_slo(text: str) -> Slo:
    """'ttft=2s,tpot=200ms' -> :class:`Slo`; a value without a unit (s, ms, us) is a one-line error."""
    values: dict[str, float] = {}
    for part in str(text).split(","):
        key, _, raw = part.partition("=")
        key, raw = key.strip().lower(), raw.strip().lower()
        if key not in ("ttft", "tpot"):
            raise RooflineError(f"--slo {text!r}: {key!r} is not ttft or tpot (e.g. ttft=2s,tpot=200ms)")
        unit = next((u for u in ("ms", "us", "s") if raw.endswith(u)), None)
        if unit is None:
            raise RooflineError(f"--slo {text!r}: {key}={raw!r} has no unit; write e.g. {key}={raw or '2'}s or "
                                f"{key}={raw or '200'}ms")
        try:
            v = float(raw[: -len(unit)]) * _UNITS[unit]
        except ValueError:
            raise RooflineError(f"--slo {text!r}: {key}={raw!r} is not a number with a unit") from None
        if not (math.isfinite(v) and v > 0):
            raise RooflineError(f"--slo {text!r}: {key} must be > 0")
        values[key] = v
    return Slo(values.get("ttft"), values.get("tpot"))


SATURATION_TOLERANCE = 0.10  # the share of the offered rate a run may fall short by (module docs)


@dataclass(frozen=True)
class Percentiles:
    """p50, p90, p99 (``numpy.percentile``, linear) and the mean of one figure, in seconds (nan: no value)."""

    p50: float
    p90: float
    p99: float
    mean: float

    @classmethod
    def of(cls, x: np.ndarray) -> Percentiles:
        """The figure's percentiles over the finite values of ``x``."""
        x = np.asarray(x, dtype=float)
        x = x[np.isfinite(x)]
        if not len(x):
            return cls(math.nan, math.nan, math.nan, math.nan)
        p50, p90, p99 = (float(np.percentile(x, p)) for p in PERCENTILES)
        return cls(p50, p90, p99, float(np.mean(x)))

    def to_dict(self, name: str) -> dict[str, float]:
        """``{name}_p50_s``, ``_p90_s``, ``_p99_s``, ``_mean_s``: the published keys."""
        return {f"{name}_p{p}_s": getattr(self, f"p{p}") for p in PERCENTILES} | {f"{name}_mean_s": self.mean}

    @classmethod
    def from_dict(cls, doc: dict[str, Any], name: str) -> Percentiles:
        return cls(*(_num(doc.get(f"{name}_{k}_s")) for k in ("p50", "p90", "p99", "mean")))


def _num(x: Any) -> float:
    """A figure read back from JSON (null: nan, as written)."""
    return math.nan if x is None else float(x)


@dataclass(frozen=True)
class KvUse:
    """The KV cache: its ``blocks``, when it first filled (``full_at_s``, None if never), and blocks in use
    over time: sample times (s) and the share of the blocks used then."""

    blocks: int
    full_at_s: float | None
    time_s: tuple[float, ...] = field(repr=False)
    used_share: tuple[float, ...] = field(repr=False)

    def to_dict(self) -> dict[str, list[float]]:
        return {"time_s": list(self.time_s), "used_share": list(self.used_share)}


Verdict = Literal["keeps up", "saturated", "too short"]


@dataclass(frozen=True)
class Load:
    """A Poisson run's rate served against the rate its requests arrived at, and what a shortfall means
    (module docs).  ``offered_per_s`` is the rate asked for; the drawn arrivals' own rate (``requests`` over
    their span) is what the run is judged by, so that the draw's chance does not count as a shortfall."""

    offered_per_s: float
    requests: int
    arrival_span_s: float
    makespan_s: float
    generation_p99_s: float
    tolerance: float = SATURATION_TOLERANCE

    @property
    def served_per_s(self) -> float:
        return self.requests / self.makespan_s if self.makespan_s > 0 else math.nan

    @property
    def arrived_per_s(self) -> float:
        return self.requests / self.arrival_span_s if self.arrival_span_s > 0 else math.inf

    @property
    def served_share(self) -> float:
        """Rate served over rate arrived: the arrival span over the makespan (both from the first arrival)."""
        return self.arrival_span_s / self.makespan_s if self.makespan_s > 0 else 0.0

    @property
    def keeps_up(self) -> bool:
        """Served at least ``1 - tolerance`` of the rate the requests arrived at."""
        return self.served_share >= 1 - self.tolerance

    @property
    def steady_lifetimes(self) -> float:
        """Lifetimes the arrivals must span for a drain of one to stay within the tolerance: (1 - tol) / tol."""
        return (1 - self.tolerance) / self.tolerance

    @property
    def steady_state(self) -> bool:
        """The arrivals span enough lifetimes that a shortfall is not the drain alone."""
        return self.arrival_span_s >= self.steady_lifetimes * self.generation_p99_s

    @property
    def verdict(self) -> Verdict:
        if self.keeps_up:
            return "keeps up"
        return "saturated" if self.steady_state else "too short"

    def to_dict(self) -> dict[str, Any]:
        return {"offered_requests_per_s": self.offered_per_s, "arrived_requests_per_s": self.arrived_per_s,
                "served_share": self.served_share, "tolerance": self.tolerance,
                "arrival_span_s": self.arrival_span_s, "generation_p99_s": self.generation_p99_s,
                "keeps_up": self.keeps_up, "steady_state": self.steady_state, "verdict": self.verdict}

    @classmethod
    def from_dict(cls, doc: dict[str, Any], requests: int, makespan_s: float) -> Load:
        return cls(_num(doc["offered_requests_per_s"]), requests, _num(doc["arrival_span_s"]), makespan_s,
                   _num(doc["generation_p99_s"]), _num(doc["tolerance"]))


@dataclass(frozen=True)
class SloOutcome:
    """The run judged against an SLO: ``within`` (both p99s meet it), ``meets_slo`` (within, and the run keeps
    up with its offered rate), goodput and the share of requests within both limits on their own."""

    slo: Slo
    within: bool
    meets_slo: bool
    goodput_tokens_per_s: float
    slo_attainment: float

    def to_dict(self) -> dict[str, Any]:
        return {"meets_slo": self.meets_slo, "goodput_tokens_per_s": self.goodput_tokens_per_s,
                "slo_attainment": self.slo_attainment,
                "slo": {"ttft_p99_s": self.slo.ttft, "tpot_p99_s": self.slo.tpot}}


@dataclass(frozen=True)
class ServingFigures:
    """The figures of a serving run (module docs define each); ``devices`` divides the per-device figures."""

    requests: int
    makespan_s: float
    output_tokens_per_s: float
    input_tokens_per_s: float
    requests_per_s: float
    ttft: Percentiles
    tpot: Percentiles
    e2e: Percentiles
    devices: int
    iterations: int
    preemptions: int
    max_running: int
    kv_cache_use: KvUse
    slo: SloOutcome | None = None
    load: Load | None = None

    @property
    def kv_cache_full_at_s(self) -> float | None:
        return self.kv_cache_use.full_at_s

    @property
    def kv_cache_blocks(self) -> int:
        return self.kv_cache_use.blocks

    @property
    def per_device_output_tokens_per_s(self) -> float:
        return self.output_tokens_per_s / self.devices

    @property
    def per_device_requests_per_s(self) -> float:
        return self.requests_per_s / self.devices

    @property
    def meets_slo(self) -> bool | None:
        """None when no SLO was given."""
        return None if self.slo is None else self.slo.meets_slo

    def to_dict(self) -> dict[str, Any]:
        """The published JSON keys, in their order (``load`` only for a Poisson run)."""
        out: dict[str, Any] = {"requests": self.requests, "makespan_s": self.makespan_s,
                               "output_tokens_per_s": self.output_tokens_per_s,
                               "input_tokens_per_s": self.input_tokens_per_s, "requests_per_s": self.requests_per_s}
        for name in ("ttft", "tpot", "e2e"):
            out |= getattr(self, name).to_dict(name)
        out["per_device"] = {"output_tokens_per_s": self.per_device_output_tokens_per_s,
                             "requests_per_s": self.per_device_requests_per_s}
        out |= {"iterations": self.iterations, "preemptions": self.preemptions, "max_running": self.max_running,
                "kv_cache_full_at_s": self.kv_cache_full_at_s, "kv_cache_blocks": self.kv_cache_blocks,
                "kv_cache_use": self.kv_cache_use.to_dict()}
        if self.slo is not None:
            out |= self.slo.to_dict()
        if self.load is not None:
            out["load"] = self.load.to_dict()
        return out

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> ServingFigures:
        """The figures of a JSON document :meth:`to_dict` wrote (nulls read as nan)."""
        ttft, tpot, e2e = (Percentiles.from_dict(doc, n) for n in ("ttft", "tpot", "e2e"))
        devices = int(doc["devices"]) if "devices" in doc else _devices_of(doc)
        slo = None
        if "meets_slo" in doc:
            limits = Slo(doc["slo"]["ttft_p99_s"], doc["slo"]["tpot_p99_s"])
            slo = SloOutcome(limits, _within(limits, ttft, tpot), bool(doc["meets_slo"]),
                             _num(doc["goodput_tokens_per_s"]), _num(doc["slo_attainment"]))
        use = doc["kv_cache_use"]
        return cls(int(doc["requests"]), _num(doc["makespan_s"]), _num(doc["output_tokens_per_s"]),
                   _num(doc["input_tokens_per_s"]), _num(doc["requests_per_s"]), ttft, tpot, e2e, devices,
                   int(doc["iterations"]), int(doc["preemptions"]), int(doc["max_running"]),
                   KvUse(int(doc["kv_cache_blocks"]), doc["kv_cache_full_at_s"], tuple(use["time_s"]),
                         tuple(use["used_share"])), slo,
                   Load.from_dict(doc["load"], int(doc["requests"]), _num(doc["makespan_s"])) if "load" in doc else None)


def _devices_of(doc: dict[str, Any]) -> int:
    """The devices a figures document divided by (a sweep point's has no ``devices`` beside it)."""
    whole, per = doc.get("requests_per_s"), doc["per_device"].get("requests_per_s")
    return round(whole / per) if whole and per and math.isfinite(whole / per) else 1


def _within(slo: Slo, ttft: Percentiles, tpot: Percentiles) -> bool:
    """Both p99s within the limits (a run with no TPOT, single-token outputs, meets a TPOT limit)."""
    ok_ttft = slo.ttft is None or ttft.p99 <= slo.ttft
    ok_tpot = slo.tpot is None or not math.isfinite(tpot.p99) or tpot.p99 <= slo.tpot
    return bool(ok_ttft and ok_tpot)


def price_per_mtok(price_per_device_hour: float, devices: int, output_tokens_per_s: float) -> float:
    """US$ per million output tokens at ``output_tokens_per_s`` on ``devices`` devices at this hourly price.

    >>> price_per_mtok(2.5, 8, 10_000.0)  # 8 x $2.5 an hour = $20 / 3600 s / 10,000 tokens/s x 1e6
    0.5555555555555556
    """
    from roofline.core import arguments as arg

    for name, value in (("price_per_device_hour", price_per_device_hour),
                        ("output_tokens_per_s", output_tokens_per_s)):
        if not arg.number(value, "price_per_mtok", name, minimum=None) > 0:
            raise arg.value_error("price_per_mtok", name, "a finite number > 0", value)
    arg.positive_int(devices, "price_per_mtok", "devices")
    return price_per_device_hour * devices / 3600.0 / output_tokens_per_s * 1e6


def _rate(n: float, seconds: float) -> float:
    return n / seconds if seconds > 0 else math.nan


def figures(results: Sequence[ReplicaResult], devices: int, slo: Slo | None = None,
            offered_rate: float | None = None) -> ServingFigures:
    """The run's figures (module docs define each); ``offered_rate``: the Poisson rate, for the load."""
    arrival = np.concatenate([r.arrival for r in results])
    first = np.concatenate([r.first for r in results])
    last = np.concatenate([r.last for r in results])
    osl = np.concatenate([r.osl for r in results]).astype(float)
    isl = np.concatenate([r.isl for r in results]).astype(float)
    ttft = first - arrival
    with np.errstate(divide="ignore", invalid="ignore"):
        tpot = np.where(osl > 1, (last - first) / (osl - 1), np.nan)
    makespan = float(np.nanmax(last) - np.min(arrival))
    tokens_per_s = _rate(float(osl.sum()), makespan)
    full = [r.first_full for r in results if not math.isnan(r.first_full)]
    u = results[0].usage
    load = None
    if offered_rate is not None:
        gen = Percentiles.of(last - first).p99
        load = Load(float(offered_rate), len(osl), float(np.max(arrival) - np.min(arrival)), makespan,
                    gen if math.isfinite(gen) else 0.0)
    ttft_p, tpot_p = Percentiles.of(ttft), Percentiles.of(tpot)
    outcome = None
    if slo is not None:
        each = np.ones(len(osl), dtype=bool)
        if slo.ttft is not None:
            each &= ttft <= slo.ttft
        if slo.tpot is not None:
            each &= ~(tpot > slo.tpot)
        within = _within(slo, ttft_p, tpot_p)
        meets = within and (load is None or load.keeps_up)
        outcome = SloOutcome(slo, within, meets, tokens_per_s if meets else 0.0, float(each.mean()))
    return ServingFigures(
        len(osl), makespan, tokens_per_s, _rate(float(isl.sum()), makespan), _rate(len(osl), makespan), ttft_p,
        tpot_p, Percentiles.of(last - arrival), devices, sum(r.iterations for r in results),
        sum(r.preemptions for r in results), max(r.max_running for r in results),
        KvUse(results[0].blocks, min(full) if full else None, tuple(u.time[: u.n].tolist()),
              tuple((u.used[: u.n] / max(results[0].blocks, 1)).tolist())), outcome, load)
