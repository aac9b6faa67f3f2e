"""LLM config -> Workload: an analytic, per-op model of decoder-only transformer inference.

Prefill and decode rooflines from a Hugging Face style config, with weight /
activation / KV-cache precisions (int4 with group-wise scales), grouped-query
and multi-head latent attention, mixture-of-experts and tensor parallelism.
No torch needed.  The implementation lives in :mod:`roofline.llm` (config,
model, metrics); this module is the frontend's public face.

Against the same config traced from transformers on the meta device
(:func:`roofline.frontends.hf.from_hf_config`), projections, attention matmuls
(causal in both), MLP/expert GEMMs, router and lm_head agree exactly in FLOPs
and weight bytes (tests/test_llm.py).  Remaining differences, all deliberate:

* HF's plain forward computes logits for every prompt token; here lm_head runs
  on the last token of each sequence unless ``all_logits=True``.
* HF's grouped-matmul experts read every expert's weights each layer; here a
  step reads the experts its n tokens touch: by default the expected number
  under uniform top-k routing, ``E x (1 - (1 - top_k/E)^n)`` (decode batch 2 of
  Mixtral: 3.5 of 8); ``moe_routing='worst'`` takes ``min(E, n x top_k)`` (4 of
  8), ``'best'`` takes ``top_k`` (2 of 8).
* HF's RMSNorm traces as pow / mean / mul / rsqrt elementwise and reduction ops,
  RoPE as mul / add / neg / cat, and SDPA carries its softmax inside; here each
  is one norm, rope or softmax op with the FLOP constants of roofline.work.costs.
* The embedding table is never read whole: an op reads the rows it gathers.
  A "weights + KV cache over bandwidth" estimate that counts the table whole is
  1.7% slower than this model for Llama-2-7B decode at batch 1.
* HF's decode reads a static cache of kv_len + 1 slots: ``context = kv_len + 1``.

>>> from roofline import Device, analyze
>>> from roofline.frontends.llm import from_llm
>>> from roofline.words.llm_report import report
>>> w = from_llm("llama-2-7b", phase="decode", batch=1, context=1024)
>>> round(w.info["params"] / 1e9, 2)
6.74
>>> dev = Device.simple("a100ish", "312 TFLOP/s", "2.039 TB/s", precision="bf16", unit="matrix", kind="gpu")
>>> r = report(analyze(w, dev))
>>> r.ridge_batch is not None and r.tpot > 0
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from roofline.core.errors import RooflineError
from roofline.llm.config import Arch, list_models, load_arch
from roofline.llm.metrics import (
    BatchSweep,
    Footprint,
    GridSweep,
    batch_sweep,
    device_ceilings,
    fitting_batch,
    footprint,
    grid_sweep,
    max_batch,
    parse_range,
    ridge_batch,
    sweep_times,
)
from roofline.llm.model import build_workload
from roofline.llm.sizes import param_counts
from roofline.llm.spec import PHASES, LLMSpec, Precisions, make_spec
from roofline.llm.training import TrainingRun, training_workload
from roofline.work.workload import Workload

__all__ = [
    "Arch", "BatchSweep", "Footprint", "GridSweep", "LLMSpec", "Precisions", "batch_sweep",
    "device_ceilings", "fitting_batch", "footprint", "from_llm", "grid_sweep", "list_models",
    "load_arch", "make_spec", "max_batch", "param_counts", "parse_range", "ridge_batch", "sweep_times",
]


def from_llm(name_or_config: str | Mapping[str, Any] | Arch, phase: str = "generate", batch: int = 1,
             prompt: int | None = None, context: int | None = None, gen: int | None = None,
             wbits: int | str = 16, abits: int | str = 16, kvbits: int | str = 16, tp: int = 1,
             flash: bool = True, *, group_size: int = 128, all_logits: bool = False,
             moe_routing: str = "expected", moe_load: str = "balanced", mtp: int = 0, ep: int = 1,
             dp_attention: bool = False) -> Workload:
    """The per-op inference workload of a decoder-only transformer (per device with ``tp`` > 1).

    ``name_or_config``: a bundled model ('llama-2-7b', 'meta-llama/Llama-2-7b-hf'; case and
    punctuation ignored), a config.json path, or a config dict.  ``phase='train'``: one training step
    of ``batch`` sequences of ``prompt`` tokens (default 4096) on one of ``tp`` devices
    (:func:`roofline.llm.training.training_workload`; ``roofline plan`` for layouts on a system).
    ``phase``: 'prefill' of
    ``prompt`` tokens (default 1024), 'decode' one token at ``context`` (default: prompt), or
    'generate' = prefill + ``gen`` decode steps (default 256).  Precisions: 32, 16, 8 or 4 bits
    or a name (fp32, bf16, fp16, fp8, int8, int4); int4 carries one fp16 scale per
    ``group_size`` values.  ``flash``: fused attention with no score tensor in memory (the default,
    as ``serve`` and the engines; False: unfused, the s x s scores written and read).
    ``all_logits``: lm_head over every token instead of the last of each sequence.
    ``moe_routing``: how many routed experts a step of n tokens reads (top_k of E each):
    'expected' under uniform routing, E x (1 - (1 - top_k/E)^n); 'worst', min(E, n x top_k);
    'best', top_k (see :func:`roofline.llm.basis.experts_touched`).  ``moe_load``: the rows of the grouped
    expert GEMMs' slowest group, 'balanced' or 'expected-max' (:mod:`roofline.llm.moe_load`; a MoE model's
    only).  ``mtp``: multi-token prediction modules run with the model (DeepSeek-V3: 1), in training too.  ``ep``: the routed experts split ``ep``
    ways over the ``tp`` devices; ``dp_attention``: attention data-parallel over them, the experts over all
    (:mod:`roofline.llm.expert_parallel`).

    Ops are named and grouped by path ('decode.layers.attn.q_proj'); ``count`` is the number of
    layers; ``info`` holds the sizes and totals and ``assumptions`` the modelling choices.

    >>> w = from_llm("mixtral-8x7b", phase="decode", batch=8, context=2048, wbits=4)
    >>> round(w.info["params"] / 1e9, 1), round(w.info["active_params"] / 1e9, 1)
    (46.7, 12.9)
    >>> w.op(int(list(w.tables["name"]).index("decode.layers.attn.q_proj"))).precision
    'bf16'
    """
    from roofline.core import arguments as arg

    if not isinstance(name_or_config, (str, os.PathLike, Mapping, Arch)):
        raise arg.type_error("from_llm", "name_or_config", "a model name, a config.json path, a config dict or an "
                             "Arch", name_or_config)
    arg.choice(phase, (*PHASES, "train"), "from_llm", "phase")
    if phase == "train":  # one device's training step: 'batch' sequences of 'prompt' tokens, micro-batches of 1
        arch = name_or_config if isinstance(name_or_config, Arch) else load_arch(name_or_config)
        if moe_load != "balanced":
            raise RooflineError("from_llm: moe_load shapes an inference step's grouped GEMMs (and plan's training "
                                "forecast); give phase prefill, decode or generate")
        run = TrainingRun.of(arch, seq=prompt or 4096, global_batch=batch, mtp=mtp)
        return training_workload(run, tp=tp)
    spec = make_spec(name_or_config, phase=phase, batch=batch, prompt=prompt, context=context, gen=gen,
                     wbits=wbits, abits=abits, kvbits=kvbits, tp=tp, flash=flash, group_size=group_size,
                     all_logits=all_logits, moe_routing=moe_routing, moe_load=moe_load, mtp=mtp, ep=ep,
                     dp_attention=dp_attention)
    return build_workload(spec)
