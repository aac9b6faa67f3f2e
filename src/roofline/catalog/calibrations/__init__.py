"""Cited calibrations shipped with catalog devices (``roofline.calibration/2``), one JSON file per device.

Each file holds what published *kernel-level* measurements say about one catalog device: the SM count tile
and wave quantization use (:mod:`roofline.engine.gemm_shape`), and efficiency curves by op kind, each point cited
(:mod:`roofline.hardware.calibration_curves`).  Nothing in them is fitted to, or chosen by looking at, whole-model
step times, time to first token or tokens/s.  A device without a file has a first-principles forecast only
(achievable roofs and its overhead floor), and the forecast says so.

>>> cited_calibration("NVIDIA H100 SXM5 80GB").quantization.sms
132
>>> cited_calibration("no such device") is None
True
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from roofline.hardware.calibration import Calibration


@lru_cache(maxsize=1)
def _by_device() -> dict[str, Calibration]:
    out: dict[str, Calibration] = {}
    for entry in sorted(resources.files(__name__).iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".json"):
            cal = Calibration.from_dict(json.loads(entry.read_text(encoding="utf-8")),
                                        where=f"catalog/calibrations/{entry.name}")
            if cal.device in out:
                raise RuntimeError(f"catalog/calibrations: two files for {cal.device!r}")
            out[cal.device] = cal
    return out


def cited_calibration(device_name: str) -> Calibration | None:
    """The shipped cited calibration of the catalog device named ``device_name`` (its catalog name), else None."""
    return _by_device().get(device_name)


def devices_with_cited_calibration() -> tuple[str, ...]:
    return tuple(_by_device())
