"""Systems: one device type, devices per node, nodes, and the network tiers that join them (the system format).

A :class:`System` is what a parallel run executes on: ``devices_per_node`` x
``nodes`` copies of one :class:`~roofline.hardware.device.Device`, joined by network
tiers, each with the bandwidth it gives, its latency (alpha, per message step)
and its topology.  A tier's scope is ``node``, the scale-up tier (NVLink/NVSwitch,
Infinity Fabric, ICI inside a slice), or ``cluster`` (InfiniBand, RoCE, Ethernet, the
scale-out tier).  The scale-up tier joins the devices of one *domain*: ``domain_devices``
of them, a whole number of nodes -- one node on a DGX, 18 trays of 4 GPUs on a GB200
NVL72, 32 hosts of 8 chips in a TPU v6e pod.  Collectives choose the tier by the domain
their group spans, not by the node (:func:`roofline.engine.collectives.cost`).
File quantities take units ('450 GB/s', '3 us') or SI base units (B/s, s).

``roofline.system/2``::

    {"schema": "roofline.system/2", "name": "DGX H100 x 4", "device": "h100",
     "devices_per_node": 8, "nodes": 4, "domain_devices": 8,
     "tiers": [{"name": "NVLink 4", "scope": "node", "bandwidth": "450 GB/s", "latency": "3 us",
                "topology": "switch", "in_switch_reduction": true, "provenance": {...}},
               {"name": "InfiniBand NDR", "scope": "cluster", "bandwidth": "50 GB/s", "nics_per_node": 8,
                "latency": "5 us", "topology": "switch"}]}

``device`` is a catalog name or a device object (``roofline.device/3``).  A node
tier's ``bandwidth`` is per device and direction; a cluster tier's is per NIC
and direction, ``nics_per_node`` of them shared by the node's devices.  A torus
gives its ``dims`` (their product: the devices in the tier's scope, a domain for the
node tier).  ``domain_devices`` is optional (default: one node); a ``roofline.system/1``
file (no domains) loads through :func:`migrate`, its domain its node.

>>> s = System.from_dict({"schema": "roofline.system/1", "name": "pair", "device": "h100", "devices_per_node": 2,
...                       "nodes": 2, "tiers": [{"name": "NVLink", "scope": "node", "bandwidth": "450 GB/s",
...                       "latency": "3 us"}, {"name": "IB", "scope": "cluster", "bandwidth": "50 GB/s",
...                       "nics_per_node": 1, "latency": "5 us"}]})
>>> s.devices, s.tier("cluster").per_device_bandwidth(s.devices_per_node) / 1e9
(4, 25.0)
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline.core.errors import RooflineError
from roofline.core.fileio import as_bool, as_int, as_list, as_object, as_str, shown
from roofline.core.units import parse_quantity
from roofline.hardware.device import Device, Provenance

SYSTEM_SCHEMA = "roofline.system/2"
#: Older versions that still load (migrated on load, :func:`migrate`).
SYSTEM_SCHEMAS_READ = ("roofline.system/1", SYSTEM_SCHEMA)
SCOPES = ("node", "cluster")
TOPOLOGIES = ("ring", "switch", "torus")

#: How a system file's ``"device": "<catalog name>"`` becomes a Device: the catalog's lookup, which
#: :mod:`roofline.catalog` installs here when imported (:func:`name_devices_with`).  The catalog reads systems and
#: devices and so sits above this module, which never imports it.
_DEVICE_NAMED: list[Callable[[str], Device]] = []


def name_devices_with(lookup: Callable[[str], Device]) -> None:
    """Resolve device names in system files with ``lookup`` (``roofline.catalog.get_device``)."""
    _DEVICE_NAMED[:] = [lookup]


def alpha_beta(nbytes: float, alpha: float, bandwidth: float, split_bytes: float = math.inf, alpha2: float = 0.0,
               bandwidth2: float = math.inf) -> float:
    """``alpha + bytes / bandwidth``, or the second regime's from ``split_bytes`` on: a measured collective's
    time (the one formula :mod:`roofline.bench.network` fits and the cost model predicts with)."""
    if nbytes >= split_bytes:
        return alpha2 + nbytes / bandwidth2
    return alpha + nbytes / bandwidth


@dataclass(frozen=True)
class MeasuredCollective:
    """One collective as ``roofline.bench.network`` measured it on a tier: ``t = alpha + bytes / bandwidth``
    for ``ranks`` ranks over ``backend``, its R^2 on log time, and every point (bytes, median, q1, q3 seconds)."""

    backend: str
    ranks: int
    alpha: float
    bandwidth: float  # message bytes per second
    r2: float
    points: tuple[tuple[float, float, float, float], ...] = ()
    split_bytes: float = math.inf  # from this size on, a second regime (the backend switched algorithm)
    alpha2: float = 0.0
    bandwidth2: float = math.inf

    def time(self, nbytes: float) -> float:
        return alpha_beta(nbytes, self.alpha, self.bandwidth, self.split_bytes, self.alpha2, self.bandwidth2)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"backend": self.backend, "ranks": self.ranks, "alpha": self.alpha,
                               "bandwidth": None if math.isinf(self.bandwidth) else self.bandwidth, "r2": self.r2,
                               "points": [list(p) for p in self.points]}
        if self.split_bytes < math.inf:
            out.update(split_bytes=self.split_bytes, alpha2=self.alpha2,
                       bandwidth2=None if math.isinf(self.bandwidth2) else self.bandwidth2)
        return out

    @classmethod
    def from_dict(cls, d: Any, f: str, where: str) -> MeasuredCollective:
        from roofline.core.fileio import as_number

        as_object(d, f, where)
        points = []
        for i, p in enumerate(as_list(d.get("points") or [], f"{f}.points", where)):
            row = as_list(p, f"{f}.points[{i}]", where)
            if len(row) != 4:
                raise RooflineError(f"{f}.points[{i}]: expected [bytes, median, q1, q3], got {shown(row)}", where=where)
            points.append(tuple(as_number(x, f"{f}.points[{i}]", where, minimum=0.0) for x in row))
        return cls(as_str(d.get("backend", ""), f"{f}.backend", where),
                   as_int(d.get("ranks"), f"{f}.ranks", where, minimum=2, maximum=2**26),
                   as_number(d.get("alpha"), f"{f}.alpha", where, minimum=0.0),
                   _bandwidth_or_inf(d.get("bandwidth"), f"{f}.bandwidth", where),
                   as_number(d.get("r2", 0.0), f"{f}.r2", where),
                   tuple((p[0], p[1], p[2], p[3]) for p in points),
                   as_number(d["split_bytes"], f"{f}.split_bytes", where, minimum=0.0) if "split_bytes" in d
                   else math.inf,
                   as_number(d.get("alpha2", 0.0), f"{f}.alpha2", where, minimum=0.0),
                   _bandwidth_or_inf(d.get("bandwidth2"), f"{f}.bandwidth2", where))


def _bandwidth_or_inf(raw: Any, f: str, where: str) -> float:
    """A measured message bandwidth (B/s, > 0); null: no size dependence measured (infinite)."""
    from roofline.core.fileio import as_number

    return math.inf if raw is None else as_number(raw, f, where, minimum=0.0, above=True)


@dataclass(frozen=True)
class NetworkTier:
    """One level of the network: bandwidth per device (node) or per NIC (cluster), latency, topology."""

    name: str
    scope: str
    bandwidth: float
    latency: float
    topology: str = "switch"
    nics_per_node: int = 0
    dims: tuple[int, ...] = ()
    in_switch_reduction: bool = False
    provenance: Provenance = field(default_factory=Provenance)
    #: collectives measured on this tier (roofline.bench.network): each predicted from its own fit
    measured: Mapping[str, MeasuredCollective] = field(default_factory=dict)

    def per_device_bandwidth(self, devices_per_node: int) -> float:
        """Bandwidth one device gets through this tier, one direction: a cluster tier's NICs are shared."""
        if self.scope == "node":
            return self.bandwidth
        return self.bandwidth * self.nics_per_node / devices_per_node

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "scope": self.scope, "bandwidth": self.bandwidth,
                               "latency": self.latency, "topology": self.topology}
        if self.nics_per_node:
            out["nics_per_node"] = self.nics_per_node
        if self.dims:
            out["dims"] = list(self.dims)
        if self.in_switch_reduction:
            out["in_switch_reduction"] = True
        out["provenance"] = self.provenance.to_dict()
        if self.measured:
            out["measured"] = {k: v.to_dict() for k, v in self.measured.items()}
        return out

    @classmethod
    def from_dict(cls, d: Any, f: str, where: str) -> NetworkTier:
        as_object(d, f, where)
        for key in ("name", "scope", "bandwidth", "latency"):
            if d.get(key) is None:
                raise RooflineError(f"{f}: missing field {key!r}", where=where)
        scope = _choice(d["scope"], SCOPES, f"{f}.scope", where)
        topology = _choice(d.get("topology") or "switch", TOPOLOGIES, f"{f}.topology", where)
        nics = as_int(d.get("nics_per_node") or 0, f"{f}.nics_per_node", where, minimum=0, maximum=1024)
        if scope == "cluster" and nics < 1:
            raise RooflineError(f"{f}: a cluster tier needs nics_per_node (its bandwidth is per NIC)", where=where)
        dims = tuple(as_int(x, f"{f}.dims[{i}]", where, minimum=1, maximum=2**20)
                     for i, x in enumerate(as_list(d.get("dims") or [], f"{f}.dims", where)))
        if (topology == "torus") != bool(dims):
            raise RooflineError(f"{f}: 'dims' is given for a torus and only for a torus, got topology "
                                f"{shown(topology)} with dims {list(dims)}", where=where)
        return cls(as_str(d["name"], f"{f}.name", where, empty=False), scope,
                   _positive(d["bandwidth"], "bandwidth", f"{f}.bandwidth", where),
                   _latency(d["latency"], f"{f}.latency", where), topology, nics, dims,
                   as_bool(d.get("in_switch_reduction") or False, f"{f}.in_switch_reduction", where),
                   Provenance.from_dict(d.get("provenance") or {}, where, field_name=f"{f}.provenance"),
                   {as_str(k, f"{f}.measured", where): MeasuredCollective.from_dict(v, f"{f}.measured.{k}", where)
                    for k, v in as_object(d.get("measured") or {}, f"{f}.measured", where).items()})


@dataclass(frozen=True)
class System:
    """``devices_per_node`` x ``nodes`` devices joined by ``tiers`` (at most one per scope); the node tier spans
    a scale-up domain of ``domain_devices`` (0: one node, the default; else a whole number of nodes)."""

    name: str
    device: Device
    devices_per_node: int
    nodes: int
    tiers: tuple[NetworkTier, ...]
    domain_devices: int = 0

    @property
    def devices(self) -> int:
        return self.devices_per_node * self.nodes

    @property
    def domain(self) -> int:
        """Devices one scale-up domain joins here: the system's domain, or fewer when the system is smaller
        (a partial NVL72 rack of 16 trays is one domain of 64 GPUs)."""
        return min(self.domain_devices or self.devices_per_node, self.devices)

    @property
    def domains(self) -> int:
        """Scale-up domains (racks, pods) the devices fill, the last one possibly partial."""
        return -(-self.devices // (self.domain_devices or self.devices_per_node))

    def tier(self, scope: str) -> NetworkTier:
        """The tier of ``scope`` ('node' or 'cluster'); a one-line error when the system has none."""
        for t in self.tiers:
            if t.scope == scope:
                return t
        raise RooflineError(f"system {shown(self.name)} has no {scope} tier")

    def device_on(self, scope: str = "node") -> Device:
        """The device with the ``scope`` tier as its interconnect, at the bandwidth one device gets through it:
        what a per-device analysis (``roofline llm --system``) places its collective ops under."""
        from dataclasses import replace

        from roofline.hardware.device import Interconnect

        t = self.tier(scope)
        return replace(self.device, interconnect=Interconnect(f"{t.name} ({scope} tier of {self.name})",
                                                              t.per_device_bandwidth(self.devices_per_node),
                                                              t.provenance, t.latency, t.in_switch_reduction))

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SYSTEM_SCHEMA, "name": self.name, "device": self.device.to_dict(),
                "devices_per_node": self.devices_per_node, "nodes": self.nodes,
                "domain_devices": self.domain_devices or self.devices_per_node,
                "tiers": [t.to_dict() for t in self.tiers]}

    @classmethod
    def from_dict(cls, d: Any, *, where: str = "system") -> System:
        """Validate a ``roofline.system/2`` object (or an older one, :func:`migrate`) field by field and build it."""
        as_object(d, "system", where)
        if d.get("schema") not in SYSTEM_SCHEMAS_READ:
            raise RooflineError(f"schema: expected {SYSTEM_SCHEMA!r} (or an older "
                                f"{', '.join(SYSTEM_SCHEMAS_READ[:-1])}), got {shown(d.get('schema'))}", where=where)
        d = migrate(d)
        for key in ("name", "device", "devices_per_node", "nodes", "tiers"):
            if d.get(key) is None:
                raise RooflineError(f"missing field {key!r}", where=where)
        per_node = as_int(d["devices_per_node"], "devices_per_node", where, minimum=1, maximum=2**16)
        nodes = as_int(d["nodes"], "nodes", where, minimum=1, maximum=2**20)
        domain = as_int(d.get("domain_devices") or per_node, "domain_devices", where, minimum=1, maximum=2**26)
        if domain % per_node:
            raise RooflineError(f"domain_devices {domain} is no whole number of nodes of {per_node} devices",
                                where=where)
        tiers = tuple(NetworkTier.from_dict(t, f"tiers[{i}]", where)
                      for i, t in enumerate(as_list(d["tiers"], "tiers", where)))
        _check_tiers(tiers, per_node, nodes, domain, where)
        return cls(as_str(d["name"], "name", where, empty=False), _device(d["device"], where), per_node, nodes, tiers,
                   0 if domain == per_node else domain)

    @classmethod
    def load(cls, path: str | Path) -> System:
        from roofline.core.fileio import read_json
        from roofline.core.text import shown_path

        return cls.from_dict(read_json(path), where=shown_path(path))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def migrate(d: Mapping[str, Any]) -> Mapping[str, Any]:
    """A system object of an older schema as the current one: /1 -> /2 adds ``domain_devices``, one node (a /1
    system's node tier joined exactly its node's devices)."""
    if d.get("schema") == "roofline.system/1":
        out = {k: v for k, v in d.items() if k != "domain_devices"}
        out.update(schema=SYSTEM_SCHEMA, domain_devices=d.get("devices_per_node"))
        return out
    return d


def _check_tiers(tiers: tuple[NetworkTier, ...], per_node: int, nodes: int, domain: int, where: str) -> None:
    """At most one tier per scope; a node (scale-up) tier where a domain holds more than one device, a cluster
    tier where the devices fill more than one domain; a torus's dims hold its scope's devices."""
    devices = per_node * nodes
    spans = f"{devices} devices across nodes" if domain == per_node else f"{devices} devices across domains of {domain}"
    for scope, needed, held, label in (("node", min(domain, devices) > 1, domain, f"{per_node} devices across a node"
                                        if domain == per_node else f"domains of {domain} devices"),
                                       ("cluster", devices > domain, devices, spans)):
        found = [t for t in tiers if t.scope == scope]
        if len(found) > 1:
            raise RooflineError(f"tiers: {len(found)} {scope} tiers; give at most one per scope", where=where)
        if needed and not found:
            raise RooflineError(f"tiers: {label} need a {scope} tier", where=where)
        if found and found[0].dims and math.prod(found[0].dims) != held:
            raise RooflineError(f"tiers: the {scope} torus {'x'.join(map(str, found[0].dims))} holds "
                                f"{math.prod(found[0].dims)} devices, the system {held}", where=where)


def _device(raw: Any, where: str) -> Device:
    if isinstance(raw, str):
        if not _DEVICE_NAMED:  # roofline.catalog is imported with the package (roofline/__init__.py)
            raise RooflineError(f"device {shown(raw)}: catalog names need roofline.catalog imported", where=where)
        try:
            return _DEVICE_NAMED[0](raw)
        except RooflineError as exc:
            raise RooflineError(f"device: {exc}", where=where) from None
    if isinstance(raw, Mapping):
        return Device.from_dict(raw, where=f"{where} device")
    raise RooflineError(f"device must be a catalog name or a device object, got {shown(raw)}", where=where)


def _choice(raw: Any, allowed: tuple[str, ...], f: str, where: str) -> str:
    value = as_str(raw, f, where)
    if value not in allowed:
        raise RooflineError(f"{f} {shown(value)} is not one of {', '.join(allowed)}", where=where)
    return value


def _positive(raw: Any, kind: str, f: str, where: str) -> float:
    try:
        value = parse_quantity(raw, kind, field=f)
    except RooflineError as exc:
        raise RooflineError(str(exc), where=where) from None
    if not value > 0:
        raise RooflineError(f"{f} must be above 0, got {shown(raw)}", where=where)
    return value


def _latency(raw: Any, f: str, where: str) -> float:
    try:
        value = parse_quantity(raw, "seconds", field=f)
    except RooflineError as exc:
        raise RooflineError(str(exc), where=where) from None
    if value < 0:
        raise RooflineError(f"{f} must be 0 or more, got {shown(raw)}", where=where)
    return value
