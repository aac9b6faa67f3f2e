"""``whole-prompts``: inflight batching of whole prompts (TensorRT-LLM's in-flight fused batching, as NVIDIA's
MLPerf Inference v4.x harness runs it: ``trtllm_batching_mode=IFB``, context chunking not enabled; see
:mod:`roofline.serving.engines`).  Every running sequence decodes and waiting prompts join whole while the
iteration's tokens stay within the budget (``max_num_tokens``, default
:data:`~roofline.serving.schedulers.base.CHUNK_TOKENS`); a prompt over the whole budget runs alone rather than
starve."""

from __future__ import annotations

from roofline.serving.schedulers.chunked import ChunkedPrefill
from roofline.serving.schedulers.registry import register


@register("whole-prompts")
class WholePrompts(ChunkedPrefill):
    """Decodes first, then whole prompts FIFO under the token budget (module docs)."""

    mode = "inflight batching of whole prompts"

    def admitted_tokens(self, left: int, used: int, budget: int | None, first: bool) -> int:
        # one that overflows the budget waits, unless it could never fit (it then runs, first in its iteration)
        over = budget is not None and used + left > budget
        return 0 if over and (not first or left <= (self.token_budget or 0)) else left
