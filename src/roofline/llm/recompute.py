"""Megatron-Core's fine-grained activation recomputation: ``--recompute-granularity selective --recompute-modules
M1 M2 ...`` as a layout's ``recompute=M1+M2`` (beside the whole-layer ``full``, ``selective`` -- the attention core
only, Megatron-Core's default module list ``["core_attn"]`` -- and ``none``).

What each module does (NVIDIA/Megatron-LM ``megatron/core/transformer/transformer_config.py``, ``recompute_modules``'s
docstring, at 60e039626 lines 560-574): "core_attn": the core attention part of the transformer layer; "layernorm":
the input_layernorm and pre_mlp_layernorm; "mla_up_proj": the MLA up projection and RoPE applying parts; "moe_act":
the MoE MLP activation function; "mlp": the dense MLP submodule; "shared_experts": the shared experts in the MoE
layer.  "moe_act", "layernorm" and "mla_up_proj" use *output-discarding* checkpointing (the module's output is freed
after its consumer has run and recomputed in the backward: what the consumer kept as its input is saved), "core_attn",
"mlp" and "shared_experts" *normal* checkpointing (only the module's input is kept: everything its ops saved inside is
saved).  ``moe`` (the whole MoE layer, its all-to-alls again) is refused: not modelled.

**Time**: each module's forward ops run again in the backward (:func:`module_masks`: the op table's rows of each);
the planner sums their roofline (bound) and forecast seconds.

**Memory saved**, elements per token of the device's sequence shard per layer of the kind the module is in (``t``
tensor parallelism, ``t_s`` = t with sequence parallelism else 1, ``k`` the top-k, ``f`` an MLP's width), in the
activation type (16-bit; a GEMM input in its low-precision cast under fp8), each the tensor the model of
:func:`roofline.llm.training.activation_bytes_per_layer` keeps for it:

* ``layernorm``: the two norms' outputs, the attention's and the MLP's normed GEMM input, ``2 h / t_s``;
* ``mla_up_proj``: the attention core's inputs Q, K, V, ``heads / t x (2 d_qk + d_v)`` (MLA layers);
* ``moe_act``: the routed experts' down-projection input, ``k f_moe / t`` (the routed copies of the device's
  ``1 / t`` of the tokens at full width, Megatron-Core's folded etp 1; or all at ``f / t``: the same);
* ``shared_experts``: the shared experts' inner tensors, ``3 f_s / t`` gated (gate and up, kept by the fused
  SwiGLU, and the product), ``2 f_s / t`` not;
* ``mlp``: the dense MLP's, ``3 f / t`` gated, ``2 f / t`` not (dense layers);
* ``core_attn``: nothing with a fused attention (it keeps no score tensor), as ``selective``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from roofline.core.errors import RooflineError

#: the modules ``recompute=`` takes (module docs), in Megatron-Core's names
MODULES = ("core_attn", "layernorm", "mla_up_proj", "moe_act", "shared_experts", "mlp")
#: the whole-layer settings (:data:`roofline.llm.training.RECOMPUTE`) and what ``selective`` is in modules
WHOLE = ("none", "selective", "full")
SELECTIVE = ("core_attn",)

#: op-table rows (name suffixes after ``layers.``) each module runs again; core_attn is the table's core mask
_ROWS = {
    "layernorm": ("attn.norm", "mlp.norm"),
    "mla_up_proj": ("attn.q_b_proj", "attn.kv_b_proj", "attn.rope"),
    "moe_act": ("moe.experts.act", "moe.experts.mul"),
    "shared_experts": ("moe.shared.",),
    "mlp": ("mlp.gate_proj", "mlp.up_proj", "mlp.act", "mlp.mul", "mlp.down_proj", "mlp.fc1", "mlp.fc2"),
}


def modules(recompute: str) -> tuple[str, ...]:
    """The modules ``recompute`` names: () for none, ``("core_attn",)`` for selective, ``("full",)`` for full, else
    its ``+``-separated module names (checked, sorted, once each).

    >>> modules("layernorm+moe_act"), modules("selective"), modules("none")
    (('layernorm', 'moe_act'), ('core_attn',), ())
    """
    if recompute == "none":
        return ()
    if recompute == "selective":
        return SELECTIVE
    if recompute == "full":
        return ("full",)
    names = [x.strip() for x in str(recompute).split("+")]
    bad = [x for x in names if x not in MODULES]
    if bad or not names:
        raise RooflineError(f"recompute must be one of {', '.join(WHOLE)} or modules joined by '+' from "
                            f"{', '.join(MODULES)} (Megatron-Core's --recompute-modules), got {recompute!r}")
    return tuple(sorted(set(names)))


def check(recompute: object) -> None:
    """One line for a ``recompute=`` that is neither a whole-layer setting nor modules (:func:`modules`)."""
    if not isinstance(recompute, str):
        raise RooflineError(f"recompute must be a string, got {recompute!r}")
    modules(recompute)


def base(recompute: str) -> str:
    """The whole-layer setting whose activations a module list starts from: its own for none/selective/full; for
    modules ``selective`` with core_attn (an unfused attention's scores dropped), else ``none``."""
    if recompute in WHOLE:
        return recompute
    return "selective" if "core_attn" in modules(recompute) else "none"


def module_masks(table: Any, core: np.ndarray) -> dict[str, np.ndarray]:
    """Per module, the op table's rows it runs again (``core``: the table's attention-core mask, what core_attn and
    ``selective`` repeat)."""
    names = np.asarray(table.names, dtype=object)
    out = {"core_attn": np.asarray(core, dtype=bool)}
    for m, suffixes in _ROWS.items():
        out[m] = np.array([any(f"layers.{s}" in str(n) for s in suffixes) for n in names], dtype=bool)
    return out


def recomputed(recompute: str, forward: float, per_module: dict[str, float]) -> float:
    """Seconds (or FLOPs) the backward runs again: the whole forward under ``full``, else the named modules' share
    (``per_module``: each module's rows' forward on the same stage).

    >>> recomputed("layernorm+moe_act", 10.0, {"layernorm": 0.5, "moe_act": 0.25, "core_attn": 2.0})
    0.75
    """
    names = modules(recompute)
    if names == ("full",):
        return forward
    return sum(per_module.get(m, 0.0) for m in names)


def saved_elements(arch: Any, module: str, tp: int, sp: bool = True) -> tuple[float, float, str]:
    """(elements per local token per layer of the module's kind, that kind's share of the layers, 'gemm' or 'act':
    the type they are kept in) a module's recomputation frees (module docs)."""
    t, ts = tp, (tp if sp else 1)
    L = arch.layers
    moe = getattr(arch, "moe_layers", 0) / L if arch.experts else 0.0
    gated = 3 if arch.gated else 2
    if module == "layernorm":
        return 2 * arch.hidden / ts, 1.0, "gemm"
    if module == "mla_up_proj":
        mla = bool(getattr(arch, "q_lora_rank", 0) or getattr(arch, "kv_lora_rank", 0))
        return arch.heads / t * (2 * arch.head_dim + arch.v_head_dim), 1.0 if mla else 0.0, "act"
    if module == "moe_act":
        return arch.top_k * arch.moe_intermediate / t, moe, "gemm"
    if module == "shared_experts":
        return gated * arch.shared_experts * arch.moe_intermediate / t, moe, "act"
    if module == "mlp":
        return gated * arch.intermediate / t, 1.0 - moe, "act"
    return 0.0, 0.0, "act"  # core_attn: a fused attention keeps no scores


def saved_bytes_per_layer(arch: Any, recompute: str, tokens: float, tp: int, sp: bool, act_bytes: float,
                          gemm_bytes: float) -> float:
    """Activation bytes per layer (the model's mean) the named modules free for ``tokens`` local tokens.

    >>> from types import SimpleNamespace as A
    >>> a = A(layers=4, moe_layers=4, experts=8, hidden=1024, heads=8, head_dim=64, v_head_dim=64, top_k=2,
    ...       moe_intermediate=512, shared_experts=0, intermediate=0, gated=True, q_lora_rank=0, kv_lora_rank=0)
    >>> saved_bytes_per_layer(a, "layernorm+moe_act", 10, 2, True, 2, 2)   # (2 x 1024 / 2 + 2 x 512 / 2) x 2 B x 10
    30720.0
    """
    names = modules(recompute)
    if names == ("full",):
        return 0.0
    total = 0.0
    for m in names:
        per, share, kind = saved_elements(arch, m, tp, sp)
        total += per * share * (gemm_bytes if kind == "gemm" else act_bytes)
    return tokens * total


def activation_bytes(run: Any, *, tp: int = 1, cp: int = 1, micro_batch: int = 1, sp: bool = True,
                     recompute: str = "selective") -> float:
    """Activation bytes one layer keeps per micro-batch on one device (the layers' mean):
    :func:`roofline.llm.training.activation_bytes_per_layer` of the whole-layer setting the modules start from
    (:func:`base`), less what the named modules free (:func:`saved_bytes_per_layer`)."""
    from roofline.core import formats
    from roofline.llm.training import activation_bytes_per_layer

    per = activation_bytes_per_layer(run, tp=tp, cp=cp, micro_batch=micro_batch, sp=sp, recompute=base(recompute))
    if recompute in WHOLE:
        return per
    act = float(run.precisions.bytes()["a"])
    fmt = formats.get(run.precision)
    gemm = fmt.bits_per_element("activation") / 8 if fmt.low_precision else act
    tokens = run.seq / cp * micro_batch
    return max(0.0, per - saved_bytes_per_layer(run.arch, recompute, tokens, tp, sp, act, gemm))
