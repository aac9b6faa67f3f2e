"""One training layout's step on a system (compute, pipeline bubble, collectives, memory), and every layout
that divides the system (see :mod:`roofline.planner`).

The step itself, on one device's shard, is the LLM model's (:mod:`roofline.llm.training`: forward,
backward, recomputation, optimizer, bytes held per parameter and per layer); this module shards it over
the layout and schedules it (1F1B pipeline, collectives on the tiers their groups cross, ZeRO).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from roofline.core import formats
from roofline.core.errors import RooflineError
from roofline.hardware.system import System
from roofline.llm.recompute import activation_bytes as activation_bytes_per_layer
from roofline.llm.recompute import check as check_recompute
from roofline.llm.recompute import recomputed
from roofline.llm.table import check_tp, kv_heads_per_device
from roofline.llm.training import (
    BACKWARD,
    GRAD_BYTES,
    OPTIMIZER_BYTES,
    RECOMPUTE,
    WEIGHT_BYTES,
    TrainingRun,
    logits_bytes,
    micro_batch_flops,
    optimizer_bytes,
    optimizer_flops,
    training_ceilings,
    training_flops,
)
from roofline.planner.cache import Cache, Shard
from roofline.planner.dims import device_factors, divisors, shapes, stride
from roofline.planner.dims import replicas as replicas_of
from roofline.planner.ep import check_dispatcher, check_etp, ep_comms, folded_moe_layers
from roofline.planner.forecast import ShardForecast
from roofline.planner.layout import (
    Comm,
    Facts,
    Layout,
    check_sizes,
    in_flight,
    members_per_domain,
    members_per_node,
    stage_layers,
)
from roofline.planner.layout import interleaves as fitting_interleaves
from roofline.planner.moe_memory import moe_memory, mtp_activations, mtp_params
from roofline.planner.overlap import exposed, sm_holders, sp_dgrad_shares
from roofline.planner.stages import bubble_skew, in_flight_layers, layout_chunks


@dataclass(frozen=True)
class StepForecast:
    """The forecast (:mod:`roofline.planner.forecast`) of one micro-batch on the stage it busies most (forward,
    backward, recomputation), the optimizer's on achievable bandwidth, and that stage's shard forecast's
    SM-contention shares (:attr:`ShardForecast.contention`; None: not forecast)."""

    forward: float = 0.0
    backward: float = 0.0
    recompute: float = 0.0
    optimizer: float = 0.0
    contention: ShardForecast | None = None


@dataclass(frozen=True)
class Estimate(Facts):
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
    memory: dict[str, float] = field(default_factory=dict)  # the device of the stage holding the most
    stage_layers: tuple[int, ...] = ()  # layers per pipeline stage
    memory_stage: int = 0  # the stage whose device ``memory`` is
    shard: Shard | None = None  # one micro-batch on one device, all layers (what the stages split)
    step_forecast: StepForecast = field(default_factory=StepForecast)
    bubble_skew: float = 1.0  # uneven chunks' bubble over even ones' (:func:`~roofline.planner.stages.bubble_skew`)

    @property
    def forecast_forward(self) -> float:
        return self.step_forecast.forward

    @property
    def forecast_backward(self) -> float:
        return self.step_forecast.backward

    @property
    def forecast_recompute(self) -> float:
        return self.step_forecast.recompute

    @property
    def forecast_optimizer(self) -> float:
        return self.step_forecast.optimizer

    @property
    def contention_shares(self) -> ShardForecast | None:
        """The busiest stage's shard forecast's SM-contention shares (:attr:`ShardForecast.contention`)."""
        return self.step_forecast.contention

    @property
    def stage_flops(self) -> tuple[float, ...]:
        """FLOPs per step of one device of each pipeline stage (recomputation and its optimizer shard included)."""
        lay, sh = self.layout, self.shard
        if sh is None:
            return ()
        everyone = _stages(sh, lay, self.stage_layers, self.run.arch.layers, tuple(range(lay.pp)))
        replicas, expert_replicas = replicas_of(lay), replicas_of(lay, expert=True)
        return tuple(self.micro_batches * micro_batch_flops(st.flops, st.recompute_flops) + optimizer_flops(
            _held(lay.zero, 1, st.dense, st.expert, replicas, expert_replicas)) for st in everyone)

    @property
    def flops(self) -> float:
        """FLOPs per device per step, the mean over the pipeline's stages (the embedding charged to the first
        stage only, lm_head to the last): every device's summed is the step's."""
        return sum(self.stage_flops) / max(len(self.stage_flops), 1)

    @property
    def zero(self) -> str:
        """What the layout's ZeRO stage shards and communicates (:data:`ZERO_STAGES`)."""
        return zero_note(self.layout.zero)

    @property
    def compute(self) -> float:
        """One micro-batch's forward + backward + recomputation."""
        return self.forward + self.backward + self.recompute

    @property
    def slots(self) -> float:
        """Micro-batch slots the pipeline takes: m + (pp - 1) / v, the warm-up's pp - 1 chunks each 1/v of the
        busiest stage's micro-batch (bubble (pp - 1) / (v m + pp - 1); Narayanan et al. 2021, section 2.2.2).  With
        the first and last stages one layer short (:func:`~roofline.planner.layout.short_edge`, Llama 3's
        pipeline) the stages' times are as their layers make them (an edge stage: its layers plus the embedding
        or lm_head and loss), the busiest pacing; Dubey et al. 2024 give the ratio as (pp - 1) / (v m).  Chunks of
        unequal layers stretch the warm-up's by :attr:`bubble_skew` (the bound keeps the even one's: :attr:`bound`)."""
        return self.micro_batches + (self.layout.pp - 1) / self.layout.interleave * self.bubble_skew

    @property
    def bubble_share(self) -> float:
        return (self.layout.pp - 1) / self.layout.interleave / self.slots

    def _comm(self, scope: str) -> float:
        return sum(c.time for c in self.comms if c.overlappable_with == scope)

    @property
    def bound(self) -> float:
        """Step time with communication fully overlapped where the schedule allows it: each of the m micro-batches
        takes at least its compute or its communication (one micro-batch's all-to-alls behind another's compute, as
        1F1B with A2A overlap and DualPipe run them), the pipeline's fill and drain at least their compute, at the
        even split's (pp - 1) / v slots (uneven chunks' skew is the forecast's, :attr:`slots`)."""
        m = self.micro_batches
        fill = (self.layout.pp - 1) / self.layout.interleave
        pipeline = m * max(self.compute, self._comm("micro-batch") / m) + fill * self.compute
        return max(pipeline, self._comm("step")) + self.optimizer

    @property
    def forecast_compute(self) -> float:
        """The forecast of one micro-batch's forward + backward + recomputation on the busiest stage."""
        return self.forecast_forward + self.forecast_backward + self.forecast_recompute

    def exposed(self) -> dict[str, float]:
        """Forecast seconds per step of each collective not hidden behind compute
        (:func:`roofline.planner.overlap.exposed`, the layout's overlap switches)."""
        out: dict[str, float] = {}
        bwd = self.forecast_backward + self.forecast_recompute
        for c in self.comms:
            # sequence parallelism's gathers hide behind input gradients: the backward's, not the recomputation's
            b = self.forecast_backward if c.dgrad_shares else bwd
            out[c.name] = out.get(c.name, 0.0) + exposed(c, self.layout, self.micro_batches, self.slots,
                                                         self.forecast_forward, b)
        return out

    @cached_property
    def exposed_comm(self) -> float:
        """Forecast communication not hidden behind compute under the layout's overlap rules."""
        return sum(self.exposed().values())

    @cached_property
    def sm_contention(self) -> float:
        """Forecast seconds per step the compute loses to the SMs its hidden collectives hold: each collective's
        hidden seconds (its forecast less what :meth:`exposed` leaves on the critical path) x the share of them it
        holds SMs x what the phase it hides behind loses per second beside them
        (:func:`roofline.planner.overlap.sm_holders`, :meth:`ShardForecast.contention_share`)."""
        fc = self.contention_shares
        if fc is None or not fc.contention:
            return 0.0
        bwd = self.forecast_backward + self.forecast_recompute
        total = 0.0
        for c in self.comms:
            sms, share, phase = sm_holders(c, self.layout)
            if sms and share:
                shown = exposed(c, self.layout, self.micro_batches, self.slots, self.forecast_forward,
                                self.forecast_backward if c.dgrad_shares else bwd)
                total += max(0.0, c.forecast - shown) * share * fc.contention_share(sms, phase)
        return total

    @property
    def forecast_raw(self) -> float:
        return (self.slots * self.forecast_compute + self.exposed_comm + self.forecast_optimizer
                + self.sm_contention)

    @cached_property
    def time(self) -> float:
        """The forecast step time (what the planner ranks by): the pipeline's slots of the busiest stage's
        forecast micro-batch, the exposed communication, the optimizer, the SM contention of the hidden
        communication; never below :attr:`bound`."""
        return max(self.forecast_raw, self.bound)

    @property
    def model_flops(self) -> float:
        """The step's model FLOPs (:func:`roofline.llm.training.training_flops`: 3 x the forward of every
        token, i.e. 6 N tokens for the GEMMs plus causal attention, recomputation not counted)."""
        return training_flops(self.run, "none")

    @property
    def model_tflops_per_device(self) -> float:
        """Model TFLOP/s per device at the forecast step time."""
        return self.model_flops / self.layout.devices / self.time / 1e12

    @property
    def mfu(self) -> float:
        """Model FLOPs utilization: model FLOP/s per device over the device's dense matrix peak at the GEMMs'
        precision (bf16, or fp8 for an fp8 run)."""
        peak = training_ceilings(self.system.device, self.run)["peak_gemm"]
        return self.model_tflops_per_device * 1e12 / peak

    @property
    def tokens_per_second(self) -> float:
        return self.run.global_batch * self.run.seq / self.time

    def parts(self) -> dict[str, float]:
        """The step time split (seconds, summing to :attr:`time`): the ops' roofline time, the pipeline bubble,
        each collective's exposed time, the optimizer, what the hidden collectives' SMs cost the compute
        (:attr:`sm_contention`)."""
        c = self.forecast_compute
        parts = {"ops": self.micro_batches * c, "bubble": (self.slots - self.micro_batches) * c, **self.exposed(),
                 "optimizer": self.forecast_optimizer, "SM contention": self.sm_contention}
        if self.bound > self.forecast_raw:  # pragma: no cover - the forecast's terms are each >= the bound's
            parts["up to the bound"] = self.bound - self.forecast_raw
        return parts

    def headline(self) -> str:
        """The answer for this layout, the deciding fact first: the forecast step time and the bound beside it
        (one step: global batch x seq tokens), the matching tokens/s and MFU."""
        from roofline.core.units import format_count, format_seconds

        return (f"{self.fit_clause()}{self.describe()}: step {format_seconds(self.time)} forecast, "
                f"{format_seconds(self.bound)} bound (one step of {self.run.global_batch:,} x {self.run.seq:,} "
                f"tokens); {format_count(self.tokens_per_second)} tokens/s at the forecast, MFU {self.mfu:.1%}")

    def describe(self) -> str:
        return self.layout.describe()


#: What each ZeRO stage shards over the ranks holding the same weights, and what it communicates per
#: micro-batch and per step (Rajbhandari et al. 2020, sections 5 and 7).  Stage 1 is Megatron-LM's
#: distributed optimizer (docs "Distributed Optimizer": the gradients accumulate in a full buffer over the
#: micro-batches, are reduce-scattered once after the last one, and the updated weights all-gathered).
#: Stage 2 keeps only its gradient shard, so each micro-batch's gradients are reduce-scattered in its
#: backward (DeepSpeed ``stage_1_and_2.py`` reduces the gradient buckets in every backward, accumulating
#: into the partition).  Stage 3 (FSDP) gathers the weights for each forward and each backward.
ZERO_STAGES: dict[int, tuple[str, str, str]] = {
    0: ("nothing", "nothing", "the gradients all-reduced"),
    1: ("the optimizer state (fp32 master weight, Adam m and v)", "nothing (a full gradient buffer accumulates)",
        "the gradients reduce-scattered, the updated weights all-gathered"),
    2: ("the optimizer state and the gradients", "its gradients reduce-scattered",
        "the updated weights all-gathered"),
    3: ("the optimizer state, the gradients and the weights",
        "the weights all-gathered forward and again backward, the gradients reduce-scattered", "nothing"),
}


def zero_note(zero: int) -> str:
    """One line: what ZeRO stage ``zero`` shards, and what it communicates per micro-batch and per step."""
    sharded, per_mb, per_step = ZERO_STAGES[zero]
    return f"ZeRO {zero}: sharded {sharded}; per micro-batch {per_mb}; per step {per_step}"


def check(run: TrainingRun, layout: Layout, system: System) -> int:
    """The number of micro-batches, or a one-line error for a layout that cannot run on ``system``."""
    a, lay = run.arch, layout
    check_sizes(lay)
    if lay.devices != system.devices:
        raise RooflineError(f"layout {lay.describe()} uses {device_factors()} = {lay.devices} devices; "
                            f"{system.name!r} has {system.devices}")
    if lay.overlap:
        raise RooflineError("overlap= is serving's share; a training step overlaps by rule: overlap_dp, overlap_tp, "
                            "overlap_pp (roofline plan --overlap-dp/--overlap-tp/--overlap-pp on|off)")
    if lay.zero not in (0, 1, 2, 3):
        raise RooflineError(f"zero must be 0, 1, 2 or 3, got {lay.zero!r}")
    check_recompute(lay.recompute)  # none, selective, full, or Megatron-Core's modules (roofline.llm.recompute)
    check_tp(a, lay.tp)
    if lay.interleave > 1 and lay.pp == 1:
        raise RooflineError(f"interleave {lay.interleave} needs pipeline stages: pp is 1")
    layout_chunks(lay, a.layers)  # the split, or its one-line error (:mod:`roofline.planner.stages`)
    if run.seq % lay.cp:
        raise RooflineError(f"cp {lay.cp} does not divide the sequence of {run.seq} tokens")
    if lay.sp and lay.tp > 1 and (run.seq // lay.cp) % lay.tp:
        raise RooflineError(f"sequence parallelism splits each device's {run.seq // lay.cp} tokens over tp {lay.tp}: "
                            "not a whole number; use sp=false or another tp or cp")
    folded = 0 < lay.etp < lay.tp  # Megatron-Core's parallel folding: ep x etp out of tp x cp x dp (planner.ep)
    if lay.ep > 1 and (not a.experts or a.experts % lay.ep or (lay.dp % lay.ep and not folded)):
        raise RooflineError(f"ep {lay.ep} must divide the {a.experts} experts of {a.name} and dp {lay.dp}")
    if lay.etp and not a.experts:
        raise RooflineError(f"etp {lay.etp} splits the routed experts, and {a.name} is a dense model (no experts)")
    check_etp(lay)
    check_dispatcher(lay)
    per_step = lay.dp * lay.micro_batch
    if run.global_batch % per_step:
        raise RooflineError(f"global batch {run.global_batch} is not a whole number of micro-batches of "
                            f"{lay.micro_batch} over dp {lay.dp}")
    m = run.global_batch // per_step
    if lay.pp > 1 and m < lay.pp:
        raise RooflineError(f"{m} micro-batches is below the pipeline depth pp {lay.pp}: 1F1B needs at least pp")
    if lay.interleave > 1 and lay.pp > 1 and m % lay.pp:
        raise RooflineError(f"{m} micro-batches is not a multiple of pp {lay.pp}: the interleaved schedule needs one")
    return m


def _held(zero: int, stage: int, dense: float, expert: float, replicas: int, expert_replicas: int) -> float:
    """Parameters a device keeps of one state once ZeRO ``zero`` shards the states of stage >= ``stage``."""
    return dense / replicas + expert / expert_replicas if zero >= stage else dense + expert


def memory_per_device(run: TrainingRun, layout: Layout, dense: float, expert: float, micro_batches: int,
                      *, layers: float | None = None, stage: int = 0, last: bool | None = None,
                      gemm: float = 0.0, per_layer: float | None = None, chunks: tuple[int, ...] = ()
                      ) -> dict[str, float]:
    """Bytes a device of pipeline stage ``stage`` (``layers`` layers, default layers / pp) holds: weights,
    gradients and optimizer state (:func:`~roofline.llm.training.state_bytes`) as the ZeRO stage shards them
    over the ranks holding the same weights (``dense`` parameters over dp x cp, ``expert`` ones over
    dp x cp / ep; fp8's weight cache over its ``gemm`` parameters, sharded like the weights), and the
    activations of the micro-batches it holds in flight (:func:`~roofline.planner.layout.in_flight`; its
    ``chunks``' layers, uneven ones :func:`~roofline.planner.stages.in_flight_layers`; per layer
    :func:`~roofline.llm.training.activation_bytes_per_layer`), with the last stage's fp32 logits of the
    micro-batch it runs; an MoE model's capacity factor and all-to-all buffers (:func:`~roofline.planner.moe_memory.moe_memory`)."""
    a, lay = run.arch, layout
    replicas, expert_replicas = replicas_of(lay), replicas_of(lay, expert=True)
    layers = a.layers / lay.pp if layers is None else layers
    last = stage == lay.pp - 1 if last is None else last
    if last and run.mtp:  # the MTP modules' states, on the stage that runs them (planner.moe_memory)
        d_mtp, e_mtp = mtp_params(run, lay.tp, lay.ep)
        dense, expert = dense + d_mtp, expert + e_mtp
    if per_layer is None:
        per_layer = activation_bytes_per_layer(run, tp=lay.tp, cp=lay.cp, micro_batch=lay.micro_batch, sp=lay.sp,
                                               recompute=lay.recompute)
    logits = logits_bytes(run, tp=lay.tp, cp=lay.cp, micro_batch=lay.micro_batch) if last else 0.0
    cache = formats.get(run.precision).weight_copy_bytes * gemm / (replicas if lay.zero >= 3 else 1)
    z = lay.zero
    flight = (in_flight_layers(lay.pp, lay.interleave, micro_batches, stage, chunks) if chunks else
              in_flight(lay.pp, lay.interleave, micro_batches, stage, int(layers) if layers == int(layers) else 0))
    out = {"weights": WEIGHT_BYTES * _held(z, 3, dense, expert, replicas, expert_replicas) + cache,
           "gradients": run.main_grad_bytes * _held(z, 2, dense, expert, replicas, expert_replicas),
           "optimizer": OPTIMIZER_BYTES * _held(z, 1, dense, expert, replicas, expert_replicas),
           "activations": per_layer * layers * flight + logits}
    if last and run.mtp:
        out["activations"] += mtp_activations(run, per_layer, flight, logits)
    routed, buffers = moe_memory(run, lay, layers * flight)  # capacity factor, all-to-all buffers
    out["activations"] += routed
    if buffers:
        out["ep buffers"] = buffers
    if z >= 3:
        # gathered only where sharded: with one expert replica (ep = dp x cp) a device already holds its experts whole
        gathered = dense * (replicas > 1) + expert * (expert_replicas > 1)
        out["zero3 buffers"] = zero3_buffers(run, gathered / max(layers, 1))
    return out


#: ZeRO 3's unsharded buffers at the backward's peak, in layers' worth: the current layer's gathered weights and
#: the next one's (prefetched) and the current layer's full gradient before its reduce-scatter (PyTorch FSDP docs,
#: ``BackwardPrefetch.BACKWARD_PRE``: "holding the current set of parameters, next set of parameters, and current
#: set of gradients"; FSDP's unit a transformer layer)
ZERO3_LIVE_WEIGHTS = 2


def zero3_buffers(run: TrainingRun, layer_params: float) -> float:
    """Bytes of ZeRO 3's unsharded buffers on a device whose layers hold ``layer_params`` parameters each (its
    1/tp shard): :data:`ZERO3_LIVE_WEIGHTS` layers of 16-bit weights and one of gradients.

    >>> zero3_buffers(TrainingRun.of("gpt2"), 1e9) / 1e9   # 2 x 2 B + 2 B per parameter of one layer
    6.0
    """
    return (ZERO3_LIVE_WEIGHTS * WEIGHT_BYTES + run.main_grad_bytes) * layer_params


@dataclass(frozen=True)
class _Stage:
    """One pipeline stage's device: one micro-batch's forward time and FLOPs, its recomputation, its
    parameters (dense and routed experts, of them in GEMMs)."""

    layers: int
    forward: float
    recompute: float
    flops: float
    recompute_flops: float
    dense: float
    expert: float
    gemm: float
    forecast_forward: float = 0.0
    forecast_backward: float = 0.0
    forecast_recompute: float = 0.0

    @property
    def forecast_compute(self) -> float:
        return self.forecast_forward + self.forecast_backward + self.forecast_recompute

    @property
    def compute(self) -> float:
        return (1 + BACKWARD) * self.forward + self.recompute


def _stages(sh: Shard, lay: Layout, split: tuple[int, ...], L: int, which: tuple[int, ...],
            fc: ShardForecast | None = None) -> list[_Stage]:
    """Stages ``which``' devices: their layers' share of the shard (every layer alike; an MoE model's routed
    experts spread over the layers in proportion), the first stage's embedding and the last's lm_head; with
    ``fc``, the forecast of each (never below its bound)."""
    out = []
    for k in which:
        n = split[k]
        f, first, last = n / L, k == 0, k == len(split) - 1
        fwd = f * sh.layers_time + first * sh.first_time + last * sh.last_time
        flops = f * sh.layers_flops + first * sh.first_flops + last * sh.last_flops
        dense = f * (sh.layer_params - sh.expert_params) + first * sh.first_params + last * sh.last_params
        rec = recomputed(lay.recompute, fwd, _scaled(sh.module_times(), f))
        ff = fb = fr = 0.0
        if fc is not None:
            ff = max(fwd, f * fc.layers_forward + first * fc.first_forward + last * fc.last_forward)
            fb = max(BACKWARD * fwd, f * fc.layers_backward + first * fc.first_backward + last * fc.last_backward)
            fr = max(rec, recomputed(lay.recompute, ff, _scaled(fc.module_forward(), f)))
        out.append(_Stage(n, fwd, rec, flops, recomputed(lay.recompute, flops, _scaled(sh.module_flops(), f)), dense,
                          f * sh.expert_params, f * sh.gemm_params, ff, fb, fr))
    return out


def _scaled(per_module: dict[str, float], share: float) -> dict[str, float]:
    """A stage's part (``share`` of the layers) of each recompute module's rows (:mod:`roofline.llm.recompute`)."""
    return {m: share * x for m, x in per_module.items()}


@lru_cache(maxsize=4096)
def _candidates(split: tuple[int, ...]) -> tuple[int, ...]:
    """The stages that can be the busiest or hold the most: the first and the last (the embedding, lm_head, the
    logits) and each stage with more layers than every stage before it; any other has no more layers, no
    more parameters and (both schedules hold fewer micro-batches further down) no more in flight than one
    before it."""
    out, most = [0], split[0]
    for k in range(1, len(split) - 1):
        if split[k] > most:
            out.append(k)
            most = split[k]
    return tuple(dict.fromkeys([*out, len(split) - 1]))


def estimate(run: TrainingRun, layout: Layout, system: System, cache: Cache | None = None, *,
             checked: bool = False) -> Estimate:
    """One training step of ``run`` with ``layout`` on ``system`` (per device): each pipeline stage's shard of
    the step (:mod:`roofline.llm.training`), the busiest one pacing the pipeline, its collectives, and the
    memory of the stage holding the most.  ``checked``: the layout comes from :func:`layouts`, which yields
    only layouts :func:`check` passes (the search skips checking them again) and the forecast of one that
    does not fit memory is left at its bound (the search ranks only those that fit; the forecast of a shard
    shape is the costly part)."""
    m = (run.global_batch // (layout.dp * layout.micro_batch) if checked else check(run, layout, system))
    lay, L = layout, run.arch.layers
    cache = cache if cache is not None and cache.system is system else Cache(system)
    sh = cache.shard(run, lay.tp, lay.cp, lay.ep, lay.micro_batch)
    chunks = layout_chunks(lay, L)
    split = tuple(map(sum, chunks))
    which = _candidates(split)
    skey = (cache.run_key(run), lay.tp, lay.cp, lay.ep, lay.micro_batch, split, lay.recompute)
    got = cache.memo.get(skey)
    if got is None:  # the same for every ZeRO stage and data-parallel width
        stages = _stages(sh, lay, split, L, which)
        # the busiest paces the pipeline; the one with the most parameters has the longest gradient sync
        got = cache.memo[skey] = (stages, max(stages, key=lambda st: st.compute),
                                  max(stages, key=lambda st: st.dense + st.expert))
    stages, busy, heavy = got
    held = _held(lay.zero, 1, heavy.dense, heavy.expert, replicas_of(lay), replicas_of(lay, expert=True))
    dev = system.device
    opt_bytes = optimizer_bytes(held, run.main_grad_bytes)
    opt = max(optimizer_flops(held) / cache.ceilings(run)["peak_vector"], opt_bytes / dev.main_memory.bandwidth)
    opt_fc = max(opt, opt_bytes / cache.achievable_bandwidth())
    key = (skey[0], lay.tp, lay.cp, lay.pp, lay.dp, lay.ep, lay.micro_batch, lay.interleave, split,
           lay.recompute == "full", lay.etp, lay.dispatcher, lay.capacity)
    comms = cache.memo.get(key)
    if comms is None:  # the same for every ZeRO stage, and for no and selective recomputation
        comms = cache.memo[key] = _activation_comms(run, lay, system, cache, m, max(split))
    gkey = (skey[0], lay.zero, lay.tp, lay.cp, lay.dp, lay.ep, m, split)
    grads = cache.memo.get(gkey)
    if grads is None:  # the same for every recomputation
        grads = cache.memo[gkey] = _grad_comms(lay, system, cache, m, heavy.dense, heavy.expert, run.main_grad_bytes)
    comms = comms + grads
    akey = (key[0], lay.tp, lay.cp, lay.micro_batch, lay.sp, lay.recompute)
    per_layer = cache.memo.get(akey)
    if per_layer is None:
        per_layer = cache.memo[akey] = activation_bytes_per_layer(run, tp=lay.tp, cp=lay.cp, micro_batch=lay.micro_batch,
                                                                  sp=lay.sp, recompute=lay.recompute)
    mems = [memory_per_device(run, lay, st.dense, st.expert, m, layers=st.layers, stage=k, gemm=st.gemm,
                              per_layer=per_layer, chunks=chunks[k]) for k, st in zip(which, stages, strict=True)]
    worst = max(range(len(mems)), key=lambda k: sum(mems[k].values()))
    fits = sum(mems[worst].values()) <= (system.device.memory_capacity or math.inf)
    fc = (_forecast_stage(run, lay, cache, skey, which) if not checked or fits
          else _Stage(0, 0, 0, 0, 0, 0, 0, 0, busy.forward, BACKWARD * busy.forward, busy.recompute))
    shares = cache.shard_forecast(run, lay.tp, lay.cp, lay.ep, lay.micro_batch) if not checked or fits else None
    return Estimate(run, lay, system, m, busy.forward, BACKWARD * busy.forward, busy.recompute, float(opt), comms,
                    mems[worst], split, which[worst], sh, StepForecast(fc.forecast_forward, fc.forecast_backward,
                                                                       fc.forecast_recompute, float(opt_fc), shares),
                    bubble_skew(chunks))


def _forecast_stage(run: TrainingRun, lay: Layout, cache: Cache, skey: tuple[Any, ...], which: tuple[int, ...]
                    ) -> _Stage:
    """The stage whose forecast micro-batch is the longest (its shard's forecast, once per shard shape)."""
    got = cache.memo.get(("forecast",) + tuple(skey))
    if got is None:
        sh = cache.shard(run, lay.tp, lay.cp, lay.ep, lay.micro_batch)
        fc = cache.shard_forecast(run, lay.tp, lay.cp, lay.ep, lay.micro_batch)
        stages = _stages(sh, lay, skey[5], run.arch.layers, which, fc)
        got = cache.memo[("forecast",) + tuple(skey)] = max(stages, key=lambda st: st.forecast_compute)
    return got


def _adder(cache: Cache, system: System, comms: list[Comm]) -> Any:
    """``add(label, collective, bytes, ranks, stride, calls, scope)``: one collective, timed on its tiers (chosen by
    the scale-up domain the group spans), into ``comms``."""
    def add(label: str, coll: str, nbytes: float, ranks: int, stride: int, times: float, scope: str,
            params: float = 0.0, dgrad_shares: tuple[float, ...] = ()) -> None:
        if ranks > 1 and times > 0:
            per_node = members_per_node(stride, ranks, system.devices_per_node)
            per_domain = members_per_domain(stride, ranks, system)
            t, tiers = cache.collective(coll, float(nbytes), ranks, per_node, per_domain)
            fc = cache.collective_forecast(coll, float(nbytes), ranks, per_node, per_domain) * times
            comms.append(Comm(label, t * times, tiers, scope, float(nbytes), times, fc, float(params), dgrad_shares))
    return add


def _activation_comms(run: TrainingRun, lay: Layout, system: System, cache: Cache, m: int, layers_here: int
                      ) -> tuple[Comm, ...]:
    """The collectives of the micro-batches' activations: tp, cp, ep and pp (whatever the ZeRO stage).  Full
    recomputation runs each layer's forward again in the backward, its collectives with it (Megatron-LM's
    ``CheckpointFunction.backward`` calls the layer's forward, whose tensor-parallel all-reduces or
    reduce-scatter/all-gather pairs, context-parallel K/V gathers and expert all-to-alls are part of it):
    the forward's share of each again, ``rec`` = 1 more forward's worth; selective recomputation repeats the
    attention core only, which communicates nothing.  With sequence parallelism the backward gathers each
    column-parallel GEMM's input once more (its weight gradient's)."""
    a = run.arch
    rec = 1 if lay.recompute == "full" else 0
    act = run.precisions.bytes()["a"]
    tokens = lay.micro_batch * run.seq / lay.cp
    comms: list[Comm] = []
    add = _adder(cache, system, comms)
    hidden_msg = tokens * a.hidden * act
    # 2 per layer forward, 2 backward; the vocabulary-parallel embedding's forward and lm_head's input
    # gradient backward (one of them per edge stage)
    add("tp all-reduce", "all_reduce", hidden_msg, lay.tp, 1, ((4 + 2 * rec) * layers_here - (2 + rec)
        * folded_moe_layers(a, lay, layers_here) + (2 if lay.pp == 1 else 1)) * m, "micro-batch")
    if lay.sp and lay.tp > 1:
        # sequence parallelism keeps only each column-parallel GEMM's sequence shard of its input, so the backward
        # all-gathers it again for the weight gradient: two per layer (the qkv and the first MLP GEMM), each
        # micro-batch, each started asynchronously before that GEMM's input gradient and waited on after it
        # (:func:`roofline.planner.overlap.exposed`'s ``sp`` rule, :func:`~roofline.planner.overlap.sp_dgrad_shares`)
        add("tp all-gather (weight-gradient input)", "all_gather", hidden_msg, lay.tp, 1, 2 * layers_here * m,
            "micro-batch", dgrad_shares=sp_dgrad_shares(a, run.seq, layers_here))
    if lay.cp > 1:
        kv = 2 * lay.micro_batch * run.seq * kv_heads_per_device(a, lay.tp) * a.head_dim * act
        add("cp kv all-gather", "all_gather", kv, lay.cp, stride(lay, "cp"), (2 + rec) * layers_here * m,
            "micro-batch")
        add("cp kv reduce-scatter", "reduce_scatter", kv, lay.cp, stride(lay, "cp"), layers_here * m, "micro-batch")
    comms.extend(ep_comms(run, lay, system, m, layers_here))  # the expert all-to-alls (:mod:`roofline.planner.ep`)
    # each tensor-parallel rank sends its 1/tp of the activations to the next stage (Megatron's scatter-gather)
    add("pp send/recv", "send_recv", hidden_msg / lay.tp, lay.pp, stride(lay, "pp"), 2 * lay.interleave * m,
        "micro-batch")
    if lay.pp > 1 and lay.tp > 1 and not lay.sp:
        # ... and without sequence parallelism the receiver all-gathers the tp pieces back into the whole tensor
        # over the tensor-parallel group (Narayanan et al. 2021, section 4.1, "Scatter/gather communication
        # optimization"; Megatron-LM ``megatron/p2p_communication.py`` at 50a4b5fa: after the p2p,
        # ``mpu.gather_split_1d_tensor(tensor_recv_prev)`` = ``torch.distributed.all_gather(chunks, tensor,
        # group=get_tensor_model_parallel_group())``, on by default: ``--no-scatter-gather-tensors-in-pipeline``
        # turns it off); one per received tensor, as many as the sends.  Under sequence parallelism the received
        # piece is the sequence shard the next stage computes on: nothing to gather
        add("pp all-gather (scatter-gather)", "all_gather", hidden_msg, lay.tp, 1, 2 * lay.interleave * m,
            "micro-batch")
    return tuple(comms)


def _grad_comms(lay: Layout, system: System, cache: Cache, m: int, dense: float, expert: float, grad_bytes: int
                ) -> tuple[Comm, ...]:
    """The gradient sync, reduced over the ranks that hold the same weights: dp x cp of them (tp apart), and
    for the experts dp x cp / ep (ep groups are consecutive dp ranks; with cp as well, taken as tp apart)."""
    comms: list[Comm] = []
    add = _adder(cache, system, comms)
    replicas, expert_replicas = replicas_of(lay), replicas_of(lay, expert=True)
    groups = [("dp", dense, replicas, lay.tp), ("expert dp", expert, expert_replicas,
                                                lay.tp * lay.ep if lay.cp == 1 else lay.tp)]
    for label, held, ranks, apart in groups:
        if held > 0:
            _zero_comms(add, label, lay.zero, held, ranks, apart, m, grad_bytes)
    return tuple(comms)


def _zero_comms(add: Any, label: str, zero: int, held: float, ranks: int, stride: int, m: int,
                grad_bytes: int = GRAD_BYTES) -> None:
    """The gradient sync of ``held`` parameters over ``ranks`` as ZeRO stage ``zero`` does it (:data:`ZERO_STAGES`),
    the gradients reduced in their buffer's type (``grad_bytes``: fp32 main gradients are all-reduced in fp32)."""
    grads, weights = grad_bytes * held, WEIGHT_BYTES * held
    if zero == 0:
        add(f"{label} grad all-reduce", "all_reduce", grads, ranks, stride, 1, "step", held)
    elif zero == 1:
        add(f"{label} grad reduce-scatter", "reduce_scatter", grads, ranks, stride, 1, "step", held)
        add(f"{label} weight all-gather", "all_gather", weights, ranks, stride, 1, "step", held)
    elif zero == 2:
        add(f"{label} grad reduce-scatter", "reduce_scatter", grads, ranks, stride, m, "micro-batch", held)
        add(f"{label} weight all-gather", "all_gather", weights, ranks, stride, 1, "step", held)
    else:
        add(f"{label} fsdp weight all-gather", "all_gather", weights, ranks, stride, 2 * m, "micro-batch", held)
        add(f"{label} fsdp grad reduce-scatter", "reduce_scatter", grads, ranks, stride, m, "micro-batch", held)


def layouts(run: TrainingRun, system: System, *, micro_batches: tuple[int, ...] | None = None,
            zeros: tuple[int, ...] = (0, 1, 2, 3), recomputes: tuple[str, ...] = RECOMPUTE,
            max_cp: int | None = None, interleaves: tuple[int, ...] | None = None,
            overlap: tuple[bool, ...] = (True, False, True, True), sp: bool = True,
            short_edges: bool = True, etp: int = 0) -> Iterator[Layout]:
    """Every layout that divides ``system``, over the space published runs use: tp within a node; cp every
    divisor of the devices left that splits the sequence into ``2 cp`` equal chunks (Megatron-Core's
    load-balanced causal context parallelism; Llama 3's 128k stage runs cp 16), up to ``max_cp``, and the
    device's shard into tp (sequence parallelism); pp every
    divisor up to the layers (uneven splits: :func:`~roofline.planner.layout.stage_layers`); ep dividing the
    experts and dp; micro-batches of every size dividing the per-replica batch (or ``micro_batches``);
    interleaving over every ``v`` dividing each stage's layers, the first and the last stage allowed one layer
    short of a multiple of ``v`` (its embedding or loss chunk a layer lighter, as Llama 3's 405B pipeline:
    :func:`~roofline.planner.layout.short_edge`) (or those of ``interleaves`` that do) where the micro-batches
    are a multiple of pp; each ZeRO stage and recomputation.  ``overlap``: the forecast's (dp, tp, pp, ep) overlap
    switches (:mod:`roofline.planner.overlap`), the same for every layout; ``sp``: sequence parallelism with
    tp (off: a framework without it, Megatron-LM before Korthikanti et al. 2022); ``short_edges``: the
    one-layer-short edge stages under interleaving (off: only ``v`` dividing every stage, a framework whose
    interleaved schedule needs equal chunks); ``etp``: expert tensor parallelism (0: as tp; :func:`roofline.planner.ep.ep_group`)."""
    for shape in shapes(run, system, "train", {"max_cp": max_cp, "sp": sp}):  # tp, cp, pp, dp, ep: planner.dims
        if not etp or (shape["tp"] % etp == 0 and (shape["tp"] * shape["cp"] * shape["dp"]) % (etp * shape["ep"]) == 0):
            yield from _layouts_of(run, shape, micro_batches, zeros, recomputes, interleaves, overlap, sp, short_edges,
                                   etp)


def _layouts_of(run: TrainingRun, shape: dict[str, Any], micro_batches: tuple[int, ...] | None,
                zeros: tuple[int, ...], recomputes: tuple[str, ...], interleaves: tuple[int, ...] | None,
                overlap: tuple[bool, ...], sp: bool = True, short_edges: bool = True, etp: int = 0
                ) -> Iterator[Layout]:
    """The layouts of one choice of the parallel dimensions' sizes (``shape``: :func:`~roofline.planner.dims.shapes`):
    each micro-batch, interleaving, ZeRO stage and recomputation."""
    dp, pp = shape["dp"], shape["pp"]
    per_replica = run.global_batch // dp
    split = stage_layers(run.arch.layers, pp)
    fit = fitting_interleaves(split) if short_edges else tuple(v for v in divisors(math.gcd(*split))
                                                               if v == 1 or pp > 1)
    vs = [v for v in (interleaves or fit) if v in fit]
    overlap_dp, overlap_tp, overlap_pp, *more = overlap  # (dp, tp, pp[, ep])
    for mb in (micro_batches or divisors(per_replica)):
        m = per_replica // mb if per_replica % mb == 0 else 0
        if not m or (pp > 1 and m < pp):
            continue
        for v in vs:
            if v > 1 and m % pp:
                continue
            for zero in zeros:
                for rec in recomputes:
                    yield Layout(**shape, zero=zero, micro_batch=mb, sp=sp, recompute=rec, interleave=v,
                                 overlap_dp=overlap_dp, overlap_tp=overlap_tp, overlap_pp=overlap_pp,
                                 overlap_ep=more[0] if more else True, etp=etp)
