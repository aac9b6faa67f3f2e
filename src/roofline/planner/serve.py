"""Serving on a system: one layout's decode step and time to first token per device, and every layout.

A replica of tp x cp x pp devices decodes ``batch`` sequences, pp micro-batches in flight (one per stage);
dp replicas, an MoE model's routed experts split over ep of them (see :mod:`roofline.planner`).
Requests arriving over time, queueing, prefill/decode sharing iterations, the KV-cache limit and latency
percentiles are :mod:`roofline.serving`'s (``roofline serve``), which simulates a scheduler over them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from roofline.core.errors import RooflineError
from roofline.core.units import format_share
from roofline.hardware.system import System
from roofline.llm.config import Arch
from roofline.llm.sizes import activation_bytes, kv_cache_bytes, weight_bytes_resident
from roofline.llm.spec import Precisions, ServingRun, make_spec
from roofline.llm.table import EXP, build_table, check_tp, kv_heads_per_device
from roofline.planner.cache import Cache
from roofline.planner.dims import describe as describe_dims
from roofline.planner.dims import device_factors, shapes, stride
from roofline.planner.layout import Comm, Facts, Layout, check_sizes, members_per_domain, members_per_node


@dataclass(frozen=True)
class ServingEstimate(Facts):
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

    def headline(self) -> str:
        """The answer for this layout, the deciding fact first, one time basis per clause: per output token
        (with the communication the layout exposes, and with all of it hidden: the bound) and the matching
        tokens/s over the system, then TTFT."""
        from roofline.core.units import format_count, format_seconds

        lay = self.layout
        return (f"{self.fit_clause()}{self.describe()}: per output token {format_seconds(self.time)} "
                f"({format_share(lay.overlap)} of communication hidden), {format_seconds(self.bound)} bound (all "
                f"hidden); {format_count(self.tokens_per_second)} output tokens/s over {lay.dp} replica(s) of batch "
                f"{self.run.batch:,}; TTFT {format_seconds(self.ttft)} (prompt {self.run.prompt:,})")

    def describe(self) -> str:
        return " ".join(describe_dims(self.layout))


def check_serving(run: ServingRun, layout: Layout, system: System) -> None:
    a, lay = run.arch, layout
    check_sizes(lay)
    if lay.interleave != 1 or lay.stages is not None:
        raise RooflineError(f"{'interleave' if lay.interleave != 1 else 'stages='} is a training pipeline's; serving "
                            f"layouts split {device_factors()} (ep)")
    if lay.devices != system.devices:
        raise RooflineError(f"layout {lay.describe()} uses {device_factors()} = {lay.devices} devices; "
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


def estimate_serving(run: ServingRun, layout: Layout, system: System, cache: Cache | None = None) -> ServingEstimate:
    """Decode and prefill of ``run`` on one replica of ``layout`` (per device)."""
    check_serving(run, layout, system)
    a, lay, d = run.arch, layout, system.devices_per_node
    cache = cache if cache is not None and cache.system is system else Cache(system)
    mb = run.batch // lay.pp
    stage = cache.serving_stage(run, lay.tp, lay.cp, lay.ep, lay.pp, mb)
    act = run.precisions.bytes()["a"]
    comms: list[Comm] = []

    def on(coll: str, nbytes: float, ranks: int, stride: int) -> tuple[float, tuple[str, ...]]:
        """One call's bound and tiers, the tier chosen by the scale-up domain the group spans."""
        return cache.collective(coll, float(nbytes), ranks, members_per_node(stride, ranks, d),
                                members_per_domain(stride, ranks, system))

    def add(label: str, coll: str, nbytes: float, ranks: int, stride: int, times: float) -> None:
        if ranks > 1 and times > 0:
            t, tiers = on(coll, nbytes, ranks, stride)
            comms.append(Comm(label, t * times, tiers, "token"))

    # per output token each stage runs its layers / pp layers for each of the pp micro-batches: per device,
    # 2 tp all-reduces per layer, 1 cp combine of the partial attention outputs per layer (fp32 values and
    # the softmax max and sum per head), 2 ep all-to-alls (dispatch, combine) per MoE layer; pp sends
    add("tp all-reduce", "all_reduce", mb * a.hidden * act, lay.tp, 1, 2 * a.layers)
    heads = a.heads // lay.tp
    add("cp attention combine", "all_reduce", mb * heads * (a.v_head_dim + 2) * 4, lay.cp, stride(lay, "cp"),
        a.layers)
    add("ep all-to-all", "all_to_all", mb * a.top_k * a.hidden * act, lay.ep, stride(lay, "ep"), 2 * a.moe_layers)
    add("pp send/recv", "send_recv", mb * a.hidden * act, lay.pp, stride(lay, "pp"), lay.pp)
    # time to first token: the prompt of one sequence, split over cp, through every stage
    prompt_msg = run.prompt / lay.cp * a.hidden * act
    t_ar = on("all_reduce", prompt_msg, lay.tp, 1)[0] if lay.tp > 1 else 0.0
    kv = 2 * run.prompt * kv_heads_per_device(a, lay.tp) * a.head_dim * act
    t_cp = on("all_gather", kv, lay.cp, stride(lay, "cp"))[0] if lay.cp > 1 else 0.0
    t_pp = on("send_recv", prompt_msg, lay.pp, stride(lay, "pp"))[0] if lay.pp > 1 else 0.0
    ttft = cache.serving_prefill(run, lay.tp, lay.cp) + a.layers * (2 * t_ar + t_cp) + (lay.pp - 1) * t_pp
    spec = make_spec(a, phase="generate", batch=run.batch, prompt=run.prompt, gen=run.gen, tp=lay.tp, flash=True)
    experts = _expert_weight_bytes(a, lay.tp, run.precisions)
    memory = {"weights": (weight_bytes_resident(spec) - experts * (1 - 1 / lay.ep)) / lay.pp,
              "kv cache": float(kv_cache_bytes(spec)) / (lay.pp * lay.cp),
              "activations": float(activation_bytes(spec, batch=mb))}
    return ServingEstimate(run, lay, system, stage, tuple(comms), ttft, memory)


def serving_layouts(run: ServingRun, system: System, *, max_cp: int = 8, overlap: float = 0.0) -> Iterator[Layout]:
    """Every tp x cp x pp x dp that divides ``system`` (tp within a scale-up domain, cp up to ``max_cp`` dividing the
    prompt, pp dividing the layers and the batch), and ep dividing the experts and dp for an MoE model."""
    for shape in shapes(run, system, "serve", {"max_cp": max_cp}):  # tp, cp, pp, dp, ep: planner.dims
        yield Layout(**shape, overlap=overlap)


def _expert_weight_bytes(a: Arch, tp: int, precisions: Precisions) -> float:
    """Bytes of every routed expert's weights on one of tp devices (0 for a dense model)."""
    if not a.experts:
        return 0.0
    eb = precisions.bytes()
    table = build_table(a, "prefill", tp)
    per = (table.coef["wq"][:, EXP] * eb.get("we", eb["wq"]) + table.coef["wu"][:, EXP] * eb["wu"]) * table.counts
    return float(per.sum()) * a.experts
