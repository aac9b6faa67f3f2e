"""Tokens per routed expert in a step: the rows of each group of the grouped expert GEMMs (``--moe-load``).

A step of ``n`` tokens, each routed to ``k`` distinct experts of ``E``, makes ``n*k`` token-expert assignments.
The grouped GEMM runs one group per expert; its time is set by the most loaded group (every group's tiles run
on the same SMs, and the step waits for the last), its FLOPs by the sum of the groups' rows.

* ``balanced`` (the default, as the published training benchmarks force it with an auxiliary-loss-free bias or
  a balanced router): ``n*k / E`` rows per expert, every group alike;
* ``expected-max``: the expected maximum load over the ``E`` experts under uniform independent top-k routing
  (:func:`expected_max_load`): the FLOPs total is the same, the slowest group has more rows.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError

MOE_LOADS = ("balanced", "expected-max")


def parse_moe_load(value: Any) -> str:
    """'balanced' / 'expected-max' (case-insensitive); anything else is a one-line error."""
    if isinstance(value, str) and value.strip().lower() in MOE_LOADS:
        return value.strip().lower()
    raise RooflineError(f"moe_load: {value!r} is not one of {', '.join(MOE_LOADS)}")


@lru_cache(maxsize=4096)
def _max_load(n: int, p: float, experts: int) -> float:
    """E[max of ``experts`` independent Binomial(n, p)] = sum_{j>=1} (1 - F(j-1)^E), F the binomial CDF, summed
    to 12 deviations (+12) above the mean, beyond which every term is below 1e-30."""
    if n <= 0:
        return 0.0
    mean, sd = n * p, math.sqrt(n * p * (1.0 - p))
    top = int(min(n, math.ceil(mean + 12.0 * sd + 12.0)))
    j = np.arange(top + 1, dtype=float)
    lgam = np.vectorize(math.lgamma)
    with np.errstate(divide="ignore"):
        logpmf = (math.lgamma(n + 1.0) - lgam(j + 1.0) - lgam(n - j + 1.0) + j * math.log(p)
                  + (n - j) * (math.log1p(-p) if p < 1.0 else -math.inf))
    cdf = np.minimum(np.cumsum(np.exp(logpmf)), 1.0)  # F(0) .. F(top)
    return float(np.sum(1.0 - cdf[:top] ** experts))  # j = 1 .. top: 1 - F(j-1)^E


def expected_max_load(tokens: Any, top_k: int, experts: int, over: int | None = None) -> Any:
    """Expected tokens on the most loaded of ``experts`` experts (of the ``over`` of them one device holds, when
    given: expert parallelism) when ``tokens`` tokens each choose ``top_k`` distinct ones uniformly at random
    (vectorised over ``tokens``; fractional counts round to whole tokens).

    Each expert's load is Binomial(n, p = k/E) (a token picks a given expert with probability k/E).  The loads
    are taken as independent (they are slightly negatively correlated, their sum being n*k), so
    ``P(max < j) = F(j-1)^E`` with F the binomial CDF, and ``E[max] = sum_{j>=1} P(max >= j)
    = sum_{j>=1} (1 - F(j-1)^E)`` (the tail-sum formula for a non-negative integer variable).  For large n
    this tends to the normal approximation ``n p + sqrt(n p (1-p)) * e_E`` (``e_E``, the expected maximum of E
    standard normals, about ``sqrt(2 ln E)`` for large E).  Checked against a Monte-Carlo simulation of top-k
    routing with a fixed seed (tests/test_moe_ops.py).

    >>> round(float(expected_max_load(4096, 8, 256)), 1)  # DeepSeek-V3, 4,096 tokens: mean 128
    160.6
    >>> float(expected_max_load(0, 2, 8)), float(expected_max_load(1, 2, 8))  # one token: one on each of its k
    (0.0, 1.0)
    """
    n = np.asarray(tokens, dtype=float)
    if not experts:
        return np.zeros_like(n)
    p = min(1.0, top_k / experts)
    flat = np.rint(n).ravel()
    count = int(experts if over is None else max(1, min(over, experts)))
    out = np.asarray([_max_load(int(x), p, count) for x in flat], dtype=float).reshape(n.shape)
    # what can happen: one token at least when there are any, never below the mean, at most n
    return np.where(n > 0, np.clip(np.maximum(out, 1.0), n * p, n), 0.0)


def tokens_per_expert(tokens: Any, top_k: int, experts: int, touched: Any, load: str = "balanced") -> Any:
    """Rows of the grouped GEMM's slowest group: ``n*k / touched`` (balanced over the experts the step touches on
    this device) or the expected maximum load (:func:`expected_max_load`).  ``touched``: the device's experts
    touched; when it is below the experts the ``n`` tokens touch (expert parallelism over ``ep`` devices, each
    holding E/ep experts and receiving the routed tokens of ``ep`` such micro-batches), the load is that of
    ``n * ep`` tokens over the E/ep experts held, ``ep`` = touched by ``n`` tokens / ``touched``."""
    n = np.asarray(tokens, dtype=float)
    t = np.asarray(touched, dtype=float)
    if parse_moe_load(load) == "expected-max":
        from roofline.llm.basis import experts_touched

        with np.errstate(divide="ignore", invalid="ignore"):
            ep = np.where(t > 0, experts_touched(experts, top_k, n) / np.where(t > 0, t, 1.0), 1.0)
        ep = np.maximum(np.round(np.atleast_1d(ep).astype(float)), 1.0)
        if np.all(ep == ep.flat[0]):
            e = int(ep.flat[0])
            return expected_max_load(n * e, top_k, experts, over=experts // e)
        return np.asarray([float(expected_max_load(x * e, top_k, experts, over=experts // int(e)))
                           for x, e in zip(np.broadcast_to(n, ep.shape).ravel(), ep.ravel(), strict=True)]
                          ).reshape(ep.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t > 0, n * top_k / np.where(t > 0, t, 1.0), 0.0)
