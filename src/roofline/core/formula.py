"""The roofline formula, the one place it is computed: time = max(FLOPs / peak, bytes / bandwidth).

Per op (:func:`roofline_times`: :func:`roofline.engine.analysis.analyze` over a workload's ops) or summed over
the ops of a symbolic workload for a batch of scenarios at once (:func:`scenario_times`: the LLM sweeps,
:mod:`roofline.llm.metrics`).  Pure numpy, no roofline types: every layer that times work shares it.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def roofline_times(flops: Any, nbytes: Any, peak: Any, bandwidth: Any, other_memory_time: Any = None, *,
                   scratch: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The roofline, the one place it is computed: (compute time, memory time, time) in seconds.

    compute = FLOPs / peak; memory = bytes / bandwidth (or ``other_memory_time`` where that is
    longer: per-level cache terms); time = max(compute, memory).  Arguments broadcast (one op, ops,
    scenarios x ops), so the per-op analysis and every batch of scenarios
    (:func:`scenario_times`) share it.  ``scratch``: ``flops`` and ``nbytes`` are float arrays
    the caller no longer needs, and become the compute and memory times (no new arrays).

    >>> [float(x) for x in roofline_times(2e9, 1e9, 100e9, 10e9)]  # 20 ms computing, 100 ms reading
    [0.02, 0.1, 0.1]
    """
    compute = np.divide(flops, peak, out=flops if scratch else None)
    memory = np.divide(nbytes, bandwidth, out=nbytes if scratch else None)
    if other_memory_time is not None:
        memory = np.maximum(memory, other_memory_time, out=memory if scratch else None)
    return compute, memory, np.maximum(compute, memory)


def scenario_times(terms: np.ndarray, flops_coef: np.ndarray, bytes_coef: np.ndarray, peak: np.ndarray,
                   bandwidth: np.ndarray, role: np.ndarray, level: np.ndarray, count: np.ndarray, *,
                   bytes_group: np.ndarray | None = None, split: bool = False) -> Any:
    """Roofline time of a whole workload for a batch of scenarios at once, per scenario.

    A workload given symbolically: each op's FLOPs and bytes are linear in a few shape terms,
    ``flops_coef`` / ``bytes_coef`` (ops, terms), and ``terms`` (scenarios, terms) holds each
    scenario's term values (batch, tokens, keys, ...).  Scenarios differ in shape, device and
    precision: ``peak`` (scenarios, roles) and ``bandwidth`` (scenarios, levels) are each
    scenario's roofs, and op i uses ``peak[:, role[i]]`` and ``bandwidth[:, level[i]]``.
    ``bytes_coef`` may also be (groups, ops, terms), with ``bytes_group`` (scenarios,) picking
    each scenario's row (element sizes differ between precisions).  ``count`` (ops,) repeats an
    op.  Returns the sum over ops of :func:`roofline_times`' time, or with ``split`` the sums of
    the compute and of the memory terms (compute, memory).

    >>> import numpy as np   # one op, 2 FLOPs and 1 byte per token; batches of 1 and 100 tokens
    >>> t = scenario_times(np.array([[1.0], [100.0]]), np.array([[2.0]]), np.array([[1.0]]),
    ...                    np.array([[10.0]]), np.array([[1.0]]), np.array([0]), np.array([0]), np.array([1.0]))
    >>> t.tolist()  # max(2/10, 1/1) and max(200/10, 100/1)
    [1.0, 100.0]
    """
    n = len(terms)
    compute_sum, memory_sum, total = np.zeros(n), np.zeros(n), np.zeros(n)
    groups: list[tuple[Any, np.ndarray]]
    if bytes_coef.ndim == 2:
        groups = [(slice(None), bytes_coef)]
    else:
        assert bytes_group is not None
        groups = [(bytes_group == g, bytes_coef[g]) for g in range(len(bytes_coef))]
    for r in np.unique(role):
        for lv in np.unique(level[role == r]):
            ops = (role == r) & (level == lv)
            counts = count[ops]
            flops = terms @ flops_coef[ops].T
            nbytes = np.empty_like(flops)
            for rows, coef in groups:
                nbytes[rows] = terms[rows] @ coef[ops].T
            c, m, t = roofline_times(flops, nbytes, peak[:, r:r + 1], bandwidth[:, lv:lv + 1], scratch=True)
            if split:
                compute_sum += c @ counts
                memory_sum += m @ counts
            else:
                total += t @ counts
    return (compute_sum, memory_sum) if split else total
