"""``roofline calibrate``: measure a fixed suite of ops here and fit the forecast's efficiency curves.

The suite (:data:`SUITE`, fixed in code, versioned by :data:`SUITE_VERSION`) covers the op
kinds models are made of, each across sizes: GEMMs (linear with bias, transposed and
batched products), convolutions, elementwise ops, layer and batch norm, softmax,
attention (causal and not), pooling and reductions, embedding lookups, copies and
concatenations.  All fp32, PyTorch eager, on the CPU (or the CUDA GPU with ``cuda=True``).

Each suite op runs :data:`CALLS` times per forward inside a one-op module measured with
:func:`roofline.measure` (per-op times from ``torch.profiler``, as a measured model's ops
get them); its figure is the median over every call of every profiled run, with quartiles.
Its FLOPs and bytes come from the same cost tables as any traced model.  The curves
(:func:`roofline.hardware.calibration.fit`) then fit measured time against
overhead + roof time / efficiency(size).  A suite op that fails here is listed in
``failed`` and the rest go on.  A suite measured under contention (:func:`noise_causes`: the same
detection as the bench, plus torch threads above the free cores and times quantised to a scheduler
slice) is measured again; a fit whose held-in error stays above :data:`HELD_IN_ERROR_LIMIT` is refused,
naming the ops and the cause (:func:`check_fit`); a stored one carries its causes in ``quality``.  ``--quick`` runs three sizes of each family, with fewer runs.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from roofline.bench import contention, machine
from roofline.core.errors import RooflineError, first_line, require
from roofline.hardware.calibration import Calibration, SuitePoint, fit, with_forecasts
from roofline.hardware.device import Device

SUITE_VERSION = 1
CALLS = 4  # calls of the op per forward: more samples per profiled run
Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class SuiteOp:
    """One suite entry: a name, its shape in words, and how to make (function, inputs) with torch."""

    name: str
    shape: str
    make: Callable[[Any, Any], tuple[Callable[..., Any], tuple[Any, ...]]]  # (torch, generator) -> (fn, inputs)


def _r(torch: Any, g: Any, *shape: int) -> Any:
    return torch.randn(*shape, generator=g)


def _linear(m: int, k: int, n: int) -> SuiteOp:
    return SuiteOp(f"linear {m}x{k} -> {n}", f"x {m}x{k}, weight {n}x{k}, bias {n}",
                   lambda t, g: (t.nn.functional.linear, (_r(t, g, m, k), _r(t, g, n, k), _r(t, g, n))))


def _mm_t(m: int, k: int, n: int) -> SuiteOp:
    return SuiteOp(f"mm (a^T b) {m}x{k}x{n}", f"a {k}x{m} transposed, b {k}x{n}",
                   lambda t, g: (lambda a, b: a.t() @ b, (_r(t, g, k, m), _r(t, g, k, n))))


def _bmm(b: int, m: int, k: int, n: int) -> SuiteOp:
    return SuiteOp(f"bmm {b}x{m}x{k}x{n}", f"a {b}x{m}x{k}, b {b}x{k}x{n}",
                   lambda t, g: (t.bmm, (_r(t, g, b, m, k), _r(t, g, b, k, n))))


def _conv(n: int, cin: int, cout: int, hw: int, k: int, stride: int) -> SuiteOp:
    return SuiteOp(f"conv {k}x{k}/{stride} {cin}->{cout} at {hw}x{hw} batch {n}",
                   f"x {n}x{cin}x{hw}x{hw}, weight {cout}x{cin}x{k}x{k}, stride {stride}, padding {k // 2}",
                   lambda t, g: (lambda x, w: t.nn.functional.conv2d(x, w, stride=stride, padding=k // 2),
                                 (_r(t, g, n, cin, hw, hw), _r(t, g, cout, cin, k, k))))


def _unary(op: str, rows: int, cols: int) -> SuiteOp:
    return SuiteOp(f"{op} {rows}x{cols}", f"x {rows}x{cols}",
                   lambda t, g: ({"relu": t.relu, "gelu": t.nn.functional.gelu, "tanh": t.tanh,
                                  "sigmoid": t.sigmoid, "scale": lambda x: x * 0.5,
                                  "cube": lambda x: x.pow(3)}[op], (_r(t, g, rows, cols),)))


def _binary(op: str, rows: int, cols: int) -> SuiteOp:
    return SuiteOp(f"{op} {rows}x{cols}", f"x, y {rows}x{cols}",
                   lambda t, g: ({"add": t.add, "mul": t.mul}[op], (_r(t, g, rows, cols), _r(t, g, rows, cols))))


def _layer_norm(rows: int, width: int) -> SuiteOp:
    return SuiteOp(f"layer_norm {rows}x{width}", f"x {rows}x{width}, weight and bias {width}",
                   lambda t, g: (lambda x, w, b: t.nn.functional.layer_norm(x, (width,), w, b),
                                 (_r(t, g, rows, width), _r(t, g, width), _r(t, g, width))))


def _batch_norm(n: int, c: int, hw: int) -> SuiteOp:
    return SuiteOp(f"batch_norm {n}x{c}x{hw}x{hw}", f"x {n}x{c}x{hw}x{hw}, eval statistics {c}",
                   lambda t, g: (lambda x, m, v, w, b: t.nn.functional.batch_norm(x, m, v, w, b),
                                 (_r(t, g, n, c, hw, hw), _r(t, g, c), _r(t, g, c).abs() + 1, _r(t, g, c),
                                  _r(t, g, c))))


def _softmax(rows: int, width: int) -> SuiteOp:
    return SuiteOp(f"softmax {rows}x{width}", f"x {rows}x{width}, last dim",
                   lambda t, g: (lambda x: x.softmax(-1), (_r(t, g, rows, width),)))


def _sdpa(b: int, h: int, s: int, d: int, causal: bool) -> SuiteOp:
    return SuiteOp(f"attention {b}x{h}x{s}x{d}{' causal' if causal else ''}", f"q, k, v {b}x{h}x{s}x{d}",
                   lambda t, g: (lambda q, k, v: t.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal),
                                 (_r(t, g, b, h, s, d), _r(t, g, b, h, s, d), _r(t, g, b, h, s, d))))


def _max_pool(n: int, c: int, hw: int) -> SuiteOp:
    return SuiteOp(f"max_pool 3/2 {n}x{c}x{hw}x{hw}", f"x {n}x{c}x{hw}x{hw}, kernel 3, stride 2, padding 1",
                   lambda t, g: (lambda x: t.nn.functional.max_pool2d(x, 3, 2, 1), (_r(t, g, n, c, hw, hw),)))


def _mean(rows: int, cols: int) -> SuiteOp:
    return SuiteOp(f"mean {rows}x{cols}", f"x {rows}x{cols}, last dim",
                   lambda t, g: (lambda x: x.mean(-1), (_r(t, g, rows, cols),)))


def _embedding(vocab: int, dim: int, tokens: int) -> SuiteOp:
    return SuiteOp(f"embedding {tokens} of {vocab}x{dim}", f"ids {tokens}, table {vocab}x{dim}",
                   lambda t, g: (t.nn.functional.embedding,
                                 (t.randint(0, vocab, (tokens,), generator=g), _r(t, g, vocab, dim))))


def _copy_t(rows: int, cols: int) -> SuiteOp:
    return SuiteOp(f"transpose copy {rows}x{cols}", f"x {rows}x{cols}, .t().contiguous()",
                   lambda t, g: (lambda x: x.t().contiguous(), (_r(t, g, rows, cols),)))


def _cat(rows: int, cols: int) -> SuiteOp:
    return SuiteOp(f"cat 2x {rows}x{cols}", f"x, y {rows}x{cols}, dim 1",
                   lambda t, g: (lambda x, y: t.cat([x, y], 1), (_r(t, g, rows, cols), _r(t, g, rows, cols))))


def _avg_pool(n: int, c: int, hw: int) -> SuiteOp:
    return SuiteOp(f"adaptive_avg_pool {n}x{c}x{hw}x{hw}", f"x {n}x{c}x{hw}x{hw}, to 1x1",
                   lambda t, g: (lambda x: t.nn.functional.adaptive_avg_pool2d(x, 1), (_r(t, g, n, c, hw, hw),)))


#: The suite, fixed: per family, sizes spread on a log scale from tiny (overhead-bound) to larger than the caches.
SUITE: tuple[tuple[SuiteOp, ...], ...] = (
    (_linear(8, 96, 96), _linear(40, 200, 200), _linear(100, 384, 1000), _linear(300, 640, 640),
     _linear(200, 1000, 1000), _linear(1000, 1600, 400), _linear(333, 2000, 2000), _linear(700, 700, 2800)),
    (_mm_t(64, 96, 80), _mm_t(500, 300, 700), _mm_t(1200, 1000, 900), _mm_t(256, 1000, 8000)),
    (_bmm(24, 100, 48, 100), _bmm(6, 300, 80, 300), _bmm(40, 200, 96, 200), _bmm(3, 900, 900, 500)),
    (_conv(1, 3, 24, 96, 3, 1), _conv(4, 32, 48, 56, 3, 1), _conv(2, 96, 96, 28, 3, 1), _conv(8, 160, 160, 14, 3, 1),
     _conv(1, 320, 320, 9, 3, 1), _conv(4, 48, 192, 40, 1, 1), _conv(2, 384, 96, 20, 1, 1), _conv(8, 24, 24, 80, 3, 2),
     _conv(1, 3, 48, 300, 5, 2), _conv(6, 40, 120, 48, 1, 1)),
    (_unary("relu", 3, 100), _unary("relu", 250, 250), _unary("relu", 100, 1000), _unary("relu", 3000, 2900)),
    (_unary("gelu", 30, 300), _unary("gelu", 200, 900), _unary("gelu", 1500, 4100), _unary("gelu", 5000, 1700)),
    (_unary("tanh", 9, 90), _unary("tanh", 77, 1300), _unary("tanh", 700, 2000), _unary("tanh", 3000, 3000)),
    (_unary("sigmoid", 20, 50), _unary("sigmoid", 300, 1100), _unary("sigmoid", 2000, 5000)),
    (_unary("cube", 40, 600), _unary("cube", 500, 1500), _unary("cube", 2000, 2500)),
    (_unary("scale", 50, 70), _unary("scale", 900, 3000), _unary("scale", 90, 8000)),
    (_binary("add", 5, 60), _binary("add", 150, 1500), _binary("add", 400, 900), _binary("add", 2600, 3100)),
    (_binary("mul", 20, 20), _binary("mul", 60, 500), _binary("mul", 1000, 2600)),
    (_layer_norm(4, 100), _layer_norm(60, 700), _layer_norm(300, 1000), _layer_norm(1000, 2500),
     _layer_norm(40, 4000)),
    (_batch_norm(1, 16, 20), _batch_norm(4, 48, 40), _batch_norm(8, 96, 60), _batch_norm(2, 32, 150)),
    (_softmax(10, 100), _softmax(200, 300), _softmax(1000, 1000), _softmax(3000, 2000), _softmax(40, 3000)),
    (_sdpa(1, 4, 48, 32, False), _sdpa(2, 8, 200, 48, True), _sdpa(1, 6, 300, 80, False),
     _sdpa(1, 16, 700, 32, True), _sdpa(4, 2, 600, 96, False), _sdpa(1, 10, 100, 64, True)),
    (_max_pool(1, 16, 40), _max_pool(4, 32, 100), _max_pool(8, 80, 90), _max_pool(2, 8, 250)),
    (_mean(20, 50), _mean(500, 700), _mean(3000, 2500), _mean(4, 9000)),
    (_avg_pool(3, 200, 9), _avg_pool(20, 300, 6), _avg_pool(2, 64, 40)),
    (_embedding(1000, 96, 20), _embedding(30000, 300, 400), _embedding(5000, 1000, 2000)),
    (_copy_t(30, 60), _copy_t(500, 900), _copy_t(2500, 3000)),
    (_cat(20, 40), _cat(300, 800), _cat(2000, 2400)),
)


def suite(quick: bool = False) -> tuple[SuiteOp, ...]:
    """The suite; ``quick``: three sizes of each family (smallest, middle, largest by the order above)."""
    if not quick:
        return tuple(op for family in SUITE for op in family)
    return tuple(op for family in SUITE for op in sorted({family[0], family[len(family) // 2], family[-1]},
                                                          key=family.index))


def suite_done(fraction: float, total: int) -> int:
    """The suite ops done when the progress callback reports ``fraction`` of ``total``."""
    return round(fraction * total)


def describe_suite(ops: Sequence[SuiteOp], quick: bool, runs: int) -> str:
    return (f"roofline calibration suite v{SUITE_VERSION} ({'quick' if quick else 'full'}): {len(ops)} ops, fp32, "
            f"PyTorch eager; per-op times from torch.profiler, median of {CALLS} calls x {runs} profiled runs")


def _calls_module(torch: Any, fn: Callable[..., Any]) -> Any:
    """A one-op module calling ``fn(*inputs)`` :data:`CALLS` times per forward."""

    class Calls(torch.nn.Module):
        def forward(self, *inputs: Any) -> Any:
            out = None
            for _ in range(CALLS):
                out = fn(*inputs)
            return out

    return Calls()


#: a fit whose median |forecast / measured - 1| over the ops it was fitted on is above this is refused
HELD_IN_ERROR_LIMIT = 0.30
CAL_RETRIES = 1  # how many times a noisy or refused suite is measured again


def run_calibration(device: Device, *, quick: bool = False, cuda: bool = False, ops: Sequence[SuiteOp] | None = None,
                    progress: Progress | None = None, retries: int = CAL_RETRIES,
                    error_limit: float | None = HELD_IN_ERROR_LIMIT) -> tuple[Calibration, Device]:
    """Measure the suite on ``device`` (this machine) and fit; returns (the calibration, the device
    carrying it and the overhead floors it used).  ``ops`` replaces the suite (tests).

    The suite is watched for contention (:func:`noise_causes`); a noisy or refused fit is measured again, up
    to ``retries`` times, and the best kept.  Its causes go to ``Calibration.quality``; a fit whose held-in
    error stays above ``error_limit`` (:data:`HELD_IN_ERROR_LIMIT`; None: no limit, for a suite run against
    a device that is not this machine's) is refused (:func:`check_fit`, a RooflineError naming the ops and
    the causes) and nothing is returned to store."""
    torch = require("torch", "torch")
    limit = math.inf if error_limit is None else error_limit
    best: Calibration | None = None
    bare = device
    for _ in range(max(0, retries) + 1):
        before = contention.snapshot()
        cal, bare = _measure_suite(device, quick, cuda, ops, progress, torch)
        causes = noise_causes(cal, before, contention.snapshot(), _torch_threads(torch, cuda))
        cal = replace(cal, quality=tuple(causes))
        if best is None or _worse(best, cal, limit):
            best = cal
        if not causes and not cal.error > limit:
            break
    assert best is not None
    if not (cuda and not best.quality):  # GPU suites are timed by CUDA events: with no contention seen, a poor
        check_fit(best, limit)           # fit is the curve model's miss (describe() states it), not noise
    return best, replace(bare, calibration=best)


def _worse(a: Calibration, b: Calibration, limit: float) -> bool:
    """Whether ``a`` is a worse fit to keep than ``b``: refused before kept, then more causes, then more error."""
    def key(c: Calibration) -> tuple[bool, int, float]:
        return (c.error > limit, len(c.quality), c.error if math.isfinite(c.error) else math.inf)

    return key(a) > key(b)


def _torch_threads(torch: Any, cuda: bool) -> int:
    """Threads the suite's CPU ops run on (torch's intra-op pool); 1 on the GPU (one host thread launches)."""
    return 1 if cuda else int(torch.get_num_threads())


def noise_causes(cal: Calibration, before: contention.Snapshot, after: contention.Snapshot,
                 threads: int, cores: int | None = None) -> list[str]:
    """Why the suite's timings are noise, one line each: contention over the window
    (:func:`roofline.bench.contention.window_causes`), torch threads above the free cores, suite times
    quantised to a scheduler slice (the ops named)."""
    cores = cores or os.cpu_count() or 1
    out = contention.window_causes(before, after, threads, cores)
    busy = [s.runnable - 1 for s in (before, after) if s.runnable is not None]
    free = cores - min(busy) if busy else cores
    if threads > max(free, 0):
        out.append(f"torch runs {threads} threads but only {max(free, 0)} of {cores} cores were free "
                   "(/proc/loadavg runnable tasks): a thread waits a scheduler slice for its core")
    times = [p.measured for p in cal.points]
    q = contention.quantised(times)
    if q is not None:
        on = [p.name for p in cal.points if p.measured >= q * 0.98 and abs(p.measured / q - round(p.measured / q)) <= 0.02]
        out.append(f"{len(on)} of {len(times)} suite times are whole multiples of {q * 1e3:g} ms, a scheduler slice "
                   f"({', '.join(on[:3])}{', ...' if len(on) > 3 else ''})")
    return out


def check_fit(cal: Calibration, limit: float = HELD_IN_ERROR_LIMIT) -> None:
    """A RooflineError refusing ``cal`` when its held-in error (median |forecast / measured - 1| over the ops it
    was fitted on) is above ``limit``: it names the worst ops and the causes seen while measuring."""
    if not cal.error > limit:
        return
    worst = sorted((p for p in cal.points if math.isfinite(p.error)), key=lambda p: -abs(p.error))[:3]
    ops = ", ".join(f"{p.name} {p.error:+.0%}" for p in worst)
    cause = "; ".join(cal.quality) or "no contention seen: the suite's ops do not follow one curve per kind here"
    raise RooflineError(f"refused: calibration not stored: held-in median error {cal.error:.0%} is above the "
                        f"{limit:.0%} limit (worst ops: {ops}); cause: {cause}")


def _measure_suite(device: Device, quick: bool, cuda: bool, ops: Sequence[SuiteOp] | None,
                   progress: Progress | None, torch: Any) -> tuple[Calibration, Device]:
    """One pass over the suite and its fit: (the calibration, the bare device with the floors it used)."""
    from roofline.bench import overhead as floors

    _check_target(device, cuda, torch)
    measured_floors = floors.measure_cuda(torch) if cuda else floors.measure_cpu()
    kept = tuple(o for o in device.overhead if o.framework not in {f.framework for f in measured_floors})
    bare = replace(device, overhead=kept + measured_floors, calibration=None)
    chosen = tuple(ops) if ops is not None else suite(quick)
    runs = 3 if quick else 5
    g = torch.Generator().manual_seed(0)
    points: list[SuitePoint] = []
    failed: list[str] = []
    framework = "cuda-launch" if cuda else "torch-eager"  # what forecast.framework_for gives a torch workload
    for i, op in enumerate(chosen):
        if progress:
            progress(i / max(len(chosen), 1), op.name)
        try:
            points.append(_suite_point(op, torch, g, cuda, bare, runs))
        except RooflineError as exc:
            failed.append(f"{op.name}: {first_line(exc)}")
        except Exception as exc:  # a suite op this machine cannot run: listed, the rest go on
            failed.append(f"{op.name}: {type(exc).__name__}: {first_line(exc)}")
    if progress:
        progress(1.0, "fitting")
    if not points:
        raise RooflineError(f"calibrate: every suite op failed here; first: {failed[0] if failed else '(none run)'}")
    floor = bare.overhead_floor(framework)
    over = floor.seconds if floor is not None else 0.0
    curves = fit(points, over)
    cal = Calibration(device.name, device.bench.machine if device.bench else "", framework, machine.now(),
                      describe_suite(chosen, quick, runs), over, curves, with_forecasts(points, curves, over),
                      tuple(failed))
    return cal, bare


def _check_target(device: Device, cuda: bool, torch: Any) -> None:
    """The suite runs on this machine: a CPU device here, or (``cuda``) a measured GPU with CUDA present."""
    if cuda and not torch.cuda.is_available():
        raise RooflineError("calibrate --gpu: no CUDA device is available here")
    if cuda and device.kind != "gpu":
        raise RooflineError(f"calibrate --gpu: device {device.name!r} is a {device.kind}; measure the GPU first "
                            "with 'roofline bench --gpu'")
    if not cuda and device.kind != "cpu":
        raise RooflineError(f"calibrate: device {device.name!r} is a {device.kind}; calibrating runs the suite here, "
                            "on this machine's CPU (use the local device, or --gpu on a CUDA machine)")


def _suite_point(op: SuiteOp, torch: Any, g: Any, cuda: bool, bare: Device, runs: int) -> SuitePoint:
    """One suite op measured on ``bare`` (the device without a calibration): its median call over the runs,
    beside its roof time and bound (the terms the fit needs)."""
    from roofline.measurement import measure

    fn, inputs = op.make(torch, g)
    if cuda:
        inputs = tuple(x.cuda() for x in inputs)
    a = measure(_calls_module(torch, fn), *inputs, device=bare, repeats=1, warmup=2, profile_runs=runs,
                title=op.name)
    names = {a.workload.strings("name", j) for j in range(len(a.workload))}
    if len(names) != 1:
        raise RooflineError(f"traced to {len(names)} different ops ({', '.join(sorted(names))}), not one")
    timings = a.workload.measured.ops if a.workload.measured else None
    seen = np.isfinite(a.workload.columns["measured_seconds"])
    if timings is None or not seen.any():
        raise RooflineError("no profiler event matched the op")
    # each call's median over the runs, then the median call (quartiles likewise)
    q1, med, q3 = (float(np.median(x[seen])) for x in (timings.low, timings.median, timings.high))
    f = a.forecast  # measure() forecasts on the bare device: its roof and bound terms are what the fit needs
    assert f is not None
    term = "compute" if f.term[0] == "compute" else "memory"
    size = float(a.workload.columns["flops"][0] if term == "compute" else a.workload.bytes[0])
    return SuitePoint(op.name, a.workload.strings("kind", 0), term, a.workload.strings("precision", 0), op.shape,
                      size, float(f.roof_time[0]), float(f.bound[0]), med, (q1, q3), op=a.workload.strings("name", 0))


__all__ = ["HELD_IN_ERROR_LIMIT", "SUITE", "SUITE_VERSION", "SuiteOp", "check_fit", "describe_suite", "noise_causes",
           "run_calibration", "suite"]
