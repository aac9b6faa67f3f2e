"""Compare devices (and precisions) for one workload: the ranking behind ``roofline compare``.

>>> from roofline import Op, Workload, get_device
>>> from roofline.comparison import compare
>>> w = Workload.from_ops([Op("gemm", kind="matmul", flops=2e12, bytes_read=3e8, precision="bf16", unit="matrix")])
>>> [r.device for r in compare(w, [get_device("l4"), get_device("h100")])]
['NVIDIA H100 SXM5 80GB', 'NVIDIA L4']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from roofline.advice import MATRIX_KINDS, llm_workload, tokens, with_matrix_precision
from roofline.analysis import Analysis, analyze
from roofline.device import Device
from roofline.errors import RooflineError
from roofline.llm.metrics import footprint
from roofline.llm.model import LLM_PRECISIONS
from roofline.precision import BITS, PRECISIONS
from roofline.summary import binding_roof
from roofline.workload import Workload


@dataclass
class CompareRow:
    """One (device, precision) of a comparison: roofline time, tokens/s (LLMs), binding roof, memory fit."""

    device: str
    precision: str
    time: float
    tokens_per_s: float
    binding: str
    analysis: Analysis
    memory: str = ""  # LLMs: footprint per device against the device's capacity

    def to_dict(self, best: float) -> dict[str, Any]:
        return {"device": self.device, "precision": self.precision, "time_s": self.time,
                "tokens_per_s": None if math.isnan(self.tokens_per_s) else self.tokens_per_s,
                "x_best": self.time / best, "binding_roof": self.binding, "memory": self.memory or None}


def at_precision(workload: Workload, precision: str) -> Workload:
    """The workload re-run at ``precision`` (see the command's help); an LLM workload is rebuilt from its run."""
    if precision not in PRECISIONS:
        raise RooflineError(f"--precision: {precision!r} is not one of {', '.join(PRECISIONS)}")
    llm = workload.llm
    if llm is not None:
        if precision not in LLM_PRECISIONS:
            raise RooflineError(f"--precision: {precision!r} is not available for LLMs; use one of "
                                f"{', '.join(LLM_PRECISIONS)}")
        p = replace(llm.precisions, weights=precision, activations=precision)
        return llm_workload(llm, precisions=p)
    mask = np.isin(workload.column("kind"), MATRIX_KINDS)
    w = with_matrix_precision(workload, precision, mask) if mask.any() else workload
    # the other ops store their data at that precision too
    old = np.asarray([BITS[p] for p in w.tables["precision"]], dtype=float)[w.columns["precision"]]
    scale = np.where(~mask & (old > BITS[precision]), BITS[precision] / old, 1.0)
    return w.replace(bytes_read=w.columns["bytes_read"] * scale, bytes_written=w.columns["bytes_written"] * scale,
                     weight_bytes=w.columns["weight_bytes"] * scale,
                     precision=np.where(~mask, precision, w.column("precision")))


def memory_fit(workload: Workload, device: Device) -> str:
    """LLMs: 'fits (16.6 of 80 GB)' or 'DOES NOT FIT (141.2 > 80 GB)' per device; '' otherwise.

    A ranking by roofline time alone would put a model that cannot be loaded first."""
    spec = workload.llm
    cap = device.main_memory.capacity
    if spec is None or not cap:
        return ""
    need = footprint(spec).total
    if need <= cap:
        return f"fits ({need / 1e9:.1f} of {cap / 1e9:.0f} GB)"
    return f"DOES NOT FIT ({need / 1e9:.1f} > {cap / 1e9:.0f} GB)"


def compare(workload: Workload, devices: Sequence[Device], precisions: Sequence[str] = ("as given",)
            ) -> list[CompareRow]:
    """Every (device, precision) analysed, fastest first, each with its binding roof.

    ``precisions``: "as given", or precisions to re-run the workload at (:func:`at_precision`).
    An LLM workload (one with ``llm``) also gets tokens/s and whether it fits each device's memory.

    >>> from roofline import Op, Workload, get_device
    >>> w = Workload.from_ops([Op("gemv", kind="matmul", flops=2e9, bytes_read=2e9, precision="bf16", unit="matrix")])
    >>> [(r.device, r.binding) for r in compare(w, [get_device("h100")])]
    [('NVIDIA H100 SXM5 80GB', 'HBM 3.35 TB/s (memory, 100% of the time)')]
    """
    rows = []
    for prec in precisions:
        w = workload if prec == "as given" else at_precision(workload, prec)
        for d in devices:
            a = analyze(w, d)
            tps = tokens(w) / a.total_time if w.llm is not None and a.total_time > 0 else math.nan
            rows.append(CompareRow(d.name, prec, a.total_time, tps, binding_roof(a).describe(), a, memory_fit(w, d)))
    rows.sort(key=lambda r: r.time)
    return rows


