"""One training layout's step on a system (compute, pipeline bubble, collectives, memory), and every layout
that divides the system (see :mod:`roofline.planner`).

The step itself, on one device's shard, is the LLM model's (:mod:`roofline.llm.training`: forward,
backward, recomputation, optimizer, bytes held per parameter and per layer); this module shards it over
the layout and schedules it (1F1B pipeline, collectives on the tiers their groups cross, ZeRO).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from roofline.errors import RooflineError
from roofline.formula import roofline_times
from roofline.llm.metrics import device_ceilings
from roofline.llm.table import check_tp, kv_heads_per_device
from roofline.llm.training import (
    BACKWARD,
    GRAD_BYTES,
    OPTIMIZER_BYTES,
    RECOMPUTE,
    WEIGHT_BYTES,
    TrainingRun,
    activation_bytes_per_layer,
    logits_bytes,
    micro_batch_flops,
    optimizer_bytes,
    optimizer_flops,
    recomputed,
)
from roofline.planner.cache import _Cache, _edges
from roofline.planner.layout import Comm, Layout, _check_sizes, _Facts, _per_node, divisors
from roofline.system import System


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


def memory_per_device(run: TrainingRun, layout: Layout, dense: float, expert: float, micro_batches: int
                      ) -> dict[str, float]:
    """Bytes per device: weights, gradients and optimizer state as the ZeRO stage shards them over the ranks
    holding the same weights (``dense`` parameters over dp x cp, ``expert`` ones over dp x cp / ep), and
    activations for the micro-batches in flight (and the last stage's fp32 logits); the bytes per parameter
    and per layer are the training step's (:mod:`roofline.llm.training`)."""
    a, lay = run.arch, layout
    replicas, expert_replicas = lay.dp * lay.cp, lay.dp * lay.cp // lay.ep

    def held(stage: int) -> float:  # parameters kept per device once ZeRO stage `stage` shards them
        return dense / replicas + expert / expert_replicas if lay.zero >= stage else dense + expert

    per_layer = activation_bytes_per_layer(run, tp=lay.tp, cp=lay.cp, micro_batch=lay.micro_batch, sp=lay.sp,
                                           recompute=lay.recompute)
    logits = logits_bytes(run, tp=lay.tp, cp=lay.cp, micro_batch=lay.micro_batch)
    return {"weights": WEIGHT_BYTES * held(3), "gradients": GRAD_BYTES * held(2),
            "optimizer": OPTIMIZER_BYTES * held(1),
            "activations": per_layer * a.layers / lay.pp * min(micro_batches, lay.pp)
            + (logits if lay.pp == 1 else 0.0)}


def estimate(run: TrainingRun, layout: Layout, system: System, cache: _Cache | None = None) -> Estimate:
    """One training step of ``run`` with ``layout`` on ``system`` (per device): the step's shard on the
    slowest stage (:mod:`roofline.llm.training`), its collectives, and the memory it holds."""
    m = check(run, layout, system)
    lay = layout
    cache = cache if cache is not None and cache.system is system else _Cache(system)
    sh = cache.shard(run, lay.tp, lay.cp, lay.ep, lay.micro_batch)
    stage_layers = sh.layers_time / lay.pp
    forward = stage_layers + _edges(sh.first_time, sh.last_time, lay.pp)
    recompute = recomputed(lay.recompute, forward, sh.attention_time / lay.pp)
    edge_params = _edges(sh.first_params, sh.last_params, lay.pp)
    expert = sh.expert_params / lay.pp
    dense = (sh.layer_params - sh.expert_params) / lay.pp + edge_params  # on the device with the most
    params = dense + expert
    # weights are replicated over dp x cp ranks (the experts over dp x cp / ep): ZeRO shards over those
    replicas, expert_replicas = lay.dp * lay.cp, lay.dp * lay.cp // lay.ep
    shard_opt = dense / replicas + expert / expert_replicas if lay.zero >= 1 else params
    _, _, opt = roofline_times(optimizer_flops(shard_opt), optimizer_bytes(shard_opt),
                               device_ceilings(system.device, run.precisions)["peak_vector"],
                               system.device.main_memory.bandwidth)
    comms = _comms(run, lay, system, cache, m, dense, expert)
    memory = memory_per_device(run, lay, dense, expert, m)
    flops_fwd = sh.layers_flops / lay.pp + _edges(sh.first_flops, sh.last_flops, lay.pp)
    rec_flops = recomputed(lay.recompute, flops_fwd, sh.attention_flops / lay.pp)
    flops = m * micro_batch_flops(flops_fwd, rec_flops) + optimizer_flops(shard_opt)
    return Estimate(run, lay, system, m, forward, BACKWARD * forward, recompute, float(opt), comms, memory, flops)


def _comms(run: TrainingRun, lay: Layout, system: System, cache: _Cache, m: int, dense: float, expert: float
           ) -> tuple[Comm, ...]:
    """Every collective of the step on its tiers: tp, cp, ep and pp per micro-batch, the gradient sync per step
    (ZeRO 3: the weights gathered and the gradients scattered every micro-batch)."""
    a, d = run.arch, system.devices_per_node
    act = run.precisions.bytes()["a"]
    s_local = run.seq / lay.cp
    tokens = lay.micro_batch * s_local
    layers_here = a.layers / lay.pp
    replicas, expert_replicas = lay.dp * lay.cp, lay.dp * lay.cp // lay.ep
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
    return tuple(comms)


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
