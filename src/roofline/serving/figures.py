"""The figures of a serving run, defined once, from the per-request columns of every replica.

* TTFT = first token time - arrival (queueing + prefill: the first token comes from the prefill iteration);
* TPOT per request = (last token time - first token time) / (output tokens - 1), requests of 2+ tokens;
* end-to-end latency = last token time - arrival;
* p50 / p90 / p99 of each (``numpy.percentile``, linear);
* ``output_tokens_per_s`` = completed output tokens / makespan (first arrival to last token, over all
  replicas); ``per_device`` divides by the devices;
* goodput: under an SLO (``ttft``, ``tpot`` limits applied to the p99s, as MLPerf Inference's Server
  scenario does), the throughput when both p99s meet it, else 0; ``meets_slo`` says which;
  ``slo_attainment`` is the share of requests meeting both limits on their own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError
from roofline.serving.engine import ReplicaResult

PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class Slo:
    """Latency limits (seconds) on the p99 TTFT and TPOT (None: no limit)."""

    ttft: float | None = None
    tpot: float | None = None

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


def _pct(x: np.ndarray) -> dict[int, float]:
    x = x[np.isfinite(x)]
    return {p: (float(np.percentile(x, p)) if len(x) else math.nan) for p in PERCENTILES}


def figures(results: Sequence[ReplicaResult], devices: int, slo: Slo | None = None) -> dict[str, Any]:
    """The run's figures (JSON-ready keys; module docs define each)."""
    arrival = np.concatenate([r.arrival for r in results])
    first = np.concatenate([r.first for r in results])
    last = np.concatenate([r.last for r in results])
    osl = np.concatenate([r.osl for r in results]).astype(float)
    isl = np.concatenate([r.isl for r in results]).astype(float)
    ttft = first - arrival
    with np.errstate(divide="ignore", invalid="ignore"):
        tpot = np.where(osl > 1, (last - first) / (osl - 1), np.nan)
    e2e = last - arrival
    makespan = float(np.nanmax(last) - np.min(arrival))
    tokens = float(osl.sum())
    out: dict[str, Any] = {"requests": len(osl), "makespan_s": makespan,
                           "output_tokens_per_s": tokens / makespan if makespan > 0 else math.nan,
                           "input_tokens_per_s": float(isl.sum()) / makespan if makespan > 0 else math.nan,
                           "requests_per_s": len(osl) / makespan if makespan > 0 else math.nan}
    for name, x in (("ttft", ttft), ("tpot", tpot), ("e2e", e2e)):
        for p, v in _pct(x).items():
            out[f"{name}_p{p}_s"] = v
        out[f"{name}_mean_s"] = float(np.nanmean(x)) if np.isfinite(x).any() else math.nan
    out["per_device"] = {"output_tokens_per_s": out["output_tokens_per_s"] / devices,
                         "requests_per_s": out["requests_per_s"] / devices}
    out["iterations"] = sum(r.iterations for r in results)
    out["preemptions"] = sum(r.preemptions for r in results)
    out["max_running"] = max(r.max_running for r in results)
    full = [r.first_full for r in results if not math.isnan(r.first_full)]
    out["kv_cache_full_at_s"] = min(full) if full else None
    out["kv_cache_blocks"] = results[0].blocks
    u = results[0].usage
    out["kv_cache_use"] = {"time_s": u.time[: u.n].tolist(),
                           "used_share": (u.used[: u.n] / max(results[0].blocks, 1)).tolist()}
    if slo is not None:
        ok_ttft = slo.ttft is None or out["ttft_p99_s"] <= slo.ttft
        ok_tpot = slo.tpot is None or not math.isfinite(out["tpot_p99_s"]) or out["tpot_p99_s"] <= slo.tpot
        each = np.ones(len(osl), dtype=bool)
        if slo.ttft is not None:
            each &= ttft <= slo.ttft
        if slo.tpot is not None:
            each &= ~(tpot > slo.tpot)
        out["meets_slo"] = bool(ok_ttft and ok_tpot)
        out["goodput_tokens_per_s"] = out["output_tokens_per_s"] if out["meets_slo"] else 0.0
        out["slo_attainment"] = float(each.mean())
        out["slo"] = {"ttft_p99_s": slo.ttft, "tpot_p99_s": slo.tpot}
    return out
