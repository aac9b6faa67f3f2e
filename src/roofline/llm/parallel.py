"""Parallel LLM training on a system: one layout's step (compute, pipeline bubble, collectives, memory), and
every layout ranked (``roofline plan``).

A layout splits ``devices = tp x cp x pp x dp`` ways (ranks numbered tp fastest, then cp, dp, pp, as
Megatron-LM does; ``ep`` carves expert groups out of dp); ``zero`` is the ZeRO stage (3 = FSDP).  Per
device and per micro-batch of ``micro_batch`` sequences of ``seq`` tokens:

* **Compute**: the inference op table (:mod:`roofline.llm.model`, FlashAttention-style, logits for every
  token) evaluated on the device's shard (heads and widths / tp, tokens / cp, experts / ep, layers / pp),
  each op at its roofline time.  Backward = 2 x forward (FLOPs and bytes: activation and weight gradients);
  recomputation adds the forward again (``full``) or its attention core (``selective``).  The slowest
  pipeline stage (the embedding on the first, the final norm and lm_head on the last) sets the pace.
* **Optimizer** (Adam, mixed precision, once per step): per parameter it reads the fp32 master weight,
  the gradient and the two moments (16 B) and writes the master weight, the moments and the bf16 weight
  (14 B), 13 FLOPs (:data:`ADAM_FLOPS`); over the device's shard (/ dp from ZeRO 1 on).
* **Pipeline** (1F1B): ``(m + (pp - 1) / v) x`` one micro-batch's forward and backward, for ``m``
  micro-batches and ``v`` interleaved chunks per device: bubble ``(pp - 1) / (v m + pp - 1)`` of the step.
* **Collectives** (:mod:`roofline.collectives`, on the tier each group crosses): tensor parallel, 2
  all-reduces per layer forward and 2 backward of the micro-batch's activations (with sequence
  parallelism, each a reduce-scatter plus an all-gather: the same bytes), and the vocabulary-parallel
  embedding's one forward; context parallel, the K and V
  all-gathered per layer forward, all-gathered and their gradients reduce-scattered backward (ring
  attention's exchange); expert parallel, all-to-all dispatch and combine of the routed tokens per MoE layer,
  forward and backward; pipeline, the activation sent forward and its gradient back per micro-batch and
  stage boundary; data parallel, the bf16 gradients all-reduced once per step (ZeRO 2: reduce-scattered,
  the updated weights all-gathered; ZeRO 3: the weights all-gathered before forward and backward and the
  gradients reduce-scattered, every micro-batch).
* **Memory** (bytes per device): bf16 weights 2, bf16 gradients 2, fp32 master and Adam moments 12 per
  parameter (ZeRO, Rajbhandari et al. 2020: stage 1 shards the 12, stage 2 also the gradients, stage 3 the
  weights too); activations per layer and micro-batch ``s b h (34 / tp)`` bytes with sequence parallelism,
  ``s b h (10 + 24 / tp)`` without (Korthikanti et al. 2022; FlashAttention keeps no score tensor),
  ``2 s b h`` under full recomputation, times the micro-batches the first stage holds in flight (pp) and
  its layers; the last stage's fp32 logits.  A layout that does not fit the device's memory says so.
* **Step time**: the *bound* overlaps communication fully where the schedule allows it (per micro-batch
  the max of compute and its collectives; the gradient sync with the whole pipeline); the *exposed*
  time overlaps only the given fraction (default none), the rest added as its own term.

Serving (:func:`estimate_serving`): a replica of tp x cp x pp devices decodes ``batch`` sequences, pp
micro-batches in flight (one per stage); dp replicas, an MoE model's routed experts split over ep of
them.  Per output token each device runs its stage's layers for every micro-batch (cp: 1/cp of the KV
cache read; ep: 1/ep of the experts held, its group's routed tokens computed), with 2 tp all-reduces per
layer, a cp combine of the partial attention outputs per layer, 2 ep all-to-alls per MoE layer and the
pp sends; time to first token is one prompt split over cp through every stage.

>>> from roofline.catalog import get_system
>>> run = TrainingRun.of("llama-2-7b", seq=4096, global_batch=64)
>>> e = estimate(run, Layout(tp=8, dp=2), get_system("dgx-h100", nodes=2))
>>> e.micro_batches, e.fits, e.bubble_share
(32, True, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from roofline.analysis import roofline_times
from roofline.collectives import cost as collective_cost
from roofline.errors import RooflineError
from roofline.llm.config import Arch, load_arch
from roofline.llm.metrics import device_ceilings
from roofline.llm.model import (
    EXP,
    FULL,
    KEY,
    KEYW,
    LINK,
    ONE,
    PAIR,
    PAIRW,
    Precisions,
    _positive_int,
    basis,
    build_table,
    check_tp,
    evaluate,
    experts_touched,
    kv_heads_per_device,
    role_columns,
)
from roofline.system import System
from roofline.workload import Workload, WorkloadBuilder

RECOMPUTE = ("none", "selective", "full")
#: Adam per parameter: m = b1 m + (1 - b1) g (3), v = b2 v + (1 - b2) g^2 (4), bias corrections (2),
#: w -= lr m / (sqrt(v) + eps) (4).
ADAM_FLOPS = 13
#: bytes per parameter Adam reads (fp32 master, gradient, m, v) and writes (master, m, v, bf16 weight)
ADAM_READ, ADAM_WRITTEN = 16, 14
#: bytes per parameter held: bf16 weights, bf16 gradients, fp32 master + m + v (ZeRO's K = 12)
WEIGHT_BYTES, GRAD_BYTES, OPTIMIZER_BYTES = 2, 2, 12


@dataclass(frozen=True)
class Layout:
    """How a training step is split over devices (see the module docstring)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    zero: int = 1
    micro_batch: int = 1  # sequences per micro-batch (per data-parallel rank)
    sp: bool = True  # sequence parallelism with tp
    recompute: str = "selective"
    interleave: int = 1  # virtual pipeline chunks per device
    overlap: float = 0.0  # share of communication the exposed time hides behind compute

    @property
    def devices(self) -> int:
        return self.tp * self.cp * self.pp * self.dp

    def describe(self) -> str:
        parts = [f"tp{self.tp}", f"pp{self.pp}", f"dp{self.dp}"]
        parts += [f"cp{self.cp}"] if self.cp > 1 else []
        parts += [f"ep{self.ep}"] if self.ep > 1 else []
        parts += [f"zero{self.zero}", f"mb{self.micro_batch}", self.recompute]
        parts += [f"v{self.interleave}"] if self.interleave > 1 else []
        return " ".join(parts)


@dataclass(frozen=True)
class TrainingRun:
    """The model and the step: ``global_batch`` sequences of ``seq`` tokens per optimizer step."""

    arch: Arch
    seq: int
    global_batch: int
    precisions: Precisions = Precisions()

    @classmethod
    def of(cls, model: str | Arch, *, seq: int = 4096, global_batch: int = 1024) -> TrainingRun:
        arch = model if isinstance(model, Arch) else load_arch(model)
        return cls(arch, _positive_int(seq, "seq"), _positive_int(global_batch, "global_batch"))


@dataclass(frozen=True)
class Comm:
    """One kind of collective in the step: its total time per step and the tiers it crosses."""

    name: str
    time: float
    tiers: tuple[str, ...]
    overlappable_with: str  # 'micro-batch' or 'step'


class _Facts:
    """What an estimate of either kind derives from its memory and its time split."""

    memory: dict[str, float]
    system: System

    def parts(self) -> dict[str, float]:
        raise NotImplementedError

    @property
    def memory_total(self) -> float:
        return sum(self.memory.values())

    @property
    def capacity(self) -> float:
        c = self.system.device.main_memory.capacity
        return float(c) if c else math.inf

    @property
    def fits(self) -> bool:
        return self.memory_total <= self.capacity

    @property
    def binding(self) -> str:
        """What the time goes to most: 'ops' (their roofline time), 'bubble', a collective, 'optimizer'."""
        parts = self.parts()
        return max(parts, key=lambda k: parts[k])


@dataclass(frozen=True)
class Estimate(_Facts):
    """One layout's training step (per device; times in seconds, memory in bytes)."""

    run: TrainingRun
    layout: Layout
    system: System
    micro_batches: int
    forward: float  # one micro-batch, the slowest stage
    backward: float
    recompute: float
    optimizer: float
    comms: tuple[Comm, ...]
    memory: dict[str, float] = field(default_factory=dict)
    flops: float = 0.0  # per device per step (recomputation included)

    @property
    def compute(self) -> float:
        """One micro-batch's forward + backward + recomputation."""
        return self.forward + self.backward + self.recompute

    @property
    def slots(self) -> float:
        """Micro-batch slots the pipeline takes: m + (pp - 1) / v."""
        return self.micro_batches + (self.layout.pp - 1) / self.layout.interleave

    @property
    def bubble_share(self) -> float:
        return (self.layout.pp - 1) / self.layout.interleave / self.slots

    def _comm(self, scope: str) -> float:
        return sum(c.time for c in self.comms if c.overlappable_with == scope)

    @property
    def bound(self) -> float:
        """Step time with communication fully overlapped where the schedule allows it."""
        pipeline = self.slots * max(self.compute, self._comm("micro-batch") / self.micro_batches)
        return max(pipeline, self._comm("step")) + self.optimizer

    @property
    def exposed_comm(self) -> float:
        """Communication not hidden when ``layout.overlap`` of it overlaps compute."""
        per_mb = self._comm("micro-batch") / self.micro_batches
        return (1 - self.layout.overlap) * (self.slots * per_mb + self._comm("step"))

    @property
    def time(self) -> float:
        """Step time with only ``layout.overlap`` of the communication hidden (0: none)."""
        return self.slots * self.compute + self.exposed_comm + self.optimizer

    @property
    def tokens_per_second(self) -> float:
        return self.run.global_batch * self.run.seq / self.time

    def parts(self) -> dict[str, float]:
        """The step time split (seconds, summing to :attr:`time`): the ops' roofline time, the pipeline bubble,
        each collective's exposed time, the optimizer."""
        parts = {"ops": self.micro_batches * self.compute, "bubble": (self.slots - self.micro_batches) * self.compute}
        for c in self.comms:
            share = c.time * (self.slots / self.micro_batches if c.overlappable_with == "micro-batch" else 1)
            parts[c.name] = (1 - self.layout.overlap) * share
        parts["optimizer"] = self.optimizer
        return parts


    def cost_per_token(self, price_per_device_hour: float) -> float:
        return price_per_device_hour * self.layout.devices * self.time / 3600 / (self.run.global_batch * self.run.seq)

    def describe(self) -> str:
        return self.layout.describe()


def check(run: TrainingRun, layout: Layout, system: System) -> int:
    """The number of micro-batches, or a one-line error for a layout that cannot run on ``system``."""
    a, lay = run.arch, layout
    _check_sizes(lay)
    if lay.devices != system.devices:
        raise RooflineError(f"layout {lay.describe()} uses tp x cp x pp x dp = {lay.devices} devices; "
                            f"{system.name!r} has {system.devices}")
    if lay.zero not in (0, 1, 2, 3):
        raise RooflineError(f"zero must be 0, 1, 2 or 3, got {lay.zero!r}")
    if lay.recompute not in RECOMPUTE:
        raise RooflineError(f"recompute must be one of {', '.join(RECOMPUTE)}, got {lay.recompute!r}")
    if not 0.0 <= lay.overlap <= 1.0:
        raise RooflineError(f"overlap must be from 0 to 1, got {lay.overlap!r}")
    check_tp(a, lay.tp)
    if a.layers % (lay.pp * lay.interleave):
        raise RooflineError(f"pp {lay.pp} x interleave {lay.interleave} does not divide the {a.layers} layers of "
                            f"{a.name}")
    if run.seq % lay.cp:
        raise RooflineError(f"cp {lay.cp} does not divide the sequence of {run.seq} tokens")
    if lay.ep > 1 and (not a.experts or a.experts % lay.ep or lay.dp % lay.ep):
        raise RooflineError(f"ep {lay.ep} must divide the {a.experts} experts of {a.name} and dp {lay.dp}")
    per_step = lay.dp * lay.micro_batch
    if run.global_batch % per_step:
        raise RooflineError(f"global batch {run.global_batch} is not a whole number of micro-batches of "
                            f"{lay.micro_batch} over dp {lay.dp}")
    m = run.global_batch // per_step
    if lay.pp > 1 and m < lay.pp:
        raise RooflineError(f"{m} micro-batches is below the pipeline depth pp {lay.pp}: 1F1B needs at least pp")
    return m


def _check_sizes(lay: Layout) -> None:
    for label in ("tp", "pp", "dp", "cp", "ep", "micro_batch", "interleave"):
        v = getattr(lay, label)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise RooflineError(f"{label} must be a whole number >= 1, got {v!r}")
    if not 0.0 <= lay.overlap <= 1.0:
        raise RooflineError(f"overlap must be from 0 to 1, got {lay.overlap!r}")


@dataclass(frozen=True)
class _Shard:
    """Per device, one micro-batch: forward time and FLOPs of the layer ops (all layers) and of the first and
    last stage's extra ops, the attention core's time, and the parameters held."""

    layers_time: float
    layers_flops: float
    attention_time: float
    first_time: float
    last_time: float
    first_flops: float
    last_flops: float
    layer_params: float  # every layer's, experts included
    first_params: float
    last_params: float
    expert_params: float  # the routed experts' part of layer_params (E / ep experts per device)
    attention_flops: float  # the attention core's


def _split_queries(B: np.ndarray, cp: int) -> np.ndarray:
    """A prefill basis on one of ``cp`` context-parallel devices: queries, tokens and pairs split ``cp`` ways,
    the keys all visited (ring attention) and the weights whole."""
    out = B.copy()
    keep = np.zeros(out.shape[1], dtype=bool)
    keep[[ONE, EXP, KEY, KEYW]] = True
    out[:, ~keep] /= cp
    return out


def _edges(first: float, last: float, pp: int) -> float:
    """The first stage's extra ops (embedding) and the last's (final norm, lm_head): on one device without a
    pipeline, else the slower edge stage's."""
    return max(first, last) if pp > 1 else first + last


@lru_cache(maxsize=4096)
def _evaluated(run: TrainingRun, tp: int, cp: int, ep: int, micro_batch: int) -> tuple[Any, dict[str, np.ndarray]]:
    """The forward op table of one micro-batch on one device's shard, and its per-op FLOPs and bytes."""
    a = run.arch
    table = build_table(a, "prefill", tp, True, True)
    B = _split_queries(basis(a, micro_batch, run.seq, run.seq), cp)
    B[:, EXP] /= ep
    v = evaluate(table, B, run.precisions.bytes())
    return table, {k: x[0] for k, x in v.items()}


def _masks(table: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(every layer's ops, the first stage's extra ops, the last stage's, the attention core) of a table;
    its collectives (link ops) are in none: the layout times them."""
    names = table.names
    compute = table.roles != LINK
    layer = np.array([".layers." in n for n in names]) & compute
    first = np.array([".embed" in n for n in names]) & compute
    last = ~layer & ~first & compute
    core = layer & np.array([k in ("attention", "softmax") for k in table.kinds])
    return layer, first, last, core


class _Cache:
    """What many layouts on one system share: per-shard forward times and per-group collective times."""

    def __init__(self, system: System) -> None:
        self.system = system
        self.shards: dict[tuple[Any, ...], _Shard] = {}
        self.collectives: dict[tuple[Any, ...], tuple[float, tuple[str, ...]]] = {}
        self.times: dict[tuple[Any, ...], float] = {}

    def shard(self, run: TrainingRun, tp: int, cp: int, ep: int, micro_batch: int) -> _Shard:
        key = (run, tp, cp, ep, micro_batch)
        got = self.shards.get(key)
        if got is None:
            got = self.shards[key] = _shard_on(run, tp, cp, ep, micro_batch, self.system.device)
        return got

    def serving_stage(self, run: ServingRun, tp: int, cp: int, ep: int, pp: int, micro_batch: int) -> float:
        """One pipeline stage's decode step for a micro-batch (the mean context of the generation): each of cp
        devices reads 1/cp of the KV cache; each of ep devices holds 1/ep of the experts and computes the
        routed tokens of its ep group's micro-batches that land on them."""
        key = ("decode", run, tp, cp, ep, pp, micro_batch)
        got = self.times.get(key)
        if got is None:
            a = run.arch
            table = build_table(a, "decode", tp, True, False)
            B = basis(a, micro_batch, 1, run.prompt + 1, run.prompt + run.gen, moe_routing="expected").copy()
            B[:, [KEY, KEYW, PAIR, PAIRW, FULL]] /= cp
            if ep > 1:
                B[:, EXP] = experts_touched(a.experts, a.top_k, micro_batch * ep) / ep
            t = _op_times(table, B, run.precisions, self.system.device)
            layer, first, last, _ = _masks(table)
            c = table.counts
            edges = _edges(float(t[first] @ c[first]), float(t[last] @ c[last]), pp)
            got = self.times[key] = float(t[layer] @ c[layer]) / pp + edges
        return got

    def serving_prefill(self, run: ServingRun, tp: int, cp: int) -> float:
        """The prompt of one sequence through every layer, split over cp devices (compute only)."""
        key = ("prefill", run, tp, cp)
        got = self.times.get(key)
        if got is None:
            table = build_table(run.arch, "prefill", tp, True, False)
            B = _split_queries(basis(run.arch, 1, run.prompt, run.prompt), cp)
            t = _op_times(table, B, run.precisions, self.system.device)
            compute = table.roles != LINK
            got = self.times[key] = float(t[compute] @ table.counts[compute])
        return got

    def collective(self, name: str, nbytes: float, ranks: int, per_node: int) -> tuple[float, tuple[str, ...]]:
        key = (name, nbytes, ranks, per_node)
        got = self.collectives.get(key)
        if got is None:
            c = collective_cost(name, nbytes, self.system, ranks=ranks, per_node=per_node)
            got = self.collectives[key] = (c.time, tuple(dict.fromkeys(p.tier for p in c.parts)))
        return got


def _times_of(table: Any, v: dict[str, np.ndarray], precisions: Precisions, device: Any) -> np.ndarray:
    """Each op's roofline time on ``device`` (per count): its role's compute roof, main memory."""
    c = device_ceilings(device, precisions)
    peak = np.array([c["peak_gemm"], c["peak_attn"], c["peak_vector"], c["peak_vector"]])[table.roles]
    return roofline_times(v["flops"], v["bytes_read"] + v["bytes_written"], peak, c["bandwidth"])[2]


def _op_times(table: Any, B: np.ndarray, precisions: Precisions, device: Any) -> np.ndarray:
    return _times_of(table, {k: x[0] for k, x in evaluate(table, B, precisions.bytes()).items()}, precisions, device)


def _shard_on(run: TrainingRun, tp: int, cp: int, ep: int, micro_batch: int, device: Any) -> _Shard:
    a = run.arch
    table, v = _evaluated(run, tp, cp, ep, micro_batch)
    t = _times_of(table, v, run.precisions, device)
    layer, first, last, core = _masks(table)
    counts = table.counts
    w = table.coef["wq"] + table.coef["wu"]
    experts = w[:, EXP] * (a.experts / ep if a.experts else 0) * counts
    params = w[:, ONE] * counts + experts
    embed = (0 if a.tie_embeddings else a.vocab * a.hidden / tp) + a.position_table * a.hidden
    f = v["flops"]
    return _Shard(float(t[layer] @ counts[layer]), float(f[layer] @ counts[layer]), float(t[core] @ counts[core]),
                  float(t[first] @ counts[first]), float(t[last] @ counts[last]), float(f[first] @ counts[first]),
                  float(f[last] @ counts[last]), float(params[layer].sum()), float(params[first].sum() + embed),
                  float(params[last].sum()), float(experts[layer].sum()), float(f[core] @ counts[core]))


@lru_cache(maxsize=4096)
def _per_node(stride: int, size: int, devices_per_node: int) -> int:
    """How many members of a group (``size`` ranks, ``stride`` apart, from rank 0) share each node; a group
    that splits unevenly over nodes (a node holding more of it than another) is a one-line error."""
    d = devices_per_node
    if size <= 1:
        return 1
    if stride >= d:
        if stride % d:
            raise RooflineError(f"a group of {size} ranks {stride} apart splits unevenly over nodes of {d} devices")
        return 1
    per = min(size, d // stride) if d % stride == 0 else 0
    if not per or size % per:
        raise RooflineError(f"a group of {size} ranks {stride} apart splits unevenly over nodes of {d} devices")
    return per


def memory_per_device(run: TrainingRun, layout: Layout, dense: float, expert: float, micro_batches: int
                      ) -> dict[str, float]:
    """Bytes per device: weights, gradients and optimizer state as the ZeRO stage shards them over the ranks
    holding the same weights (``dense`` parameters over dp x cp, ``expert`` ones over dp x cp / ep), and
    activations for the micro-batches in flight (and the last stage's fp32 logits)."""
    a, lay = run.arch, layout
    replicas, expert_replicas = lay.dp * lay.cp, lay.dp * lay.cp // lay.ep

    def held(stage: int) -> float:  # parameters kept per device once ZeRO stage `stage` shards them
        return dense / replicas + expert / expert_replicas if lay.zero >= stage else dense + expert

    s_local = run.seq / lay.cp
    per_layer = s_local * lay.micro_batch * a.hidden * (
        2 if lay.recompute == "full" else 34 / lay.tp if lay.sp or lay.tp == 1 else 10 + 24 / lay.tp)
    logits = s_local * lay.micro_batch * a.vocab / lay.tp * 4
    return {"weights": WEIGHT_BYTES * held(3), "gradients": GRAD_BYTES * held(2),
            "optimizer": OPTIMIZER_BYTES * held(1),
            "activations": per_layer * a.layers / lay.pp * min(micro_batches, lay.pp)
            + (logits if lay.pp == 1 else 0.0)}


def estimate(run: TrainingRun, layout: Layout, system: System, cache: _Cache | None = None) -> Estimate:
    """One training step of ``run`` with ``layout`` on ``system`` (per device)."""
    m = check(run, layout, system)
    a, lay, d = run.arch, layout, system.devices_per_node
    cache = cache if cache is not None and cache.system is system else _Cache(system)
    sh = cache.shard(run, lay.tp, lay.cp, lay.ep, lay.micro_batch)
    stage_layers = sh.layers_time / lay.pp
    forward = stage_layers + _edges(sh.first_time, sh.last_time, lay.pp)
    recompute = {"none": 0.0, "selective": sh.attention_time / lay.pp, "full": forward}[lay.recompute]
    edge_params = _edges(sh.first_params, sh.last_params, lay.pp)
    expert = sh.expert_params / lay.pp
    dense = (sh.layer_params - sh.expert_params) / lay.pp + edge_params  # on the device with the most
    params = dense + expert
    # weights are replicated over dp x cp ranks (the experts over dp x cp / ep): ZeRO shards over those
    replicas, expert_replicas = lay.dp * lay.cp, lay.dp * lay.cp // lay.ep
    shard_opt = dense / replicas + expert / expert_replicas if lay.zero >= 1 else params
    _, _, opt = roofline_times(ADAM_FLOPS * shard_opt, (ADAM_READ + ADAM_WRITTEN) * shard_opt,
                               device_ceilings(system.device, run.precisions)["peak_vector"],
                               system.device.main_memory.bandwidth)
    act = run.precisions.bytes()["a"]
    s_local = run.seq / lay.cp
    tokens = lay.micro_batch * s_local
    layers_here = a.layers / lay.pp
    comms: list[Comm] = []

    def add(label: str, coll: str, nbytes: float, ranks: int, stride: int, times: float, scope: str) -> None:
        if ranks > 1 and times > 0:
            t, tiers = cache.collective(coll, float(nbytes), ranks, _per_node(stride, ranks, d))
            comms.append(Comm(label, t * times, tiers, scope))

    hidden_msg = tokens * a.hidden * act
    # 2 per layer forward, 2 backward; the vocabulary-parallel embedding's forward and lm_head's input
    # gradient backward (one of them per edge stage)
    add("tp all-reduce", "all_reduce", hidden_msg, lay.tp, 1, (4 * layers_here + (2 if lay.pp == 1 else 1)) * m,
        "micro-batch")
    if lay.cp > 1:
        kv = 2 * lay.micro_batch * run.seq * kv_heads_per_device(a, lay.tp) * a.head_dim * act
        add("cp kv all-gather", "all_gather", kv, lay.cp, lay.tp, 2 * layers_here * m, "micro-batch")
        add("cp kv reduce-scatter", "reduce_scatter", kv, lay.cp, lay.tp, layers_here * m, "micro-batch")
    if lay.ep > 1:
        routed = tokens * a.top_k * a.hidden * act
        add("ep all-to-all", "all_to_all", routed, lay.ep, lay.tp * lay.cp, 4 * a.moe_layers / lay.pp * m,
            "micro-batch")
    # each tensor-parallel rank sends its 1/tp of the activations to the next stage (Megatron's scatter-gather)
    add("pp send/recv", "send_recv", hidden_msg / lay.tp, lay.pp, lay.tp * lay.cp * lay.dp, 2 * lay.interleave * m,
        "micro-batch")
    # gradients are reduced over the ranks that hold the same weights: dp x cp of them (tp apart), and for the
    # experts dp x cp / ep (ep groups are consecutive dp ranks; with cp as well, taken as tp apart)
    groups = [("dp", dense, replicas, lay.tp), ("expert dp", expert, expert_replicas,
                                                lay.tp * lay.ep if lay.cp == 1 else lay.tp)]
    for label, held, ranks, stride in groups:
        if held <= 0:
            continue
        grads = GRAD_BYTES * held
        if lay.zero <= 1:
            add(f"{label} grad all-reduce", "all_reduce", grads, ranks, stride, 1, "step")
        elif lay.zero == 2:
            add(f"{label} grad reduce-scatter", "reduce_scatter", grads, ranks, stride, 1, "step")
            add(f"{label} weight all-gather", "all_gather", WEIGHT_BYTES * held, ranks, stride, 1, "step")
        else:
            add(f"{label} fsdp weight all-gather", "all_gather", WEIGHT_BYTES * held, ranks, stride, 2 * m,
                "micro-batch")
            add(f"{label} fsdp grad reduce-scatter", "reduce_scatter", grads, ranks, stride, m, "micro-batch")

    memory = memory_per_device(run, lay, dense, expert, m)
    flops_fwd = sh.layers_flops / lay.pp + _edges(sh.first_flops, sh.last_flops, lay.pp)
    rec_flops = {"none": 0.0, "selective": sh.attention_flops / lay.pp, "full": flops_fwd}[lay.recompute]
    flops = m * (3 * flops_fwd + rec_flops) + ADAM_FLOPS * shard_opt
    return Estimate(run, lay, system, m, forward, 2 * forward, recompute, float(opt), tuple(comms), memory, flops)


def training_flops(run: TrainingRun, recompute: str = "none") -> float:
    """FLOPs of one training step of the whole model (forward x 3: the backward is twice the forward;
    x 4 with full recomputation), optimizer excluded: the figure MFU is quoted against."""
    table, v = _evaluated(run, 1, 1, 1, 1)
    compute = table.roles != LINK
    forward = float(v["flops"][compute] @ table.counts[compute]) * run.global_batch
    return forward * (4 if recompute == "full" else 3)


# -- one device's training step, op by op ---------------------------------------------------------------
def training_workload(run: TrainingRun, *, tp: int = 1, micro_batch: int = 1, recompute: str = "selective"
                      ) -> Workload:
    """The per-op :class:`~roofline.Workload` of one training step on one of ``tp`` devices (the whole
    global batch through it, ``micro_batch`` sequences at a time): every forward op, its backward (2x its
    FLOPs and bytes, named '... (backward)'), the recomputed ops ('... (recompute)': the forward again
    under ``full``, its attention core under ``selective``), the tensor-parallel all-reduces forward and
    backward (interconnect), and one Adam step over the device's parameters.  What ``roofline llm --train``
    analyses; ``roofline plan`` adds pipeline, data, context and expert parallelism on a system."""
    lay = Layout(tp=tp, micro_batch=micro_batch, recompute=recompute)
    a = run.arch
    if recompute not in RECOMPUTE:
        raise RooflineError(f"recompute must be one of {', '.join(RECOMPUTE)}, got {recompute!r}")
    check_tp(a, tp)
    if run.global_batch % micro_batch:
        raise RooflineError(f"global batch {run.global_batch} is not a whole number of micro-batches of {micro_batch}")
    m = run.global_batch // micro_batch
    table, v = _evaluated(run, tp, 1, 1, micro_batch)
    layer, first, last, core = _masks(table)
    compute = layer | first | last
    link = table.roles == LINK
    ops = WorkloadBuilder()

    def rows(mask: np.ndarray, suffix: str, scale: float) -> None:
        idx = np.flatnonzero(mask)
        roles = table.roles[idx].tolist()
        names = [table.names[i].replace("prefill.", "train.", 1) + suffix for i in idx]
        ops.extend(name=names, group=[table.names[i].replace("prefill.", "train.", 1) for i in idx],
                   kind=[table.kinds[i] for i in idx], module_type=[table.module_types[i] for i in idx],
                   **role_columns(roles, run.precisions), flops=(scale * v["flops"][idx]).tolist(), bytes_read=(scale * v["bytes_read"][idx]).tolist(),
                   bytes_written=(scale * v["bytes_written"][idx]).tolist(),
                   weight_bytes=(scale * v["weight_bytes"][idx]).tolist(), count=(table.counts[idx] * m).tolist())

    rows(compute | link, "", 1.0)
    rows(compute, " (backward)", 2.0)
    rows(link, " (backward)", 1.0)  # the activations' gradients all-reduced as the activations were
    if recompute != "none":
        rows(compute if recompute == "full" else core, " (recompute)", 1.0)
    w = table.coef["wq"] + table.coef["wu"]
    params = float(((w[:, ONE] + w[:, EXP] * a.experts) * table.counts).sum()) + (
        (0 if a.tie_embeddings else a.vocab * a.hidden / tp) + a.position_table * a.hidden)
    ops.add("train.optimizer.adam", kind="elementwise", flops=ADAM_FLOPS * params, bytes_read=ADAM_READ * params,
            bytes_written=ADAM_WRITTEN * params, precision="fp32", unit="vector", group="train.optimizer",
            module_type="adam")
    memory = memory_per_device(run, lay, params, 0.0, m)
    info = {"model": a.name, "mode": "training", "seq": run.seq, "global_batch": run.global_batch,
            "micro_batch": micro_batch, "tp": tp, "recompute": recompute, "params_per_device": params,
            "training_flops": training_flops(run, recompute) / tp, **{f"memory_{k}": x for k, x in memory.items()},
            "memory_bytes": sum(memory.values())}
    return ops.build(
        title=f"{a.name} training step ({run.global_batch} x {run.seq} tokens" + (f", tp {tp}" if tp > 1 else "") + ")",
        source=f"roofline.llm.parallel ({a.source})", info=info,
        bytes_model="fused attention (FlashAttention-style); other ops unfused; backward 2x the forward's bytes",
        assumptions=[
            "backward = 2 x forward FLOPs and bytes (activation and weight gradients); recomputation " + recompute,
            f"Adam, mixed precision: {ADAM_READ} B read, {ADAM_WRITTEN} B written, {ADAM_FLOPS} FLOPs per parameter",
            "memory per device: 2 + 2 + 12 bytes per parameter (bf16 weights and gradients, fp32 master and "
            "moments), activations s b h 34/tp per layer (Korthikanti et al. 2022; 2 s b h under full recomputation)",
            "logits for every token (the loss); FlashAttention keeps no score tensor"],
        warnings=list(a.warnings))


# -- serving --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ServingRun:
    """Inference: ``batch`` concurrent sequences per replica, each a ``prompt`` then ``gen`` generated tokens."""

    arch: Arch
    batch: int
    prompt: int
    gen: int
    precisions: Precisions = Precisions()

    @classmethod
    def of(cls, model: str | Arch, *, batch: int = 64, prompt: int = 1024, gen: int = 256) -> ServingRun:
        arch = model if isinstance(model, Arch) else load_arch(model)
        return cls(arch, _positive_int(batch, "batch"), _positive_int(prompt, "prompt"), _positive_int(gen, "gen"))


@dataclass(frozen=True)
class ServingEstimate(_Facts):
    """One serving layout: a replica of tp x pp devices, dp replicas.  ``time`` is the time per output token
    (every sequence of the replica advances one token); the pipeline keeps pp micro-batches of batch / pp in
    flight, one per stage."""

    run: ServingRun
    layout: Layout
    system: System
    stage: float  # one stage's decode compute for one micro-batch
    comms: tuple[Comm, ...]  # per token, every stage
    ttft: float  # the prompt of one sequence through every stage (its collectives included)
    memory: dict[str, float] = field(default_factory=dict)

    def _comm(self) -> float:
        return sum(c.time for c in self.comms)

    @property
    def bound(self) -> float:
        return max(self.layout.pp * self.stage, self._comm())

    @property
    def exposed_comm(self) -> float:
        return (1 - self.layout.overlap) * self._comm()

    @property
    def time(self) -> float:
        """Time per output token with ``layout.overlap`` of the communication hidden."""
        return self.layout.pp * self.stage + self.exposed_comm

    @property
    def bubble_share(self) -> float:
        return 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.layout.dp * self.run.batch / self.time

    def parts(self) -> dict[str, float]:
        """The time per token split (seconds, summing to :attr:`time`): the ops' roofline time, each
        collective's exposed time."""
        return {"ops": self.layout.pp * self.stage, **{c.name: (1 - self.layout.overlap) * c.time for c in self.comms}}


    def cost_per_token(self, price_per_device_hour: float) -> float:
        return price_per_device_hour * self.layout.devices * self.time / 3600 / (self.layout.dp * self.run.batch)

    def describe(self) -> str:
        lay = self.layout
        return " ".join([f"tp{lay.tp}", f"pp{lay.pp}", f"dp{lay.dp}"] + ([f"cp{lay.cp}"] if lay.cp > 1 else [])
                        + ([f"ep{lay.ep}"] if lay.ep > 1 else []))


def check_serving(run: ServingRun, layout: Layout, system: System) -> None:
    a, lay = run.arch, layout
    _check_sizes(lay)
    if lay.interleave != 1:
        raise RooflineError("interleave is a training pipeline's; serving layouts split tp x cp x pp x dp (ep)")
    if lay.devices != system.devices:
        raise RooflineError(f"layout {lay.describe()} uses tp x cp x pp x dp = {lay.devices} devices; "
                            f"{system.name!r} has {system.devices}")
    check_tp(a, lay.tp)
    if a.layers % lay.pp:
        raise RooflineError(f"pp {lay.pp} does not divide the {a.layers} layers of {a.name}")
    if run.batch % lay.pp:
        raise RooflineError(f"batch {run.batch} per replica is not a whole number of micro-batches over pp {lay.pp}")
    if run.prompt % lay.cp:
        raise RooflineError(f"cp {lay.cp} does not divide the prompt of {run.prompt} tokens")
    if lay.ep > 1 and (not a.experts or a.experts % lay.ep or lay.dp % lay.ep):
        raise RooflineError(f"ep {lay.ep} must divide the {a.experts} experts of {a.name} and dp {lay.dp}")


def estimate_serving(run: ServingRun, layout: Layout, system: System, cache: _Cache | None = None) -> ServingEstimate:
    """Decode and prefill of ``run`` on one replica of ``layout`` (per device)."""
    from roofline.llm.model import activation_bytes, kv_cache_bytes, make_spec, weight_bytes_resident

    check_serving(run, layout, system)
    a, lay, d = run.arch, layout, system.devices_per_node
    cache = cache if cache is not None and cache.system is system else _Cache(system)
    mb = run.batch // lay.pp
    stage = cache.serving_stage(run, lay.tp, lay.cp, lay.ep, lay.pp, mb)
    act = run.precisions.bytes()["a"]
    comms: list[Comm] = []

    def add(label: str, coll: str, nbytes: float, ranks: int, stride: int, times: float) -> None:
        if ranks > 1 and times > 0:
            t, tiers = cache.collective(coll, float(nbytes), ranks, _per_node(stride, ranks, d))
            comms.append(Comm(label, t * times, tiers, "token"))

    # per output token each stage runs its layers / pp layers for each of the pp micro-batches: per device,
    # 2 tp all-reduces per layer, 1 cp combine of the partial attention outputs per layer (fp32 values and
    # the softmax max and sum per head), 2 ep all-to-alls (dispatch, combine) per MoE layer; pp sends
    add("tp all-reduce", "all_reduce", mb * a.hidden * act, lay.tp, 1, 2 * a.layers)
    heads = a.heads // lay.tp
    add("cp attention combine", "all_reduce", mb * heads * (a.v_head_dim + 2) * 4, lay.cp, lay.tp, a.layers)
    add("ep all-to-all", "all_to_all", mb * a.top_k * a.hidden * act, lay.ep, lay.tp * lay.cp, 2 * a.moe_layers)
    add("pp send/recv", "send_recv", mb * a.hidden * act, lay.pp, lay.tp * lay.cp * lay.dp, lay.pp)
    # time to first token: the prompt of one sequence, split over cp, through every stage
    prompt_msg = run.prompt / lay.cp * a.hidden * act
    t_ar = cache.collective("all_reduce", prompt_msg, lay.tp, _per_node(1, lay.tp, d))[0] if lay.tp > 1 else 0.0
    kv = 2 * run.prompt * kv_heads_per_device(a, lay.tp) * a.head_dim * act
    t_cp = cache.collective("all_gather", kv, lay.cp, _per_node(lay.tp, lay.cp, d))[0] if lay.cp > 1 else 0.0
    t_pp = (cache.collective("send_recv", prompt_msg, lay.pp, _per_node(lay.tp * lay.cp * lay.dp, lay.pp, d))[0]
            if lay.pp > 1 else 0.0)
    ttft = cache.serving_prefill(run, lay.tp, lay.cp) + a.layers * (2 * t_ar + t_cp) + (lay.pp - 1) * t_pp
    spec = make_spec(a, phase="generate", batch=run.batch, prompt=run.prompt, gen=run.gen, tp=lay.tp, flash=True)
    experts = _expert_weight_bytes(a, lay.tp, run.precisions)
    memory = {"weights": (weight_bytes_resident(spec) - experts * (1 - 1 / lay.ep)) / lay.pp,
              "kv cache": float(kv_cache_bytes(spec)) / (lay.pp * lay.cp),
              "activations": float(activation_bytes(spec, batch=mb))}
    return ServingEstimate(run, lay, system, stage, tuple(comms), ttft, memory)


def serving_layouts(run: ServingRun, system: System, *, max_cp: int = 8, overlap: float = 0.0) -> Iterator[Layout]:
    """Every tp x cp x pp x dp that divides ``system`` (tp within a node, cp up to ``max_cp`` dividing the
    prompt, pp dividing the layers and the batch), and ep dividing the experts and dp for an MoE model."""
    a, n = run.arch, system.devices
    for tp in divisors(system.devices_per_node):
        try:
            check_tp(a, tp)
        except RooflineError:
            continue
        for cp in (c for c in divisors(n // tp) if c <= max_cp and run.prompt % c == 0):
            for pp in (p for p in divisors(n // (tp * cp)) if a.layers % p == 0 and run.batch % p == 0):
                dp = n // (tp * cp * pp)
                for ep in ([e for e in divisors(dp) if a.experts % e == 0] if a.experts else [1]):
                    yield Layout(tp=tp, pp=pp, dp=dp, cp=cp, ep=ep, overlap=overlap)


def _expert_weight_bytes(a: Arch, tp: int, precisions: Precisions) -> float:
    """Bytes of every routed expert's weights on one of tp devices (0 for a dense model)."""
    if not a.experts:
        return 0.0
    eb = precisions.bytes()
    table = build_table(a, "prefill", tp)
    per = (table.coef["wq"][:, EXP] * eb["wq"] + table.coef["wu"][:, EXP] * eb["wu"]) * table.counts
    return float(per.sum()) * a.experts


# -- the planner ------------------------------------------------------------------------------------
def divisors(n: int) -> list[int]:
    """The divisors of ``n``, ascending (trial division up to its square root)."""
    small = [k for k in range(1, math.isqrt(n) + 1) if n % k == 0]
    return small + [n // k for k in reversed(small) if k * k != n]


def layouts(run: TrainingRun, system: System, *, micro_batches: tuple[int, ...] = (1, 2, 4, 8),
            zeros: tuple[int, ...] = (0, 1, 2, 3), recomputes: tuple[str, ...] = RECOMPUTE,
            max_cp: int = 8, overlap: float = 0.0) -> Iterator[Layout]:
    """Every layout that divides ``system``: tp within a node, pp dividing the layers, cp up to ``max_cp``,
    ep dividing the experts and dp, each micro-batch size, ZeRO stage and recomputation."""
    a, n, d = run.arch, system.devices, system.devices_per_node
    for tp in divisors(d):
        try:
            check_tp(a, tp)
        except RooflineError:
            continue
        for cp in (c for c in divisors(n // tp) if c <= max_cp and run.seq % c == 0):
            for pp in (p for p in divisors(n // (tp * cp)) if a.layers % p == 0):
                dp = n // (tp * cp * pp)
                for ep in ([e for e in divisors(dp) if a.experts % e == 0] if a.experts else [1]):
                    for mb in micro_batches:
                        if run.global_batch % (dp * mb) or (pp > 1 and run.global_batch // (dp * mb) < pp):
                            continue
                        for zero in zeros:
                            for rec in recomputes:
                                yield Layout(tp, pp, dp, cp, ep, zero, mb, True, rec, 1, overlap)


@dataclass(frozen=True)
class Plan:
    """Ranked layouts: the ones that fit (most tokens per second first), how many were tried, how many did
    not fit memory, and the search's wall time."""

    run: TrainingRun | ServingRun
    system: System
    ranked: tuple[Estimate | ServingEstimate, ...]
    tried: int
    too_big: int
    seconds: float
    uneven: int = 0  # layouts whose groups split unevenly over the nodes (skipped)


def plan(run: TrainingRun | ServingRun, system: System, *, top: int = 10, overlap: float = 0.0,
         **options: Any) -> Plan:
    """Every layout (:func:`layouts` for training, :func:`serving_layouts` for serving) estimated; those
    that fit memory ranked by tokens per second (training: the step time, the global batch being fixed)."""
    import time as clock

    t0 = clock.perf_counter()
    fits: list[Estimate | ServingEstimate] = []
    tried = too_big = uneven = 0
    cache = _Cache(system)
    serving = isinstance(run, ServingRun)
    candidates = (serving_layouts(run, system, overlap=overlap) if isinstance(run, ServingRun)
                  else layouts(run, system, overlap=overlap, **options))
    for lay in candidates:
        tried += 1
        try:
            e: Estimate | ServingEstimate = (estimate_serving(run, lay, system, cache) if isinstance(run, ServingRun)
                                             else estimate(run, lay, system, cache))
        except RooflineError:  # a group that splits unevenly over the nodes: not a layout to run
            uneven += 1
            continue
        if e.fits:
            fits.append(e)
        else:
            too_big += 1
    # ties (ZeRO stages that cost no time): less memory first
    fits.sort(key=lambda e: (-e.tokens_per_second, e.memory_total))
    assert serving or all(isinstance(e, Estimate) for e in fits)
    return Plan(run, system, tuple(fits[:top]), tried, too_big, clock.perf_counter() - t0, uneven)


__all__ = ["Comm", "Estimate", "Layout", "Plan", "ServingEstimate", "ServingRun", "TrainingRun", "check",
           "check_serving", "estimate", "estimate_serving", "layouts", "memory_per_device", "plan", "serving_layouts",
           "training_flops", "training_workload"]
