"""What ``roofline bench`` knows about the machine it measured: typed facts, part of the device format.

A measured :class:`~roofline.hardware.device.Device` carries :class:`BenchFacts` (``device.bench``):
the machine's fingerprint and ISA, the theoretical roofs (:class:`SpecRoof`), the roof
audit (:class:`AuditResult`), bandwidth against working set (:class:`Sweep`), the ERT
curve (:class:`ErtCurve`) and the OS's cache sizes (:class:`CacheInfo`).  Each class
reads and writes its own part of the ``bench`` object of ``roofline.device/3``.

>>> f = BenchFacts.from_dict({"version": BENCH_VERSION, "machine": "cpu x86 2", "native": ["fp32"]}, "d.json")
>>> f.native, BenchFacts.from_dict(f.to_dict(), "again") == f
(('fp32',), True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roofline.core.fileio import (
    as_int,
    as_list,
    as_number,
    as_numbers,
    as_object,
    as_objects,
    as_pair,
    as_str,
    as_str_list,
    need_fields,
    optional,
)
from roofline.core.stats import relative_spread


@dataclass(frozen=True)
class SpecRoof:
    """A theoretical compute roof: cores x clock x FMA pipes x lanes x 2, with its derivation written out."""

    unit: str
    precision: str
    flops: float
    derivation: str

    def label(self, measured: float | None = None) -> str:
        """What to call the figure beside ``measured`` (the measured roof of the same unit and precision):
        'theoretical', unless the machine beats it (a clock above the nominal one the derivation used: turbo),
        then 'nominal-clock spec' -- a figure the machine beats is no theoretical limit.

        >>> r = SpecRoof("vector", "fp32", 332e9, "2 cores x 2.6 GHz x ...")
        >>> r.label(300e9), r.label(574e9)
        ('theoretical', 'nominal-clock spec')
        """
        return "nominal-clock spec" if measured is not None and measured > self.flops else "theoretical"


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


#: largest size (bytes) a bench fact may state: a cache, a working set (1e30 B, as a workload's largest figure;
#: a chart's axis spans the sizes, so 1e308 would draw an axis of 300 decades)
MAX_SIZE = 1e30

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
        sizes = tuple(as_number(x, f"{f}.working_set_bytes[{i}]", where, minimum=1.0, maximum=MAX_SIZE)
                      for i, x in enumerate(as_list(d.get("working_set_bytes"), f"{f}.working_set_bytes", where)))
        curves = []
        for i, c in enumerate(as_objects(d.get("curves", []), f"{f}.curves", where)):
            g = f"{f}.curves[{i}]"
            need_fields(c, ("kernel", "threads", "median"), g, where)
            median = tuple(as_numbers(c["median"], f"{g}.median", where, len(sizes)))
            spread = tuple(p for j, q in enumerate(as_list(optional(c, "spread", []), f"{g}.spread", where))
                           if (p := as_pair(q, f"{g}.spread[{j}]", where)) is not None)
            curves.append(SweepCurve(as_str(c["kernel"], f"{g}.kernel", where),
                                     as_int(c["threads"], f"{g}.threads", where, minimum=1), median, spread))
        return cls(sizes, tuple(curves), as_str(optional(d, "bytes_counting", ""), f"{f}.bytes_counting", where))


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
        need_fields(d, ("intensity", "flops", "working_set_bytes"), f, where)
        intensity = tuple(as_numbers(d["intensity"], f"{f}.intensity", where))
        n = len(intensity)
        model = optional(d, "model_flops", [])
        return cls(tuple(as_numbers(optional(d, "flops_per_element", [0] * n), f"{f}.flops_per_element", where, n)),
                   intensity, tuple(as_numbers(d["flops"], f"{f}.flops", where, n)),
                   tuple(p for j, q in enumerate(as_list(optional(d, "spread", []), f"{f}.spread", where))
                         if (p := as_pair(q, f"{f}.spread[{j}]", where)) is not None),
                   as_number(d["working_set_bytes"], f"{f}.working_set_bytes", where, minimum=0.0, maximum=MAX_SIZE),
                   as_int(optional(d, "threads", 1), f"{f}.threads", where, minimum=1),
                   tuple(as_numbers(model, f"{f}.model_flops", where, n)) if model else (),
                   as_str(optional(d, "note", ""), f"{f}.note", where))


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
        for i, r in enumerate(as_objects(d.get("spec", []), "bench.spec", where)):
            need_fields(r, ("unit", "precision", "flops"), f"bench.spec[{i}]", where)
            spec.append(SpecRoof(as_str(r["unit"], f"bench.spec[{i}].unit", where),
                                 as_str(r["precision"], f"bench.spec[{i}].precision", where),
                                 as_number(r["flops"], f"bench.spec[{i}].flops", where),
                                 as_str(optional(r, "derivation", ""), f"bench.spec[{i}].derivation", where)))
        for i, a in enumerate(as_objects(d.get("audit", []), "bench.audit", where)):
            f = f"bench.audit[{i}]"
            need_fields(a, ("kernel", "seconds", "spread", "efficiency"), f, where)
            spread = as_pair(a["spread"], f"{f}.spread", where)
            assert spread is not None
            text = {k: as_str(optional(a, k, ""), f"{f}.{k}", where)
                    for k in ("kernel", "unit", "precision", "roof", "level", "binding", "raised")}
            audit.append(AuditResult(
                text["kernel"], text["unit"], text["precision"], text["roof"], text["level"],
                as_number(optional(a, "flops", 0.0), f"{f}.flops", where), as_number(optional(a, "bytes", 0.0), f"{f}.bytes", where),
                as_number(a["seconds"], f"{f}.seconds", where), spread, as_number(a["efficiency"], f"{f}.efficiency", where),
                text["binding"], text["raised"]))
        caches = []
        for i, c in enumerate(as_objects(optional(d, "caches", []), "bench.caches", where)):
            f = f"bench.caches[{i}]"
            need_fields(c, ("level", "size", "capacity"), f, where)
            caches.append(CacheInfo(as_str(c["level"], f"{f}.level", where),
                                    as_number(c["size"], f"{f}.size", where, minimum=0.0, maximum=MAX_SIZE),
                                    as_int(optional(c, "instances", 1), f"{f}.instances", where, minimum=1),
                                    as_number(c["capacity"], f"{f}.capacity", where, minimum=0.0, maximum=MAX_SIZE)))
        return cls(version=version, machine=as_str(optional(d, "machine", ""), "bench.machine", where),
                   isa=tuple(as_str_list(optional(d, "isa", []), "bench.isa", where)),
                   native=tuple(as_str_list(optional(d, "native", []), "bench.native", where)),
                   spec=tuple(spec), audit=tuple(audit),
                   threads=as_int(optional(d, "threads", 0), "bench.threads", where),
                   sweep=None if d.get("sweep") is None else Sweep.from_dict(d["sweep"], "bench.sweep", where),
                   ert=None if d.get("ert") is None else ErtCurve.from_dict(d["ert"], "bench.ert", where),
                   caches=tuple(caches))
