"""Calibration: how far below the roof real ops run on one machine, fitted from measured runs.

A calibration holds, per op kind and binding term (``compute`` or ``memory``), an
efficiency curve: the achieved fraction of the achievable roof as a function of
the op's size (FLOPs for compute-bound ops, bytes for memory-bound ops)::

    efficiency(size) = e_max / (1 + (half / size) ** slope)        e_max, half, slope > 0

Three parameters per curve, monotone non-decreasing in size (small ops run
further below the roof; large ones approach ``e_max``).  The forecast of an op
(:mod:`roofline.engine.forecast`) is then::

    forecast = overhead + max(roof time on achievable roofs / efficiency(size), bound)

:func:`fit_curve` fits the three parameters to measured times by minimising the
sum of absolute log errors of that forecast (a median fit: one noisy point moves
it little), on a grid refined twice.  It never stores the measured points as a
lookup table: the points are kept as the fit's residuals, to be read, not used.

>>> import numpy as np
>>> c = EfficiencyCurve("matmul", "compute", e_max=0.8, half=1e6, slope=1.0, size_range=(1e4, 1e9))
>>> [round(float(x), 3) for x in c.efficiency(np.array([1e6, 1e12]))]  # half of e_max at `half`
[0.4, 0.8]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError
from roofline.core.fileio import as_int, as_list, as_number, as_object, as_str, json_number, shown
from roofline.hardware.calibration_curves import Quantization, TabulatedCurve, read_sources

CALIBRATION_SCHEMA = "roofline.calibration/2"
#: Versions that load: /1 (fitted curves only) migrates to /2 with no cited curves and no quantization term.
CALIBRATION_SCHEMAS_READ = ("roofline.calibration/1", CALIBRATION_SCHEMA)
TERMS = ("compute", "memory")
#: Curve used for a (kind, term) the suite did not cover: every suite point of that term, pooled.
POOLED = "*"
#: Fewest suite points a curve is fitted on (a kind with fewer uses the pooled curve).
MIN_POINTS = 3
#: Efficiency ceiling of a fit: achievable roofs are sustained figures that real kernels may slightly beat.
E_MAX_CAP = 1.5


#: the largest value a fitted curve's parameters may take (e_max an efficiency, half a size in FLOPs or bytes,
#: slope a logistic exponent): a calibration file beyond them is refused in one line (hostile input)
CURVE_MAXIMA = {"e_max": 10.0, "half": 1e30, "slope": 64.0}
#: the lowest efficiency a fitted curve gives (far below its knee): a forecast at most 1e12 x its roof, finite
EFFICIENCY_FLOOR = 1e-12


@dataclass(frozen=True)
class EfficiencyCurve:
    """Achieved fraction of the achievable roof vs op size for ops of ``kind`` bound by ``term``.

    ``size_range``: the smallest and largest suite sizes it was fitted on (outside it the curve's
    shape is extrapolated, and the forecast says so); ``points``: how many; ``error``: median
    |forecast / measured - 1| over them.
    """

    kind: str
    term: str
    e_max: float
    half: float
    slope: float
    size_range: tuple[float, float]
    points: int = 0
    error: float = math.nan

    def efficiency(self, size: np.ndarray | float) -> np.ndarray:
        s = np.maximum(np.asarray(size, dtype=float), 1e-30)
        with np.errstate(over="ignore"):  # far below the knee (half / s)^slope is inf: the floor, as the limit
            return np.maximum(self.e_max / (1.0 + (self.half / s) ** self.slope), EFFICIENCY_FLOOR)

    def outside(self, size: np.ndarray) -> np.ndarray:
        """True where ``size`` lies outside the fitted range (beyond a 2x margin)."""
        lo, hi = self.size_range
        return (size < lo / 2) | (size > hi * 2)

    def describe(self) -> str:
        lo, hi = self.size_range
        unit = "FLOP" if self.term == "compute" else "B"
        return (f"{self.kind} ({self.term}-bound): e_max {self.e_max:.3g}, half at {self.half:.3g} {unit}, "
                f"slope {self.slope:.3g}; {self.points} points from {lo:.3g} to {hi:.3g} {unit}, "
                f"median error {self.error:.1%}")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "term": self.term, "e_max": self.e_max, "half": self.half, "slope": self.slope,
                "size_range": list(self.size_range), "points": self.points,
                "error": json_number(self.error)}

    @classmethod
    def from_dict(cls, d: Any, f: str, where: str) -> EfficiencyCurve:
        as_object(d, f, where)
        for key in ("kind", "term", "e_max", "half", "slope", "size_range"):
            if key not in d:
                raise RooflineError(f"{f}: missing field {key!r}", where=where)
        term = as_str(d["term"], f"{f}.term", where)
        if term not in TERMS:
            raise RooflineError(f"{f}.term: {shown(term)} is not one of {', '.join(TERMS)}", where=where)
        rng = as_list(d["size_range"], f"{f}.size_range", where)
        if len(rng) != 2:
            raise RooflineError(f"{f}.size_range must be [low, high], got {shown(rng)}", where=where)
        lo, hi = (as_number(x, f"{f}.size_range", where, minimum=0.0) for x in rng)
        values = {k: as_number(d[k], f"{f}.{k}", where, minimum=0.0) for k in ("e_max", "half", "slope")}
        if min(values.values()) <= 0:
            raise RooflineError(f"{f}: e_max, half and slope must be > 0, got {shown(values)}", where=where)
        for k, top in CURVE_MAXIMA.items():  # past these the curve is not a fit but an overflow
            if values[k] > top:
                raise RooflineError(f"{f}.{k}: {values[k]:g} is above {top:g}", where=where)
        error = d.get("error")
        return cls(as_str(d["kind"], f"{f}.kind", where), term, values["e_max"], values["half"], values["slope"],
                   (lo, hi), as_int(d.get("points") or 0, f"{f}.points", where, minimum=0),
                   math.nan if error is None else as_number(error, f"{f}.error", where, minimum=0.0))


@dataclass(frozen=True)
class SuitePoint:
    """One op of the calibration suite as measured: its roof time (achievable roofs), the overhead floor
    it was fitted with, its measured median and quartiles, and the fitted forecast."""

    name: str
    kind: str
    term: str
    precision: str
    shape: str
    size: float
    roof_seconds: float  # max(FLOPs / achievable peak, bytes / achievable bandwidth)
    bound_seconds: float  # the roofline bound on the true roofs
    measured: float
    spread: tuple[float, float]
    forecast: float = math.nan
    op: str = ""  # aten name

    @property
    def error(self) -> float:
        """forecast / measured - 1."""
        return self.forecast / self.measured - 1.0 if self.measured > 0 else math.nan

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "term": self.term, "precision": self.precision,
                "shape": self.shape, "size": self.size, "roof_seconds": self.roof_seconds,
                "bound_seconds": self.bound_seconds, "measured": self.measured, "spread": list(self.spread),
                "forecast": json_number(self.forecast), "op": self.op}

    @classmethod
    def from_dict(cls, d: Any, f: str, where: str) -> SuitePoint:
        as_object(d, f, where)
        for key in ("name", "kind", "term", "size", "roof_seconds", "measured"):
            if key not in d:
                raise RooflineError(f"{f}: missing field {key!r}", where=where)
        spread = as_list(d.get("spread") or [d["measured"], d["measured"]], f"{f}.spread", where)
        if len(spread) != 2:
            raise RooflineError(f"{f}.spread must be [q1, q3], got {shown(spread)}", where=where)
        num = {k: as_number(d.get(k) or 0.0, f"{f}.{k}", where, minimum=0.0)
               for k in ("size", "roof_seconds", "bound_seconds", "measured")}
        forecast = d.get("forecast")
        return cls(as_str(d["name"], f"{f}.name", where), as_str(d["kind"], f"{f}.kind", where),
                   as_str(d["term"], f"{f}.term", where), as_str(d.get("precision") or "", f"{f}.precision", where),
                   as_str(d.get("shape") or "", f"{f}.shape", where), num["size"], num["roof_seconds"],
                   num["bound_seconds"], num["measured"],
                   (as_number(spread[0], f"{f}.spread", where), as_number(spread[1], f"{f}.spread", where)),
                   math.nan if forecast is None else as_number(forecast, f"{f}.forecast", where),
                   as_str(d.get("op") or "", f"{f}.op", where))


@dataclass(frozen=True)
class Calibration:
    """Efficiency curves fitted on one machine from a fixed suite, with what they were fitted on; or
    (``roofline.calibration/2``) cited kernel-level curves and a quantization term shipped for a catalog device.

    ``device``/``machine``: the device name and machine fingerprint it was measured on (a calibration
    only applies to that device); ``framework``: whose ops ran (``torch-eager``); ``overhead``: the
    per-op overhead floor (seconds) the fit used; ``suite``: a description of the suite;
    ``points``: every suite op as measured (the fit's residuals); ``failed``: suite ops that failed
    here, one line each; ``tables``: cited curves (:class:`~roofline.hardware.calibration_curves.TabulatedCurve`);
    ``quantization``: the SM count tile and wave quantization use; ``sources``: what cited points name.
    """

    device: str
    machine: str
    framework: str
    date: str
    suite: str
    overhead: float
    curves: tuple[EfficiencyCurve, ...]
    points: tuple[SuitePoint, ...] = ()
    failed: tuple[str, ...] = ()
    tables: tuple[TabulatedCurve, ...] = ()
    quantization: Quantization | None = None
    sources: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    quality: tuple[str, ...] = ()  # why this fit is noisy, one cause each (roofline.bench.calibrate); () when clean

    def curve(self, kind: str, term: str, precision: str = "") -> EfficiencyCurve | TabulatedCurve | None:
        """The curve of ``kind`` for ``term``: the fitted one of that kind, else a cited one of that kind (of
        ``precision`` first, else of every precision), else the pooled fitted curve of the term, else None."""
        own = [c for c in self.curves if c.term == term and c.kind == kind]
        if own:
            return own[0]
        cited = sorted((c for c in self.tables if c.term == term and c.kind == kind and c.precision in (precision, "")),
                       key=lambda c: c.precision != precision)
        if cited:
            return cited[0]
        pooled = [c for c in self.curves if c.term == term and c.kind == POOLED]
        return pooled[0] if pooled else None

    def head_dim_variants(self, curve: TabulatedCurve) -> tuple[TabulatedCurve, ...]:
        """The cited curves of ``curve``'s kind, term, precision and axis that name a head dim (``curve`` first); just
        ``curve`` when it names none (:func:`~roofline.hardware.calibration_curves.by_head_dim` picks among them per op)."""
        if not curve.head_dim:
            return (curve,)
        same = [c for c in self.tables if c is not curve and c.head_dim and (c.kind, c.term, c.precision, c.axis,
                c.relative_to) == (curve.kind, curve.term, curve.precision, curve.axis, curve.relative_to)]
        return (curve, *same)

    def over(self, cited: Calibration | None) -> Calibration:
        """This (a user's) calibration over ``cited`` (the device's shipped one): its fitted curves replace the
        cited ones kind by kind (:meth:`curve`); cited curves of other kinds, and the quantization term, stay."""
        if cited is None:
            return self
        from dataclasses import replace

        fitted = {(c.kind, c.term) for c in self.curves}
        kept = tuple(t for t in cited.tables if (t.kind, t.term) not in fitted)
        return replace(self, tables=(*self.tables, *kept), quantization=self.quantization or cited.quantization,
                       sources={**(cited.sources or {}), **(self.sources or {})})

    @property
    def error(self) -> float:
        """Median |forecast / measured - 1| over the suite."""
        errors = [abs(p.error) for p in self.points if math.isfinite(p.error)]
        return float(np.median(errors)) if errors else math.nan

    def describe(self) -> str:
        if not self.curves:
            return (f"cited calibration ({self.suite or 'published kernel measurements'}): {len(self.tables)} cited "
                    f"curve(s)" + (f", {self.quantization.sms} SMs" if self.quantization else ""))
        return (f"calibrated on {self.date} ({self.framework}, overhead floor {self.overhead * 1e6:.3g} us): "
                f"{len(self.curves)} curves from {len(self.points)} suite ops, median error {self.error:.1%}")

    def curve_source(self, curve: EfficiencyCurve | TabulatedCurve) -> str:
        """Where a curve comes from, for the forecast's notes: fitted to this machine's runs, or cited (sources)."""
        if isinstance(curve, TabulatedCurve):
            return "cited: " + "; ".join(f"{k} ({(self.sources or {}).get(k, {}).get('url') or 'no url'})"
                                         for k in curve.sources())
        return f"fitted to measured runs on {self.device}" + (f" ({self.date})" if self.date else "")

    def to_dict(self) -> dict[str, Any]:
        return {"schema": CALIBRATION_SCHEMA, "device": self.device, "machine": self.machine,
                "framework": self.framework, "date": self.date, "suite": self.suite, "overhead": self.overhead,
                "curves": [c.to_dict() for c in self.curves], "points": [p.to_dict() for p in self.points],
                "failed": list(self.failed), "tables": [t.to_dict() for t in self.tables],
                "quantization": None if self.quantization is None else self.quantization.to_dict(),
                "sources": {k: dict(v) for k, v in (self.sources or {}).items()},
                **({"quality": list(self.quality)} if self.quality else {})}

    @classmethod
    def from_dict(cls, d: Any, where: str, f: str = "calibration") -> Calibration:
        as_object(d, f, where)
        schema = d.get("schema")
        if schema not in CALIBRATION_SCHEMAS_READ:
            raise RooflineError(f"{f}.schema: expected {CALIBRATION_SCHEMA!r} (or the older "
                                f"{CALIBRATION_SCHEMAS_READ[0]!r}), got {shown(schema)}", where=where)
        for key in ("device", "curves"):
            if key not in d:
                raise RooflineError(f"{f}: missing field {key!r}", where=where)
        text = {k: as_str(_given(d, k, ""), f"{f}.{k}", where) for k in ("machine", "framework", "date", "suite")}
        sources = read_sources(d.get("sources"), f"{f}.sources", where)
        tables = tuple(TabulatedCurve.from_dict(t, f"{f}.tables[{i}]", where, sources)
                       for i, t in enumerate(as_list(_given(d, "tables", []), f"{f}.tables", where)))
        raw_q = d.get("quantization")
        quant = None if raw_q is None else Quantization.from_dict(raw_q, f"{f}.quantization", where, sources)
        return cls(as_str(d["device"], f"{f}.device", where, empty=False), text["machine"],
                   text["framework"] or "torch-eager", text["date"], text["suite"],
                   as_number(_given(d, "overhead", 0.0), f"{f}.overhead", where, minimum=0.0),
                   tuple(EfficiencyCurve.from_dict(c, f"{f}.curves[{i}]", where)
                         for i, c in enumerate(as_list(d["curves"], f"{f}.curves", where))),
                   tuple(SuitePoint.from_dict(p, f"{f}.points[{i}]", where)
                         for i, p in enumerate(as_list(_given(d, "points", []), f"{f}.points", where))),
                   tuple(as_str(x, f"{f}.failed[{i}]", where)
                         for i, x in enumerate(as_list(_given(d, "failed", []), f"{f}.failed", where))),
                   tables, quant, sources,
                   tuple(as_str(x, f"{f}.quality[{i}]", where)
                         for i, x in enumerate(as_list(_given(d, "quality", []), f"{f}.quality", where))))

    def check_applies(self, name: str, machine: str, where: str) -> None:
        """One line when this calibration was measured on another device than (``name``, ``machine``)."""
        same = self.machine == machine if (self.machine and machine) else self.device == name
        if not same:
            raise RooflineError(f"calibration is for device {shown(self.device, 60)}"
                                + (f" (machine {shown(self.machine, 60)})" if self.machine else "")
                                + f", not {shown(name, 60)}; run 'roofline calibrate' on that device", where=where)


def forecast_seconds(curve: EfficiencyCurve | None, size: np.ndarray, roof: np.ndarray, bound: np.ndarray,
                     overhead: float) -> np.ndarray:
    """overhead + max(roof / efficiency(size), bound): the one forecast formula (efficiency 1 without a curve)."""
    work = roof if curve is None else roof / curve.efficiency(size)
    return overhead + np.maximum(work, bound)


def fit_curve(kind: str, term: str, size: Sequence[float], roof: Sequence[float], bound: Sequence[float],
              measured: Sequence[float], overhead: float) -> EfficiencyCurve:
    """The (e_max, half, slope) minimising sum |log(forecast / measured)| over the points.

    A grid over (e_max, half, slope), refined twice around the best cell; ``half`` spans the
    points' sizes widened by 100x each way, ``slope`` 0.2..3, ``e_max`` 0.005..:data:`E_MAX_CAP`.

    >>> s = np.logspace(4, 9, 12)
    >>> truth = EfficiencyCurve("k", "compute", 0.7, 1e6, 0.8, (1e4, 1e9))
    >>> roof = s / 1e11
    >>> t = forecast_seconds(truth, s, roof, roof, 1e-6)
    >>> c = fit_curve("k", "compute", s, roof, roof, t, 1e-6)
    >>> round(c.e_max, 2), round(math.log10(c.half), 1), round(c.slope, 1)
    (0.7, 6.0, 0.8)
    """
    s, r, b, m = (np.asarray(x, dtype=float) for x in (size, roof, bound, measured))
    if len(s) < 1 or not (np.all(s > 0) and np.all(m > 0) and np.all(r >= 0)):
        raise RooflineError(f"fit_curve {kind}/{term}: sizes and measured times must be > 0")
    log_m = np.log(m)
    lo, hi = math.log10(s.min()) - 2, math.log10(s.max()) + 2
    e_axis = np.linspace(math.log10(0.005), math.log10(E_MAX_CAP), 48)
    h_axis = np.linspace(lo, hi, 48)
    k_axis = np.linspace(0.2, 3.0, 29)
    best = (math.inf, 0.0, 0.0, 0.0)
    for _ in range(3):
        E, H, K = np.meshgrid(e_axis, h_axis, k_axis, indexing="ij")
        e_max, half, slope = 10.0 ** E.ravel(), 10.0 ** H.ravel(), K.ravel()
        eff = e_max[:, None] / (1.0 + (half[:, None] / s[None, :]) ** slope[:, None])
        pred = overhead + np.maximum(r[None, :] / eff, b[None, :])
        loss = np.abs(np.log(pred) - log_m[None, :]).sum(axis=1)
        i = int(np.argmin(loss))
        if loss[i] < best[0]:
            best = (float(loss[i]), float(E.ravel()[i]), float(H.ravel()[i]), float(K.ravel()[i]))
        de, dh, dk = (e_axis[1] - e_axis[0]), (h_axis[1] - h_axis[0]), (k_axis[1] - k_axis[0])
        e_axis = np.clip(np.linspace(best[1] - 2 * de, best[1] + 2 * de, 17), None, math.log10(E_MAX_CAP))
        h_axis = np.linspace(best[2] - 2 * dh, best[2] + 2 * dh, 17)
        k_axis = np.clip(np.linspace(best[3] - 2 * dk, best[3] + 2 * dk, 17), 0.05, None)
    curve = EfficiencyCurve(kind, term, 10.0 ** best[1], 10.0 ** best[2], best[3], (float(s.min()), float(s.max())),
                            len(s))
    pred = forecast_seconds(curve, s, r, b, overhead)
    return EfficiencyCurve(curve.kind, curve.term, curve.e_max, curve.half, curve.slope, curve.size_range, len(s),
                           float(np.median(np.abs(pred / m - 1.0))))


def fit(points: Sequence[SuitePoint], overhead: float) -> tuple[EfficiencyCurve, ...]:
    """Per term, a curve per kind with at least :data:`MIN_POINTS` points, and one pooled over the term.

    Per kind, not per op: with 3 or 4 sizes of one op a 3-parameter curve follows the noise of
    each point (on the held-out benchmark, per-op curves doubled the median op's error)."""
    curves = []
    for term in TERMS:
        of_term = [p for p in points if p.term == term and p.measured > 0 and p.size > 0]
        by_kind: dict[str, list[SuitePoint]] = {}
        for p in of_term:
            by_kind.setdefault(p.kind, []).append(p)
        for kind, group in sorted(by_kind.items()):
            if len(group) >= MIN_POINTS:
                curves.append(_fit_points(kind, term, group, overhead))
        if len(of_term) >= MIN_POINTS:
            curves.append(_fit_points(POOLED, term, of_term, overhead))
    return tuple(curves)


def _fit_points(kind: str, term: str, group: Sequence[SuitePoint], overhead: float) -> EfficiencyCurve:
    return fit_curve(kind, term, [p.size for p in group], [p.roof_seconds for p in group],
                     [p.bound_seconds for p in group], [p.measured for p in group], overhead)


def with_forecasts(points: Sequence[SuitePoint], curves: Sequence[EfficiencyCurve], overhead: float
                   ) -> tuple[SuitePoint, ...]:
    """The points with each one's fitted forecast filled in (its curve, or the pooled one)."""
    from dataclasses import replace

    by_kind = {(c.kind, c.term): c for c in curves}
    return tuple(replace(p, forecast=float(forecast_seconds(by_kind.get((p.kind, p.term), by_kind.get((POOLED, p.term))),
                                                            np.array([p.size]),
                                                            np.array([p.roof_seconds]), np.array([p.bound_seconds]),
                                                            overhead)[0]))
                 for p in points)


def load_calibration(raw: Mapping[str, Any], where: str) -> Calibration:
    """A calibration from a standalone file (``roofline.calibration/2``; /1 loads) or from a device file's field."""
    if isinstance(raw, Mapping) and raw.get("schema") not in CALIBRATION_SCHEMAS_READ and "calibration" in raw:
        if raw.get("calibration") is None:
            raise RooflineError("the device file holds no calibration; run 'roofline calibrate'", where=where)
        return Calibration.from_dict(raw["calibration"], where)
    return Calibration.from_dict(raw, where)


# -- calibration from measured ops (a profiler trace) -----------------------------------------------------
#: About one distinct op in ``HELD_OUT`` (those whose name and size hash to 0 modulo it: stable from run to run)
#: is kept out of the fit and only forecast, as the suite's held-out models are: the error on them is the honest one.
HELD_OUT = 4


@dataclass(frozen=True)
class TraceFit:
    """A calibration fitted from a measured analysis, with the ops held out of the fit and their errors."""

    calibration: Calibration
    held_out: tuple[SuitePoint, ...]

    @property
    def held_out_error(self) -> float:
        """Median |forecast / measured - 1| over the held-out ops."""
        errors = [abs(p.error) for p in self.held_out if math.isfinite(p.error)]
        return float(np.median(errors)) if errors else math.nan


def measured_points(a: Any) -> list[SuitePoint]:
    """One point per distinct measured op of ``a`` (an Analysis with a forecast and measured seconds):
    ops with the same name, kind, precision, FLOPs and bytes are one point, their median time and
    quartiles its measurement.  Collectives (interconnect-bound) are left out: the curves are per
    compute or memory term."""
    f = a.forecast
    if f is None:
        raise RooflineError("calibrating from measured ops needs their forecast (analyze(..., forecast=True))")
    w = a.workload
    seconds = w.columns["measured_seconds"]
    flops, nbytes = w.columns["flops"], w.bytes
    groups: dict[tuple[str, str, str, float, float], list[int]] = {}
    for j in np.flatnonzero(np.isfinite(seconds) & (seconds > 0)).tolist():
        if f.term[j] not in TERMS:
            continue
        key = (w.strings("name", j), w.strings("kind", j), w.strings("precision", j), float(flops[j]), float(nbytes[j]))
        groups.setdefault(key, []).append(j)
    points = []
    for (name, kind, precision, fl, by), rows in groups.items():
        j = rows[0]
        term = str(f.term[j])
        q1, med, q3 = (float(x) for x in np.percentile(seconds[rows], [25, 50, 75]))
        points.append(SuitePoint(name, kind, term, precision, f"{fl:.6g} FLOP, {by:.6g} B ({len(rows)} calls)",
                                 fl if term == "compute" else by, float(f.roof_time[j]), float(f.bound[j]), med,
                                 (q1, q3), op=name))
    return points


def fit_measured(a: Any, *, device: str, machine: str, date: str, source: str) -> TraceFit:
    """Fit efficiency curves to the measured ops of ``a`` (:func:`measured_points`), holding about one in
    :data:`HELD_OUT` distinct ops out of the fit; the calibration's points are the fitted ones."""
    import zlib

    points = measured_points(a)
    if len(points) < MIN_POINTS:
        raise RooflineError(f"{source}: only {len(points)} distinct measured op(s); a calibration needs at least "
                            f"{MIN_POINTS} (record a longer run or more shapes)")
    held = [p for p in points if zlib.crc32(f"{p.name}|{p.size:.6g}".encode()) % HELD_OUT == 0]
    used = [p for p in points if p not in held] or points
    if len(used) < MIN_POINTS:
        held, used = [], points
    over = float(a.forecast.overhead)
    curves = fit(used, over)
    if not curves:
        raise RooflineError(f"{source}: no term has {MIN_POINTS} measured ops to fit a curve on")
    cal = Calibration(device, machine, a.forecast.framework, date,
                      f"{source}: {len(points)} distinct measured ops; {len(used)} fitted, {len(held)} held out "
                      f"(about 1 in {HELD_OUT}, by a hash of name and size)", over, curves,
                      with_forecasts(used, curves, over))
    return TraceFit(cal, with_forecasts(held, curves, over))


def _given(d: Any, key: str, default: Any) -> Any:
    """``d[key]``, or ``default`` when it is absent or null: a value of the wrong type (``"tables": {}``, an empty
    string for a number) is checked as given, never read as the default."""
    value = d.get(key)
    return default if value is None else value
