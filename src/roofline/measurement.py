"""Measured points: real timings joined to the ops, so each op shows where it is, not only where it could be.

* :func:`measure` runs a PyTorch model for real (CPU, or CUDA when the inputs
  are there): the ops come from :func:`roofline.from_torch` on the same inputs;
  the model then runs ``warmup`` times, ``repeats`` times timed whole (median
  and spread), and a few times under ``torch.profiler`` (CPU time per aten op;
  CUDA time on a GPU).  Profiler events are joined to the traced ops in
  execution order by aten name.  Each op gets ``measured_seconds`` (the median
  of its profiled runs); the analysis then gives achieved FLOP/s, achieved
  bandwidth and efficiency = achieved / attainable at the level the op is
  judged at (the fastest memory level its working set fits, see
  :mod:`roofline.engine.analysis`), and flags points above that roof.
* :func:`measure_callable` and the :func:`kernel` decorator do the same for
  any Python callable (numpy, numba, cupy, ...), given its FLOPs and bytes.

Without ``device=`` the roofs are the measured local device (the ``roofline bench``
cache); with none cached, a one-line error says to run ``roofline bench`` first
(nothing is measured or written behind the caller's back).  Spread and the
above-roof tolerance follow :mod:`roofline.core.stats` (interquartile range; an op
is flagged only beyond its own fast-side spread).  The whole-run timing and the
per-op quartiles are kept in ``workload.measured`` (:class:`MeasuredRun`).

>>> import numpy as np
>>> from roofline import Device
>>> from roofline.measurement import measure_callable
>>> x = np.ones(1_000_000)
>>> a = measure_callable(np.add, x, x, flops=1e6, bytes=3 * 8e6, repeats=5,
...                      device=Device.simple("cpu", "100 GFLOP/s", "10 GB/s"))
>>> a.workload.has_measurements
True
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError, first_line, require
from roofline.core.precision import of_dtype
from roofline.core.stats import OpTimings, Timing, time_calls
from roofline.engine.analysis import Analysis, analyze
from roofline.hardware.device import Device
from roofline.work.workload import MeasuredRun, Op, Workload


def default_device() -> Device:
    """The measured local device (the ``roofline bench`` cache), or a one-line error saying how to make one.

    Nothing is measured here: a benchmark takes a minute and writes the user's cache, which is
    ``roofline bench``'s job (or :func:`roofline.bench.run_bench` and :func:`roofline.bench.save_local_device`).
    """
    from roofline.bench.cache import load_local_device

    try:
        return load_local_device()
    except RooflineError as exc:
        raise RooflineError(f"no device given: {exc}; or pass device=...") from None


def _resolve(device: Device | str | None) -> Device:
    if device is None:
        return default_device()
    from roofline.bench.resolve import resolve_device

    return resolve_device(device)


def _precision_of(args: Sequence[Any]) -> str:
    """The precision of the first argument with a compute dtype; fp32 when none has one."""
    return next((p for x in args if (p := of_dtype(getattr(x, "dtype", "")))), "fp32")


def measure_callable(fn: Callable[..., Any], *args: Any, flops: float | Callable[..., float],
                     bytes: float | Callable[..., float], device: Device | str | None = None,
                     repeats: int = 20, warmup: int = 3, name: str | None = None, kind: str = "other",
                     precision: str | None = None, unit: str = "vector", kwargs: Mapping[str, Any] | None = None,
                     sync: Callable[[], Any] | None = None, clock: Callable[[], float] = time.perf_counter
                     ) -> Analysis:
    """Time ``fn(*args)`` and place it under the device's roofs as one measured op.

    ``flops`` / ``bytes``: per call (a multiply-add is 2 FLOPs), numbers or functions of ``*args``.
    ``sync``: called after the timed calls for asynchronous libraries (e.g. ``cupy.cuda.Device().synchronize``).
    ``clock``: the timer, in seconds (:func:`time.perf_counter`; tests inject a simulated one).

    >>> import numpy as np
    >>> from roofline import Device
    >>> a = measure_callable(lambda x: x * 2.0, np.ones(10**6), flops=1e6, bytes=16e6, repeats=3,
    ...                      device=Device.simple("cpu", "10 GFLOP/s", "10 GB/s"))
    >>> float(a.intensity[0])   # 1e6 FLOPs / 16e6 bytes
    0.0625
    """
    _check_kernel("measure_callable", flops, bytes, name, kind, unit)
    from roofline.core import arguments as arg

    arg.function(fn, "measure_callable", "fn")
    arg.function(clock, "measure_callable", "clock")
    arg.positive_int(repeats, "measure_callable", "repeats")
    arg.positive_int(warmup, "measure_callable", "warmup", minimum=0)
    kw = dict(kwargs or {})
    f = _evaluated("measure_callable", "flops", flops, args)
    b = _evaluated("measure_callable", "bytes", bytes, args)
    label = str(name or getattr(fn, "__name__", "callable"))
    dev = _resolve(device)
    try:
        timing = time_calls(lambda: fn(*args, **kw), repeats=repeats, warmup=warmup, sync=sync, clock=clock)
    except RooflineError:
        raise
    except Exception as exc:
        raise RooflineError(f"{label} failed during measurement: {first_line(exc)}") from exc
    warnings = [w for w in (timing.warning(label),) if w]
    work = Workload.from_ops(
        [Op(label, kind=kind, flops=f, bytes_read=b, precision=precision or _precision_of(args), unit=unit,
            measured_seconds=timing.median)],
        title=label, source=f"measured callable: {label}", warnings=warnings,
        assumptions=["FLOPs and bytes as given by the caller; bytes counted as reads"],
        info={"frontend": "callable"}, measured=MeasuredRun(timing, method="perf_counter around the callable"))
    return analyze(work, dev, above_roof_tolerance=timing.tolerance(), forecast=True)


def _evaluated(func: str, param: str, value: Any, args: tuple[Any, ...]) -> float:
    """``value``, or what the callable ``value`` gives for ``*args``: a finite number >= 0, else one line naming
    ``func`` and ``param`` (an exception the callable raises too: ``flops=lambda x: 1 / 0``)."""
    from roofline.core import arguments as arg

    if callable(value):
        try:
            value = value(*args)
        except Exception as exc:
            raise RooflineError(f"{func}: {param}(*args) raised {type(exc).__name__}: {first_line(exc)}") from None
        return arg.number(value, func, f"{param}(*args)")
    return arg.number(value, func, param)


def _check_kernel(func: str, flops: Any, nbytes: Any, name: Any, kind: Any, unit: Any) -> None:
    """The API boundary (:mod:`roofline.core.arguments`): FLOPs and bytes finite numbers >= 0 or callables, a
    known op kind and unit, a name (str) or None."""
    from roofline.core import arguments as arg
    from roofline.work.workload_columns import OP_KINDS

    arg.number_or_callable(flops, func, "flops")
    arg.number_or_callable(nbytes, func, "bytes")
    if name is not None:
        arg.text(name, func, "name")
    arg.choice(kind, OP_KINDS, func, "kind")
    arg.choice(unit, ("vector", "matrix"), func, "unit")


class Kernel:
    """A function with declared FLOPs and bytes (numbers or functions of its arguments): it runs
    unchanged, and ``measure(*args, ...)`` times it against a device (see :func:`kernel`)."""

    def __init__(self, fn: Callable[..., Any], flops: float | Callable[..., float],
                 bytes: float | Callable[..., float], name: str | None, kind: str, precision: str | None,
                 unit: str) -> None:
        functools.update_wrapper(self, fn)
        self.fn, self.flops, self.bytes = fn, flops, bytes
        self.name, self.kind, self.precision, self.unit = name or fn.__name__, kind, precision, unit

    def __call__(self, *args: Any, **kw: Any) -> Any:
        return self.fn(*args, **kw)

    def measure(self, *args: Any, device: Device | str | None = None, repeats: int = 20, warmup: int = 3,
                kwargs: Mapping[str, Any] | None = None, sync: Callable[[], Any] | None = None) -> Analysis:
        return measure_callable(self.fn, *args, flops=self.flops, bytes=self.bytes, device=device, repeats=repeats,
                                warmup=warmup, name=self.name, kind=self.kind, precision=self.precision,
                                unit=self.unit, kwargs=kwargs, sync=sync)


def kernel(flops: float | Callable[..., float], bytes: float | Callable[..., float], *, name: str | None = None,
           kind: str = "other", precision: str | None = None, unit: str = "vector"
           ) -> Callable[[Callable[..., Any]], Kernel]:
    """Declare a function's FLOPs and bytes (numbers or functions of its arguments) so it can be measured.

    The function runs unchanged; ``f.measure(*args, device=..., repeats=...)`` returns its Analysis.

    >>> import numpy as np
    >>> from roofline import Device
    >>> @kernel(flops=lambda x: x.size, bytes=lambda x: 2 * x.nbytes)
    ... def double(x):
    ...     return x * 2.0
    >>> a = double.measure(np.ones(1000), repeats=3, device=Device.simple("c", "1 GFLOP/s", "1 GB/s"))
    >>> a.workload.strings("name", 0), double(np.ones(2)).tolist(), double.__name__
    ('double', [2.0, 2.0], 'double')
    """

    _check_kernel("kernel", flops, bytes, name, kind, unit)

    def wrap(fn: Callable[..., Any]) -> Kernel:
        from roofline.core import arguments as arg

        return Kernel(arg.function(fn, "kernel", "the decorated function"), flops, bytes, name, kind, precision,
                      unit)

    return wrap


# ----------------------------------------------------------------------------- PyTorch models
def _locate_failure(model: Any, call: Callable[[], Any]) -> tuple[str, str]:
    """Re-run a failing call watching the aten op and the module: (op, 'module path (Type)')."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.module_tracker import ModuleTracker

    state = {"op": "(before the first op)"}

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                               kwargs: dict[str, Any] | None = None) -> Any:
            state["op"] = str(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    root = type(model).__name__
    names = {f"{root}.{p}" if p else root: (p, type(m).__name__) for p, m in model.named_modules()}
    where = f"the top level of {root}"
    with ModuleTracker() as tracker:
        try:
            with Watch():
                call()
        except Exception:
            parents = [p for p in tracker.parents if p != "Global"]
            if parents:
                path, mtype = names.get(max(parents, key=len), (max(parents, key=len), ""))
                where = f"module {path} ({mtype})" if path else where
            return state["op"], where
    return state["op"], where


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """File descriptor 2 to /dev/null for the block (C++ prints bypass sys.stderr), restored after."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _profile(torch: Any, call: Callable[[], Any], runs: int, cuda: bool
             ) -> tuple[list[list[tuple[str, float, float, float]]], list[float]]:
    """Per profiled run: (name, start us, end us, seconds) of every event, in start order; and each
    run's wall seconds under the profiler."""
    from torch.profiler import ProfilerActivity, profile, record_function

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    prof = profile(activities=acts)
    with _quiet_stderr():  # kineto prints 'USDT ... profiler_start' from C++ on start and stop
        prof.start()
    try:
        for k in range(runs):
            with record_function(f"roofline.run.{k}"):
                call()
            if cuda:
                torch.cuda.synchronize()
    finally:
        with _quiet_stderr():
            prof.stop()
    events = list(prof.events())
    marks = sorted((e for e in events if e.name.startswith("roofline.run.")), key=lambda e: e.time_range.start)
    out: list[list[tuple[str, float, float, float]]] = []
    walls = [(m.time_range.end - m.time_range.start) * 1e-6 for m in marks]
    for m in marks:
        lo, hi = m.time_range.start, m.time_range.end
        run = []
        for e in events:
            if e is m or not (lo <= e.time_range.start and e.time_range.end <= hi):
                continue
            if cuda:
                sec = float(getattr(e, "device_time_total", getattr(e, "cuda_time_total", 0.0))) * 1e-6
            else:
                sec = float(e.cpu_time_total) * 1e-6
            run.append((e.name, float(e.time_range.start), float(e.time_range.end), sec))
        run.sort(key=lambda r: (r[1], -r[2]))
        out.append(run)
    return out, walls


def join_events(names: Sequence[str], events: Sequence[tuple[str, float, float, float]], lookahead: int = 16) -> np.ndarray:
    """Seconds per traced op (NaN when unmatched), matching profiler events in execution order.

    Op ``j`` takes the next event named ``aten::<name>`` that starts after the
    previous match ended (so nested events of a matched op are skipped), looking
    at most ``lookahead`` candidate events ahead; unmatched ops leave the cursor
    where it was.
    """
    targets = [n if "::" in n else ("aten::" + n if "." not in n else n.replace(".", "::", 1)) for n in names]
    wanted = set(targets)
    cand = [e for e in events if e[0] in wanted]
    out = np.full(len(names), np.nan)
    cursor, last_end = 0, -math.inf
    for j, target in enumerate(targets):
        seen = 0
        k = cursor
        while k < len(cand) and seen < lookahead:
            e = cand[k]
            if e[1] >= last_end:
                seen += 1
                if e[0] == target:
                    out[j] = e[3]
                    last_end = e[2]
                    cursor = k + 1
                    break
            k += 1
    return out


def _time_model(torch: Any, model: Any, call: Callable[[], Any], repeats: int, warmup: int, profile_runs: int,
                cuda: bool) -> tuple[Timing, list[list[tuple[str, float, float, float]]], list[float]]:
    """The whole model timed (:func:`time_calls`), then its profiled runs (:func:`_profile`), in eval mode under
    ``torch.inference_mode``; the model's train/eval state is restored.  A failure names the op and module."""
    sync = torch.cuda.synchronize if cuda else None
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            try:
                timing = time_calls(call, repeats=repeats, warmup=warmup, sync=sync)
                # one extra profiled run, dropped: the profiler's lazy set-up lands on the first op it sees
                runs, walls = _profile(torch, call, max(1, profile_runs) + 1, cuda)
                return timing, runs[1:], walls[1:]
            except Exception as exc:
                op, where = _locate_failure(model, call)
                raise RooflineError(f"the model failed during measurement at op {op} in {where}: "
                                    f"{first_line(exc)}") from exc
    finally:
        model.train(was_training)


def _check_model_run(torch: Any, model: Any, repeats: Any, warmup: Any, profile_runs: Any) -> None:
    """The API boundary of :func:`measure` (:mod:`roofline.core.arguments`)."""
    from roofline.core import arguments as arg

    if not isinstance(model, torch.nn.Module):
        raise arg.type_error("measure", "model", "a torch.nn.Module", model)
    arg.positive_int(repeats, "measure", "repeats")
    arg.positive_int(warmup, "measure", "warmup", minimum=0)
    arg.positive_int(profile_runs, "measure", "profile_runs")


def measure(model: Any, *inputs: Any, device: Device | str | None = None, repeats: int = 10, warmup: int = 2,
            profile_runs: int = 3, kwargs: Mapping[str, Any] | None = None, title: str | None = None) -> Analysis:
    """Run ``model(*inputs)`` for real and return its Analysis with measured per-op times.

    ``device``: the roofs to compare against (default: the measured local device, ``roofline bench``'s cache).
    The whole model is timed ``repeats`` times (median and quartiles in ``workload.measured``);
    ``profile_runs`` runs under ``torch.profiler`` give the per-op times (median per op; q1 / median / q3
    in ``workload.measured.ops``; a profiled run's wall time in ``workload.measured.profiled_seconds``).
    The analysis carries the forecast (:mod:`roofline.engine.forecast`) beside the bound, so both are
    compared with the measured times (:class:`roofline.words.summary.ForecastSummary`).  Each op's above-roof tolerance is its own fast-side spread
    over those runs (at least 2%; 10% for an op timed in only one run), not the whole model's.

    >>> import torch
    >>> from roofline import Device
    >>> net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU())
    >>> a = measure(net, torch.randn(32, 64), repeats=3, device=Device.simple("cpu", "50 GFLOP/s", "10 GB/s"))
    >>> bool(np.isfinite(a.workload.columns["measured_seconds"]).all())
    True
    """
    torch = require("torch", "torch")
    from roofline.frontends.torch import from_torch

    _check_model_run(torch, model, repeats, warmup, profile_runs)
    kw = dict(kwargs or {})
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    if any(t.device.type == "meta" for t in tensors):
        raise RooflineError("measure: inputs are on the meta device; measuring needs real tensors")
    cuda = any(t.device.type == "cuda" for t in tensors)
    dev = _resolve(device)
    workload = from_torch(model, *inputs, kwargs=kw, title=title)  # raises one line naming op and module
    names = [workload.strings("name", i) for i in range(len(workload))]

    def call() -> Any:
        return model(*inputs, **kw)

    timing, runs, walls = _time_model(torch, model, call, repeats, warmup, profile_runs, cuda)
    op_timings = OpTimings.of(np.vstack([join_events(names, r) for r in runs]))
    seconds = op_timings.median
    warnings = list(workload.warnings)
    missing = int((~np.isfinite(seconds)).sum())
    if missing:
        warnings.append(f"{missing} of {len(names)} traced op(s) had no matching profiler event; they have no "
                        "measured time")
    w = timing.warning(f"the whole model ({type(model).__name__})")
    if w:
        warnings.append(w)
    op_sum = float(np.nansum(seconds))
    run = MeasuredRun(timing, "cuda" if cuda else "cpu",
                      "torch.profiler " + ("CUDA time" if cuda else "CPU time") + " per aten op; whole model timed "
                      "with perf_counter", len(runs), op_sum, op_timings,
                      float(np.median(walls)) if walls else 0.0)
    assumptions = [*workload.assumptions,
                   "measured: per-op times from torch.profiler joined to the traced ops by aten name in execution "
                   "order (median of the profiled runs); profiler overhead makes small ops look slower"]
    measured = workload.replace(measured_seconds=seconds, warnings=warnings, measured=run, assumptions=assumptions,
                                source=workload.source + " (measured)")
    return analyze(measured, dev, above_roof_tolerance=op_timings.tolerance(), forecast=True)


def timing_of(a: Analysis) -> Timing | None:
    """The whole-run timing recorded by :func:`measure` / :func:`measure_callable`, if any."""
    return None if a.workload.measured is None else a.workload.measured.timing


def op_timings_of(a: Analysis) -> OpTimings | None:
    """The per-op quartiles and median seconds recorded by :func:`measure`, if any."""
    return None if a.workload.measured is None else a.workload.measured.ops


def measure_target(target: str, input_specs: Sequence[str], device: Device | str | None = None, *,
                   repeats: int = 10, warmup: int = 2) -> Analysis:
    """``roofline torch MODULE:CALLABLE --measure``: build the model for real on the CPU and :func:`measure` it.

    ``input_specs`` ('1x3x224x224', '8x512:int64') make random float inputs (integer inputs are zeros,
    valid token ids); without them the callable's own (module, inputs) pair is used.
    """
    torch = require("torch", "torch")
    from roofline.frontends.target import call_target, parse_input, user_code

    parsed = [parse_input(s) for s in input_specs]
    made, inputs = call_target(target, meta=False)
    if any(t.device.type == "meta" for t in (*made.parameters(), *made.buffers())):
        raise RooflineError(f"{target} built the model on the meta device; --measure needs real weights")
    gen = torch.Generator().manual_seed(0)
    if parsed:
        inputs = tuple(torch.randn(shape, generator=gen).to(getattr(torch, dtype))
                       if getattr(torch, dtype).is_floating_point else torch.zeros(shape, dtype=getattr(torch, dtype))
                       for shape, dtype in parsed)
    if not inputs:
        raise RooflineError(f"{target} returned a module without inputs; give --input SHAPE[:DTYPE]")
    if any(isinstance(t, torch.Tensor) and t.device.type == "meta" for t in inputs):
        raise RooflineError(f"{target} returned meta inputs; give --input SHAPE[:DTYPE] to measure")
    with user_code(target, "raised while measured"):  # the forward runs here: its errors are the user's
        return measure(made, *inputs, device=device, repeats=repeats, warmup=warmup)


__all__ = ["OpTimings", "Timing", "default_device", "join_events", "kernel", "measure", "measure_callable",
           "measure_target", "op_timings_of", "time_calls", "timing_of"]
