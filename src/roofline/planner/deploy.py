"""Serving deployments, typed and priced analytically: aggregated replicas or disaggregated prefill/decode pools.

A :class:`Deployment` is one or two :class:`Pool` s of identical workers.  A worker is ``tp x pp`` devices: tp
tensor-parallel ranks (an MoE model's routed experts over ``ep`` of them, or attention data-parallel over all
of them), ``pp`` pipeline stages (each stage the model's ``layers / pp`` layers, its own weights and KV cache).
A worker runs at most ``batch`` sequences and ``chunk`` tokens per step (chunked prefill; 0: whole prompts).
:class:`Options` holds what every deployment of a search shares: lengths, SLO, precision, speculative decoding
(:class:`Speculation`), the prefix-cache hit share, the KV transfer rule.

**Pipeline.** A worker of ``pp`` stages keeps ``pp`` micro-batches of ``batch / pp`` in flight: a token (a
prefill) takes ``pp`` stage times of its micro-batch (its latency), and the worker finishes ``pp`` micro-batches
per such latency.  A stage's time is ``1 / pp`` of the whole model's iteration
(:class:`~roofline.serving.steps.StepModel`; embedding and head shared evenly, the stage-to-stage sends not
counted), so the latency is the whole model's at the micro-batch; a stage holds ``layers / pp`` layers' weights
and KV cache (:func:`stage_arch`), which sizes the worker's KV blocks.

**mean-static** (AIConfigurator's statistic; ai-dynamo/aiconfigurator, ``TRTLLMBackend.run_agg``, commit
00ae653b, src/aiconfigurator/sdk/backends/trtllm_backend.py): a batch of ``b`` requests of fixed ISL/OSL.

* Aggregated with a chunk of ``C`` tokens per step: the batch's prompts take ``s = ceil(ISL x b / C)`` mixed
  steps (``C`` prompt tokens beside ``g`` decodes: ``g = b - ceil(C / ISL)`` when ``s < OSL``, else
  ``max(1, b // (s / OSL))``), then ``OSL - s`` decode-only steps of ``b``.  TTFT is ``ceil(ISL / C)`` mixed
  steps times AIConfigurator's queueing correction ``min(2 + (s - 3) / 20, 4)``; TPOT the mean over the steps
  (``max(1, s - 3)`` mixed ones counted); a replica makes ``b x (OSL - 1)`` tokens in ``s`` mixed and
  ``OSL - s`` decode steps.  ``b = 1``: one prefill step, then ``OSL - 1`` decode steps.
* Disaggregated: a prefill worker prefills one prompt at a time (TTFT: that prefill and the KV transfer), a
  decode worker runs a batch of ``b`` (TPOT: Simpson's rule over the context, first, middle and last step);
  the pools deliver ``min(x / prefill, y x b / (OSL x TPOT))`` requests/s.

The goodput is the figure per device when TTFT and TPOT are within the SLO, with tokens/s per user ``1 / TPOT``.

**KV transfer**: a prompt's KV cache (bytes: every layer, ISL x (1 - hit) tokens) leaves the prefill worker's
devices in parallel over the tier between the pools (the node's when both pools fit one node, else the
cluster's): ``alpha + bytes / (devices x bandwidth per device)``.  With layer-wise overlap on, only the last
layer's share is exposed after the prefill (``alpha + bytes / layers / ...``); off, the whole transfer.

**Speculative decoding**: each step drafts ``K`` tokens and verifies them in one target step of ``K + 1``
tokens per sequence (a prefill chunk over the context), both through the same op tables.  A draft model
(``draft:MODEL:K``) drafts by ``K`` decode steps of its own on the same devices; MTP heads (``mtp:N``) are the
target's ``N`` multi-token-prediction modules (:func:`roofline.llm.table._mtp`), in every verify step's op table.
The expected tokens per step with per-token acceptance ``a`` is ``(1 - a^(K+1)) / (1 - a)`` (or ``accept_len``).

**Prefix caching** (``prefix_hit`` h): h x ISL of each prompt is cached: skipped in prefill (the rest is a
chunk over them), and its KV blocks are shared, counted once per worker.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from roofline.core.errors import RooflineError
from roofline.hardware.system import System
from roofline.llm.config import Arch
from roofline.llm.sizes import kv_cache_bytes
from roofline.llm.spec import LLMSpec, make_spec
from roofline.planner.dims import tp_fits
from roofline.serving.figures import Slo
from roofline.serving.steps import StepModel

#: AIConfigurator's TTFT correction for a mixed batch (module docs): ``min(2 + (s - 3) / 20, 4)``.
AIC_TTFT_BASE, AIC_TTFT_SLOPE, AIC_TTFT_CAP = 2.0, 1 / 20, 4.0
#: The largest prompt tokens per step and decode batch a worker's attention table covers (a search's largest).
TABLE_PREFILL, TABLE_BATCH = 16384, 1024
#: The deepest pipeline a search tries, and the depths it tries (dividing the layers, within the devices).
MAX_PP = 8
PP_SIZES = tuple(2**k for k in range(MAX_PP.bit_length()))


def tokens_per_step(k: int, accept: float) -> float:
    """Expected tokens per verify step: ``K`` drafts, each accepted with probability ``accept`` independently,
    the first rejection ending the step, plus the verifier's own token: ``sum_{i=0..K} a^i = (1 - a^(K+1)) / (1 - a)``.

    >>> tokens_per_step(3, 0.5)  # 1 + 0.5 + 0.25 + 0.125
    1.875
    >>> tokens_per_step(4, 1.0)
    5.0
    """
    return float(k + 1) if accept >= 1 else (1 - accept ** (k + 1)) / (1 - accept)


@dataclass(frozen=True)
class Speculation:
    """``--spec draft:MODEL:K`` or ``--spec mtp:N`` (``draft`` is then ``'mtp'``) with ``--accept a``
    (per-token acceptance) or ``--accept-len L`` (mean accepted tokens per step, the verifier's included)."""

    draft: str
    k: int
    accept: float | None = None
    accept_len: float | None = None

    @classmethod
    def parse(cls, text: str, accept: float | None, accept_len: float | None) -> Speculation:
        parts = str(text).split(":")
        mtp = parts[0] == "mtp" and len(parts) == 2
        draft = parts[0] == "draft" and len(parts) == 3 and parts[1] != ""
        if not (mtp or draft) or not parts[-1].isdigit() or not 1 <= int(parts[-1]) <= 16:
            raise RooflineError(f"--spec {text!r}: give mtp:N (N MTP heads) or draft:MODEL:K (K draft tokens per "
                                "step), N and K from 1 to 16")
        if (accept is None) == (accept_len is None):
            raise RooflineError("--spec needs one of --accept (per-token acceptance, 0..1) or --accept-len (mean "
                                "tokens per step)")
        k = int(parts[-1])
        if accept is not None and not 0 <= accept <= 1:
            raise RooflineError(f"--accept must be a probability from 0 to 1, got {accept}")
        if accept_len is not None and not 1 <= accept_len <= k + 1:
            raise RooflineError(f"--accept-len must be from 1 to K + 1 = {k + 1} tokens per step, got {accept_len}")
        return cls("mtp" if mtp else parts[1], k, accept, accept_len)

    @property
    def mtp(self) -> bool:
        return self.draft == "mtp"

    @property
    def tokens(self) -> float:
        """Expected tokens per verify step."""
        return self.accept_len if self.accept_len is not None else tokens_per_step(self.k, self.accept or 0.0)

    def describe(self) -> str:
        how = f"accept {self.accept:g}" if self.accept is not None else f"accept-len {self.accept_len:g}"
        what = f"MTP x{self.k}" if self.mtp else f"draft {self.draft} x{self.k}"
        return f"{what} ({how}: {self.tokens:.3g} tokens per step)"

    def to_dict(self) -> dict[str, Any]:
        return {"draft": self.draft, "k": self.k, "accept": self.accept, "accept_len": self.accept_len,
                "tokens_per_step": self.tokens}


@dataclass(frozen=True)
class Pool:
    """``workers`` identical workers of ``tp x pp`` devices; ``role``: 'replica' (aggregated), 'prefill' or
    'decode'; ``ep`` of the tp ranks hold an MoE model's experts, ``dp_attention`` runs attention
    data-parallel over the tp ranks; ``batch`` sequences at most per worker (0: not fixed), ``chunk`` tokens
    per step (0: whole prompts)."""

    role: str
    tp: int
    workers: int
    pp: int = 1
    ep: int = 1
    dp_attention: bool = False
    batch: int = 0
    chunk: int = 0

    @property
    def devices(self) -> int:
        return self.tp * self.pp * self.workers

    @property
    def layout(self) -> tuple[int, int, int, bool]:
        """What a worker's step model depends on: tp, pp, ep, attention data-parallel."""
        return self.tp, self.pp, self.ep, self.dp_attention

    def describe(self) -> str:
        extra = "".join(f" {k}{v}" for k, v in (("pp", self.pp), ("ep", self.ep)) if v > 1)
        extra += " adp" if self.dp_attention else ""
        extra += f" b{self.batch}" if self.batch else ""
        extra += f" chunk{self.chunk}" if self.chunk else ""
        return f"{self.workers}x tp{self.tp}{extra}"

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "tp": self.tp, "pp": self.pp, "ep": self.ep, "dp_attention": self.dp_attention,
                "workers": self.workers, "max_batch": self.batch, "max_tokens_per_step": self.chunk}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Pool:
        return cls(str(d["role"]), int(d["tp"]), int(d["workers"]), int(d.get("pp", 1)), int(d.get("ep", 1)),
                   bool(d.get("dp_attention", False)), int(d.get("max_batch", 0)), int(d.get("max_tokens_per_step", 0)))


@dataclass(frozen=True)
class Deployment:
    """Aggregated (one pool of replicas) or disaggregated (a prefill pool and a decode pool)."""

    pools: tuple[Pool, ...]

    @property
    def disaggregated(self) -> bool:
        return len(self.pools) == 2

    @property
    def devices(self) -> int:
        return sum(p.devices for p in self.pools)

    def describe(self) -> str:
        if self.disaggregated:
            return f"disagg prefill {self.pools[0].describe()} + decode {self.pools[1].describe()}"
        return f"agg {self.pools[0].describe()}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "disaggregated" if self.disaggregated else "aggregated", "devices": self.devices,
                "pools": [p.to_dict() for p in self.pools]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Deployment:
        return cls(tuple(Pool.from_dict(p) for p in d["pools"]))


@dataclass(frozen=True)
class Options:
    """What every deployment of a search shares (module docs)."""

    isl: int
    osl: int
    slo: Slo
    precision: str = "bf16"
    spec: Speculation | None = None
    prefix_hit: float = 0.0
    kv_overlap: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.prefix_hit < 1:
            raise RooflineError(f"--prefix-hit must be a share from 0 to below 1, got {self.prefix_hit}")
        if self.slo.ttft is None or self.slo.tpot is None:
            raise RooflineError("a deployment search needs both limits: --slo ttft=...,tpot=...")

    @property
    def cached(self) -> int:
        """Prompt tokens each request finds in the prefix cache."""
        return int(self.prefix_hit * self.isl)

    @property
    def fresh(self) -> int:
        """Prompt tokens each request prefills."""
        return self.isl - self.cached


@dataclass
class Worker:
    """One worker layout's stage step models and KV capacity (kept per layout by :class:`Pricer`)."""

    pp: int
    steps: StepModel  # one pipeline stage
    draft: StepModel | None
    kv_tokens: int  # KV cache tokens the worker holds
    blocks: int  # KV blocks of each stage


@dataclass(frozen=True)
class Static:
    """One deployment's mean-static figures (module docs)."""

    batch: int
    ttft: float
    tpot: float
    tokens_per_s_per_device: float

    @property
    def tokens_per_s_per_user(self) -> float:
        return 1.0 / self.tpot

    def within(self, slo: Slo) -> bool:
        return self.ttft <= (slo.ttft or math.inf) and self.tpot <= (slo.tpot or math.inf)

    def to_dict(self) -> dict[str, Any]:
        return {"batch": self.batch, "ttft_mean_s": self.ttft, "tpot_mean_s": self.tpot,
                "tokens_per_s_per_device": self.tokens_per_s_per_device,
                "tokens_per_s_per_user": self.tokens_per_s_per_user}


def stage_arch(arch: Arch, pp: int) -> Arch:
    """One of ``pp`` pipeline stages: the model with ``layers / pp`` of its layers (dense ones in proportion)."""
    if pp == 1:
        return arch
    return dataclasses.replace(arch, layers=arch.layers // pp, dense_layers=arch.dense_layers // pp,
                               window_layers=arch.window_layers // pp, nope_layers=arch.nope_layers // pp,
                               qk_norm_layers=arch.qk_norm_layers // pp)


@dataclass
class Pricer:
    """Workers' step models per layout and the mean-static figures of deployments over ``system``."""

    arch: Arch
    system: System
    opts: Options
    workers: dict[tuple[int, int, int, bool], Worker | None] = field(default_factory=dict)
    models: dict[tuple[int, int, bool], tuple[StepModel, StepModel | None]] = field(default_factory=dict)
    kept: dict[tuple[Any, ...], float] = field(default_factory=dict)

    def spec(self, pool: Pool, arch: Arch | str | None = None, mtp: int = 0) -> LLMSpec:
        p = self.opts.precision
        return make_spec(stage_arch(self.arch, pool.pp) if arch is None else arch, phase="prefill", tp=pool.tp,
                         wbits=p, abits=p, kvbits=p, flash=True, ep=pool.ep, dp_attention=pool.dp_attention, mtp=mtp)

    def worker(self, pool: Pool) -> Worker | None:
        """The worker of ``pool``'s layout (None: the model does not fit its devices)."""
        if pool.layout not in self.workers:
            try:
                self.workers[pool.layout] = self._make(pool)
            except RooflineError:
                self.workers[pool.layout] = None
        return self.workers[pool.layout]

    def must(self, pool: Pool) -> Worker:
        w = self.worker(pool)
        if w is None:
            raise RooflineError(f"{self.arch.name} does not fit a worker of tp {pool.tp} x pp {pool.pp}")
        return w

    def _make(self, pool: Pool) -> Worker:
        from roofline.serving.run import kv_blocks
        from roofline.serving.schedulers import BLOCK_SIZE, GPU_MEMORY_UTILIZATION

        s, dev = self.opts.spec, self.system.device_on("node")
        mtp = s.k if s is not None and s.mtp else 0
        blocks, _ = kv_blocks(self.spec(pool, mtp=mtp), dev, block_size=BLOCK_SIZE,
                              utilization=GPU_MEMORY_UTILIZATION, act_tokens=max(self.opts.isl, pool.chunk, 2048))
        key = (pool.tp, pool.ep, pool.dp_attention)
        if key not in self.models:  # the whole model's steps, shared by every pp (module docs)
            # the sequences a worker's batch can hold at the deepest pipeline (a stage holds 1 / pp of the layers)
            deep = max(p for p in PP_SIZES if self.arch.layers % p == 0)
            most, _ = kv_blocks(self.spec(dataclasses.replace(pool, pp=deep), mtp=mtp), dev, block_size=BLOCK_SIZE,
                                utilization=GPU_MEMORY_UTILIZATION, act_tokens=max(self.opts.isl, 2048))
            most = max(most, blocks) * BLOCK_SIZE // (self.opts.fresh + self.opts.osl) + 2
            draft = self._steps(self.spec(pool, arch=s.draft), most) if s is not None and not s.mtp else None
            self.models[key] = (self._steps(self.spec(pool, arch=self.arch, mtp=mtp), most), draft)
        steps, draft = self.models[key]
        return Worker(pool.pp, steps, draft, blocks * BLOCK_SIZE, blocks)

    def _steps(self, spec: LLMSpec, most: int) -> StepModel:
        """A step model with its attention table built once over the sizes a search asks of it (``most``: the
        sequences the KV cache holds at the deepest pipeline; grown on demand, it would be rebuilt each time a size passes
        its edge)."""
        o = self.opts
        m = StepModel(spec, self.system.device_on("node"))
        m.build_attention_table(TABLE_PREFILL, min(TABLE_BATCH, most), o.isl + o.osl + 32 + TABLE_PREFILL)
        return m

    # -- one worker's times ---------------------------------------------------------------------
    def time(self, pool: Pool, decode: int, kv: float, chunks: list[tuple[int, int]]) -> float:
        """Latency of one iteration of a micro-batch through the worker's ``pp`` stages: the whole model's."""
        return self.must(pool).steps.iteration_time(decode, kv, chunks)

    def prefill(self, pool: Pool, b: int) -> float:
        """Seconds to prefill ``b`` prompts together (the cached prefix skipped); kept per layout and batch."""
        key = (pool.layout, b, -1)
        if key not in self.kept:
            o = self.opts
            self.kept[key] = self.time(pool, 0, 0.0, [(o.fresh, o.cached)] * b)
        return self.kept[key]

    def step(self, pool: Pool, b: int, context: float) -> float:
        """Seconds per output token of a decode batch of ``b`` (``pp`` micro-batches of ``b / pp``) at ``context``
        tokens each (speculation: the drafts and the verify step over the tokens they yield)."""
        w, s = self.must(pool), self.opts.spec
        mb = max(1, b // pool.pp)
        if s is None:
            return self.time(pool, mb, mb * (context + 1), [])
        drafts = 0.0
        if w.draft is not None:
            drafts = sum(w.draft.iteration_time(mb, mb * (context + 1 + i), []) for i in range(s.k))
        verify = self.time(pool, 0, 0.0, [(s.k + 1, int(context))] * mb)
        return (drafts + verify) / s.tokens

    def tpot(self, pool: Pool, b: int) -> float:
        """Mean decode step over the output (Simpson's rule at the first, middle and last context); kept per
        layout and batch (many disaggregated deployments share a decode pool)."""
        key = (pool.layout, b, -2)
        if key not in self.kept:
            o = self.opts
            a, m, z = (self.step(pool, b, o.isl + j) for j in (0, (o.osl - 1) / 2, o.osl - 1))
            self.kept[key] = (a + 4 * m + z) / 6
        return self.kept[key]

    def fits(self, pool: Pool, b: int) -> bool:
        """``b`` sequences' own KV (their uncached prompt and output) and the shared prefix once fit."""
        o, w = self.opts, self.worker(pool)
        return w is not None and b * (o.fresh + o.osl) + o.cached <= w.kv_tokens

    def transfer_time(self, pre: Pool, devices: int) -> float:
        """Exposed seconds of one prompt's KV moving from a prefill worker (module docs)."""
        o, a, s = self.opts, self.arch, self.system
        tier = s.tier("node") if devices <= s.devices_per_node or len(s.tiers) == 1 else s.tier("cluster")
        whole = float(kv_cache_bytes(make_spec(a, phase="prefill", tp=1, wbits=o.precision, abits=o.precision,
                                               kvbits=o.precision), 1, o.fresh))
        sent = whole / a.layers if o.kv_overlap else whole
        return tier.latency + sent / (pre.tp * pre.pp * tier.per_device_bandwidth(s.devices_per_node))

    # -- deployments ---------------------------------------------------------------------------
    def aggregated(self, d: Deployment) -> Static | None:
        """An aggregated deployment's mean-static figures (module docs; None: its batch does not fit)."""
        pool, o = d.pools[0], self.opts
        b, isl = pool.batch, max(o.fresh, 1)
        c = pool.chunk or o.fresh * b
        if not self.fits(pool, b):
            return None
        mid = o.isl + o.osl // 2
        if b == 1:
            ttft = self.prefill(pool, 1)
            tpot = self.step(pool, 1, mid)
            total = ttft + (o.osl - 1) * tpot
        else:
            s = math.ceil(isl * b / c)
            g = max(1, int(b // (s / o.osl))) if s >= o.osl else b - math.ceil(c / isl)
            if g < 1:
                return None
            mixed = self._mixed(pool, c, g, mid)
            decode = self.step(pool, b, mid)
            only = max(o.osl - s, 0)
            counted = s if s >= o.osl else max(1, s - 3)
            ttft = mixed * math.ceil(isl / c) * min(AIC_TTFT_BASE + (s - 3) * AIC_TTFT_SLOPE, AIC_TTFT_CAP)
            tpot = (mixed * counted + decode * only) / (counted + only)
            total = s * mixed + only * decode
        rate = pool.workers * b * max(o.osl - 1, 1) / total / d.devices
        return Static(b, ttft, tpot, rate)

    def _mixed(self, pool: Pool, c: int, g: int, context: int) -> float:
        """One mixed step: ``c`` prompt tokens (whole prompts, or a part of one after half of it) beside ``g``
        decodes at ``context`` tokens each (speculation: the decodes' share as :meth:`step` prices it)."""
        o = self.opts
        isl = max(o.fresh, 1)
        whole, rest = divmod(c, isl)
        chunks = [(o.fresh, o.cached)] * whole + ([(rest, o.cached + (isl - rest) // 2)] if rest else [])
        if self.opts.spec is None:
            return self.time(pool, g, g * (context + 1), chunks)
        return self.time(pool, 0, 0.0, chunks) + self.step(pool, g, context)

    def disaggregated(self, d: Deployment) -> Static | None:
        """A disaggregated deployment's mean-static figures at its decode batch (module docs)."""
        pre, dec = d.pools
        o, b = self.opts, dec.batch
        if not (self.fits(pre, 1) and self.fits(dec, b)):
            return None
        one = self.prefill(pre, 1)
        ttft = one + self.transfer_time(pre, d.devices)
        tpot = self.tpot(dec, b)
        prefill_rate = pre.workers * pre.pp / one
        rate = min(prefill_rate, dec.workers * b / (o.osl * tpot)) * o.osl / d.devices
        return Static(b, ttft, tpot, rate)

    def static(self, d: Deployment) -> Static | None:
        return self.disaggregated(d) if d.disaggregated else self.aggregated(d)


def tp_sizes(arch: Arch, system: System) -> list[int]:
    """tp sizes within a node that divide the model's heads (powers of two)."""
    out, tp = [], 1
    while tp <= system.devices_per_node and tp <= system.devices:
        if tp_fits(arch, tp):
            out.append(tp)
        tp *= 2
    return out
