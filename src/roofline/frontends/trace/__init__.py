"""Profiler traces in: measured points from a torch.profiler run recorded anywhere.

``read_trace(path)`` turns one Chrome trace (``prof.export_chrome_trace`` or
``tensorboard_trace_handler``; ``schemaVersion`` 1, torch >= 2.4, recorded with
``record_shapes=True``) into a measured :class:`~roofline.Workload`;
``from_trace(paths, device)`` analyses it (one file per rank for a multi-rank
run) under a device's roofs; ``read_traces(paths, jobs=..., dask=...)`` reads
the ranks of one run in parallel into the cross-rank view
(:mod:`.ranks`, :mod:`.crossrank`).

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
  nccl-tests bus factor (:func:`roofline.work.costs.collective`).
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

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from roofline.core.stats import SINGLE_SAMPLE_TOLERANCE
from roofline.frontends.trace.analyses.diff import Side, TraceDiff
from roofline.frontends.trace.analyses.diff import diff_traces as diff_sides
from roofline.frontends.trace.analyses.suite import ANALYSES, TraceAnalyses, parse_analyses, run_analyses
from roofline.frontends.trace.crossrank import MultiRankTrace
from roofline.frontends.trace.events import read_events
from roofline.frontends.trace.notes import NOTE_KEY, TraceNotes, trace_notes
from roofline.frontends.trace.placer import HOW_TO_RECORD, Placer
from roofline.frontends.trace.ranks import read_traces
from roofline.work.workload import Workload
from roofline.work.workload_facts import RankFigures, Unmatched


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
    from roofline.core import arguments as arg

    arg.path(path, "read_trace", "path")
    if title is not None:
        arg.text(title, "read_trace", "title", empty=True)
    ev = read_events(path)
    return Placer(ev).workload(title)


def from_trace(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], device: Any, *,
               title: str | None = None, forecast: bool = True) -> Any:
    """Analyse profiler traces under ``device``'s roofs (a catalog name, a file or a :class:`~roofline.Device`).

    Several paths (or a quoted glob) are the ranks of one run (one file per rank): each is read
    (:func:`read_traces`), and the analysis is the slowest rank's (the longest step time), with every rank's
    figures in ``workload.trace.ranks`` and the slowest named there (the straggler, the rank the others wait
    for, is in the cross-rank view: :func:`read_traces`).

    >>> # a = from_trace("trace.json", "h100-sxm")   # see read_trace for recording one
    """
    from roofline.bench.resolve import resolve_device
    from roofline.core import arguments as arg
    from roofline.hardware.device import Device

    files = arg.paths(paths, "from_trace", "paths")
    arg.need(device, (str, Device), "from_trace", "device", "a Device or a device name (str)")
    arg.boolean(forecast, "from_trace", "forecast")
    dev = resolve_device(device)
    if len(files) == 1 and not any(c in os.fspath(files[0]) for c in "*?["):
        work = read_trace(files[0], title=title)
    else:
        work = with_ranks(*read_traces(files, with_workload=True))
        if title:
            work = work.replace(title=title)
    return analyse_trace(work, dev, forecast=forecast)


def analyse_with_analyses(path: str | os.PathLike[str], device: Any, analyses: str | Sequence[str] = "all", *,
                          title: str | None = None, forecast: bool = True) -> tuple[Any, TraceAnalyses]:
    """One trace read once: its roofline analysis under ``device`` (as :func:`from_trace`) and the trace
    analyses asked for (``'all'``, or names from :data:`~.analyses.suite.ANALYSES`: idle time, the kernel
    breakdown, compute/communication overlap, launch delay, the critical path of a step, the memory timeline),
    each kernel and op on its roofline point.

    >>> # a, more = analyse_with_analyses("trace.json", "h100-sxm", "idle,kernels")
    """
    from roofline.bench.resolve import resolve_device
    from roofline.core import arguments as arg

    arg.path(path, "analyse_with_analyses", "path")
    asked = parse_analyses(analyses if isinstance(analyses, str) else ",".join(analyses))
    dev = resolve_device(device)
    ev = read_events(path)
    placer = Placer(ev)
    a = analyse_trace(placer.workload(title), dev, forecast=forecast)
    assert placer.owner is not None
    return a, run_analyses(ev, asked, placer.owner, a)


def rank_analyses(paths: Sequence[str | os.PathLike[str]], device: Any, analyses: str | Sequence[str] = "all"
                  ) -> list[TraceAnalyses]:
    """The trace analyses of each rank's file (:func:`analyse_with_analyses`, without the forecast), each
    kernel and op on its rank's own roofline points, in the order of ``paths``.

    >>> # per_rank = rank_analyses(["rank0.json", "rank1.json"], "h100-sxm", "kernels,critical-path")
    """
    from roofline.core import arguments as arg

    files = arg.paths(paths, "rank_analyses", "paths")
    return [analyse_with_analyses(f, device, analyses, forecast=False)[1] for f in files]


def diff_traces(a: str | os.PathLike[str], b: str | os.PathLike[str], device: Any, device_b: Any = None) -> TraceDiff:
    """Trace ``b`` against trace ``a`` (each one file, one rank), each under its device's roofs (``device_b``:
    B's, when it ran elsewhere; default ``device``): ops and kernels matched, each change attributed to the
    work, the device, the kernel's efficiency or the host (:mod:`.analyses.diff`).

    >>> # d = diff_traces("before.json", "after.json", "h100-sxm"); print(d.headline())
    """
    from roofline.bench.resolve import resolve_device
    from roofline.core import arguments as arg

    arg.path(a, "diff_traces", "a")
    arg.path(b, "diff_traces", "b")
    dev_a = resolve_device(device)
    dev_b = resolve_device(device_b) if device_b is not None else dev_a
    sides = []
    for path, dev in ((a, dev_a), (b, dev_b)):
        ev = read_events(path)
        placer = Placer(ev)
        work = placer.workload(None)
        assert placer.owner is not None
        sides.append(Side.of(ev, placer.owner, analyse_trace(work, dev, forecast=False)))
    return diff_sides(sides[0], sides[1])


def analyse_trace(work: Workload, device: Any, *, forecast: bool = True) -> Any:
    """A trace's workload under ``device``'s roofs (a :class:`~roofline.Device`; each op one sample), flagged
    when the trace's times are not the device's kind, and when the measured time is far off the bound
    (:func:`~.notes.trace_notes`: what that usually means)."""
    from roofline.engine.analysis import analyze

    dev = device
    recorded = work.trace.device_type if work.trace is not None else "cpu"
    if (recorded == "cuda") != (dev.kind == "gpu"):
        work = work.replace(warnings=[*work.warnings, f"the trace's times are {recorded} times ("
                                      + ("kernels" if recorded == "cuda" else "no GPU kernels in it")
                                      + f") but device {dev.name!r} is a {dev.kind}: its roofs are not the hardware "
                                      "that ran it"])
    # each op is one sample: the above-roof tolerance of an op timed once
    a = analyze(work, dev, above_roof_tolerance=SINGLE_SAMPLE_TOLERANCE, forecast=forecast)
    notes = trace_notes(a)
    if notes is not None and notes.far_off:  # among the warnings (JSON, HTML); the terminal's summary leads with it
        w = a.workload
        a = replace(a, workload=w.replace(warnings=[*w.warnings, notes.far_off],
                                          info={**w.info, NOTE_KEY: notes.far_off}))
    return a


def with_ranks(view: MultiRankTrace, work: Workload) -> Workload:
    """The slowest rank's workload (read by a worker), its trace record carrying every rank's figures: its step
    time over the common steps (the per-rank table's), op and collective time, ops."""
    ranks = tuple(RankFigures(t.key, r.file, t.seconds, r.op_seconds, r.collective_seconds, r.op_count)
                  for t, r in zip(view.totals, view.ranks, strict=True))
    worst = next(r for r in ranks if r.rank == view.slowest_rank)
    note = (f"{len(ranks)} ranks; the slowest (longest step time over the {len(view.steps)} common step(s): "
            f"{worst.seconds * 1e3:.3g} ms against {min(r.seconds for r in ranks) * 1e3:.3g} ms for the fastest), "
            f"rank {worst.rank} ({worst.file}), is shown")
    if view.stragglers:
        note += f"; the straggler, the rank the others waited for, is rank {view.stragglers[0].rank}"
    assert work.trace is not None
    return work.replace(trace=replace(work.trace, ranks=ranks, slowest_rank=worst.rank),
                        assumptions=[*work.assumptions, note])


__all__ = ["ANALYSES", "HOW_TO_RECORD", "TraceAnalyses", "TraceDiff", "diff_traces", "analyse_with_analyses", "rank_analyses", "run_analyses", "MultiRankTrace", "TraceNotes", "Unmatched", "analyse_trace", "from_trace", "read_events",
           "read_trace", "read_traces", "trace_notes", "with_ranks"]
