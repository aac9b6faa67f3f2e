"""Tests' shorthand for a serving run: flat keywords, each sent to its group of :class:`ServeConfig` or to
:class:`Traffic` by field name (an unknown name is a TypeError), then ``roofline.serve`` as users call it."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import roofline
from roofline.serving.config import Batching, Kernels, Memory, Precision, ServeConfig, Timing
from roofline.serving.requests import Traffic

GROUPS = {"precision": Precision, "kernels": Kernels, "batching": Batching, "memory": Memory, "timing": Timing}


def split(flat: dict[str, Any]) -> tuple[Traffic, ServeConfig]:
    """The flat keywords as (traffic, config)."""
    left = dict(flat)
    traffic = Traffic(**{f.name: left.pop(f.name) for f in fields(Traffic) if f.name in left})
    groups = {g: cls(**{f.name: left.pop(f.name) for f in fields(cls) if f.name in left}) for g, cls in GROUPS.items()}
    if left:
        raise TypeError(f"not a field of Traffic or ServeConfig: {sorted(left)}")
    return traffic, ServeConfig(**groups)


def config(**flat: Any) -> ServeConfig:
    traffic, cfg = split(flat)
    assert traffic == Traffic(), "config() takes ServeConfig fields only"
    return cfg


def serve(model: Any, device: Any = None, *, system: Any = None, tp: int = 1, slo: Any = None,
          **flat: Any) -> Any:
    traffic, cfg = split(flat)
    return roofline.serve(model, device, system=system, tp=tp, traffic=traffic, config=cfg, slo=slo)
