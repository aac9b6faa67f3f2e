"""Scheduler policies, one class per file, registered by name: :func:`get` ``(name)`` gives the class.

``prefill-first``  vLLM's default before V1: whole prompts prefilled alone, else every sequence decodes; a
                   request is admitted only when the blocks of its prompt and whole output are free above a 1%
                   watermark (a lifetime reservation: it never preempts);
``chunked``        chunked prefill (Sarathi-Serve; vLLM V1): decodes plus prompt chunks under a token budget;
``whole-prompts``  TensorRT-LLM's in-flight batching of whole prompts under a token budget;
``vllm-v0``, ``vllm``, ``sarathi``, ``trtllm``: the engines' policies, each with its source's behaviour
(:mod:`~roofline.serving.schedulers.engines_named`: watermark, no admission after a preemption, KV reserved
for the whole output).

:mod:`~roofline.serving.schedulers.base` holds what they share (the state, the plan, the paged KV cache,
preemption).  A new policy is a new file here: a :class:`~roofline.serving.schedulers.base.Scheduler`
subclass decorated with ``@register("its-name")``, imported in the list below (the registry cannot discover
files: a roofline module is never imported by computed name, tests/test_architecture.py).

>>> get("chunked")(token_budget=512).describe()
'continuous batching (chunked prefill, 512 tokens per iteration)'
>>> sorted(names())
['chunked', 'prefill-first', 'sarathi', 'trtllm', 'vllm', 'vllm-v0', 'whole-prompts']
"""

from __future__ import annotations

# the policies: importing a module registers its class
from roofline.serving.schedulers import chunked, engines_named, prefill_first, whole_prompts  # noqa: F401
from roofline.serving.schedulers.base import BLOCK_SIZE, CHUNK_TOKENS, GPU_MEMORY_UTILIZATION, Plan, Scheduler, State
from roofline.serving.schedulers.registry import REGISTRY, get, names, register

__all__ = ["BLOCK_SIZE", "CHUNK_TOKENS", "GPU_MEMORY_UTILIZATION", "REGISTRY", "Plan", "Scheduler", "State", "get",
           "names", "register"]
