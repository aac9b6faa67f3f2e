"""Serving deployments, typed and priced analytically: aggregated replicas or disaggregated prefill/decode pools.

A :class:`Deployment` is one or two :class:`Pool` s of identical workers (each ``tp`` devices; ``ep`` and
attention data-parallelism are fields kept at 1 until the MoE modules land, so they join the search as one more
dimension).  :class:`Options` holds what every deployment of a search shares: lengths, SLO, precision,
speculative decoding (:class:`Speculation`), the prefix-cache hit share, the KV transfer rule.

**mean-static** (AIConfigurator's statistic): a static batch of ``b`` requests of fixed ISL/OSL.  Aggregated:
TTFT is the prefill of the ``b`` prompts together, TPOT the mean decode step of the batch over its output
(Simpson's rule over the context, first, middle and last step), and a replica makes ``b x OSL`` tokens in
``TTFT + (OSL - 1) x TPOT``.  Disaggregated: a prefill worker prefills one prompt at a time (TTFT: that prefill
and the KV transfer), a decode worker runs a batch of ``b``; the pools deliver ``min(x / prefill, y x b /
(OSL x TPOT))`` requests/s.  The goodput is the largest such figure whose TTFT and TPOT are within the SLO,
per device, with tokens/s per user ``1 / TPOT`` beside it.

**KV transfer**: a prompt's KV cache (bytes: every layer, ISL x (1 - hit) tokens) leaves the prefill worker's tp
devices in parallel over the tier between the pools (the node's when both pools fit one node, else the
cluster's): ``alpha + bytes / (tp_p x bandwidth per device)``.  With layer-wise overlap on, only the last
layer's share is exposed after the prefill (``alpha + bytes / layers / ...``); off, the whole transfer.

**Speculative decoding** with a draft model: each step drafts ``K`` tokens (``K`` decode steps of the draft
model on the same devices) and verifies them in one target step of ``K + 1`` tokens per sequence (prefill
chunks over the context), both through the same op tables; the expected tokens per step with per-token
acceptance ``a`` is ``(1 - a^(K+1)) / (1 - a)`` (or ``accept_len`` given directly).

**Prefix caching** (``prefix_hit`` h): h x ISL of each prompt is cached: skipped in prefill (the rest is a
chunk over them), and its KV blocks are shared, counted once per worker.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from roofline.core.errors import RooflineError
from roofline.hardware.system import System
from roofline.llm.config import Arch
from roofline.llm.sizes import kv_cache_bytes
from roofline.llm.spec import make_spec
from roofline.serving.figures import Slo
from roofline.serving.steps import StepModel

#: Static batch sizes tried per worker: powers of two up to this many sequences.
MAX_STATIC_BATCH = 2048


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
    """``--spec draft:MODEL:K`` with ``--accept a`` (per-token acceptance) or ``--accept-len L`` (mean accepted
    tokens per step, the verifier's included); ``mtp:N`` is parsed and refused until the MTP modules land."""

    draft: str
    k: int
    accept: float | None = None
    accept_len: float | None = None

    @classmethod
    def parse(cls, text: str, accept: float | None, accept_len: float | None) -> Speculation:
        parts = str(text).split(":")
        if parts[0] == "mtp":
            raise RooflineError("--spec mtp:N needs the MTP modules (the MoE issue); use --spec draft:MODEL:K for now")
        if parts[0] != "draft" or len(parts) != 3 or not parts[2].isdigit() or int(parts[2]) < 1:
            raise RooflineError(f"--spec {text!r}: give draft:MODEL:K (K draft tokens per step, >= 1) or mtp:N")
        if (accept is None) == (accept_len is None):
            raise RooflineError("--spec needs one of --accept (per-token acceptance, 0..1) or --accept-len (mean "
                                "tokens per step)")
        k = int(parts[2])
        if accept is not None and not 0 <= accept <= 1:
            raise RooflineError(f"--accept must be a probability from 0 to 1, got {accept}")
        if accept_len is not None and not 1 <= accept_len <= k + 1:
            raise RooflineError(f"--accept-len must be from 1 to K + 1 = {k + 1} tokens per step, got {accept_len}")
        return cls(parts[1], k, accept, accept_len)

    @property
    def tokens(self) -> float:
        """Expected tokens per verify step."""
        return self.accept_len if self.accept_len is not None else tokens_per_step(self.k, self.accept or 0.0)

    def describe(self) -> str:
        how = f"accept {self.accept:g}" if self.accept is not None else f"accept-len {self.accept_len:g}"
        return f"draft {self.draft} x{self.k} ({how}: {self.tokens:.3g} tokens per step)"


@dataclass(frozen=True)
class Pool:
    """``workers`` identical workers of ``tp`` devices each; ``role``: 'replica' (aggregated), 'prefill' or
    'decode'.  ``ep`` and ``dp_attention`` are 1 until the MoE modules land (a later search dimension)."""

    role: str
    tp: int
    workers: int
    ep: int = 1
    dp_attention: int = 1

    @property
    def devices(self) -> int:
        return self.tp * self.workers

    def describe(self) -> str:
        extra = "".join(f" {k}{v}" for k, v in (("ep", self.ep), ("adp", self.dp_attention)) if v > 1)
        return f"{self.workers}x tp{self.tp}{extra}"

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "tp": self.tp, "workers": self.workers, "ep": self.ep,
                "dp_attention": self.dp_attention}


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
    disaggregate: bool = True

    def __post_init__(self) -> None:
        if not 0 <= self.prefix_hit < 1:
            raise RooflineError(f"--prefix-hit must be a share from 0 to below 1, got {self.prefix_hit}")
        if self.slo.ttft is None or self.slo.tpot is None:
            raise RooflineError("a deployment search needs both limits: --slo ttft=...,tpot=...")

    @property
    def cached(self) -> int:
        """Prompt tokens each request finds in the prefix cache."""
        return int(self.prefix_hit * self.isl)


@dataclass
class Worker:
    """The step models and KV capacity of one worker of ``tp`` devices (kept per tp by :class:`Pricer`)."""

    tp: int
    steps: StepModel
    draft: StepModel | None
    kv_tokens: int  # KV cache tokens the worker holds
    blocks: int


@dataclass
class Static:
    """One deployment's mean-static figures at its best static batch (None: no batch meets the SLO)."""

    batch: int
    ttft: float
    tpot: float
    tokens_per_s_per_device: float

    @property
    def tokens_per_s_per_user(self) -> float:
        return 1.0 / self.tpot


@dataclass
class Pricer:
    """Workers' step models per tp size and the mean-static figures of deployments over ``system``."""

    arch: Arch
    system: System
    opts: Options
    workers: dict[int, Worker] = field(default_factory=dict)

    def worker(self, tp: int) -> Worker:
        if tp not in self.workers:
            self.workers[tp] = self._make(tp)
        return self.workers[tp]

    def _make(self, tp: int) -> Worker:
        from roofline.serving.run import kv_blocks
        from roofline.serving.schedulers import BLOCK_SIZE, GPU_MEMORY_UTILIZATION

        p = self.opts.precision
        dev = self.system.device_on("node")
        spec = make_spec(self.arch, phase="prefill", tp=tp, wbits=p, abits=p, kvbits=p, flash=True)
        blocks, _ = kv_blocks(spec, dev, block_size=BLOCK_SIZE, utilization=GPU_MEMORY_UTILIZATION,
                              act_tokens=max(self.opts.isl, 2048))
        draft = None
        if self.opts.spec is not None:
            draft = StepModel(make_spec(self.opts.spec.draft, phase="prefill", tp=tp, wbits=p, abits=p, kvbits=p,
                                        flash=True), dev)
        return Worker(tp, StepModel(spec, dev), draft, blocks * BLOCK_SIZE, blocks)

    # -- one worker's times -----------------------------------------------------------------------
    def prefill(self, tp: int, b: int) -> float:
        """Seconds to prefill ``b`` prompts together (the cached prefix skipped)."""
        o = self.opts
        return self.worker(tp).steps.iteration_time(0, 0.0, [(o.isl - o.cached, o.cached)] * b)

    def step(self, tp: int, b: int, context: float) -> float:
        """Seconds per output token of a decode batch of ``b`` at ``context`` tokens each (speculation: the
        drafts and the verify step over the tokens they yield)."""
        w, s = self.worker(tp), self.opts.spec
        if s is None or w.draft is None:
            return w.steps.iteration_time(b, b * (context + 1), [])
        drafts = sum(w.draft.iteration_time(b, b * (context + 1 + i), []) for i in range(s.k))
        verify = w.steps.iteration_time(0, 0.0, [(s.k + 1, int(context))] * b)
        return (drafts + verify) / s.tokens

    def tpot(self, tp: int, b: int) -> float:
        """Mean decode step over the output (Simpson's rule at the first, middle and last context)."""
        o = self.opts
        a, m, z = (self.step(tp, b, o.isl + j) for j in (0, (o.osl - 1) / 2, o.osl - 1))
        return (a + 4 * m + z) / 6

    def fits(self, tp: int, b: int) -> bool:
        """``b`` sequences' own KV (their uncached prompt and output) and the shared prefix once fit."""
        o = self.opts
        return b * (o.isl - o.cached + o.osl) + o.cached <= self.worker(tp).kv_tokens

    def transfer_time(self, tp_p: int, devices: int) -> float:
        """Exposed seconds of one prompt's KV moving from a prefill worker of ``tp_p`` devices (module docs)."""
        o, a, s = self.opts, self.arch, self.system
        tier = s.tier("node") if devices <= s.devices_per_node or len(s.tiers) == 1 else s.tier("cluster")
        whole = float(kv_cache_bytes(make_spec(a, phase="prefill", tp=1, wbits=o.precision, abits=o.precision,
                                               kvbits=o.precision), 1, o.isl - o.cached))
        sent = whole / a.layers if o.kv_overlap else whole
        return tier.latency + sent / (tp_p * tier.per_device_bandwidth(s.devices_per_node))

    def batches(self, tp: int) -> list[int]:
        out, b = [], 1
        while b <= MAX_STATIC_BATCH and self.fits(tp, b):
            out.append(b)
            b *= 2
        return out

    # -- deployments ---------------------------------------------------------------------------
    def aggregated(self, d: Deployment) -> Static | None:
        """The best static batch of an aggregated deployment within the SLO (module docs)."""
        pool, o, best = d.pools[0], self.opts, None
        for b in self.batches(pool.tp):
            ttft, tpot = self.prefill(pool.tp, b), self.tpot(pool.tp, b)
            if ttft > (o.slo.ttft or math.inf) or tpot > (o.slo.tpot or math.inf):
                break  # both grow with the batch
            rate = pool.workers * b * o.osl / (ttft + (o.osl - 1) * tpot) / d.devices
            if best is None or rate > best.tokens_per_s_per_device:
                best = Static(b, ttft, tpot, rate)
        return best

    def disaggregated(self, d: Deployment) -> Static | None:
        """The best decode batch of a disaggregated deployment within the SLO (module docs)."""
        pre, dec = d.pools
        o = self.opts
        ttft = self.prefill(pre.tp, 1) + self.transfer_time(pre.tp, d.devices)
        if ttft > (o.slo.ttft or math.inf):
            return None
        best = None
        prefill_rate = pre.workers / self.prefill(pre.tp, 1)
        for b in self.batches(dec.tp):
            tpot = self.tpot(dec.tp, b)
            if tpot > (o.slo.tpot or math.inf):
                break
            rate = min(prefill_rate, dec.workers * b / (o.osl * tpot)) * o.osl / d.devices
            if best is None or rate > best.tokens_per_s_per_device:
                best = Static(b, ttft, tpot, rate)
        return best

    def static(self, d: Deployment) -> Static | None:
        return self.disaggregated(d) if d.disaggregated else self.aggregated(d)


def tp_sizes(arch: Arch, system: System) -> list[int]:
    """tp sizes within a node that divide the model's heads (powers of two)."""
    from roofline.llm.table import check_tp

    out, tp = [], 1
    while tp <= system.devices_per_node and tp <= system.devices:
        try:
            check_tp(arch, tp)
            out.append(tp)
        except RooflineError:
            pass
        tp *= 2
    return out


def deployments(arch: Arch, system: System, disaggregate: bool = True) -> list[Deployment]:
    """Every aggregated deployment (tp x replicas filling the system) and every disaggregated one (x prefill
    workers of tp_p and y decode workers of tp_d, x tp_p + y tp_d = the system's devices)."""
    n = system.devices
    tps = tp_sizes(arch, system)
    out = [Deployment((Pool("replica", tp, n // tp),)) for tp in tps if n % tp == 0]
    if disaggregate:
        for tp_p in tps:
            for tp_d in tps:
                for x in range(1, n // tp_p):
                    rest = n - x * tp_p
                    if rest > 0 and rest % tp_d == 0:
                        out.append(Deployment((Pool("prefill", tp_p, x), Pool("decode", tp_d, rest // tp_d))))
    return out
