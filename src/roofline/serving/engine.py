"""The simulation: one replica's iterations, from arrivals to the last token, on a step model.

Each loop turn the scheduler forms one iteration (:class:`~roofline.serving.schedulers.base.Plan`), the step model
times it (:class:`~roofline.serving.steps.StepModel`), and the clock moves by that time (plus a per-iteration
CPU overhead, 0 unless given).  Tokens appear at the end of the iteration that makes them: the first from the
iteration that completes a prompt's prefill, one more from each decode.  A closed loop of C clients issues
its next request when one finishes.

State kept: per request arrival, lengths, first and last token times and four int32 counters (48 bytes);
per iteration nothing but a bounded KV-use record (:class:`UsageTrace`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from roofline.serving.schedulers.base import Scheduler, State
from roofline.serving.steps import StepModel

#: KV-use samples kept (the record halves its resolution when full).
USAGE_SAMPLES = 1024


def bytes_per_request() -> int:
    """Bytes kept per request for the whole run: the caller's arrival, input and output columns (float64,
    int32, int32), the engine's copy of the arrivals, first and last token times (float64) and four int32
    counters (prefilled, prefill target, generated, KV blocks)."""
    f8, i4 = np.dtype(np.float64).itemsize, np.dtype(np.int32).itemsize
    return 4 * f8 + 6 * i4


class UsageTrace:
    """KV blocks in use over time, downsampled to at most :data:`USAGE_SAMPLES` points (constant memory)."""

    def __init__(self) -> None:
        self.time = np.zeros(USAGE_SAMPLES)
        self.used = np.zeros(USAGE_SAMPLES)
        self.n, self.stride, self.seen = 0, 1, 0

    def add(self, t: float, used: float) -> None:
        self.seen += 1
        if self.seen % self.stride:
            return
        if self.n == USAGE_SAMPLES:
            self.time[: self.n // 2] = self.time[1::2]
            self.used[: self.n // 2] = self.used[1::2]
            self.n //= 2
            self.stride *= 2
        self.time[self.n], self.used[self.n] = t, used
        self.n += 1


@dataclass
class ReplicaResult:
    """One replica's run: per-request columns (input order) and the run's counters."""

    arrival: np.ndarray
    isl: np.ndarray
    osl: np.ndarray
    first: np.ndarray
    last: np.ndarray
    iterations: int
    preemptions: int
    usage: UsageTrace
    blocks: int
    first_full: float  # time the KV cache first had no free block (nan: never)
    max_running: int


def simulate(steps: StepModel, scheduler: Scheduler, arrival: np.ndarray, isl: np.ndarray, osl: np.ndarray, *,
             blocks: int, block_size: int, concurrency: int | None = None, overhead: float = 0.0,
             stretches: bool = True) -> ReplicaResult:
    """Run ``scheduler`` over the requests (``arrival`` sorted; with ``concurrency`` the arrivals past the
    first C are set as the loop runs) on a cache of ``blocks`` blocks of ``block_size`` tokens.
    ``stretches=False`` plans every iteration (module docs: the same figures, slower)."""
    n = len(isl)
    arrival = np.array(arrival, dtype=float)
    if concurrency is not None:
        arrival[:] = math.inf
        arrival[: min(concurrency, n)] = 0.0
    i32 = np.int32
    # copies: the prefill target grows on a preemption while the prompt does not (one array for both, as the
    # caller's int32 input made them before, counted a preempted request's generated tokens twice)
    s = State(np.array(isl, dtype=i32), np.array(osl, dtype=i32), np.zeros(n, i32), np.array(isl, dtype=i32),
              np.zeros(n, i32), np.zeros(n, i32), block_size, blocks, total_blocks=blocks)
    first, last = np.full(n, np.nan), np.full(n, np.nan)
    usage = UsageTrace()
    t, nxt, issued, finished, iters, full, peak = 0.0, 0, min(concurrency or n, n), 0, 0, math.nan, 0
    stretch = stretches and scheduler.decode_stretches
    while finished < n:
        while nxt < n and arrival[nxt] <= t:
            s.waiting.append(nxt)
            nxt += 1
        if not s.running and not s.waiting:
            t = float(arrival[nxt])
            continue
        plan = scheduler.plan(s)
        dec = plan.decode
        if not len(dec) and not plan.chunks:
            t = float(arrival[nxt]) if nxt < n else t  # nothing fits now: wait for the next arrival
            continue
        kv = float((s.isl[dec] + s.gen[dec]).sum())
        t += steps.iteration_time(len(dec), kv, [(c, int(s.done[r])) for r, c in plan.chunks]) + overhead
        iters += 1
        peak = max(peak, len(s.running))
        done_ids = _advance(s, plan, t, first, last)
        if stretch and not done_ids and not plan.chunks and len(dec) and not s.preempted_now:
            full = _record(s, usage, t, blocks, full)
            nxt_t = float(arrival[nxt]) if nxt < n and not s.waiting else math.inf
            t, extra, full = _stretch(s, steps, dec, t, overhead, nxt_t, usage, blocks, full, last)
            iters += extra
            done_ids = [int(r) for r in dec[s.gen[dec] >= s.osl[dec]]] if extra else []
            if not done_ids:  # every iteration run is recorded
                continue
        for r in done_ids:
            s.running.remove(r)
            s.release(r)
            finished += 1
            if concurrency is not None and issued < n:
                arrival[issued] = t
                issued += 1
        full = _record(s, usage, t, blocks, full)
    return ReplicaResult(arrival, s.isl, s.osl, first, last, iters, s.preemptions, usage, blocks, full, peak)


def _record(s: State, usage: UsageTrace, t: float, blocks: int, full: float) -> float:
    """An iteration's end at ``t``: the KV use sampled; the time the cache first filled (returned)."""
    if s.free_blocks == 0 and math.isnan(full):
        full = t
    usage.add(t, blocks - s.free_blocks)
    return full


def _stretch(s: State, steps: StepModel, dec: np.ndarray, t: float, overhead: float, next_arrival: float,
             usage: UsageTrace, blocks: int, full: float, last: np.ndarray) -> tuple[float, int, float]:
    """The pure-decode iterations of ``dec`` that follow the one just run at ``t`` unchanged (module docs), run
    together: (the clock after them, how many, the time the cache first filled).  The run ends at the first
    iteration that finishes a sequence (included; the caller releases it and records that iteration), before
    the first that needs more blocks than are free, and, when none waits, before the first that starts at or
    after ``next_arrival``.  Each iteration is timed on its own and the clock summed in order, as stepping
    one at a time does; every one but a finishing last one is recorded here."""
    isl, gen0, held = s.isl[dec].astype(np.int64), s.gen[dec].astype(np.int64), s.blocks[dec].astype(np.int64)
    finish = top = int((s.osl[dec] - gen0).min())  # iterations until the first sequence finishes, in the last
    if top <= 0:
        return t, 0, full
    bs, b = s.block_size, len(dec)
    # extra iteration j (1..top) writes token gen0 + j - 1 and holds isl + gen0 + j - 1 tokens: a sequence needs a
    # new block at j = held x bs - isl - gen0 + 2 and every bs iterations after
    j1 = held * bs - isl - gen0 + 2
    crossings = np.maximum((top - j1) // bs + 1, 0)  # new blocks each sequence takes in 1..top
    nth = np.arange(int(crossings.sum())) - np.repeat(np.cumsum(crossings) - crossings, crossings)  # 0, 1, ... each
    per = np.repeat(j1, crossings) + bs * nth  # the iteration taking each new block
    new_blocks = np.cumsum(np.bincount(per, minlength=top + 1)[: top + 1])  # new_blocks[j]: taken by 1..j
    top = min(top, int(np.searchsorted(new_blocks, s.free_blocks, side="right")) - 1)
    kv0 = float((isl + gen0).sum())
    free0, k = s.free_blocks, 0
    for j in range(1, top + 1):
        if t >= next_arrival:
            break
        t += steps.iteration_time(b, kv0 + (j - 1) * b, []) + overhead
        k = j
        s.free_blocks = free0 - int(new_blocks[j])
        if j < finish:
            full = _record(s, usage, t, blocks, full)
    if k:
        s.gen[dec] += k
        last[dec] = t
        s.blocks[dec] = np.maximum(held, -(-(isl + gen0 + k - 1) // bs))
    return t, k, full


def _advance(s: State, plan: object, t: float, first: np.ndarray, last: np.ndarray) -> list[int]:
    """Tokens of the finished iteration: decodes +1, completed prefills make a token; the ids now finished."""
    dec = plan.decode  # type: ignore[attr-defined]
    s.gen[dec] += 1
    last[dec] = t
    out = [int(r) for r in dec[s.gen[dec] >= s.osl[dec]]]
    for r, c in plan.chunks:  # type: ignore[attr-defined]
        s.done[r] += c
        if s.done[r] >= s.target[r]:
            s.gen[r] += 1
            if math.isnan(first[r]):
                first[r] = t
            last[r] = t
            if s.gen[r] >= s.osl[r]:
                out.append(r)
    return out
