"""``prefill-first``: vLLM's default scheduler before V1, admitting by lifetime KV reservation.  When requests wait
and their blocks are free, the iteration prefills them (whole prompts, FIFO, at most ``token_budget`` tokens when
one is given) and no sequence decodes; otherwise every running sequence decodes one token.

Admission reserves each request's whole lifetime: the blocks of its prompt and of its maximum output
(:attr:`~roofline.serving.schedulers.base.Scheduler.reserve_lifetime`, as TensorRT-LLM's ``GUARANTEED_NO_EVICT``
does), leaving vLLM V0's 1 % watermark free, so a saturating load fills the cache without thrashing: no
request is ever preempted.  ``vllm-v0`` (:mod:`.engines_named`) is vLLM V0 itself: the prompt's blocks only,
and preemption by recomputation when a decode finds none free."""

from __future__ import annotations

import numpy as np

from roofline.serving.schedulers.base import Plan, Scheduler, State
from roofline.serving.schedulers.registry import register

#: vLLM V0's ``CacheConfig.watermark`` default (vllm/config.py): the share of blocks admission leaves free.
VLLM_WATERMARK = 0.01


@register("prefill-first")
class PrefillFirst(Scheduler):
    """Prefills alone, whole prompts; decodes when none is admitted; lifetime KV reservation (module docs)."""

    watermark = VLLM_WATERMARK
    reserve_lifetime = True
    #: the words of :meth:`describe` in its parentheses
    mode = "prefill-first, KV reserved for prompt + output, 1% watermark"

    def describe(self) -> str:
        limits = self._limits()
        if self.token_budget:
            limits.append(f"max {self.token_budget} prefill tokens per iteration")
        return ", ".join([f"continuous batching ({self.mode})", *limits])

    def plan(self, s: State) -> Plan:
        chunks = self._admit(s, self.token_budget)
        if chunks:
            return Plan(np.zeros(0, dtype=np.int64), tuple(chunks))
        return Plan(self._decodes(s))

    def admitted_tokens(self, left: int, used: int, budget: int | None, first: bool) -> int:
        # a prompt joins whole; one that overflows the budget waits, unless it is the iteration's first
        over = budget is not None and used + left > budget
        return 0 if over and not first else left
