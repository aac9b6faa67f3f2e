"""Collective cost over a system's network tiers: latency steps plus bus bytes over the tier's bandwidth.

For one collective of a ``message_bytes`` buffer over ``ranks`` devices on one tier::

    t = steps x alpha + factor x message_bytes / bandwidth

* ``factor``: the nccl-tests bus-bandwidth factor (:data:`roofline.work.costs.BUS_FACTORS`: all-reduce
  2(n-1)/n; reduce-scatter, all-gather, all-to-all (n-1)/n; send/recv, broadcast 1); the message
  is the whole buffer (all-reduce's input, all-gather's output, reduce-scatter's input).
* ``steps`` (NCCL's ``src/graph/tuning.cc``): ring all-reduce 2(n-1); ring reduce-scatter /
  all-gather n-1; all-to-all n-1 (pairwise exchange); send/recv 1; tree all-reduce 2 ceil(log2 n)
  (up the tree and back down).
* ``alpha`` is the tier's per-step latency; ``bandwidth`` the tier's per-device bandwidth in one
  direction (a cluster tier's NICs are shared by the node's devices, :meth:`NetworkTier.per_device_bandwidth`).
* In-switch reduction (NVLink SHARP / NVLS, on a tier that has it, for all-reduce): each device
  sends its buffer to the switch once and receives the reduced one once, both directions at once:
  ``t = 2 x alpha + message_bytes / bandwidth``.
* A tier measured by ``roofline.bench.network`` predicts each collective it measured, at the group size
  it measured, from that collective's own fit ``alpha + bytes / bandwidth`` (a backend's own algorithm,
  not NCCL's factors); other collectives and sizes use the tier's bandwidth and latency as above.
* A torus tier (TPU ICI): a group spanning k of its dimensions runs rings on those k axes at once, so
  the bus bytes move at ``k / len(dims)`` of the chip's bandwidth (its links split over the dimensions),
  with one ring's steps per dimension.  An all-to-all on a torus is limited by the bisection of the group's
  sub-torus (:func:`_torus_all_to_all`).

The tier is chosen by the scale-up *domain* the group spans (:attr:`System.domain`), not by the node: a
group inside one domain runs on the scale-up tier even across nodes (8 ranks on 2 trays of a GB200 NVL72
stay on NVLink; on two DGX B200 they cross InfiniBand).  A collective over devices in several domains is
hierarchical (what NCCL and every large-scale framework do): all-reduce = reduce-scatter inside each
domain, all-reduce of the domain's shard across domains, all-gather inside each domain; reduce-scatter and
all-gather do their two halves; all-to-all sends (d-1)/n of the buffer inside the domain and (n-d)/n
across.  Small messages come out latency-bound, as they are.

>>> from roofline.catalog import get_system
>>> s = get_system("dgx-h100", nodes=2)
>>> c = cost("all_reduce", 1 << 30, s, ranks=16, per_node=8)
>>> [p.tier for p in c.parts], round(c.time * 1e3, 2)     # reduce-scatter, all-reduce, all-gather
(['node', 'cluster', 'node'], 6.87)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from roofline.core.errors import RooflineError
from roofline.hardware.ceilings import Interconnect
from roofline.hardware.device import Device
from roofline.hardware.system import NetworkTier, System
from roofline.work.costs import BUS_FACTORS
from roofline.work.workload import Workload

#: Collectives this model times (torch.distributed's spellings as the profiler records them map onto these).
COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "send_recv", "broadcast")
ALGORITHMS = ("ring", "tree")
#: torch.distributed's collective names (:data:`roofline.work.costs.BUS_FACTORS`' keys, as op names end) -> the
#: collective this model times; a name not here (gather, scatter, reduce) is timed as a broadcast.
CANONICAL = {
    **dict.fromkeys(("allreduce", "all_reduce", "allreduce_coalesced", "all_reduce_coalesced"), "all_reduce"),
    **dict.fromkeys(("allgather", "all_gather", "_allgather_base", "allgather_into_tensor_coalesced",
                     "all_gather_into_tensor"), "all_gather"),
    **dict.fromkeys(("reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor",
                     "reduce_scatter_tensor_coalesced"), "reduce_scatter"),
    **dict.fromkeys(("alltoall", "all_to_all", "alltoall_base", "all_to_all_single"), "all_to_all"),
    **dict.fromkeys(("send", "recv", "recvAnySource", "send_recv"), "send_recv"),
}


@dataclass(frozen=True)
class Part:
    """One stage of a collective on one tier: its steps, latency time, bytes each device sends, bandwidth time."""

    collective: str
    tier: str  # the tier's scope: 'node' or 'cluster'
    ranks: int
    steps: int
    latency: float  # seconds: steps x alpha
    link_bytes: float  # bytes each device sends over the tier (one direction)
    transfer: float  # seconds: link_bytes / per-device bandwidth

    @property
    def time(self) -> float:
        return self.latency + self.transfer


@dataclass(frozen=True)
class CollectiveCost:
    """A collective's time as the sum of its stages (one per tier it crosses, or three when hierarchical)."""

    collective: str
    message_bytes: float
    ranks: int
    parts: tuple[Part, ...]

    @property
    def time(self) -> float:
        return sum(p.time for p in self.parts)

    @property
    def latency(self) -> float:
        return sum(p.latency for p in self.parts)

    @property
    def transfer(self) -> float:
        return sum(p.transfer for p in self.parts)

    @property
    def latency_bound(self) -> bool:
        """True when the steps' latency outweighs the bytes' transfer time (a small message)."""
        return self.latency > self.transfer

    def link_bytes(self, tier: str) -> float:
        return sum(p.link_bytes for p in self.parts if p.tier == tier)


def steps(collective: str, n: int, algorithm: str = "ring") -> int:
    """Latency steps of one collective over ``n`` ranks on one tier (NCCL's step counts)."""
    if n <= 1:
        return 0
    if collective == "all_reduce":
        return 2 * math.ceil(math.log2(n)) if algorithm == "tree" else 2 * (n - 1)
    if collective == "send_recv":
        return 1
    return n - 1


def _check(collective: str, message_bytes: float, algorithm: str) -> None:
    if collective not in COLLECTIVES:
        raise RooflineError(f"collective {collective!r} is not one of {', '.join(COLLECTIVES)}")
    if algorithm not in ALGORITHMS:
        raise RooflineError(f"algorithm {algorithm!r} is not one of {', '.join(ALGORITHMS)}")
    if isinstance(message_bytes, bool) or not isinstance(message_bytes, (int, float)):
        from roofline.core import arguments as arg

        raise arg.type_error("collectives", "message_bytes", "a finite number >= 0", message_bytes)
    if not (message_bytes >= 0 and math.isfinite(message_bytes)):
        raise RooflineError(f"message bytes must be a finite number >= 0, got {message_bytes!r}")


def _check_group(ranks: object, per_node: object) -> None:
    """The API boundary (:mod:`roofline.core.arguments`): ``ranks`` a whole number >= 1, ``per_node`` one or None."""
    from roofline.core import arguments as arg

    arg.positive_int(ranks, "collectives.cost", "ranks")
    arg.optional_int(per_node, "collectives.cost", "per_node")


def _factor(collective: str, n: int) -> float:
    return BUS_FACTORS["send" if collective == "send_recv" else collective](n) if n > 1 else 0.0


def on_tier(collective: str, message_bytes: float, ranks: int, tier: NetworkTier, devices_per_node: int, *,
            algorithm: str = "ring") -> Part:
    """One collective over ``ranks`` devices that all talk through ``tier``."""
    _check(collective, message_bytes, algorithm)
    bw = tier.per_device_bandwidth(devices_per_node)
    if ranks <= 1:
        return Part(collective, tier.scope, ranks, 0, 0.0, 0.0, 0.0)
    m = tier.measured.get(collective)
    if m is not None and m.ranks == ranks:  # measured on this tier with this many ranks: its own fit
        large = message_bytes >= m.split_bytes
        alpha = m.alpha2 if large else m.alpha
        return Part(collective, tier.scope, ranks, steps(collective, ranks, algorithm), alpha,
                    _factor(collective, ranks) * message_bytes, m.time(message_bytes) - alpha)
    if collective == "all_reduce" and tier.in_switch_reduction:
        return Part(collective, tier.scope, ranks, 2, 2 * tier.latency, message_bytes, message_bytes / bw)
    if tier.topology == "torus" and tier.dims and collective in ("all_reduce", "reduce_scatter", "all_gather"):
        return _torus(collective, message_bytes, ranks, tier, bw)
    if tier.topology == "torus" and tier.dims and collective == "all_to_all":
        return _torus_all_to_all(message_bytes, ranks, tier, bw)
    n_steps = steps(collective, ranks, algorithm)
    sent = _factor(collective, ranks) * message_bytes
    return Part(collective, tier.scope, ranks, n_steps, n_steps * tier.latency, sent, sent / bw)


def _torus(collective: str, message_bytes: float, ranks: int, tier: NetworkTier, bw: float) -> Part:
    """A group spanning k of the torus's dimensions runs its rings on those k axes at once (XLA's multi-axis
    collectives; How to Scale Your Model: T = V / (W x axes)): the nccl-tests bytes over k / len(dims) of the
    chip's bandwidth, and one ring's steps per dimension."""
    dims = _torus_dims(tier.dims, ranks)
    n_steps = sum(steps("reduce_scatter", k) for k in dims) * (2 if collective == "all_reduce" else 1)
    sent = _factor(collective, ranks) * message_bytes
    used = bw * min(len(dims), len(tier.dims)) / len(tier.dims)
    return Part(collective, tier.scope, ranks, n_steps, n_steps * tier.latency, sent, sent / used)


def _torus_all_to_all(message_bytes: float, ranks: int, tier: NetworkTier, bw: float) -> Part:
    """An all-to-all on a torus is limited by its bisection, not by each chip's links: every device sends
    ``message_bytes / n`` to each of the ``n`` in the group, so ``n/2 x n/2 x message / n = n x message / 4``
    bytes cross the cut through the group's longest dimension ``L`` (How to Scale Your Model, part 3).  That
    cut severs the ``n / L`` rings along it twice each where the dimension wraps round (a full torus axis of more
    than 2), once otherwise; each link carries a chip's bandwidth over its ``2 x len(dims)`` links.  The time
    is the larger of the bisection's and each chip's own injection (the nccl-tests bytes over ``bw``)."""
    dims = _torus_dims(tier.dims, ranks)
    longest = max(dims)
    wraps = 2 if longest > 2 and longest in tier.dims else 1
    links = wraps * ranks // longest
    link_bw = bw / (2 * len(tier.dims))
    sent = _factor("all_to_all", ranks) * message_bytes
    transfer = max(ranks * message_bytes / 4 / (links * link_bw), sent / bw)
    n_steps = steps("all_to_all", ranks)
    return Part("all_to_all", tier.scope, ranks, n_steps, n_steps * tier.latency, sent, transfer)


def _torus_dims(dims: tuple[int, ...], ranks: int) -> list[int]:
    """The torus dimensions a group of ``ranks`` spans (filled in order; what the group's size leaves)."""
    out, left = [], ranks
    for d in dims:
        if left <= 1:
            break
        take = math.gcd(d, left)
        if take > 1:
            out.append(take)
            left //= take
    if left > 1:
        out.append(left)
    return out


def canonical(name: str) -> str:
    """The collective an op named ``name`` runs: its last dotted part (``layers.attn.all_reduce``,
    ``nccl:all_reduce``) through :data:`CANONICAL`; anything else is timed as a broadcast (one hop, the
    message once)."""
    tail = name.rsplit(".", 1)[-1].rsplit(":", 1)[-1]
    return CANONICAL.get(tail, "broadcast")


def link_tier(link: Interconnect) -> NetworkTier:
    """A device's interconnect as the node tier it stands for (a switch: every device one hop from every
    other, at the link's bandwidth per direction, its per-hop latency, its in-switch reduction)."""
    return NetworkTier(link.name or "interconnect", "node", link.bandwidth, link.latency, "switch",
                       in_switch_reduction=link.in_switch_reduction, provenance=link.provenance)


def on_link(collective: str, link_bytes: float, ranks: int, link: Interconnect) -> Part:
    """One collective of an op of the per-op view (:func:`roofline.engine.analysis.analyze`) over ``ranks`` devices
    joined by ``link``: ``link_bytes`` are the op's bytes, the message x its bus factor (what
    :func:`roofline.work.costs.collective` and the LLM model count), so the message is ``link_bytes / factor``.
    The same :func:`on_tier` the planner's :func:`cost` uses: steps x latency + bus bytes / bandwidth.

    >>> from roofline.hardware.ceilings import Interconnect
    >>> p = on_link("all_reduce", 2 * 7 / 8 * 8192, 8, Interconnect("NVLink", 300e9, latency=0.6e-6))
    >>> p.steps, round(p.latency * 1e6, 2), round(p.transfer * 1e9, 1)   # 2(8-1) hops x 0.6 us; 14336 B / 300 GB/s
    (14, 8.4, 47.8)
    """
    if ranks <= 1:
        return Part(collective, "node", ranks, 0, 0.0, link_bytes, link_bytes / link.bandwidth)
    factor = _factor(collective, ranks)
    message = link_bytes / factor if factor > 0 else link_bytes
    return on_tier(collective, message, ranks, link_tier(link), ranks)


def cost(collective: str, message_bytes: float, system: System, *, ranks: int, per_node: int | None = None,
         per_domain: int | None = None, algorithm: str = "ring") -> CollectiveCost:
    """One collective over a group of ``ranks`` devices, ``per_node`` of them in each node (default: as many
    as fit, ``min(ranks, devices_per_node)``) and ``per_domain`` in each scale-up domain (default: the group's
    nodes taken consecutively, as many as a domain holds): on the scale-up ('node') tier when the group is
    inside one domain -- across trays of an NVL72 too --, on the cluster tier when it has one device per
    domain, hierarchical across both otherwise.  A system whose domain is its node decides by the node.
    """
    _check(collective, message_bytes, algorithm)
    _check_group(ranks, per_node)
    from roofline.core import arguments as arg

    arg.need(system, System, "collectives.cost", "system", "a System (roofline.catalog.get_system('dgx-h100'))")
    arg.optional_int(per_domain, "collectives.cost", "per_domain")
    d = system.devices_per_node
    per = min(ranks, d) if per_node is None else per_node
    if ranks < 1 or per < 1 or per > d or ranks % per or ranks // per > system.nodes:
        raise RooflineError(f"a group of {ranks} devices with {per} per node does not fit {system.name!r} "
                            f"({d} devices per node x {system.nodes} nodes)")
    per_dom = per * min(ranks // per, max(1, system.domain // d)) if per_domain is None else per_domain
    if per_dom < per or per_dom > max(system.domain, per) or ranks % per_dom:
        raise RooflineError(f"a group of {ranks} devices with {per_dom} per domain does not fit {system.name!r} "
                            f"(scale-up domains of {system.domain} devices)")
    return _over_domains(collective, message_bytes, system, ranks, per_dom, algorithm)


def _over_domains(collective: str, message_bytes: float, system: System, ranks: int, per: int,
                  algorithm: str) -> CollectiveCost:
    """``ranks`` devices, ``per`` of them in each scale-up domain: the scale-up tier inside a domain, the
    cluster tier between domains (hierarchical, as NCCL does)."""
    d = system.devices_per_node
    domains = ranks // per
    parts: tuple[Part, ...]
    if domains == 1:
        tier = system.tier("node") if ranks > 1 else None
        parts = (on_tier(collective, message_bytes, ranks, tier, d, algorithm=algorithm),) if tier else ()
        return CollectiveCost(collective, message_bytes, ranks, parts)
    cluster = system.tier("cluster")
    if per == 1:
        return CollectiveCost(collective, message_bytes, ranks,
                              (on_tier(collective, message_bytes, ranks, cluster, d, algorithm=algorithm),))
    node = system.tier("node")
    if collective == "all_reduce":
        parts = (on_tier("reduce_scatter", message_bytes, per, node, d),
                 on_tier("all_reduce", message_bytes / per, domains, cluster, d, algorithm=algorithm),
                 on_tier("all_gather", message_bytes, per, node, d))
    elif collective == "reduce_scatter":
        parts = (on_tier("reduce_scatter", message_bytes, per, node, d),
                 on_tier("reduce_scatter", message_bytes / per, domains, cluster, d))
    elif collective == "all_gather":
        parts = (on_tier("all_gather", message_bytes / per, domains, cluster, d),
                 on_tier("all_gather", message_bytes, per, node, d))
    elif collective == "all_to_all":  # (per-1)/ranks of the buffer stays in the domain, the rest crosses domains
        intra = message_bytes * (per - 1) / ranks
        inter = message_bytes * (ranks - per) / ranks
        bw_node, bw_cluster = node.per_device_bandwidth(d), cluster.per_device_bandwidth(d)
        parts = (Part("all_to_all", "node", per, per - 1, (per - 1) * node.latency, intra, intra / bw_node),
                 Part("all_to_all", "cluster", ranks, ranks - per, (ranks - per) * cluster.latency, inter,
                      inter / bw_cluster))
    else:  # send/recv and broadcast across domains go over the slower tier
        parts = (on_tier(collective, message_bytes, ranks, cluster, d, algorithm=algorithm),)
    return CollectiveCost(collective, message_bytes, ranks, parts)


def collective_group(w: Workload) -> int | None:
    """How many devices a workload's collectives run over: the LLM run's tp, else ``info["collective_ranks"]``
    (a whole number >= 1); None when neither says."""
    if w.llm is not None:
        return int(w.llm.tp)
    ranks = w.info.get("collective_ranks")
    return int(ranks) if isinstance(ranks, (int, float)) and not isinstance(ranks, bool) and ranks >= 1 else None


def collective_times(w: Workload, device: Device, level_index: np.ndarray, memory_time: np.ndarray,
                      warnings: list[str]) -> np.ndarray | None:
    """Each collective op of the per-op view (:func:`roofline.engine.analysis.analyze`) timed as :func:`on_link` times it (steps x per-hop
    latency + bus bytes / bandwidth, the planner's formula): its memory time set in place, its latency part
    returned (None when no op pays one: no collective, no link latency, or no known group size)."""
    link = device.interconnect
    kinds = w.tables["kind"]
    if link is None or link.latency <= 0 or "collective" not in kinds:
        return None
    on = np.flatnonzero((w.columns["kind"] == kinds.index("collective")) & (level_index < 0))
    if not len(on):
        return None
    ranks = collective_group(w)
    if ranks is None:
        warnings.append(f"{len(on)} collective op(s): the group size is unknown (no LLM tp, no "
                        "info['collective_ranks']), so their bound is bytes / bandwidth without per-hop latency")
        return None
    latency = np.zeros(len(memory_time))
    names, nbytes = w.columns["name"][on], w.bytes[on]
    seen: dict[tuple[int, float], tuple[float, float]] = {}
    for i, code, b in zip(on.tolist(), names.tolist(), nbytes.tolist(), strict=True):
        got = seen.get((code, b))
        if got is None:
            part = on_link(canonical(w.tables["name"][code]), b, ranks, link)
            got = seen[(code, b)] = (part.latency, part.time)
        latency[i], memory_time[i] = got
    return latency


__all__ = ["ALGORITHMS", "CANONICAL", "COLLECTIVES", "CollectiveCost", "Part", "canonical", "collective_group",
           "collective_times", "cost", "link_tier", "on_link", "on_tier", "steps"]
