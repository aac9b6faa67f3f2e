"""``chunked``: chunked prefill (Sarathi-Serve, OSDI 2024; vLLM V1's default).  Every running sequence decodes,
and the rest of a token budget (``token_budget``, default :data:`~roofline.serving.schedulers.base.CHUNK_TOKENS`)
goes to prefill chunks of the oldest prompts, unfinished ones first, then of waiting ones (FIFO)."""

from __future__ import annotations

import numpy as np

from roofline.serving.schedulers.base import CHUNK_TOKENS, Plan, Scheduler, State
from roofline.serving.schedulers.registry import register


@register("chunked")
class ChunkedPrefill(Scheduler):
    """Decodes first, then prefill chunks under the token budget (module docs)."""

    default_budget = CHUNK_TOKENS
    #: the words of :meth:`describe` before the budget
    mode = "chunked prefill"

    @property
    def mixed_prefill_tokens(self) -> int:
        return self.token_budget or 0

    def describe(self) -> str:
        return ", ".join([f"continuous batching ({self.mode}, {self.token_budget} tokens per iteration)",
                          *self._limits()])

    def plan(self, s: State) -> Plan:
        dec = self._decodes(s)
        budget = (self.token_budget or CHUNK_TOKENS) - len(dec)
        chunks: list[tuple[int, int]] = []
        run = np.asarray(s.running, dtype=np.int64)
        for r in run[s.done[run] < s.target[run]].tolist():  # admitted, prefill unfinished (oldest first)
            if budget <= 0:
                break
            take = min(int(s.target[r] - s.done[r]), budget)
            chunks.append((r, take))
            budget -= take
        if budget > 0:
            chunks += self._admit(s, budget)
        return Plan(dec, tuple(chunks))

    def admitted_tokens(self, left: int, used: int, budget: int | None, first: bool) -> int:
        return left if budget is None else min(left, budget - used)
