"""The parts of a device: its compute and memory roofs, interconnect and overhead floors, each with its provenance.

Every number carries a :class:`Provenance`: a datasheet, a derivation written out,
or a measurement with its method, date, repeats and spread (``methods``: each
measuring method's figure, the ceiling being the best of them).  Dense figures
only.  :class:`~roofline.hardware.device.Device` holds these parts and checks them
together; :mod:`roofline.hardware.device_format` reads and writes them.

>>> c = ComputeCeiling("matrix", "bf16", 989.4e12, Provenance("datasheet", "NVIDIA H100 datasheet"))
>>> c.key, c.label, c.provenance.describe()
(('matrix', 'bf16'), 'bf16 matrix', 'datasheet: NVIDIA H100 datasheet')
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from roofline.core.errors import RooflineError
from roofline.core.fileio import as_bool, as_int, as_list, as_number, as_object, as_pair, as_str, optional, shown

PROVENANCE_KINDS = ("datasheet", "derived", "measured", "user")

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
        value = as_number(d["value"], f"{f}.value", where)
        return cls(as_str(d["method"], f"{f}.method", where), value, as_pair(d.get("spread"), f"{f}.spread", where),
                   as_str(optional(d, "statistic", ""), f"{f}.statistic", where))


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
        kind = as_str(optional(d, "kind", "datasheet"), f"{f}.kind", where)
        if kind not in PROVENANCE_KINDS:
            raise RooflineError(f"{f}.kind: {shown(kind)} is not one of {', '.join(PROVENANCE_KINDS)}", where=where)
        spread = as_pair(d.get("spread"), f"{f}.spread", where)
        methods = as_list(optional(d, "methods", []), f"{f}.methods", where)
        text = {k: as_str(optional(d, k, ""), f"{f}.{k}", where) for k in ("source", "url", "note", "method", "date")}
        return cls(
            kind=kind,
            **text,
            dense=as_bool(optional(d, "dense", True), f"{f}.dense", where),
            repeats=as_int(optional(d, "repeats", 0), f"{f}.repeats", where),
            spread=spread,
            details=dict(as_object(optional(d, "details", {}), f"{f}.details", where)),
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

    def ridge(self, memory: MemoryCeiling) -> float:
        """The ridge point of this roof over ``memory`` (FLOP/B): peak / bandwidth, where the slope meets the roof."""
        return self.flops / memory.bandwidth


@dataclass(frozen=True)
class MemoryCeiling:
    """A memory roof: ``bandwidth`` B/s from ``level``, holding ``capacity`` B.

    ``capacity`` is the total the device reports (``nvidia-smi``'s ``memory.total``: an 80 GB H100 shows
    81559 MiB); ``reserve`` the bytes of it a process cannot have (the CUDA context, the driver's own),
    so what a workload may hold is ``capacity - reserve`` (:attr:`roofline.hardware.device.Device.memory_capacity`).
    """

    level: str
    bandwidth: float
    capacity: float | None = None
    provenance: Provenance = field(default_factory=Provenance)
    reserve: float = 0.0  # bytes of ``capacity`` held back per device (CUDA context); its reason in the provenance


@dataclass(frozen=True)
class Interconnect:
    """Device-to-device link; ``bandwidth`` B/s per direction, ``latency`` seconds per hop (the alpha of
    :mod:`roofline.engine.collectives`: a ring all-reduce over n devices pays 2(n-1) of them), and whether its
    switch reduces in the network (NVLink SHARP / NVLS: an all-reduce in two hops).  The link of a node:
    what ``--device h100 --tp 8`` times its collectives on."""

    name: str
    bandwidth: float
    provenance: Provenance = field(default_factory=Provenance)
    latency: float = 0.0
    in_switch_reduction: bool = False


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


#: Range of a ceiling (FLOP/s, B/s) or capacity (B): beyond it a time or ridge point could overflow.
CEILING_RANGE = (1e-6, 1e30)


def check_positive(value: float, field_name: str, where: str) -> None:
    """``value`` is a finite number > 0 within :data:`CEILING_RANGE`."""
    low, high = CEILING_RANGE
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0):
        raise RooflineError(f"{field_name} must be a finite number > 0, got {shown(value)}", where=where)
    if not low <= value <= high:
        raise RooflineError(f"{field_name} must be a finite number > 0 from {low:g} to {high:g}, got {shown(value)}",
                            where=where)
