"""The placer as a walk over a trace's events one at a time (what roofline.frontends.trace.placer did before it ran a
nesting level at a time over numpy columns): the independent route the tests compare the placer against.

Kept as it was (the per-event loop with its stack-walk parents), so that every rule the placer follows is checked
against a second implementation of it on every test trace.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError
from roofline.core.stats import Timing
from roofline.core.text import shown_path
from roofline.frontends.torch import FUSED_FUNCTIONS
from roofline.frontends.trace.comms import collective_kind, is_nccl_kernel
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
COMMS_EVENT = "record_param_comms"  # NCCL (and others): a cpu_op with the collective's message sizes
GLOO_PREFIX = "gloo:"  # gloo: a user_annotation on its worker thread ('gloo:all_reduce') with the input shapes
WRAPPER_NAMESPACES = ("c10d::", "autograd::", "profiler::")  # enqueue wrappers: what they do is placed inside
_STEP = re.compile(r"ProfilerStep#\d+$")
_INSTANCE = re.compile(r"_\d+$")
EPS_US = 1e-3  # a child may end this much after its parent (times are rounded to ns)



class _Walk:
    """The state of one walk over a trace's events in time order (:meth:`Placer.workload`)."""

    def __init__(self, ev: TraceEvents) -> None:
        n = len(ev)
        # the events' columns, and the per-event state below, are lists while walking: a list item costs a
        # tenth of a numpy scalar's access, and the walk touches each a few times per event
        self.cat: list[int] = ev.cat.tolist()
        self.dur: list[float] = ev.dur.tolist()
        self.name: list[int] = ev.name.tolist()
        self.call: list[int] = ev.call.tolist()
        self.sequence: list[int] = ev.sequence.tolist()
        self.owner = [-1] * n  # the placed op (row) an event belongs to
        self.op_parent = [-1] * n  # the nearest enclosing cpu_op (placed or not)
        # where an event sits, as a code into `places`: (dotted path of enclosing modules and record_function
        # scopes, the innermost module's class); few distinct places, so codes keep memory per event small
        self.places: list[tuple[str, str]] = [("", "")]
        self.place_of: dict[tuple[int, str, str], int] = {}
        self.where = [0] * n
        self.backward = [-1] * n  # in autograd's evaluate_function: the forward op's place
        self.seq_place: dict[int, int] = {}
        self.distinct: dict[tuple[int, int, bool], int] = {}  # (id of the cost, place, backward) -> row kind
        self.distinct_rows: list[tuple[Any, ...]] = []
        self.row_codes: list[int] = []  # each placed row's kind
        self.placed: list[int] = []  # event index of each row
        self.unmatched: dict[tuple[str, str], list[float]] = {}
        self.not_replayed: dict[str, str] = {}
        self.steps: list[float] = []

    def place(self, i: int, got: tuple[Any, ...]) -> None:
        """Event ``i`` becomes the next row, named by its op (``(backward)`` inside autograd) and placed.

        ``got``: (op name, cost, precision) and optionally the op's GEMM dimensions ({m, n, k, batch} or None).
        Rows of one cost at one place are alike: each distinct one is built once (:meth:`rows_built`)."""
        bwd = self.backward[i]
        key = (id(got), bwd if bwd >= 0 else self.where[i], bwd >= 0)  # got stays alive in `distinct`: ids unique
        code = self.distinct.get(key)
        if code is None:
            code = self.distinct[key] = len(self.distinct_rows)
            self.distinct_rows.append(self._row(got, key[1], key[2]))
        self.owner[i] = len(self.placed)
        self.placed.append(i)
        self.row_codes.append(code)

    def _row(self, got: tuple[Any, ...], place: int, backward: bool) -> tuple[Any, ...]:
        """One row's columns (:data:`~roofline.work.workload_columns.COLUMNS`, in order), as WorkloadBuilder.row
        fills them; ``got`` is kept with it (its id is the row's key)."""
        op_name, c, precision = got[:3]
        dims = got[3] if len(got) > 3 and got[3] else {}
        group, module_type = self.places[place]
        one = WorkloadBuilder()
        one.row(op_name + " (backward)" if backward else op_name, kind=c.kind, flops=c.flops,
                bytes_read=c.bytes_read, bytes_written=c.bytes_written, precision=precision, unit=c.unit,
                group=group, module_type=module_type, level="interconnect" if c.kind == "collective" else "",
                **dims)
        return (*(one.column(name)[0] for name in COLUMNS), got)

    def rows_built(self) -> WorkloadBuilder:
        """Every placed row, in order, as columns (each distinct row's values repeated)."""
        rows, distinct, codes = WorkloadBuilder(), self.distinct_rows, self.row_codes
        rows.extend(**{name: [distinct[k][j] for k in codes] for j, name in enumerate(COLUMNS)})
        return rows


class ReferencePlacer:
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
        dist = ev.meta.get("distributedInfo")
        world = dist.get("world_size") if isinstance(dist, dict) else None
        self.world = world if isinstance(world, int) and world > 0 else 1

    def workload(self, title: str | None) -> Workload:
        ev = self.ev
        w = _Walk(ev)
        order = np.lexsort((-ev.dur, ev.ts))  # by start; an enclosing event (longer) first
        walk = order[ev.cat[order] != KERNEL]  # kernels run on the device's rows: they enclose nothing
        up = parents(ev.thread, ev.ts, ev.ts + ev.dur, walk, EPS_US)
        names = ev.names
        for i, p in ((i, p) for chunk in range(0, len(walk), 1 << 16)
                     for i, p in zip(walk[chunk:chunk + (1 << 16)].tolist(), up[chunk:chunk + (1 << 16)].tolist(),
                                     strict=True)):
            cat = w.cat[i]
            if p >= 0:  # it inherits its parent's op, place and backward
                w.owner[i], w.where[i], w.backward[i] = w.owner[p], w.where[p], w.backward[p]
                w.op_parent[i] = p if w.cat[p] == CPU_OP else w.op_parent[p]
            name = names[w.name[i]]
            if cat == ANNOTATION and name.startswith(GLOO_PREFIX) and w.owner[i] < 0:
                comms = _gloo_collective(name, ev.calls[w.call[i]] if w.call[i] >= 0 else {}, self.world)
                if comms is not None:
                    w.place(i, comms)
            elif cat in (MODULE, ANNOTATION):
                self._scope(w, i, cat, name)
            elif cat == CPU_OP and w.owner[i] < 0:
                self._cpu_op(w, i, name)
        if not w.placed:
            first = next(iter(w.not_replayed.items()), None)
            raise RooflineError(f"{self.where}: no aten op in the trace could be placed"
                                + (f" ({first[0]}: {first[1]})" if first else ""))
        owner, op_parent = np.asarray(w.owner, dtype=np.int64), np.asarray(w.op_parent, dtype=np.int64)
        if bool((ev.cat == KERNEL).any()):
            seconds, total, span = self._kernel_times(owner, op_parent, len(w.placed), w.unmatched, w.not_replayed)
            gpu = True
        else:
            seconds = ev.dur[np.asarray(w.placed, dtype=np.int64)] * 1e-6
            total, span = self._cpu_rest(op_parent, owner, w.unmatched, w.not_replayed)
            gpu = False
        return self._build(w.rows_built(), seconds, total, span, w.steps, w.unmatched, gpu, title)

    def _scope(self, w: _Walk, i: int, cat: int, name: str) -> None:
        """A module or record_function scope: a ProfilerStep's length, or a new place for what it encloses."""
        if cat == ANNOTATION and _STEP.match(name):
            w.steps.append(w.dur[i])
            return
        if w.owner[i] >= 0:
            return
        key = (w.where[i], name, "m" if cat == MODULE else "a")
        code = w.place_of.get(key)
        if code is None:
            path, mtype = w.places[w.where[i]]
            part = name.removeprefix("nn.Module: ")
            if cat == MODULE:
                # the outermost module is the model itself: paths are relative to it, as from_torch's
                path = path if not mtype else f"{path}.{part}" if path else part
                mtype = _INSTANCE.sub("", part)
            else:
                path = f"{path}.{part}" if path else part
            code = w.place_of[key] = len(w.places)
            w.places.append((path, mtype))
        w.where[i] = code

    def _cpu_op(self, w: _Walk, i: int, name: str) -> None:
        """A cpu_op no placed op encloses: an autograd scope, a collective, or an aten op replayed for its cost."""
        seq = w.sequence[i]
        if name.startswith(BACKWARD_SCOPE):
            w.backward[i] = w.seq_place.get(seq, w.where[i])
            return
        if w.backward[i] < 0 and seq >= 0:
            w.seq_place.setdefault(seq, w.where[i])
        call_id = w.call[i]
        call = self.ev.calls[call_id] if call_id >= 0 else {}
        if name == COMMS_EVENT and "Collective name" in call:
            got: Any = _collective(call)
        elif "::" in name and call_id >= 0 and not name.startswith(WRAPPER_NAMESPACES):
            try:
                got = self.replay.cost(name, call_id, call, fused=name in FUSED)
            except NotReplayed as exc:
                w.not_replayed.setdefault(name, str(exc))
                return
        else:
            return  # wrappers (autograd nodes, c10d::..., user ops without shapes): their children are placed
        if got is not None and got != "composite":
            w.place(i, got)

    def _cpu_rest(self, op_parent: np.ndarray, owner: np.ndarray,
                  unmatched: dict[tuple[str, str], list[float]], not_replayed: dict[str, str]) -> tuple[float, float]:
        """CPU trace: total op time (root cpu_ops), the busy span, and each unplaced event's self time."""
        ev = self.ev
        cpu = ev.cat == CPU_OP
        child_time = np.zeros(len(ev))  # per cpu_op: the time of the cpu_ops nested in it (self time = dur - this)
        kids = cpu & (op_parent >= 0)
        np.add.at(child_time, op_parent[kids], ev.dur[kids])
        roots = np.flatnonzero(cpu & (op_parent < 0) | (owner >= 0) & ~cpu)  # placed annotations (gloo) too
        for i in np.flatnonzero(cpu & (owner < 0)).tolist():
            name = self.ev.names[ev.name[i]]
            why = (f"not rebuilt: {not_replayed[name]}" if name in not_replayed
                   else "view or wrapper" if "::" in name else "not an aten op")
            rec = unmatched.setdefault((name, why), [0, 0.0])
            rec[0] += 1
            rec[1] += max(0.0, float(ev.dur[i] - child_time[i])) * 1e-6
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
                if is_nccl_kernel(name):
                    why = f"NCCL collective kernel ({collective_kind(name)}), {why}"
                rec = unmatched.setdefault((name[:80], why), [0, 0.0])
                rec[0] += 1
                rec[1] += float(ev.dur[k]) * 1e-6
        seconds[~has] = np.nan  # ran on the CPU, or launched nothing
        total = float(ev.dur[kernels].sum()) * 1e-6
        span = float((ev.ts[kernels] + ev.dur[kernels]).max() - ev.ts[kernels].min()) * 1e-6
        return seconds, total, span

    def _build(self, rows: WorkloadBuilder, seconds: np.ndarray, total: float, span: float,
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
        info = {"frontend": "trace", "schema_version": ev.meta.get("schemaVersion")}
        if (per_step := steps_info([float(s) * 1e-6 for s in steps])) is not None:
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
        work = rows.build(where=where, title=title or f"{Path(ev.path).name} (trace)", source=f"trace: {where}",
                          assumptions=assumptions, warnings=warnings, unsupported=unsupported, info=info)
        return work.replace(measured_seconds=seconds, measured=run, trace=record)


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
