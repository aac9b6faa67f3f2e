"""The placer: one trace's events walked in time order into a measured Workload.

The rules (which events become ops, their group, their time) are in the package docstring,
:mod:`roofline.frontends.trace`; :class:`Placer` is where they run.  It is its own module so that the
single-file reader (:func:`roofline.frontends.trace.read_trace`) and the per-rank task of the many-rank
reader (:mod:`roofline.frontends.trace.ranks`) share it without importing the package's ``__init__``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError, env_limit
from roofline.core.stats import Timing
from roofline.core.text import shown_path
from roofline.frontends.torch import FUSED_FUNCTIONS
from roofline.frontends.trace.comms import COMMS_EVENT, GROUP_KEY, SEQ_KEY, collective_kind, is_nccl_kernel
from roofline.frontends.trace.events import ANNOTATION, CPU_OP, KERNEL, MODULE, RUNTIME, TraceEvents
from roofline.frontends.trace.nesting import parents
from roofline.frontends.trace.notes import STEPS_KEY, steps_info
from roofline.frontends.trace.replay import NotReplayed, Replayer
from roofline.work import costs
from roofline.work.workload import MeasuredRun, TraceRecord, UnsupportedOp, Workload, WorkloadBuilder
from roofline.work.workload_columns import COLUMNS
from roofline.work.workload_facts import Unmatched

HOW_TO_RECORD = ("record one with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], "
                 "record_shapes=True, with_stack=True) and prof.export_chrome_trace('trace.json')")
#: aten ops recorded as one fused op each, as the PyTorch frontend records their functions.
FUSED = frozenset(f"aten::{name}" for name in FUSED_FUNCTIONS)
BACKWARD_SCOPE = "autograd::engine::evaluate_function: "
GLOO_PREFIX = "gloo:"  # gloo: a user_annotation on its worker thread ('gloo:all_reduce') with the input shapes
WRAPPER_NAMESPACES = ("c10d::", "autograd::", "profiler::")  # enqueue wrappers: what they do is placed inside
_STEP = re.compile(r"ProfilerStep#\d+$")
_INSTANCE = re.compile(r"_\d+$")
EPS_US = 1e-3  # a child may end this much after its parent (times are rounded to ns)
#: the deepest nesting of events placed (modules, scopes and ops nest tens deep in a profiler's trace; python_function
#: frames other than nn.Module scopes are not kept); ROOFLINE_MAX_TRACE_DEPTH overrides it
MAX_DEPTH = 100_000



class _Rows:
    """The placed rows: each distinct one (one cost at one place, forward or backward) built once, and each row's
    code into them, in walk order (rows of one cost at one place are alike)."""

    def __init__(self, places: list[tuple[str, str]]) -> None:
        self.places = places
        self.distinct: list[tuple[Any, ...]] = []  # COLUMNS values of each distinct row
        self.codes = np.zeros(0, dtype=np.int64)  # each placed row's distinct row

    def add(self, got: tuple[Any, ...], place: int, backward: bool) -> None:
        """One distinct row's columns (:data:`~roofline.work.workload_columns.COLUMNS`, in order), as
        WorkloadBuilder.row fills them.  ``got``: (op name, cost, precision) and optionally the op's GEMM
        dimensions ({m, n, k, batch} or None)."""
        op_name, c, precision = got[:3]
        dims = got[3] if len(got) > 3 and got[3] else {}
        group, module_type = self.places[place]
        one = WorkloadBuilder()
        one.row(op_name + " (backward)" if backward else op_name, kind=c.kind, flops=c.flops,
                bytes_read=c.bytes_read, bytes_written=c.bytes_written, precision=precision, unit=c.unit,
                group=group, module_type=module_type, level="interconnect" if c.kind == "collective" else "",
                **dims)
        self.distinct.append(tuple(one.column(name)[0] for name in COLUMNS))

    def column(self, name: str) -> np.ndarray:
        """One column over every placed row."""
        j = COLUMNS.index(name)
        return np.asarray([r[j] for r in self.distinct])[self.codes]

    def build(self, seconds: np.ndarray, **meta: Any) -> Workload:
        """The Workload of every row: the distinct rows built (and checked) by :meth:`Workload.from_columns`,
        then repeated by code (the same columns and string tables as building every row: the distinct rows
        are in order of first use), with ``seconds`` as the measured time (checked as ``Workload.replace``
        checks it)."""
        from roofline.work.workload_columns import check_numeric

        b = WorkloadBuilder()
        b.extend(**{name: [r[j] for r in self.distinct] for j, name in enumerate(COLUMNS)})
        small = b.build(**meta)
        seconds = np.asarray(seconds, dtype=np.float64)
        check_numeric(seconds, "measured_seconds", "workload")
        columns = {c: a[self.codes] for c, a in small.columns.items()}
        columns["measured_seconds"] = seconds
        return dataclasses.replace(small, columns=columns)


class _Names:
    """What each event name is, as flags over the name table (the walk reads them per event by code)."""

    def __init__(self, names: list[str]) -> None:
        def flag(test: Any) -> np.ndarray:
            return np.fromiter((bool(test(n)) for n in names), dtype=bool, count=len(names))

        self.gloo = flag(lambda n: n.startswith(GLOO_PREFIX))
        self.step = flag(_STEP.match)
        self.backward = flag(lambda n: n.startswith(BACKWARD_SCOPE))
        self.comms = flag(lambda n: n == COMMS_EVENT)
        self.replayed = flag(lambda n: "::" in n and not n.startswith(WRAPPER_NAMESPACES))


def time_order(ts: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """The events by start, the longer first at equal starts, then by index: ``np.lexsort((-dur, ts))``, but a
    stable sort by start alone (timsort: fast on events in nearly the order a profiler writes them; about 20x
    lexsort's speed on 1.8M events) and then only the events that share a start sorted again, by length."""
    order = np.argsort(ts, kind="stable")
    start = ts[order]
    same = start[1:] == start[:-1]
    if not same.any():
        return order
    tied = np.zeros(len(order), dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    at = np.flatnonzero(tied)
    run = np.cumsum(~np.r_[False, same])[at]  # which equal start each tied event has (runs are contiguous)
    sub = order[at]
    order[at] = sub[np.lexsort((-dur[sub], run))]  # stable: by index within equal start and length
    return order


def _depths(parent: np.ndarray) -> np.ndarray:
    """Each node's depth (0: no parent) in a forest given by ``parent`` (-1: a root): pointer doubling, log2 of
    the deepest nesting rounds."""
    depth = (parent >= 0).astype(parent.dtype)
    up = parent.copy()
    live = np.flatnonzero(up >= 0)
    while len(live):
        nxt = up[live]
        depth[live] += depth[nxt]  # both gathered before the assignment: one synchronous round
        up[live] = up[nxt]
        live = live[up[live] >= 0]
    return depth


def _pair_keys(a: np.ndarray, b: np.ndarray, b_size: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (a, b) pairs (``b`` in -1 .. b_size - 1) as (first index of each, each item's pair)."""
    key = a.astype(np.int64) * (b_size + 1) + (b.astype(np.int64) + 1)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


class _Walk:
    """One walk's columns by position in walk order (the events' category, name, call and sequence number), what
    the levels fill in for each position, and the tables they fill (places, costs)."""

    def __init__(self, ev: TraceEvents, walk: np.ndarray) -> None:
        n = len(walk)
        ix = self.ix = walk.dtype.type
        self.cat, self.name, self.call, self.seq = ev.cat[walk], ev.name[walk], ev.call[walk], ev.sequence[walk]
        self.flags = _Names(ev.names)
        # per call: a collective's message (one more entry, False, so that an index of -1 clipped to 0 is safe)
        self.has_collective = np.fromiter(("Collective name" in c for c in [*ev.calls, {}]), dtype=bool,
                                          count=len(ev.calls) + 1)
        self.own = np.full(n, -1, dtype=ix)  # the placed op (itself or an enclosing one), as a position
        self.op_parent = np.full(n, -1, dtype=ix)  # the nearest enclosing cpu_op (placed or not), as a position
        self.where = np.zeros(n, dtype=ix)  # the place: a code into `places`
        self.scope = np.full(n, -1, dtype=ix)  # the innermost enclosing autograd evaluate_function scope
        self.cost = np.full(n, -1, dtype=ix)  # a placed op's cost, a code into `got`
        # (dotted path of enclosing modules and record_function scopes, the innermost module's class)
        self.places: list[tuple[str, str]] = [("", "")]
        self.place_of: dict[tuple[int, int, bool], int] = {}
        self.got: list[tuple[Any, ...]] = []
        self.failed: list[np.ndarray] = []  # positions of calls that could not be rebuilt
        self.seq_first: list[np.ndarray] = []  # positions whose sequence number names a forward op's place

    def by_event(self, walk: np.ndarray, placed: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
        """By event index (``size`` events): each event's row (-1: none) and its nearest enclosing cpu_op (-1:
        none); ``own`` and ``op_parent`` are dropped once used (the walk needs them no more)."""
        ix = self.ix
        row_of = np.full(len(walk), -1, dtype=ix)
        row_of[placed] = np.arange(len(placed), dtype=ix)
        owner = np.full(size, -1, dtype=ix)
        owner[walk] = np.where(self.own >= 0, row_of[np.maximum(self.own, 0)], -1)
        del row_of, self.own
        parent_op = np.full(size, -1, dtype=ix)
        parent_op[walk] = np.where(self.op_parent >= 0, walk[np.maximum(self.op_parent, 0)], -1)
        del self.op_parent
        return owner, parent_op


class Placer:
    """Walks one trace's events in time order and places ops (the rules are in the module docstring)."""

    def __init__(self, ev: TraceEvents) -> None:
        self.ev = ev
        self.where = shown_path(ev.path)
        if not (ev.cat == CPU_OP).any():
            raise RooflineError(f"{self.where}: the trace has no cpu_op events (was the CPU activity profiled?); "
                                + HOW_TO_RECORD)
        if not ev.shapes:
            raise RooflineError(f"{self.where}: the trace has no input shapes, so no FLOPs or bytes can be counted; "
                                + HOW_TO_RECORD.replace("record one", "record it again"))
        self.replay = Replayer()  # imports torch: only once the file is known to be a trace with shapes
        self.owner: np.ndarray | None = None  # set by workload()
        dist = ev.meta.get("distributedInfo")
        world = dist.get("world_size") if isinstance(dist, dict) else None
        self.world = world if isinstance(world, int) and world > 0 else 1

    def workload(self, title: str | None) -> Workload:
        """Every op placed, with its place, time and cost (the rules are in the package docstring).

        The rules are those of a walk over the events in time order with a stack of open events per thread;
        they run here a nesting level at a time over numpy columns (an event's parent is on the level above:
        :func:`~.nesting.parents`), each distinct (name, recorded call) costed once per level."""
        ev = self.ev
        walk, parent = self._walk()
        w = _Walk(ev, walk)
        self._code_of: dict[tuple[str, int, int], int] = {}  # (route, name, call) -> cost code, or -1 / -2
        self._why: dict[tuple[int, int], str] = {}  # (name, call) -> why it was not rebuilt
        self._comms_code: dict[str, int] = {}  # a collective's message -> its cost code
        self._place_levels(w, parent)
        placed, not_replayed = self._placed(w)
        backward = self._backward_places(w.scope, w.where, w.seq,
                                         np.concatenate([np.zeros(0, dtype=np.int64), *w.seq_first]))
        rows = self._rows(placed, w.cost, w.scope, w.where, backward, w.got, w.places)
        owner, parent_op = w.by_event(walk, placed, len(ev))
        self.owner = owner  # per event: its placed op's row (-1: none), for the trace analyses
        steps = ev.dur[walk[np.flatnonzero((w.cat == ANNOTATION) & w.flags.step[w.name])]].tolist()
        unmatched: dict[tuple[str, str], list[float]] = {}
        if bool((ev.cat == KERNEL).any()):
            seconds, total, span = self._kernel_times(owner, parent_op, len(placed), unmatched, not_replayed)
            gpu = True
        else:
            seconds = ev.dur[walk[placed]] * 1e-6
            total, span = self._cpu_rest(parent_op, owner, unmatched, not_replayed)
            gpu = False
        return self._build(rows, seconds, total, span, steps, unmatched, gpu, title)

    def _walk(self) -> tuple[np.ndarray, np.ndarray]:
        """The walk (the events other than kernels, in time order, as event indices) and each one's parent as a
        position in the walk (-1: none)."""
        ev = self.ev
        order = time_order(ev.ts, ev.dur)  # by start; an enclosing event (longer) first
        walk = order[ev.cat[order] != KERNEL]  # kernels run on the device's rows: they enclose nothing
        up = parents(ev.thread, ev.ts, ev.ts + ev.dur, walk, EPS_US)
        n = len(walk)
        ix = np.int32 if len(ev) < 2**31 else np.int64  # positions and codes: half the memory per event
        walk = walk.astype(ix)
        del order
        # positions in walk order: an event's parent is earlier in the walk, and on the level above it
        position = np.full(len(ev), -1, dtype=ix)
        position[walk] = np.arange(n, dtype=ix)
        parent = np.where(up >= 0, position[np.maximum(up, 0)], -1).astype(ix)
        del up, position
        return walk, parent

    def _levels(self, parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The walk's positions by nesting depth (stable) and where each depth starts among them (one past the
        deepest at the end); a nesting deeper than ROOFLINE_MAX_TRACE_DEPTH is an error."""
        depth = _depths(parent)
        deepest = int(depth.max(initial=0))
        limit = env_limit("ROOFLINE_MAX_TRACE_DEPTH", MAX_DEPTH)
        if deepest >= limit:  # each level is a few numpy calls (~60 us): a chain of 10^6 events would take a minute
            raise RooflineError(f"{self.where}: events nested {deepest + 1:,} deep, more than the limit of {limit:,} "
                                "(no profiler records such nesting; set ROOFLINE_MAX_TRACE_DEPTH to raise it)")
        by_depth = np.argsort(depth, kind="stable").astype(parent.dtype)
        bounds = np.searchsorted(depth[by_depth], np.arange(deepest + 2))
        return by_depth, bounds

    def _place_levels(self, w: _Walk, parent: np.ndarray) -> None:
        """Each nesting level placed in turn, outermost first, into ``w`` (a level first inherits from the one
        above)."""
        by_depth, bounds = self._levels(parent)
        for d in range(len(bounds) - 1):
            level = by_depth[bounds[d]:bounds[d + 1]]
            if d:  # each event inherits its parent's op, place and backward scope
                p = parent[level]
                w.own[level], w.where[level], w.scope[level] = w.own[p], w.where[p], w.scope[p]
                w.op_parent[level] = np.where(w.cat[p] == CPU_OP, p, w.op_parent[p])
            self._place_level(w, level)

    def _place_level(self, w: _Walk, level: np.ndarray) -> None:
        """One level's gloo collectives costed, its scopes given places and its cpu_ops costed, into ``w``."""
        c, nm = w.cat[level], w.name[level]
        free = w.own[level] < 0
        gloo = (c == ANNOTATION) & free & w.flags.gloo[nm]
        if gloo.any():  # gloo's collective on its worker thread: placed from its recorded inputs
            at = level[gloo]
            codes = self._codes(at, nm[gloo], w.call[at], w.got, "gloo")
            w.own[at[codes >= 0]], w.cost[at] = at[codes >= 0], codes
        scopes = ((c == MODULE) | (c == ANNOTATION)) & free & ~gloo & ~w.flags.step[nm]
        if scopes.any():  # a module or record_function scope: a new place for what it encloses
            self._place_scopes(w, level[scopes], nm[scopes], c[scopes] == MODULE)
        ops = (c == CPU_OP) & free
        if ops.any():
            self._place_ops(w, level[ops], nm[ops])

    def _place_scopes(self, w: _Walk, at: np.ndarray, names: np.ndarray, module: np.ndarray) -> None:
        """The place of each scope at positions ``at`` (named ``names``; ``module``: an nn.Module, else a
        record_function), inside its enclosing place, each distinct (place, kind, name) looked up once."""
        first, inverse = _pair_keys(w.where[at] * 2 + module, names, len(self.ev.names))
        new = np.empty(len(first), dtype=np.int64)
        for k, j in enumerate(first.tolist()):
            new[k] = self._place(w.places, w.place_of, int(w.where[at[j]]), int(names[j]), bool(module[j]))
        w.where[at] = new[inverse]

    def _place_ops(self, w: _Walk, at: np.ndarray, on: np.ndarray) -> None:
        """The cpu_ops at positions ``at`` (named ``on``): autograd scopes opened, the forward ops that can name a
        backward place noted, and collectives and replayable ops costed, into ``w``."""
        bwd = w.flags.backward[on]
        w.scope[at[bwd]] = at[bwd]  # autograd runs the backward of the op with its sequence number
        at, on = at[~bwd], on[~bwd]
        w.seq_first.append(at[(w.scope[at] < 0) & (w.seq[at] >= 0)])
        oc = w.call[at]
        comms = w.flags.comms[on] & (oc >= 0) & w.has_collective[np.maximum(oc, 0)]
        replay = ~comms & w.flags.replayed[on] & (oc >= 0)
        for mask, route in ((comms, "comms"), (replay, "replay")):
            if mask.any():
                hit = at[mask]
                codes = self._codes(hit, on[mask], oc[mask], w.got, route)
                w.own[hit[codes >= 0]], w.cost[hit] = hit[codes >= 0], codes
                w.failed.append(hit[codes == -2])

    def _placed(self, w: _Walk) -> tuple[np.ndarray, dict[str, str]]:
        """The placed ops' positions (rows, in walk order) and each op name not rebuilt -> why; none placed is an
        error."""
        placed = np.flatnonzero(w.cost >= 0)  # rows, in walk order
        not_replayed = self._not_replayed(np.concatenate([np.zeros(0, dtype=np.int64), *w.failed]), w.name, w.call)
        if not len(placed):
            first_failed = next(iter(not_replayed.items()), None)
            raise RooflineError(f"{self.where}: no aten op in the trace could be placed"
                                + (f" ({first_failed[0]}: {first_failed[1]})" if first_failed else ""))
        return placed, not_replayed

    def _place(self, places: list[tuple[str, str]], place_of: dict[tuple[int, int, bool], int], outer: int,
               name_code: int, module: bool) -> int:
        """The place inside place ``outer`` of a scope (a module, or a record_function) named by ``name_code``."""
        key = (outer, name_code, module)
        code = place_of.get(key)
        if code is None:
            path, mtype = places[outer]
            part = self.ev.names[name_code].removeprefix("nn.Module: ")
            if module:
                # the outermost module is the model itself: paths are relative to it, as from_torch's
                path = path if not mtype else f"{path}.{part}" if path else part
                mtype = _INSTANCE.sub("", part)
            else:
                path = f"{path}.{part}" if path else part
            code = place_of[key] = len(places)
            places.append((path, mtype))
        return code

    def _not_replayed(self, failed: np.ndarray, name: np.ndarray, call: np.ndarray) -> dict[str, str]:
        """Each op name that could not be rebuilt -> why (its first failure in walk order), in that order."""
        failed = np.sort(failed)
        _, first = np.unique(name[failed], return_index=True)
        out: dict[str, str] = {}
        for j in np.sort(first).tolist():
            k = int(failed[j])
            out[self.ev.names[int(name[k])]] = self._why[(int(name[k]), int(call[k]))]
        return out

    @staticmethod
    def _backward_places(scope: np.ndarray, where: np.ndarray, seq: np.ndarray, forward: np.ndarray) -> np.ndarray:
        """At each autograd scope's position, the place its backward ops take: that of the first op earlier in
        the walk with its sequence number (``forward``: the positions that can name one), else its own."""
        at = np.flatnonzero(scope == np.arange(len(scope)))
        out = np.full(len(scope), -1, dtype=np.int64)
        value = where[at].copy()
        if len(at) and len(forward):
            forward = np.sort(forward)
            numbers, first = np.unique(seq[forward], return_index=True)
            first_at = forward[first]
            i = np.minimum(np.searchsorted(numbers, seq[at]), len(numbers) - 1)
            hit = (numbers[i] == seq[at]) & (first_at[i] < at)
            value[hit] = where[first_at[i[hit]]]
        out[at] = value
        return out

    def _rows(self, placed: np.ndarray, cost: np.ndarray, scope: np.ndarray, where: np.ndarray,
              backward: np.ndarray, got: list[tuple[Any, ...]], places: list[tuple[str, str]]) -> _Rows:
        """The placed rows: one distinct row per (cost, place, backward or not), in order of first use."""
        inside = scope[placed]
        bwd = inside >= 0
        place = np.where(bwd, backward[np.maximum(inside, 0)], where[placed])
        first, inverse = _pair_keys(cost[placed] * 2 + bwd, place, len(places))
        by_use = np.argsort(first, kind="stable")
        remap = np.empty(len(first), dtype=np.int64)
        remap[by_use] = np.arange(len(first), dtype=np.int64)
        rows = _Rows(places)
        for j in first[by_use].tolist():
            rows.add(got[int(cost[placed[j]])], int(place[j]), bool(bwd[j]))
        rows.codes = remap[inverse]
        return rows

    def _codes(self, at: np.ndarray, names: np.ndarray, calls: np.ndarray, got: list[tuple[Any, ...]],
               route: str) -> np.ndarray:
        """The cost code of each event at positions ``at`` (by its name and call, each distinct pair costed
        once): >= 0 placed (an index into ``got``), -1 not placed (a view, a composite, no cost), -2 not
        rebuilt (why in ``self._why``)."""
        first, inverse = _pair_keys(names, calls, len(self.ev.calls))
        out = np.empty(len(first), dtype=np.int64)
        for k, j in enumerate(first.tolist()):
            nm, cl = int(names[j]), int(calls[j])
            key = (route, nm, cl)
            code = self._code_of.get(key)
            if code is None:
                code = self._code_of[key] = self._cost_of(route, nm, cl, got)
            out[k] = code
        return out[inverse]

    def _cost_of(self, route: str, name_code: int, call_id: int, got: list[tuple[Any, ...]]) -> int:
        name = self.ev.names[name_code]
        call = self.ev.calls[call_id] if call_id >= 0 else {}
        cost: Any
        if route == "gloo":
            cost = _gloo_collective(name, call, self.world)
        elif route == "comms":  # one cost per message: the process group and sequence number do not change it
            same = repr({k: v for k, v in call.items() if k not in (GROUP_KEY, SEQ_KEY)})
            if same in self._comms_code:
                return self._comms_code[same]
            got.append(_collective(call))
            code = self._comms_code[same] = len(got) - 1
            return code
        else:
            try:
                cost = self.replay.cost(name, call_id, call, fused=name in FUSED)
            except NotReplayed as exc:
                self._why[(name_code, call_id)] = str(exc)
                return -2
        if cost is None or cost == "composite":
            return -1  # a view or metadata op, or one whose children carry its work
        got.append(cost)
        return len(got) - 1

    def _cpu_rest(self, op_parent: np.ndarray, owner: np.ndarray,
                  unmatched: dict[tuple[str, str], list[float]], not_replayed: dict[str, str]) -> tuple[float, float]:
        """CPU trace: total op time (root cpu_ops), the busy span, and each unplaced event's self time."""
        ev = self.ev
        cpu = ev.cat == CPU_OP
        child_time = np.zeros(len(ev))  # per cpu_op: the time of the cpu_ops nested in it (self time = dur - this)
        kids = cpu & (op_parent >= 0)
        np.add.at(child_time, op_parent[kids], ev.dur[kids])
        roots = np.flatnonzero(cpu & (op_parent < 0) | (owner >= 0) & ~cpu)  # placed annotations (gloo) too
        rest = np.flatnonzero(cpu & (owner < 0))
        # per name, in order of first appearance: the count, and the self times summed in event order
        # (bincount adds in index order, as a loop would)
        own_s = np.maximum(0.0, ev.dur[rest] - child_time[rest]) * 1e-6
        codes, first, inverse = np.unique(ev.name[rest], return_index=True, return_inverse=True)
        counts = np.bincount(inverse.reshape(-1), minlength=len(codes))
        sums = np.bincount(inverse.reshape(-1), weights=own_s, minlength=len(codes))
        for k in np.argsort(first, kind="stable").tolist():
            name = self.ev.names[int(codes[k])]
            why = (f"not rebuilt: {not_replayed[name]}" if name in not_replayed
                   else "view or wrapper" if "::" in name else "not an aten op")
            rec = unmatched.setdefault((name, why), [0, 0.0])
            rec[0] += int(counts[k])
            rec[1] += float(sums[k])
        total = float(ev.dur[roots].sum()) * 1e-6
        span = float((ev.ts[roots] + ev.dur[roots]).max() - ev.ts[roots].min()) * 1e-6 if len(roots) else 0.0
        return total, span

    def _kernel_times(self, owner: np.ndarray, op_parent: np.ndarray, n_rows: int,
                      unmatched: dict[tuple[str, str], list[float]], not_replayed: dict[str, str]
                      ) -> tuple[np.ndarray, float, float]:
        """GPU trace: seconds per placed op (sum of its kernels), total kernel time, kernel busy span."""
        ev = self.ev
        launches = np.flatnonzero((ev.cat == RUNTIME) & (ev.correlation >= 0))
        by_corr = dict(zip(ev.correlation[launches].tolist(), launches.tolist(), strict=True))
        seconds = np.zeros(n_rows)
        has = np.zeros(n_rows, dtype=bool)
        kernels = np.flatnonzero(ev.cat == KERNEL)
        for k in kernels.tolist():
            launch = by_corr.get(int(ev.correlation[k]), -1)
            row = int(owner[launch]) if launch >= 0 else -1
            if row >= 0:
                seconds[row] += ev.dur[k] * 1e-6
                has[row] = True
            else:
                name = self.ev.names[ev.name[k]]
                op = int(op_parent[launch]) if launch >= 0 else -1
                by = self.ev.names[ev.name[op]] if op >= 0 else ""
                why = ("no launch with its correlation id" if launch < 0 else "launched outside any op" if not by
                       else f"launched by {by}, not rebuilt: {not_replayed[by]}" if by in not_replayed
                       else f"launched by {by}, not placed")
                if is_nccl_kernel(name):  # its collective's message is on record_param_comms, which it is not under
                    why = f"NCCL collective kernel ({collective_kind(name)}), {why}"
                rec = unmatched.setdefault((name[:80], why), [0, 0.0])
                rec[0] += 1
                rec[1] += float(ev.dur[k]) * 1e-6
        seconds[~has] = np.nan  # ran on the CPU, or launched nothing
        total = float(ev.dur[kernels].sum()) * 1e-6
        span = float((ev.ts[kernels] + ev.dur[kernels]).max() - ev.ts[kernels].min()) * 1e-6
        return seconds, total, span

    def _build(self, rows: _Rows, seconds: np.ndarray, total: float, span: float,
               steps: list[float], unmatched: dict[tuple[str, str], list[float]], gpu: bool, title: str | None
               ) -> Workload:
        ev = self.ev
        where = self.where
        placed_seconds = float(np.nansum(seconds))
        lost = sorted((Unmatched(n, why, int(c), float(s)) for (n, why), (c, s) in unmatched.items()),
                      key=lambda u: -u.seconds)
        warnings: list[str] = []
        unsupported = []
        if self.replay.unsupported:
            warnings.append(f"{len(self.replay.unsupported)} op type(s) without a FLOP formula counted as 0 FLOPs "
                            "(bytes kept): " + ", ".join(sorted(self.replay.unsupported)))
            names = np.asarray(rows.column("name"), dtype=object)
            nbytes = np.asarray(rows.column("bytes_read")) + np.asarray(rows.column("bytes_written"))
            for key in sorted(self.replay.unsupported):
                short = key.removeprefix("aten.")
                mine = (names == short) | (names == short + " (backward)")
                unsupported.append(UnsupportedOp(key, int(mine.sum()), float(nbytes[mine].sum())))
        warnings.extend(self.replay.notes())  # calls left unplaced past ROOFLINE_MAX_TRACE_CALLS
        if gpu and not np.isfinite(seconds).all():
            warnings.append(f"{int((~np.isfinite(seconds)).sum())} placed op(s) launched no kernel (they ran on the "
                            "CPU or only moved metadata); they have no measured time")
        dist = ev.meta.get("distributedInfo")
        rank = dist.get("rank") if isinstance(dist, dict) else None
        busy = float(sum(steps)) * 1e-6 if steps else span
        method = (f"torch.profiler trace {where}: " + ("kernel time per op (kernels joined to ops by correlation id)"
                                                        if gpu else "CPU time per op event"))
        run = MeasuredRun(Timing.of([busy]), "cuda" if gpu else "cpu", method, max(1, len(steps)), placed_seconds)
        record = TraceRecord(where, "cuda" if gpu else "cpu", len(steps), ev.events_seen, placed_seconds, total,
                             tuple(lost), rank if isinstance(rank, int) and not isinstance(rank, bool) else None)
        info: dict[str, Any] = {"frontend": "trace", "schema_version": ev.meta.get("schemaVersion")}
        if (per_step := steps_info([float(s) * 1e-6 for s in steps])) is not None:  # steps are not runs
            info[STEPS_KEY] = per_step
        assumptions = [
            "ops and FLOPs/bytes: each recorded aten call rebuilt (its outputs in closed form for common ops, else on "
            "meta tensors) and costed by the PyTorch frontend's "
            "tables (roofline.frontends.torch); ops that decompose before dispatch are costed through their children",
            "weights cannot be told from activations in a trace (weight bytes 0); string arguments are not recorded "
            "(gelu counted as approximate='none')",
            "measured: " + method + ("; the whole-run time is the sum of ProfilerStep spans" if steps else
                                     "; the whole-run time is the span from the first to the last " +
                                     ("kernel" if gpu else "op")),
        ]
        return rows.build(seconds, where=where, title=title or f"{Path(ev.path).name} (trace)",
                          source=f"trace: {where}", assumptions=assumptions, warnings=warnings,
                          unsupported=unsupported, info=info, measured=run, trace=record)


def _gloo_collective(name: str, call: dict[str, Any], world: int) -> tuple[str, costs.Cost, str] | None:
    """A ``gloo:<collective>`` annotation (what gloo records on its worker thread): the message from its
    recorded inputs (all-gather's message is the gathered output: the input times the ranks)."""
    from roofline.core.precision import of_dtype
    from roofline.frontends.trace.replay import DTYPES

    coll = name.removeprefix(GLOO_PREFIX)
    dims, types = call.get("Input Dims"), call.get("Input type")
    if not isinstance(dims, list) or not isinstance(types, list):
        return None
    elems, size, dtype = 0, 4, "float32"
    for d, t in zip(dims, types, strict=False):
        shapes = d if t == "TensorList" else [d]
        for shape in shapes:
            if isinstance(shape, list) and all(isinstance(x, int) and x >= 0 for x in shape):
                elems += math.prod(shape)
        if t in DTYPES:
            dtype = DTYPES[t]
    import torch

    size = torch.empty((), dtype=getattr(torch, dtype)).element_size()
    if coll in ("all_gather", "allgather", "_allgather_base", "all_gather_into_tensor"):
        elems *= world
    return coll, costs.collective(coll, elems * size, world, size), of_dtype(dtype) or "fp32"


def _collective(call: dict[str, Any]) -> tuple[str, costs.Cost, str]:
    """A ``record_param_comms`` event: (name, cost, precision) from its message sizes."""
    name = str(call.get("Collective name", "collective"))
    ranks = call.get("Group size")
    ranks = ranks if isinstance(ranks, int) and ranks > 0 else 1
    dtype = str(call.get("dtype", "Float"))
    size = costs.COMMS_DTYPE_BYTES.get(dtype, 4)
    elems_in, elems_out = (call.get(k) for k in ("In msg nelems", "Out msg nelems"))
    elems = max(x if isinstance(x, (int, float)) and x >= 0 else 0 for x in (elems_in, elems_out))
    from roofline.core.precision import TORCH_DTYPES, of_dtype

    return name, costs.collective(name, elems * size, ranks, size), of_dtype(TORCH_DTYPES.get(dtype.lower(), "")) or "fp32"
