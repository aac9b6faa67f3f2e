"""Expert parallelism on the network in training: the dispatch and combine of each MoE layer, sized by the copies of
each token that actually leave its device, split over the tiers they cross, timed at the links' peak (the bound)
and at DeepEP's published efficiency (the forecast).

**The mechanism** is DeepEP's normal (training) kernels (deepseek-ai/DeepEP ``docs/legacy.md``, "Normal kernels
with NVLink and RDMA forwarding"; :data:`DEEPEP_NORMAL`), what the published DeepSeek-V3 and Megatron-Core MoE
runs use: a token is sent once to each *rank* holding one or more of its experts (``is_token_in_rank``: one copy
per rank, not per expert), and across scale-up domains once per *domain*: the copy lands over the scale-out tier
(RDMA) on the rank of the same local index, which forwards it over the scale-up tier (NVLink) to the ranks of
that domain its experts are on.  Tokens whose experts are on the sending rank itself stay there.  Per device and
per token (every rank alike, so what one sends is what one receives), with ``p_rank`` / ``p_dom`` the chance a
token reaches a given rank / domain (:func:`hit_probability`), ``n`` domains of ``d`` ranks in the ep group::

    scale-out copies = (n - 1) p_dom          (one per other domain reached)
    scale-up copies  = n d p_rank (1 - 1/d)   (every rank reached but the entry rank of its domain)

**Node-limited routing** (DeepSeek-V3: ``n_group`` 8, ``topk_group`` 4; DeepSeek-V3 report section 2.1.2, "each
token will be sent to at most M nodes"): a token picks ``topk_groups`` of the ``expert_groups`` groups, then its
``top_k`` experts among theirs.  Routing is taken as balanced (uniform over groups and over the chosen groups'
experts: what the published benchmarks force).

**Bytes per copy**: ``hidden`` elements; the forward's dispatch in FP8 with one fp32 scale per 128 elements
(``1 + 4/128`` bytes, DeepEP ``tests/test_internode.py``'s FP8 factor) when the run's GEMMs are FP8, else in the
activations' type; the combine and both backward all-to-alls (the combine's gradient dispatched, the dispatch's
gradient combined) in the activations' type (BF16): "FP8 dispatching and BF16 combining".

**Time of one call**: the two tiers' legs run at once (DeepEP overlaps the RDMA sends with the NVLink forwarding),
so ``max(scale-out bytes / its bandwidth, scale-up bytes / its bandwidth)``, plus ``alpha`` per message: each
peer rank of the domain on the scale-up tier, each other domain on the scale-out tier.  The bound takes the
tiers' peak bandwidth; the forecast each leg's efficiency (:func:`leg_efficiency`): DeepEP's NVLink leg at its
published intranode bandwidth on a full NVLink 4 (:data:`DEEPEP_NVLINK4`, 0.656 of the link), its RDMA leg from
:data:`DEEPEP_NORMAL` (:func:`efficiency`).

**The plain all-to-all dispatcher** (``dispatcher=alltoall``, Megatron-Core's ``--moe-token-dispatcher-type
alltoall``: ``MoEAlltoAllTokenDispatcher`` permutes the tokens by expert and calls one NCCL all-to-all over the ep
group) sends one copy per (token, expert) pair, no rank or node de-duplication and no forwarding: per token
``k (d - 1) / ep`` copies to the domain's other ranks over the scale-up tier and ``k (ep - d) / ep`` to the other
domains' ranks over the scale-out tier (balanced routing: each expert a token picks is on a given rank with chance
``1 / ep``, group-limited routing or not, by symmetry), ``k`` the top-k; with a capacity factor ``c`` and
``--moe-pad-expert-input-to-capacity`` (NeMo's ``MegatronTokenDropCallback``: ``c`` = 1.0, padded) each expert
takes exactly ``c`` times its mean, so ``c k``.  One message per peer rank.  Its legs (NCCL runs every peer's send
at once): the NVLink leg at the device's NCCL curve (:func:`roofline.planner.forecast.collective_efficiency`), the
InfiniBand leg at one NIC's published all-to-all rate (:data:`NCCL_ALLTOALL`, 47 of 50 GB/s: NCCL's all-to-all does
not aggregate NICs, each GPU's inter-node share goes over its own).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from roofline.catalog.kernels import kernel_table
from roofline.core.errors import RooflineError
from roofline.hardware.system import System
from roofline.planner.layout import Comm, members_per_domain

#: the cited tables the forecast's EP efficiencies come from (and nothing else): DeepEP's normal kernels (its RDMA
#: leg), DeepEP's intranode kernels on a full NVLink 4 (its NVLink leg), one NIC's NCCL all-to-all rate
DEEPEP_NORMAL = "deepep-normal"
DEEPEP_NVLINK4 = "deepep-intranode-nvlink4"
NCCL_ALLTOALL = "nccl-alltoall-ib"
#: the dispatchers ``dispatcher=`` names (module docs)
DISPATCHERS = ("deepep", "alltoall")
#: the link maxima DeepEP's normal-kernel table states for its setup (H800 NVLink ~160 GB/s, CX7 400 Gb/s ~50 GB/s)
DEEPEP_LINK_MAX = {"NVLink": 160e9, "RDMA": 50e9}
#: FP8 dispatch: one fp32 scale per 128 elements beside each byte (DeepEP ``tests/test_internode.py``:
#: ``fp8_factor = (1 + 4 / 128) / 2`` of the BF16 bytes)
FP8_DISPATCH_BYTES = 1 + 4 / 128
#: the labels of the two Comms (their rule: :func:`roofline.planner.overlap.exposed`'s ``ep``)
FORWARD, BACKWARD = "ep all-to-all (forward)", "ep all-to-all (backward)"


def _miss(pool: int, taken: int, k: int) -> float:
    """The chance that ``k`` draws without replacement from ``pool`` items all avoid ``taken`` of them."""
    p = 1.0
    for i in range(min(k, pool)):
        if pool - taken - i <= 0:
            return 0.0
        p *= (pool - taken - i) / (pool - i)
    return p


@lru_cache(maxsize=1024)
def _hit(experts: int, top_k: int, groups: int, chosen: int, held: int) -> float:
    G = experts // groups
    S = chosen * G  # the experts a token chooses among
    if held >= G and held % G == 0:  # the bin holds c whole groups, i of them chosen (hypergeometric)
        c = held // G
        total = math.comb(groups, chosen)
        return sum(math.comb(c, i) * math.comb(groups - c, chosen - i) / total * (1 - _miss(S, i * G, top_k))
                   for i in range(0, min(c, chosen) + 1))
    if held < G and G % held == 0:  # the bin inside one group: chosen with chance chosen / groups
        return chosen / groups * (1 - _miss(S, held, top_k))
    return 1 - _miss(experts, held, top_k)  # bins across groups: the group limit not applied


def hit_probability(arch: Any, held: int) -> float:
    """The chance a token's ``top_k`` experts include one of ``held`` consecutive experts (a rank's, a domain's),
    routing balanced and node-limited where the model is (module docs).

    >>> from types import SimpleNamespace as A
    >>> dsv3 = A(experts=256, top_k=8, expert_groups=8, topk_groups=4)
    >>> round(hit_probability(dsv3, 32), 4)   # a node's 32 experts = one group: 1/2 x (1 - C(96,8)/C(128,8))
    0.4536
    >>> round(hit_probability(A(experts=8, top_k=2, expert_groups=0, topk_groups=0), 1), 4)   # 2 of 8: 1 - 7/8 x 6/7
    0.25
    """
    groups, chosen = (arch.expert_groups, arch.topk_groups) if getattr(arch, "topk_groups", 0) else (1, 1)
    return _hit(arch.experts, arch.top_k, groups, chosen, held)


@dataclass(frozen=True)
class Copies:
    """Per token on one device of an ep group: the copies it sends over each tier, and the peers it messages."""

    scale_up: float
    scale_out: float
    up_peers: int
    out_peers: int


def copies(arch: Any, ep: int, per_domain: int, dispatcher: str = "deepep", capacity: float = 0.0) -> Copies:
    """What leaves a device per token (module docs), the ep group's ``ep`` ranks ``per_domain`` to a domain, sent by
    ``dispatcher`` (``capacity``: the capacity factor the plain all-to-all pads to, 0 dropless).

    >>> from types import SimpleNamespace as A
    >>> dsv3 = A(experts=256, top_k=8, expert_groups=8, topk_groups=4)
    >>> c = copies(dsv3, 64, 8)   # 8 nodes of 8: p_dom 0.4536, p_rank 1/2 x (1 - C(124,8)/C(128,8)) = 0.1150
    >>> round(c.scale_out, 3), round(c.scale_up, 3), c.up_peers, c.out_peers   # 7 p_dom; 64 p_rank 7/8
    (3.175, 6.439, 7, 7)
    >>> c = copies(dsv3, 64, 8, "alltoall", 1.0)   # 8 x 7/64 to the node's 7 others, 8 x 56/64 off the node
    >>> c.scale_up, c.scale_out, c.up_peers, c.out_peers
    (0.875, 7.0, 7, 56)
    """
    if ep <= 1:
        return Copies(0.0, 0.0, 0, 0)
    per = max(1, min(per_domain, ep))
    if dispatcher == "alltoall":
        k = arch.top_k * (capacity or 1.0)
        return Copies(k * (per - 1) / ep, k * (ep - per) / ep, per - 1, ep - per)
    domains = ep // per
    rank_experts = arch.experts // ep
    p_rank = hit_probability(arch, rank_experts)
    p_dom = hit_probability(arch, rank_experts * per) if domains > 1 else 1.0
    return Copies(ep * p_rank * (1 - 1 / per), (domains - 1) * p_dom, per - 1, domains - 1)


@lru_cache(maxsize=64)
def efficiency(link: str, direction: str, domains: int) -> float:
    """DeepEP's achieved share of the link (:data:`DEEPEP_NORMAL`): the row's logical bandwidth x (n - 1)/n (the
    physical share, module docs of the table: n the ranks, intranode, or the nodes reached) over the link's
    maximum as the table states it.  ``link`` 'NVLink' (the intranode row) or 'RDMA' (the internode row of the
    nearest node count to ``domains``); ``direction`` 'dispatch' or 'combine'.

    >>> round(efficiency("NVLink", "dispatch", 1), 4), round(efficiency("RDMA", "combine", 8), 4)   # 153 x 7/8 / 160; 50 x 7/8 / 50
    (0.8367, 0.875)
    """
    rows = [r for r in kernel_table(DEEPEP_NORMAL).records() if r[f"{direction}_link"] == link]
    if link == "NVLink":
        row, n = rows[0], rows[0][f"{direction}_ep"]
    else:
        row = min(rows, key=lambda r: abs(math.log(r[f"{direction}_ep"] / 8 / max(domains, 1))))
        n = row[f"{direction}_ep"] // 8
    return float(row[f"{direction}_bottleneck_GBps"]) * 1e9 * (n - 1) / n / DEEPEP_LINK_MAX[link]


@dataclass(frozen=True)
class CallTimes:
    """One dispatch or combine of a micro-batch's tokens on one device: its bytes per tier, its bound and forecast."""

    up_bytes: float
    out_bytes: float
    bound: float
    forecast: float


@lru_cache(maxsize=1)
def deepep_nvlink_efficiency() -> float:
    """DeepEP's intranode share of a full NVLink 4 (:data:`DEEPEP_NVLINK4`): the logical bandwidth x (n - 1)/n over
    the link.

    >>> round(deepep_nvlink_efficiency(), 3)   # 337.35 x 7/8 / 450
    0.656
    """
    row = kernel_table(DEEPEP_NVLINK4).records()[0]
    n = row["ranks"]
    return float(row["bottleneck_GBps"]) * (n - 1) / n / float(row["link_GBps"])


@lru_cache(maxsize=1)
def nccl_alltoall_nic_efficiency() -> float:
    """One NIC's share of its link in an NCCL all-to-all (:data:`NCCL_ALLTOALL`): the lowest row's midpoint.

    >>> nccl_alltoall_nic_efficiency()   # (46 + 48) / 2 / 50
    0.94
    """
    return min((r["low_GBps"] + r["high_GBps"]) / 2 / r["link_GBps"] for r in kernel_table(NCCL_ALLTOALL).records())


def leg_efficiency(system: System, dispatcher: str, link: str, direction: str, peers: int, nbytes: float) -> float:
    """The forecast's share of a leg's link (module docs): ``link`` 'NVLink' (the scale-up leg) or 'RDMA' (the
    scale-out leg reaching ``peers`` other domains), ``nbytes`` the leg's bytes of one call."""
    if dispatcher == "alltoall":
        if link == "NVLink":
            from roofline.planner.forecast import collective_efficiency

            return collective_efficiency(system.device, nbytes)
        return nccl_alltoall_nic_efficiency()
    return deepep_nvlink_efficiency() if link == "NVLink" else efficiency("RDMA", direction, peers + 1)


def call_times(system: System, c: Copies, tokens: float, element_bytes: float, hidden: int, direction: str,
               dispatcher: str = "deepep") -> CallTimes:
    """The bound and the forecast of one call (module docs): the legs at once, ``alpha`` per message."""
    d = system.devices_per_node
    per_token = hidden * element_bytes
    up_b, out_b = tokens * c.scale_up * per_token, tokens * c.scale_out * per_token
    node, latency = system.tier("node"), 0.0
    up_bw = node.per_device_bandwidth(d)
    latency += c.up_peers * node.latency
    times_peak = [up_b / up_bw]
    times_fc = [up_b / (up_bw * leg_efficiency(system, dispatcher, "NVLink", direction, 0, up_b))]
    if c.out_peers:
        cluster = system.tier("cluster")
        out_bw = cluster.per_device_bandwidth(d)
        latency += c.out_peers * cluster.latency
        times_peak.append(out_b / out_bw)
        times_fc.append(out_b / (out_bw * leg_efficiency(system, dispatcher, "RDMA", direction, c.out_peers, out_b)))
    return CallTimes(up_b, out_b, max(times_peak) + latency, max(times_fc) + latency)


def dispatch_bytes(run: Any) -> float:
    """Bytes per element of the forward's dispatch: FP8 with its scales for an FP8 run, else the activations'."""
    return FP8_DISPATCH_BYTES if run.precision != "bf16" else float(run.precisions.bytes()["a"])


def check_dispatcher(lay: Any) -> None:
    """``dispatcher`` must be one of :data:`DISPATCHERS`."""
    if lay.dispatcher not in DISPATCHERS:
        raise RooflineError(f"dispatcher must be one of {', '.join(DISPATCHERS)}, got {lay.dispatcher!r}")


def check_etp(lay: Any) -> None:
    """``etp`` (expert tensor parallelism) must be 0 (not given: :func:`ep_group`) or divide tp, and the folded expert
    groups (ep x etp) the ranks of a stage (tp x cp x dp)."""
    etp = lay.etp
    if isinstance(etp, bool) or not isinstance(etp, int) or etp < 0:
        raise RooflineError(f"etp must be a whole number >= 0 (0: as tp), got {etp!r}")
    if etp and (lay.tp % etp or (lay.tp * lay.cp * lay.dp) % (etp * lay.ep)):
        raise RooflineError(f"etp {etp} must divide tp {lay.tp}, and ep x etp = {lay.ep * etp} the tp x cp x dp = "
                            f"{lay.tp * lay.cp * lay.dp} ranks of a stage")


def ep_group(lay: Any) -> tuple[float, int]:
    """(token-equivalents one device dispatches per micro-batch, as a share of ``micro_batch x seq / cp``; how far
    apart the ep group's ranks are).  Megatron-Core's expert tensor parallelism (``--expert-tensor-parallel-size``):
    with ``etp`` = tp its ep ranks are dp ranks (tp x cp apart); with ``etp`` < tp the MoE layers fold the ranks of
    a stage into ``etp x ep x edp`` (Megatron-Core "parallel folding", ``etp`` fastest), its ep peers ``etp`` apart.
    Either way a device's all-to-all carries its own sequence shard's bytes, 1 / tp of the tokens: the
    tensor-parallel group's tokens go at 1 / etp of the hidden width ("global_input_tokens: [SEQL, H/TP]") and are
    all-gathered on the last dimension after the all-to-all, over NVLink within the group
    (``MoEAlltoAllTokenDispatcher.token_permutation``, "Perform tensor parallel AllGather on the hidden dimension
    to obtain the input tokens"; the gather is the expert tensor-parallel group's, not counted here).  Not given (0): etp 1, what the published DeepEP layouts run (NVIDIA
    dgxc-benchmarking's DeepSeek-V3 recipes and Megatron-MoE-ModelZoo's Qwen3 table: ETP 1 on every row).

    >>> from types import SimpleNamespace as L
    >>> ep_group(L(tp=2, cp=1, etp=2, ep=64)), ep_group(L(tp=2, cp=1, etp=1, ep=64)), ep_group(L(tp=2, cp=1, etp=0, ep=64))
    ((0.5, 2), (0.5, 1), (0.5, 1))
    """
    etp = lay.etp or 1
    if etp == lay.tp:
        return 1 / lay.tp, lay.tp * lay.cp
    return 1 / lay.tp, etp


def ep_comms(run: Any, lay: Any, system: System, m: int, layers_here: int) -> tuple[Comm, ...]:
    """The step's expert all-to-alls on the busiest stage's device (``layers_here`` layers, the MoE share of them):
    per MoE layer and micro-batch the forward's dispatch and combine (:data:`FORWARD`), and the backward's two
    (:data:`BACKWARD`), with full recomputation the forward's two again in the backward."""
    a = run.arch
    if lay.ep <= 1 or not a.experts:
        return ()
    share, apart = ep_group(lay)
    tokens = lay.micro_batch * run.seq / lay.cp * share
    per_domain = members_per_domain(apart, lay.ep, system)
    c = copies(a, lay.ep, per_domain, lay.dispatcher, lay.capacity)
    act = float(run.precisions.bytes()["a"])
    fwd_d = call_times(system, c, tokens, dispatch_bytes(run), a.hidden, "dispatch", lay.dispatcher)
    comb = call_times(system, c, tokens, act, a.hidden, "combine", lay.dispatcher)
    bwd_d = call_times(system, c, tokens, act, a.hidden, "dispatch", lay.dispatcher)
    moe_here = a.moe_layers * layers_here / a.layers * m
    rec = 1 if lay.recompute == "full" else 0
    tiers = tuple(system.tier(t).name for t, b in (("node", c.scale_up), ("cluster", c.scale_out)) if b > 0)
    share_attn = attention_share(run, lay.tp, lay.cp, lay.ep, lay.micro_batch)
    out = []
    for name, calls in ((FORWARD, ((fwd_d, comb),)), (BACKWARD, ((comb, bwd_d),) + ((fwd_d, comb),) * rec)):
        pairs = [t for pair in calls for t in pair]
        n = len(pairs) * moe_here
        sent = sum(t.up_bytes + t.out_bytes for t in pairs) / len(pairs)
        out.append(Comm(name, sum(t.bound for t in pairs) * moe_here, tiers, "micro-batch", sent, n,
                        sum(t.forecast for t in pairs) * moe_here, attention_share=share_attn))
    return tuple(out)


@lru_cache(maxsize=256)
def attention_share(run: Any, tp: int, cp: int, ep: int, micro_batch: int) -> float:
    """The attention block's share of an MoE layer's forward FLOPs on one device (the op table's ``.attn.`` rows
    over those and the MoE block's ``.moe.`` rows, one layer of each), what Megatron-Core's 1F1B A2A overlap pairs
    the combines with (:func:`roofline.planner.overlap.exposed`)."""
    from roofline.llm.training import forward_ops

    table, v = forward_ops(run, tp, cp, ep, micro_batch)
    names = [str(n) for n in table.names]
    flops = v["flops"]
    attn = sum(float(flops[i]) for i, n in enumerate(names) if ".layers.attn." in n and ".mtp." not in n)
    moe = sum(float(flops[i]) for i, n in enumerate(names) if ".layers.moe." in n and ".mtp." not in n)
    return attn / (attn + moe) if attn + moe > 0 else 0.0


def folded_moe_layers(arch: Any, lay: Any, layers_here: float) -> float:
    """Of ``layers_here`` layers, the MoE layers whose MLP block makes no tensor-parallel collective: under a folded
    expert layout (etp < tp, or not given) the MoE block takes the device's sequence shard straight into the
    all-to-all and hands its shard back (``ep_group``'s docs), so without shared experts (which are tp-split and
    gather and reduce-scatter over tp) its forward's and backward's tp collectives are absent.

    >>> from types import SimpleNamespace as N
    >>> qwen = N(experts=128, shared_experts=0, moe_layers=94, layers=94)
    >>> folded_moe_layers(qwen, N(tp=2, etp=1), 12), folded_moe_layers(qwen, N(tp=2, etp=2), 12)
    (12.0, 0.0)
    """
    if not arch.experts or lay.tp <= 1 or lay.etp == lay.tp or getattr(arch, "shared_experts", 0):
        return 0.0
    return float(layers_here * arch.moe_layers / arch.layers)
