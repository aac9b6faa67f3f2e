"""One device's LLM training step: forward, backward, recomputation and the optimizer, and what it holds.

The one home of the training step that ``from_llm(phase="train")`` (``roofline llm --train``) analyses op by
op and that the parallel planner (:mod:`roofline.planner`) shards over devices and schedules; the planner
adds only the layout (which shard of the step each device runs, and the collectives between them).  Per
micro-batch of ``micro_batch`` sequences of ``seq`` tokens, on one of ``tp`` devices:

* **Forward**: the inference op table (:mod:`roofline.llm.table`, FlashAttention-style, logits for every
  token: the loss) evaluated at the shard's prefill point (:func:`forward_ops`; with context parallelism the
  queries split ``cp`` ways, the keys all visited).
* **Backward** = :data:`BACKWARD` x the forward's FLOPs and bytes (activation and weight gradients).
* **Recomputation** (:data:`RECOMPUTE`): the forward again (``full``), its attention core (``selective``), or
  nothing (``none``): :func:`recomputed`.
* **Optimizer** (Adam, mixed precision, once per step): per parameter it reads the fp32 master weight,
  the gradient and the two moments (16 B) and writes the master weight, the moments and the bf16 weight
  (14 B), 13 FLOPs (:data:`ADAM_FLOPS`).
* **Precision** (:data:`TRAIN_PRECISIONS`): bf16, or fp8 GEMMs on the fp8 matrix roof (Transformer Engine):
  :func:`training_ceilings`.
* **Memory** per parameter (:func:`state_bytes`): bf16 weights 2, bf16 gradients 2, fp32 master and Adam
  moments 12 (ZeRO's K, Rajbhandari et al. 2020), fp8 the GEMM weights' cached fp8 copy and transpose 2;
  the parameters one of ``tp`` devices holds (:func:`stage_params`, the one count the planner shares);
  activations per layer and micro-batch from the model's own ops, what each keeps for its backward
  (:func:`activation_bytes_per_layer`: SwiGLU, GQA, sequence parallelism, recomputation; GPT's
  ``34 s b h / tp`` of Korthikanti et al. 2022 is the tests' cross-check); the fp32 logits
  (:func:`logits_bytes`).

>>> run = TrainingRun.of("llama-2-7b", seq=4096, global_batch=8)
>>> w = training_workload(run)
>>> N = 32 * (4 * 4096**2 + 3 * 4096 * 11008) + 32000 * 4096   # weights of the linear layers and lm_head
>>> attention = 8 * 32 * 2 * 32 * 256 * 4096 * 4097 // 2        # QK^T and PV over the causal pairs
>>> round(w.info["training_flops"] / (3 * (2 * N * 8 * 4096 + attention)), 4)  # norms, RoPE, activations: 0.1%
1.001
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np

from roofline.core import formats
from roofline.core.errors import RooflineError
from roofline.llm.basis import basis, evaluate
from roofline.llm.config import Arch, load_arch
from roofline.llm.metrics import device_ceilings
from roofline.llm.model import gemm_dims, role_columns
from roofline.llm.moe_load import parse_moe_load
from roofline.llm.spec import Precisions, check_moe_load, positive_int
from roofline.llm.table import EXP, FULL, GEMM, KEY, KEYW, LINK, ONE, PAIR, TOK, VEC, build_table, check_mtp, check_tp
from roofline.work.workload import Workload, WorkloadBuilder

RECOMPUTE = ("none", "selective", "full")
#: the backward's FLOPs and bytes, per forward's (activation and weight gradients)
BACKWARD = 2
#: Adam per parameter: m = b1 m + (1 - b1) g (3), v = b2 v + (1 - b2) g^2 (4), bias corrections (2),
#: w -= lr m / (sqrt(v) + eps) (4).
ADAM_FLOPS = 13
#: bytes per parameter Adam reads (fp32 master, gradient, m, v) and writes (master, m, v, bf16 weight)
ADAM_READ, ADAM_WRITTEN = 16, 14
#: bytes per parameter held: bf16 weights, bf16 gradients, fp32 master + m + v (ZeRO's K = 12)
WEIGHT_BYTES, GRAD_BYTES, OPTIMIZER_BYTES = 2, 2, 12
#: the GEMMs' compute precision of a training step: bf16, or fp8 as Transformer Engine runs it (the GEMMs on
#: the fp8 matrix roof; attention, norms and the optimizer as under bf16; the weights, gradients and
#: optimizer state kept as under bf16: "FP8 ... is used for the GEMMs only; master weights and optimizer
#: states stay in higher precision", NVIDIA Transformer Engine user guide, "Using FP8 with Transformer Engine")
#: The block-scaled recipes (fp8-block, mxfp8, nvfp4) the same way, with their formats' widths and scales from
#: :mod:`roofline.core.formats`, the one table of formats (no code here branches on a format's name).
TRAIN_PRECISIONS = formats.TRAINING
#: fp8: each GEMM weight's fp8 copy and its transpose (the backward's data-gradient GEMM reads W^T in fp8 on
#: Hopper), cast once per step and cached over its micro-batches (Transformer Engine ``Linear.forward``'s
#: ``is_first_microbatch``): 1 + 1 bytes per GEMM parameter (:attr:`NumberFormat.weight_copy_bytes`)
FP8_WEIGHT_CACHE_BYTES = formats.get("fp8").weight_copy_bytes


#: bytes of the 1-byte mask a dropout keeps per element (PyTorch's ``nn.Dropout`` and Megatron-LM's fused
#: bias-dropout-add keep a bool / uint8 mask for the backward)
DROPOUT_MASK_BYTES = 1
#: gradient-buffer element sizes a run may state (``main_grad_bytes``): the weights' 16-bit type, or fp32
MAIN_GRAD_BYTES = (2, 4)


@dataclass(frozen=True)
class TrainingRun:
    """The model and the step: ``global_batch`` sequences of ``seq`` tokens per optimizer step, and what the
    framework running it does (each a stated mechanism, :func:`forward_ops`, :func:`activation_bytes_per_layer`):

    * ``flash``: the attention fused (FlashAttention: no score tensor) or unfused, as Megatron-LM ran it
      before FlashAttention (``megatron/model/transformer.py`` at commit 50a4b5fa, 2021: ``torch.baddbmm``
      over every query-key pair, ``FusedScaleMaskSoftmax``, ``nn.Dropout`` on the probabilities, ``torch.bmm``):
      the score tensor, ``heads x s x s`` per sequence, written, read and written by the softmax, read by PV,
      its GEMMs over all ``s^2`` pairs (the causal mask is applied after the product);
    * ``dropout``: Megatron-LM's ``--attention-dropout`` and ``--hidden-dropout`` (default 0.1 in
      ``megatron/arguments.py`` at 50a4b5fa and ``megatron/training/arguments.py`` at core_r0.8.0): each
      residual branch's fused bias-dropout-add writes a 1-byte mask (:data:`DROPOUT_MASK_BYTES`), and an
      unfused attention's probabilities pass through ``nn.Dropout`` (read, written, a mask); a fused
      attention draws its dropout in the kernel (no bytes);
    * ``main_grad_bytes``: the gradient buffer's element (:data:`MAIN_GRAD_BYTES`): 2 (the weights' type), or
      4: Megatron-LM forces ``accumulate_allreduce_grads_in_fp32`` under bf16 ("bfloat16 requires gradient
      accumulation and all-reduce to be done in fp32", ``megatron/training/arguments.py``, core_r0.8.0),
      held (its docs ``distrib_optimizer.md``: "float16 param, fp32 grads: 18 bytes, 6 + 12/d" distributed),
      reduced and read by Adam in fp32;
    * ``grad_accumulation_fusion``: each micro-batch's weight gradient accumulated into that buffer inside the
      weight-gradient GEMM (Megatron-Core ``--gradient-accumulation-fusion``, default on: the GEMM reads and
      writes the buffer), or by a separate pass (Megatron-LM 2021's ``param.main_grad.add_(param.grad)`` hook,
      ``megatron/model/distributed.py`` at 50a4b5fa; PyTorch's own ``AccumulateGrad``): reads the buffer and
      the new gradient, writes the buffer, per parameter per micro-batch.
    """

    arch: Arch
    seq: int
    global_batch: int
    precisions: Precisions = Precisions()
    precision: str = "bf16"  # the GEMMs' compute precision (:data:`TRAIN_PRECISIONS`)
    flash: bool = True
    dropout: bool = False
    main_grad_bytes: int = 2
    grad_accumulation_fusion: bool = True
    #: multi-token prediction modules trained with the model (:func:`roofline.llm.table.build_table` ``mtp``)
    mtp: int = 0
    #: the grouped expert GEMMs' slowest group (:data:`roofline.llm.moe_load.MOE_LOADS`): the planner's forecast
    moe_load: str = "balanced"

    def __post_init__(self) -> None:
        from roofline.core import arguments as arg
        from roofline.core.limits import check_work, max_global_batch

        arg.need(self.arch, Arch, "TrainingRun", "arch", "an Arch (TrainingRun.of takes a model name)")
        arg.positive_int(self.seq, "TrainingRun", "seq")
        arg.positive_int(self.global_batch, "TrainingRun", "global_batch")
        check_work("TrainingRun: global_batch", self.global_batch, max_global_batch(), "ROOFLINE_MAX_GLOBAL_BATCH",
                   " sequences")

    @classmethod
    def of(cls, model: str | Arch, *, seq: int = 4096, global_batch: int = 1024, precision: str = "bf16",
           flash: bool = True, dropout: bool = False, main_grad_bytes: int = 2,
           grad_accumulation_fusion: bool = True, mtp: int = 0, moe_load: str = "balanced") -> TrainingRun:
        arch = model if isinstance(model, Arch) else load_arch(model)
        check_moe_load(arch, parse_moe_load(moe_load))
        if precision not in TRAIN_PRECISIONS:
            raise RooflineError(f"precision: {precision!r} is not one of {', '.join(TRAIN_PRECISIONS)}")
        if isinstance(main_grad_bytes, bool) or main_grad_bytes not in MAIN_GRAD_BYTES:
            raise RooflineError(f"main_grad_bytes: {main_grad_bytes!r} is not one of 2, 4")
        return cls(arch, positive_int(seq, "seq"), positive_int(global_batch, "global_batch"), precision=precision,
                   flash=bool(flash), dropout=bool(dropout), main_grad_bytes=main_grad_bytes,
                   grad_accumulation_fusion=bool(grad_accumulation_fusion), mtp=check_mtp(mtp),
                   moe_load=parse_moe_load(moe_load))


def split_queries(B: np.ndarray, cp: int) -> np.ndarray:
    """A prefill basis on one of ``cp`` context-parallel devices: queries, tokens and pairs split ``cp`` ways,
    the keys all visited (ring attention) and the weights whole."""
    out = B.copy()
    keep = np.zeros(out.shape[1], dtype=bool)
    keep[[ONE, EXP, KEY, KEYW]] = True
    out[:, ~keep] /= cp
    return out


@lru_cache(maxsize=4096)
def forward_ops(run: TrainingRun, tp: int, cp: int, ep: int, micro_batch: int) -> tuple[Any, dict[str, np.ndarray]]:
    """The forward op table of one micro-batch on one device's shard, and its per-op FLOPs and bytes."""
    a = run.arch
    table = build_table(a, "prefill", tp, run.flash, True, mtp=run.mtp)
    B = split_queries(basis(a, micro_batch, run.seq, run.seq), cp)
    B[:, EXP] /= ep
    v = {k: x[0].copy() for k, x in evaluate(table, B, run.precisions.bytes()).items()}
    _framework_ops(run, table, v, B[0])
    return table, v


def _framework_ops(run: TrainingRun, table: Any, v: dict[str, np.ndarray], b: np.ndarray) -> None:
    """What the run's framework adds to the op table's rows, in place (:class:`TrainingRun`):

    * unfused attention: QK^T and PV over every pair of the score tensor (``FULL``), not the causal half
      the table counts (``PAIR``): ``torch.baddbmm``/``torch.bmm`` multiply the whole ``s x s`` and the mask
      is applied after; with dropout the probabilities' ``nn.Dropout`` reads them and writes them and a mask
      (the softmax row carries it: it is the same tensor, one more pass over it);
    * dropout: each residual add (the fused bias-dropout-add) writes its 1-byte mask.
    """
    act = run.precisions.bytes()["a"]
    names, kinds = table.names, table.kinds
    if not run.flash and b[PAIR] > 0:
        for i, n in enumerate(names):
            local = ".sliding." in n or ".chunked." in n  # local layers: their own pairs, not the full square
            if kinds[i] == "attention" and not local and (n.endswith(".qk") or n.endswith(".pv")):
                v["flops"][i] *= b[FULL] / b[PAIR]
            elif run.dropout and kinds[i] == "softmax" and not local and ".layers.attn." in n and \
                    not n.endswith(".sinks"):
                probs = v["bytes_written"][i]  # act bytes per score element
                v["bytes_read"][i] += probs
                v["bytes_written"][i] += probs * (1 + DROPOUT_MASK_BYTES / act)
    if run.dropout:
        res = np.array([m == "residual" for m in table.module_types]) & (table.roles != LINK)
        v["bytes_written"][res] += v["bytes_written"][res] * DROPOUT_MASK_BYTES / act


def table_masks(table: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(every layer's ops, the first stage's extra ops, the last stage's, the attention core) of a table;
    its collectives (link ops) are in none: the layout times them.  The MTP modules' ops (``.mtp.``) run after the
    model's head: the last stage's."""
    names = table.names
    compute = table.roles != LINK
    mtp = np.array([".mtp." in n for n in names], dtype=bool)
    layer = np.array([".layers." in n for n in names]) & compute & ~mtp
    first = np.array([".embed" in n for n in names]) & compute & ~mtp
    last = ~layer & ~first & compute
    core = layer & np.array([k in ("attention", "softmax") for k in table.kinds])
    return layer, first, last, core


def recomputed(recompute: str, forward: float, attention: float) -> float:
    """What recomputation adds to a micro-batch (time or FLOPs): nothing, the attention core again
    (``selective``), or the whole forward again (``full``)."""
    return {"none": 0.0, "selective": attention, "full": forward}[recompute]


def micro_batch_flops(forward_flops: float, recomputed_flops: float) -> float:
    """FLOPs of one micro-batch's forward, backward (:data:`BACKWARD` x the forward) and recomputation."""
    return (1 + BACKWARD) * forward_flops + recomputed_flops


def optimizer_flops(params: float) -> float:
    """FLOPs of one Adam step over ``params`` parameters."""
    return ADAM_FLOPS * params


def optimizer_bytes(params: float, grad_bytes: int = GRAD_BYTES) -> float:
    """Bytes one Adam step over ``params`` parameters reads and writes, its gradients of ``grad_bytes``
    each (the run's ``main_grad_bytes``: fp32 main gradients are read as 4 bytes, not 2)."""
    return (ADAM_READ - GRAD_BYTES + grad_bytes + ADAM_WRITTEN) * params


def state_bytes(precision: str = "bf16") -> dict[str, float]:
    """Bytes held per parameter, by state, for a step at ``precision`` (:data:`TRAIN_PRECISIONS`).

    Mixed precision with Adam (Micikevicius et al. 2018; ZeRO's K = 12, Rajbhandari et al. 2020): a bf16
    weight, a bf16 gradient, the fp32 master weight and Adam's two fp32 moments.  fp8 (Transformer Engine)
    keeps the same and adds, for the GEMM weights only, their cached fp8 copy and its transpose
    (:data:`FP8_WEIGHT_CACHE_BYTES`).

    >>> sum(state_bytes("bf16").values()), sum(state_bytes("fp8").values()), sum(state_bytes("mxfp8").values())
    (16, 18.0, 18.0625)
    """
    out: dict[str, float] = {"bf16 weight": WEIGHT_BYTES, "bf16 gradient": GRAD_BYTES, "fp32 master weight": 4,
                             "fp32 Adam m": 4, "fp32 Adam v": 4}
    fmt = formats.get(precision)
    if fmt.low_precision:
        out[f"{fmt.name} weight + transpose (GEMM weights)"] = fmt.weight_copy_bytes
    return out


def training_ceilings(device: Any, run: TrainingRun) -> dict[str, float]:
    """The roofs a training step's ops run on (:func:`roofline.llm.metrics.device_ceilings`): under fp8 the
    GEMMs on the device's fp8 matrix roof (with its documented fallback), the rest as under bf16."""
    c = dict(device_ceilings(device, run.precisions))
    fmt = formats.get(run.precision)
    if fmt.low_precision:
        c["peak_gemm"] = device.choose_compute("matrix", fmt.roof).ceiling.flops
    return c


#: the GEMMs that read their block's normed input (one tensor, kept once)
_NORMED_READERS = frozenset({"q_proj", "k_proj", "v_proj", "q_a_proj", "kv_a_proj", "gate_proj", "up_proj", "router"})


#: the rows of an MoE layer that run on the routed tokens (top-k copies of each token): the experts' GEMMs and
#: activations, and the dispatch/combine of their rows
ROUTED_ROWS = (".experts.", ".combine", ".permute", ".unpermute", ".dispatch")


def routed_row(name: str) -> bool:
    """Whether op ``name`` runs on the routed tokens (:data:`ROUTED_ROWS`)."""
    return any(k in name for k in ROUTED_ROWS)


@lru_cache(maxsize=512)
def _saved_per_token(arch: Arch, tp: int, routed: bool = False) -> tuple[float, float, float, float, float]:
    """Elements every layer's ops keep for the backward, per local token, summed over all layers:
    (the GEMMs' normed block inputs, other GEMM inputs, the norms' inputs, other tensors, fp32 bytes) -- the
    split that sequence parallelism (the normed inputs and the norms' inputs, of the hidden width, split
    over tp) and fp8 (GEMM inputs kept in fp8) act on.  What each op keeps (the inputs its backward reads):

    * a GEMM its input (the weight gradient is input^T x output gradient), once for GEMMs that read the same
      tensor: the block's normed input (Q, K, V; gate and up; router and shared experts), or consecutive
      GEMMs with the same input (an expert's gate and up);
    * attention (fused, FlashAttention-style) its Q, K and V and the softmax's fp32 log-sum-exp per head;
      its output is the output projection's input (kept there); no score tensor;
    * a norm its input; an activation its input; a product its inputs, except a gated MLP's product
      (``act(gate) * up``), which keeps only ``up``: the fused SwiGLU saves its input ``[gate, up]`` and
      recomputes ``act(gate)`` in its backward (Megatron-Core ``megatron/core/fusions/fused_bias_swiglu.py``,
      ``SwiGLUFunction.forward``: ``ctx.save_for_backward(input)``), so the gated MLP keeps gate, up and
      the product (down's input): 3 f, not 4 f;
    * a residual add, RoPE (linear in its input) and the KV-cache write nothing.

    ``routed``: the routed rows' share only (:func:`routed_row`), what a capacity factor scales.
    """
    table = build_table(arch, "prefill", tp, True, True)
    layer, _, _, _ = table_masks(table)
    ar, kr = table.coef["ar"], table.coef["kr"]
    d = float(arch.hidden)
    out = [0.0] * 5
    seen: set[str] = set()
    prev: float | None = None
    for i in np.flatnonzero(layer):
        kind, mtype, n = table.kinds[i], table.module_types[i], float(table.counts[i])
        if routed and not routed_row(table.names[i]):
            n = 0.0  # walked for ``seen`` / ``prev`` as in the whole count, kept out of the sum
        block = "attn" if ".attn." in table.names[i] else "ffn"
        keys = float(ar[i, KEY] + ar[i, KEYW] + kr[i, KEY] + kr[i, KEYW])
        x = float(ar[i, TOK])
        if kind == "matmul":
            width = x + keys
            normed = mtype in _NORMED_READERS and ".experts." not in table.names[i]
            if (normed and block in seen) or prev == width:
                prev = width
                continue
            if normed:
                seen.add(block)
            out[0 if normed else 1] += n * width
            prev = width
            continue
        prev = None
        if kind == "attention":
            out[3] += n * (x + keys)
            out[4] += n * 4 * arch.heads / tp  # log-sum-exp, fp32, per head
        elif kind in ("norm", "softmax") or (kind == "elementwise" and mtype not in ("residual", "rope")):
            if mtype == "mul" and arch.gated and (".mlp." in table.names[i] or ".experts." in table.names[i]
                                                  or ".shared." in table.names[i]):
                x /= 2  # the fused SwiGLU: up only (act(gate) recomputed from the gate kept by the activation)
            out[2 if kind == "norm" and x == d else 3] += n * x
    return out[0], out[1], out[2], out[3], out[4]


@lru_cache(maxsize=4096)
def routed_activation_bytes_per_layer(run: TrainingRun, *, tp: int = 1, cp: int = 1, micro_batch: int = 1,
                                      sp: bool = True, recompute: str = "selective") -> float:
    """The routed tokens' share of :func:`activation_bytes_per_layer` (the layers' mean): what the experts' GEMMs,
    activations and combine keep for their ``s b k`` rows (``k`` the top-k; dropless, balanced routing: each device
    receives as many rows as it sends, Megatron-Core's alltoall dispatcher).  Nothing under ``full`` recomputation
    (the layer input only is kept)."""
    if recompute == "full" or not run.arch.experts:
        return 0.0
    a = run.arch
    gemm_h, gemm, other_h, other, fp32 = _saved_per_token(a, tp, routed=True)
    fmt = formats.get(run.precision)
    gemm_b = fmt.bits_per_element("activation") / 8 if fmt.low_precision else run.precisions.bytes()["a"]
    split = tp if sp else 1
    per_token = (gemm_h / split + gemm) * gemm_b + (other_h / split + other) * run.precisions.bytes()["a"] + fp32
    return run.seq / cp * micro_batch * per_token / a.layers


@lru_cache(maxsize=65536)
def activation_bytes_per_layer(run: TrainingRun, *, tp: int = 1, cp: int = 1, micro_batch: int = 1, sp: bool = True,
                               recompute: str = "selective") -> float:
    """Activation bytes one layer keeps for backward, per micro-batch on one device (the mean over the
    model's layers), from its own ops (:func:`_saved_per_token`), for ``s b`` local tokens (``s`` the
    device's 1/cp of the sequence):

    * ``none`` and ``selective``: every op's saved tensors.  Selective recomputation (Korthikanti et al.
      2022, section 5) drops the attention's score tensors (``5 a s^2 b``); a fused attention keeps none
      to drop, so both keep the same;
    * ``full``: the layer's input only, ``2 s b h``;
    * with sequence parallelism (Korthikanti et al. 2022, section 4.2.2) the tensors of the hidden width
      (norm inputs, the column-parallel GEMMs' inputs) are split over tp like the rest;
    * fp8 (Transformer Engine): the GEMM inputs are kept in their fp8 cast (1 byte);
    * ``dropout``: the two residual branches' 1-byte masks, ``2 s b h`` bytes (split over tp with sequence
      parallelism), Korthikanti's ``34 s b h`` with them;
    * unfused attention (``flash=False``) under ``none``: the score tensor's softmax output (2 bytes), and
      with dropout its mask (1) and the dropped probabilities (2) per element: Korthikanti's ``5 a s^2 b``
      (``2 a s^2 b`` without dropout), ``a`` the device's heads, over all ``s x s`` pairs; ``selective``
      recomputes the attention core and keeps none of it (their section 5).

    For GPT (4h GeLU MLP, MHA) this is ``s b h 32`` plus the log-sum-exp: Korthikanti's ``34 s b h`` less
    the two 1-byte dropout masks this model has no dropout for (the cross-check in the tests)."""
    a = run.arch
    act = run.precisions.bytes()["a"]
    tokens = run.seq / cp * micro_batch
    split = tp if sp else 1
    if recompute == "full":
        return tokens * a.hidden * act / split
    gemm_h, gemm, other_h, other, fp32 = _saved_per_token(a, tp)
    fmt = formats.get(run.precision)  # a low-precision GEMM keeps its input's cast copy (scales included)
    gemm_b = fmt.bits_per_element("activation") / 8 if fmt.low_precision else act
    per_token = (gemm_h / split + gemm) * gemm_b + (other_h / split + other) * act + fp32
    masks = 2 * a.hidden / split * DROPOUT_MASK_BYTES if run.dropout else 0.0
    scores = 0.0
    if not run.flash and recompute == "none":  # every full-attention layer's, over the layers' mean
        heads = a.heads / tp * (a.layers - a.window_layers) / a.layers
        scores = heads * run.seq * (act + (act + DROPOUT_MASK_BYTES) * run.dropout)
    return tokens * (per_token / a.layers + masks + scores)


def logits_bytes(run: TrainingRun, *, tp: int = 1, cp: int = 1, micro_batch: int = 1) -> float:
    """The fp32 logits of one micro-batch on one device (its 1/tp of the vocabulary, 1/cp of the tokens)."""
    return run.seq / cp * micro_batch * run.arch.vocab / tp * 4


def device_memory(run: TrainingRun, params: float, *, tp: int = 1, micro_batch: int = 1,
                  recompute: str = "selective", gemm_params: float = 0.0) -> dict[str, float]:
    """Bytes one device holds for the step when nothing else shares it (no pipeline, data or context
    parallelism): weights, gradients and optimizer state of its ``params`` parameters (:func:`state_bytes`;
    fp8's weight cache over its ``gemm_params``), one micro-batch's activations of every layer and its logits."""
    per_layer = activation_bytes_per_layer(run, tp=tp, micro_batch=micro_batch, recompute=recompute)
    cache = formats.get(run.precision).weight_copy_bytes * gemm_params
    return {"weights": WEIGHT_BYTES * params + cache, "gradients": run.main_grad_bytes * params,
            "optimizer": OPTIMIZER_BYTES * params,
            "activations": per_layer * run.arch.layers + logits_bytes(run, tp=tp, micro_batch=micro_batch)}


@dataclass(frozen=True)
class StageParams:
    """Parameters one of ``tp`` devices holds (the routed experts 1/ep of them): every layer's together
    (``layers``, of which ``experts`` routed and ``gemm`` in the GEMMs), the first stage's extra (the
    embedding and the position table) and the last's (final norm, lm_head)."""

    layers: float
    experts: float
    gemm: float
    first: float
    last: float

    @property
    def total(self) -> float:
        return self.layers + self.first + self.last


@lru_cache(maxsize=1024)
def stage_params(arch: Arch, tp: int, ep: int = 1) -> StageParams:
    """The one count of parameters per device that the single-device step and the planner share: every op's
    weight elements (the routed experts' for E / ep experts), the embedding's 1/tp shard (unless tied to
    lm_head, which holds it) and the position table, each counted once."""
    table = build_table(arch, "prefill", tp, True, True)
    layer, first, last, _ = table_masks(table)
    counts = table.coef["wq"] + table.coef["wu"]
    experts = counts[:, EXP] * (arch.experts / ep if arch.experts else 0) * table.counts
    params = counts[:, ONE] * table.counts + experts
    gemm = (table.coef["wq"][:, ONE] * table.counts + table.coef["wq"][:, EXP] * table.counts *
            (arch.experts / ep if arch.experts else 0))
    embed = (0 if arch.tie_embeddings else arch.vocab * arch.hidden / tp) + arch.position_table * arch.hidden
    return StageParams(float(params[layer].sum()), float(experts[layer].sum()), float(gemm[layer].sum()),
                       float(params[first].sum() + embed), float(params[last].sum()))


def row_params(run: TrainingRun, table: Any, tp: int, ep: int = 1) -> np.ndarray:
    """Parameter elements of one instance of each row of ``table`` (one of ``tp`` devices, E / ep routed experts):
    the rows' weights, the embedding's 1/tp vocabulary shard (unless tied to lm_head) and the position table on
    their rows (what :func:`stage_params` sums)."""
    a = run.arch
    coef = table.coef["wq"] + table.coef["wu"]
    out = coef[:, ONE] + coef[:, EXP] * (a.experts / ep if a.experts else 0)
    for i, n in enumerate(table.names):
        if n.endswith("embed.tokens") and not a.tie_embeddings:
            out[i] += a.vocab * a.hidden / tp
        elif n.endswith("embed.positions"):
            out[i] += a.position_table * a.hidden
    return np.asarray(out, dtype=float)


#: Bytes per logit element of the loss, Megatron-LM's vocabulary-parallel cross-entropy (unfused: the same passes in
#: ``megatron/mpu/cross_entropy.py`` at 50a4b5fa and ``megatron/core/tensor_parallel/cross_entropy.py`` at
#: core_r0.8.0, on ``logits.float()``): forward, the cast (read 2, write 4), ``max`` (read 4), ``-= max``
#: (read 4, write 4), ``exp`` in place (4, 4), ``sum`` (4), ``div_`` to the softmax it keeps (4, 4): read 22,
#: written 16; backward, ``grad_input.mul_(grad_output)`` on the kept softmax (4, 4) and the cast's backward to
#: 16 bits (read 4, write 2): read 8, written 6.  (forward read, forward written, backward read, backward written)
CROSS_ENTROPY_BYTES = (22.0, 16.0, 8.0, 6.0)


def grad_accumulation_bytes(run: TrainingRun) -> tuple[float, float, float]:
    """Bytes per parameter per micro-batch of accumulating its weight gradient into the gradient buffer
    (:class:`TrainingRun`'s ``main_grad_bytes`` g): (read, written) by a separate pass (the buffer and the
    16-bit new gradient read, the buffer written: ``g + 2``, ``g``), and what the fused weight-gradient GEMM adds
    instead (it reads and writes the buffer in place of writing a 16-bit gradient: ``2 g - 2``).

    >>> grad_accumulation_bytes(TrainingRun.of("gpt2", main_grad_bytes=4))
    (6, 4, 6)
    """
    g = run.main_grad_bytes
    return g + GRAD_BYTES, g, 2 * g - GRAD_BYTES


def training_flops(run: TrainingRun, recompute: str = "none") -> float:
    """FLOPs of one training step of the whole model (forward x 3: the backward is twice the forward;
    x 4 with full recomputation), optimizer excluded: the figure MFU is quoted against.  The model's FLOPs,
    not an implementation's: attention over the causal pairs even where an unfused attention multiplies all."""
    table, v = forward_ops(replace(run, flash=True, dropout=False), 1, 1, 1, 1)
    compute = table.roles != LINK
    forward = float(v["flops"][compute] @ table.counts[compute]) * run.global_batch
    return forward * (4 if recompute == "full" else 3)


def _gemm_note(fmt: formats.NumberFormat) -> str:
    """The assumption line naming the GEMMs' format, its roof and its source."""
    if not fmt.low_precision:
        return f"GEMMs in {fmt.name}"
    scales = (", ".join(f"{r} {b.rows}x{b.cols} blocks, {b.scale_type} scales" for r, b in fmt.blocks
                        if r != "gradient") if fmt.block_scaled else "per-tensor scales")
    return (f"GEMMs in {fmt.name} ({fmt.element}, {scales}) on the {fmt.roof} matrix roof where the device has "
            f"one (else its fallback); its weight copies and saved inputs held at its width; each GEMM input and output "
            f"gradient cast (both axes, scales, amax) as ops of their own ({fmt.source})")


#: vector FLOPs per element of a random Hadamard transform over blocks of ``b`` elements: a ``b x b`` product,
#: ``2 b`` per element (NVIDIA, arXiv:2509.25149, s4: 16 x 16 transforms on the weight-gradient GEMM's inputs)
def _hadamard_flops(block: int) -> float:
    return 2.0 * block


def cast_ops(run: TrainingRun, table: Any, dims: dict[str, np.ndarray]) -> list[tuple[str, np.ndarray, bool, dict]]:
    """The quantize passes a low-precision step adds per micro-batch, as ops (``[]`` for a 16-bit one): per GEMM row
    (``dims``: its ``m, n, k, batch``), each a ``(suffix, rows, backward, {flops, bytes_read, bytes_written})``:

    * ``(quantize input)``, forward: the GEMM's 16-bit input ``X[m, k]`` (once for GEMMs sharing it,
      :func:`shares_input`) cast with its amax (a second read under
      current scaling) into the row-wise copy the forward reads and the column-wise (transposed) copy the
      weight-gradient GEMM reads, scales included: Transformer Engine's fused cast-transpose
      (:func:`roofline.core.formats.quantize_cost`, ``both_axes``);
    * ``(quantize grad)``, backward: the output gradient ``dY[m, n]`` the same way (the data-gradient GEMM reads it
      row-wise, the weight-gradient GEMM column-wise);
    * ``(hadamard)``, backward, where the format applies one (NVFP4): ``X`` and ``dY`` read and written at 16 bits
      through the random Hadamard transform before their column-wise cast.

    The weights' casts are once per step and cached over the micro-batches (:attr:`NumberFormat.weight_copy_bytes`),
    not counted per micro-batch."""
    fmt = formats.get(run.precision)
    if not fmt.low_precision:
        return []
    rows = np.flatnonzero((table.roles == GEMM) & np.isfinite(dims["m"]))
    first = np.array([not shares_input(table, dims, int(i)) for i in rows], dtype=bool)
    m, n, k, b = (np.asarray(dims[c], dtype=float)[rows] for c in ("m", "n", "k", "batch"))
    src = 8 * run.precisions.bytes()["a"]
    out = []
    for suffix, sel, elems, role, bwd in ((" (quantize input)", first, (m * k * b)[first], "activation", False),
                                          (" (quantize grad)", np.ones(len(rows), dtype=bool), m * n * b, "gradient",
                                           True)):
        c = formats.quantize_cost(fmt, elems, role, source_bits=int(src), both_axes=True)
        ones = np.ones(int(sel.sum()))
        out.append((suffix, rows[sel], bwd, {"flops": c.flops * ones, "bytes_read": c.bytes_read * ones,
                                             "bytes_written": c.bytes_written * ones}))
    if fmt.wgrad_hadamard:
        elems = (m * k * first + m * n) * b
        out.append((" (hadamard)", rows, True, {"flops": _hadamard_flops(fmt.wgrad_hadamard) * elems,
                                                "bytes_read": elems * src / 8, "bytes_written": elems * src / 8}))
    return out


def shares_input(table: Any, dims: dict[str, np.ndarray], i: int) -> bool:
    """Whether GEMM row ``i`` reads the same input as the row before it (q/k/v after one norm, gate/up: one fused
    projection in Transformer Engine, ``LayerNormLinear`` / ``LayerNormMLP``, whose input is cast once): adjacent
    GEMM rows of one block (the name up to its last dot) with the same ``m``, ``k`` and batch."""
    if i == 0 or table.roles[i - 1] != GEMM or table.roles[i] != GEMM:
        return False
    same = all(float(dims[c][i - 1]) == float(dims[c][i]) for c in ("m", "k", "batch"))
    return same and table.names[i - 1].rsplit(".", 1)[0] == table.names[i].rsplit(".", 1)[0]


def cast_dims(run: TrainingRun, table: Any, micro_batch: int, cp: int = 1, ep: int = 1) -> dict[str, np.ndarray]:
    """The ``m, n, k, batch`` of every row of one shard's table (``micro_batch`` sequences, 1/cp of the tokens,
    1/ep of the experts), what :func:`cast_ops` reads."""
    B = split_queries(basis(run.arch, micro_batch, run.seq, run.seq), cp)
    B[:, EXP] /= ep
    return {c: np.asarray(x, dtype=float) for c, x in gemm_dims(table, B[0]).items()}


def step_role_columns(roles: list[int], run: TrainingRun) -> dict[str, list[str]]:
    """The LLM model's precision/unit/level columns, the GEMMs at the step's precision (fp8: its matrix roof)."""
    cols = role_columns(roles, run.precisions)
    fmt = formats.get(run.precision)
    if fmt.low_precision:
        cols["precision"] = [fmt.roof if r == GEMM else p for r, p in zip(roles, cols["precision"], strict=True)]
    return cols


# -- one device's training step, op by op ---------------------------------------------------------------
def _micro_batches(run: TrainingRun, tp: int, micro_batch: int, recompute: str) -> int:
    """The micro-batches of one device's step, or a one-line error for a bad recomputation, tp or micro-batch."""
    if recompute not in RECOMPUTE:
        raise RooflineError(f"recompute must be one of {', '.join(RECOMPUTE)}, got {recompute!r}")
    check_tp(run.arch, tp)
    if run.global_batch % micro_batch:
        raise RooflineError(f"global batch {run.global_batch} is not a whole number of micro-batches of {micro_batch}")
    return run.global_batch // micro_batch


def _cast_rows(ops: WorkloadBuilder, run: TrainingRun, table: Any, micro_batch: int, micro_batches: int) -> None:
    """A low-precision step's quantize passes (:func:`cast_ops`) into ``ops``, once per micro-batch."""
    for suffix, idx, _, c in cast_ops(run, table, cast_dims(run, table, micro_batch)):
        ops.extend(name=[table.names[i].replace("prefill.", "train.", 1) + suffix for i in idx],
                   group=[table.names[i].replace("prefill.", "train.", 1) for i in idx],
                   kind=["elementwise"] * len(idx), module_type=["quantize"] * len(idx),
                   **step_role_columns([VEC] * len(idx), run), flops=c["flops"].tolist(),
                   bytes_read=c["bytes_read"].tolist(), bytes_written=c["bytes_written"].tolist(),
                   weight_bytes=[0.0] * len(idx), count=(table.counts[idx] * micro_batches).tolist())


def training_workload(run: TrainingRun, *, tp: int = 1, micro_batch: int = 1, recompute: str = "selective"
                      ) -> Workload:
    """The per-op :class:`~roofline.Workload` of one training step on one of ``tp`` devices (the whole
    global batch through it, ``micro_batch`` sequences at a time): every forward op, its backward (2x its
    FLOPs and bytes, named '... (backward)'), the recomputed ops ('... (recompute)': the forward again
    under ``full``, its attention core under ``selective``), the tensor-parallel all-reduces forward and
    backward (interconnect), and one Adam step over the device's parameters.  What ``roofline llm --train``
    analyses; ``roofline plan`` adds pipeline, data, context and expert parallelism on a system."""
    a = run.arch
    m = _micro_batches(run, tp, micro_batch, recompute)
    table, v = forward_ops(run, tp, 1, 1, micro_batch)
    layer, first, last, core = table_masks(table)
    compute = layer | first | last
    link = table.roles == LINK
    ops = WorkloadBuilder()

    def rows(mask: np.ndarray, suffix: str, scale: float) -> None:
        idx = np.flatnonzero(mask)
        roles = table.roles[idx].tolist()
        names = [table.names[i].replace("prefill.", "train.", 1) + suffix for i in idx]
        ops.extend(name=names, group=[table.names[i].replace("prefill.", "train.", 1) for i in idx],
                   kind=[table.kinds[i] for i in idx], module_type=[table.module_types[i] for i in idx],
                   **step_role_columns(roles, run), flops=(scale * v["flops"][idx]).tolist(), bytes_read=(scale * v["bytes_read"][idx]).tolist(),
                   bytes_written=(scale * v["bytes_written"][idx]).tolist(),
                   weight_bytes=(scale * v["weight_bytes"][idx]).tolist(), count=(table.counts[idx] * m).tolist())

    rows(compute | link, "", 1.0)
    rows(compute, " (backward)", float(BACKWARD))
    rows(link, " (backward)", 1.0)  # the activations' gradients all-reduced as the activations were
    _cast_rows(ops, run, table, micro_batch, m)
    if recompute != "none":
        rows(compute if recompute == "full" else core, " (recompute)", 1.0)
    held = stage_params(a, tp)
    params = held.total
    adam_read = optimizer_bytes(params, run.main_grad_bytes) - ADAM_WRITTEN * params
    ops.add("train.optimizer.adam", kind="elementwise", flops=ADAM_FLOPS * params, bytes_read=adam_read,
            bytes_written=ADAM_WRITTEN * params, precision="fp32", unit="vector", group="train.optimizer",
            module_type="adam")
    memory = device_memory(run, params, tp=tp, micro_batch=micro_batch, recompute=recompute, gemm_params=held.gemm)
    info = {"model": a.name, "mode": "training", "gemm_format": run.precision, "seq": run.seq, "global_batch": run.global_batch,
            "micro_batch": micro_batch, "tp": tp, "recompute": recompute, "params_per_device": params,
            "training_flops": training_flops(run, recompute) / tp, **{f"memory_{k}": x for k, x in memory.items()},
            "memory_bytes": sum(memory.values())}
    return ops.build(
        title=f"{a.name} training step ({run.global_batch} x {run.seq} tokens" + (f", tp {tp}" if tp > 1 else "") + ")",
        source=f"roofline.llm.training ({a.source})", info=info,
        bytes_model="fused attention (FlashAttention-style); other ops unfused; backward 2x the forward's bytes",
        assumptions=[
            "backward = 2 x forward FLOPs and bytes (activation and weight gradients); recomputation " + recompute,
            f"Adam, mixed precision: {ADAM_READ} B read, {ADAM_WRITTEN} B written, {ADAM_FLOPS} FLOPs per parameter",
            "memory per device: " + ", ".join(f"{k} {v:g} B" for k, v in state_bytes(run.precision).items())
            + " per parameter; activations per layer what each op keeps for its backward (2 s b h under full "
            "recomputation)",
            _gemm_note(formats.get(run.precision)),
            "logits for every token (the loss); FlashAttention keeps no score tensor"],
        warnings=list(a.warnings))


__all__ = ["ADAM_FLOPS", "BACKWARD", "CROSS_ENTROPY_BYTES", "RECOMPUTE", "TRAIN_PRECISIONS", "StageParams", "TrainingRun",
           "activation_bytes_per_layer", "cast_dims", "cast_ops", "routed_activation_bytes_per_layer", "device_memory", "forward_ops", "grad_accumulation_bytes", "row_params", "logits_bytes", "micro_batch_flops",
           "optimizer_bytes", "optimizer_flops", "recomputed", "stage_params", "state_bytes", "training_ceilings",
           "training_flops", "training_workload"]
