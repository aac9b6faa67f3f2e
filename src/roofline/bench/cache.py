"""Where the latest ``roofline bench`` result lives, so ``--device local`` needs no re-measuring.

``$ROOFLINE_CACHE_DIR`` if set (tests point it at a temporary directory), else
``$XDG_CACHE_HOME/roofline``, else ``~/.cache/roofline``; the file is
``local-device.json`` (a ``roofline.device/1`` document).
"""

from __future__ import annotations

import os
from pathlib import Path

from roofline.device import Device
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

    >>> from roofline.bench import load_local_device   # doctest: +SKIP
    >>> load_local_device().kind                        # doctest: +SKIP
    'cpu'
    """
    path = local_device_path()
    if not path.is_file():
        raise RooflineError(f"no measured device cached at {path}; run 'roofline bench' first (it takes about a minute)")
    return Device.load(path)


def save_local_device(device: Device) -> Path:
    """Write ``device`` as the cached local measurement (atomically) and return the path."""
    path = local_device_path()
    device.save(path)
    return path
