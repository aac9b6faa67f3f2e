"""What a mixture-of-experts layer adds to a training device's memory beyond its weights' states and the dense
activations: the routed tokens' activations at a capacity factor, and the all-to-all buffers.

Every term, per device, derived:

* **Expert states.**  An expert's weights, gradient and Adam state are held by the ``ep`` group's one rank that
  hosts it (``E / ep`` experts per rank: :func:`roofline.llm.training.stage_params`) and sharded by ZeRO over its
  expert-data-parallel replicas, ``dp x cp / ep`` (Megatron-Core's expert data parallel group, "EP is a sub-group
  of DP": ``megatron/core/transformer/moe/README.md``, "MoE Parallel Folding"; :func:`roofline.planner.dims.replicas`
  with ``expert=True``); the dense parameters over ``dp x cp``.  Megatron-MoE-ModelZoo's estimator states the same
  (``misc/tools/deepseek_mem_estimate.py`` at e8650517: ``moe_dp = gpus // pp // ep // etp``, per rank ``(6 + 12 /
  moe_dp)`` bytes per expert parameter with the distributed optimizer).  That is :mod:`roofline.planner.train`'s.
* **Routed activations.**  Dropless, each device's ``s b`` tokens leave as ``s b k`` rows (top-k) and, with balanced
  routing, as many arrive: the experts' GEMM inputs (``k h`` per token, the dispatched tokens, the estimator's
  ``permute_out``), their fc1 outputs (``2 k f``) and activation (``k f``), and the combine's input (``k h``, its
  ``unpermute_alltoall_out``) are kept for the backward, ``k`` rows a token
  (:func:`roofline.llm.training.routed_activation_bytes_per_layer`; DeepSeek-V3's MoE layer at s = 4096, tp 1:
  448 + 256 + 128 + 448 MiB, the estimator's figures).  With a capacity factor ``c`` (``capacity=``, Megatron-Core
  ``--moe-expert-capacity-factor``) each expert takes at most ``capacity = s b k c / E`` rows from each source rank
  (README: "capacity = num_tokens_per_rank * topk * capacity_factor / num_experts"), so a rank's ``E / ep`` experts
  receive up to ``ep x E / ep x s b k c / E = c s b k`` rows, exactly that when padded to capacity
  (``--moe-pad-expert-input-to-capacity``, what a bound must assume): the routed share times ``c``.
* **Folded expert layouts** (etp below tp, or not given: etp 1, :func:`roofline.planner.ep.ep_group`): the MoE layer
  takes the device's sequence shard, ``s b / tp`` tokens, and dispatches them at full width (Megatron-Core's
  parallel folding: the expert tensor-parallel group, not tp, splits the experts), so the rows of the hidden width
  the device keeps -- the experts' GEMM input and the combine's input, ``2 k h`` per token -- are ``1 / tp`` of the
  whole-sequence count the dense model's activations carry (:func:`folded_saving`); the experts' inner rows (``k f /
  tp`` per token either way) are the same.
* **All-to-all buffers.**  DeepEP's dispatch and combine run through one registered buffer per rank, allocated once
  and held all step (Megatron-Core ``fused_a2a.get_buffer``: the larger of the dispatch and the combine configs'
  ``get_nvl_buffer_size_hint`` and ``get_rdma_buffer_size_hint`` for the ep group, ``hidden_bytes = h x max(2,
  element size)``; DeepEP ``csrc/legacy/config.hpp`` at dd758caf, :func:`deepep_buffer_bytes`).  The plain
  all-to-all dispatcher (``dispatcher=alltoall``) allocates its outputs per call (counted with the routed rows).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from roofline.llm.table import EXP, build_table
from roofline.llm.training import TrainingRun, routed_activation_bytes_per_layer, row_params

#: DeepEP's recommended configs (``Buffer.get_dispatch_config`` / ``get_combine_config``, ``deep_ep/buffers/legacy.py``
#: at dd758caf): ranks -> (NVLink receive-chunk tokens, RDMA receive-chunk tokens), the larger of dispatch and
#: combine (they agree for every size); ``Buffer.num_sms = 20`` (Megatron-Core's default for DeepEP,
#: ``token_dispatcher.py``: "None -> 20")
DEEPEP_RECV_TOKENS = {2: (256, 128), 4: (256, 128), 8: (256, 128), 16: (288, 128), 24: (288, 128), 32: (288, 128),
                      48: (288, 128), 64: (288, 128), 96: (480, 128), 128: (560, 128), 144: (720, 128),
                      160: (720, 128)}
DEEPEP_SMS = 20
NVL_PEERS = 8  # DeepEP's LEGACY_NUM_MAX_NVL_PEERS
MAX_TOPK, MAX_SCALES, SOURCE_META, TOPK_IDX = 128, 128, 8, 8  # kNumMaxTopK, kNumMaxScales, sizeof(SourceMeta), int64


def deepep_buffer_bytes(ep: int, hidden: int, element: int = 2) -> float:
    """Bytes of DeepEP's NVLink and RDMA buffers on each rank of an ``ep`` group for tokens of ``hidden`` elements
    (``config.hpp``'s hints; ``c = num_sms / 2 = 10`` channels, ``n = min(ep, 8)`` NVLink ranks, ``r = ep / 8``
    RDMA ranks, ``t_nvl`` / ``t_rdma`` receive-chunk tokens of :data:`DEEPEP_RECV_TOKENS`, ``H = hidden x max(2,
    element)``):

    * NVLink: ``c n (2 r + 3) 4 + c n t_nvl (H + 8 + 128 x 8 + 128 x 4 + 128 x 4)``;
    * RDMA (ep > 8): ``c r (8 x 2 + 2) 2 x 4 + 2 c r t_rdma (H + 8 + 128 x 8 + 128 x 4 + 128 x 4 + 16)``;

    each rounded up to 128 bytes.  An ep outside DeepEP's table takes the next size up (the largest beyond it).

    >>> round(deepep_buffer_bytes(64, 7168) / 2**20, 1)   # DeepSeek-V3, ep 64: 360.2 + 320.5 MiB
    680.7
    """
    sizes = sorted(DEEPEP_RECV_TOKENS)
    t_nvl, t_rdma = DEEPEP_RECV_TOKENS[next((k for k in sizes if k >= ep), sizes[-1])]
    c, n, r = DEEPEP_SMS // 2, min(ep, NVL_PEERS), max(ep // NVL_PEERS, 1)
    token = hidden * max(2, element) + SOURCE_META + MAX_TOPK * TOPK_IDX + MAX_TOPK * 4 + MAX_SCALES * 4
    nvl = c * n * (2 * r + 3) * 4 + c * n * t_nvl * token
    rdma = 0 if ep <= NVL_PEERS else c * r * (NVL_PEERS * 2 + 2) * 2 * 4 + 2 * c * r * t_rdma * (token + 16)
    return float(-(-nvl // 128) * 128 + -(-rdma // 128) * 128)


def folded_saving(run: TrainingRun, layout: Any) -> float:
    """Activation bytes per layer (the layers' mean) a folded expert layout keeps fewer than the whole-sequence
    count (module docs): ``(1 - 1/tp) 2 k h`` elements per token of the device's ``s b / cp``, on the MoE layers;
    0 for etp = tp, tp 1, or full recomputation.

    >>> from types import SimpleNamespace as N
    >>> run = N(arch=N(experts=8, top_k=2, hidden=1024, layers=4, moe_layers=2), seq=16, precisions=N(bytes=lambda: {"a": 2}))
    >>> folded_saving(run, N(tp=2, etp=1, cp=1, micro_batch=1, recompute="selective"))   # 1/2 x 2 x 2 x 1024 x 2 B x 16 x 2/4
    32768.0
    """
    a, tp = run.arch, layout.tp
    if tp <= 1 or layout.etp == tp or layout.recompute == "full" or not a.experts:
        return 0.0
    tokens = run.seq / layout.cp * layout.micro_batch
    per_token = (1 - 1 / tp) * 2 * a.top_k * a.hidden * float(run.precisions.bytes()["a"])
    return tokens * per_token * a.moe_layers / a.layers


def moe_memory(run: TrainingRun, layout: Any, layers_in_flight: float) -> tuple[float, float]:
    """(activation bytes a capacity factor adds to a device holding ``layers_in_flight`` layers' worth of
    micro-batches, its all-to-all buffers): see the module.  (0, 0) for a dense model; the buffers only with
    ep > 1.  A factor below 1 takes rows away (dropped tokens)."""
    a = run.arch
    if not a.experts:
        return 0.0, 0.0
    extra = 0.0
    if layout.capacity:
        routed = routed_activation_bytes_per_layer(run, tp=layout.tp, cp=layout.cp, micro_batch=layout.micro_batch,
                                                   sp=layout.sp, recompute=layout.recompute)
        extra = (layout.capacity - 1) * routed * layers_in_flight
    extra -= folded_saving(run, layout) * max(layout.capacity, 1.0) * layers_in_flight
    deepep = getattr(layout, "dispatcher", "deepep") == "deepep"
    buffers = deepep_buffer_bytes(layout.ep, a.hidden, int(run.precisions.bytes()["a"])) if layout.ep > 1 and deepep else 0.0
    return extra, buffers


def mtp_params(run: TrainingRun, tp: int, ep: int) -> tuple[float, float]:
    """(dense, routed-expert) parameters one of ``tp`` devices holds of ``run``'s multi-token prediction modules
    (``--mtp N``, :func:`roofline.llm.table.build_table`'s ``mtp``: per module ``eh_proj``, its norms and one
    transformer block like the model's, E / ep routed experts; the embedding and lm_head are the model's own,
    shared): what the last pipeline stage, which runs them, keeps weights, gradients and optimizer state of.

    >>> from roofline.llm.config import load_arch
    >>> d, e = mtp_params(TrainingRun(load_arch("deepseek-v3"), seq=4096, global_batch=8, mtp=1), 1, 1)
    >>> round((d + e) / 1e9, 2)   # 256 x 3 x 7168 x 2048 = 11.27B experts, shared 0.04B, MLA 0.19B, eh_proj 0.10B
    11.61
    """
    if not run.mtp:
        return 0.0, 0.0
    a = run.arch
    table = build_table(a, "prefill", tp, True, True, mtp=run.mtp)
    rows = np.array([".mtp." in n and not n.endswith(("embed.tokens", "lm_head")) for n in table.names], dtype=bool)
    params = row_params(run, table, tp, ep) * table.counts
    coef = table.coef["wq"] + table.coef["wu"]
    expert = coef[:, EXP] * (a.experts / ep if a.experts else 0) * table.counts
    return float(params[rows].sum() - expert[rows].sum()), float(expert[rows].sum())


def mtp_activations(run: TrainingRun, per_layer: float, flight: float, logits: float) -> float:
    """Activation bytes the last stage keeps for ``run``'s MTP modules: each a layer's (``per_layer``, the model's
    mean) for the ``flight`` micro-batches it holds, and its own head's logits (``logits``, the model's)."""
    return run.mtp * (per_layer * flight + logits)
