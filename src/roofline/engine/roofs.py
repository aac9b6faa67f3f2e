"""Each op's roofs and roofline times: the memory roof of its level, the hierarchical cache terms, the
roofline formula (:func:`roofline.core.formula.roofline_times`) over them, and the collectives' own times
(:func:`roofline.engine.collectives.collective_times`).  :func:`roofline.engine.analysis.analyze` calls
:func:`op_times`; the compute roofs it passes in are chosen there (the TF32 rule)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from roofline.core.formula import roofline_times
from roofline.engine.collectives import collective_times
from roofline.hardware.device import Device, MemoryCeiling
from roofline.work.workload import Workload
from roofline.work.workload_columns import CACHE_BYTES


class OpTimes(NamedTuple):
    """The roofline of every op (:func:`op_times`)."""

    levels: list[MemoryCeiling]  # the memory roof of each distinct level
    level_index: np.ndarray  # each op's index into ``levels``
    bandwidth: np.ndarray  # each op's memory roof (B/s)
    cache_time: np.ndarray | None  # each op's cache term, or None
    compute_time: np.ndarray
    memory_time: np.ndarray
    time: np.ndarray  # the roofline time
    latency_time: np.ndarray | None  # the per-hop latency part of each collective's memory time, or None


def op_times(w: Workload, device: Device, peak: np.ndarray, warnings: list[str]) -> OpTimes:
    """The roofline of every op (:class:`OpTimes`), its collectives timed by
    :func:`roofline.engine.collectives.collective_times`."""
    levels, level_of_code, level_bw = level_roofs(w, device, warnings)  # memory roof per distinct level
    level_index = level_of_code[w.columns["level"]]
    bandwidth = level_bw[w.columns["level"]]
    cache = cache_time(w, device, levels, warnings)
    compute_time, memory_time, time = roofline_times(w.columns["flops"], w.bytes, peak, bandwidth, cache)
    latency_time = collective_times(w, device, level_index, memory_time, warnings)
    if latency_time is not None:
        time = np.maximum(compute_time, memory_time)
    return OpTimes(levels, level_index, bandwidth, cache, compute_time, memory_time, time, latency_time)


def cache_time(w: Workload, device: Device, levels: list[MemoryCeiling], warnings: list[str]) -> np.ndarray | None:
    """Per op, the slowest of its hierarchical terms (cache bytes / that level's bandwidth), or None when no op
    has any; a level a term needs joins ``levels``, one the device lacks is a warning."""
    cache_time: np.ndarray | None = None
    for column, level in CACHE_BYTES.items():  # hierarchical terms: the slowest level sets the memory time
        cache = w.columns[column]
        if not cache.any():
            continue
        found = device.find_level(level)
        if found is None:
            warnings.append(f"device {device.name!r} has no {level} ceiling; {column} is ignored")
            continue
        m = found
        if m not in levels:
            levels.append(m)
        term = cache / m.bandwidth
        cache_time = term if cache_time is None else np.maximum(cache_time, term)
    return cache_time


def level_roofs(w: Workload, device: Device, warnings: list[str]) -> tuple[list[MemoryCeiling], np.ndarray, np.ndarray]:
    """(levels used, level index per level code (-1: interconnect), bandwidth per level code)."""
    levels: list[MemoryCeiling] = []
    level_of_code = np.empty(len(w.tables["level"]), dtype=np.int32)
    level_bw = np.empty(len(w.tables["level"]))
    for code, name in enumerate(w.tables["level"]):
        if name == "interconnect":
            level_of_code[code] = -1
            if device.interconnect is None:
                level_bw[code] = math.inf if not np.any(w.columns["level"] == code) else device.main_memory.bandwidth
                if np.any(w.columns["level"] == code):
                    warnings.append(f"device {device.name!r} lists no interconnect; collective ops use main-memory bandwidth")
            else:
                level_bw[code] = device.interconnect.bandwidth
            continue
        found = device.find_level(name or None)  # no exception on the hot path: most tables name absent levels
        m = found or device.main_memory
        if found is None and np.any(w.columns["level"] == code):
            warnings.append(f"device {device.name!r} has no {name} ceiling; those ops use {m.level}")
        if m not in levels:
            levels.append(m)
        level_of_code[code] = levels.index(m)
        level_bw[code] = m.bandwidth
    return levels, level_of_code, level_bw
