"""Two traces compared: which ops and kernels got slower or faster, and why, through the roofline.

Matching: ops by module path (the workload's ``group``) and op name, in order, first those whose work (FLOPs
and bytes, which the input shapes set) is the same, then the rest of the same path and name (their work
changed); kernels by name, in order, within their matched op (kernels no placed op launched: by name, in order,
over the trace).  What is left is listed as added or removed.

Each matched kernel's change (an op's, on a CPU trace) is split through the roofline.  With ``R`` its op's
roofline time (the judged roof: :attr:`roofline.engine.analysis.Analysis.judged_time`), ``t`` its time and
``e = R / t`` its efficiency, ``t = R / e``, so ``t_b - t_a = (R_b - R_a) / e_a + (R_b / e_b - R_b / e_a)``:

* the first term is the **work** (more FLOPs or bytes) or, when the work is the same on two devices, the
  **device** (its roofs);
* the second is **efficiency**: the kernel got worse (or better) against the same roof.

A kernel's share of its op's roof is its share of the op's time in A.  The GPU's idle time (span less the
union of the kernels, :mod:`.idle`) is the **host**'s row: more overhead or idle.  The headline names the three
largest changes.  Across devices, the roofs' expected ratio is the matched ops' roofline time on B over A's.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.frontends.trace.analyses.idle import idle_time
from roofline.frontends.trace.analyses.timeline import Timeline, timeline
from roofline.frontends.trace.columns import TraceEvents

CAUSES = ("work", "device", "efficiency", "host")
NOISE = 1e-4  # changes under this share of the longer trace's time are not listed


@dataclass(frozen=True)
class Change:
    kind: str  # 'kernel', 'op' (a CPU trace, or an op's kernels all added/removed) or 'host'
    name: str  # the kernel's (or op's) name
    where: str  # the op and its module path
    seconds_a: float
    seconds_b: float
    delta: float  # s, B - A
    cause: str  # one of CAUSES: the largest part of the change
    why: str


@dataclass(frozen=True)
class TraceDiff:
    a: str
    b: str
    device_a: str
    device_b: str
    seconds_a: float  # the profiler steps' time (the kernels' or ops' span without steps)
    seconds_b: float
    changes: tuple[Change, ...]  # largest |delta| first
    added: tuple[str, ...]  # kernels / ops only in B
    removed: tuple[str, ...]  # only in A
    expected_ratio: float | None  # devices differ: the roofs' time on B / on A for the same work

    def headline(self) -> str:
        if not self.changes and not self.added and not self.removed:
            return "no change: every op and kernel matched, with the same time"
        d = self.seconds_b - self.seconds_a
        top = "; ".join(f"{c.name[:60]} {c.delta * 1e3:+.3g} ms ({c.cause})" for c in self.changes[:3])
        if self.seconds_a > 0 and abs(d) > NOISE * max(self.seconds_a, self.seconds_b):
            lead = f"B is {abs(d) * 1e3:.3g} ms {'slower' if d > 0 else 'faster'} ({self.seconds_b / self.seconds_a:.3g}x)"
        else:
            lead = "B takes the same time"
        return lead + (f"; the largest changes: {top}" if top else "")


@dataclass(frozen=True)
class Side:
    """One trace as the diff reads it: its timeline (kernels on their ops) and its roofline analysis."""

    path: str
    t: Timeline
    analysis: Any

    @classmethod
    def of(cls, ev: TraceEvents, owner: np.ndarray, analysis: Any) -> Side:
        return cls(ev.path, timeline(ev, owner, analysis), analysis)

    def seconds(self) -> float:
        t = self.t
        if t.steps:
            return sum(e - s for _, s, e in t.steps) * 1e-6
        if t.gpu:
            return float(t.end.max() - t.start.min()) * 1e-6
        return float(np.nansum(self.analysis.workload.columns["measured_seconds"]))

    def ops(self) -> dict[tuple[str, str], list[int]]:
        """Rows by (module path, op name), in order."""
        w = self.analysis.workload
        out: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i in range(len(w)):
            out[(w.strings("group", i), w.strings("name", i))].append(i)
        return out

    def work(self, r: int) -> tuple[float, float]:
        c = self.analysis.workload.columns
        return float(c["flops"][r]), float(c["bytes_read"][r] + c["bytes_written"][r])


def diff_traces(a: Side, b: Side) -> TraceDiff:
    """B against A (the module docstring)."""
    acc: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    added: list[str] = []
    removed: list[str] = []
    same_device = a.analysis.device.name == b.analysis.device.name
    roofs = [0.0, 0.0]
    kernels_a, kernels_b = _by_row(a.t), _by_row(b.t)
    ops_a, ops_b = a.ops(), b.ops()
    for key in sorted(set(ops_a) | set(ops_b)):
        pairs, only_a, only_b = _pair_ops(a, b, ops_a.get(key, []), ops_b.get(key, []))
        removed += [key[1]] * len(only_a)
        added += [key[1]] * len(only_b)
        for ra, rb in pairs:
            work_same = a.work(ra) == b.work(rb)
            if work_same:
                roofs[0] += float(a.analysis.judged_time[ra])
                roofs[1] += float(b.analysis.judged_time[rb])
            _pair_kernels(a, b, ra, rb, kernels_a.get(ra, []), kernels_b.get(rb, []), work_same, acc, added, removed)
    _unplaced(a, b, kernels_a.get(-1, []), kernels_b.get(-1, []), acc, added, removed)
    changes = [_change(key, v, same_device) for key, v in acc.items()]
    changes.append(_host(a, b))
    limit = NOISE * max(a.seconds(), b.seconds())
    changes = sorted((c for c in changes if abs(c.delta) > limit), key=lambda c: -abs(c.delta))
    ratio = roofs[1] / roofs[0] if not same_device and roofs[0] > 0 else None
    return TraceDiff(a.path, b.path, a.analysis.device.name, b.analysis.device.name, a.seconds(), b.seconds(),
                     tuple(changes), tuple(added), tuple(removed), ratio)


def _by_row(t: Timeline) -> dict[int, list[int]]:
    """Timeline positions of each op row's kernels, in start order (-1: kernels of no placed op)."""
    order = np.argsort(t.start, kind="stable")
    out: dict[int, list[int]] = defaultdict(list)
    for k, r in zip(order.tolist(), t.row[order].tolist(), strict=True):
        out[r].append(k)
    return out


def _pair_ops(a: Side, b: Side, rows_a: list[int], rows_b: list[int]
              ) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """Rows of one (path, name) paired: same work in order first, then the rest in order."""
    by_work: dict[tuple[float, float], list[int]] = defaultdict(list)
    for r in rows_b:
        by_work[b.work(r)].append(r)
    pairs, left_a = [], []
    used: set[int] = set()
    for r in rows_a:
        same = by_work.get(a.work(r))
        if same:
            rb = same.pop(0)
            used.add(rb)
            pairs.append((r, rb))
        else:
            left_a.append(r)
    left_b = [r for r in rows_b if r not in used]
    n = min(len(left_a), len(left_b))
    return pairs + list(zip(left_a[:n], left_b[:n], strict=True)), left_a[n:], left_b[n:]


def _pair_kernels(a: Side, b: Side, ra: int, rb: int, ka: list[int], kb: list[int], work_same: bool,
                  acc: dict[tuple[str, str, str], list[float]], added: list[str], removed: list[str]) -> None:
    """One matched op's kernels, by name in order, into ``acc``: per (where, kernel, cause kind) the seconds in
    A and B and the roof part (work or device) of the change."""
    wa = a.analysis.workload
    where = f"{wa.strings('name', ra)}" + (f" in {wa.strings('group', ra)}" if wa.strings("group", ra) else "")
    Ra, Rb = float(a.analysis.judged_time[ra]), float(b.analysis.judged_time[rb])
    Ta = float(wa.columns["measured_seconds"][ra])
    if not ka and not kb:  # a CPU trace: the op is the unit
        Tb = float(b.analysis.workload.columns["measured_seconds"][rb])
        _add(acc, ("op", wa.strings("name", ra), where), Ta, Tb, Ra, Rb, Ta, work_same)
        return
    for n, k, k2 in _match_by_name(a, b, ka, kb, added, removed):
        ta, tb = (a.t.end[k] - a.t.start[k]) * 1e-6, (b.t.end[k2] - b.t.start[k2]) * 1e-6
        _add(acc, ("kernel", n, where), float(ta), float(tb), Ra, Rb, Ta, work_same)


def _match_by_name(a: Side, b: Side, ka: list[int], kb: list[int], added: list[str], removed: list[str]
                   ) -> list[tuple[str, int, int]]:
    """(name, kernel in A, kernel in B) of the kernels of ``ka`` and ``kb`` matched by name in order over each
    trace; the unmatched names go to ``removed`` (A's) and ``added`` (B's)."""
    names_b: dict[str, list[int]] = defaultdict(list)
    for k in kb:
        names_b[b.t.name(k)].append(k)
    pairs = []
    for k in ka:
        n = a.t.name(k)
        if names_b.get(n):
            pairs.append((n, k, names_b[n].pop(0)))
        else:
            removed.append(n)
    added += [n for n, ks in names_b.items() for _ in ks]
    return pairs


def _add(acc: dict[tuple[str, str, str], list[float]], key: tuple[str, str, str], ta: float, tb: float, Ra: float,
         Rb: float, Ta: float, work_same: bool) -> None:
    """One matched pair's seconds and roof part: ``ta (Rb / Ra - 1)`` (the module docstring's first term, the
    kernel's roof being its share ``ta / Ta`` of its op's)."""
    roof = ta * (Rb / Ra - 1.0) if Ra > 0 and np.isfinite(Ta) else 0.0
    v = acc[key]
    v[0] += ta
    v[1] += tb
    v[2 if not work_same else 3] += roof  # 2: work changed, 3: same work (a device change)
    v[4] += Ra * ta / Ta if Ra > 0 and Ta > 0 else 0.0  # roof time in A
    v[5] += Rb * ta / Ta if Rb > 0 and Ta > 0 else 0.0  # B's share of its op's roof: A's share


def _unplaced(a: Side, b: Side, ka: list[int], kb: list[int], acc: dict[tuple[str, str, str], list[float]],
              added: list[str], removed: list[str]) -> None:
    """Kernels no placed op launched, by name in order over each trace (no roof: any change is efficiency)."""
    for n, k, k2 in _match_by_name(a, b, ka, kb, added, removed):
        _add(acc, ("kernel", n, "launched by no placed op"), float(a.t.end[k] - a.t.start[k]) * 1e-6,
             float(b.t.end[k2] - b.t.start[k2]) * 1e-6, 0.0, 0.0, float("nan"), True)


def _change(key: tuple[str, str, str], v: list[float], same_device: bool) -> Change:
    kind, name, where = key
    ta, tb, work, device = v[:4]
    delta = tb - ta
    eff = delta - work - device
    parts = {"work": work, "device": 0.0 if same_device else device,
             "efficiency": eff + (device if same_device else 0.0)}
    cause = max(parts, key=lambda c: abs(parts[c]))
    ea = v[4] / ta if ta > 0 else float("nan")
    eb = v[5] / tb if tb > 0 else float("nan")
    why = {"work": f"its op's work changed (roofline time {work:+.3g} s at A's efficiency)",
           "device": f"the device's roofs ({device:+.3g} s at A's efficiency)",
           "efficiency": (f"{ea:.2g} -> {eb:.2g} of its roof" if np.isfinite(ea) and v[4] > 0
                          else f"{tb / ta:.3g}x the time, against no roofline point" if ta > 0 else "new time")}[cause]
    return Change(kind, name, where, ta, tb, delta, cause, why)


def _host(a: Side, b: Side) -> Change:
    """The host's row: the change in idle time (GPU: span less busy; a CPU trace: its threads' gaps)."""
    ia, ib = idle_time(a.t), idle_time(b.t)
    why = (f"GPU idle {ia.idle:.3g} -> {ib.idle:.3g} s (host wait {ia.host_wait:.3g} -> {ib.host_wait:.3g} s)"
           if a.t.gpu else f"CPU idle {ia.idle:.3g} -> {ib.idle:.3g} s")
    return Change("host", "idle and overhead", "", ia.idle, ib.idle, ib.idle - ia.idle, "host", why)
