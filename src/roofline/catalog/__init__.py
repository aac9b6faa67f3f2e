"""The device catalog: datasheet ceilings shipped as JSON data files, one per vendor.

Each file is ``{"schema": "roofline.catalog/1", "vendor": ..., "sources": {key:
{"title", "url"}}, "devices": [device objects]}``; a ceiling's
``provenance.source`` names a key of ``sources``.  Lookup ignores case and
punctuation and knows aliases.

>>> from roofline.catalog import get_device
>>> get_device("h100").name
'NVIDIA H100 SXM5 80GB'
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

from roofline import names
from roofline.device import Device
from roofline.errors import RooflineError
from roofline.names import normalize

CATALOG_SCHEMA = "roofline.catalog/1"


@lru_cache(maxsize=1)
def devices() -> tuple[Device, ...]:
    """Every catalog device, in file order."""
    out: list[Device] = []
    for entry in sorted(resources.files(__name__).iterdir(), key=lambda p: p.name):
        if not entry.name.endswith(".json"):
            continue
        data = json.loads(entry.read_text(encoding="utf-8"))
        if data.get("schema") != CATALOG_SCHEMA:
            raise RuntimeError(f"catalog file {entry.name}: bad schema {data.get('schema')!r}")
        for d in data["devices"]:
            d = {"vendor": data.get("vendor", ""), **d}
            out.append(Device.from_dict(d, where=f"catalog/{entry.name}", sources=data.get("sources", {}),
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
    """The ``n`` catalog device names closest to ``name``."""
    return names.closest(name, {alias: dev.name for alias, dev in _index().items()}, n)


def get_device(name: str) -> Device:
    """A catalog device by name or alias; unknown names fail with the three closest."""
    dev = _index().get(normalize(name))
    if dev is None:
        from roofline.fileio import shown

        raise RooflineError(f"unknown device {shown(name)}; closest: {', '.join(closest(name[:100]))}"
                            " (see 'roofline devices')")
    return dev


def resolve_device(spec: str | Device) -> Device:
    """A Device from a catalog name, a device JSON file, or 'local' (the cached bench result)."""
    if isinstance(spec, Device):
        return spec
    if spec.lower() == "local":
        from roofline.bench import load_local_device

        return load_local_device()
    if not isinstance(spec, str):
        raise RooflineError(f"device: expected a catalog name, a device JSON file or 'local', got {type(spec).__name__}")
    if spec.lower().endswith(".json") or _is_file(spec):
        return Device.load(spec)
    return get_device(spec)


def _is_file(spec: str) -> bool:
    """Whether ``spec`` names an existing file; a name the OS refuses (too long, a NUL byte) is no file."""
    try:
        return Path(spec).is_file()
    except (OSError, ValueError):
        return False
