"""Parallel LLM training on a system: one layout's step (compute, pipeline bubble, collectives, memory), and
every layout ranked (``roofline plan``).

The training step of one device (forward, backward, recomputation, optimizer, bytes held) is the LLM
model's (:mod:`roofline.llm.training`); the planner only shards it over a layout and schedules it:
:mod:`~roofline.planner.dims` (the parallel dimensions, declared once: what each divides, its collectives,
its memory effect, the sizes a search tries), :mod:`~roofline.planner.layout` (layouts, group placement, the
``--layout`` grammar), :mod:`~roofline.planner.cache` (shard times and collectives shared by layouts),
:mod:`~roofline.planner.train` and :mod:`~roofline.planner.serve` (one layout's estimate),
:mod:`~roofline.planner.search` (every layout ranked), :mod:`~roofline.planner.result` (the ranked rows and
the JSON ``roofline plan`` writes: :func:`plan_layouts`).

A layout splits ``devices = tp x cp x pp x dp`` ways (ranks numbered tp fastest, then cp, dp, pp, as
Megatron-LM does; ``ep`` carves expert groups out of dp); ``zero`` is the ZeRO stage (3 = FSDP).  Per
device and per micro-batch of ``micro_batch`` sequences of ``seq`` tokens:

* **Compute**: the inference op table (:mod:`roofline.llm.table`, FlashAttention-style, logits for every
  token) evaluated on the device's shard (heads and widths / tp, tokens / cp, experts / ep, its stage's
  layers), each op at its roofline time (``--precision fp8``: the GEMMs on the fp8 roof).  Backward = 2 x
  forward (FLOPs and bytes: activation and weight gradients); recomputation adds the forward again
  (``full``) or its attention core (``selective``).  Stages take ``layers / pp`` layers, the first and last
  one fewer when pp does not divide them (Llama 3), or ``stages=``; the busiest stage (the embedding on
  the first, the final norm and lm_head on the last) sets the pace.
* **Optimizer** (Adam, mixed precision, once per step): per parameter it reads the fp32 master weight,
  the gradient and the two moments (16 B) and writes the master weight, the moments and the bf16 weight
  (14 B), 13 FLOPs (:data:`ADAM_FLOPS`); over the device's shard (/ dp from ZeRO 1 on).
* **Pipeline** (1F1B): ``(m + (pp - 1) / v) x`` one micro-batch's forward and backward, for ``m``
  micro-batches and ``v`` interleaved chunks per device: bubble ``(pp - 1) / (v m + pp - 1)`` of the step.
* **Collectives** (:mod:`roofline.engine.collectives`, on the tier each group crosses): tensor parallel, 2
  all-reduces per layer forward and 2 backward of the micro-batch's activations (with sequence
  parallelism, each a reduce-scatter plus an all-gather: the same bytes), and the vocabulary-parallel
  embedding's one forward; context parallel, the K and V
  all-gathered per layer forward, all-gathered and their gradients reduce-scattered backward (ring
  attention's exchange); expert parallel, all-to-all dispatch and combine of the routed tokens per MoE layer,
  forward and backward; pipeline, the activation sent forward and its gradient back per micro-batch and
  stage boundary; data parallel, the bf16 gradients as the ZeRO stage syncs them
  (:data:`~roofline.planner.train.ZERO_STAGES`: 0 all-reduced once per step; 1 reduce-scattered and the
  updated weights all-gathered once per step; 2, its gradients sharded, reduce-scattered every
  micro-batch; 3 the weights all-gathered before forward and backward and the gradients reduce-scattered,
  every micro-batch).
* **Memory** (bytes per device, the stage holding the most): bf16 weights 2, bf16 gradients 2, fp32 master
  and Adam moments 12 per parameter (ZeRO, Rajbhandari et al. 2020: stage 1 shards the 12, stage 2 also
  the gradients, stage 3 the weights too; fp8 adds 2 for the GEMM weights' fp8 copy); activations per
  layer and micro-batch from the model's ops (:func:`~roofline.llm.training.activation_bytes_per_layer`),
  times the stage's layers and the micro-batches it holds in flight under 1F1B or interleaving
  (:func:`~roofline.planner.layout.in_flight`); the last stage's fp32 logits.  A layout that does not fit
  the device's memory says so.
* **Step time**: the *bound* overlaps communication fully where the schedule allows it (per micro-batch
  the max of compute and its collectives; the gradient sync with the whole pipeline).  The *forecast*
  (what the search ranks by; :attr:`Estimate.time`) times each shard shape's forward and backward ops with
  the forecast machinery (:mod:`~roofline.planner.forecast`: tile and wave quantization, cited efficiency
  curves, launch floors; once per shard shape, shared by every layout with it), the collectives over the
  device's collective efficiency, and overlaps communication by the frameworks' rules
  (:mod:`~roofline.planner.overlap`: dp on, tp off, pp on by default); MFU and model TFLOP/s per device
  are read off it (:attr:`Estimate.mfu`).

Serving (:func:`~roofline.planner.serve.estimate_serving`): a replica of tp x cp x pp devices decodes ``batch`` sequences, pp
micro-batches in flight (one per stage); dp replicas, an MoE model's routed experts split over ep of
them.  Per output token each device runs its stage's layers for every micro-batch (cp: 1/cp of the KV
cache read; ep: 1/ep of the experts held, its group's routed tokens computed), with 2 tp all-reduces per
layer, a cp combine of the partial attention outputs per layer, 2 ep all-to-alls per MoE layer and the
pp sends; time to first token is one prompt split over cp through every stage.

>>> from roofline.catalog import get_system
>>> run = TrainingRun.of("llama-2-7b", seq=4096, global_batch=64)
>>> e = estimate(run, Layout(tp=8, dp=2), get_system("dgx-h100", nodes=2))
>>> e.micro_batches, e.fits, e.bubble_share
(32, True, 0.0)
"""

from __future__ import annotations

from roofline.llm.training import TrainingRun, training_flops, training_workload
from roofline.planner.layout import Comm, Layout, parse_layout
from roofline.planner.result import PlanResult, PlanRow, plan_layouts
from roofline.planner.search import Plan, plan
from roofline.planner.serve import ServingEstimate, ServingRun, check_serving, estimate_serving, serving_layouts
from roofline.planner.train import Estimate, check, estimate, layouts, memory_per_device

__all__ = ["Comm", "Estimate", "Layout", "Plan", "PlanResult", "PlanRow", "ServingEstimate", "ServingRun",
           "TrainingRun", "check", "check_serving", "estimate", "estimate_serving", "layouts", "memory_per_device",
           "parse_layout", "plan", "plan_layouts", "serving_layouts", "training_flops", "training_workload"]
