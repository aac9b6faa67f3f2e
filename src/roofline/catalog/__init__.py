"""The device catalog: datasheet ceilings shipped as JSON data files, one per vendor, and the systems built of them.

Each file is ``{"schema": "roofline.catalog/1", "vendor": ..., "sources": {key:
{"title", "url"}}, "devices": [device objects]}``; a ceiling's
``provenance.source`` names a key of ``sources``.  Lookup ignores case and
punctuation and knows aliases.  This module is the one reader of devices and systems: a
system file names its device as the catalog does (it installs :func:`get_device` as the
name lookup of :mod:`roofline.hardware.system`, which does not import the catalog).

>>> from roofline.catalog import get_device
>>> get_device("h100").name
'NVIDIA H100 SXM5 80GB'
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from roofline.core import names
from roofline.core.errors import RooflineError
from roofline.core.names import normalize
from roofline.hardware.device import Device
from roofline.hardware.system import SYSTEM_SCHEMA, System, name_devices_with

CATALOG_SCHEMA = "roofline.catalog/1"


def _files(folder: str, schema: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, parsed JSON) of every catalog data file in ``folder`` ('' for the devices'), in name order;
    a file of another schema is a packaging bug."""
    root = resources.files(__name__)
    for entry in sorted((root.joinpath(folder) if folder else root).iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".json"):
            name = f"{folder}/{entry.name}" if folder else entry.name
            data = json.loads(entry.read_text(encoding="utf-8"))
            if data.get("schema") != schema:
                raise RuntimeError(f"catalog file {name}: bad schema {data.get('schema')!r}")
            yield name, data


@lru_cache(maxsize=1)
def devices() -> tuple[Device, ...]:
    """Every catalog device, in file order."""
    out: list[Device] = []
    for name, data in _files("", CATALOG_SCHEMA):
        for d in data["devices"]:
            d = {"vendor": data.get("vendor", ""), **d}
            out.append(Device.from_dict(d, where=f"catalog/{name}", sources=data.get("sources", {}),
                                        require_schema=False))
    return tuple(out)


@lru_cache(maxsize=1)
def _index() -> dict[str, Device]:
    index: dict[str, Device] = {}
    for d in devices():
        for key in (d.name, *d.aliases):
            k = normalize(key)
            other = index.get(k)
            if other is not None and other is not d:
                raise RuntimeError(f"catalog: name {key!r} is used by {other.name!r} and {d.name!r}")
            index[k] = d
    return index


def closest(name: str, n: int = 3) -> list[str]:
    """The (up to) ``n`` catalog device names closest to ``name`` (:func:`roofline.core.names.closest`)."""
    return names.closest(name, {alias: dev.name for alias, dev in _index().items()}, n, names.TYPO_CUTOFF)


def get_device(name: str) -> Device:
    """A catalog device by name or alias, or a unique prefix of one (said in a
    :class:`~roofline.core.names.NameResolved` warning: 'mi300' is AMD Instinct MI300X); an ambiguous prefix
    fails listing its matches, an unknown name with the closest (:func:`roofline.core.names.resolve`)."""
    from roofline.core import arguments as arg

    arg.text(name, "get_device", "name")
    return names.resolve(name, _index(), "device", shown=lambda d: d.name, hint=" (see 'roofline devices')")


name_devices_with(get_device)  # a system file names its device as the catalog does


def resolve_device(spec: str | Device) -> Device:
    """A Device from a catalog name or a device JSON file.  'local' (the cached bench result) is the bench's:
    :func:`roofline.bench.resolve.resolve_device` takes it, and everything else to here."""
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise RooflineError(f"device: expected a catalog name, a device JSON file or 'local', got {type(spec).__name__}")
    if spec.lower() == "local":
        raise RooflineError("device 'local' (the last 'roofline bench') is resolved by "
                            "roofline.bench.resolve.resolve_device (as roofline.device() and --device do)")
    if spec.lower().endswith(".json") or _is_file(spec):
        return Device.load(spec)
    return get_device(spec)


def _is_file(spec: str) -> bool:
    """Whether ``spec`` names an existing file; a name the OS refuses (too long, a NUL byte) is no file."""
    try:
        return Path(spec).is_file()
    except (OSError, ValueError):
        return False


# -- systems: one node of each, scaled by --nodes -------------------------------------------------
SYSTEM_CATALOG_SCHEMA = "roofline.system-catalog/1"


@lru_cache(maxsize=1)
def _systems() -> tuple[tuple[tuple[str, ...], System], ...]:
    """Every catalog system with its aliases, in file order (one node each)."""
    out = []
    for name, data in _files("systems", SYSTEM_CATALOG_SCHEMA):
        for s in data["systems"]:
            aliases = tuple(s.get("aliases", ()))
            body = {k: v for k, v in s.items() if k != "aliases"}
            out.append((aliases, System.from_dict({"schema": SYSTEM_SCHEMA, **body}, where=f"catalog/{name}")))
    return tuple(out)


def systems() -> tuple[System, ...]:
    """Every catalog system (one node each)."""
    return tuple(s for _, s in _systems())


def get_system(name: str, *, nodes: int | None = None, devices: int | None = None) -> System:
    """A catalog system by name or alias, with ``nodes`` nodes or ``devices`` devices in all (default: as the
    catalog lists it; :func:`with_nodes`, :func:`with_devices`); names resolve by the rule of
    :func:`roofline.core.names.resolve` (a unique prefix taken, and said).

    >>> s = get_system("dgx-h100", nodes=16)
    >>> s.devices, s.tier("node").bandwidth / 1e9, s.tier("cluster").per_device_bandwidth(8) / 1e9
    (128, 450.0, 50.0)
    >>> s = get_system("gb200-nvl72", devices=64)      # 16 trays of 4, one NVLink domain of 64
    >>> s.nodes, s.domain, s.domains
    (16, 64, 1)
    """
    from roofline.core import arguments as arg

    arg.text(name, "get_system", "name")
    arg.optional_int(nodes, "get_system", "nodes")
    arg.optional_int(devices, "get_system", "devices")
    index = {normalize(k): s for aliases, s in _systems() for k in (s.name, *aliases)}
    found = names.resolve(name, index, "system", shown=lambda s: s.name)
    return _scaled(found, nodes, devices)


def _scaled(system: System, nodes: int | None, devices: int | None) -> System:
    from roofline.core import arguments as arg

    if nodes is not None and devices is not None:
        both = [arg.option_for("get_system", k) for k in ("nodes", "devices")]
        raise RooflineError(f"{both[0]} and {both[1]}: give one, not both" if all(both) else
                            "get_system: give nodes or devices, not both")
    if devices is not None:
        return with_devices(system, devices)
    return system if nodes is None else with_nodes(system, nodes)


#: most nodes a system is scaled to (2**20: a million nodes, far past any machine built)
MAX_NODES = 2**20


def with_nodes(system: System, nodes: int) -> System:
    """``system`` scaled to ``nodes`` nodes (1 to 2**20; more devices than one scale-up domain need a cluster
    tier)."""
    from dataclasses import replace

    from roofline.core import arguments as arg

    arg.positive_int(nodes, "with_nodes", "nodes", maximum=MAX_NODES)
    domain = system.domain_devices or system.devices_per_node
    if nodes * system.devices_per_node > domain and not any(t.scope == "cluster" for t in system.tiers):
        raise RooflineError(f"system {system.name!r} has no cluster tier: it cannot span {nodes} nodes "
                            f"(more than its scale-up domain of {domain} devices)")
    return replace(system, nodes=nodes)


def with_devices(system: System, devices: int) -> System:
    """``system`` with ``devices`` devices in all: a whole number of its nodes (a GB200 NVL72 comes in trays of
    4 GPUs, so any multiple of 4, a partial rack included; a DGX in whole nodes of 8), else one line naming the
    granularity.  The nodes follow (:func:`with_nodes`), and the racks or pods from the domain
    (:attr:`System.domains`)."""
    from roofline.core import arguments as arg

    per = system.devices_per_node
    arg.positive_int(devices, "with_devices", "devices", maximum=MAX_NODES * per)
    if devices % per:
        unit = "node" if (system.domain_devices or per) == per else "node (tray)"
        raise RooflineError(f"{arg.called('with_devices', 'devices', devices)} {system.name} comes in whole nodes of "
                            f"{per} devices (one {unit} "
                            f"is the smallest part), so the count must be a multiple of {per} "
                            f"(nearest: {max(per, devices // per * per)} or {-(-devices // per) * per})")
    return with_nodes(system, devices // per)


def resolve_system(spec: str, *, nodes: int | None = None, devices: int | None = None) -> System:
    """A System from a catalog name or a system JSON file (``roofline.system/2``, or an older one)."""
    from roofline.core import arguments as arg

    arg.text(spec, "resolve_system", "spec")
    if spec.lower().endswith(".json") or _is_file(spec):
        return _scaled(System.load(spec), nodes, devices)
    return get_system(spec, nodes=nodes, devices=devices)
