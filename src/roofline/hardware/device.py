"""Devices: compute and memory ceilings, each with its provenance.

A :class:`Device` is immutable.  Compute ceilings are keyed by
``(unit, precision)``; memory ceilings by level (``HBM``/``DRAM`` for main
memory, then ``L3``, ``L2``, ``L1``).  Every number carries a
:class:`Provenance`: a datasheet, a derivation written out, or a measurement
with its method, date, repeats and spread.  Dense figures only: a sparse
figure may appear in a note.

The parts (ceilings, provenance, overhead floors) are :mod:`roofline.hardware.ceilings`; what
``roofline bench`` records is :mod:`roofline.hardware.bench_facts`; the file format (reading,
checking, writing, migrating older schemas) is :mod:`roofline.hardware.device_format`.  This
module holds the Device, the checks that join its parts, and what is computed from them.

>>> from roofline import Device
>>> d = Device.simple("seed", peak="100 GFLOP/s", bandwidth="10 GB/s")
>>> d.ridge_intensity()
10.0
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline.core.errors import RooflineError
from roofline.core.fileio import shown
from roofline.core.precision import PRECISIONS
from roofline.core.units import parse_quantity
from roofline.hardware import device_format
from roofline.hardware.bench_facts import BenchFacts
from roofline.hardware.ceilings import (
    FRAMEWORKS,
    ComputeCeiling,
    Interconnect,
    MemoryCeiling,
    OverheadFloor,
    Provenance,
    check_positive,
)

if TYPE_CHECKING:
    from roofline.hardware.calibration import Calibration

UNITS = ("vector", "matrix")
KINDS = ("gpu", "cpu", "tpu", "npu")
MAIN_MEMORY = ("HBM", "DRAM")

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
    # a device without a 6- or 4-bit float roof upcasts to fp8 (Hopper runs FP4 weights that way)
    "fp6": ("fp6", "fp8", "fp16", "bf16", "fp32"),
    "fp4": ("fp4", "fp8", "fp16", "bf16", "fp32"),
}


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
            check_positive(c.flops, f"compute[{c.precision} {c.unit}].flops", where)
            if c.key in seen:
                raise RooflineError(f"compute ceiling {c.precision} {c.unit} given twice", where=where)
            seen.add(c.key)
        levels: set[str] = set()
        for m in self.memory:
            check_positive(m.bandwidth, f"memory[{m.level}].bandwidth", where)
            if m.capacity is not None:
                check_positive(m.capacity, f"memory[{m.level}].capacity", where)
            if not m.level.strip():
                raise RooflineError("memory level must not be empty", where=where)
            if m.level.upper() in levels:
                raise RooflineError(f"memory level {shown(m.level)} given twice", where=where)
            levels.add(m.level.upper())
        if self.interconnect is not None:
            check_positive(self.interconnect.bandwidth, "interconnect.bandwidth", where)
        for c in self.achievable_compute:
            roof = self.ceiling(c.unit, c.precision)
            if roof is None:
                raise RooflineError(f"achievable.compute: {c.precision} {c.unit} has no peak roof on the device",
                                    where=where)
            check_positive(c.flops, f"achievable.compute[{c.precision} {c.unit}].flops", where)
            if c.flops > roof.flops:
                raise RooflineError(f"achievable.compute[{c.precision} {c.unit}].flops {c.flops:.4g} is above its "
                                    f"peak roof {roof.flops:.4g}: a sustained figure is at most the peak", where=where)
        for m in self.achievable_memory:
            level = self.find_level(m.level)
            if level is None:
                raise RooflineError(f"achievable.memory: level {shown(m.level)} has no peak roof on the device",
                                    where=where)
            check_positive(m.bandwidth, f"achievable.memory[{m.level}].bandwidth", where)
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

    @property
    def memory_capacity(self) -> float | None:
        """Bytes a workload may hold on one device: main memory's reported total less its stated reserve
        (:class:`~roofline.hardware.ceilings.MemoryCeiling`); None when the device states no capacity.  The one figure
        every fit (``llm``, ``compare``, ``plan``, advice) is checked against.

        >>> from roofline.catalog import get_device
        >>> round(get_device("h100").memory_capacity / 2**30, 2)  # (81559 - 512) MiB / 1024
        79.15
        """
        m = self.main_memory
        return None if m.capacity is None else m.capacity - m.reserve

    def judging_caches(self) -> list[MemoryCeiling]:
        """Levels a working set may be judged at instead of main memory, slowest first.

        Those faster than main memory with a stated capacity (a level without one is never chosen).
        """
        main = self.main_memory
        return sorted((m for m in self.memory if m.capacity is not None and m.bandwidth > main.bandwidth),
                      key=lambda m: m.bandwidth)

    def judging_level(self, working_set: float) -> MemoryCeiling:
        """The level a measured working set is judged at: the fastest of :meth:`judging_caches` that
        holds it, else main memory (the cache-aware rule of :mod:`roofline.engine.analysis`)."""
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
    def vendor_kind(self) -> str:
        """'NVIDIA gpu', or the kind alone for a device without a vendor ('cpu'): one placeholder rule for
        every output (never '(-, cpu)' or '( cpu)')."""
        return f"{self.vendor.strip()} {self.kind}" if self.vendor.strip() else self.kind

    def _headline_roof(self) -> ComputeCeiling:
        """The roof a one-line repr names: the fastest at 16 bits or wider (the precisions most work runs at;
        the first listed wins a tie), else the fastest of all."""
        from roofline.core.precision import BITS

        wide = [c for c in self.compute if BITS.get(c.precision, 0) >= 16]
        return max(wide or self.compute, key=lambda c: c.flops)

    def __repr__(self) -> str:
        """One line: the fastest roof at 16 bits or wider and main memory (:meth:`_repr_html_`: every roof).

        >>> Device.simple("seed", peak="100 GFLOP/s", bandwidth="10 GB/s")
        <Device 'seed': 100 GFLOP/s fp32 vector, DRAM 10 GB/s>
        """
        from roofline.core.text import one_line
        from roofline.core.units import format_bandwidth, format_flops

        c, m = self._headline_roof(), self.main_memory
        return (f"<Device '{one_line(self.name, 80)}': {format_flops(c.flops)} {c.label}, "
                f"{one_line(m.level, 40)} {format_bandwidth(m.bandwidth)}>")

    def _repr_html_(self) -> str:
        """Jupyter: a small table of every roof (compute, memory, interconnect) and the ridge point."""
        from roofline.core.text import for_html
        from roofline.core.units import format_bandwidth, format_bytes, format_flops

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
        return (f"<table><caption>Device {for_html(self.name, 80)} ({for_html(self.vendor_kind(), 60)}, dense "
                f"figures)</caption>"
                f"{''.join(rows)}</table>")

    # -- (de)serialisation: roofline.hardware.device_format ---------------------------
    def to_dict(self) -> dict[str, Any]:
        return device_format.to_dict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, where: str = "device",
                  sources: Mapping[str, Mapping[str, str]] | None = None,
                  require_schema: bool = True) -> Device:
        """Validate and build (:func:`roofline.hardware.device_format.device_fields`).  ``sources`` resolves catalog
        source keys."""
        fields, where = device_format.device_fields(d, where, sources, require_schema)
        try:
            return cls(**fields)
        except RooflineError as exc:
            raise RooflineError(str(exc), where=where.split(" (device")[0]) from None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def save(self, path: str | Path) -> None:
        from roofline.core.fileio import write_text_atomic

        write_text_atomic(path, self.to_json() + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Device:
        from roofline.core.fileio import read_json
        from roofline.core.text import shown_path

        return cls.from_dict(read_json(path), where=shown_path(path))
