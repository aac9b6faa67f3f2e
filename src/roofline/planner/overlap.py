"""Which communication of a training step hides behind compute in the forecast, rule by rule, as the frameworks
schedule it (each switchable: ``Layout.overlap_dp``, ``overlap_tp``, ``overlap_pp``, ``overlap_ep``; ``roofline plan
--overlap-dp/--overlap-tp/--overlap-pp/--overlap-ep on|off``).

Per micro-batch the busiest stage's device forecasts ``F`` seconds forward and ``B`` backward (recomputation
included); a collective of ``T`` forecast seconds per step exposes:

* **data parallel** (``overlap_dp``, default on): the gradients are reduced in buckets as the backward
  produces them (Megatron-LM ``--overlap-grad-reduce``, PyTorch DDP's gradient buckets): a reduction once
  per step (ZeRO 0 and 1, the gradients accumulating over the micro-batches) hides behind the last
  micro-batch's backward, ``max(0, T - B)``; ZeRO 2's reduce-scatter of every micro-batch behind that
  micro-batch's backward, ``m max(0, T/m - B)``.  The updated weights' all-gather (ZeRO 1, 2) behind the
  next step's first forward (``--overlap-param-gather``), ``max(0, T - F)``.  ZeRO 3's weight all-gathers
  are prefetched (FSDP's forward and backward prefetch): half behind each forward, half behind each
  backward, ``m (max(0, T/2m - F) + max(0, T/2m - B))``, its gradient reduce-scatter as ZeRO 2's.
  Off: all of ``T`` exposed.  The buckets bound what hides: the last gradient bucket is reduced only after the
  backward has produced it, and the first weight bucket gathered before the forward can start, so at least
  one bucket's share of ``T`` is exposed (:func:`bucket_share`: Megatron-Core's default bucket,
  ``max(40,000,000, 1,000,000 x dp)`` parameters); ZeRO 3's gathers, prefetched a layer ahead, keep no floor.
* **expert parallel** (``overlap_ep``, default on): the expert all-to-alls (:mod:`roofline.planner.ep`) of one
  micro-batch run while another computes: Megatron-Core's 1F1B with A2A overlap (``--overlap-moe-expert-parallel-comm``,
  the forward of micro-batch ``i + w`` merged with the backward of ``i``) and DeepSeek-V3's DualPipe (report section
  3.2.1).  A forward's all-to-alls hide behind the paired backward's compute, a backward's behind the paired
  forward's; the ``w = min(m, max(1, pp - 1))`` micro-batches of the warm-up (their forwards) and of the cool-down
  (their backwards) have no partner and expose theirs: per micro-batch ``c = T/m``, ``w c + (m - w) max(0, c - P)``
  (``P`` the partner phase's forecast).  Off: ``T x slots / m``, as the tp rule's (on the busiest stage's path).
  While hidden the dispatcher's kernels hold SMs: DeepEP's :data:`DEEPEP_SMS`, NCCL's all-to-all (``dispatcher=
  alltoall``) :data:`NCCL_CTAS`.
* **tensor and context parallel** (``overlap_tp``, default off): the activations' all-reduces
  (or reduce-scatter/all-gather pairs) and the context-parallel K/V exchange sit
  between the GEMMs that need their result, so they are exposed, ``T x slots / m`` (the bubble's slots
  too: they are on the busiest stage's critical path), unless asked (``--tp-comm-overlap``, userbuffers),
  then hidden behind the same micro-batch's compute, ``slots max(0, T/m - (F + B))``.
* **sequence parallelism's backward all-gathers** (their own rule, whatever ``overlap_tp`` says): each
  column-parallel GEMM's input, kept as its sequence shard, is all-gathered again for the weight gradient,
  started asynchronously before that GEMM's input gradient and waited on after it (Megatron-Core
  ``megatron/core/tensor_parallel/layers.py`` ``LinearWithGradAccumulationAndAsyncCommunication.backward`` at
  core_r0.8.0, baf94af3c667: ``handle = torch.distributed._all_gather_base(..., async_op=True)``, ``grad_input =
  grad_output.matmul(weight)``, ``handle.wait()``; the same in Megatron-LM ``megatron/mpu/layers.py`` at
  d898a8991d1a): per call ``max(0, T_call - t_dgrad)``, ``t_dgrad`` that GEMM's input gradient's share of the
  micro-batch's backward ``B`` (:func:`sp_dgrad_shares`), times the slots as the tp rule.  While hidden it holds
  NCCL's SMs over the backward (with ``overlap_tp`` on, userbuffers' bulk overlap: :data:`UB_SMS`).
* **pipeline** (``overlap_pp``, default on): in 1F1B's steady state each send overlaps the next
  micro-batch's compute (Megatron-LM's batched isend/irecv, ``--overlap-p2p-communication``); the
  warm-up's forward sends and the cool-down's backward sends are on the critical path.  Interleaved over
  ``v`` chunks a micro-batch crosses ``pp v`` chunks, chunk ``k`` on stage ``k mod pp``, so the fill's first
  micro-batch makes ``pp v - 1`` stage-to-stage sends before the last stage starts, and the drain as many
  (Narayanan et al. 2021, section 2.2.2: interleaving shrinks the bubble "at the cost of extra communication",
  the communication growing by ``v``; Megatron-Core ``megatron/core/pipeline_parallel/schedules.py``
  ``forward_backward_pipelining_with_interleaving`` at core_r0.8.0, baf94af3c667: the warm-up
  ``(pp - rank - 1) 2 + (v - 1) pp`` micro-batch chunks): ``2 (pp v - 1)`` calls of the ``T / calls`` each
  exposed (``2 (pp - 1)`` at v 1), at most ``T x slots / m``.  Off: ``T x slots / m``.

**What hiding costs.**  A collective hidden behind compute still runs on the GPU: its kernels hold SMs the
concurrent GEMMs and attention lose for as long as it runs (:func:`sm_holders`).  NCCL runs each channel as one
thread block resident for the whole collective (:data:`NCCL_CTAS` of them); Transformer Engine's userbuffers, which
``--tp-comm-overlap`` uses, run their pipelined and bulk overlaps on :data:`UB_SMS` SMs and their ring exchanges on
the copy engines (:data:`UB_SM_SHARE`).  The forecast charges each collective's hidden seconds the slowdown of the
compute-bound tensor-core ops of the phase it hides behind when they run on ``SMs - c`` SMs: their tile and wave
quantization over the fewer SMs (:mod:`roofline.engine.gemm_shape`; the shares come with the shard's forecast,
:class:`~roofline.planner.forecast.ShardForecast`); memory-bound ops are taken as unslowed.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from roofline.planner.dims import overlap_rule
from roofline.planner.dims import replicas as replicas_of

#: the switches and their defaults (what Megatron-LM's recommended training flags do)
OVERLAP_DEFAULTS = {"dp": True, "tp": False, "pp": True, "ep": True}


#: the planner's name for sequence parallelism's backward all-gather of a column-parallel GEMM's input
SP_GATHER = "tp all-gather (weight-gradient input)"


def sp_dgrad_shares(arch: Any, seq: int, layers_here: int) -> tuple[float, ...]:
    """Per call of one layer, the share of one micro-batch's backward (``layers_here`` layers) that the input
    gradient of the GEMM each sequence-parallel all-gather hides behind takes: the qkv GEMM's and the first MLP
    GEMM's, ``(k n of that GEMM) / (2 sum of k n over qkv, proj, fc1, fc2 + 2 seq heads head_dim)`` / ``layers_here``
    -- the layer backward's FLOPs per token (each GEMM's input and weight gradient, ``2 k n`` FLOPs each; the
    causal attention core's backward, twice its forward's ``2 seq heads head_dim``), the input gradient's
    ``2 k n`` of them.  An approximation, stated: the share of the backward's *FLOPs* taken for its share of the
    backward's *time* (the memory-bound ops, slower per FLOP, make it a little generous), the dense layer's
    shapes for every layer (an MoE layer's first expert GEMM runs after the token dispatch, not taken apart).

    >>> from types import SimpleNamespace as N
    >>> a = N(hidden=4, heads=1, kv_heads=1, head_dim=4, v_head_dim=4, intermediate=16, gated=False)
    >>> [round(x, 4) for x in sp_dgrad_shares(a, 2, 1)]  # kn: qkv 48, proj 16, fc1 64, fc2 64; 2*192 + 2*2*4 = 400
    [0.12, 0.16]
    """
    h, d = arch.hidden, arch.head_dim
    qkv = h * (arch.heads * d + arch.kv_heads * (d + arch.v_head_dim))
    proj = arch.heads * arch.v_head_dim * h
    fc1 = h * arch.intermediate * (2 if arch.gated else 1)
    fc2 = arch.intermediate * h
    total = 2 * (qkv + proj + fc1 + fc2) + 2 * seq * arch.heads * d
    return (qkv / total / layers_here, fc1 / total / layers_here)


@lru_cache(maxsize=256)
def rule_of(name: str) -> str:
    """Which switch governs a collective named by the planner ('tp all-reduce', 'dp grad reduce-scatter', ...);
    ``sp`` for sequence parallelism's backward all-gathers, which follow their own rule whatever the switches."""
    if name == SP_GATHER:
        return "sp"
    return overlap_rule(name.split(" ", 1)[0])  # the parallel dimension's switch (planner.dims); 'dp' else


#: Thread blocks (one per channel, each resident on an SM for the whole collective) an NCCL collective holds while it
#: runs: an H100 profiled in Nsight Systems, "the concurrent ncclAllGather kernel launches 24 blocks, preemptively
#: occupying a few SMs", so that a GEMM of 132 blocks no longer fits one wave (NVIDIA Developer Forums, "Compute-
#: Communication Overlap Causes Severe GEMM Performance Degradation because of Tail Effect", 2025,
#: https://forums.developer.nvidia.com/t/compute-communication-overlap-causes-severe-gemm-performance-degradation-because-of-tail-effect/337991;
#: a user's measurement, NCCL version and topology not stated).  Taken for every data-parallel collective.
NCCL_CTAS = 24
#: SMs DeepEP's normal (training) kernels hold while they run: ``Buffer.num_sms = 20``, the class default every
#: ``get_dispatch_config`` / ``get_combine_config`` launches with (deepseek-ai/DeepEP ``deep_ep/buffer.py`` at
#: 04b06f7a299c), and Megatron-Core's ``moe_deepep_num_sms: int = 20`` ("Number of SMs to use for DeepEP backend",
#: ``megatron/core/transformer/transformer_config.py``).
DEEPEP_SMS = 20
#: SMs Transformer Engine's userbuffers communication kernels take in their ``pipeline`` and ``bulk`` overlaps:
#: ``add_ub(..., num_sm: int = 16, ...)``, the default Megatron-Core's ``--tp-comm-overlap`` gets without
#: ``--tp-comm-overlap-cfg`` (``transformer_engine/pytorch/module/base.py`` ``initialize_ub`` at tag v1.8;
#: Megatron-LM ``megatron/training/initialize.py`` at core_r0.8.0 passes ``ub_cfgs = {}``).
UB_SMS = 16
#: The share of a sequence-parallel layer's tensor-parallel collectives userbuffers run on SMs: of its ten equal
#: all-gathers and reduce-scatters (forward: qkv and fc1 all-gathers, proj and fc2 reduce-scatters; backward: the
#: proj and fc2 gradient all-gathers, the qkv and fc1 input all-gathers and gradient reduce-scatters), the
#: ``ring_exchange`` ones (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad: four) copy over the copy engines
#: (``use_ce=True``), the ``pipeline`` (proj_fprop, fc2_fprop) and ``bulk`` (qkv/fc1 dgrad and wgrad) six on
#: :data:`UB_SMS` SMs (TE v1.8 ``initialize_ub``, ``methods``): 6 / 10.
UB_SM_SHARE = 0.6
#: the SM counts whose slowdown the shard forecast prepares (:func:`sm_holders` returns one of them)
CONTENTION_SMS = (UB_SMS, DEEPEP_SMS, NCCL_CTAS)


def sm_holders(comm: Any, layout: Any) -> tuple[int, float, str]:
    """(SMs a hidden ``comm`` holds while it runs, the share of its hidden time it holds them, the phase it hides
    behind: ``forward``, ``backward`` or ``both``) under ``layout``'s switches (module docs).  Pipeline sends
    (one peer, a channel or two) hold none here."""
    rule = rule_of(comm.name)
    if rule == "pp":
        return 0, 0.0, "both"
    if rule == "ep":  # a forward's all-to-alls beside the paired backward, a backward's beside the forward
        if not layout.overlap_ep:
            return 0, 0.0, "both"
        sms = DEEPEP_SMS if getattr(layout, "dispatcher", "deepep") == "deepep" else NCCL_CTAS
        return sms, 1.0, "forward" if comm.name.endswith("(backward)") else "backward"
    if rule == "sp":  # a plain NCCL all-gather beside the input-gradient GEMM, unless userbuffers run it (bulk)
        return (UB_SMS, UB_SM_SHARE, "both") if layout.overlap_tp else (NCCL_CTAS, 1.0, "backward")
    if rule == "tp":  # userbuffers for tp's own collectives; NCCL for the cp exchange and the expert all-to-alls
        if not layout.overlap_tp:
            return 0, 0.0, "both"
        return (UB_SMS, UB_SM_SHARE, "both") if comm.name.startswith("tp") else (NCCL_CTAS, 1.0, "both")
    if "grad" in comm.name:
        return NCCL_CTAS, 1.0, "backward"
    if "fsdp" in comm.name:  # ZeRO 3's gathers: half before each forward, half before each backward
        return NCCL_CTAS, 1.0, "both"
    return NCCL_CTAS, 1.0, "forward"


def bucket_share(params: float, replicas: int) -> float:
    """The share of a gradient or weight sync of ``params`` parameters (per call) over ``replicas`` ranks that one
    bucket carries: Megatron-Core's default bucket, ``max(40000000, 1000000 * dp_size)`` parameters
    (``megatron/core/distributed/distributed_data_parallel_config.py``, ``bucket_size``, at core_r0.8.0: "larger
    DP sizes need larger buckets to ensure collectives do not become latency-bound"); 0 for a sync of unknown
    size.

    >>> bucket_share(400e6, 8), bucket_share(400e6, 100), bucket_share(20e6, 8)
    (0.1, 0.25, 1.0)
    """
    if params <= 0:
        return 0.0
    return min(1.0, max(40e6, 1e6 * replicas) / params)


def exposed(comm: Any, layout: Any, micro_batches: int, slots: float, forward: float, backward: float) -> float:
    """Forecast seconds per step of ``comm`` (a :class:`~roofline.planner.layout.Comm` with ``forecast``
    seconds per step) not hidden behind compute under ``layout``'s switches (module docs)."""
    T, m = comm.forecast, micro_batches
    rule = rule_of(comm.name)
    if rule == "sp":
        if not comm.calls or not comm.dgrad_shares:
            return T * slots / m
        # each call exposes what its GEMM's input gradient does not cover; ``calls / len(dgrad_shares)`` groups
        # (layers x micro-batches) of one call per share; on the critical path in the bubble's slots too
        one, groups = T / comm.calls, comm.calls / len(comm.dgrad_shares)
        return slots / m * groups * sum(max(0.0, one - backward * s) for s in comm.dgrad_shares)
    if rule == "ep":
        if not layout.overlap_ep or not m:
            return T * slots / m
        unpaired = min(m, max(1, layout.pp - 1))  # the warm-up's forwards, the cool-down's backwards
        return unpaired * T / m + (m - unpaired) * _paired(comm, T / m, forward, backward)
    if rule == "tp":
        if layout.overlap_tp:
            return slots * max(0.0, T / m - (forward + backward))
        return T * slots / m
    if rule == "pp":
        if layout.overlap_pp:
            hops = layout.pp * layout.interleave - 1  # the fill's (and the drain's) chunk-to-chunk sends
            return min(T * slots / m, T / comm.calls * 2 * hops) if comm.calls else 0.0
        return T * slots / m
    if not layout.overlap_dp:
        return T
    one = bucket_share(comm.params, replicas_of(layout))  # the last (first) bucket's share: never hidden
    if comm.overlappable_with == "step":
        return max(one * T, T - (backward if "grad" in comm.name else forward))
    if "all-gather" in comm.name:  # ZeRO 3's prefetched weight gathers (its unit a layer, not a bucket: no floor)
        return m * (max(0.0, T / (2 * m) - forward) + max(0.0, T / (2 * m) - backward))
    return m * max(one * T / m, T / m - backward)


def _paired(comm: Any, c: float, forward: float, backward: float) -> float:
    """What one micro-batch's expert all-to-alls (``c`` seconds) leave exposed beside the paired micro-batch's
    compute.  Megatron-Core's 1F1B A2A overlap pairs each call with one compute segment of the other micro-batch's
    layer (``TransformerLayerSchedulePlan.run``, megatron/core/models/common/model_chunk_schedule_plan.py:
    "comm_stream: combine_bwd | dispatch_fwd->dispatch_bwd | combine_fwd", "comp_stream: attn_fwd->post_attn_fwd |
    mlp_bwd->mlp_bwd_dw->mlp_fwd | post_attn_bwd->attn_bwd"): with ``a`` the attention block's share of the
    compute (:attr:`Comm.attention_share`) and dispatch and combine of equal time (``c / 2`` each), the forward's
    combine hides behind the paired backward's attention ``a B``, the backward's behind the forward's ``a F``, and
    each dispatch behind half the MLP segment ``(1 - a)(F + B) / 2``.  Without a share, behind the whole partner
    phase (DualPipe's pairing).

    >>> from types import SimpleNamespace as C
    >>> _paired(C(name="ep all-to-all (forward)", attention_share=0.25), 1.0, 2.0, 4.0)   # 0.5 - 1 -> 0; 0.5 - 0.75 -> 0
    0.0
    >>> _paired(C(name="ep all-to-all (backward)", attention_share=0.25), 2.0, 1.0, 2.0)  # (1 - 0.25) + max(0, 1 - 1.125)
    0.75
    """
    a = getattr(comm, "attention_share", 0.0)
    backward_comm = comm.name.endswith("(backward)")
    if not a:
        return max(0.0, c - (forward if backward_comm else backward))
    combine_partner = a * (forward if backward_comm else backward)
    return max(0.0, c / 2 - combine_partner) + max(0.0, c / 2 - (1 - a) * (forward + backward) / 2)


def describe(layout: Any) -> str:
    """One line: which rules are on."""
    def on(flag: bool) -> str:
        return "on" if flag else "off"
    return (f"overlap: dp {on(layout.overlap_dp)} (gradient buckets behind backward, ZeRO-3 gathers prefetched), "
            f"tp {on(layout.overlap_tp)} (tp/cp collectives{' hidden' if layout.overlap_tp else ' exposed'}), "
            f"ep {on(layout.overlap_ep)} (expert all-to-alls{' behind another micro-batch' if layout.overlap_ep else ' exposed'}), "
            f"pp {on(layout.overlap_pp)} (steady-state sends{' hidden' if layout.overlap_pp else ' exposed'}); "
            "sequence-parallel backward all-gathers behind their GEMM's input gradient")
