"""A parallel layout of an LLM step over a system's devices, and the facts every estimate of one derives.

:class:`Layout` splits ``devices = tp x cp x pp x dp`` ways (ranks numbered tp fastest, then cp, dp, pp, as
Megatron-LM does; ``ep`` carves expert groups out of dp; the dimensions are declared in
:data:`roofline.planner.dims.DIMS`, one int field here each) with a ZeRO stage, micro-batch, recomputation and
interleaving; :func:`members_per_node` places a group's ranks on the nodes and :func:`members_per_domain` on the
scale-up domains; :class:`Comm` is one kind of collective in a step.  The search over layouts is :mod:`roofline.planner.search`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError
from roofline.core.fileio import shown
from roofline.hardware.system import System
from roofline.planner.dims import describe as describe_dims
from roofline.planner.dims import devices as devices_of
from roofline.planner.dims import names as dim_names


@dataclass(frozen=True)
class Layout:
    """How a step is split over devices (see :mod:`roofline.planner`); tp .. ep are the parallel dimensions of
    :data:`roofline.planner.dims.DIMS`."""

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
    overlap: float = 0.0  # serving: share of communication hidden behind compute (training: the rules below)
    stages: tuple[int, ...] | None = None  # layers per pipeline stage (None: :func:`stage_layers`' split)
    # the forecast's overlap rules (training; :mod:`roofline.planner.overlap`)
    overlap_dp: bool = True
    overlap_tp: bool = False
    overlap_pp: bool = True
    overlap_ep: bool = True  # the expert all-to-alls behind another micro-batch's compute (planner.overlap)
    etp: int = 0  # expert tensor parallelism (0: not given; the dispatch as etp 1, planner.ep.ep_group)
    # the pipeline split as Megatron-Core's flags state it (:data:`PIPELINE_KEYS`, :mod:`roofline.planner.stages`)
    first_layers: int = 0  # --decoder-first-pipeline-num-layers (0: not given)
    last_layers: int = 0  # --decoder-last-pipeline-num-layers
    embed_split: bool = False  # --account-for-embedding-in-pipeline-split
    loss_split: bool = False  # --account-for-loss-in-pipeline-split
    capacity: float = 0.0  # MoE expert capacity factor, --moe-expert-capacity-factor (0: dropless)
    dispatcher: str = "deepep"  # the expert all-to-all's library: deepep or alltoall (NCCL; planner.ep.DISPATCHERS)

    @property
    def devices(self) -> int:
        return devices_of(self)

    def describe(self) -> str:
        parts = describe_dims(self)
        parts += [f"etp{self.etp}"] if self.etp else []
        parts += [f"zero{self.zero}", f"mb{self.micro_batch}", self.recompute]
        parts += [f"v{self.interleave}"] if self.interleave > 1 else []
        parts += [f"stages={compact_stages(self.stages)}"] if self.stages else []
        parts += [f"first={self.first_layers}"] if self.first_layers else []
        parts += [f"last={self.last_layers}"] if self.last_layers else []
        parts += [k for k, on in (("embed-split", self.embed_split), ("loss-split", self.loss_split)) if on]
        parts += [f"capacity={self.capacity:g}"] if self.capacity else []
        parts += [f"dispatcher={self.dispatcher}"] if self.dispatcher != "deepep" else []
        return " ".join(parts)


def compact_stages(stages: tuple[int, ...]) -> str:
    """(7, 8, 8, 8, 7) -> '7/8x3/7': layers per stage, a run of equal stages as NxK (what ``stages=`` reads)."""
    runs: list[list[int]] = []
    for n in stages:
        if runs and runs[-1][0] == n:
            runs[-1][1] += 1
        else:
            runs.append([n, 1])
    return "/".join(f"{n}x{k}" if k > 1 else str(n) for n, k in runs)



#: the keys the search varies: naming all of them (or sp=/stages=, which it does not vary) times one layout
SEARCHED = (*dim_names(), "zero", "micro_batch", "recompute", "interleave")
#: ``--layout`` KEY -> the Layout field it sets: each parallel dimension of :mod:`roofline.planner.dims` by name
LAYOUT_KEYS = {**{d: d for d in dim_names()}, "zero": "zero", "mb": "micro_batch", "micro_batch": "micro_batch",
               "recompute": "recompute", "interleave": "interleave", "sp": "sp", "stages": "stages", "v": "interleave",
               "etp": "etp"}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
#: Megatron-Core's pipeline-split flags and MoE capacity factor as ``--layout`` keys (none searched; each names one
#: layout): ``first=N`` ``--decoder-first-pipeline-num-layers N``, ``last=N`` ``--decoder-last-pipeline-num-layers
#: N``, ``embed-split`` ``--account-for-embedding-in-pipeline-split``, ``loss-split``
#: ``--account-for-loss-in-pipeline-split`` (bare, or =true/false), ``capacity=F`` ``--moe-expert-capacity-factor F``,
#: ``dispatcher=deepep|alltoall`` ``--moe-token-dispatcher-type flex`` with DeepEP, or ``alltoall``
PIPELINE_KEYS = {"first": "first_layers", "last": "last_layers", "embed-split": "embed_split",
                 "loss-split": "loss_split", "capacity": "capacity", "dispatcher": "dispatcher"}
LAYOUT_KEYS.update(PIPELINE_KEYS)
_FLAGS = ("sp", "embed_split", "loss_split")


def parse_stages(part: str, value: str) -> tuple[int, ...]:
    """'7/8x14/7' -> (7, 8, ..., 8, 7): layers per stage, 'NxK' for K stages of N (``part``: the ``--layout``
    item, for the error)."""
    from roofline.core.limits import check_work, max_stages

    out: list[int] = []
    top = max_stages()
    for item in value.strip().split("/"):
        n, _, k = item.partition("x")
        try:
            layers, times = int(n), int(k) if k else 1
        except ValueError:
            raise RooflineError(f"--layout {part!r}: stages= is layers per stage, e.g. 7/8x14/7") from None
        if layers < 0 or times < 1:  # 0: a virtual stage of only the embedding or the loss (pp x v entries)
            raise RooflineError(f"--layout {part!r}: stages= needs whole numbers >= 1 (0 only for an edge of pp x v "
                                "virtual stages)")
        check_work(f"--layout {part[:40]!r}: stages=", len(out) + times, top, "ROOFLINE_MAX_STAGES", " stages")
        out.extend([layers] * times)
    return tuple(out)


def _layout_value(part: str, key: str, field: str, value: str) -> object:
    """One ``--layout`` item's value, checked."""
    if field in ("recompute", "dispatcher"):  # checked with the layout (planner.train.check, planner.ep)
        return value.strip()
    if field == "stages":
        return parse_stages(part, value)
    if field in _FLAGS:
        flag = value.strip().lower()
        if flag not in _TRUE + _FALSE:
            raise RooflineError(f"--layout {part!r}: {key} must be true or false")
        return flag in _TRUE
    if field == "capacity":
        try:
            factor = float(value)
        except ValueError:
            factor = -1.0
        if not 0 < factor < math.inf:
            raise RooflineError(f"--layout {part!r}: capacity is the experts' capacity factor, a number > 0 (e.g. 1.25)")
        return factor
    try:
        number = int(value)
    except ValueError:
        raise RooflineError(f"--layout {part!r}: {key} must be a whole number") from None
    if field == "etp" and number < 1:  # 0 is the default's marker inside Layout, never a value to give
        raise RooflineError(f"--layout {part!r}: etp is the experts' tensor-parallel size, a whole number >= 1 "
                            "(leave it out for the default)")
    return number


def layout_keys(text: str, overlap: float = 0.0) -> dict[str, Any]:
    """The Layout fields ``--layout`` names ('tp=8,pp=2,dp=4,zero=1,recompute=full'; with ``overlap``), checked:
    a bad key or value, or two keys that conflict, is one line.  ``stages=`` sets pp to its length, unless pp and an
    interleave v are named and it has pp x v entries: then they are the virtual stages in model order."""
    values: dict[str, Any] = {"overlap": overlap}
    given: dict[str, str] = {}
    parts = [x.strip() for x in str(text).split(",")]
    if not all(parts):
        raise RooflineError(f"--layout {shown(text)}: an empty item; give KEY=VALUE pairs separated by single "
                            "commas (tp=8,pp=2)")
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep and key.strip() in ("embed-split", "loss-split"):  # a bare flag: on
            sep, value = "=", "true"
        if not sep or key.strip() not in LAYOUT_KEYS:
            raise RooflineError(f"--layout {part!r}: expected KEY=VALUE with KEY one of {', '.join(sorted(LAYOUT_KEYS))}")
        field = LAYOUT_KEYS[key.strip()]
        if field in given:
            raise RooflineError(f"--layout: {given[field]!r} and {part!r} conflict (both set {field})")
        given[field] = part
        values[field] = _layout_value(part, key.strip(), field, value)
    v = values.get("interleave", 1)
    if "stages" in values and v > 1 and values.get("pp", 0) * v == len(values["stages"]):
        pass  # pp x v virtual stages in model order (:func:`roofline.planner.stages.split`)
    elif "stages" in values:
        if 0 in values["stages"]:
            raise RooflineError(f"--layout {given['stages']!r}: stages= needs whole numbers >= 1 (0 only for an edge "
                                "of pp x v virtual stages)")
        if "pp" in values and values["pp"] != len(values["stages"]):
            raise RooflineError(f"--layout: {given['pp']!r} and {given['stages']!r} conflict "
                                f"({len(values['stages'])} stages)")
        values["pp"] = len(values["stages"])
    return values


def parse_layout(text: str, overlap: float = 0.0) -> Layout:
    """'tp=8,pp=2,dp=4,zero=1,recompute=full' -> Layout (:func:`layout_keys`).

    >>> parse_layout("tp=8,stages=7/8x2/7").describe()
    'tp8 pp4 dp1 zero1 mb1 selective stages=7/8x2/7'
    """
    return Layout(**layout_keys(text, overlap))


def names_one_layout(keys: dict[str, Any]) -> bool:
    """Whether ``--layout``'s keys (:func:`layout_keys`) time one layout rather than fix part of a search: sp=
    or stages= named (the search varies neither), or every searched key."""
    return any(k in keys for k in ("sp", "stages", *PIPELINE_KEYS.values())) or all(k in keys for k in SEARCHED)


@dataclass(frozen=True)
class Comm:
    """One kind of collective in the step: its total time per step, the tiers it crosses, and the bytes
    of one call (each device's message) and how many calls a step makes."""

    name: str
    time: float
    tiers: tuple[str, ...]
    overlappable_with: str  # 'micro-batch' or 'step'
    message_bytes: float = 0.0
    calls: float = 0.0
    forecast: float = 0.0  # expected seconds per step: ``time``, its NVLink parts over the device's NCCL efficiency
    params: float = 0.0  # parameters a gradient or weight sync carries per call (0: not one)
    #: for a collective each call of which hides behind one GEMM's input gradient (sequence parallelism's backward
    #: all-gathers, :func:`roofline.planner.overlap.exposed`): per call of one layer, the share of one micro-batch's
    #: backward that GEMM's input gradient takes; () for every other collective
    dgrad_shares: tuple[float, ...] = ()
    #: for the expert all-to-alls: the attention block's share of an MoE layer's forward FLOPs, what 1F1B's A2A
    #: overlap pairs each call with (:func:`roofline.planner.overlap.exposed`); 0: the whole partner phase
    attention_share: float = 0.0

    @property
    def bytes_per_step(self) -> float:
        return self.message_bytes * self.calls


@lru_cache(maxsize=4096)
def stage_layers(layers: int, pp: int, stages: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """Layers per pipeline stage: ``stages`` as given, else ``layers / pp`` each, and when pp does not
    divide them the first and last stages take one fewer (then the second and the second-to-last, ...), as
    Llama 3 does (Dubey et al. 2024, section 3.3.2: 126 layers on 16 stages, "one Transformer layer each
    from the first and the last stages" removed for the embedding and the output layer) and Megatron-LM's
    ``--decoder-first-pipeline-num-layers`` / ``--decoder-last-pipeline-num-layers`` allow.

    >>> stage_layers(126, 16)[:3], stage_layers(126, 16)[-2:], sum(stage_layers(126, 16))
    ((7, 8, 8), (8, 7), 126)
    """
    if stages is not None:
        if len(stages) != pp:
            raise RooflineError(f"stages= gives {len(stages)} stages; pp is {pp}")
        if any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in stages):
            raise RooflineError(f"stages= must be whole numbers of layers >= 1, got {'/'.join(map(str, stages))}")
        if sum(stages) != layers:
            raise RooflineError(f"stages={'/'.join(map(str, stages))} sums to {sum(stages)} layers; the model has "
                                f"{layers}")
        return tuple(stages)
    if pp > layers:
        raise RooflineError(f"pp {pp} is more stages than the {layers} layers")
    base = -(-layers // pp)
    out = [base] * pp
    ends = [k // 2 if k % 2 == 0 else pp - 1 - k // 2 for k in range(pp)]  # 0, pp-1, 1, pp-2, ...
    for k in range(base * pp - layers):  # fewer than pp: each stage gives up at most one
        out[ends[k]] -= 1
    return tuple(out)


def short_edge(split: tuple[int, ...], interleave: int, stage: int) -> bool:
    """Whether pipeline stage ``stage`` of ``split`` runs ``interleave`` chunks one of which is a layer short:
    the first or the last stage (pp > 1) with one layer fewer than a multiple of ``v``, its first chunk holding
    the embedding (first stage) or its last the output projection and loss (last stage) in place of the missing
    layer.  Llama 3 (Dubey et al. 2024, section 3.3.2, "Pipeline parallelism improvements"): "we reduce one
    Transformer layer each from the first and the last stages, respectively. This means that the first model
    chunk on the first stage has only the embedding, and the last model chunk on the last stage has only output
    projection and loss calculation", with "an interleaved schedule (Narayanan et al., 2021) with V pipeline
    stages on one pipeline rank": 126 layers over pp 16 as 7/8x14/7, V = 8 chunks of one layer.

    >>> short_edge((7, 8, 8, 7), 8, 0), short_edge((7, 8, 8, 7), 8, 1), short_edge((7, 8, 8, 7), 1, 0)
    (True, False, False)
    """
    n, pp = split[stage], len(split)
    return interleave > 1 and pp > 1 and stage in (0, pp - 1) and n % interleave == interleave - 1


def interleave_fits(split: tuple[int, ...], interleave: int) -> bool:
    """Whether ``interleave`` chunks per device split every stage of ``split``: ``v`` divides each stage's
    layers, or the first or the last stage is one layer short of a multiple of ``v`` (:func:`short_edge`)."""
    return all(n % interleave == 0 or short_edge(split, interleave, k) for k, n in enumerate(split))


@lru_cache(maxsize=4096)
def interleaves(split: tuple[int, ...]) -> tuple[int, ...]:
    """Every ``v`` with which :func:`interleave_fits` (1 always; more only for pp > 1): with two stages of 8,
    v 3 and 9 as well, each stage then one layer short (3 chunks of 3, or 9 of 1, the first stage's first and
    the last's last holding the embedding and the loss).

    >>> interleaves((7, 8, 8, 7)), interleaves((8, 8)), interleaves((6, 8, 8, 7))
    ((1, 2, 4, 8), (1, 2, 3, 4, 8, 9), (1, 2))
    """
    if len(split) < 2:
        return (1,)
    return tuple(v for v in range(1, max(split) + 2) if interleave_fits(split, v))


def in_flight(pp: int, interleave: int, micro_batches: int, stage: int, layers: int = 0) -> float:
    """Micro-batches whose activations pipeline stage ``stage`` (0 first) holds at its peak, in units of all
    its layers: 1F1B, ``min(m, pp - stage)`` (Narayanan et al. 2021, section 2.2.1: the first stage holds
    pp); interleaved over ``v`` chunks, its warm-up micro-batches ``2 (pp - stage - 1) + (v - 1) pp`` plus
    the one in flight, each of one chunk (1/v of its layers) (Megatron-LM's interleaved schedule,
    Narayanan et al. 2021 section 2.2.2; on the first stage ``pp (1 + (pp - 1) / (pp v))``, Korthikanti et
    al. 2022 section 4.2.3).

    ``layers``: the stage's layers, where it is an edge stage one layer short (:func:`short_edge`: ``n = c v -
    1`` layers in ``v`` chunks of ``c``, the embedding's chunk 0 on the first stage or the loss's chunk v - 1
    on the last holding ``c - 1``): the peak of the layers in flight over the schedule
    (:func:`_interleaved_peak`), over ``n``.

    >>> in_flight(4, 1, 8, 0), in_flight(4, 2, 8, 0), 4 * (1 + 3 / 8)
    (4, 5.5, 5.5)
    """
    if interleave == 1:
        return min(micro_batches, pp - stage)
    if layers and stage in (0, pp - 1) and layers % interleave == interleave - 1:
        return _interleaved_peak(pp, interleave, micro_batches, stage, (layers + 1) // interleave) / layers
    chunks = 2 * (pp - stage - 1) + (interleave - 1) * pp + 1
    return min(micro_batches * interleave, chunks) / interleave


@lru_cache(maxsize=4096)
def _interleaved_peak(pp: int, v: int, m: int, stage: int, chunk: int, light: bool = True) -> float:
    """The most layers whose activations stage ``stage`` holds over Megatron-LM's interleaved schedule, its
    ``v`` chunks of ``chunk`` layers, with ``light`` the edge one (chunk 0 on the first stage, v - 1 on the
    last) one layer fewer.  The order is ``forward_backward_pipelining_with_interleaving`` in Megatron-LM's
    ``schedules.py``: ``W = 2 (pp - stage - 1) + (v - 1) pp`` warm-up forwards (all ``m v`` when m = pp), then
    a forward and a backward per step, then the remaining backwards; forward ``i`` runs chunk ``(i mod pp v)
    // pp``, backward ``j`` chunk ``v - 1 - (j mod pp v) // pp`` (``get_model_chunk_id``).

    >>> _interleaved_peak(4, 2, 8, 0, 3, False) / 6, in_flight(4, 2, 8, 0)   # uniform chunks: the closed form
    (5.5, 5.5)
    """
    edge = (0 if stage == 0 else v - 1) if light else -1
    weight = [chunk - (k == edge) for k in range(v)]
    total = m * v
    warm = total if m == pp else min(2 * (pp - stage - 1) + (v - 1) * pp, total)
    held = peak = 0
    for f in range(total):  # forward f, and from the warm-up's end each forward's paired backward
        held += weight[(f % (pp * v)) // pp]
        peak = max(peak, held)
        if f >= warm:
            b = f - warm
            held -= weight[v - 1 - (b % (pp * v)) // pp]
    return float(peak)


class Facts:
    """What an estimate of either kind derives from its memory and its time split."""

    memory: dict[str, float]
    system: System
    layout: Layout

    def parts(self) -> dict[str, float]:
        raise NotImplementedError

    @property
    def tokens_per_second(self) -> float:
        raise NotImplementedError

    def usd_per_million_tokens(self, price_per_device_hour: float) -> float:
        """What a million tokens cost at ``price_per_device_hour`` (USD) for each of the layout's devices: the
        devices' price per second over the tokens per second (training: the step's; serving: output tokens)."""
        return price_per_device_hour * self.layout.devices / 3600 / self.tokens_per_second * 1e6

    @property
    def memory_total(self) -> float:
        return sum(self.memory.values())

    @property
    def capacity(self) -> float:
        c = self.system.device.memory_capacity
        return float(c) if c else math.inf

    @property
    def fits(self) -> bool:
        return self.memory_total <= self.capacity

    def fit_clause(self) -> str:
        """'does not fit: 84.21 GiB per device on pipeline stage 2 of 16 (weights 12 GiB, ...), 79.15 GiB on the
        device; ' for a layout past memory, else ''."""
        from roofline.core.units import format_gib

        if self.fits:
            return ""
        pp = getattr(getattr(self, "layout", None), "pp", 1)
        stage = getattr(self, "memory_stage", None)
        where = f" on pipeline stage {stage + 1} of {pp}" if stage is not None and pp > 1 else ""
        parts = ", ".join(f"{k} {format_gib(v)}" for k, v in self.memory.items())
        return (f"does not fit: {format_gib(self.memory_total)} per device{where} ({parts}), "
                f"{format_gib(self.capacity)} on the device; ")

    @property
    def binding(self) -> str:
        """What the time goes to most: 'ops' (their roofline time), 'bubble', a collective, 'optimizer'."""
        parts = self.parts()
        return max(parts, key=lambda k: parts[k])


def check_sizes(lay: Layout) -> None:
    for label in (*dim_names(), "micro_batch", "interleave"):
        v = getattr(lay, label)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise RooflineError(f"{label} must be a whole number >= 1, got {v!r}")
    if not 0.0 <= lay.overlap <= 1.0:
        raise RooflineError(f"overlap must be from 0 to 1, got {lay.overlap!r}")


@lru_cache(maxsize=4096)
def members_per_node(stride: int, size: int, devices_per_node: int) -> int:
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



def members_per_domain(stride: int, size: int, system: System) -> int:
    """How many members of each group (``size`` ranks ``stride`` apart, every such group of the system's devices)
    share each scale-up domain of ``system`` (NVL72 racks, the last one possibly partial), for the collective
    cost's ``per_domain``: the count where every group holds the same number in every domain it touches.  A
    group split unevenly over the domains (256 GPUs on racks of 72: 72/72/72/40; 16 consecutive ranks across a
    rack's edge at 72) is costed on the slower tier: its members per *node* (the tray's NVLink reduction first,
    then the cluster tier between nodes), as a ring over it runs at its slowest link -- instead of refused.

    >>> from roofline.catalog import get_system
    >>> s = get_system("gb200-nvl72", nodes=64)      # 256 GPUs: racks of 72, 72, 72 and 40
    >>> members_per_domain(1, 8, s), members_per_domain(1, 16, s), members_per_domain(8, 32, s)
    (8, 4, 1)
    """
    per_node = members_per_node(stride, size, system.devices_per_node)
    if system.domain == system.devices_per_node:  # the scale-up domain is the node: no ranks to count
        return per_node
    return max(per_node, _even_over(stride, size, system.domain, system.devices))


#: most ranks :func:`_even_over` counts one by one (8 MiB of int64 each array); a larger period is costed on the
#: slower tier, as an uneven split is (a million-node plan stays bounded: tests/hostile plan/a-million-nodes)
EVEN_OVER_MAX_RANKS = 1 << 20


@lru_cache(maxsize=4096)
def _even_over(stride: int, size: int, domain: int, devices: int) -> int:
    """Members of each group per domain of ``domain`` consecutive ranks when every group holds the same number in
    every domain it touches; 0 when not (or when the groups do not tile the devices)."""
    if size <= 1:
        return 1
    span = stride * size
    lcm = math.lcm(span, domain)
    n = lcm if devices % lcm == 0 else devices  # every domain full: one period of both tilings is enough
    if n % span or n > EVEN_OVER_MAX_RANKS:  # past the count: the slower tier (the caller's members per node)
        return 0
    r = np.arange(n)
    group = (r // span) * stride + r % stride
    counts = np.unique(group * (n // domain + 1) + r // domain, return_counts=True)[1]
    return int(counts[0]) if counts.min() == counts.max() else 0
