"""The roofline model, vectorised over every op of a workload.

    arithmetic intensity = FLOPs / bytes                  [FLOP/B]
    ridge intensity      = peak FLOP/s / bandwidth        [FLOP/B]
    roofline time        = max(FLOPs / peak, bytes / bandwidth, bytes_L1 / bw_L1, bytes_L2 / bw_L2, ...)
    attainable FLOP/s    = FLOPs / roofline time = min(peak, intensity x bandwidth)

Each op's compute roof is the device ceiling for its (unit, precision), or the
documented fallback (:meth:`roofline.hardware.device.Device.choose_compute`), recorded
per op.  Its memory roof is main memory unless the op names a level
(``interconnect`` means the device link).  ``analyze`` is pure: nothing printed.

Measured points are judged cache-aware: a measured op on main memory whose
working set (bytes read + written by one run) fits a faster level's capacity
is held to that level's slope (the fastest such level; levels without a stated
capacity are never chosen), since its data can stay there between runs.  Its
efficiency and above-roof flag use that judging roof (``judged_level``,
``judged_attainable_flops``); its predicted time and bound keep the bytes
model (main memory unless per-level bytes are given).

>>> from roofline import Device, Op, Workload, analyze
>>> a = analyze(Workload.from_ops([Op("app", flops=0.8e9, bytes_read=4e9)]),
...             Device.simple("seed", "100 GFLOP/s", "10 GB/s"))
>>> float(a.intensity[0]), float(a.attainable_flops[0] / 1e9), str(a.bound[0])
(0.2, 2.0, 'memory')
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from roofline.core.errors import RooflineError
from roofline.core.fileio import json_number
from roofline.core.formatters import FORMATTERS
from roofline.core.formula import roofline_times
from roofline.engine.forecast import Forecast, compute_forecast
from roofline.engine.roofs import op_times
from roofline.hardware.device import ComputeCeiling, Device, MemoryCeiling
from roofline.work.workload import Workload
from roofline.work.workload_columns import finite_or_null

if TYPE_CHECKING:
    from roofline.hardware.calibration import Calibration

ANALYSIS_SCHEMA = "roofline.analysis/2"
#: Older versions that still load: /1 holds a /1 device and workload, each migrated on load.
ANALYSIS_SCHEMAS_READ = ("roofline.analysis/1", ANALYSIS_SCHEMA)
ABOVE_ROOF = "above roof: check units, FLOP counting or the chosen ceiling"
#: ``analyze(..., tf32=)``: which fp32 matrix-unit ops a GPU with a tf32 matrix roof runs on it.  'default' is
#: PyTorch's: ``torch.backends.cudnn.allow_tf32 = True`` (convolutions) and
#: ``torch.backends.cuda.matmul.allow_tf32 = False`` (matmuls), per the CUDA semantics notes
#: (https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices).
TF32_KINDS = {"default": ("conv",), "on": ("conv", "matmul", "attention"), "off": ()}
TF32_NOTES = {
    "default": "TF32 (PyTorch's defaults, --tf32 default): fp32 convolutions on the tf32 matrix roof "
               "(torch.backends.cudnn.allow_tf32 = True), fp32 matmuls and attention on fp32 "
               "(torch.backends.cuda.matmul.allow_tf32 = False)",
    "on": "TF32 on (--tf32 on): fp32 convolutions, matmuls and attention on the tf32 matrix roof "
          "(cudnn.allow_tf32 and cuda.matmul.allow_tf32 both True)",
    "off": "TF32 off (--tf32 off): fp32 convolutions, matmuls and attention on fp32 "
           "(cudnn.allow_tf32 and cuda.matmul.allow_tf32 both False)",
}


@dataclass(frozen=True)
class GroupRow:
    """Totals of the ops in one group (a module path prefix, a type or a kind)."""

    name: str
    ops: int
    flops: float
    bytes: float
    time: float
    share: float
    compute_time: float
    memory_time: float
    measured_seconds: float  # nan when no op of the group was measured
    binding: str = ""  # the bound that carries most of the group's time, each op by its own bound

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes > 0 else math.inf

    @property
    def bound(self) -> str:
        """Which bound carries most of the group's time, each op timed on its own bound (the rule of
        :meth:`Analysis.time_share_by_bound`, so a group row and the headline never disagree); a row built
        without it falls back to the group's summed compute against memory time."""
        return self.binding or ("compute" if self.compute_time > self.memory_time else "memory")

    @property
    def attainable_flops(self) -> float:
        return self.flops / self.time if self.time > 0 else 0.0


@dataclass(frozen=True)
class Analysis:
    """Per-op roofline results (numpy arrays aligned with ``workload``), totals and group-bys.  Immutable."""

    workload: Workload
    device: Device
    ceilings: list[ComputeCeiling]
    ceiling_index: np.ndarray  # per op: index into ceilings
    fallbacks: list[str]  # per ceiling index: "" or "bf16 matrix -> fp16 vector"
    levels: list[MemoryCeiling]
    level_index: np.ndarray  # per op: index into levels (-1: interconnect)
    peak_flops: np.ndarray
    bandwidth: np.ndarray
    intensity: np.ndarray
    compute_time: np.ndarray  # per single run
    memory_time: np.ndarray
    time: np.ndarray  # per single run
    total_op_time: np.ndarray  # x count
    judged_level_index: np.ndarray  # per op: level its measured point is judged at (index into levels, -1 link)
    judged_time: np.ndarray  # per single run: roofline time at the judging level (= time unless judged at a cache)
    warnings: tuple[str, ...] = ()
    above_roof_tolerance: float | np.ndarray = 0.0  # one number, or one per op
    forecast: Forecast | None = None  # beside the bound, never in its place (analyze(..., forecast=True))
    #: per single run: the per-hop latency part of each collective op's memory time (steps x alpha,
    #: :func:`roofline.engine.collectives.on_link`); None when no op pays one
    latency_time: np.ndarray | None = None
    tf32: str = "default"  # the TF32 rule it ran under (TF32_KINDS)
    tf32_ops: int = 0  # fp32 matrix-unit ops of the kinds the rule covers, on a GPU with a tf32 matrix roof

    @property
    def assumptions(self) -> list[str]:
        """The workload's modelling choices, then the analysis's own: the TF32 rule, when it decided an op."""
        return [*self.workload.assumptions, *([TF32_NOTES[self.tf32]] if self.tf32_ops else [])]

    # -- per-op derived ----------------------------------------------------
    @cached_property
    def ridge_intensity(self) -> np.ndarray:
        return self.peak_flops / self.bandwidth

    @cached_property
    def attainable_flops(self) -> np.ndarray:
        """min(peak, intensity x bandwidth) = FLOPs / roofline time (0 for 0-FLOP ops)."""
        flops = self.workload.columns["flops"]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.time > 0, flops / np.where(self.time > 0, self.time, 1.0), 0.0)

    @cached_property
    def bound(self) -> np.ndarray:
        """'compute', 'memory', 'interconnect' or 'latency' per op (ties go to compute): a collective whose
        per-hop latency (steps x alpha) outweighs its bytes over the link is 'latency'."""
        memory_kind = np.where(self.level_index < 0, "interconnect", "memory")
        if self.latency_time is not None:
            lat = self.latency_time
            memory_kind = np.where((self.level_index < 0) & (lat > self.memory_time - lat), "latency", memory_kind)
        return np.where((self.compute_time >= self.memory_time) & (self.compute_time > 0), "compute", memory_kind)

    @cached_property
    def share(self) -> np.ndarray:
        return self.total_op_time / self.total_time if self.total_time > 0 else np.zeros(len(self.time))

    @cached_property
    def achieved_flops(self) -> np.ndarray:
        """Measured FLOP/s (nan when not measured)."""
        return self.workload.columns["flops"] / self.workload.columns["measured_seconds"]

    @cached_property
    def achieved_bandwidth(self) -> np.ndarray:
        return self.workload.bytes / self.workload.columns["measured_seconds"]

    @cached_property
    def judged_attainable_flops(self) -> np.ndarray:
        """FLOP/s attainable at the judging level: min(peak, intensity x that level's bandwidth).

        Equal to ``attainable_flops`` except for measured ops judged at a cache level.
        """
        flops = self.workload.columns["flops"]
        jt = self.judged_time
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(jt > 0, flops / np.where(jt > 0, jt, 1.0), 0.0)

    @cached_property
    def judged_level(self) -> np.ndarray:
        """Name of the memory level each op is judged at ('interconnect' for the link)."""
        names = np.asarray([m.level for m in self.levels] + ["interconnect"])
        return names[self.judged_level_index]  # -1 picks the last: interconnect

    @cached_property
    def judged_at_cache(self) -> np.ndarray:
        """True where a measured op is judged at a faster level than its predicted roof's."""
        return self.judged_level_index != self.level_index

    @cached_property
    def efficiency(self) -> np.ndarray:
        """Judged roofline time / measured time = achieved / judged attainable (nan when not measured)."""
        return self.judged_time / self.workload.columns["measured_seconds"]

    @cached_property
    def above_roof(self) -> np.ndarray:
        """Measured ops whose efficiency exceeds 1 + their tolerance (``above_roof_tolerance``)."""
        with np.errstate(invalid="ignore"):
            return np.nan_to_num(self.efficiency, nan=0.0) > 1.0 + self.above_roof_tolerance

    def fallback(self, i: int) -> str:
        return self.fallbacks[int(self.ceiling_index[i])]

    def ceiling_label(self, i: int) -> str:
        return self.ceilings[int(self.ceiling_index[i])].label

    def level_label(self, i: int) -> str:
        j = int(self.level_index[i])
        return "interconnect" if j < 0 else self.levels[j].level

    def judged_label(self, i: int) -> str:
        """The memory level op ``i``'s measured point is judged at."""
        j = int(self.judged_level_index[i])
        return "interconnect" if j < 0 else self.levels[j].level

    # -- totals ------------------------------------------------------------
    @cached_property
    def total_time(self) -> float:
        return float(self.total_op_time.sum())

    @property
    def total_flops(self) -> float:
        return self.workload.total_flops

    @property
    def total_bytes(self) -> float:
        return self.workload.total_bytes

    @property
    def total_measured_seconds(self) -> float:
        m = self.workload.columns["measured_seconds"] * self.workload.columns["count"]
        return float(np.nansum(m)) if np.isfinite(m).any() else math.nan

    def time_share_by_bound(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for b in ("memory", "compute", "interconnect", "latency"):
            t = float(self.total_op_time[self.bound == b].sum())
            if t > 0:
                out[b] = t / self.total_time
        return out

    def order(self) -> np.ndarray:
        """Op indices sorted by total time, longest first."""
        return np.argsort(-self.total_op_time, kind="stable")

    # -- group-bys ---------------------------------------------------------
    def by(self, key: str = "group", depth: int | None = None) -> list[GroupRow]:
        """Group ops by 'group' (module path, cut to ``depth`` parts), 'module_type', 'kind' or 'name'.

        Rows sorted by time, longest first.
        """
        w = self.workload
        if key not in ("group", "module_type", "kind", "name", "precision"):
            raise RooflineError(f"cannot group by {key!r}; use group, module_type, kind or name")
        table = w.tables[key]
        labels = [t if t else "(top level)" if key == "group" else t or "(none)" for t in table]
        if key == "group" and depth is not None:
            labels = [".".join(t.split(".")[:depth]) if t else "(top level)" for t in table]
        uniq, remap = np.unique(np.asarray(labels, dtype=object), return_inverse=True)
        codes = remap[w.columns[key]]
        n = len(uniq)
        count = w.columns["count"]

        def total(values: np.ndarray) -> np.ndarray:
            return np.bincount(codes, weights=values, minlength=n)

        flops, nbytes = total(w.columns["flops"] * count), total(w.bytes * count)
        time = total(self.total_op_time)
        ct, mt = total(self.compute_time * count), total(self.memory_time * count)
        measured = w.columns["measured_seconds"] * count
        has = np.bincount(codes, weights=np.isfinite(measured).astype(float), minlength=n) > 0
        meas = np.where(has, total(np.nan_to_num(measured)), np.nan)
        ops = np.bincount(codes, minlength=n)
        tt = self.total_time or 1.0
        kinds = ("memory", "compute", "interconnect", "latency")
        by_bound = np.stack([total(np.where(self.bound == b, self.total_op_time, 0.0)) for b in kinds])
        binding = [kinds[int(k)] for k in by_bound.argmax(axis=0)]
        rows = [GroupRow(str(uniq[i]), int(ops[i]), float(flops[i]), float(nbytes[i]), float(time[i]),
                         float(time[i] / tt), float(ct[i]), float(mt[i]), float(meas[i]), binding[i])
                for i in range(n) if ops[i]]
        return sorted(rows, key=lambda r: -r.time)

    # -- words -------------------------------------------------------------
    def verdict(self, i: int) -> str:
        """One line on op ``i``: its bound and where it sits against the ridge; flags fallbacks and points above the roof."""
        b = self.bound[i]
        ai, ridge = self.intensity[i], self.ridge_intensity[i]
        if b == "compute":
            text = f"compute-bound on {self.ceiling_label(i)} (AI {ai:.3g} >= ridge {ridge:.3g})"
        elif b == "interconnect":
            text = "interconnect-bound (device-to-device transfer)"
        elif b == "latency":
            from roofline.core.units import format_seconds

            lat = float(self.latency_time[i]) if self.latency_time is not None else 0.0
            text = (f"latency-bound (steps x per-hop latency: {format_seconds(lat)} of "
                    f"{format_seconds(float(self.memory_time[i]))})")
        elif self.workload.columns["flops"][i] == 0:
            text = f"data movement only ({self.level_label(i)})"
        else:
            text = f"memory-bound on {self.level_label(i)} (AI {ai:.3g} < ridge {ridge:.3g})"
        return text + "".join(f" [{flag}]" for flag in self.verdict_flags(i))

    def verdict_flags(self, i: int) -> list[str]:
        """What the reader of op ``i``'s verdict must also know: a ceiling fallback, a measured point judged
        against a cache level, a point above the roof."""
        flags = []
        if (fb := self.fallback(i)):
            flags.append(f"ceiling fallback {fb}")
        if self.judged_at_cache[i]:
            flags.append(f"measured point judged vs {self.judged_label(i)}: its working set fits")
        if self.above_roof[i]:
            flags.append(ABOVE_ROOF)
        return flags

    def short_verdict(self, i: int) -> str:
        """Op ``i``'s verdict as one short phrase for a table ('memory-bound, HBM'); its flags are
        :meth:`verdict_flags`, the ridge comparison is the table's FLOP/B column."""
        b = self.bound[i]
        if b == "compute":
            return f"compute-bound, {self.ceiling_label(i)}"
        if b in ("interconnect", "latency"):
            return f"{b}-bound"
        if self.workload.columns["flops"][i] == 0:
            return f"data movement, {self.level_label(i)}"
        return f"memory-bound, {self.level_label(i)}"

    # -- (de)serialisation -------------------------------------------------
    def to_dict(self, lazy: bool = False) -> dict[str, Any]:
        """Inputs (device, workload) and the per-op results; loading re-analyses identically.  ``lazy``: long
        numeric columns as :class:`~roofline.work.workload_columns.JsonNumbers`, the JSON renderer's route
        (:func:`roofline.render.dumps_bytes` writes them without a Python float per value)."""

        def clean(values: Any) -> Any:
            return finite_or_null(values, lazy)

        ceilings, fallbacks = [c.label for c in self.ceilings], self.fallbacks
        at = self.ceiling_index.tolist()

        return {
            "schema": ANALYSIS_SCHEMA,
            "device": self.device.to_dict(),
            "workload": self.workload.to_dict(lazy),
            "options": {"above_roof_tolerance": self.above_roof_tolerance if np.ndim(self.above_roof_tolerance) == 0
                        else clean(self.above_roof_tolerance), "forecast": self.forecast is not None,
                        "tf32": self.tf32},
            "totals": {"time": self.total_time, "flops": self.total_flops, "bytes": self.total_bytes,
                       "measured_seconds": json_number(self.total_measured_seconds),
                       "time_share_by_bound": self.time_share_by_bound()},
            "ops": {"intensity": clean(self.intensity), "peak_flops": clean(self.peak_flops),
                    "bandwidth": clean(self.bandwidth), "attainable_flops": clean(self.attainable_flops),
                    "time": clean(self.time), "total_time": clean(self.total_op_time), "share": clean(self.share),
                    "bound": self.bound.tolist(),
                    "ceiling": [ceilings[k] for k in at], "fallback": [fallbacks[k] for k in at],
                    "judged_level": self.judged_level.tolist(),
                    "judged_attainable_flops": clean(self.judged_attainable_flops),
                    "efficiency": clean(self.efficiency), "above_roof": self.above_roof.tolist()},
            **({} if self.forecast is None else {"forecast": {
                "framework": self.forecast.framework, "overhead": self.forecast.overhead,
                "total_time": self.forecast.total_time, "parts": self.forecast.parts(),
                "time": clean(self.forecast.time), "efficiency": clean(self.forecast.efficiency),
                "verdict": self.forecast.verdict.tolist(), "notes": list(self.forecast.notes)}}),
            "warnings": list(self.warnings),
        }

    def save(self, path: str | Path) -> None:
        from roofline.core.fileio import write_text_atomic

        write_text_atomic(path, json.dumps(self.to_dict()) + "\n")

    @classmethod
    def from_dict(cls, d: Any, *, where: str = "analysis") -> Analysis:
        from roofline.core.fileio import json_type, shown

        if not isinstance(d, dict):
            raise RooflineError(f"expected a JSON object, got {json_type(d)}", where=where)
        if d.get("schema") not in ANALYSIS_SCHEMAS_READ:
            raise RooflineError(f"schema: expected {ANALYSIS_SCHEMA!r} (or an older "
                                f"{', '.join(ANALYSIS_SCHEMAS_READ[:-1])}), got {shown(d.get('schema'))}", where=where)
        for key in ("device", "workload"):
            if key not in d:
                raise RooflineError(f"missing field {key!r}", where=where)
        device = Device.from_dict(d["device"], where=f"{where} device")
        workload = Workload.from_dict(d["workload"], where=f"{where} workload")
        return analyze(workload, device, **_options_from_json(d.get("options"), len(workload), where))

    @classmethod
    def load(cls, path: str | Path) -> Analysis:
        from roofline.core.fileio import read_json
        from roofline.core.text import shown_path

        return cls.from_dict(read_json(path), where=shown_path(path))

    def _repr_html_(self) -> str | None:  # Jupyter: summary, chart (inline SVG) and the top ops
        show = FORMATTERS.get("html")
        return show(self) if show is not None else None

    def __repr__(self) -> str:
        """One line: what on what, the roofline time and the binding roof (:func:`roofline.words.summary.binding_roof`).

        >>> from roofline import Device, Op, Workload
        >>> analyze(Workload.from_ops([Op("app", flops=8e8, bytes_read=4e9)], title="seed app"),
        ...         Device.simple("seed", "100 GFLOP/s", "10 GB/s"))
        <Analysis of 'seed app' on 'seed': 400 ms, memory-bound on DRAM (100% of the time)>
        """
        show = FORMATTERS.get("repr")
        return show(self) if show is not None else f"<Analysis of {len(self.workload)} ops on {self.device.name!r}>"

    def __str__(self) -> str:
        """What ``print(a)`` shows: the summary's headline lines (:mod:`roofline.words.summary`), then the top 5 ops."""
        show = FORMATTERS.get("str")
        return show(self) if show is not None else repr(self)


def _options_from_json(raw: Any, n: int, where: str) -> dict[str, Any]:
    """The ``options`` of a saved analysis, checked: ``above_roof_tolerance``, one number >= 0
    or ``n`` of them, and ``forecast``, true or false (null or absent: the default)."""
    from roofline.core.fileio import as_bool, as_list, as_number, as_object, shown

    if raw is None:
        return {}
    options = as_object(raw, "options", where)
    unknown = [k for k in options if k not in ("above_roof_tolerance", "forecast", "tf32")]
    if unknown:
        raise RooflineError(f"options: unknown field {shown(unknown[0])}; known: above_roof_tolerance, forecast, "
                            "tf32", where=where)
    out: dict[str, Any] = {}
    if options.get("forecast") is not None:
        out["forecast"] = as_bool(options["forecast"], "options.forecast", where)
    if options.get("tf32") is not None:
        if options["tf32"] not in TF32_KINDS:
            raise RooflineError(f"options.tf32: {shown(options['tf32'])} is not one of {', '.join(TF32_KINDS)}",
                                where=where)
        out["tf32"] = options["tf32"]
    tol = options.get("above_roof_tolerance")
    if tol is None:
        return out
    field = "options.above_roof_tolerance"
    if isinstance(tol, list):
        values = as_list(tol, field, where)
        if len(values) != n:
            raise RooflineError(f"{field}: expected one number or {n} (one per op), got a list of {len(values)}",
                                where=where)
        return {**out, "above_roof_tolerance": np.array([as_number(v, f"{field}[{i}]", where, minimum=0.0)
                                                         for i, v in enumerate(values)], dtype=float)}
    return {**out, "above_roof_tolerance": as_number(tol, field, where, minimum=0.0)}


#: how a device name becomes a Device (``roofline.hardware.device``, registered by the package: the catalog, a file or
#: 'local'); analysis sits below the bench and catalog layers, so the package hands the function down
DEVICE_BY_NAME: list[Any] = []


def _arguments(workload: Any, device: Any, tolerance: Any, forecast: Any) -> tuple[Workload, Device]:
    """The API boundary (:mod:`roofline.core.arguments`): a Workload, a Device or a device name, a tolerance of
    finite numbers >= 0, forecast True/False."""
    from roofline.core import arguments as arg

    arg.need(workload, Workload, "analyze", "workload", "a Workload")
    if isinstance(device, str) and DEVICE_BY_NAME:
        device = DEVICE_BY_NAME[0](device)
    arg.need(device, Device, "analyze", "device", "a Device or a device name (str)")
    if isinstance(tolerance, (str, bytes)) or tolerance is None:
        raise arg.type_error("analyze", "above_roof_tolerance", "a finite number >= 0, or one per op", tolerance)
    if np.ndim(tolerance) == 0:
        arg.number(tolerance, "analyze", "above_roof_tolerance")
    else:
        try:
            t = np.asarray(tolerance, dtype=float)
        except (TypeError, ValueError):
            raise arg.type_error("analyze", "above_roof_tolerance", "finite numbers >= 0", tolerance) from None
        if not (np.isfinite(t).all() and (t >= 0).all()):
            raise arg.value_error("analyze", "above_roof_tolerance", "finite numbers >= 0", tolerance)
    arg.boolean(forecast, "analyze", "forecast")
    return workload, device


def analyze(workload: Workload, device: Device | str, *,
            above_roof_tolerance: float | Sequence[float] | np.ndarray = 0.0, forecast: bool = False,
            tf32: str = "default") -> Analysis:
    """Place every op of ``workload`` under the roofs of ``device``.

    ``above_roof_tolerance``: a measured op is flagged above the roof when its
    efficiency exceeds 1 + tolerance (e.g. 0.1 for a measurement spread of 10%);
    one number for every op, or one per op (each op's own timing spread, as
    :func:`roofline.measurement.measure` gives).

    Measured ops are judged cache-aware (see the module docs): efficiency and
    the above-roof flag use the roof of the fastest level whose capacity holds
    the op's working set; ``time`` and ``bound`` do not change.

    ``tf32`` ('default', 'on', 'off'): on a GPU with a tf32 matrix roof, which fp32 matrix-unit ops run on
    it (:data:`TF32_KINDS`; 'default' is PyTorch's: convolutions yes, matmuls no); an assumption line
    (``analysis.assumptions``) states the rule whenever it decided an op.

    ``forecast=True`` adds ``analysis.forecast`` (:mod:`roofline.engine.forecast`): a second time per
    op from achievable roofs, the device's calibration and its overhead floor.  The bound is
    the same either way.

    >>> from roofline import Device, Op, Workload, analyze
    >>> dev = Device.simple("seed", "100 GFLOP/s", "10 GB/s")
    >>> a = analyze(Workload.from_ops([Op("app", flops=8e8, bytes_read=4e9)]), dev)
    >>> float(a.time[0])  # max(0.8e9 / 1e11, 4e9 / 1e10) seconds
    0.4
    """
    w, device = _arguments(workload, device, above_roof_tolerance, forecast)
    n = len(w)
    tf32_covered, tf32_mask = _tf32_ops(w, device, tf32)
    ceilings, ceiling_index, fallbacks = _compute_roofs(w, device, tf32_mask)
    peak = np.asarray([c.flops for c in ceilings])[ceiling_index]

    warnings: list[str] = []
    t = op_times(w, device, peak, warnings)
    levels, level_index, bandwidth, cache_time, time = t.levels, t.level_index, t.bandwidth, t.cache_time, t.time
    flops, nbytes = w.columns["flops"], w.bytes
    judged_level_index, judged_time = _judge(w, device, levels, level_index, nbytes, peak, cache_time, time)
    tolerance = _tolerance_of(above_roof_tolerance, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        intensity = np.where(nbytes > 0, flops / np.where(nbytes > 0, nbytes, 1.0), np.where(flops > 0, np.inf, 0.0))
    used_fallbacks = sorted({f for f in fallbacks if f})
    for f in used_fallbacks:
        warnings.append(f"device {device.name!r} lacks a ceiling; fell back {f}")
    a = Analysis(w, device, ceilings, ceiling_index, fallbacks, levels, level_index, peak, bandwidth,
                 intensity, t.compute_time, t.memory_time, time, time * w.columns["count"], judged_level_index,
                 judged_time, tuple(warnings), tolerance, latency_time=t.latency_time, tf32=tf32,
                 tf32_ops=tf32_covered)
    k = int(a.above_roof.sum()) if w.has_measurements else 0
    if k:
        a = replace(a, warnings=(*a.warnings, f"{k} measured op(s) {ABOVE_ROOF}"))
    if forecast:
        a = replace(a, forecast=compute_forecast(a))
    assert n == len(time)
    return a


def with_forecast(analysis: Analysis, calibration: Calibration | None = None, *, where: str = "calibration"
                  ) -> Analysis:
    """``analysis`` with its forecast, after putting ``calibration`` on its device (checked to be for that
    device: one line otherwise).  The bound does not change."""
    a = analysis
    if calibration is not None:
        dev = a.device
        calibration.check_applies(dev.name, dev.bench.machine if dev.bench else "", where)
        a = replace(a, device=replace(dev, calibration=calibration))
    return replace(a, forecast=compute_forecast(a))


def _tf32_ops(w: Workload, device: Device, tf32: str) -> tuple[int, np.ndarray | None]:
    """(how many ops the TF32 rule decides: fp32 convolutions, matmuls and attention on the matrix unit of a
    GPU with a tf32 matrix roof; the mask of those ``tf32`` puts on that roof, :data:`TF32_KINDS`, or None)."""
    if tf32 not in TF32_KINDS:
        from roofline.core.fileio import shown

        raise RooflineError(f"tf32: {shown(tf32)} is not one of {', '.join(TF32_KINDS)}")
    t = w.tables
    if device.kind != "gpu" or device.ceiling("matrix", "tf32") is None or "fp32" not in t["precision"] \
            or "matrix" not in t["unit"]:
        return 0, None
    fp32 = (w.columns["precision"] == t["precision"].index("fp32")) & (w.columns["unit"] == t["unit"].index("matrix"))
    covered = fp32 & np.isin(w.columns["kind"], [t["kind"].index(k) for k in TF32_KINDS["on"] if k in t["kind"]])
    promoted = covered & np.isin(w.columns["kind"], [t["kind"].index(k) for k in TF32_KINDS[tf32] if k in t["kind"]])
    return int(covered.sum()), promoted if promoted.any() else None


_TF32_CODE = 999  # a precision code no table reaches (there are 8 precisions): 'fp32 op on the tf32 roof'


def _compute_roofs(w: Workload, device: Device,
                   tf32_mask: np.ndarray | None = None) -> tuple[list[ComputeCeiling], np.ndarray, list[str]]:
    """(the compute roof of each distinct (unit, precision) pair, each op's index into them, each pair's
    fallback: '' when the device has the roof asked for).  Ops in ``tf32_mask`` (fp32 ops the TF32 rule puts
    on the tf32 matrix roof, :func:`_tf32_ops`) ask for tf32."""
    precision_codes = w.columns["precision"].astype(np.int64)
    if tf32_mask is not None and tf32_mask.any():
        precision_codes = np.where(tf32_mask, _TF32_CODE, precision_codes)
    pair_codes = w.columns["unit"].astype(np.int64) * 1000 + precision_codes
    pairs, inverse = np.unique(pair_codes, return_inverse=True)
    ceilings: list[ComputeCeiling] = []
    fallbacks: list[str] = []
    for code in pairs:
        unit = w.tables["unit"][code // 1000]
        precision = "tf32" if code % 1000 == _TF32_CODE else w.tables["precision"][code % 1000]
        choice = device.choose_compute(unit, precision)
        ceilings.append(choice.ceiling)
        fallbacks.append(choice.fallback)
    return ceilings, inverse.reshape(-1).astype(np.int32), fallbacks


def _tolerance_of(value: float | Sequence[float] | np.ndarray, n: int) -> float | np.ndarray:
    """A scalar tolerance as a float, a per-op one as a float array of length ``n``; both >= 0."""
    t = np.asarray(value, dtype=float)  # None (JSON null) becomes nan and is refused below
    if t.ndim == 0:
        out: float | np.ndarray = float(t)
    elif t.shape == (n,):
        out = t
    else:
        raise RooflineError(f"above_roof_tolerance: expected one number or {n} (one per op), got shape {t.shape}")
    if not np.all(t >= 0):  # also catches nan
        raise RooflineError("above_roof_tolerance: values must be numbers >= 0")
    return out


def _judge(w: Workload, device: Device, levels: list[MemoryCeiling], level_index: np.ndarray, nbytes: np.ndarray,
           peak: np.ndarray, cache_time: np.ndarray | None,
           time: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per op: the level its measured point is judged at (index into ``levels``) and the roofline time there.

    Only measured ops on main memory move: to the fastest level faster than main
    memory whose stated capacity holds the op's working set (bytes read +
    written by one run).  Main memory holds everything (a capacity of None is
    unbounded); a cache level without a capacity is never chosen.  The time at
    the judging level is max(FLOPs / peak, working set / its bandwidth, the
    per-level cache terms), by :func:`roofline_times`.  Unmeasured ops return ``level_index`` and ``time``
    themselves, so an analysis without measurements pays one isfinite pass.
    """
    measured = np.isfinite(w.columns["measured_seconds"])
    main = device.main_memory
    caches = device.judging_caches()  # slowest first: a faster level that fits overrides
    if not caches or not measured.any() or main not in levels:
        return level_index, time
    candidates = np.flatnonzero(measured & (level_index == levels.index(main)))
    ws = nbytes[candidates]
    choice = np.full(len(candidates), -1, dtype=np.int32)
    for k, m in enumerate(caches):
        choice[ws <= m.capacity] = k
    fits = choice >= 0
    if not fits.any():
        return level_index, time
    idx, choice = candidates[fits], choice[fits]
    for m in caches:
        if m not in levels and np.any(choice == caches.index(m)):
            levels.append(m)
    level_of_choice = np.asarray([levels.index(m) if m in levels else -1 for m in caches], dtype=level_index.dtype)
    bw = np.asarray([m.bandwidth for m in caches])[choice]
    judged_level_index = level_index.copy()
    judged_level_index[idx] = level_of_choice[choice]
    judged_time = time.copy()
    judged_time[idx] = roofline_times(w.columns["flops"][idx], nbytes[idx], peak[idx], bw,
                                      None if cache_time is None else cache_time[idx])[2]
    return judged_level_index, judged_time
