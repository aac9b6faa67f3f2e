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
             blocks: int, block_size: int, concurrency: int | None = None, overhead: float = 0.0) -> ReplicaResult:
    """Run ``scheduler`` over the requests (``arrival`` sorted; with ``concurrency`` the arrivals past the
    first C are set as the loop runs) on a cache of ``blocks`` blocks of ``block_size`` tokens."""
    n = len(isl)
    arrival = np.array(arrival, dtype=float)
    if concurrency is not None:
        arrival[:] = math.inf
        arrival[: min(concurrency, n)] = 0.0
    i32 = np.int32
    s = State(np.asarray(isl, dtype=i32), np.asarray(osl, dtype=i32), np.zeros(n, i32), np.asarray(isl, dtype=i32),
              np.zeros(n, i32), np.zeros(n, i32), block_size, blocks, total_blocks=blocks)
    first, last = np.full(n, np.nan), np.full(n, np.nan)
    usage = UsageTrace()
    t, nxt, issued, finished, iters, full, peak = 0.0, 0, min(concurrency or n, n), 0, 0, math.nan, 0
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
        for r in done_ids:
            s.running.remove(r)
            s.release(r)
            finished += 1
            if concurrency is not None and issued < n:
                arrival[issued] = t
                issued += 1
        if s.free_blocks == 0 and math.isnan(full):
            full = t
        usage.add(t, blocks - s.free_blocks)
    return ReplicaResult(arrival, s.isl, s.osl, first, last, iters, s.preemptions, usage, blocks, full, peak)


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
