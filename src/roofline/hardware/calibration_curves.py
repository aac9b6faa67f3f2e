"""Cited efficiency curves (``roofline.calibration/2``): published kernel-level measurements, point by point.

A :class:`TabulatedCurve` is the achieved fraction of the achievable roof of ops of one kind, bound by one
term, as a function of one size axis, given as published points, each with its source::

    efficiency(x) = linear in log(x) between neighbouring points; the end point's value beyond the ends

The points must be finite, with ``x`` strictly increasing and the efficiency non-decreasing in ``x``
(bigger kernels of one kind do not run further below the roof in any source we cite; a curve that
falls is more likely a mis-transcription), with an efficiency in (0, 1.5].  Axes: ``flops`` and
``bytes`` (the op's FLOPs or bytes, as /1 curves), ``keys`` (attention: the keys each query sees, the
workload's ``n`` column) and ``message_bytes`` (a collective's bytes).

A curve may be for one ``head_dim`` (attention: the workload's ``k`` column); of several cited curves of one
kind, term and precision that name head dims, each op takes the one of the nearest head dim (in log; ties go to
the smaller).  A curve ``relative_to`` ``forward`` is a share of the forward's rate at the same shape (the
``attention-backward`` curves the training planner applies to a fused attention's backward), never an op's own;
being a ratio of two rising curves, it need not rise itself.

A :class:`Quantization` term gives the SM count that tile and wave quantization
(:mod:`roofline.engine.gemm_shape`) spread a GEMM's tiles over, with its source.

>>> import numpy as np
>>> c = TabulatedCurve("attention", "compute", "keys", (CitedPoint(512, 0.5, "s"), CitedPoint(8192, 0.7, "s")))
>>> [round(float(x), 3) for x in c.efficiency(np.array([256, 2048, 1e6]))]   # 2048: halfway in log2 from 512
[0.5, 0.6, 0.7]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError
from roofline.core.fileio import as_int, as_list, as_object, as_str, shown

#: Terms a cited curve may be for (the /1 fitted curves know compute and memory only).
CURVE_TERMS = ("compute", "memory", "interconnect")
AXES = ("flops", "bytes", "keys", "message_bytes")
RELATIVE = ("achievable", "peak", "forward")
#: Highest efficiency a cited point may hold (as /1's fit cap: the achievable roof is a sustained figure
#: real kernels may slightly beat).
MAX_EFFICIENCY = 1.5


@dataclass(frozen=True)
class CitedPoint:
    """One published measurement: at ``x`` (the curve's axis) kernels ran at ``efficiency`` of the achievable roof."""

    x: float
    efficiency: float
    source: str  # a key of the calibration's ``sources``
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"x": self.x, "efficiency": self.efficiency, "source": self.source, "note": self.note}


@dataclass(frozen=True)
class TabulatedCurve:
    """A cited efficiency curve of ``kind`` ops bound by ``term``, over ``axis`` (module docs)."""

    kind: str
    term: str
    axis: str
    points: tuple[CitedPoint, ...]
    precision: str = ""  # '' for every precision
    #: what the efficiencies are fractions of: the device's ``achievable`` roof (the forecast's) or its ``peak``
    #: roof (how papers quote utilization); the forecast converts a peak fraction with the device's own figures
    relative_to: str = "achievable"
    #: the head dim the points were measured at (attention); 0 for any
    head_dim: float = 0.0

    def efficiency(self, size: np.ndarray | float) -> np.ndarray:
        x = np.log(np.maximum(np.asarray(size, dtype=float), 1e-30))
        xs = np.log([p.x for p in self.points])
        return np.interp(x, xs, [p.efficiency for p in self.points])

    def outside(self, size: np.ndarray) -> np.ndarray:
        lo, hi = self.points[0].x, self.points[-1].x
        return (size < lo / 2) | (size > hi * 2)

    def sources(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.source for p in self.points))

    def describe(self) -> str:
        lo, hi = self.points[0], self.points[-1]
        hd = f", head dim {self.head_dim:g}" if self.head_dim else ""
        return (f"{self.kind} ({self.term}-bound{', ' + self.precision if self.precision else ''}{hd}): "
                f"{len(self.points)} cited points over {self.axis} {lo.x:.4g}..{hi.x:.4g}, efficiency "
                f"{lo.efficiency:.3g}..{hi.efficiency:.3g} ({', '.join(self.sources())})")

    def to_dict(self) -> dict[str, Any]:
        out = {"kind": self.kind, "term": self.term, "axis": self.axis, "precision": self.precision,
               "relative_to": self.relative_to, "points": [p.to_dict() for p in self.points]}
        return {**out, "head_dim": self.head_dim} if self.head_dim else out

    @classmethod
    def from_dict(cls, d: Any, f: str, where: str, sources: Mapping[str, Any]) -> TabulatedCurve:
        as_object(d, f, where)
        for key in ("kind", "term", "axis", "points"):
            if key not in d:
                raise RooflineError(f"{f}: missing field {key!r}", where=where)
        term, axis = as_str(d["term"], f"{f}.term", where), as_str(d["axis"], f"{f}.axis", where)
        if term not in CURVE_TERMS:
            raise RooflineError(f"{f}.term: {shown(term)} is not one of {', '.join(CURVE_TERMS)}", where=where)
        if axis not in AXES:
            raise RooflineError(f"{f}.axis: {shown(axis)} is not one of {', '.join(AXES)}", where=where)
        relative = as_str(d.get("relative_to") or "achievable", f"{f}.relative_to", where)
        if relative not in RELATIVE:
            raise RooflineError(f"{f}.relative_to: {shown(relative)} is not one of {', '.join(RELATIVE)}", where=where)
        raw = as_list(d["points"], f"{f}.points", where)
        if not raw:
            raise RooflineError(f"{f}.points: a curve needs at least one point", where=where)
        points = tuple(_point(p, f"{f}.points[{i}]", where, sources) for i, p in enumerate(raw))
        for i in range(1, len(points)):
            a, b = points[i - 1], points[i]
            if not b.x > a.x:
                raise RooflineError(f"{f}.points[{i}].x: {b.x:g} is not above the previous point's {a.x:g} "
                                    "(points go in increasing x)", where=where)
            if b.efficiency < a.efficiency and relative != "forward":  # a ratio of two curves need not rise
                raise RooflineError(f"{f}.points[{i}].efficiency: {b.efficiency:g} falls below the previous point's "
                                    f"{a.efficiency:g}; a curve must not decrease with size", where=where)
        # absent (or null): a curve for every head dim; given: a whole number of elements >= 1 (0 is no head)
        head_dim = 0.0 if d.get("head_dim") is None else float(as_int(d["head_dim"], f"{f}.head_dim", where,
                                                                       minimum=1, maximum=1 << 20))
        return cls(as_str(d["kind"], f"{f}.kind", where, empty=False), term, axis, points,
                   as_str(d.get("precision") or "", f"{f}.precision", where), relative, head_dim)


def by_head_dim(curves: tuple[TabulatedCurve, ...], size: np.ndarray, head_dim: np.ndarray) -> np.ndarray:
    """Each op's efficiency at ``size`` on the curve of ``curves`` whose head dim is nearest its ``head_dim`` (in
    log; ties to the smaller; an op of unknown head dim takes the first curve's).

    >>> c64 = TabulatedCurve("attention", "compute", "keys", (CitedPoint(512, 0.3, "s"),), head_dim=64)
    >>> c128 = TabulatedCurve("attention", "compute", "keys", (CitedPoint(512, 0.5, "s"),), head_dim=128)
    >>> [float(x) for x in by_head_dim((c64, c128), np.array([512, 512, 512]), np.array([64, 96, np.nan]))]
    [0.3, 0.5, 0.3]
    """
    if len(curves) == 1 or not all(c.head_dim for c in curves):
        return curves[0].efficiency(size)
    ranked = sorted(curves, key=lambda c: c.head_dim)
    dims = np.log([c.head_dim for c in ranked])
    hd = np.asarray(head_dim, dtype=float)
    known = np.isfinite(hd) & (hd > 0)
    pick = np.argmin(np.abs(np.log(np.where(known, hd, 1.0))[:, None] - dims[None, :]), axis=1)  # first minimum: the smaller
    pick = np.where(known, pick, ranked.index(curves[0]))
    out = np.empty(len(hd))
    for i, c in enumerate(ranked):
        out[pick == i] = c.efficiency(np.asarray(size, dtype=float)[pick == i])
    return out


def streaming_efficiency(size: np.ndarray | float, fixed_seconds: float, bandwidth: float, roof: float) -> np.ndarray:
    """Fraction of the bandwidth ``roof`` (bytes/s) that a streaming kernel moving ``size`` bytes reaches when it
    takes ``fixed_seconds + size / bandwidth`` beyond the per-kernel overhead floor: the latency-bandwidth model
    ``T(V) = a + V / b`` that RRZE-HPC's gpu-small-kernels benchmark fits to repeated STREAM-scale kernels, with
    ``fixed_seconds = a - floor`` (the floor is the forecast's overhead term, counted apart)::

        efficiency(V) = (V / roof) / (fixed_seconds + V / bandwidth)

    The shipped cited ``memory`` tables of the catalog GPUs are this formula at sizes 2^16..2^30 bytes.

    >>> round(float(streaming_efficiency(1e9, 0.0, 1.0e12, 2.0e12)), 3)   # no fixed cost: b / roof
    0.5
    >>> round(float(streaming_efficiency(2e6, 1e-6, 2.0e12, 2.0e12)), 3)  # 1 us of 2 us: half the roof
    0.5
    """
    v = np.asarray(size, dtype=float)
    return (v / roof) / (fixed_seconds + v / bandwidth)


def _number(v: Any, f: str, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        raise RooflineError(f"{f} must be a finite number, got {shown(v)}", where=where)
    return float(v)


def _point(d: Any, f: str, where: str, sources: Mapping[str, Any]) -> CitedPoint:
    as_object(d, f, where)
    for key in ("x", "efficiency", "source"):
        if key not in d:
            raise RooflineError(f"{f}: missing field {key!r}", where=where)
    x, e = _number(d["x"], f"{f}.x", where), _number(d["efficiency"], f"{f}.efficiency", where)
    if x <= 0:
        raise RooflineError(f"{f}.x must be > 0, got {x:g}", where=where)
    if not 0 < e <= MAX_EFFICIENCY:
        raise RooflineError(f"{f}.efficiency must be in (0, {MAX_EFFICIENCY:g}], got {e:g}", where=where)
    source = as_str(d["source"], f"{f}.source", where, empty=False)
    if source not in sources:
        raise RooflineError(f"{f}.source: {shown(source)} is not a key of 'sources'", where=where)
    return CitedPoint(x, e, source, as_str(d.get("note") or "", f"{f}.note", where))


@dataclass(frozen=True)
class Quantization:
    """The SM count tile and wave quantization spread tiles over, and where it comes from."""

    sms: int
    source: str
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"sms": self.sms, "source": self.source, "note": self.note}

    @classmethod
    def from_dict(cls, d: Any, f: str, where: str, sources: Mapping[str, Any]) -> Quantization:
        as_object(d, f, where)
        if "sms" not in d or "source" not in d:
            raise RooflineError(f"{f}: needs 'sms' and 'source'", where=where)
        source = as_str(d["source"], f"{f}.source", where, empty=False)
        if source not in sources:
            raise RooflineError(f"{f}.source: {shown(source)} is not a key of 'sources'", where=where)
        return cls(as_int(d["sms"], f"{f}.sms", where, minimum=1), source, as_str(d.get("note") or "", f"{f}.note",
                                                                                  where))


def read_sources(d: Any, f: str, where: str) -> dict[str, dict[str, str]]:
    """``{key: {"title", "url"}}``: what the cited points name."""
    out: dict[str, dict[str, str]] = {}
    for key, v in as_object(d if d is not None else {}, f, where).items():
        as_object(v, f"{f}.{key}", where)
        out[str(key)] = {"title": as_str(v.get("title") or "", f"{f}.{key}.title", where),
                         "url": as_str(v.get("url") or "", f"{f}.{key}.url", where)}
    return out
