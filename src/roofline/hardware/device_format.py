"""The device file format, ``roofline.device/3``: a Device's fields read from JSON, checked one by one, and written.

A device object::

    {"schema": "roofline.device/3", "name": ..., "vendor": ..., "kind": "gpu", "aliases": [...],
     "compute": [{"unit", "precision", "flops", "provenance"}, ...],
     "memory": [{"level", "bandwidth", "capacity", "reserve", "provenance"}, ...],
     "interconnect": {"name", "bandwidth", "latency", "in_switch_reduction", "provenance"} or null,
     "achievable": {"compute": [...], "memory": [...]}, "overhead": [{"framework", "seconds", "provenance"}],
     "metadata": {...}, "bench": {...} (:mod:`roofline.hardware.bench_facts`), "calibration": {...}}

Quantities take units ('989.4 TFLOP/s', '3.35 TB/s') or SI base units; every fault is one
line naming the file, the field and the value.  Older schemas load through :func:`migrate`.
:meth:`Device.from_dict <roofline.hardware.device.Device.from_dict>` and ``Device.to_dict`` go through here.

>>> fields, where = device_fields({"schema": DEVICE_SCHEMA, "name": "seed", "memory": [{"level": "DRAM",
...     "bandwidth": "10 GB/s"}], "compute": [{"unit": "vector", "precision": "fp32", "flops": "100 GFLOP/s"}]},
...     "d.json", None, True)
>>> fields["compute"][0].flops, where
(100000000000.0, "d.json (device 'seed')")
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from roofline.core.errors import RooflineError
from roofline.core.fileio import (
    as_bool,
    as_number,
    as_object,
    as_objects,
    as_str,
    as_str_list,
    json_type,
    need_fields,
    optional,
    shown,
)
from roofline.core.units import parse_quantity
from roofline.hardware.bench_facts import BenchFacts
from roofline.hardware.ceilings import (
    ComputeCeiling,
    Interconnect,
    MemoryCeiling,
    OverheadFloor,
    Provenance,
    check_positive,
)

if TYPE_CHECKING:
    from roofline.hardware.calibration import Calibration

DEVICE_SCHEMA = "roofline.device/3"
#: Older versions that still load (migrated on load, :func:`migrate`).
DEVICE_SCHEMAS_READ = ("roofline.device/1", "roofline.device/2", DEVICE_SCHEMA)
#: ``sources`` of a catalog file: key -> {"title", "url"}, which a ceiling's ``provenance.source`` may name.
Sources = Mapping[str, Mapping[str, str]]


class DeviceRecord(Protocol):
    """The fields :func:`to_dict` writes: what a :class:`~roofline.hardware.device.Device` holds (the Device
    itself sits above this module and passes itself)."""

    @property
    def name(self) -> str: ...
    @property
    def vendor(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def aliases(self) -> tuple[str, ...]: ...
    @property
    def compute(self) -> tuple[ComputeCeiling, ...]: ...
    @property
    def memory(self) -> tuple[MemoryCeiling, ...]: ...
    @property
    def interconnect(self) -> Interconnect | None: ...
    @property
    def achievable_compute(self) -> tuple[ComputeCeiling, ...]: ...
    @property
    def achievable_memory(self) -> tuple[MemoryCeiling, ...]: ...
    @property
    def overhead(self) -> tuple[OverheadFloor, ...]: ...
    @property
    def metadata(self) -> Mapping[str, Any]: ...
    @property
    def bench(self) -> BenchFacts | None: ...
    @property
    def calibration(self) -> Calibration | None: ...


def device_fields(d: Any, where: str, sources: Sources | None, require_schema: bool) -> tuple[dict[str, Any], str]:
    """The keyword arguments of :class:`~roofline.hardware.device.Device` read from a device object, field by field, and
    ``where`` as the messages of the Device's own checks name it ("d.json (device 'x')")."""
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
    fields: dict[str, Any] = {
        "name": name,
        "compute": _compute(d["compute"], "compute", where, sources),
        "memory": _memory(d["memory"], "memory", where, sources, capacity=True),
        "interconnect": _interconnect(d.get("interconnect"), where, sources),
        "vendor": as_str(optional(d, "vendor", ""), "vendor", where),
        "kind": as_str(optional(d, "kind", "gpu"), "kind", where),
        "aliases": tuple(as_str_list(optional(d, "aliases", []), "aliases", where)),
        "metadata": dict(as_object(optional(d, "metadata", {}), "metadata", where)),
        "bench": None if d.get("bench") is None else BenchFacts.from_dict(d["bench"], where)}
    ach = as_object(optional(d, "achievable", {}), "achievable", where)
    fields["achievable_compute"] = _compute(optional(ach, "compute", []), "achievable.compute", where, sources)
    fields["achievable_memory"] = _memory(optional(ach, "memory", []), "achievable.memory", where, sources,
                                          capacity=False)
    fields["overhead"] = _overhead(optional(d, "overhead", []), where, sources)
    fields["calibration"] = _calibration(d.get("calibration"), where)
    return fields, where


def _provenance(raw: Any, field_name: str, where: str, sources: Sources | None) -> Provenance:
    """A ceiling's provenance; a catalog ``source`` key becomes that source's title and url."""
    raw = dict(as_object(raw, f"{field_name}.provenance", where)) if raw is not None else {}
    key = as_str(optional(raw, "source", ""), f"{field_name}.provenance.source", where)
    if sources and key in sources:
        src = sources[key]
        raw["source"] = src.get("title", key)
        raw.setdefault("url", src.get("url", ""))
    return Provenance.from_dict(raw, where, field_name=f"{field_name}.provenance")


def _compute(raw: Any, name: str, where: str, sources: Sources | None) -> tuple[ComputeCeiling, ...]:
    """The compute roofs listed under ``name`` ('compute', 'achievable.compute')."""
    out = []
    for i, c in enumerate(as_objects(raw, name, where)):
        f = f"{name}[{i}]"
        need_fields(c, ("unit", "precision", "flops"), f, where)
        out.append(ComputeCeiling(as_str(c["unit"], f"{f}.unit", where), as_str(c["precision"], f"{f}.precision", where),
                                  quantity(c["flops"], "flops", f"{f}.flops", where),
                                  _provenance(c.get("provenance"), f, where, sources)))
    return tuple(out)


def _memory(raw: Any, name: str, where: str, sources: Sources | None, *, capacity: bool) -> tuple[MemoryCeiling, ...]:
    """The memory roofs listed under ``name`` ('memory'; 'achievable.memory', whose capacities are the peak's)."""
    out = []
    for i, m in enumerate(as_objects(raw, name, where)):
        f = f"{name}[{i}]"
        need_fields(m, ("level", "bandwidth"), f, where)
        cap = m.get("capacity") if capacity else None
        size = None if cap is None else quantity(cap, "bytes", f"{f}.capacity", where)
        reserve = _reserve(m.get("reserve") if capacity else None, size, f, where)
        out.append(MemoryCeiling(as_str(m["level"], f"{f}.level", where),
                                 quantity(m["bandwidth"], "bandwidth", f"{f}.bandwidth", where),
                                 size, _provenance(m.get("provenance"), f, where, sources), reserve))
    return tuple(out)


def _interconnect(ic: Any, where: str, sources: Sources | None) -> Interconnect | None:
    if ic is None:
        return None
    as_object(ic, "interconnect", where)
    need_fields(ic, ("bandwidth",), "interconnect", where)
    return Interconnect(as_str(optional(ic, "name", ""), "interconnect.name", where),
                        quantity(ic["bandwidth"], "bandwidth", "interconnect.bandwidth", where),
                        _provenance(ic.get("provenance"), "interconnect", where, sources),
                        _seconds(optional(ic, "latency", 0.0), "interconnect.latency", where),
                        as_bool(optional(ic, "in_switch_reduction", False), "interconnect.in_switch_reduction", where))


def _seconds(raw: Any, field_name: str, where: str) -> float:
    """A latency from a file ('0.6 us' or seconds): finite, from 0 to 1 s."""
    import math

    try:
        value = parse_quantity(raw, "seconds", field=field_name)
    except RooflineError as exc:
        raise RooflineError(str(exc), where=where) from None
    if not (math.isfinite(value) and 0 <= value <= 1):
        raise RooflineError(f"{field_name} must be a time from 0 to 1 s, got {shown(raw)}", where=where)
    return value


def _reserve(raw: Any, capacity: float | None, f: str, where: str) -> float:
    """The bytes of a level's capacity held back per device: 0 to below the capacity (needs one)."""
    if raw is None:
        return 0.0
    if capacity is None:
        raise RooflineError(f"{f}.reserve: a reserve needs a capacity to come out of", where=where)
    try:
        value = parse_quantity(raw, "bytes", field=f"{f}.reserve")
    except RooflineError as exc:
        raise RooflineError(str(exc), where=where) from None
    if not 0 <= value < capacity:
        raise RooflineError(f"{f}.reserve must be from 0 to below the capacity ({capacity:.6g} B), got {shown(raw)}",
                            where=where)
    return value


def _overhead(raw: Any, where: str, sources: Sources | None) -> tuple[OverheadFloor, ...]:
    out = []
    for i, o in enumerate(as_objects(raw, "overhead", where)):
        f = f"overhead[{i}]"
        need_fields(o, ("framework", "seconds"), f, where)
        out.append(OverheadFloor(as_str(o["framework"], f"{f}.framework", where),
                                 as_number(o["seconds"], f"{f}.seconds", where, minimum=0.0),
                                 _provenance(o.get("provenance"), f, where, sources)))
    return tuple(out)


def _calibration(raw: Any, where: str) -> Calibration | None:
    if raw is None:
        return None
    from roofline.hardware.calibration import Calibration

    return Calibration.from_dict(raw, where)


def quantity(raw: Any, kind: str, field_name: str, where: str) -> float:
    """A roof or capacity from a file: a number or a quantity with units, > 0 within the ceilings' range."""
    try:
        value = parse_quantity(raw, kind, field=field_name)
    except RooflineError as exc:
        raise RooflineError(str(exc), where=where) from None
    check_positive(value, field_name, where)
    return value


def to_dict(device: DeviceRecord) -> dict[str, Any]:
    """``device`` as a ``roofline.device/3`` object (what :func:`device_fields` reads back)."""
    out: dict[str, Any] = {"schema": DEVICE_SCHEMA, "name": device.name, "vendor": device.vendor,
                           "kind": device.kind, "aliases": list(device.aliases)}
    out["compute"] = [{"unit": c.unit, "precision": c.precision, "flops": float(c.flops),
                       "provenance": c.provenance.to_dict()} for c in device.compute]
    out["memory"] = [{"level": m.level, "bandwidth": float(m.bandwidth),
                      "capacity": None if m.capacity is None else float(m.capacity),
                      **({"reserve": float(m.reserve)} if m.reserve else {}),
                      "provenance": m.provenance.to_dict()} for m in device.memory]
    ic = device.interconnect
    out["interconnect"] = None if ic is None else {
        "name": ic.name, "bandwidth": float(ic.bandwidth), "latency": float(ic.latency),
        **({"in_switch_reduction": True} if ic.in_switch_reduction else {}), "provenance": ic.provenance.to_dict()}
    if device.achievable_compute or device.achievable_memory:
        out["achievable"] = {
            "compute": [{"unit": c.unit, "precision": c.precision, "flops": float(c.flops),
                         "provenance": c.provenance.to_dict()} for c in device.achievable_compute],
            "memory": [{"level": m.level, "bandwidth": float(m.bandwidth), "provenance": m.provenance.to_dict()}
                       for m in device.achievable_memory]}
    if device.overhead:
        out["overhead"] = [{"framework": o.framework, "seconds": float(o.seconds),
                            "provenance": o.provenance.to_dict()} for o in device.overhead]
    out["metadata"] = dict(device.metadata)
    if device.bench is not None:
        out["bench"] = device.bench.to_dict()
    if device.calibration is not None:
        out["calibration"] = device.calibration.to_dict()
    return out


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
    meta = dict(as_object(optional(d, "metadata", {}), "metadata", where))
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
