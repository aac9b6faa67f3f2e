"""Deployments simulated under Poisson arrivals: p99 TTFT and TPOT, and the highest rate within the SLO.

Aggregated: each replica runs the scheduler (:mod:`roofline.serving.schedulers`) over its share of the
requests (round robin), as ``roofline serve`` does.  Disaggregated: two pools with a KV transfer queue between
them.  The prefill pool runs every prompt to its first token (output of one token, round robin); each prefill
worker's link then sends the prompt's KV cache, one request at a time in order of completion (the transfer time
of :meth:`~roofline.planner.deploy.Pricer.transfer_time`); the decode pool receives it, round robin in order of
arrival, and admits it when its blocks are free (the decode pool's KV capacity limits admission), the prompt's
KV already computed (its prefill costs nothing there), to make the remaining ``OSL - 1`` tokens.  A request's
TTFT is its prefill pool's first token; its TPOT spans from that token to its last, decode pool's.

Speculative decoding and prefix caching change each iteration's time as :class:`~roofline.planner.deploy.Pricer`
prices them (the cached prefix skipped in prefill chunks; a decode iteration a draft-and-verify step per
expected tokens).

The rate search: the rate doubles from 1 request/s until the p99s miss the SLO, then :data:`BISECTIONS`
bisections; each rate is :data:`REQUESTS` requests of the same seed.  A saturated rate misses through its
queueing TTFT (unbounded); the keep-up test of ``roofline serve --sweep-rate`` needs runs too long for a search.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.planner.deploy import Deployment, Pricer
from roofline.serving.engine import ReplicaResult, simulate
from roofline.serving.figures import ServingFigures, figures
from roofline.serving.requests import poisson_arrivals
from roofline.serving.schedulers import BLOCK_SIZE, get

#: Requests per simulated rate of a search.
REQUESTS = 300
DOUBLINGS = 12
BISECTIONS = 5


class _Steps:
    """A worker's iteration times as the deployment prices them (module docs); ``prefilled``: a decode pool's
    worker, whose prompts arrive with their KV."""

    def __init__(self, pricer: Pricer, tp: int, prefilled: bool) -> None:
        self.pricer, self.tp, self.prefilled = pricer, tp, prefilled
        self.steps = pricer.worker(tp).steps
        self.cached = pricer.opts.cached

    def _chunks(self, chunks: list[tuple[int, int]]) -> list[tuple[int, int]]:
        if self.prefilled:
            return []
        out = []
        for c, done in chunks:
            skip = max(0, min(c, self.cached - done))
            if c > skip:
                out.append((c - skip, done + skip))
        return out

    def iteration_time(self, decode_batch: int, kv_tokens: float, chunks: list[tuple[int, int]]) -> float:
        ch = self._chunks(chunks)
        if self.pricer.opts.spec is None:
            return self.steps.iteration_time(decode_batch, kv_tokens, ch) if decode_batch or ch else 0.0
        t = self.steps.iteration_time(0, 0.0, ch) if ch else 0.0
        if decode_batch:
            context = 64 * round(kv_tokens / decode_batch / 64)  # a grid of 64 tokens: the step's times are kept
            t += self.pricer.step(self.tp, decode_batch, max(context - 1, 0))
        return t


def _pool(pricer: Pricer, tp: int, workers: int, scheduler: str, arrival: np.ndarray, isl: np.ndarray,
          osl: np.ndarray, prefilled: bool) -> tuple[list[ReplicaResult], list[np.ndarray]]:
    """Each worker's run over its round-robin share (``arrival`` sorted) and the ids it served."""
    w = pricer.worker(tp)
    steps = _Steps(pricer, tp, prefilled)
    budget = 10**9 if prefilled else None  # a decode worker admits whole KV-carrying prompts beside its decodes
    out, ids = [], []
    for k in range(workers):
        sel = np.arange(k, len(arrival), workers)
        if not len(sel):
            continue
        sched = get(scheduler)(token_budget=budget)
        out.append(simulate(steps, sched, arrival[sel], isl[sel], osl[sel],  # type: ignore[arg-type]
                            blocks=w.blocks, block_size=BLOCK_SIZE))
        ids.append(sel)
    return out, ids


def _gather(results: list[ReplicaResult], ids: list[np.ndarray], n: int, name: str) -> np.ndarray:
    col = np.full(n, np.nan)
    for r, sel in zip(results, ids, strict=True):
        col[sel] = getattr(r, name)
    return col


def run(pricer: Pricer, d: Deployment, scheduler: str, rate: float, n: int = REQUESTS,
        seed: int = 0) -> ServingFigures:
    """One Poisson run of ``n`` requests at ``rate`` on deployment ``d`` (module docs)."""
    o = pricer.opts
    rng = np.random.default_rng(seed)
    arrival = poisson_arrivals(rng, rate, n)
    isl, osl = np.full(n, o.isl, dtype=np.int32), np.full(n, o.osl, dtype=np.int32)
    if not d.disaggregated:
        pool = d.pools[0]
        res, _ = _pool(pricer, pool.tp, pool.workers, scheduler, arrival, isl, osl, False)
        return figures(res, d.devices, o.slo, rate)
    pre, dec = d.pools
    pres, pids = _pool(pricer, pre.tp, pre.workers, scheduler, arrival, isl, np.ones(n, dtype=np.int32), False)
    first = _gather(pres, pids, n, "first")
    ready = _transfers(first, pids, pricer.transfer_time(pre.tp, d.devices))
    order = np.argsort(ready, kind="stable")
    if o.osl > 1:
        decs, dids = _pool(pricer, dec.tp, dec.workers, scheduler, ready[order], isl[order] + 1, osl[order] - 1,
                           True)
        last = np.empty(n)
        last[order] = _gather(decs, dids, n, "last")
    else:
        decs, last = pres, first
    combined = ReplicaResult(arrival, isl, osl, first, last, sum(r.iterations for r in pres + decs),
                             sum(r.preemptions for r in pres + decs), decs[0].usage, decs[0].blocks,
                             min((r.first_full for r in decs), default=math.nan), max(r.max_running for r in decs))
    return figures([combined], d.devices, o.slo, rate)


def _transfers(first: np.ndarray, ids: list[np.ndarray], seconds: float) -> np.ndarray:
    """When each prompt's KV has reached the decode pool: each prefill worker's link sends one at a time, in
    order of the prefills' completion."""
    ready = np.empty_like(first)
    for sel in ids:
        free = -math.inf
        for r in sel[np.argsort(first[sel], kind="stable")]:
            free = max(first[r], free) + seconds
            ready[r] = free
    return ready


@dataclass(frozen=True)
class Poisson:
    """The highest rate found within the SLO (p99s) and its run's figures (None: even the lowest missed)."""

    rate: float | None
    figures: ServingFigures | None
    runs: int

    @property
    def tokens_per_s_per_device(self) -> float:
        return self.figures.per_device_output_tokens_per_s if self.figures is not None else 0.0

    @property
    def tokens_per_s_per_user(self) -> float:
        f = self.figures
        return 1.0 / f.tpot.mean if f is not None and f.tpot.mean > 0 else math.nan

    def to_dict(self) -> dict[str, Any]:
        f = self.figures
        return {"rate_per_s": self.rate, "ttft_p99_s": f.ttft.p99 if f else None,
                "tpot_p99_s": f.tpot.p99 if f else None, "preemptions": f.preemptions if f else None}


def best_rate(pricer: Pricer, d: Deployment, scheduler: str, start: float = 1.0) -> Poisson:
    """The rate search of the module docs."""
    seen: dict[float, ServingFigures] = {}

    def ok(rate: float) -> bool:
        seen[rate] = f = run(pricer, d, scheduler, rate)
        return bool(f.slo is not None and f.slo.within)

    lo, hi, rate = None, None, start
    for _ in range(DOUBLINGS):
        if not ok(rate):
            hi = rate
            break
        lo, rate = rate, rate * 2
    if lo is None:
        for _ in range(DOUBLINGS // 2):
            rate /= 2
            if ok(rate):
                lo = rate
                break
    if lo is not None and hi is not None:
        for _ in range(BISECTIONS):
            mid = math.sqrt(lo * hi)
            lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return Poisson(lo, seen.get(lo) if lo is not None else None, len(seen))
