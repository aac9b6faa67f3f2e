"""Devices: compute and memory ceilings, each with its provenance.

A :class:`Device` is immutable.  Compute ceilings are keyed by
``(unit, precision)``; memory ceilings by level (``HBM``/``DRAM`` for main
memory, then ``L3``, ``L2``, ``L1``).  Every number carries a
:class:`Provenance`: a datasheet, a derivation written out, or a measurement
with its method, date, repeats and spread.  Dense figures only: a sparse
figure may appear in a note.

>>> from roofline import Device
>>> d = Device.simple("seed", peak="100 GFLOP/s", bandwidth="10 GB/s")
>>> d.ridge_intensity()
10.0
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline.errors import RooflineError
from roofline.fileio import as_bool, as_int, as_list, as_number, as_object, as_str, as_str_list, json_type, shown
from roofline.precision import PRECISIONS
from roofline.stats import relative_spread
from roofline.units import parse_quantity

if TYPE_CHECKING:
    from roofline.calibration import Calibration

DEVICE_SCHEMA = "roofline.device/3"
#: Older versions that still load (migrated on load, :func:`migrate`).
DEVICE_SCHEMAS_READ = ("roofline.device/1", "roofline.device/2", DEVICE_SCHEMA)
UNITS = ("vector", "matrix")
KINDS = ("gpu", "cpu", "tpu", "npu")
MAIN_MEMORY = ("HBM", "DRAM")
PROVENANCE_KINDS = ("datasheet", "derived", "measured", "user")

#: When a device lacks the ceiling an op asks for, precisions are tried in this
#: order (the op's own first).  Each step is recorded on the op as a fallback.
PRECISION_FALLBACK: dict[str, tuple[str, ...]] = {
    "fp64": ("fp64", "fp32"),
    "fp32": ("fp32",),
    "tf32": ("tf32", "fp32"),
    "bf16": ("bf16", "fp16", "fp32"),
    "fp16": ("fp16", "bf16", "fp32"),
    "fp8": ("fp8", "fp16", "bf16", "fp32"),
    "int8": ("int8", "fp8", "fp16", "bf16", "fp32"),
    "int4": ("int4", "int8", "fp8", "fp16", "bf16", "fp32"),
}


@dataclass(frozen=True)
class MethodFigure:
    """One measuring method's figure for a ceiling; a measured ceiling is the best of its methods.

    ``statistic`` says which number ``value`` is (e.g. "best of 11 samples"); ``spread``
    is (low, high) of that method's samples in the ceiling's units.
    """

    method: str
    value: float
    spread: tuple[float, float] | None = None
    statistic: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": self.method, "value": float(self.value)}
        if self.spread is not None:
            out["spread"] = [float(self.spread[0]), float(self.spread[1])]
        if self.statistic:
            out["statistic"] = self.statistic
        return out

    @classmethod
    def from_dict(cls, d: Any, where: str, *, field_name: str = "provenance.methods") -> MethodFigure:
        f = field_name
        if not isinstance(d, Mapping) or "method" not in d or "value" not in d:
            raise RooflineError(f"{f}: each entry needs 'method' and 'value', got {shown(d)}", where=where)
        value = _number(d["value"], f"{f}.value", where)
        return cls(as_str(d["method"], f"{f}.method", where), value, _pair(d.get("spread"), f"{f}.spread", where),
                   as_str(_get(d, "statistic", ""), f"{f}.statistic", where))


@dataclass(frozen=True)
class Provenance:
    """Where a number came from.

    ``kind`` is datasheet, derived (the derivation in ``note``), measured
    (``method``, ``date``, ``repeats``, ``spread`` = (low, high) in the
    ceiling's units; ``methods``: every method's figure, the ceiling being
    the best of them) or user.
    """

    kind: str = "user"
    source: str = ""
    url: str = ""
    note: str = ""
    dense: bool = True
    method: str = ""
    date: str = ""
    repeats: int = 0
    spread: tuple[float, float] | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    methods: tuple[MethodFigure, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "source": self.source}
        for key in ("url", "note", "method", "date"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if not self.dense:
            out["dense"] = False
        if self.repeats:
            out["repeats"] = self.repeats
        if self.spread is not None:
            out["spread"] = [float(self.spread[0]), float(self.spread[1])]
        if self.details:
            out["details"] = dict(self.details)
        if self.methods:
            out["methods"] = [m.to_dict() for m in self.methods]
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str, *, field_name: str = "provenance") -> Provenance:
        """Validate and build; ``field_name`` is how messages name this provenance (e.g. 'compute[0].provenance')."""
        f = field_name
        as_object(d, f, where)
        kind = as_str(_get(d, "kind", "datasheet"), f"{f}.kind", where)
        if kind not in PROVENANCE_KINDS:
            raise RooflineError(f"{f}.kind: {shown(kind)} is not one of {', '.join(PROVENANCE_KINDS)}", where=where)
        spread = _pair(d.get("spread"), f"{f}.spread", where)
        methods = as_list(_get(d, "methods", []), f"{f}.methods", where)
        text = {k: as_str(_get(d, k, ""), f"{f}.{k}", where) for k in ("source", "url", "note", "method", "date")}
        return cls(
            kind=kind,
            **text,
            dense=as_bool(_get(d, "dense", True), f"{f}.dense", where),
            repeats=as_int(_get(d, "repeats", 0), f"{f}.repeats", where),
            spread=spread,
            details=dict(as_object(_get(d, "details", {}), f"{f}.details", where)),
            methods=tuple(MethodFigure.from_dict(m, where, field_name=f"{f}.methods[{i}]") for i, m in enumerate(methods)),
        )

    def describe(self) -> str:
        """One line: 'datasheet: NVIDIA H100 datasheet (https://...)'."""
        text = f"{self.kind}: {self.source}" if self.source else self.kind
        if self.url:
            text += f" ({self.url})"
        if self.kind == "measured":
            bits = [b for b in (self.method, self.date) if b]
            if self.repeats:
                bits.append(f"{self.repeats} repeats")
            if self.spread:
                bits.append(f"spread {self.spread[0]:.4g}..{self.spread[1]:.4g}")
            if bits:
                text += " [" + ", ".join(bits) + "]"
        if self.note:
            text += f" — {self.note}"
        return text


@dataclass(frozen=True)
class ComputeCeiling:
    """A compute roof: ``flops`` FLOP/s (dense) on ``unit`` at ``precision``."""

    unit: str
    precision: str
    flops: float
    provenance: Provenance = field(default_factory=Provenance)

    @property
    def key(self) -> tuple[str, str]:
        return (self.unit, self.precision)

    @property
    def label(self) -> str:
        return f"{self.precision} {self.unit}"


@dataclass(frozen=True)
class MemoryCeiling:
    """A memory roof: ``bandwidth`` B/s from ``level``, holding ``capacity`` B."""

    level: str
    bandwidth: float
    capacity: float | None = None
    provenance: Provenance = field(default_factory=Provenance)


@dataclass(frozen=True)
class Interconnect:
    """Device-to-device link; ``bandwidth`` B/s per direction."""

    name: str
    bandwidth: float
    provenance: Provenance = field(default_factory=Provenance)


#: Per-op overhead floors a device may carry: framework dispatch of a tiny op (CPU) and kernel launch (GPU).
FRAMEWORKS = ("torch-eager", "numpy", "cuda-launch", "cuda-graph")


@dataclass(frozen=True)
class OverheadFloor:
    """The fixed cost of one op under ``framework`` (seconds), however small the op: dispatch of a tiny op
    (``torch-eager``, ``numpy``), a kernel launch (``cuda-launch``), a kernel replayed in a CUDA graph
    (``cuda-graph``).  Measured (``roofline bench``, ``roofline calibrate``) or cited."""

    framework: str
    seconds: float
    provenance: Provenance = field(default_factory=Provenance)


@dataclass(frozen=True)
class SpecRoof:
    """A theoretical compute roof: cores x clock x FMA pipes x lanes x 2, with its derivation written out."""

    unit: str
    precision: str
    flops: float
    derivation: str


@dataclass(frozen=True)
class AuditResult:
    """One real kernel timed against the roofs by ``roofline bench --audit``.

    ``flops`` and ``bytes`` are per call; ``seconds`` the median call time and ``spread``
    its (fast, slow) quartiles; ``efficiency`` = roofline time / ``seconds`` against the roofs
    as they were before the audit (above 1 beyond the spread: a wrong ceiling); ``roof`` the
    compute ceiling it was judged by, ``level`` the memory level its working set fits;
    ``raised`` what the audit raised because of it ("" when nothing).
    """

    kernel: str
    unit: str
    precision: str
    roof: str
    level: str
    flops: float
    bytes: float
    seconds: float
    spread: tuple[float, float]
    efficiency: float
    binding: str  # compute | memory
    raised: str = ""

    @property
    def above_roof(self) -> bool:
        """Faster than the roofs allow, beyond the kernel's own spread."""
        return self.efficiency > 1.0 + self.noise

    @property
    def noise(self) -> float:
        """The kernel's own relative spread: (slow - fast) quartile over the median time."""
        return relative_spread(self.spread[0], self.spread[1], self.seconds) if self.seconds > 0 else 0.0


#: Version of what ``roofline bench`` measures; a cached device from an older bench is re-measured.
BENCH_VERSION = 3  # 3: a CPU's fp64/fp32 matrix roof is at least its FMA peak


@dataclass(frozen=True)
class SweepCurve:
    """One kernel's bandwidth (B/s, STREAM byte counting) at every working set of the sweep, on ``threads``."""

    kernel: str
    threads: int
    median: tuple[float, ...]
    spread: tuple[tuple[float, float], ...]  # (q1, q3) per working set


@dataclass(frozen=True)
class Sweep:
    """Bandwidth vs working set: every kernel, on all threads (and on one, when measured)."""

    working_set_bytes: tuple[float, ...]
    curves: tuple[SweepCurve, ...]
    bytes_counting: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"working_set_bytes": list(self.working_set_bytes), "bytes_counting": self.bytes_counting,
                "curves": [{"kernel": c.kernel, "threads": c.threads, "median": list(c.median),
                            "spread": [list(q) for q in c.spread]} for c in self.curves]}

    @classmethod
    def from_dict(cls, d: Any, f: str, where: str) -> Sweep:
        as_object(d, f, where)
        sizes = tuple(_numbers(d.get("working_set_bytes"), f"{f}.working_set_bytes", where))
        curves = []
        for i, c in enumerate(_list(d.get("curves", []), f"{f}.curves", where)):
            g = f"{f}.curves[{i}]"
            _need(c, ("kernel", "threads", "median"), g, where)
            median = tuple(_numbers(c["median"], f"{g}.median", where, len(sizes)))
            spread = tuple(p for j, q in enumerate(as_list(_get(c, "spread", []), f"{g}.spread", where))
                           if (p := _pair(q, f"{g}.spread[{j}]", where)) is not None)
            curves.append(SweepCurve(as_str(c["kernel"], f"{g}.kernel", where),
                                     as_int(c["threads"], f"{g}.threads", where, minimum=1), median, spread))
        return cls(sizes, tuple(curves), as_str(_get(d, "bytes_counting", ""), f"{f}.bytes_counting", where))


@dataclass(frozen=True)
class ErtCurve:
    """The ERT curve: FLOP/s of an in-place kernel doing 1..N FLOPs per element over a DRAM-sized array,
    against the model min(fp64 vector roof, intensity x DRAM roof) (``model_flops``, from the finished roofs)."""

    flops_per_element: tuple[float, ...]
    intensity: tuple[float, ...]
    flops: tuple[float, ...]  # median FLOP/s per point
    spread: tuple[tuple[float, float], ...]
    working_set_bytes: float
    threads: int
    model_flops: tuple[float, ...] = ()
    note: str = ""

    @property
    def deviation(self) -> tuple[float, ...]:
        """Measured / model - 1 per point (empty before the model is known)."""
        return tuple(f / m - 1.0 for f, m in zip(self.flops, self.model_flops, strict=True)) if self.model_flops else ()

    @property
    def worst(self) -> int:
        """The point deviating most from the model (either way)."""
        dev = self.deviation
        return max(range(len(dev)), key=lambda i: abs(dev[i])) if dev else 0

    def to_dict(self) -> dict[str, Any]:
        return {"flops_per_element": list(self.flops_per_element), "intensity": list(self.intensity),
                "flops": list(self.flops), "spread": [list(q) for q in self.spread],
                "working_set_bytes": self.working_set_bytes, "threads": self.threads,
                "model_flops": list(self.model_flops), "note": self.note}

    @classmethod
    def from_dict(cls, d: Any, f: str, where: str) -> ErtCurve:
        as_object(d, f, where)
        _need(d, ("intensity", "flops", "working_set_bytes"), f, where)
        intensity = tuple(_numbers(d["intensity"], f"{f}.intensity", where))
        n = len(intensity)
        model = _get(d, "model_flops", [])
        return cls(tuple(_numbers(_get(d, "flops_per_element", [0] * n), f"{f}.flops_per_element", where, n)),
                   intensity, tuple(_numbers(d["flops"], f"{f}.flops", where, n)),
                   tuple(p for j, q in enumerate(as_list(_get(d, "spread", []), f"{f}.spread", where))
                         if (p := _pair(q, f"{f}.spread[{j}]", where)) is not None),
                   _number(d["working_set_bytes"], f"{f}.working_set_bytes", where),
                   as_int(_get(d, "threads", 1), f"{f}.threads", where, minimum=1),
                   tuple(_numbers(model, f"{f}.model_flops", where, n)) if model else (),
                   as_str(_get(d, "note", ""), f"{f}.note", where))


@dataclass(frozen=True)
class CacheInfo:
    """A cache level as the OS reports it: ``size`` per cache, ``instances`` of it, ``capacity`` the
    bench's threads can use (size x min(threads, instances))."""

    level: str
    size: float
    instances: int
    capacity: float


@dataclass(frozen=True)
class BenchFacts:
    """What ``roofline bench`` knows about the machine it measured (typed, part of the device format).

    ``machine``: a fingerprint (CPU model, logical CPUs, ISA flags) that a cached measurement
    must match; ``native``: precisions with native arithmetic on this machine (a bf16/fp16 roof
    is published only for those); ``spec``: theoretical roofs; ``audit``: the roof audit;
    ``threads`` measured on; ``sweep``: bandwidth vs working set; ``ert``: the ERT curve;
    ``caches``: the OS's cache sizes.
    """

    version: int
    machine: str
    isa: tuple[str, ...] = ()
    native: tuple[str, ...] = ()
    spec: tuple[SpecRoof, ...] = ()
    audit: tuple[AuditResult, ...] = ()
    threads: int = 0
    sweep: Sweep | None = None
    ert: ErtCurve | None = None
    caches: tuple[CacheInfo, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "machine": self.machine, "isa": list(self.isa), "native": list(self.native),
                "spec": [{"unit": r.unit, "precision": r.precision, "flops": float(r.flops), "derivation": r.derivation}
                         for r in self.spec],
                "audit": [{"kernel": a.kernel, "unit": a.unit, "precision": a.precision, "roof": a.roof,
                           "level": a.level, "flops": float(a.flops), "bytes": float(a.bytes),
                           "seconds": float(a.seconds), "spread": [float(a.spread[0]), float(a.spread[1])],
                           "efficiency": float(a.efficiency), "binding": a.binding, "raised": a.raised}
                          for a in self.audit],
                "threads": self.threads, "sweep": None if self.sweep is None else self.sweep.to_dict(),
                "ert": None if self.ert is None else self.ert.to_dict(),
                "caches": [{"level": c.level, "size": c.size, "instances": c.instances, "capacity": c.capacity}
                           for c in self.caches]}

    @classmethod
    def from_dict(cls, d: Any, where: str) -> BenchFacts:
        as_object(d, "bench", where)
        version = as_int(d.get("version"), "bench.version", where, minimum=1)
        spec, audit = [], []
        for i, r in enumerate(_list(d.get("spec", []), "bench.spec", where)):
            _need(r, ("unit", "precision", "flops"), f"bench.spec[{i}]", where)
            spec.append(SpecRoof(as_str(r["unit"], f"bench.spec[{i}].unit", where),
                                 as_str(r["precision"], f"bench.spec[{i}].precision", where),
                                 _number(r["flops"], f"bench.spec[{i}].flops", where),
                                 as_str(_get(r, "derivation", ""), f"bench.spec[{i}].derivation", where)))
        for i, a in enumerate(_list(d.get("audit", []), "bench.audit", where)):
            f = f"bench.audit[{i}]"
            _need(a, ("kernel", "seconds", "spread", "efficiency"), f, where)
            spread = _pair(a["spread"], f"{f}.spread", where)
            assert spread is not None
            text = {k: as_str(_get(a, k, ""), f"{f}.{k}", where)
                    for k in ("kernel", "unit", "precision", "roof", "level", "binding", "raised")}
            audit.append(AuditResult(
                text["kernel"], text["unit"], text["precision"], text["roof"], text["level"],
                _number(_get(a, "flops", 0.0), f"{f}.flops", where), _number(_get(a, "bytes", 0.0), f"{f}.bytes", where),
                _number(a["seconds"], f"{f}.seconds", where), spread, _number(a["efficiency"], f"{f}.efficiency", where),
                text["binding"], text["raised"]))
        caches = []
        for i, c in enumerate(_list(_get(d, "caches", []), "bench.caches", where)):
            f = f"bench.caches[{i}]"
            _need(c, ("level", "size", "capacity"), f, where)
            caches.append(CacheInfo(as_str(c["level"], f"{f}.level", where), _number(c["size"], f"{f}.size", where),
                                    as_int(_get(c, "instances", 1), f"{f}.instances", where, minimum=1),
                                    _number(c["capacity"], f"{f}.capacity", where)))
        return cls(version=version, machine=as_str(_get(d, "machine", ""), "bench.machine", where),
                   isa=tuple(as_str_list(_get(d, "isa", []), "bench.isa", where)),
                   native=tuple(as_str_list(_get(d, "native", []), "bench.native", where)),
                   spec=tuple(spec), audit=tuple(audit),
                   threads=as_int(_get(d, "threads", 0), "bench.threads", where),
                   sweep=None if d.get("sweep") is None else Sweep.from_dict(d["sweep"], "bench.sweep", where),
                   ert=None if d.get("ert") is None else ErtCurve.from_dict(d["ert"], "bench.ert", where),
                   caches=tuple(caches))


@dataclass(frozen=True)
class ComputeChoice:
    """The ceiling chosen for an op, and what was asked for when it differs."""

    ceiling: ComputeCeiling
    asked: tuple[str, str]

    @property
    def fallback(self) -> str:
        if self.ceiling.key == self.asked:
            return ""
        return f"{self.asked[1]} {self.asked[0]} -> {self.ceiling.precision} {self.ceiling.unit}"


@dataclass(frozen=True)
class Device:
    """A piece of hardware as a set of roofs.  Immutable; see module docs."""

    name: str
    compute: tuple[ComputeCeiling, ...]
    memory: tuple[MemoryCeiling, ...]
    vendor: str = ""
    kind: str = "gpu"
    aliases: tuple[str, ...] = ()
    interconnect: Interconnect | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    bench: BenchFacts | None = None  # set on devices measured by roofline bench
    #: Sustained figures (stream bandwidth, best-shape GEMM), for the forecast; never the bound.
    achievable_compute: tuple[ComputeCeiling, ...] = ()
    achievable_memory: tuple[MemoryCeiling, ...] = ()
    overhead: tuple[OverheadFloor, ...] = ()
    calibration: Calibration | None = None

    def __post_init__(self) -> None:
        where = f"device {shown(self.name, 40)}"
        if not self.name or not str(self.name).strip():
            raise RooflineError("name must not be empty", where="device")
        if self.kind not in KINDS:
            raise RooflineError(f"kind: {shown(self.kind)} is not one of {', '.join(KINDS)}", where=where)
        if not self.compute:
            raise RooflineError("needs at least one compute ceiling", where=where)
        if not self.memory:
            raise RooflineError("needs at least one memory ceiling", where=where)
        seen: set[tuple[str, str]] = set()
        for c in self.compute:
            if c.unit not in UNITS:
                raise RooflineError(f"compute.unit: {shown(c.unit)} is not one of {', '.join(UNITS)}", where=where)
            if c.precision not in PRECISIONS:
                raise RooflineError(f"compute.precision: {shown(c.precision)} is not one of {', '.join(PRECISIONS)}", where=where)
            _positive(c.flops, f"compute[{c.precision} {c.unit}].flops", where)
            if c.key in seen:
                raise RooflineError(f"compute ceiling {c.precision} {c.unit} given twice", where=where)
            seen.add(c.key)
        levels: set[str] = set()
        for m in self.memory:
            _positive(m.bandwidth, f"memory[{m.level}].bandwidth", where)
            if m.capacity is not None:
                _positive(m.capacity, f"memory[{m.level}].capacity", where)
            if not m.level.strip():
                raise RooflineError("memory level must not be empty", where=where)
            if m.level.upper() in levels:
                raise RooflineError(f"memory level {shown(m.level)} given twice", where=where)
            levels.add(m.level.upper())
        if self.interconnect is not None:
            _positive(self.interconnect.bandwidth, "interconnect.bandwidth", where)
        for c in self.achievable_compute:
            roof = self.ceiling(c.unit, c.precision)
            if roof is None:
                raise RooflineError(f"achievable.compute: {c.precision} {c.unit} has no peak roof on the device",
                                    where=where)
            _positive(c.flops, f"achievable.compute[{c.precision} {c.unit}].flops", where)
            if c.flops > roof.flops:
                raise RooflineError(f"achievable.compute[{c.precision} {c.unit}].flops {c.flops:.4g} is above its "
                                    f"peak roof {roof.flops:.4g}: a sustained figure is at most the peak", where=where)
        for m in self.achievable_memory:
            level = self.find_level(m.level)
            if level is None:
                raise RooflineError(f"achievable.memory: level {shown(m.level)} has no peak roof on the device",
                                    where=where)
            _positive(m.bandwidth, f"achievable.memory[{m.level}].bandwidth", where)
            if m.bandwidth > level.bandwidth:
                raise RooflineError(f"achievable.memory[{m.level}].bandwidth {m.bandwidth:.4g} is above its peak "
                                    f"roof {level.bandwidth:.4g}: a sustained figure is at most the peak", where=where)
        for o in self.overhead:
            if o.framework not in FRAMEWORKS:
                raise RooflineError(f"overhead.framework: {shown(o.framework)} is not one of {', '.join(FRAMEWORKS)}",
                                    where=where)
            if not (math.isfinite(o.seconds) and 0 <= o.seconds < 1):
                raise RooflineError(f"overhead[{o.framework}].seconds must be a number from 0 to 1, "
                                    f"got {shown(o.seconds)}", where=where)

    # -- construction ------------------------------------------------------
    @classmethod
    def simple(cls, name: str, peak: str | float, bandwidth: str | float, *,
               precision: str = "fp32", unit: str = "vector", kind: str = "cpu") -> Device:
        """One compute roof and one memory slope, e.g. the textbook example."""
        prov = Provenance(kind="user", source="given on the command line or in code")
        return cls(
            name=name, kind=kind,
            compute=(ComputeCeiling(unit, precision, parse_quantity(peak, "flops", field="peak"), prov),),
            memory=(MemoryCeiling("DRAM", parse_quantity(bandwidth, "bandwidth", field="bandwidth"), None, prov),),
        )

    # -- lookup ------------------------------------------------------------
    def ceiling(self, unit: str, precision: str) -> ComputeCeiling | None:
        for c in self.compute:
            if c.unit == unit and c.precision == precision:
                return c
        return None

    def choose_compute(self, unit: str, precision: str) -> ComputeChoice:
        """The roof for an op on ``unit`` at ``precision``, with the documented fallback.

        Order: for each precision in :data:`PRECISION_FALLBACK` (the op's own first),
        the asked unit, then (for matrix ops) the vector unit.  Vector ops never
        borrow a matrix roof.  If nothing matches, the fastest vector roof, else
        the fastest roof of all.
        """
        units = ("matrix", "vector") if unit == "matrix" else ("vector",)
        for p in PRECISION_FALLBACK.get(precision, (precision, "fp32")):
            for u in units:
                c = self.ceiling(u, p)
                if c is not None:
                    return ComputeChoice(c, (unit, precision))
        vector = [c for c in self.compute if c.unit == "vector"]
        pool = vector or list(self.compute)
        return ComputeChoice(max(pool, key=lambda c: c.flops), (unit, precision))

    def achievable_ceiling(self, ceiling: ComputeCeiling) -> ComputeCeiling | None:
        """The sustained figure published for ``ceiling``'s (unit, precision), or None."""
        return next((c for c in self.achievable_compute if c.key == ceiling.key), None)

    def achievable_level(self, level: MemoryCeiling) -> MemoryCeiling | None:
        """The sustained figure published for ``level``, or None."""
        return next((m for m in self.achievable_memory if m.level.upper() == level.level.upper()), None)

    def achievable_flops(self, ceiling: ComputeCeiling) -> float:
        """The sustained figure for ``ceiling``, else its peak."""
        found = self.achievable_ceiling(ceiling)
        return ceiling.flops if found is None else found.flops

    def achievable_bandwidth(self, level: MemoryCeiling) -> float:
        """The sustained figure for ``level``, else its peak bandwidth."""
        found = self.achievable_level(level)
        return level.bandwidth if found is None else found.bandwidth

    def overhead_floor(self, framework: str) -> OverheadFloor | None:
        for o in self.overhead:
            if o.framework == framework:
                return o
        return None

    @property
    def main_memory(self) -> MemoryCeiling:
        """HBM or DRAM; else the level with the largest capacity (else the slowest)."""
        for m in self.memory:
            if m.level in MAIN_MEMORY:
                return m
        return max(self.memory, key=lambda m: (m.capacity or 0.0, -m.bandwidth))

    def judging_caches(self) -> list[MemoryCeiling]:
        """Levels a working set may be judged at instead of main memory, slowest first.

        Those faster than main memory with a stated capacity (a level without one is never chosen).
        """
        main = self.main_memory
        return sorted((m for m in self.memory if m.capacity is not None and m.bandwidth > main.bandwidth),
                      key=lambda m: m.bandwidth)

    def judging_level(self, working_set: float) -> MemoryCeiling:
        """The level a measured working set is judged at: the fastest of :meth:`judging_caches` that
        holds it, else main memory (the cache-aware rule of :mod:`roofline.analysis`)."""
        fits = [m for m in self.judging_caches() if working_set <= (m.capacity or 0.0)]
        return fits[-1] if fits else self.main_memory

    def find_level(self, level: str | None = None) -> MemoryCeiling | None:
        """The ceiling for ``level`` ('DRAM', 'HBM', 'main', None: main memory), or None when the device has none."""
        if level is None or level == "" or level.upper() in (*MAIN_MEMORY, "MAIN"):
            return self.main_memory
        for m in self.memory:
            if m.level.upper() == level.upper():
                return m
        return None

    def memory_level(self, level: str | None = None) -> MemoryCeiling:
        """The ceiling for ``level`` (:meth:`find_level`), or a one-line error naming the levels there are."""
        found = self.find_level(level)
        if found is not None:
            return found
        raise RooflineError(
            f"memory level {level!r} is not on device {self.name!r}; it has {', '.join(m.level for m in self.memory)}")

    def ridge_intensity(self, unit: str = "", precision: str = "", level: str | None = None) -> float:
        """Ridge point in FLOP/byte: peak / bandwidth.  Defaults: the fastest roof, main memory."""
        peak = self.choose_compute(unit, precision).ceiling.flops if unit else self.peak_flops
        return peak / self.memory_level(level).bandwidth

    @property
    def peak_flops(self) -> float:
        return max(c.flops for c in self.compute)

    def with_name(self, name: str) -> Device:
        return replace(self, name=name)

    # -- display -----------------------------------------------------------
    def _headline_roof(self) -> ComputeCeiling:
        """The roof a one-line repr names: the fastest at 16 bits or wider (the precisions most work runs at;
        the first listed wins a tie), else the fastest of all."""
        from roofline.precision import BITS

        wide = [c for c in self.compute if BITS.get(c.precision, 0) >= 16]
        return max(wide or self.compute, key=lambda c: c.flops)

    def __repr__(self) -> str:
        """One line: the fastest roof at 16 bits or wider and main memory (:meth:`_repr_html_`: every roof).

        >>> Device.simple("seed", peak="100 GFLOP/s", bandwidth="10 GB/s")
        <Device 'seed': 100 GFLOP/s fp32 vector, DRAM 10 GB/s>
        """
        from roofline.text import one_line
        from roofline.units import format_bandwidth, format_flops

        c, m = self._headline_roof(), self.main_memory
        return (f"<Device '{one_line(self.name, 80)}': {format_flops(c.flops)} {c.label}, "
                f"{one_line(m.level, 40)} {format_bandwidth(m.bandwidth)}>")

    def _repr_html_(self) -> str:
        """Jupyter: a small table of every roof (compute, memory, interconnect) and the ridge point."""
        from roofline.text import for_html
        from roofline.units import format_bandwidth, format_bytes, format_flops

        def row(what: str, value: str) -> str:
            return f"<tr><th style='text-align:left'>{what}</th><td style='text-align:right'>{value}</td></tr>"

        rows = [row(for_html(c.label), format_flops(c.flops)) for c in sorted(self.compute, key=lambda c: -c.flops)]
        for m in self.memory:
            cap = f" ({format_bytes(m.capacity)})" if m.capacity else ""
            rows.append(row(for_html(m.level, 40), format_bandwidth(m.bandwidth) + cap))
        if self.interconnect is not None:
            rows.append(row(for_html(self.interconnect.name or "interconnect", 40),
                            format_bandwidth(self.interconnect.bandwidth) + " per direction"))
        c = self._headline_roof()
        rows.append(row("ridge", f"{c.flops / self.main_memory.bandwidth:.3g} FLOP/B ({for_html(c.label)} on "
                                 f"{for_html(self.main_memory.level, 40)})"))
        kind = f"{for_html(self.vendor, 40)} {self.kind}" if self.vendor else self.kind
        return (f"<table><caption>Device {for_html(self.name, 80)} ({kind}, dense figures)</caption>"
                f"{''.join(rows)}</table>")

    # -- (de)serialisation -------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": DEVICE_SCHEMA, "name": self.name, "vendor": self.vendor,
                               "kind": self.kind, "aliases": list(self.aliases)}
        out["compute"] = [{"unit": c.unit, "precision": c.precision, "flops": float(c.flops),
                           "provenance": c.provenance.to_dict()} for c in self.compute]
        out["memory"] = [{"level": m.level, "bandwidth": float(m.bandwidth),
                          "capacity": None if m.capacity is None else float(m.capacity),
                          "provenance": m.provenance.to_dict()} for m in self.memory]
        out["interconnect"] = None if self.interconnect is None else {
            "name": self.interconnect.name, "bandwidth": float(self.interconnect.bandwidth),
            "provenance": self.interconnect.provenance.to_dict()}
        if self.achievable_compute or self.achievable_memory:
            out["achievable"] = {
                "compute": [{"unit": c.unit, "precision": c.precision, "flops": float(c.flops),
                             "provenance": c.provenance.to_dict()} for c in self.achievable_compute],
                "memory": [{"level": m.level, "bandwidth": float(m.bandwidth), "provenance": m.provenance.to_dict()}
                           for m in self.achievable_memory]}
        if self.overhead:
            out["overhead"] = [{"framework": o.framework, "seconds": float(o.seconds),
                                "provenance": o.provenance.to_dict()} for o in self.overhead]
        out["metadata"] = dict(self.metadata)
        if self.bench is not None:
            out["bench"] = self.bench.to_dict()
        if self.calibration is not None:
            out["calibration"] = self.calibration.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, where: str = "device",
                  sources: Mapping[str, Mapping[str, str]] | None = None,
                  require_schema: bool = True) -> Device:
        """Validate and build.  ``sources`` resolves catalog source keys."""
        if not isinstance(d, Mapping):
            raise RooflineError(f"expected a JSON object, got {json_type(d)}", where=where)
        if require_schema:
            schema = d.get("schema")
            if schema not in DEVICE_SCHEMAS_READ:
                raise RooflineError(f"schema: expected {DEVICE_SCHEMA!r} (or an older "
                                    f"{', '.join(DEVICE_SCHEMAS_READ[:-1])}), got {shown(schema)}", where=where)
            d = migrate(d, where)
        for key in ("name", "compute", "memory"):
            if key not in d:
                raise RooflineError(f"missing field {key!r}", where=where)
        name = as_str(d["name"], "name", where, empty=False)
        where = f"{where} (device {shown(name, 40)})" if where != "device" else f"device {shown(name, 40)}"

        def prov(raw: Any, field_name: str) -> Provenance:
            raw = dict(as_object(raw, f"{field_name}.provenance", where)) if raw is not None else {}
            key = as_str(_get(raw, "source", ""), f"{field_name}.provenance.source", where)
            if sources and key in sources:
                src = sources[key]
                raw["source"] = src.get("title", key)
                raw.setdefault("url", src.get("url", ""))
            return Provenance.from_dict(raw, where, field_name=f"{field_name}.provenance")

        compute = []
        for i, c in enumerate(_list(d["compute"], "compute", where)):
            f = f"compute[{i}]"
            _need(c, ("unit", "precision", "flops"), f, where)
            compute.append(ComputeCeiling(as_str(c["unit"], f"{f}.unit", where),
                                          as_str(c["precision"], f"{f}.precision", where),
                                          _quantity(c["flops"], "flops", f"{f}.flops", where),
                                          prov(c.get("provenance"), f)))
        memory = []
        for i, m in enumerate(_list(d["memory"], "memory", where)):
            f = f"memory[{i}]"
            _need(m, ("level", "bandwidth"), f, where)
            cap = m.get("capacity")
            memory.append(MemoryCeiling(as_str(m["level"], f"{f}.level", where), _quantity(m["bandwidth"], "bandwidth", f"{f}.bandwidth", where),
                                        None if cap is None else _quantity(cap, "bytes", f"{f}.capacity", where),
                                        prov(m.get("provenance"), f)))
        ic = d.get("interconnect")
        interconnect = None
        if ic is not None:
            as_object(ic, "interconnect", where)
            _need(ic, ("bandwidth",), "interconnect", where)
            interconnect = Interconnect(as_str(_get(ic, "name", ""), "interconnect.name", where),
                                        _quantity(ic["bandwidth"], "bandwidth", "interconnect.bandwidth", where),
                                        prov(ic.get("provenance"), "interconnect"))
        vendor = as_str(_get(d, "vendor", ""), "vendor", where)
        kind = as_str(_get(d, "kind", "gpu"), "kind", where)
        aliases = tuple(as_str_list(_get(d, "aliases", []), "aliases", where))
        metadata = dict(as_object(_get(d, "metadata", {}), "metadata", where))
        bench = None if d.get("bench") is None else BenchFacts.from_dict(d["bench"], where)
        ach = as_object(_get(d, "achievable", {}), "achievable", where)
        ach_compute = []
        for i, c in enumerate(_list(_get(ach, "compute", []), "achievable.compute", where)):
            f = f"achievable.compute[{i}]"
            _need(c, ("unit", "precision", "flops"), f, where)
            ach_compute.append(ComputeCeiling(as_str(c["unit"], f"{f}.unit", where),
                                              as_str(c["precision"], f"{f}.precision", where),
                                              _quantity(c["flops"], "flops", f"{f}.flops", where),
                                              prov(c.get("provenance"), f)))
        ach_memory = []
        for i, m in enumerate(_list(_get(ach, "memory", []), "achievable.memory", where)):
            f = f"achievable.memory[{i}]"
            _need(m, ("level", "bandwidth"), f, where)
            ach_memory.append(MemoryCeiling(as_str(m["level"], f"{f}.level", where),
                                            _quantity(m["bandwidth"], "bandwidth", f"{f}.bandwidth", where),
                                            None, prov(m.get("provenance"), f)))
        overhead = []
        for i, o in enumerate(_list(_get(d, "overhead", []), "overhead", where)):
            f = f"overhead[{i}]"
            _need(o, ("framework", "seconds"), f, where)
            overhead.append(OverheadFloor(as_str(o["framework"], f"{f}.framework", where),
                                          as_number(o["seconds"], f"{f}.seconds", where, minimum=0.0),
                                          prov(o.get("provenance"), f)))
        calibration = None
        if d.get("calibration") is not None:
            from roofline.calibration import Calibration

            calibration = Calibration.from_dict(d["calibration"], where)
        try:
            return cls(name=name, vendor=vendor, kind=kind, aliases=aliases, compute=tuple(compute),
                       memory=tuple(memory), interconnect=interconnect, metadata=metadata, bench=bench,
                       achievable_compute=tuple(ach_compute), achievable_memory=tuple(ach_memory),
                       overhead=tuple(overhead), calibration=calibration)
        except RooflineError as exc:
            raise RooflineError(str(exc), where=where.split(" (device")[0]) from None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def save(self, path: str | Path) -> None:
        from roofline.fileio import write_text_atomic

        write_text_atomic(path, self.to_json() + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Device:
        from roofline.fileio import read_json
        from roofline.text import shown_path

        return cls.from_dict(read_json(path), where=shown_path(path))


def _number(raw: Any, field_name: str, where: str) -> float:
    """A finite real number (ints and floats; not bools, not strings)."""
    return as_number(raw, field_name, where)


def _get(d: Mapping[str, Any], key: str, default: Any) -> Any:
    """``d[key]``; absent or null -> ``default`` (an optional field)."""
    v = d.get(key)
    return default if v is None else v


def _numbers(raw: Any, field_name: str, where: str, n: int | None = None) -> list[float]:
    """A list of finite numbers (of length ``n`` when given)."""
    values = as_list(raw, field_name, where)
    if n is not None and len(values) != n:
        raise RooflineError(f"{field_name} has {len(values)} values, expected {n}", where=where)
    return [_number(v, f"{field_name}[{i}]", where) for i, v in enumerate(values)]


def _pair(raw: Any, field_name: str, where: str) -> tuple[float, float] | None:
    """None, or [low, high] as two finite numbers."""
    if raw is None:
        return None
    if not (isinstance(raw, (list, tuple)) and len(raw) == 2):
        raise RooflineError(f"{field_name} must be [low, high], got {shown(raw)}", where=where)
    return (_number(raw[0], field_name, where), _number(raw[1], field_name, where))


#: Range of a ceiling (FLOP/s, B/s) or capacity (B): beyond it a time or ridge point could overflow.
CEILING_RANGE = (1e-6, 1e30)


def _positive(value: float, field_name: str, where: str) -> None:
    low, high = CEILING_RANGE
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0):
        raise RooflineError(f"{field_name} must be a finite number > 0, got {shown(value)}", where=where)
    if not low <= value <= high:
        raise RooflineError(f"{field_name} must be a finite number > 0 from {low:g} to {high:g}, got {shown(value)}",
                            where=where)


def _quantity(raw: Any, kind: str, field_name: str, where: str) -> float:
    try:
        value = parse_quantity(raw, kind, field=field_name)
    except RooflineError as exc:
        raise RooflineError(str(exc), where=where) from None
    _positive(value, field_name, where)
    return value


def _list(raw: Any, field_name: str, where: str) -> list[Mapping[str, Any]]:
    if not isinstance(raw, list):
        raise RooflineError(f"{field_name} must be a list of objects, got {json_type(raw)} {shown(raw)}", where=where)
    for i, x in enumerate(raw):
        if not isinstance(x, Mapping):
            raise RooflineError(f"{field_name}[{i}] must be an object, got {json_type(x)} {shown(x)}", where=where)
    return raw


def _need(d: Mapping[str, Any], keys: Iterable[str], field_name: str, where: str) -> None:
    for k in keys:
        if k not in d:
            raise RooflineError(f"{field_name}: missing field {k!r}", where=where)


def migrate(d: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """A device object of an older schema, rewritten as the current one (as pyperf upgrades its JSON).

    /1 -> /2: what ``roofline bench`` kept in ``metadata`` and read back (``threads``, ``sweep``, ``ert``,
    ``caches_sysfs``) moves into the typed ``bench`` facts; the sweep's curves become one entry per
    (kernel, threads); the ERT curve keeps its points and model (its deviation is derived).  A /1 file
    without ``bench`` (written before the bench kept its facts) keeps them in ``metadata``, shown, not read.
    /2 -> /3 adds optional fields only (``achievable``, ``overhead``, ``calibration``).
    """
    if d.get("schema") == DEVICE_SCHEMA:
        return d
    if d.get("schema") == "roofline.device/2":  # /2 -> /3 only adds optional fields
        return {**d, "schema": DEVICE_SCHEMA}
    out = dict(d)
    out["schema"] = DEVICE_SCHEMA
    meta = dict(as_object(_get(d, "metadata", {}), "metadata", where))
    bench = d.get("bench")
    if isinstance(bench, Mapping):
        b = dict(bench)
        if "threads" in meta:
            b["threads"] = meta.pop("threads")
        sweep = meta.pop("sweep", None)
        if isinstance(sweep, Mapping):
            curves = as_object(sweep.get("curves") or {}, "metadata.sweep.curves", where)
            spreads = as_object(sweep.get("spread") or {}, "metadata.sweep.spread", where)
            b["sweep"] = {"working_set_bytes": sweep.get("working_set_bytes"),
                          "bytes_counting": sweep.get("bytes_counting", ""),
                          "curves": [{"kernel": k, "threads": _thread_key(t, where), "median": v,
                                      "spread": as_object(spreads.get(t) or {}, f"metadata.sweep.spread.{t}",
                                                          where).get(k, [])}
                                     for t, by in curves.items()
                                     for k, v in as_object(by, f"metadata.sweep.curves.{t}", where).items()]}
        if isinstance(meta.get("ert"), Mapping):
            b["ert"] = meta.pop("ert")
        caches = meta.pop("caches_sysfs", None)
        if isinstance(caches, Mapping):
            b["caches"] = [{"level": level, **as_object(c, f"metadata.caches_sysfs.{level}", where)}
                           for level, c in caches.items()]
        out["bench"] = b
    out["metadata"] = meta
    return out


def _thread_key(key: Any, where: str) -> int:
    """A /1 sweep's thread count (a JSON object key: '2')."""
    if not str(key).isdigit() or int(key) < 1:
        raise RooflineError(f"metadata.sweep.curves: thread count {shown(key)} is not a whole number >= 1",
                            where=where)
    return int(key)
