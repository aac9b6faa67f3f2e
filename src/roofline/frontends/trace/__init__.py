"""Profiler traces in: measured points from a torch.profiler run recorded anywhere.

``read_trace(path)`` turns one Chrome trace (``prof.export_chrome_trace`` or
``tensorboard_trace_handler``; ``schemaVersion`` 1, torch >= 2.4, recorded with
``record_shapes=True``) into a measured :class:`~roofline.Workload`;
``from_trace(paths, device)`` analyses it (one file per rank for a multi-rank
run) under a device's roofs.

How events become ops (the rules :func:`roofline.from_torch` follows, so the
two give the same ops and FLOPs for the same model):

* Each thread's events nest by time.  An ``aten::`` op is *placed* (becomes an
  op) unless an enclosing op was placed; its recorded call is rebuilt on meta
  tensors and costed by the PyTorch frontend's tables (:mod:`.replay`).  An
  op that decomposes before dispatch (``CompositeImplicitAutograd``:
  ``aten::linear``, ``aten::conv2d``, ...) is not placed: its children are.
  Views and metadata ops move nothing and are not placed.
  ``aten::scaled_dot_product_attention`` and ``aten::rms_norm`` are one fused
  op each, as in the frontend.
* ``record_param_comms`` (what torch.distributed records per collective) is a
  ``collective`` op under the interconnect roof: bytes = message bytes x the
  nccl-tests bus factor (:func:`roofline.costs.collective`).
* Attribution: ``group`` is the path of enclosing ``nn.Module: Type_i`` events
  (recorded with ``with_stack=True``) below the outermost one (the model, as
  :func:`roofline.from_torch`'s paths are), and of ``record_function`` scopes,
  dot-joined (``Sequential_0.Linear_1``); ``module_type`` is the innermost
  module's class.  Ops run by autograd (inside ``autograd::engine::
  evaluate_function``) get `` (backward)`` and the group of the forward op with
  the same sequence number.
* Time: on a CPU trace, the op event's duration.  On a GPU trace (kernel
  events present), the sum of the op's kernels (and memcpy/memset), joined
  through ``args.correlation`` to the launch call inside the op.  Time not in
  any placed op (wrappers, views, ops that could not be rebuilt; kernels with
  no launching op) is listed per event name with its share (``workload.trace.unmatched``).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from roofline import costs
from roofline.errors import RooflineError
from roofline.fileio import shown_path
from roofline.frontends.torch import FUSED_FUNCTIONS
from roofline.frontends.trace.events import ANNOTATION, CPU_OP, KERNEL, MODULE, RUNTIME, TraceEvents, read_events
from roofline.frontends.trace.ranks import read_traces
from roofline.frontends.trace.replay import NotReplayed, Replayer
from roofline.stats import SINGLE_SAMPLE_TOLERANCE, Timing
from roofline.workload import MeasuredRun, RankFigures, TraceRecord, Unmatched, UnsupportedOp, Workload, WorkloadBuilder

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


def read_trace(path: str | os.PathLike[str], *, title: str | None = None) -> Workload:
    """One torch.profiler Chrome trace -> a measured Workload (ops with FLOPs, bytes and measured seconds).

    Bad input (not a trace, truncated, unsupported schemaVersion, no shapes) is one
    :class:`RooflineError` line naming the file.

    >>> import torch, tempfile, os
    >>> from torch.profiler import profile, ProfilerActivity
    >>> net, x = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU()), torch.randn(8, 64)
    >>> with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    ...     _ = net(x)
    >>> path = os.path.join(tempfile.mkdtemp(), "trace.json")
    >>> prof.export_chrome_trace(path)
    >>> w = read_trace(path)
    >>> [w.strings("name", i) for i in range(len(w))], w.total_flops  # 2*8*64*64 + 8*64
    (['addmm', 'relu'], 66048.0)
    """
    ev = read_events(path)
    return _Placer(ev).workload(title)


def from_trace(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], device: Any, *,
               title: str | None = None, forecast: bool = True) -> Any:
    """Analyse profiler traces under ``device``'s roofs (a catalog name, a file or a :class:`~roofline.Device`).

    Several paths are the ranks of one run (one file per rank): each is read, and the
    analysis is the slowest rank's (the one that sets the step time), with every rank's
    figures in ``workload.trace.ranks`` and the slowest named there.

    >>> # a = from_trace("trace.json", "h100-sxm")   # see read_trace for recording one
    """
    from roofline.catalog import resolve_device

    dev = resolve_device(device) if not hasattr(device, "compute") else device
    files = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not files:
        raise RooflineError("from_trace: no trace files given")
    if len(files) == 1 and not any(c in os.fspath(files[0]) for c in "*?["):
        work = read_trace(files[0], title=title)
    else:
        work = with_ranks(*read_traces(files, with_workload=True))
        if title:
            work = work.replace(title=title)
    return analyse_trace(work, dev, forecast=forecast)


def analyse_trace(work: Workload, device: Any, *, forecast: bool = True) -> Any:
    """A trace's workload under ``device``'s roofs (each op one sample), flagged when the trace's times are not
    the device's kind."""
    from roofline.analysis import analyze

    dev = device
    recorded = work.trace.device_type if work.trace is not None else "cpu"
    if (recorded == "cuda") != (dev.kind == "gpu"):
        work = work.replace(warnings=[*work.warnings, f"the trace's times are {recorded} times ("
                                      + ("kernels" if recorded == "cuda" else "no GPU kernels in it")
                                      + f") but device {dev.name!r} is a {dev.kind}: its roofs are not the hardware "
                                      "that ran it"])
    # each op is one sample: the above-roof tolerance of an op timed once
    return analyze(work, dev, above_roof_tolerance=SINGLE_SAMPLE_TOLERANCE, forecast=forecast)


def with_ranks(view: Any, work: Workload) -> Workload:
    """The slowest rank's workload (read by a worker), its trace record carrying every rank's figures."""
    ranks = tuple(RankFigures(r.rank if r.rank is not None else k, r.file, r.busy_seconds, r.op_seconds,
                              r.collective_seconds, r.op_count) for k, r in enumerate(view.ranks))
    worst = next(r for r in ranks if r.rank == view.slowest_rank)
    work_s = [r.op_seconds - r.collective_seconds for r in ranks]
    # the slowest rank is the one the others wait for: the most op time outside collectives (a waiting
    # rank's collectives grow by what it waits, so busy spans alone even out)
    note = (f"{len(ranks)} ranks; the slowest (most op time outside collectives: "
            f"{(worst.op_seconds - worst.collective_seconds) * 1e3:.3g} ms against {min(work_s) * 1e3:.3g} ms for "
            f"the least), rank {worst.rank} ({worst.file}), is shown")
    assert work.trace is not None
    return work.replace(trace=replace(work.trace, ranks=ranks, slowest_rank=worst.rank),
                        assumptions=[*work.assumptions, note])


class _Placer:
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
        names = ev.names
        n = len(ev)
        order = np.lexsort((-ev.dur, ev.ts))  # by start; an enclosing event (longer) first
        stacks: dict[int, list[int]] = {}
        # per-event state in lists while walking (a list item costs a tenth of a numpy scalar's access)
        owner = [-1] * n  # the placed op (row) an event belongs to
        op_parent = [-1] * n  # the nearest enclosing cpu_op (placed or not)
        # where an event sits, as a code into `places`: (dotted path of enclosing modules and record_function
        # scopes, the innermost module's class); few distinct places, so codes keep memory per event small
        places: list[tuple[str, str]] = [("", "")]
        place_of: dict[tuple[int, str, str], int] = {}
        where = [0] * n
        backward = [-1] * n  # in autograd's evaluate_function: the forward op's place
        seq_place: dict[int, int] = {}
        rows = WorkloadBuilder()
        placed: list[int] = []  # event index of each row
        unmatched: dict[tuple[str, str], list[float]] = {}
        not_replayed: dict[str, str] = {}
        steps: list[float] = []
        ends = (ev.ts + ev.dur).tolist()
        cats, threads, starts, name_codes = ev.cat.tolist(), ev.thread.tolist(), ev.ts.tolist(), ev.name.tolist()
        seqs, call_ids, durs = ev.sequence.tolist(), ev.call.tolist(), ev.dur.tolist()
        gpu = bool((ev.cat == KERNEL).any())

        def place(i: int, got: tuple[str, costs.Cost, str]) -> None:
            op_name, c, precision = got
            group, module_type = places[backward[i] if backward[i] >= 0 else where[i]]
            if backward[i] >= 0:
                op_name += " (backward)"
            owner[i] = len(placed)
            placed.append(i)
            rows.row(op_name, kind=c.kind, flops=c.flops, bytes_read=c.bytes_read, bytes_written=c.bytes_written,
                     precision=precision, unit=c.unit, group=group, module_type=module_type,
                     level="interconnect" if c.kind == "collective" else "")

        for i in (i for chunk in range(0, n, 1 << 16) for i in order[chunk:chunk + (1 << 16)].tolist()):
            cat = cats[i]
            if cat == KERNEL:
                continue
            stack = stacks.setdefault(threads[i], [])
            t0 = starts[i]
            while stack and ends[stack[-1]] <= t0 + EPS_US:
                stack.pop()
            p = stack[-1] if stack else -1
            stack.append(i)
            if p >= 0:
                owner[i], where[i], backward[i] = owner[p], where[p], backward[p]
                op_parent[i] = p if cats[p] == CPU_OP else op_parent[p]
            name = names[name_codes[i]]
            if cat == ANNOTATION and name.startswith(GLOO_PREFIX) and owner[i] < 0:
                comms = _gloo_collective(name, ev.calls[call_ids[i]] if call_ids[i] >= 0 else {}, self.world)
                if comms is not None:
                    place(i, comms)
                continue
            if cat in (MODULE, ANNOTATION):
                if cat == ANNOTATION and _STEP.match(name):
                    steps.append(durs[i])
                elif owner[i] < 0:
                    key = (where[i], name, "m" if cat == MODULE else "a")
                    code = place_of.get(key)
                    if code is None:
                        path, mtype = places[where[i]]
                        part = name.removeprefix("nn.Module: ")
                        if cat == MODULE:
                            # the outermost module is the model itself: paths are relative to it, as from_torch's
                            path = path if not mtype else f"{path}.{part}" if path else part
                            mtype = _INSTANCE.sub("", part)
                        else:
                            path = f"{path}.{part}" if path else part
                        code = place_of[key] = len(places)
                        places.append((path, mtype))
                    where[i] = code
                continue
            if cat != CPU_OP or owner[i] >= 0:
                continue
            seq = seqs[i]
            if name.startswith(BACKWARD_SCOPE):
                backward[i] = seq_place.get(seq, where[i])
                continue
            if backward[i] < 0 and seq >= 0:
                seq_place.setdefault(seq, where[i])
            call_id = call_ids[i]
            call = ev.calls[call_id] if call_id >= 0 else {}
            if name == COMMS_EVENT and "Collective name" in call:
                got: Any = _collective(call)
            elif "::" in name and call_id >= 0 and not name.startswith(WRAPPER_NAMESPACES):
                try:
                    got = self.replay.cost(name, call_id, call, fused=name in FUSED)
                except NotReplayed as exc:
                    not_replayed.setdefault(name, str(exc))
                    continue
            else:
                continue  # wrappers (autograd nodes, c10d::..., user ops without shapes): their children are placed
            if got is None or got == "composite":
                continue
            place(i, got)
        if not placed:
            first = next(iter(not_replayed.items()), None)
            raise RooflineError(f"{self.where}: no aten op in the trace could be placed"
                                + (f" ({first[0]}: {first[1]})" if first else ""))
        owner_a, op_parent_a = np.asarray(owner, dtype=np.int64), np.asarray(op_parent, dtype=np.int64)
        if gpu:
            seconds, total, span = self._kernel_times(owner_a, op_parent_a, len(placed), unmatched, not_replayed)
        else:
            seconds = ev.dur[np.asarray(placed, dtype=np.int64)] * 1e-6
            total, span = self._cpu_rest(op_parent_a, owner_a, unmatched, not_replayed)
        return self._build(rows, seconds, total, span, steps, unmatched, gpu, title)

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
        assumptions = [
            "ops and FLOPs/bytes: each recorded aten call rebuilt on meta tensors and costed by the PyTorch frontend's "
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
    from roofline.frontends.trace.replay import DTYPES
    from roofline.precision import of_dtype

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
    from roofline.precision import TORCH_DTYPES, of_dtype

    return name, costs.collective(name, elems * size, ranks, size), of_dtype(TORCH_DTYPES.get(dtype.lower(), "")) or "fp32"


__all__ = ["HOW_TO_RECORD", "Unmatched", "from_trace", "read_trace", "read_traces"]
