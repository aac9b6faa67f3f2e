"""The cross-rank view of a multi-rank run, computed once from the ranks' summaries (renderers only read it:
:mod:`roofline.render.ranks` draws every figure from the fields of :class:`MultiRankTrace`).

* Per rank and per step: compute, exposed and overlapped communication, memcpy, idle
  (:class:`~roofline.frontends.trace.ranksummary.Breakdown`, keyed by step).
* Per collective (the k-th collective of each rank, lined up when every rank
  names it alike): each rank's *wait*, its time beyond the fastest rank's, and
  the rank that *arrived last* (the one with the shortest collective: the
  others were already in it, waiting).
* Stragglers: a rank's own time is its steps' spans less its exposed
  communication (compute + memcpy + idle: what the others wait for).  A rank
  whose own time exceeds the median rank's by more than :data:`STRAGGLER_SHARE`
  of the median rank's work (its compute + memcpy: idle time after the last
  collective, the same on every rank, would dilute a share of the step) is named, with the cause that holds the most of the excess: its ops run slower
  than the same ops on the median rank (same costs, so further below their
  roofs), it runs ops the median rank does not (extra work), or it is idle.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from roofline.core.errors import RooflineError
from roofline.frontends.trace.ranksummary import Breakdown, OpFigures, RankSummary

STRAGGLER_SHARE = 0.05  # own time over the median rank's by this share of its work makes a straggler


@dataclass(frozen=True)
class CollectiveWait:
    """The k-th collective of every rank: its name, step, each rank's wait (s) and the rank that came last."""

    index: int
    step: int
    name: str
    waits: tuple[float, ...]  # per rank, in the order of MultiRankTrace.ranks
    last_rank: int
    longest_wait: float  # the largest of waits: the time the last rank cost the others here


@dataclass(frozen=True)
class SlowOp:
    """An op slower on the straggler than on the median rank: mean seconds per call on each."""

    name: str
    kind: str
    flops: float
    bytes: float
    calls: int
    seconds: float  # per call, on the straggler
    median_seconds: float  # per call, on the median rank

    @property
    def ratio(self) -> float:
        return self.seconds / self.median_seconds if self.median_seconds > 0 else float("inf")


@dataclass(frozen=True)
class OpPoint:
    """One op cost of a rank on the roofline chart: its intensity and the FLOP/s it achieved."""

    name: str
    intensity: float  # FLOPs per byte
    achieved_flops: float  # FLOP/s: its FLOPs over its measured seconds, all calls together


@dataclass(frozen=True)
class Straggler:
    """A rank the others wait for, against the median rank, with the cause that holds most of its excess."""

    rank: int
    median_rank: int
    own_seconds: float
    median_own_seconds: float
    cause: str  # "slower ops", "extra work" or "idle"
    slower_ops_seconds: float
    extra_work_seconds: float
    extra_idle_seconds: float
    slow_ops: tuple[SlowOp, ...]
    extra_ops: tuple[tuple[str, int, float], ...]  # (op name, extra calls, their seconds)
    points: tuple[OpPoint, ...]  # the straggler's ops with FLOPs, bytes and time (the chart)
    median_points: tuple[OpPoint, ...]  # the median rank's

    def line(self) -> str:
        """One line: who and why."""
        excess = self.own_seconds - self.median_own_seconds
        head = (f"rank {self.rank} is a straggler: {excess * 1e3:.3g} ms more of its own time than the median rank "
                f"{self.median_rank}; cause: {self.cause}")
        if self.cause == "slower ops" and self.slow_ops:
            top = ", ".join(f"{o.name} {o.ratio:.2f}x" for o in self.slow_ops[:3])
            return f"{head} ({top} the median rank's time per call, same FLOPs and bytes)"
        if self.cause == "extra work" and self.extra_ops:
            top = ", ".join(f"{n} +{c} calls" for n, c, _ in self.extra_ops[:3])
            return f"{head} ({self.extra_work_seconds * 1e3:.3g} ms in ops the median rank does not run: {top})"
        return f"{head} ({self.extra_idle_seconds * 1e3:.3g} ms more idle, no op running)"


@dataclass(frozen=True)
class MultiRankTrace:
    """Every rank's summary and the cross-rank facts (:func:`roofline.read_traces`)."""

    ranks: tuple[RankSummary, ...]
    skipped: tuple[str, ...]  # one line per rank left out (skip_bad_ranks)
    steps: tuple[int, ...]  # ProfilerStep numbers every rank has
    collectives: tuple[CollectiveWait, ...]
    longest_waits: tuple[int, ...]  # indices into collectives, the longest wait first
    stragglers: tuple[Straggler, ...]
    slowest_rank: int  # the rank with the most op time outside collectives (what from_trace shows)
    step_seconds: tuple[tuple[float, ...], ...]  # step time [s], rank x common step (the heat map)
    totals: tuple[Breakdown, ...]  # keyed by rank: sums over the common steps (the stacked bars, the table)
    straggler_share: float = STRAGGLER_SHARE  # the threshold the stragglers were named by

    def headline(self) -> str:
        lines = [f"{len(self.ranks)} ranks, {len(self.steps)} common step(s); slowest: rank {self.slowest_rank}"]
        if self.skipped:
            lines[0] += f"; went on without {len(self.skipped)} bad rank(s)"
        return lines[0]

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        doc = asdict(self)
        # a Breakdown's key is written by what it is (the format of roofline.ranks/1, unchanged)
        for r in doc["ranks"]:
            r["steps"] = [{"step": b.pop("key"), **b} for b in r["steps"]]
        doc["totals"] = [{"rank": b.pop("key"), **b} for b in doc["totals"]]
        return {"schema": "roofline.ranks/1", **doc}


def check_metadata(ranks: list[RankSummary]) -> list[int]:
    """Refuse ranks whose metadata disagree (world size, duplicate ranks, no common ProfilerStep); return the
    common step numbers.  Different op counts are never a mismatch (they are a straggler's cause)."""
    worlds = {r.world_size for r in ranks if r.world_size is not None}
    if len(worlds) > 1:
        by = ", ".join(f"rank {r.rank} ({r.file}) says {r.world_size}" for r in ranks)
        raise RooflineError(f"the ranks disagree on the world size: {by}")
    seen: dict[int | None, str] = {}
    for r in ranks:
        if r.rank in seen:
            raise RooflineError(f"two traces are rank {r.rank} ({seen[r.rank]}, {r.file}): give one file per rank")
        seen[r.rank] = r.file
    common = set.intersection(*({s.key for s in r.steps} for r in ranks))
    if not common:
        by = "; ".join(f"rank {r.rank}: {', '.join(str(s.key) for s in r.steps[:4])}" for r in ranks)
        raise RooflineError(f"the ranks share no ProfilerStep number ({by}): not one run")
    return sorted(common)


def _own(r: RankSummary, steps: list[int]) -> float:
    return sum(s.seconds - s.comm_exposed for s in r.steps if s.key in steps)


def collective_waits(ranks: list[RankSummary]) -> list[CollectiveWait]:
    """The k-th collective of every rank, while every rank names it alike."""
    out = []
    for k, calls in enumerate(zip(*(r.collectives for r in ranks), strict=False)):
        if len({(c[0], c[1]) for c in calls}) != 1:
            break  # the ranks no longer line up: no wait is claimed past here
        secs = [c[2] for c in calls]
        fastest = min(secs)
        last = min(range(len(secs)), key=lambda i: secs[i])
        who = ranks[last].rank
        waits = tuple(s - fastest for s in secs)
        out.append(CollectiveWait(k, calls[0][0], calls[0][1], waits, who if who is not None else last, max(waits)))
    return out


def _ops_by_key(ops: tuple[OpFigures, ...]) -> dict[tuple[Any, ...], OpFigures]:
    return {(o.name, o.kind, o.precision, o.unit, o.flops, o.bytes): o for o in ops}


def straggler(r: RankSummary, med: RankSummary, steps: list[int]) -> Straggler:
    """``r`` against the median rank ``med``: how much of its excess own time each cause holds."""
    mine, theirs = _ops_by_key(r.ops), _ops_by_key(med.ops)
    slow, extra, slower_s, extra_s = [], [], 0.0, 0.0
    for key, o in mine.items():
        if o.kind == "collective":
            continue  # a collective's time is mostly waiting for the others: the view's waits say it
        m = theirs.get(key)
        per = o.seconds / o.count if o.count else 0.0
        if m is None or m.count == 0:
            extra.append((o.name, o.count, o.seconds))
            extra_s += o.seconds
            continue
        per_m = m.seconds / m.count
        both = min(o.count, m.count)
        slower_s += both * (per - per_m)
        if o.count > m.count:
            extra.append((o.name, o.count - m.count, (o.count - m.count) * per))
            extra_s += (o.count - m.count) * per
        if per > per_m * 1.05:
            slow.append(SlowOp(o.name, o.kind, o.flops, o.bytes, o.count, per, per_m))
    idle = sum(s.idle for s in r.steps if s.key in steps) - sum(s.idle for s in med.steps if s.key in steps)
    causes = {"slower ops": slower_s, "extra work": extra_s, "idle": idle}
    cause = max(causes, key=lambda c: causes[c])
    slow.sort(key=lambda o: -(o.seconds - o.median_seconds) * o.calls)
    extra.sort(key=lambda e: -e[2])
    assert r.rank is not None and med.rank is not None
    return Straggler(r.rank, med.rank, _own(r, steps), _own(med, steps), cause, slower_s, extra_s, idle,
                     tuple(slow[:20]), tuple(extra[:20]), roofline_points(r), roofline_points(med))


def cross_rank(ranks: list[RankSummary], skipped: list[str]) -> MultiRankTrace:
    """The cross-rank view of checked ranks (:func:`check_metadata` first)."""
    steps = check_metadata(ranks)
    own = [_own(r, steps) for r in ranks]
    order = sorted(range(len(ranks)), key=lambda i: own[i])
    med = ranks[order[(len(order) - 1) // 2]]
    med_own = statistics.median(own)
    med_work = sum(s.compute + s.memcpy for s in med.steps if s.key in steps)
    found = [straggler(ranks[i], med, steps) for i in order[::-1]
             if len(ranks) > 1 and own[i] - med_own > STRAGGLER_SHARE * med_work and ranks[i] is not med]
    slowest = ranks[max(range(len(ranks)), key=lambda i: ranks[i].work_seconds)]  # ties: the first
    assert slowest.rank is not None
    matrix = tuple(tuple(next(s.seconds for s in r.steps if s.key == n) for n in steps) for r in ranks)
    waits = collective_waits(ranks)
    longest = tuple(sorted(range(len(waits)), key=lambda k: -waits[k].longest_wait))
    return MultiRankTrace(tuple(ranks), tuple(skipped), tuple(steps), tuple(waits), longest, tuple(found),
                          slowest.rank, matrix, rank_totals(ranks, steps))


def rank_totals(ranks: list[RankSummary], steps: list[int]) -> tuple[Breakdown, ...]:
    """Per rank, the sums of its step breakdowns over the common ``steps`` (the stacked bar), keyed by rank."""
    return tuple(Breakdown.total(r.rank if r.rank is not None else k, [s for s in r.steps if s.key in steps])
                 for k, r in enumerate(ranks))


def roofline_points(r: RankSummary) -> tuple[OpPoint, ...]:
    """A rank's ops with FLOPs, bytes and time on the chart: FLOPs per byte, and FLOPs over measured seconds
    (all calls: count x FLOPs each over their seconds, the same as per call)."""
    return tuple(OpPoint(o.name, o.flops / o.bytes, o.flops * o.count / o.seconds) for o in r.ops
                 if o.flops > 0 and o.bytes > 0 and o.seconds > 0)
