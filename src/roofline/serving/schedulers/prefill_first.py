"""``prefill-first``: vLLM's default scheduler before V1.  When requests wait and their prompts fit, the iteration
prefills them (whole prompts, FIFO, at most ``token_budget`` tokens when one is given) and no sequence decodes;
otherwise every running sequence decodes one token."""

from __future__ import annotations

import numpy as np

from roofline.serving.schedulers.base import Plan, Scheduler, State
from roofline.serving.schedulers.registry import register


@register("prefill-first")
class PrefillFirst(Scheduler):
    """Prefills alone, whole prompts; decodes when none is admitted (module docs)."""

    def describe(self) -> str:
        limits = self._limits()
        if self.token_budget:
            limits.append(f"max {self.token_budget} prefill tokens per iteration")
        return ", ".join(["continuous batching (prefill-first)", *limits])

    def plan(self, s: State) -> Plan:
        chunks = self._admit(s, self.token_budget)
        if chunks:
            return Plan(np.zeros(0, dtype=np.int64), tuple(chunks))
        return Plan(self._decodes(s))

    def admitted_tokens(self, left: int, used: int, budget: int | None, first: bool) -> int:
        # a prompt joins whole; one that overflows the budget waits, unless it is the iteration's first
        over = budget is not None and used + left > budget
        return 0 if over and not first else left
