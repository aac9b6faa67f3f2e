"""What an LLM run holds and counts: parameters, resident weights, KV cache, activations (per device).

All read off the op table's coefficients (:mod:`roofline.llm.table`), so the sizes and the per-op
workload never disagree.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from roofline.llm.basis import basis
from roofline.llm.config import Arch
from roofline.llm.spec import LLMSpec, Precisions
from roofline.llm.table import EXP, ONE, TOK, build_table, kv_heads_per_device


@lru_cache(maxsize=64)
def describe_params(arch: Arch) -> str:
    """'6.74 B', or '46.70 B (12.9 B active)' for a model whose experts are not all active."""
    total, active = param_counts(arch)
    return f"{total / 1e9:.2f} B" + (f" ({active / 1e9:.1f} B active)" if active != total else "")


def param_counts(arch: Arch) -> tuple[float, float]:
    """(total, active) parameters, read off the op table's weight coefficients (tp = 1).

    Total counts every expert; active counts ``top_k`` routed experts per MoE layer.
    The embedding table is added whole (the ops read only the rows they gather)
    unless tied to lm_head, and a learned position table whole, to both.  Not counted: a DeepSeek MTP
    module (``deepseek-v3`` is the 671B main model, not the hub's 685B) and a vision encoder (Llama 4).
    """
    table = build_table(arch, "prefill")
    w = (table.coef["wq"] + table.coef["wu"]) * table.counts[:, None]
    base = float(w[:, ONE].sum())
    routed = float(w[:, EXP].sum())
    extra = (0 if arch.tie_embeddings else arch.vocab * arch.hidden) + arch.position_table * arch.hidden
    return base + routed * arch.experts + extra, base + routed * arch.top_k + extra


def kv_elements_per_token(arch: Arch, tp: int = 1) -> float:
    """KV-cache elements one token occupies across all layers on one device (full-attention layers)."""
    if arch.mla:
        return arch.layers * (arch.kv_lora_rank + arch.qk_rope_head_dim)  # latent, replicated over tp
    return arch.layers * kv_heads_per_device(arch, tp) * (arch.head_dim + arch.v_head_dim)


def kv_cache_bytes(spec: LLMSpec, batch: Any = None, context: Any = None) -> Any:
    """KV-cache bytes per device for ``batch`` sequences of ``context`` tokens (sliding-window layers cap at the window).
    Under attention data-parallelism a device holds every head of its ``1 / tp`` of the sequences (MLA's latent
    cache is then not replicated)."""
    a = spec.arch
    b = np.asarray(spec.batch if batch is None else batch, dtype=float)
    S = np.asarray(spec.max_context if context is None else context, dtype=float)
    if spec.dp_attention:
        b = b / spec.tp
    per_layer = kv_elements_per_token(a, 1 if spec.dp_attention else spec.tp) / a.layers
    tokens = (a.layers - a.window_layers) * S + a.window_layers * np.minimum(S, a.sliding_window or math.inf)
    return b * tokens * per_layer * spec.precisions.bytes()["kv"]


def weight_bytes_resident(spec: LLMSpec) -> float:
    """Weight bytes each device holds: every expert, the embedding shard and position table, and the MTP modules'
    own weights (``--mtp``; their embedding and output head are the model's, held once).  Under attention
    data-parallelism (:mod:`roofline.llm.expert_parallel`) all but the routed experts are whole on every device,
    the experts split over the ``tp`` devices as before (E / ep whole experts a rank: the same bytes)."""
    base, experts = _weights_resident(spec.arch, spec.tp, spec.precisions, spec.mtp)
    if spec.dp_attention:
        base = _weights_resident(spec.arch, 1, spec.precisions, spec.mtp)[0]
    return base + experts


@lru_cache(maxsize=256)
def _weights_resident(a: Arch, tp: int, precisions: Precisions, mtp: int = 0) -> tuple[float, float]:
    """(every weight but the routed experts', the routed experts') bytes per device at ``tp``."""
    eb = precisions.bytes()
    table = build_table(a, "prefill", tp, mtp=mtp)
    own = np.array([not n.endswith(".mtp.head.lm_head") for n in table.names], dtype=float)[:, None]  # shared head
    wq = table.coef["wq"] * table.counts[:, None] * own
    wu = table.coef["wu"] * table.counts[:, None] * own
    experts = (wq[:, EXP].sum() * eb.get("we", eb["wq"]) + wu[:, EXP].sum() * eb["wu"]) * a.experts
    base = wq[:, ONE].sum() * eb["wq"] + wu[:, ONE].sum() * eb["wu"]
    embed = (0 if a.tie_embeddings else a.vocab * a.hidden / tp) + a.position_table * a.hidden
    return float(base + embed * eb["wu"]), float(experts)


def activation_bytes(spec: LLMSpec, batch: Any = None) -> Any:
    """Transient activations per device: the largest one-op working set (its activation inputs and
    outputs) of the phase, plus the residual stream (batch x tokens x hidden).  Proportional to the
    batch (every activation term is), so computed once per sequence."""
    b = np.asarray(spec.batch if batch is None else batch, dtype=float)
    out = b * _activation_per_sequence(spec.replace(batch=1))
    return out if out.ndim else float(out)


@lru_cache(maxsize=256)
def _activation_per_sequence(spec: LLMSpec) -> float:
    eb = spec.precisions.bytes()
    steps = {"prefill": [("prefill", spec.prompt, spec.prompt)], "decode": [("decode", 1, spec.context)],
             "generate": [("prefill", spec.prompt, spec.prompt), ("decode", 1, spec.prompt + spec.gen)]}[spec.phase]
    out = 0.0
    for phase, s, S in steps:
        table = build_table(spec.arch, phase, spec.tp, spec.flash, spec.all_logits)
        B = basis(spec.arch, 1, s, S, moe_routing=spec.moe_routing)
        act = float((B @ (table.coef["ar"] + table.coef["aw"]).T).max()) * eb["a"]
        out = max(out, act + float(B[0, TOK]) * spec.arch.hidden * eb["a"])
    return out


def memory_bytes(spec: LLMSpec | None) -> float:
    """What the run keeps in device memory (per device): resident weights + KV cache + activations; 0 for None."""
    if spec is None:
        return 0.0
    return weight_bytes_resident(spec) + float(kv_cache_bytes(spec)) + float(activation_bytes(spec))
