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
* **Memory** per parameter: bf16 weights 2, bf16 gradients 2, fp32 master and Adam moments 12 (ZeRO's K,
  Rajbhandari et al. 2020); activations per layer and micro-batch ``s b h (34 / tp)`` bytes with sequence
  parallelism, ``s b h (10 + 24 / tp)`` without (Korthikanti et al. 2022; FlashAttention keeps no score
  tensor), ``2 s b h`` under full recomputation (:func:`activation_bytes_per_layer`); the fp32 logits
  (:func:`logits_bytes`).

>>> run = TrainingRun.of("llama-2-7b", seq=4096, global_batch=8)
>>> w = training_workload(run)
>>> N = 32 * (4 * 4096**2 + 3 * 4096 * 11008) + 32000 * 4096   # weights of the linear layers and lm_head
>>> attention = 8 * 32 * 2 * 32 * 256 * 4096 * 4097 // 2        # QK^T and PV over the causal pairs
>>> round(w.info["training_flops"] / (3 * (2 * N * 8 * 4096 + attention)), 4)  # norms, RoPE, activations: 0.1%
1.001
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from roofline.errors import RooflineError
from roofline.llm.basis import basis, evaluate
from roofline.llm.config import Arch, load_arch
from roofline.llm.model import role_columns
from roofline.llm.spec import Precisions, _positive_int
from roofline.llm.table import EXP, KEY, KEYW, LINK, ONE, OpTable, build_table, check_tp
from roofline.workload import Workload, WorkloadBuilder

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


@dataclass(frozen=True)
class TrainingRun:
    """The model and the step: ``global_batch`` sequences of ``seq`` tokens per optimizer step."""

    arch: Arch
    seq: int
    global_batch: int
    precisions: Precisions = Precisions()

    @classmethod
    def of(cls, model: str | Arch, *, seq: int = 4096, global_batch: int = 1024) -> TrainingRun:
        arch = model if isinstance(model, Arch) else load_arch(model)
        return cls(arch, _positive_int(seq, "seq"), _positive_int(global_batch, "global_batch"))


def _split_queries(B: np.ndarray, cp: int) -> np.ndarray:
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
    table = build_table(a, "prefill", tp, True, True)
    B = _split_queries(basis(a, micro_batch, run.seq, run.seq), cp)
    B[:, EXP] /= ep
    v = evaluate(table, B, run.precisions.bytes())
    return table, {k: x[0] for k, x in v.items()}


def _masks(table: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(every layer's ops, the first stage's extra ops, the last stage's, the attention core) of a table;
    its collectives (link ops) are in none: the layout times them."""
    names = table.names
    compute = table.roles != LINK
    layer = np.array([".layers." in n for n in names]) & compute
    first = np.array([".embed" in n for n in names]) & compute
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


def optimizer_bytes(params: float) -> float:
    """Bytes one Adam step over ``params`` parameters reads and writes."""
    return (ADAM_READ + ADAM_WRITTEN) * params


def activation_bytes_per_layer(run: TrainingRun, *, tp: int = 1, cp: int = 1, micro_batch: int = 1, sp: bool = True,
                               recompute: str = "selective") -> float:
    """Activation bytes one layer keeps for backward, per micro-batch on one device: ``s b h (34 / tp)`` with
    sequence parallelism (or tp 1), ``s b h (10 + 24 / tp)`` without (Korthikanti et al. 2022), ``2 s b h``
    under full recomputation; ``s`` the device's 1/cp of the sequence."""
    s_local = run.seq / cp
    return s_local * micro_batch * run.arch.hidden * (
        2 if recompute == "full" else 34 / tp if sp or tp == 1 else 10 + 24 / tp)


def logits_bytes(run: TrainingRun, *, tp: int = 1, cp: int = 1, micro_batch: int = 1) -> float:
    """The fp32 logits of one micro-batch on one device (its 1/tp of the vocabulary, 1/cp of the tokens)."""
    return run.seq / cp * micro_batch * run.arch.vocab / tp * 4


def device_memory(run: TrainingRun, params: float, *, tp: int = 1, micro_batch: int = 1,
                  recompute: str = "selective") -> dict[str, float]:
    """Bytes one device holds for the step when nothing else shares it (no pipeline, data or context
    parallelism): weights, gradients and optimizer state of its ``params`` parameters, one micro-batch's
    activations of every layer and its logits."""
    per_layer = activation_bytes_per_layer(run, tp=tp, micro_batch=micro_batch, recompute=recompute)
    return {"weights": WEIGHT_BYTES * params, "gradients": GRAD_BYTES * params,
            "optimizer": OPTIMIZER_BYTES * params,
            "activations": per_layer * run.arch.layers + logits_bytes(run, tp=tp, micro_batch=micro_batch)}


def _params_on(table: OpTable, a: Arch, tp: int) -> float:
    """Parameters one of ``tp`` devices holds: every op's weights (all experts), its embedding shard, the position table."""
    w = table.coef["wq"] + table.coef["wu"]
    return float(((w[:, ONE] + w[:, EXP] * a.experts) * table.counts).sum()) + (
        (0 if a.tie_embeddings else a.vocab * a.hidden / tp) + a.position_table * a.hidden)


def training_flops(run: TrainingRun, recompute: str = "none") -> float:
    """FLOPs of one training step of the whole model (forward x 3: the backward is twice the forward;
    x 4 with full recomputation), optimizer excluded: the figure MFU is quoted against."""
    table, v = forward_ops(run, 1, 1, 1, 1)
    compute = table.roles != LINK
    forward = float(v["flops"][compute] @ table.counts[compute]) * run.global_batch
    return forward * (4 if recompute == "full" else 3)


# -- one device's training step, op by op ---------------------------------------------------------------
def training_workload(run: TrainingRun, *, tp: int = 1, micro_batch: int = 1, recompute: str = "selective"
                      ) -> Workload:
    """The per-op :class:`~roofline.Workload` of one training step on one of ``tp`` devices (the whole
    global batch through it, ``micro_batch`` sequences at a time): every forward op, its backward (2x its
    FLOPs and bytes, named '... (backward)'), the recomputed ops ('... (recompute)': the forward again
    under ``full``, its attention core under ``selective``), the tensor-parallel all-reduces forward and
    backward (interconnect), and one Adam step over the device's parameters.  What ``roofline llm --train``
    analyses; ``roofline plan`` adds pipeline, data, context and expert parallelism on a system."""
    a = run.arch
    if recompute not in RECOMPUTE:
        raise RooflineError(f"recompute must be one of {', '.join(RECOMPUTE)}, got {recompute!r}")
    check_tp(a, tp)
    if run.global_batch % micro_batch:
        raise RooflineError(f"global batch {run.global_batch} is not a whole number of micro-batches of {micro_batch}")
    m = run.global_batch // micro_batch
    table, v = forward_ops(run, tp, 1, 1, micro_batch)
    layer, first, last, core = _masks(table)
    compute = layer | first | last
    link = table.roles == LINK
    ops = WorkloadBuilder()

    def rows(mask: np.ndarray, suffix: str, scale: float) -> None:
        idx = np.flatnonzero(mask)
        roles = table.roles[idx].tolist()
        names = [table.names[i].replace("prefill.", "train.", 1) + suffix for i in idx]
        ops.extend(name=names, group=[table.names[i].replace("prefill.", "train.", 1) for i in idx],
                   kind=[table.kinds[i] for i in idx], module_type=[table.module_types[i] for i in idx],
                   **role_columns(roles, run.precisions), flops=(scale * v["flops"][idx]).tolist(), bytes_read=(scale * v["bytes_read"][idx]).tolist(),
                   bytes_written=(scale * v["bytes_written"][idx]).tolist(),
                   weight_bytes=(scale * v["weight_bytes"][idx]).tolist(), count=(table.counts[idx] * m).tolist())

    rows(compute | link, "", 1.0)
    rows(compute, " (backward)", float(BACKWARD))
    rows(link, " (backward)", 1.0)  # the activations' gradients all-reduced as the activations were
    if recompute != "none":
        rows(compute if recompute == "full" else core, " (recompute)", 1.0)
    params = _params_on(table, a, tp)
    ops.add("train.optimizer.adam", kind="elementwise", flops=ADAM_FLOPS * params, bytes_read=ADAM_READ * params,
            bytes_written=ADAM_WRITTEN * params, precision="fp32", unit="vector", group="train.optimizer",
            module_type="adam")
    memory = device_memory(run, params, tp=tp, micro_batch=micro_batch, recompute=recompute)
    info = {"model": a.name, "mode": "training", "seq": run.seq, "global_batch": run.global_batch,
            "micro_batch": micro_batch, "tp": tp, "recompute": recompute, "params_per_device": params,
            "training_flops": training_flops(run, recompute) / tp, **{f"memory_{k}": x for k, x in memory.items()},
            "memory_bytes": sum(memory.values())}
    return ops.build(
        title=f"{a.name} training step ({run.global_batch} x {run.seq} tokens" + (f", tp {tp}" if tp > 1 else "") + ")",
        source=f"roofline.llm.parallel ({a.source})", info=info,
        bytes_model="fused attention (FlashAttention-style); other ops unfused; backward 2x the forward's bytes",
        assumptions=[
            "backward = 2 x forward FLOPs and bytes (activation and weight gradients); recomputation " + recompute,
            f"Adam, mixed precision: {ADAM_READ} B read, {ADAM_WRITTEN} B written, {ADAM_FLOPS} FLOPs per parameter",
            "memory per device: 2 + 2 + 12 bytes per parameter (bf16 weights and gradients, fp32 master and "
            "moments), activations s b h 34/tp per layer (Korthikanti et al. 2022; 2 s b h under full recomputation)",
            "logits for every token (the loss); FlashAttention keeps no score tensor"],
        warnings=list(a.warnings))


__all__ = ["ADAM_FLOPS", "BACKWARD", "RECOMPUTE", "TrainingRun", "activation_bytes_per_layer", "device_memory", "forward_ops",
           "logits_bytes", "micro_batch_flops", "optimizer_bytes", "optimizer_flops", "recomputed", "training_flops",
           "training_workload"]
