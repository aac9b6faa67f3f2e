"""Where the latest ``roofline bench`` result lives, so ``--device local`` needs no re-measuring.

``$ROOFLINE_CACHE_DIR`` if set (tests point it at a temporary directory), else
``$XDG_CACHE_HOME/roofline``, else ``~/.cache/roofline``; the file is
``local-device.json`` (a ``roofline.device/3`` document).
"""

from __future__ import annotations

import os
from pathlib import Path

from roofline.bench_facts import BENCH_VERSION
from roofline.device import ComputeCeiling, Device, MemoryCeiling
from roofline.errors import RooflineError

CACHE_FILE = "local-device.json"


def cache_dir() -> Path:
    """The cache directory (not created)."""
    override = os.environ.get("ROOFLINE_CACHE_DIR")
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "roofline"


def local_device_path() -> Path:
    """Path of the cached measurement: ``<cache_dir>/local-device.json``."""
    return cache_dir() / CACHE_FILE


def load_local_device() -> Device:
    """The last measured device, or a one-line error saying how to make one.

    A cache written by ``roofline bench`` must come from this machine (its fingerprint:
    CPU model, CPU count, ISA flags) and from this version of the bench; otherwise it is
    refused with the command to re-measure.  (A device a user saved there by hand, not
    measured by the bench, is taken as it is.)

    >>> from roofline.bench import load_local_device   # doctest: +SKIP
    >>> load_local_device().kind                        # doctest: +SKIP
    'cpu'
    """
    path = local_device_path()
    if not path.is_file():
        raise RooflineError(f"no measured device cached at {path}; run 'roofline bench' first (it takes about a minute)")
    device = Device.load(path)
    check_cached(device, str(path))
    return device


def check_cached(device: Device, where: str) -> None:
    """Refuse a bench measurement from another machine or from an older bench (one line, the fix in it)."""
    from roofline.bench.machine import fingerprint

    ceilings: list[ComputeCeiling | MemoryCeiling] = [*device.compute, *device.memory]
    measured = any(c.provenance.source == "roofline bench" for c in ceilings)
    if not measured and device.bench is None:
        return
    facts = device.bench
    if facts is None or facts.version < BENCH_VERSION:
        got = "no version" if facts is None else f"version {facts.version}"
        raise RooflineError(f"the cached measurement comes from an older roofline bench ({got}, this is version "
                            f"{BENCH_VERSION}: its roofs may not be true bounds); re-measure with 'roofline bench'",
                            where=where)
    here = fingerprint()  # a GPU measurement adds "; gpu NAME" to the host's fingerprint
    if facts.machine != here and not facts.machine.startswith(here + "; gpu "):
        raise RooflineError(f"the cached measurement was taken on another machine ({facts.machine!r}; this is "
                            f"{here!r}); re-measure here with 'roofline bench'", where=where)


def save_local_device(device: Device) -> Path:
    """Write ``device`` as the cached local measurement (atomically) and return the path."""
    path = local_device_path()
    device.save(path)
    return path
