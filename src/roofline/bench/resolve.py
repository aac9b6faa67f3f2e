"""A device as ``--device`` takes it: a catalog name or alias, a device JSON file, or ``'local'``.

``'local'`` is the last ``roofline bench`` measurement, cached on this machine
(:func:`roofline.bench.cache.load_local_device`); every other spec goes to the catalog
(:func:`roofline.catalog.resolve_device`).  Code that accepts ``'local'`` (the commands,
the demo, measurement, the trace frontend, the network bench, ``roofline.device()``)
resolves through here; the layers below the bench take a Device or a catalog name.

>>> resolve_device("h100").name
'NVIDIA H100 SXM5 80GB'
"""

from __future__ import annotations

from roofline import catalog
from roofline.bench.cache import load_local_device
from roofline.hardware.device import Device


def resolve_device(spec: str | Device) -> Device:
    """A Device from a catalog name, a device JSON file, or 'local' (the cached bench result)."""
    if isinstance(spec, Device):
        return spec
    from roofline.core import arguments as arg

    arg.text(arg.need(spec, str, "resolve_device", "spec", "a device name, a device JSON path (str) or a Device"),
             "resolve_device", "spec")
    if spec.lower() == "local":
        return load_local_device()
    return catalog.resolve_device(spec)
