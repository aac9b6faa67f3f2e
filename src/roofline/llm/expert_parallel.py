"""Expert parallelism in serving: the experts of a replica's ``tp`` devices split ``ep`` ways, and attention
data-parallel (``--dp-attention``), as one validated value and the per-device basis rows it implies.

* ``ep`` (``--ep N``): each of ``ep`` ranks holds ``E / ep`` whole experts, each expert split ``tp / ep`` ways
  (TensorRT-LLM's ``moe_tp_size x moe_ep_size = tp_size``: NVIDIA/TensorRT-LLM tensorrt_llm/mapping.py,
  ``Mapping(moe_tp_size, moe_ep_size)``).  ``ep`` divides ``tp`` and the routed experts; a dense model has none.
* ``dp_attention`` (``--dp-attention``): every device holds the whole attention (weights replicated) and runs
  ``1 / tp`` of the iteration's sequences; the experts are split over all ``tp`` devices (``ep = tp``, the
  SGLang ``--enable-dp-attention`` deployment of DeepSeek-V3, sgl-project/sglang docs
  references/deepseek.md "Data Parallelism Attention"; vLLM ``--data-parallel-size`` with
  ``--enable-expert-parallel``).  The tokens reach their experts by a dispatch and come back by a combine.
  Dense MLP layers (DeepSeek's first three) run data-parallel like the attention (SGLang
  ``--moe-dense-tp-size 1``); the KV cache of a device is its own sequences', every head
  (:func:`roofline.llm.sizes.kv_cache_bytes`), and every weight but the routed experts is whole on it.

Experts touched per rank.  A step of ``n`` tokens, each choosing ``k`` of ``E`` experts uniformly, leaves a given
expert untouched with probability ``(1 - k/E)^n`` (:func:`roofline.llm.basis.experts_touched`); a rank holds
``E / ep`` of them, so by linearity of expectation it reads ``(E / ep) (1 - (1 - k/E)^n)`` experts: the global
expected count over ``ep``, growing with the batch until all ``E / ep`` are read.  ``worst``: all ``n k``
choices land on one rank, ``min(E / ep, n k)``; ``best``: the ``k`` experts of one shared choice spread over the
ranks, ``ceil(k / ep)`` on the busiest.  The step waits for its busiest rank: ``worst`` is the bound's safe side.

Because each rank's experts are ``tp / ep`` times wider than the tensor-parallel ``1 / tp`` slice, a rank's
expert weight bytes are ``touched_per_rank x ep`` of the table's ``1 / tp`` slices: the basis column
:data:`~roofline.llm.table.EXP` takes that value (:func:`experts_column`) and the op table is unchanged.

Dispatch and combine (``dp_attention`` only: otherwise every device already holds every token after the
attention all-reduce, and the MoE output is all-reduced as in tensor parallelism).  Per MoE layer a rank sends
one message per token-choice, ``n_rank k`` of them: ``hidden + hidden/128 x 4 + 16`` bytes in FP8 with its
scales for the dispatch, ``2 hidden`` bytes in BF16 for the combine (DeepEP's low-latency kernels and the
accounting of its tests/test_low_latency.py), over the logical bandwidth DeepEP's table gives at that EP size
(catalog/kernels/deepep-low-latency.json, log-interpolated between rows; below EP 8 the EP 8 row).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError
from roofline.llm.basis import experts_touched, parse_moe_routing
from roofline.llm.config import Arch
from roofline.llm.table import EXP, ONE, TERMS

#: The DeepEP table's dispatch and combine messages (bytes per token-choice) in terms of the hidden size.
FP8_SCALE_BLOCK = 128


@dataclass(frozen=True)
class ExpertParallel:
    """``ep`` expert-parallel ranks among a replica's ``tp`` devices; ``dp_attention``: attention data-parallel."""

    ep: int = 1
    dp_attention: bool = False

    @property
    def active(self) -> bool:
        return self.ep > 1 or self.dp_attention


def check_ep(arch: Arch, tp: int, ep: Any = 1, dp_attention: Any = False) -> ExpertParallel:
    """The validated layout, or one line saying what is wrong (module docs).

    >>> from roofline.llm.config import load_arch
    >>> check_ep(load_arch("mixtral-8x7b"), 2, 2)
    ExpertParallel(ep=2, dp_attention=False)
    >>> check_ep(load_arch("mixtral-8x7b"), 4, 3)
    Traceback (most recent call last):
    ...
    roofline.core.errors.RooflineError: --ep 3 must divide the 8 routed experts of mixtral-8x7b and the replica's 4 devices (tp)
    """
    if isinstance(ep, bool) or not isinstance(ep, (int, np.integer)) or ep < 1:
        raise RooflineError(f"--ep must be an integer >= 1, got {ep!r}")
    if not isinstance(dp_attention, (bool, np.bool_)):
        raise RooflineError(f"--dp-attention is on or off (True/False), got {dp_attention!r}")
    ep, dp = int(ep), bool(dp_attention)
    if (ep > 1 or dp) and not arch.experts:
        what = f"--ep {ep}" if ep > 1 else "--dp-attention"
        raise RooflineError(f"{what} splits routed experts, and {arch.name} is a dense model (no experts)")
    if dp and ep == 1:
        ep = tp  # attention data-parallel puts the experts over every device of the replica
    if arch.experts % ep or tp % ep:
        raise RooflineError(f"--ep {ep} must divide the {arch.experts} routed experts of {arch.name} and the "
                            f"replica's {tp} devices (tp)")
    if dp and ep != tp:
        raise RooflineError(f"--dp-attention spreads the experts over all {tp} devices: --ep {ep} must be {tp}")
    return ExpertParallel(ep, dp)


def attention_tp(tp: int, layout: ExpertParallel) -> int:
    """The tensor-parallel width the op table is built at: 1 under attention data-parallelism (each device runs
    its own sequences with every head), else ``tp``."""
    return 1 if layout.dp_attention else tp


def experts_touched_per_rank(experts: int, top_k: int, tokens: Any, ep: int, routing: str = "expected") -> Any:
    """Distinct experts one EP rank (of ``ep``, ``experts / ep`` experts each) reads for a step of ``tokens``
    tokens (module docs: expected, worst = the busiest rank's upper bound, best).

    >>> [round(float(experts_touched_per_rank(256, 8, n, 8)), 2) for n in (1, 4, 64, 4096)]  # DeepSeek-V3, EP 8
    [1.0, 3.82, 27.81, 32.0]
    >>> float(experts_touched_per_rank(256, 8, 3, 8, "worst")), float(experts_touched_per_rank(256, 8, 3, 8, "best"))
    (24.0, 1.0)
    """
    routing = parse_moe_routing(routing)
    n = np.asarray(tokens, dtype=float)
    per = experts / ep
    if routing == "worst":
        return np.minimum(per, n * top_k)
    if routing == "best":
        return np.where(n > 0, min(float(math.ceil(top_k / ep)), per), 0.0)
    return experts_touched(experts, top_k, n, "expected") / ep


def experts_column(arch: Arch, tokens: Any, routing: str, layout: ExpertParallel | None = None) -> Any:
    """The basis column :data:`~roofline.llm.table.EXP` for a replica step of ``tokens`` tokens: the experts
    touched (no EP), or the busiest rank's experts x ``ep`` (module docs: the table's slices are ``1 / tp`` wide,
    a rank's experts ``ep / tp``; with attention data-parallel the table is built at tp 1, each rank's experts
    whole, so the column is the rank's count)."""
    if layout is None or layout.ep == 1:
        return experts_touched(arch.experts, arch.top_k, tokens, routing)
    per_rank = experts_touched_per_rank(arch.experts, arch.top_k, tokens, layout.ep, routing)
    return per_rank if layout.dp_attention else per_rank * layout.ep


def device_rows(arch: Arch, rows: np.ndarray, routing: str, layout: ExpertParallel) -> np.ndarray:
    """One device's basis rows of replica steps ``rows`` (configs, terms): under attention data-parallelism
    every term but the constant divided by the ``ep = tp`` devices (the sequences dealt evenly), the experts
    column that of the busiest rank over the replica's tokens; else the rows with the EP experts column."""
    from roofline.llm.table import TOK

    out = np.array(np.atleast_2d(rows), dtype=float)
    tokens = out[:, TOK].copy()
    if layout.dp_attention:
        keep = np.zeros(len(TERMS), dtype=bool)
        keep[[ONE, EXP]] = True
        out[:, ~keep] /= layout.ep
    out[:, EXP] = experts_column(arch, tokens, routing, layout)
    return out


def step_rows(arch: Arch, rows: np.ndarray, routing: str, layout: ExpertParallel) -> np.ndarray:
    """``rows`` as they are without expert parallelism, else :func:`device_rows`."""
    return device_rows(arch, rows, routing, layout) if layout.active else rows


def dispatch_combine_seconds(arch: Arch, tokens: Any, layout: ExpertParallel) -> Any:
    """Seconds per device of one replica step's EP dispatches and combines (every MoE layer), ``tokens`` in the
    replica (module docs; 0 without attention data-parallelism)."""
    n = np.asarray(tokens, dtype=float)
    if not layout.dp_attention or layout.ep == 1:
        return np.zeros_like(n)
    d_bw, c_bw = deepep_bandwidths(layout.ep)
    choices = n / layout.ep * arch.top_k  # messages each rank sends per layer
    h = arch.hidden
    dispatch = choices * (h + h / FP8_SCALE_BLOCK * 4 + 16) / d_bw
    combine = choices * 2 * h / c_bw
    return arch.moe_layers * (dispatch + combine)


def deepep_bandwidths(ep: int) -> tuple[float, float]:
    """(dispatch, combine) logical bytes/s of DeepEP's low-latency kernels at ``ep`` ranks: the cited table,
    log-linear in ``ep`` between its rows, its first and last rows outside them.

    >>> [round(x / 1e9) for x in deepep_bandwidths(8)], [round(x / 1e9) for x in deepep_bandwidths(2)]
    ([98, 127], [98, 127])
    """
    from roofline.catalog.kernels import kernel_table

    recs = kernel_table("deepep-low-latency").records()
    eps = np.log2([float(r["ep"]) for r in recs])
    x = math.log2(max(ep, 1))
    d = float(np.interp(x, eps, [float(r["dispatch_bandwidth_gbs"]) for r in recs]))
    c = float(np.interp(x, eps, [float(r["combine_bandwidth_gbs"]) for r in recs]))
    return d * 1e9, c * 1e9


def describe(layout: ExpertParallel, tp: int) -> str:
    """One phrase for reports: '' without EP."""
    if not layout.active:
        return ""
    if layout.dp_attention:
        return (f"attention data-parallel over {tp} devices (weights replicated, sequences split), experts "
                f"expert-parallel {layout.ep} ways with DeepEP low-latency dispatch/combine")
    return f"experts expert-parallel {layout.ep} ways ({tp // layout.ep}-way tensor-parallel within each expert)"
