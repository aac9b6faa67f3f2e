"""What every scheduler policy shares: the state it sees, the plan it returns, and the mechanisms of a paged KV
cache under continuous batching.  The policies (one class per file in this package, registered by name) decide
how an iteration is formed.

Mechanisms, as the engines people run have them:

* **iteration-level continuous batching** (Orca, OSDI 2022; vLLM): the batch is re-formed every iteration;
  a finished sequence leaves at once and a waiting one joins;
* **paged KV cache** (vLLM, SOSP 2023): blocks of ``block_size`` tokens; a prompt's blocks are taken when it
  is admitted, a decoding sequence takes a block when its last one fills;
* **preemption by recomputation** (vLLM's default): when a decode finds no free block, the most recently
  admitted running sequence is evicted (:meth:`Scheduler.victim`), its blocks freed, and it returns to the head
  of the queue, to prefill its prompt and the tokens it had generated again;
* admission FIFO while the prompt's blocks are free; ``max_batch`` (running sequences) and ``token_budget``
  (tokens per iteration) are off unless given (a policy may default the budget): by default only the KV cache
  limits the batch.

Admission is by free blocks above a watermark (:meth:`Scheduler.watermark_blocks`), and a policy may reserve
more than the prompt's blocks (:attr:`Scheduler.reserve_lifetime`: the blocks of the prompt and of the whole
maximum output, as TensorRT-LLM's ``GUARANTEED_NO_EVICT`` reserves them; the default ``prefill-first`` does
too) or admit nothing in an iteration that preempted (vLLM V1): what keeps a saturating load from thrashing.
A lifetime reservation never preempts: every admitted request holds, from its admission, every block it
will write (a test plants a saturating load).

**Decode stretches.**  A pure-decode iteration repeats unchanged while no request arrives to an empty queue,
none finishes and the blocks its sequences grow into are free: the engine
(:func:`roofline.serving.engine.simulate`) advances such a run of iterations in one go, each still timed and
counted on its own, so the figures are those of stepping one at a time (a test runs both routes).  A policy
whose pure-decode plan depends on anything else sets :attr:`Scheduler.decode_stretches` False.

Out of scope: prefix caching, disaggregated prefill/decode, speculative decoding, priorities, pipeline
parallelism.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass, field
from typing import ClassVar

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
    #: blocks of the whole cache (0: taken as the free blocks at the start)
    total_blocks: int = 0
    #: this iteration preempted a sequence (a policy may then admit none: vLLM V1)
    preempted_now: bool = False

    def __post_init__(self) -> None:
        if not self.total_blocks:
            self.total_blocks = int(self.free_blocks)

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


class Scheduler(ABC):
    """A scheduler policy: :meth:`plan` forms one iteration.  Subclasses set :attr:`name` by registering
    (:func:`roofline.serving.schedulers.registry.register`) and say how a waiting prompt's tokens are taken
    (:meth:`admitted_tokens`); :meth:`victim` picks whom to preempt."""

    #: the registry name (set by ``register``)
    name: ClassVar[str] = ""
    #: the token budget when none is given (None: no budget)
    default_budget: ClassVar[int | None] = None
    #: share of the cache's blocks admission leaves free (vLLM V0's ``watermark``; 0: none)
    watermark: ClassVar[float] = 0.0
    #: no waiting prompt is admitted in an iteration that preempted (vLLM V1)
    hold_after_preemption: ClassVar[bool] = False
    #: admission takes the blocks of the prompt and of the whole maximum output (a lifetime reservation: the
    #: request never needs another block, so nothing is ever preempted); False: the prompt's blocks only
    reserve_lifetime: ClassVar[bool] = False
    #: a pure-decode plan repeats while nothing arrives, finishes or runs out of blocks (module docs)
    decode_stretches: ClassVar[bool] = True

    def __init__(self, *, token_budget: int | None = None, max_batch: int | None = None) -> None:
        self.token_budget = token_budget if token_budget is not None else self.default_budget
        self.max_batch = max_batch

    @property
    def mixed_prefill_tokens(self) -> int:
        """The most prefill tokens an iteration runs beside decodes (0: prefills run alone): the step model's
        attention table spans it."""
        return 0

    @abstractmethod
    def describe(self) -> str:
        """The policy in words, with its limits."""
        raise NotImplementedError

    @abstractmethod
    def plan(self, s: State) -> Plan:
        """The next iteration."""
        raise NotImplementedError

    @abstractmethod
    def admitted_tokens(self, left: int, used: int, budget: int | None, first: bool) -> int:
        """Tokens of a waiting prompt (``left`` still to prefill) admitted now, ``used`` of the iteration's
        ``budget`` taken (``first``: no prompt admitted yet this iteration); 0 stops admission."""
        raise NotImplementedError

    def victim(self, s: State) -> int:
        """Position in ``s.running`` of the sequence to preempt: the most recently admitted."""
        return len(s.running) - 1

    def _limits(self) -> list[str]:
        return [f"max batch {self.max_batch}"] if self.max_batch else []

    def reserve(self, s: State, r: int) -> int:
        """Blocks taken when request ``r`` is admitted: its prefill's, or with :attr:`reserve_lifetime` those
        of its prefill and every output token it may still make (``osl - gen``; the last output token's KV is
        never written, so this is one token more than a decode to the end holds: kept, as TensorRT-LLM's
        ``GUARANTEED_NO_EVICT`` counts the prompt plus ``maxNewTokens``)."""
        if self.reserve_lifetime:
            return s.blocks_for(int(s.target[r]) + int(s.osl[r]) - int(s.gen[r]))
        return s.blocks_for(s.target[r])

    def watermark_blocks(self, s: State) -> int:
        """Blocks admission leaves free: :attr:`watermark` of the cache, rounded down (vLLM V0's
        ``BlockSpaceManager``: ``watermark_blocks = int(watermark * num_gpu_blocks)``)."""
        return int(self.watermark * s.total_blocks)

    def _admit(self, s: State, budget: int | None) -> list[tuple[int, int]]:
        """Waiting requests admitted FIFO while their blocks are free above the watermark (and the limits
        allow); none in an iteration that preempted when :attr:`hold_after_preemption`."""
        out: list[tuple[int, int]] = []
        used = 0
        if self.hold_after_preemption and s.preempted_now:
            return out
        floor = self.watermark_blocks(s)
        while s.waiting:
            r = s.waiting[0]
            need = self.reserve(s, r)
            if need > s.free_blocks - floor or (self.max_batch and len(s.running) >= self.max_batch):
                break
            take = self.admitted_tokens(int(s.target[r] - s.done[r]), used, budget, not out)
            if take <= 0:
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
        s.preempted_now = False
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
            s.preempted_now = True
        return np.zeros(0, dtype=np.int64)
