"""The forecast: how long each op will really take, shown beside the roofline bound, never in its place.

Per op (one run)::

    roof      = max(FLOPs / (achievable peak x q), bytes / achievable bandwidth)
    bound     = max(FLOPs / peak, bytes / bandwidth)               (the analysis' roofline time)
    work      = max(roof / efficiency(kind, term, size), bound)
    forecast  = overhead + work

- *achievable* roofs are the device's sustained figures (``Device.achievable_compute`` /
  ``achievable_memory``: stream bandwidth, best-shape GEMM, cited) where it has them, else
  its peak roofs; each op keeps the compute ceiling and memory level of its bound (the
  roof and time terms are the bound's, scaled from peak to achievable);
- *q* is tile and wave quantization (:mod:`roofline.engine.gemm_shape`): the fraction of the matrix
  roof a GEMM (or attention) of the op's ``m, n, k, batch`` can use over the device's SMs; 1 where
  the SM count or the dimensions are not known, and for matrix-vector (skinny) products;
- *term* is what binds ``roof``: compute, memory or interconnect; *size* is the curve's axis:
  FLOPs for compute-bound ops and bytes otherwise (fitted curves), or a cited curve's own axis
  (keys per query for attention, message bytes for collectives); of cited attention curves for several head
  dims, the one nearest the op's head dim (``k``);
- *efficiency* comes from the calibration (:func:`effective_calibration`): the user's own
  (``roofline calibrate``) over the cited one shipped with a catalog device
  (:mod:`roofline.catalog.calibrations`, published kernel-level figures, every point cited), the
  curve of the op's kind and term (a user's curve first, then a cited one, then the user's pooled
  curve); 1 without one.  A cited curve may be for one precision: weight-only quantized matmuls look theirs
  up as ``int8-weights`` / ``int4-weights`` (:func:`curve_precisions`: the dequantizing GEMV's cost); a training
  step's GEMMs in a low-precision recipe (the workload's ``gemm_format``) by the recipe's kernel family
  (``fp8-tensor``: per-tensor scaled cuBLAS FP8; ``fp8-block``, ``mxfp8``, ``nvfp4``) before their roof's precision.  The
  catalog GPUs' cited ``memory`` tables of matmul and attention are DRAM-streaming kernels' ``a + V/b``
  (per-kernel fixed time beyond the floor, then bandwidth); activation-sized ops (norms, elementwise) have none
  and run at the achievable bandwidth.  The forecast's notes name each curve's source;
- grouped MoE expert GEMMs (``module_type`` ``grouped_gemm``) take their efficiency from cited grouped-GEMM
  kernel tables by M per group, N and K, and run at the rows of their slowest group (:mod:`roofline.engine.grouped_gemm`);
- *overhead* is the device's overhead floor for the framework running the ops
  (``torch-eager``/``numpy`` on CPUs, ``cuda-launch``/``cuda-graph`` on GPUs); 0 without one.

The *verdict* of an op says which term dominates its forecast: ``overhead`` when the
floor is at least the work, else the term binding its roof.  Where the time goes
(:meth:`Forecast.parts`): the roof itself (the bound), below the roof (work - bound),
overhead.

>>> from roofline import Device, Op, Workload, analyze
>>> a = analyze(Workload.from_ops([Op("tiny", flops=1e3, bytes_read=4e3)]),
...             Device.simple("seed", "100 GFLOP/s", "10 GB/s"), forecast=True)
>>> f = a.forecast
>>> float(f.time[0]), str(f.verdict[0])  # no floor, no calibration: the bound itself, 4 kB / 10 GB/s
(4e-07, 'memory')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from roofline.core import formats
from roofline.core.units import format_seconds
from roofline.engine.gemm_shape import op_quantization
from roofline.engine.grouped_gemm import apply_grouped
from roofline.hardware.calibration import E_MAX_CAP, Calibration
from roofline.hardware.calibration_curves import TabulatedCurve, by_head_dim
from roofline.hardware.device import ComputeCeiling, Device, MemoryCeiling, OverheadFloor
from roofline.work.workload import Workload

VERDICTS = ("overhead", "compute", "memory", "interconnect")


class Bound(Protocol):
    """What the forecast reads of the bound: an :class:`~roofline.engine.analysis.Analysis` (which sits above this
    module and holds the forecast) is one."""

    @property
    def workload(self) -> Workload: ...
    @property
    def device(self) -> Device: ...
    @property
    def ceilings(self) -> Sequence[ComputeCeiling]: ...
    @property
    def ceiling_index(self) -> np.ndarray: ...
    @property
    def levels(self) -> Sequence[MemoryCeiling]: ...
    @property
    def level_index(self) -> np.ndarray: ...
    @property
    def compute_time(self) -> np.ndarray: ...
    @property
    def memory_time(self) -> np.ndarray: ...
    @property
    def time(self) -> np.ndarray: ...


def framework_for(analysis: Bound, cuda_graphs: bool = False) -> str:
    """The framework whose overhead floor an op pays: the GPU's launch (or graph replay), numpy for
    measured callables, else PyTorch eager."""
    if analysis.device.kind == "gpu":
        return "cuda-graph" if cuda_graphs else "cuda-launch"
    return "numpy" if analysis.workload.info.get("frontend") == "callable" else "torch-eager"


@dataclass(frozen=True)
class Forecast:
    """Per-op forecast (numpy arrays aligned with the analysis' ops; seconds per single run)."""

    time: np.ndarray
    work: np.ndarray
    roof_time: np.ndarray  # on achievable roofs
    bound: np.ndarray  # true roofs at the same level (cache-aware)
    efficiency: np.ndarray
    term: np.ndarray  # compute | memory | interconnect: what binds roof_time
    outside: np.ndarray  # size outside its curve's calibrated range
    counts: np.ndarray
    overhead: float
    framework: str
    floor: OverheadFloor | None
    calibration: Calibration | None
    notes: tuple[str, ...] = ()
    #: each op's efficiency came from a calibration curve (else 1: no curve of its kind, term and precision)
    curved: np.ndarray | None = None

    @property
    def verdict(self) -> np.ndarray:
        """overhead | compute | memory | interconnect: the term that dominates each op's forecast."""
        return np.where(self.overhead >= self.work, "overhead", self.term)

    @property
    def total_time(self) -> float:
        return float(np.dot(self.time, self.counts))

    @property
    def total_op_time(self) -> np.ndarray:
        """Forecast seconds per op x its count."""
        return self.time * self.counts

    @property
    def uncalibrated(self) -> str:
        """'' when a calibration (the user's or a cited one) gave the efficiencies; else what this forecast is
        without one, said wherever it is shown: 'uncalibrated: forecast = bound' (efficiency 1), with ' on
        achievable roofs' when sustained figures or tile quantization lowered a roof, and ' + cuda-launch floor'
        when an overhead floor is counted.  Forecasts of devices that differ here are not alike: the uncalibrated one is a bound."""
        if self.calibration is not None and self.curve_share >= 0.5:
            return ""
        text = "uncalibrated: forecast = bound"
        if self.calibration is not None:  # a calibration whose curves miss the ops holding most of the time
            text = (f"uncalibrated for {1 - self.curve_share:.0%} of its time (no cited curve of those ops' kind and "
                    "term): forecast = bound there")
        if bool(np.any(self.roof_time > self.bound * (1 + 1e-9))):
            text += " on achievable roofs"
        return text + (f" + {self.framework} floor" if self.overhead > 0 else "")

    @property
    def curve_share(self) -> float:
        """The share of the forecast's work time (overhead aside) on ops whose efficiency a calibration curve gave."""
        if self.calibration is None or self.curved is None:
            return 0.0 if self.calibration is None else 1.0
        total = float(np.dot(self.work, self.counts))
        return float(np.dot(self.work[self.curved], self.counts[self.curved])) / total if total > 0 else 1.0

    def over_measured(self, measured_seconds: np.ndarray) -> np.ndarray:
        """forecast / measured per op (NaN where an op has no measured time)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(measured_seconds > 0, self.time / measured_seconds, np.nan)

    def parts(self) -> dict[str, float]:
        """Seconds of the whole forecast: 'roof' (the bound), 'below roof' (work - bound), 'overhead'."""
        return {"roof": float(np.dot(self.bound, self.counts)),
                "below roof": float(np.dot(self.work - self.bound, self.counts)),
                "overhead": self.overhead * float(self.counts.sum())}

    def share_by_verdict(self) -> dict[str, float]:
        """Share of the forecast time held by ops of each verdict."""
        total = self.total_time
        v = self.verdict
        return {k: float(np.dot(self.time[v == k], self.counts[v == k])) / total if total > 0 else 0.0
                for k in VERDICTS if np.any(v == k)}

    def describe(self) -> str:
        """'forecast 1.2 ms: roof 40%, below roof 50%, overhead 10%'."""
        total = self.total_time
        parts = ", ".join(f"{k} {v / total:.0%}" for k, v in self.parts().items()) if total > 0 else ""
        return f"forecast {format_seconds(total)}" + (f": {parts}" if parts else "")


def effective_calibration(dev: Any) -> Calibration | None:
    """The calibration the forecast uses on ``dev``: the user's own (``calibrate``) over the device's shipped cited
    one (:mod:`roofline.catalog.calibrations`), the user's curves replacing the cited ones kind by kind."""
    from roofline.catalog.calibrations import cited_calibration

    cited = cited_calibration(dev.name)
    user = dev.calibration
    return cited if user is None else user.over(cited)


def _sizes(w: Any, term: np.ndarray, axis: str) -> np.ndarray:
    """Each op's size along a curve's axis: FLOPs or bytes (by its term, as /1 curves), keys (``n``), bytes."""
    if axis == "keys":
        return np.asarray(w.columns["n"], dtype=float)
    if axis in ("bytes", "message_bytes"):
        return np.asarray(w.bytes, dtype=float)
    if axis == "flops":
        return np.asarray(w.columns["flops"], dtype=float)
    return np.where(term == "compute", w.columns["flops"], w.bytes)


#: Weight-only quantized matmuls (16-bit activations, fewer bits per stored weight, scales included) look their curves
#: up under these precision keys, most bits first: the kernel dequantizes each weight as it streams it, which cited
#: GEMV measurements show costs bandwidth (the ``matmul (memory, int8-weights)`` tables of the shipped calibrations).
WEIGHT_ONLY_KEYS = (("int8-weights", 10.0), ("int4-weights", 6.0))


def kernel_roofs() -> dict[str, str]:
    """Each low-precision GEMM kernel family's key (:attr:`~roofline.core.formats.NumberFormat.kernel`) -> the roof
    key its curves fall back to where a calibration cites none of the family's own."""
    return {f.kernel: f.roof for f in formats.FORMATS.values() if f.kernel}


def curve_precisions(w: Any) -> np.ndarray:
    """The precision each op's efficiency curve is looked up by: the op's own, except for a ``matmul`` with bf16/fp16
    activations whose weights take at most 10 (or 6) bits per element (``8 x weight_bytes / (n x k)``): then
    ``int8-weights`` (``int4-weights``).

    >>> from roofline import Op, Workload
    >>> w = Workload.from_ops([Op("q", kind="matmul", flops=2 * 64 * 64, bytes_read=64 * 64, weight_bytes=64 * 64,
    ...                           precision="bf16", m=1, n=64, k=64, batch=1)])
    >>> str(curve_precisions(w)[0])   # 1 byte per weight
    'int8-weights'
    """
    c = w.columns
    prec = np.asarray(w.column("precision")).astype(object)
    with np.errstate(divide="ignore", invalid="ignore"):
        bits = 8.0 * np.asarray(c["weight_bytes"], dtype=float) / (np.asarray(c["n"], dtype=float) * c["k"])
    weight_only = ((w.column("kind") == "matmul") & np.isin(prec, ("bf16", "fp16")) & np.isfinite(bits)
                   & (bits > 0))
    out = prec.copy()
    for key, most in WEIGHT_ONLY_KEYS:  # fewest bits last, so each op ends with its tightest class
        out[weight_only & (bits <= most)] = key
    gemm_format = w.info.get("gemm_format") if isinstance(w.info, dict) else None
    if gemm_format:  # a training step's GEMMs in a low-precision recipe: looked up by its kernel family first
        fmt = formats.get(str(gemm_format))
        if fmt.kernel:
            out[(w.column("kind") == "matmul") & (prec == fmt.roof)] = fmt.kernel
    return out.astype(str)


def _efficiencies(a: Bound, cal: Calibration, term: np.ndarray, roof: np.ndarray, peak_scale: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """(efficiency, outside, notes, curved) per op from ``cal``'s curves, one pass per (kind, term, precision)."""
    w = a.workload
    n = len(w)
    efficiency, outside, curved = np.ones(n), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    kinds, precs = w.column("kind"), curve_precisions(w)
    pooled: set[str] = set()
    missing: set[str] = set()
    used: dict[str, str] = {}
    live = roof > 0
    for kind, t, prec in sorted({(str(k), str(x), str(p)) for k, x, p in zip(kinds[live], term[live], precs[live],
                                                                              strict=True)}):
        sel = live & (kinds == kind) & (term == t) & (precs == prec)
        curve = cal.curve(kind, t, prec)
        if prec in kernel_roofs() and (not isinstance(curve, TabulatedCurve) or curve.precision != prec):
            curve = cal.curve(kind, t, kernel_roofs()[prec])  # no curve of the kernel family: its roof's
        if curve is None:
            missing.add(f"{kind} ({t})")
            continue
        if curve.kind != kind:
            pooled.add(f"{kind} ({t})")
        axis = curve.axis if isinstance(curve, TabulatedCurve) else ""
        size = _sizes(w, term, axis)[sel]
        known = np.isfinite(size)
        e = np.ones(int(sel.sum()))
        if isinstance(curve, TabulatedCurve):  # attention: the curve of the nearest head dim (the ``k`` column)
            head_dim = np.asarray(w.columns["k"], dtype=float)[sel][known]
            e[known] = by_head_dim(cal.head_dim_variants(curve), size[known], head_dim)
        else:
            e[known] = curve.efficiency(size[known])
        if isinstance(curve, TabulatedCurve) and curve.relative_to == "peak":
            e = e * peak_scale[sel]  # a fraction of the peak roof, as a fraction of the achievable one
        efficiency[sel] = np.minimum(e, E_MAX_CAP)
        curved[sel] = True
        outside[sel] = np.where(known, curve.outside(np.where(known, size, 1.0)), False)
        used[f"{kind} ({t}{', ' + prec if isinstance(curve, TabulatedCurve) and curve.precision else ''})"] = (
            cal.curve_source(curve))
    notes = [f"efficiency curve of {k}: {v}" for k, v in sorted(used.items())]
    if pooled:
        notes.append(f"no calibration curve of their own, the pooled curve used: {', '.join(sorted(pooled))}")
    if missing:
        notes.append(f"no calibration curve at all, efficiency 1 (the achievable roof): {', '.join(sorted(missing))}")
    if outside.any():
        notes.append(f"{int(outside.sum())} op(s) lie outside the calibrated size range of their curve "
                     "(more than 2x beyond its smallest or largest point): the curve is extrapolated")
    return efficiency, outside, notes, curved


def _quantized(a: Bound, cal: Calibration | None, t_c: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The compute term divided by tile and wave quantization (:mod:`roofline.engine.gemm_shape`) where the device's
    SM count and the ops' GEMM dimensions are known."""
    w = a.workload
    c = w.columns
    if cal is None or cal.quantization is None:
        shaped = np.isin(w.column("kind"), ("matmul", "attention")) & np.isfinite(c["m"])
        return t_c, (["no SM count for this device: GEMM shapes known, but no tile or wave quantization"]
                     if shaped.any() else [])
    q = op_quantization(w.column("kind"), c["m"], c["n"], c["batch"], cal.quantization.sms)
    shaped = q < 1
    notes = [f"tile and wave quantization over {cal.quantization.sms} SMs (NVIDIA's matrix multiplication guide): "
             f"{int(shaped.sum())} op(s) below the full roof by their shape"] if shaped.any() else []
    return t_c / q, notes


def compute_forecast(analysis: Bound, *, framework: str | None = None) -> Forecast:
    """The forecast of every op of ``analysis`` on its device (module docs give the formulas)."""
    a, dev = analysis, analysis.device
    w = a.workload
    framework = framework or framework_for(a)
    floor = dev.overhead_floor(framework)
    overhead = floor.seconds if floor is not None else 0.0
    # the bound's own terms, each scaled from its peak roof to the achievable one
    compute_scale = np.asarray([c.flops / dev.achievable_flops(c) for c in a.ceilings] or [1.0])[a.ceiling_index]
    level_scale = np.asarray([m.bandwidth / dev.achievable_bandwidth(m) for m in a.levels] + [1.0])[a.level_index]
    cal = effective_calibration(dev)
    t_c, notes = _quantized(a, cal, a.compute_time * compute_scale)
    t_m = a.memory_time * level_scale
    roof = np.maximum(t_c, t_m)
    term = np.where((t_c >= t_m) & (t_c > 0), "compute", np.where(a.level_index < 0, "interconnect", "memory"))
    efficiency = np.ones(len(w))
    outside = np.zeros(len(w), dtype=bool)
    curved = np.zeros(len(w), dtype=bool)
    if cal is not None:
        peak_scale = np.where(term == "compute", compute_scale, level_scale)
        efficiency, outside, more, curved = _efficiencies(a, cal, term, roof, peak_scale)
        notes += more
    else:
        notes.append(f"device {dev.name!r} has no calibration and no cited kernel measurements: first principles "
                     "only ('roofline calibrate' measures one): efficiency 1, the forecast is the achievable roofs "
                     "plus the overhead floor")
    # grouped MoE expert GEMMs: the cited grouped kernel's efficiency and the slowest group (engine.grouped_gemm)
    efficiency, outside, more = apply_grouped(w, dev, a.compute_time, t_m, roof, term, efficiency, outside)
    notes += more
    if floor is None:
        notes.append(f"device {dev.name!r} has no {framework} overhead floor: none counted")
    if not (dev.achievable_compute or dev.achievable_memory) and dev.bench is None:
        notes.append("no sustained figures published for this device: achievable roofs = peak roofs")
    work = np.maximum(np.where(roof > 0, roof / efficiency, 0.0), a.time)
    return Forecast(overhead + work, work, roof, a.time, efficiency, term, outside, w.columns["count"], overhead,
                    framework, floor, cal, tuple(notes), curved)
