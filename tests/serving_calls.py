"""Tests' shorthand for a serving run: flat keywords, each sent to its group of :class:`ServeConfig` or to
:class:`Traffic` by field name (an unknown name is a TypeError), then ``roofline.serve`` as users call it."""

from __future__ import annotations

from collections import deque
from dataclasses import fields
from typing import Any

import numpy as np

import roofline
from roofline.serving.config import Batching, Kernels, Memory, Precision, ServeConfig, Timing
from roofline.serving.requests import Traffic
from roofline.serving.schedulers import State

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


def scheduler_state(isl: Any, running: Any = (), gen: int = 0, free_blocks: int = 1000, block_size: int = 16) -> State:
    """A scheduler's state by hand: requests of prompt lengths ``isl`` (100 tokens to generate each); the ids in
    ``running`` admitted and prefilled, ``gen`` tokens generated, their blocks taken from ``free_blocks``."""
    n = len(isl)
    i32 = np.int32
    isl_ = np.asarray(isl, dtype=i32)
    s = State(isl_, np.full(n, 100, i32), np.zeros(n, i32), isl_.copy(), np.zeros(n, i32), np.zeros(n, i32),
              block_size, free_blocks)
    for r in running:
        s.done[r], s.gen[r] = s.target[r], gen
        s.blocks[r] = -(-(isl_[r] + gen) // block_size)
        s.free_blocks -= int(s.blocks[r])
        s.running.append(r)
    s.waiting = deque(r for r in range(n) if r not in running)
    return s
