"""The scheduler: which sequences run in the next iteration, in a paged KV cache.  A small class to subclass.

Choices, as the engines people run make them:

* **iteration-level continuous batching** (Orca, OSDI 2022; vLLM): the batch is re-formed every iteration;
  a finished sequence leaves at once and a waiting one joins;
* **prefill-first** (vLLM's default scheduler before V1): when requests wait and their prompts fit, the
  iteration prefills them (whole prompts, FIFO) and no sequence decodes; otherwise every running sequence
  decodes one token;
* **chunked prefill** (Sarathi-Serve, OSDI 2024; vLLM V1's default): every running sequence decodes, and the
  rest of a token budget (``token_budget``, default :data:`CHUNK_TOKENS`) goes to prefill chunks of the
  oldest prompts, unfinished ones first;
* **paged KV cache** (vLLM, SOSP 2023): blocks of ``block_size`` tokens; a prompt's blocks are taken when it
  is admitted, a decoding sequence takes a block when its last one fills;
* **preemption by recomputation** (vLLM's default): when a decode finds no free block, the most recently
  admitted running sequence is evicted, its blocks freed, and it returns to the head of the queue, to
  prefill its prompt and the tokens it had generated again;
* **inflight batching of whole prompts** (TensorRT-LLM's in-flight fused batching, as NVIDIA's MLPerf
  Inference v4.x harness runs it: ``trtllm_batching_mode=IFB``, context chunking not enabled): chunked mode
  with ``whole_prompts=True``: every running sequence decodes and waiting prompts join whole while the
  iteration's tokens stay within the budget (``max_num_tokens``);
* ``max_batch`` (running sequences) and ``token_budget`` (tokens per prefill-first iteration) are off unless
  given: by default only the KV cache limits the batch.

Out of scope: prefix caching, disaggregated prefill/decode, speculative decoding, priorities, pipeline
parallelism.  Override :meth:`Scheduler.plan` (or :meth:`Scheduler.victim`) to model another engine.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

#: vLLM's tokens per KV block (``--block-size`` default 16, vllm/config.py CacheConfig).
BLOCK_SIZE = 16
#: vLLM's share of device memory it may use (``--gpu-memory-utilization`` default 0.9).
GPU_MEMORY_UTILIZATION = 0.9
#: Token budget per iteration under chunked prefill when none is given: vLLM's default
#: ``max_num_batched_tokens`` with chunked prefill (2048, vllm/config.py SchedulerConfig).
CHUNK_TOKENS = 2048


@dataclass
class State:
    """What the scheduler sees: per-request columns (indexed by request id) and the queues.

    ``target``: tokens the request's current prefill covers (its prompt, plus the tokens it had generated if
    it was preempted); ``done``: those prefilled so far; ``gen``: output tokens generated; ``blocks``: KV
    blocks held.  ``running`` lists the admitted requests in admission order, ``waiting`` the arrived ones.
    """

    isl: np.ndarray
    osl: np.ndarray
    done: np.ndarray
    target: np.ndarray
    gen: np.ndarray
    blocks: np.ndarray
    block_size: int
    free_blocks: int
    running: list[int] = field(default_factory=list)
    waiting: deque[int] = field(default_factory=deque)
    preemptions: int = 0

    def blocks_for(self, tokens: int) -> int:
        return -(-int(tokens) // self.block_size)

    def release(self, r: int) -> None:
        self.free_blocks += int(self.blocks[r])
        self.blocks[r] = 0


@dataclass(frozen=True)
class Plan:
    """One iteration: ``decode`` request ids (one token each) and prefill ``chunks`` of (id, new tokens)."""

    decode: np.ndarray
    chunks: tuple[tuple[int, int], ...] = ()


class Scheduler:
    """vLLM-style continuous batching: prefill-first, or chunked prefill under a token budget (module docs)."""

    def __init__(self, *, chunked: bool = False, token_budget: int | None = None,
                 max_batch: int | None = None, whole_prompts: bool = False) -> None:
        self.chunked = chunked or whole_prompts
        self.whole_prompts = whole_prompts
        self.token_budget = token_budget if token_budget is not None else (CHUNK_TOKENS if self.chunked else None)
        self.max_batch = max_batch

    def describe(self) -> str:
        mode = f"chunked prefill, {self.token_budget} tokens per iteration" if self.chunked else "prefill-first"
        if self.whole_prompts:
            mode = f"inflight batching of whole prompts, {self.token_budget} tokens per iteration"
        limits = [f"max batch {self.max_batch}"] if self.max_batch else []
        if not self.chunked and self.token_budget:
            limits.append(f"max {self.token_budget} prefill tokens per iteration")
        return ", ".join([f"continuous batching ({mode})", *limits])

    def victim(self, s: State) -> int:
        """Position in ``s.running`` of the sequence to preempt: the most recently admitted."""
        return len(s.running) - 1

    def plan(self, s: State) -> Plan:
        if self.chunked:
            return self._chunked(s)
        chunks = self._admit(s, self.token_budget)
        if chunks:
            return Plan(np.zeros(0, dtype=np.int64), tuple(chunks))
        return Plan(self._decodes(s))

    def _admit(self, s: State, budget: int | None) -> list[tuple[int, int]]:
        """Waiting requests admitted FIFO while their prompt's blocks are free (and the limits allow)."""
        out: list[tuple[int, int]] = []
        used = 0
        while s.waiting:
            r = s.waiting[0]
            need = s.blocks_for(s.target[r])
            if need > s.free_blocks or (self.max_batch and len(s.running) >= self.max_batch):
                break
            left = int(s.target[r] - s.done[r])
            whole = not self.chunked or self.whole_prompts  # a prompt joins whole or waits
            take = left if budget is None or whole else min(left, budget - used)
            # whole prompts: one that overflows the budget waits, unless it could never fit (it then runs)
            over = budget is not None and used + left > budget
            if take <= 0 or (whole and over and (out or (self.chunked and left <= (self.token_budget or 0)))):
                break
            s.waiting.popleft()
            s.running.append(r)
            s.free_blocks -= need
            s.blocks[r] = need
            out.append((r, int(take)))
            used += int(take)
        return out

    def _decodes(self, s: State) -> np.ndarray:
        """Running sequences past their prefill, after preempting until each has a block for its next token."""
        while s.running:
            run = np.asarray(s.running, dtype=np.int64)
            dec = run[s.done[run] >= s.target[run]]
            # a decode step writes the KV of token `gen`: isl + gen tokens held after it
            need = np.maximum(-(-(s.isl[dec] + s.gen[dec]) // s.block_size) - s.blocks[dec], 0)
            total = int(need.sum())
            if total <= s.free_blocks:
                s.free_blocks -= total
                s.blocks[dec] += need
                return dec
            r = s.running.pop(self.victim(s))
            s.release(r)
            s.done[r] = 0
            s.target[r] = s.isl[r] + s.gen[r]
            s.waiting.appendleft(r)
            s.preemptions += 1
        return np.zeros(0, dtype=np.int64)

    def _chunked(self, s: State) -> Plan:
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
