"""Deployments simulated under Poisson arrivals: p99 TTFT and TPOT, and the highest rate within the SLO.

Aggregated: the replicas are alike and the requests are routed to them at random, so one replica stands for
all: it runs the scheduler (:mod:`roofline.serving.schedulers`, at the replica's max batch and tokens per step)
over a Poisson stream of its share of the rate, as ``roofline serve`` runs one.  A worker of ``pp`` stages is
``pp`` lanes, each a micro-batch of ``batch / pp`` on ``blocks`` of the worker's KV cache, each lane's iteration
the whole model's time (:class:`~roofline.planner.deploy.Pricer`); one lane stands for all of them.

Disaggregated: two pools with a KV transfer queue between them.  The prefill pool runs every prompt to its
first token (output of one token, round robin); each prefill worker's link then sends the prompt's KV cache, one
request at a time in order of completion (the transfer time of
:meth:`~roofline.planner.deploy.Pricer.transfer_time`); the decode pool receives it, round robin in order of
arrival, and admits it when its blocks are free (the decode pool's KV capacity limits admission), the prompt's
KV already computed (its prefill costs nothing there), to make the remaining ``OSL - 1`` tokens.  A request's
TTFT is its prefill pool's first token; its TPOT spans from that token to its last, decode pool's.

Speculative decoding and prefix caching change each iteration's time as :class:`~roofline.planner.deploy.Pricer`
prices them (the cached prefix skipped in prefill chunks; a decode iteration a draft-and-verify step per
expected tokens).

**Steady state.** A run's arrivals span :data:`STEADY_LIFETIMES` request lifetimes (arrival to last token, the
deployment's mean-static TTFT + OSL x TPOT), at least :data:`REQUESTS` requests and at most
:data:`MAX_REQUESTS`: a shorter run never fills its batches (every request of 300 at 8 replicas of batch 64 is
admitted at once), which flatters TPOT.  A saturated rate misses through its queueing TTFT.

The rate search: from a start (the deployment's mean-static rate in a search, else 1 request/s) the rate steps
up while the p99s meet the SLO and down while they miss, each step the square of the last, until a bracket; then bisections (at most
:data:`BISECTIONS`) until the bracket is within :data:`RESOLUTION`; every rate's run uses the same seed.  The
goodput is the highest rate within the SLO, as output tokens per second per device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.planner.deploy import Deployment, Pool, Pricer
from roofline.serving.engine import ReplicaResult, simulate
from roofline.serving.figures import ServingFigures, figures
from roofline.serving.requests import poisson_arrivals
from roofline.serving.schedulers import BLOCK_SIZE, get

#: Fewest and most requests per simulated rate (per lane of an aggregated deployment), and the request
#: lifetimes their arrivals span (module docs).
REQUESTS, MAX_REQUESTS, STEADY_LIFETIMES = 200, 4000, 4
DOUBLINGS = 12
BISECTIONS = 5
#: The rate search stops when its bracket is narrower than this ratio (6 %).
RESOLUTION = 1.06


class _Steps:
    """A worker's iteration times as the deployment prices them (module docs); ``prefilled``: a decode pool's
    worker, whose prompts arrive with their KV.  A worker of ``pp`` stages is simulated as ``pp`` lanes, each a
    micro-batch whose iteration takes ``pp`` stage times."""

    def __init__(self, pricer: Pricer, pool: Pool, prefilled: bool) -> None:
        self.pricer, self.pool, self.prefilled = pricer, pool, prefilled
        self.cached = pricer.opts.cached
        self.steps = pricer.must(pool).steps  # Pricer.time's model, held: this runs once per iteration

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
        ch = self._chunks(chunks) if chunks else chunks
        p, pool = self.pricer, self.pool
        if p.opts.spec is None:
            return self.steps.iteration_time(decode_batch, kv_tokens, ch) if decode_batch or ch else 0.0
        t = self.steps.iteration_time(0, 0.0, ch) if ch else 0.0
        if decode_batch:
            context = 64 * round(kv_tokens / decode_batch / 64)  # a grid of 64 tokens: the step's times are kept
            t += p.step(pool, decode_batch * pool.pp, max(context - 1, 0))  # a lane is one of pp micro-batches
        return t


def _pool(pricer: Pricer, pool: Pool, scheduler: str, arrival: np.ndarray, isl: np.ndarray,
          osl: np.ndarray, prefilled: bool, lanes: int | None = None) -> tuple[list[ReplicaResult], list[np.ndarray]]:
    """Each lane's run over its round-robin share (``arrival`` sorted) and the ids it served (module docs);
    ``lanes``: how many of the pool's ``workers x pp`` lanes to run (1: one standing for all of them)."""
    w = pricer.must(pool)
    steps = _Steps(pricer, pool, prefilled)
    lanes = pool.workers * pool.pp if lanes is None else lanes
    # a decode worker admits whole KV-carrying prompts beside its decodes; an aggregated one chunks at its chunk
    budget = 10**9 if prefilled else (pool.chunk or None)
    cap = max(1, pool.batch // pool.pp) if pool.batch else None
    out, ids = [], []
    for k in range(lanes):
        sel = np.arange(k, len(arrival), lanes)
        if not len(sel):
            continue
        sched = get(scheduler)(token_budget=budget, max_batch=cap)
        out.append(simulate(steps, sched, arrival[sel], isl[sel], osl[sel],  # type: ignore[arg-type]
                            blocks=w.blocks // pool.pp, block_size=BLOCK_SIZE))
        ids.append(sel)
    return out, ids


def _gather(results: list[ReplicaResult], ids: list[np.ndarray], n: int, name: str) -> np.ndarray:
    col = np.full(n, np.nan)
    for r, sel in zip(results, ids, strict=True):
        col[sel] = getattr(r, name)
    return col


def requests_for(rate: float, lifetime: float) -> int:
    """Requests of a run at ``rate`` whose arrivals span :data:`STEADY_LIFETIMES` request lifetimes (module docs),
    within :data:`REQUESTS` and :data:`MAX_REQUESTS`."""
    return int(min(max(REQUESTS, math.ceil(rate * STEADY_LIFETIMES * lifetime)), MAX_REQUESTS))


def run(pricer: Pricer, d: Deployment, scheduler: str, rate: float, lifetime: float = 0.0,
        seed: int = 0) -> ServingFigures:
    """One Poisson run at ``rate`` on deployment ``d``, its requests spanning ``lifetime``-long lives (module
    docs): an aggregated deployment's one lane at its share of the rate, a disaggregated one's two pools."""
    o = pricer.opts
    rng = np.random.default_rng(seed)
    if not d.disaggregated:
        pool = d.pools[0]
        lanes = pool.workers * pool.pp
        n = requests_for(rate / lanes, lifetime)
        arrival = poisson_arrivals(rng, rate / lanes, n)
        isl, osl = np.full(n, o.isl, dtype=np.int32), np.full(n, o.osl, dtype=np.int32)
        res, _ = _pool(pricer, pool, scheduler, arrival, isl, osl, False, lanes=1)
        return figures(res, pool.tp, o.slo, rate / lanes)
    n = requests_for(rate, lifetime)
    arrival = poisson_arrivals(rng, rate, n)
    isl, osl = np.full(n, o.isl, dtype=np.int32), np.full(n, o.osl, dtype=np.int32)
    pre, dec = d.pools
    pres, pids = _pool(pricer, pre, scheduler, arrival, isl, np.ones(n, dtype=np.int32), False)
    first = _gather(pres, pids, n, "first")
    ready = _transfers(first, pids, pricer.transfer_time(pre, d.devices))
    order = np.argsort(ready, kind="stable")
    if o.osl > 1:
        decs, dids = _pool(pricer, dec, scheduler, ready[order], isl[order] + 1, osl[order] - 1, True)
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
    """The highest rate found within the SLO (p99s), its run's figures (None: even the lowest missed) and the
    goodput it means: that rate's output tokens per second per device (``rate x OSL / devices``)."""

    rate: float | None
    figures: ServingFigures | None
    runs: int
    tokens_per_s_per_device: float = 0.0

    @property
    def tokens_per_s_per_user(self) -> float:
        f = self.figures
        return 1.0 / f.tpot.mean if f is not None and f.tpot.mean > 0 else math.nan

    def to_dict(self) -> dict[str, Any]:
        f = self.figures
        return {"rate_per_s": self.rate, "tokens_per_s_per_device": self.tokens_per_s_per_device,
                "tokens_per_s_per_user": self.tokens_per_s_per_user if f else None,
                "ttft_p99_s": f.ttft.p99 if f else None, "tpot_p99_s": f.tpot.p99 if f else None,
                "preemptions": f.preemptions if f else None, "simulations": self.runs}


def best_rate(pricer: Pricer, d: Deployment, scheduler: str, start: float = 1.0, step: float = 2.0,
              lifetime: float = 0.0) -> Poisson:
    """The rate search of the module docs: from ``start``, steps up while within the SLO (down while not) until a
    bracket, the step ``step`` squared after each step that finds none, then bisections until it is narrower than :data:`RESOLUTION`; each run's requests
    span :data:`STEADY_LIFETIMES` of ``lifetime`` (seconds from arrival to last token)."""
    seen: dict[float, ServingFigures] = {}

    def ok(rate: float) -> bool:
        seen[rate] = f = run(pricer, d, scheduler, rate, lifetime)
        return bool(f.slo is not None and f.slo.within)

    lo, hi, rate = None, None, start
    for _ in range(DOUBLINGS):
        if ok(rate):
            lo, rate = rate, rate * step
            if hi is not None:
                break
        else:
            hi, rate = rate, rate / step
            if lo is not None:
                break
        step *= step  # still no bracket: the next step squares (1.25, 1.56, 2.44, ...)
    for _ in range(BISECTIONS):
        if lo is None or hi is None or hi / lo <= RESOLUTION:
            break
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    good = lo * pricer.opts.osl / d.devices if lo is not None else 0.0
    return Poisson(lo, seen.get(lo) if lo is not None else None, len(seen), good)
