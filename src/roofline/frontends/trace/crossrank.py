"""The cross-rank view of a multi-rank run, computed once from the ranks' summaries (renderers only read it:
:mod:`roofline.render.ranks` draws every figure from the fields of :class:`MultiRankTrace`).

* Per rank and per step: compute, exposed and overlapped communication, memcpy, idle
  (:class:`~roofline.frontends.trace.ranksummary.Breakdown`, keyed by step).
* The slowest rank: the one with the longest step time (the per-rank table's
  "step ms", summed over the common steps; ties: the first).  It is the rank
  analysed (:func:`roofline.from_trace`).  Step time holds waiting for others,
  so the slowest is often a rank that waits, not the one waited for: that one
  is the straggler, a separate figure.
* Per collective, lined up across the members of its process group by
  (group, sequence number) where the trace records ``Seq``, else by (group,
  place in the group's order), while the members name it alike: each rank's
  *wait* (its time in it beyond the shortest), the rank that *arrived last*
  (the shortest: the others were already in it, waiting) and the delay it
  *caused*: how much later it came than the one before it (the shortest wait
  of the others), the time the collective would have ended sooner without it.
* Waiting is attributed to the rank waited for: each rank's delay caused
  (:class:`RankDelay`, summed over the collectives it came last to) and its
  own waits, apart.  The stragglers are the ranks whose delay caused exceeds
  :data:`STRAGGLER_SHARE` of the median rank's work (its compute + memcpy),
  the largest first; a rank that only waits causes no delay, whatever idle
  its waiting leaves.  Without any collective lined up (no waits to go by), a
  rank whose own time (its steps' spans less exposed communication) exceeds
  the median rank's by that share is named instead.
* A straggler's cause is what holds the most of its excess own time over the
  median of the other ranks: its ops run slower than the same ops there (same
  costs, so further below their roofs), it runs ops the median rank does not
  (extra work), or it is idle before it arrives; when none of them is
  positive, :data:`OUTSIDE` (it came late before its profile started, or its
  host was busy outside the profiled ops).
* The run's time per step: per common step, the longest rank's step time; its
  median and quartiles over the steps (:attr:`MultiRankTrace.step_time`).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from roofline.core.errors import RooflineError
from roofline.core.stats import Timing
from roofline.frontends.trace.ranksummary import Breakdown, Collective, OpFigures, RankSummary

OUTSIDE = "outside the trace"  # a straggler's cause when nothing in its trace holds its lateness
STRAGGLER_SHARE = 0.05  # delay caused (or own time over the median rank's) by this share of its work: a straggler


@dataclass(frozen=True)
class CollectiveWait:
    """One collective lined up across the ranks of its process group: its step, kind, group and key (its
    sequence number there, or its place in the group's order), each rank's wait, the rank that came last and
    the delay it caused."""

    index: int
    step: int
    name: str
    group: str
    key: int  # the sequence number (by_seq) or the place in the group's order, the same on every member
    by_seq: bool
    waits: tuple[float, ...]  # per rank, in the order of MultiRankTrace.ranks (0 for a rank not in the group)
    last_rank: int
    longest_wait: float  # the largest of waits
    caused: float  # how much later the last rank came than the one before it: the delay it alone caused


@dataclass(frozen=True)
class RankDelay:
    """One rank's part in the collectives: the delay it caused the others (each collective it came last to:
    how much later than the one before it), the time it waited for others, and how often it came last."""

    rank: int
    caused: float
    waited: float
    last: int


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
    """A rank the others wait for: the delay it caused them, and against the median rank, the cause that holds
    most of its excess own time."""

    rank: int
    median_rank: int
    caused_seconds: float  # the delay it caused the others (RankDelay.caused; without waits: its excess own time)
    last: int  # collectives it came last to
    own_seconds: float
    median_own_seconds: float
    cause: str  # "slower ops", "extra work", "idle", or OUTSIDE (none of them: not in its trace)
    slower_ops_seconds: float
    extra_work_seconds: float
    extra_idle_seconds: float  # its idle before it arrives (RankSummary.arrival_idle) over the median rank's
    slow_ops: tuple[SlowOp, ...]
    extra_ops: tuple[tuple[str, int, float], ...]  # (op name, extra calls, their seconds)
    points: tuple[OpPoint, ...]  # the straggler's ops with FLOPs, bytes and time (the chart)
    median_points: tuple[OpPoint, ...]  # the median rank's

    def line(self) -> str:
        """One line: who and why first (the cause and what shows it), then how much it delayed the others."""
        excess = self.own_seconds - self.median_own_seconds
        why = (f"the others waited {self.caused_seconds * 1e3:.3g} ms for it (last to {self.last} collective(s))"
               if self.last else "no collective to go by")
        tail = f"; {why}; {excess * 1e3:.3g} ms more own time than the median rank {self.median_rank}"
        head = f"rank {self.rank} is a straggler, cause: {self.cause}"
        if self.cause == "slower ops" and self.slow_ops:
            top = ", ".join(f"{o.name} {o.ratio:.2f}x" for o in self.slow_ops[:3])
            return f"{head} ({top} the median rank's time per call, same FLOPs and bytes){tail}"
        if self.cause == "extra work" and self.extra_ops:
            top = ", ".join(f"{n} +{c} calls" for n, c, _ in self.extra_ops[:3])
            return f"{head} ({self.extra_work_seconds * 1e3:.3g} ms in ops the median rank does not run: {top}){tail}"
        if self.cause == OUTSIDE:
            return (f"{head} (no slower op, extra work or idle in its trace: it came late before its profile "
                    f"started, or its host was busy outside the profiled ops){tail}")
        return f"{head} ({self.extra_idle_seconds * 1e3:.3g} ms more idle before it arrives, no op running){tail}"


@dataclass(frozen=True)
class MultiRankTrace:
    """Every rank's summary and the cross-rank facts (:func:`roofline.read_traces`)."""

    ranks: tuple[RankSummary, ...]
    skipped: tuple[str, ...]  # one line per rank left out (skip_bad_ranks)
    steps: tuple[int, ...]  # ProfilerStep numbers every rank has
    collectives: tuple[CollectiveWait, ...]
    longest_waits: tuple[int, ...]  # indices into collectives, the longest wait first
    stragglers: tuple[Straggler, ...]  # the largest delay caused first
    slowest_rank: int  # the rank with the longest step time over the common steps (what from_trace shows)
    step_seconds: tuple[tuple[float, ...], ...]  # step time [s], rank x common step (the heat map)
    totals: tuple[Breakdown, ...]  # keyed by rank: sums over the common steps (the stacked bars, the table)
    delays: tuple[RankDelay, ...]  # per rank, in the order of ranks: delay caused, time waited
    step_time: Timing  # the run's time per common step (the longest rank's each step): median, quartiles
    straggler_share: float = STRAGGLER_SHARE  # the threshold the stragglers were named by

    def headline(self) -> str:
        from roofline.core.units import format_seconds

        t = self.step_time
        slow = next(b for b in self.totals if b.key == self.slowest_rank)
        # ranks whose step time equals the slowest's (the first of them is named): the table shows them alike
        tied = sum(abs(b.seconds - slow.seconds) <= 1e-9 * slow.seconds for b in self.totals) - 1
        text = (f"{len(self.ranks)} ranks, {len(self.steps)} common step(s): median step {format_seconds(t.median)}"
                + (f" ({format_seconds(t.low)}..{format_seconds(t.high)} over {t.repeats} steps)" if t.repeats > 1
                   else "")
                + f"; slowest: rank {self.slowest_rank} (longest step time, {format_seconds(slow.seconds)}"
                + (f"; tied with {tied} other rank(s)" if tied else "") + ")")
        if self.stragglers:
            s = self.stragglers[0]
            text += f"; straggler: rank {s.rank} ({s.cause}; the others waited {format_seconds(s.caused_seconds)})" \
                if s.last else f"; straggler: rank {s.rank} ({s.cause})"
        else:
            text += "; no straggler"
        if self.skipped:
            text += f"; went on without {len(self.skipped)} bad rank(s)"
        return text

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        doc = asdict(self)
        # a Breakdown's key is written by what it is
        for r in doc["ranks"]:
            r["steps"] = [{"step": b.pop("key"), **b} for b in r["steps"]]
        doc["totals"] = [{"rank": b.pop("key"), **b} for b in doc["totals"]]
        doc["step_time"] = self.step_time.to_dict()
        return {"schema": "roofline.ranks/2", **doc}


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


Key = tuple[str, bool, int]  # (process group, by sequence number, the number or the place in the group's order)


def _keyed(r: RankSummary) -> dict[Key, Collective]:
    """A rank's collectives by the key the members of a group agree on: the sequence number where every call of
    the group carries a distinct one, else the place in the group's order."""
    groups: dict[str, list[Collective]] = {}
    for c in r.collectives:
        groups.setdefault(c.group, []).append(c)
    out: dict[Key, Collective] = {}
    for g, calls in groups.items():
        by_seq = all(c.seq >= 0 for c in calls) and len({c.seq for c in calls}) == len(calls)
        out.update(((g, by_seq, c.seq if by_seq else k), c) for k, c in enumerate(calls))
    return out


def _rank_id(r: RankSummary, k: int) -> int:
    return r.rank if r.rank is not None else k


def collective_waits(ranks: list[RankSummary]) -> list[CollectiveWait]:
    """Each collective lined up across the members of its group (module docs); a group lined up by order stops at
    the first call its members name differently (no wait is claimed past it), one by sequence number skips it."""
    keyed = [_keyed(r) for r in ranks]
    first = {k: n for n, k in enumerate(dict.fromkeys(k for mine in keyed for k in mine))}  # first seen first
    members: dict[tuple[str, bool], list[int]] = {}
    for i, mine in enumerate(keyed):
        for g in dict.fromkeys((k[0], k[1]) for k in mine):
            members.setdefault(g, []).append(i)
    stopped: set[tuple[str, bool]] = set()
    found: list[tuple[int, Key, list[int], list[Collective]]] = []
    for key in sorted(first):  # by group, then number: a group lined up by order is walked in its order
        group = (key[0], key[1])
        who = members[group]
        calls = [keyed[i].get(key) for i in who]
        if group in stopped or len(who) < 2:
            continue
        if any(c is None for c in calls) or len({(c.step, c.name) for c in calls if c is not None}) != 1:
            if not key[1]:
                stopped.add(group)
            continue
        have = [c for c in calls if c is not None]
        found.append((have[0].step, key, who, have))
    found.sort(key=lambda f: (f[0], first[f[1]]))
    out = []
    for index, (step, key, who, lined) in enumerate(found):
        secs = [c.seconds for c in lined]
        last = min(range(len(secs)), key=lambda j: secs[j])
        waits = [0.0] * len(ranks)
        for i, sec in zip(who, secs, strict=True):
            waits[i] = sec - secs[last]
        others = [secs[j] - secs[last] for j in range(len(secs)) if j != last]
        out.append(CollectiveWait(index, step, lined[0].name, key[0], key[2], key[1], tuple(waits),
                                  _rank_id(ranks[who[last]], who[last]), max(waits), min(others)))
    return out


def rank_delays(ranks: list[RankSummary], waits: list[CollectiveWait]) -> tuple[RankDelay, ...]:
    """Per rank: the delay it caused (summed over the collectives it came last to), its waits, how often last."""
    ids = [_rank_id(r, k) for k, r in enumerate(ranks)]
    caused = dict.fromkeys(ids, 0.0)
    last = dict.fromkeys(ids, 0)
    for c in waits:
        caused[c.last_rank] += c.caused
        last[c.last_rank] += 1
    return tuple(RankDelay(r, caused[r], sum(c.waits[k] for c in waits), last[r]) for k, r in enumerate(ids))


def _arrival_idle(r: RankSummary, steps: list[int]) -> float:
    """Its idle before it arrives at each common step's last collective (idle after it is waiting)."""
    return sum(x for s, x in zip(r.steps, r.arrival_idle, strict=True) if s.key in steps)


def _ops_by_key(ops: tuple[OpFigures, ...]) -> dict[tuple[Any, ...], OpFigures]:
    return {(o.name, o.kind, o.precision, o.unit, o.flops, o.bytes): o for o in ops}


def straggler(r: RankSummary, med: RankSummary, steps: list[int], delay: RankDelay | None = None) -> Straggler:
    """``r`` against the median rank ``med``: how much of its excess own time each cause holds; ``delay``: the
    delay it caused (None: no collective lined up, its excess own time stands for it)."""
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
    idle = _arrival_idle(r, steps) - _arrival_idle(med, steps)
    causes = {"slower ops": slower_s, "extra work": extra_s, "idle": idle}
    cause = max(causes, key=lambda c: causes[c])
    if causes[cause] <= 0:  # nothing in its trace makes it later than the median rank: the delay is outside it
        cause = OUTSIDE
    slow.sort(key=lambda o: -(o.seconds - o.median_seconds) * o.calls)
    extra.sort(key=lambda e: -e[2])
    assert r.rank is not None and med.rank is not None
    own, med_own = _own(r, steps), _own(med, steps)
    caused, last = (delay.caused, delay.last) if delay is not None else (own - med_own, 0)
    return Straggler(r.rank, med.rank, caused, last, own, med_own, cause, slower_s, extra_s, idle,
                     tuple(slow[:20]), tuple(extra[:20]), roofline_points(r), roofline_points(med))


def _stragglers(ranks: list[RankSummary], steps: list[int], delays: tuple[RankDelay, ...], lined_up: bool
                ) -> tuple[Straggler, ...]:
    """The ranks that delayed the others past the threshold (module docs), the largest delay first."""
    if len(ranks) < 2:
        return ()
    own = [_own(r, steps) for r in ranks]
    order = sorted(range(len(ranks)), key=lambda i: own[i])
    mid = order[(len(order) - 1) // 2]
    med_work = sum(s.compute + s.memcpy for s in ranks[mid].steps if s.key in steps)
    limit = STRAGGLER_SHARE * med_work
    if lined_up:
        named = sorted((i for i in range(len(ranks)) if delays[i].caused > limit), key=lambda i: -delays[i].caused)
    else:
        med_own = statistics.median(own)
        named = [i for i in order[::-1] if own[i] - med_own > limit]
    out = []
    for i in named:
        others = [k for k in order if k != i]  # the median of the other ranks (by own time) is what it is held to
        out.append(straggler(ranks[i], ranks[others[(len(others) - 1) // 2]], steps, delays[i] if lined_up else None))
    return tuple(out)


def cross_rank(ranks: list[RankSummary], skipped: list[str]) -> MultiRankTrace:
    """The cross-rank view of checked ranks (:func:`check_metadata` first)."""
    steps = check_metadata(ranks)
    totals = rank_totals(ranks, steps)
    slowest = max(range(len(ranks)), key=lambda i: totals[i].seconds)  # ties: the first
    matrix = tuple(tuple(next(s.seconds for s in r.steps if s.key == n) for n in steps) for r in ranks)
    waits = collective_waits(ranks)
    delays = rank_delays(ranks, waits)
    found = _stragglers(ranks, steps, delays, bool(waits))
    longest = tuple(sorted(range(len(waits)), key=lambda k: -waits[k].longest_wait))
    step_time = Timing.of([max(col) for col in zip(*matrix, strict=True)])
    return MultiRankTrace(tuple(ranks), tuple(skipped), tuple(steps), tuple(waits), longest, found,
                          totals[slowest].key, matrix, totals, delays, step_time)


def rank_totals(ranks: list[RankSummary], steps: list[int]) -> tuple[Breakdown, ...]:
    """Per rank, the sums of its step breakdowns over the common ``steps`` (the stacked bar), keyed by rank."""
    return tuple(Breakdown.total(_rank_id(r, k), [s for s in r.steps if s.key in steps])
                 for k, r in enumerate(ranks))


def roofline_points(r: RankSummary) -> tuple[OpPoint, ...]:
    """A rank's ops with FLOPs, bytes and time on the chart: FLOPs per byte, and FLOPs over measured seconds
    (all calls: count x FLOPs each over their seconds, the same as per call)."""
    return tuple(OpPoint(o.name, o.flops / o.bytes, o.flops * o.count / o.seconds) for o in r.ops
                 if o.flops > 0 and o.bytes > 0 and o.seconds > 0)
