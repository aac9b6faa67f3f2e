"""The policies of the engines people run, by the engine's name, each with the behaviour of its source:

``vllm-v0``  vLLM before V1 (vllm/core/scheduler.py ``Scheduler._schedule_default``, v0.6): waiting prompts
             are prefilled alone and first, whole (prefill-first); admission leaves ``watermark = 0.01`` of the
             blocks free (vllm/core/block_manager.py ``can_allocate``: ``num_free_gpu_blocks - num_required_blocks
             >= watermark_blocks``; ``CacheConfig`` default 0.01); ``max_num_seqs = 256`` running sequences
             (``SchedulerConfig`` default);
``vllm``     vLLM V1 (vllm/v1/core/sched/scheduler.py ``Scheduler.schedule``): the running requests first, each
             its next token or the next chunk of its prompt, then waiting ones chunked into what is left of
             ``max_num_batched_tokens`` (2048, ``SchedulerConfig``'s default with chunked prefill); when a
             running request finds no free block the most recent is preempted, and "if not preempted_reqs" is the
             condition for scheduling waiting requests: an iteration that preempted admits none;
``sarathi``  Sarathi-Serve (Agrawal et al., OSDI 2024, sections 4.1-4.3): stall-free batching, every ongoing
             decode in each iteration and prefill chunks filling a token budget computed offline for the TPOT
             SLO (512 in the paper's Mistral-7B and Yi-34B runs); built on vLLM V0, so its watermark;
``trtllm``   TensorRT-LLM's in-flight batching under the capacity scheduler ``GUARANTEED_NO_EVICT``
             (cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp, ``GuaranteedNoEvictScheduler``): a request
             starts only when the blocks for its prompt and its whole maximum output are free, counting those the
             running requests will still need; nothing is ever evicted.  Whole prompts join the decodes under
             ``max_num_tokens`` (8192, ``trtllm-build``'s default).

Each is a subclass of the mechanism it shares (:mod:`.prefill_first`, :mod:`.chunked`, :mod:`.whole_prompts`).
"""

from __future__ import annotations

from roofline.serving.schedulers.chunked import ChunkedPrefill
from roofline.serving.schedulers.prefill_first import VLLM_WATERMARK, PrefillFirst
from roofline.serving.schedulers.registry import register
from roofline.serving.schedulers.whole_prompts import WholePrompts

#: vLLM's ``SchedulerConfig.max_num_seqs`` default.
VLLM_MAX_SEQS = 256


@register("vllm-v0")
class VllmV0(PrefillFirst):
    """Prefill-first, 1 % watermark, 256 running sequences at most (module docs)."""

    watermark = VLLM_WATERMARK
    #: vLLM V0 takes a prompt's blocks only, and preempts when a decode finds none free
    reserve_lifetime = False
    mode = "vLLM V0: prefill-first, 1% KV watermark"

    def __init__(self, *, token_budget: int | None = None, max_batch: int | None = None) -> None:
        super().__init__(token_budget=token_budget, max_batch=max_batch or VLLM_MAX_SEQS)


@register("vllm")
class VllmV1(ChunkedPrefill):
    """Chunked prefill mixed into decodes; no admission in an iteration that preempted (module docs)."""

    hold_after_preemption = True
    mode = "vLLM V1: chunked prefill, no admission after a preemption"

    def __init__(self, *, token_budget: int | None = None, max_batch: int | None = None) -> None:
        super().__init__(token_budget=token_budget, max_batch=max_batch or VLLM_MAX_SEQS)


@register("sarathi")
class Sarathi(ChunkedPrefill):
    """Stall-free chunked prefill under a token budget, 512 by default (module docs)."""

    default_budget = 512
    watermark = VLLM_WATERMARK
    mode = "Sarathi-Serve: stall-free chunked prefill, 1% KV watermark"


@register("trtllm")
class TrtllmNoEvict(WholePrompts):
    """In-flight batching of whole prompts; KV reserved for the whole output at admission (module docs)."""

    default_budget = 8192
    mode = "TensorRT-LLM in-flight batching, GUARANTEED_NO_EVICT"

    #: the prompt's blocks and those of every output token it may still make: never evicted
    reserve_lifetime = True
