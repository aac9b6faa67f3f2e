"""The collective cost model over network tiers (hand-derived times) and the catalog systems."""

from __future__ import annotations

import math

import pytest

from roofline.catalog import get_system, resolve_system, systems
from roofline.core.errors import RooflineError
from roofline.engine.collectives import cost, on_tier
from roofline.hardware.system import NetworkTier, System

GB = 1e9
US = 1e-6
NVLINK = NetworkTier("nvlink", "node", 450 * GB, 0.6 * US, "switch")
IB = NetworkTier("ib", "cluster", 50 * GB, 2.7 * US, "switch", nics_per_node=8)


def two_tier(nodes: int, per_node: int = 8) -> System:
    return System("toy", get_system("dgx-h100").device, per_node, nodes, (NVLINK, IB))


@pytest.mark.parametrize("n", [2, 8, 64])
def test_ring_collectives_on_one_tier(n):
    """t = steps x alpha + factor x bytes / bandwidth, with NCCL's ring steps and nccl-tests' factors."""
    S = 256e6  # bytes
    tier = NetworkTier("t", "node", 100 * GB, 5 * US, "switch")
    ar = on_tier("all_reduce", S, n, tier, n)
    assert ar.steps == 2 * (n - 1)
    assert ar.time == pytest.approx(2 * (n - 1) * 5e-6 + 2 * (n - 1) / n * S / 100e9)
    for name in ("reduce_scatter", "all_gather", "all_to_all"):
        p = on_tier(name, S, n, tier, n)
        assert p.steps == n - 1 and p.time == pytest.approx((n - 1) * 5e-6 + (n - 1) / n * S / 100e9)
    sr = on_tier("send_recv", S, n, tier, n)
    assert sr.steps == 1 and sr.time == pytest.approx(5e-6 + S / 100e9)
    # tree all-reduce: 2 ceil(log2 n) steps, the same bytes
    assert on_tier("all_reduce", S, n, tier, n, algorithm="tree").steps == 2 * math.ceil(math.log2(n))


@pytest.mark.parametrize("n", [2, 8, 64])
def test_cluster_tier_shares_the_nics(n):
    """n nodes with one device each on the IB tier: 8 NICs of 50 GB/s shared by 8 devices per node is 50 GB/s
    per device; with 1 device per node (per_node=1) the group crosses nodes only."""
    s = two_tier(nodes=n)
    S = 1e9
    c = cost("all_reduce", S, s, ranks=n, per_node=1)
    assert [p.tier for p in c.parts] == ["cluster"]
    assert c.time == pytest.approx(2 * (n - 1) * 2.7e-6 + 2 * (n - 1) / n * S / 50e9)


def test_hierarchical_all_reduce_by_hand():
    """16 devices, 8 per node on 2 nodes, 1 GB: reduce-scatter in the node (7/8 GB over 450 GB/s, 7 steps of
    0.6 us), all-reduce of the 1/8 GB shard across the 2 nodes (2 * 1/2 * 125 MB over 50 GB/s, 2 steps of
    2.7 us), all-gather in the node (as the reduce-scatter)."""
    c = cost("all_reduce", 1e9, two_tier(2), ranks=16, per_node=8)
    rs = 7 * 0.6e-6 + 7 / 8 * 1e9 / 450e9  # 1.9486 ms
    ar = 2 * 2.7e-6 + 1.0 * 125e6 / 50e9  # 2.5054 ms
    assert [p.collective for p in c.parts] == ["reduce_scatter", "all_reduce", "all_gather"]
    assert c.time == pytest.approx(rs + ar + rs)
    assert c.link_bytes("cluster") == pytest.approx(125e6)  # each device sends its shard once across nodes
    # a 64-device group (8 nodes): the shard's all-reduce runs over 8 nodes: 2 * 7/8 of 125 MB
    c64 = cost("all_reduce", 1e9, two_tier(8), ranks=64, per_node=8)
    assert c64.parts[1].time == pytest.approx(14 * 2.7e-6 + 1.75 * 125e6 / 50e9)


def test_hierarchical_gather_scatter_and_all_to_all():
    s = two_tier(4)  # 32 devices
    S = 3.2e9
    rs = cost("reduce_scatter", S, s, ranks=32)
    assert rs.time == pytest.approx(7 * 0.6e-6 + 7 / 8 * S / 450e9 + 3 * 2.7e-6 + 3 / 4 * (S / 8) / 50e9)
    ag = cost("all_gather", S, s, ranks=32)
    assert ag.time == pytest.approx(rs.time)  # the same two stages, in the other order
    a2a = cost("all_to_all", S, s, ranks=32)
    # 7/32 of the buffer to the node's peers over NVLink, 24/32 across nodes over IB
    assert a2a.time == pytest.approx(7 * 0.6e-6 + 7 / 32 * S / 450e9 + 24 * 2.7e-6 + 24 / 32 * S / 50e9)


def test_small_messages_are_latency_bound():
    s = two_tier(8)
    small = cost("all_reduce", 8, s, ranks=64)
    assert small.latency_bound and small.latency == pytest.approx(2 * (7 * 0.6e-6) + 14 * 2.7e-6)
    assert not cost("all_reduce", 1e9, s, ranks=64).latency_bound


def test_in_switch_reduction_sends_the_buffer_once():
    """NVLink SHARP: up to the switch and back down: 2 steps, the buffer once each way."""
    tier = NetworkTier("nvls", "node", 450 * GB, 0.6 * US, "switch", in_switch_reduction=True)
    p = on_tier("all_reduce", 1e9, 8, tier, 8)
    assert p.steps == 2 and p.time == pytest.approx(1.2e-6 + 1e9 / 450e9)
    # a reduce-scatter does not use it
    assert on_tier("reduce_scatter", 1e9, 8, tier, 8).steps == 7


def test_torus_rings_on_every_axis_at_once():
    """A 4x4x4 torus at 600 GB/s per chip (200 GB/s per dimension).  A 64-chip reduce-scatter spans all 3
    axes at once: 63/64 of S over the whole 600 GB/s, 3 steps per dimension; a 16-chip group spans 2 axes:
    15/16 of S over 400 GB/s, 6 steps; an all-reduce twice the bytes and the steps."""
    tier = NetworkTier("ici", "node", 600 * GB, 1 * US, "torus", dims=(4, 4, 4))
    S = 64e6
    rs = on_tier("reduce_scatter", S, 64, tier, 64)
    assert rs.steps == 9 and rs.link_bytes == pytest.approx(63 / 64 * S)
    assert rs.time == pytest.approx(9e-6 + 63 / 64 * S / 600e9)
    ar = on_tier("all_reduce", S, 64, tier, 64)
    assert ar.steps == 18 and ar.link_bytes == pytest.approx(2 * 63 / 64 * S)
    sixteen = on_tier("reduce_scatter", S, 16, tier, 64)
    assert sixteen.steps == 6 and sixteen.time == pytest.approx(6e-6 + 15 / 16 * S / 400e9)


def test_catalog_systems_cited_and_scalable():
    names = {s.name for s in systems()}
    assert {"NVIDIA DGX H100", "NVIDIA DGX A100", "AMD Instinct MI300X platform", "Google TPU v5p 4x4x4 slice",
            "CPU cluster on 100 GbE (Xeon 8480+ per node)"} <= names
    for s in systems():
        for t in s.tiers:
            assert t.provenance.source and t.provenance.url.startswith("https://"), (s.name, t.name)
            assert "atency" in t.provenance.note  # where the alpha came from is said
    h = get_system("dgx-h100", nodes=64)
    assert h.devices == 512 and h.tier("node").in_switch_reduction
    assert get_system("v5p-64").tier("node").dims == (4, 4, 4)
    assert resolve_system("dgx-a100", nodes=2).nodes == 2


def test_bad_layouts_and_systems_are_one_line():
    s = two_tier(2)
    with pytest.raises(RooflineError, match="does not fit"):
        cost("all_reduce", 1e6, s, ranks=24)  # 3 nodes of 8 on a 2-node system
    with pytest.raises(RooflineError, match="does not fit"):
        cost("all_reduce", 1e6, s, ranks=12, per_node=8)  # 12 is not a whole number of nodes of 8
    with pytest.raises(RooflineError, match="not one of"):
        cost("all_reducee", 1e6, s, ranks=8)
    with pytest.raises(RooflineError, match="unknown system"):
        get_system("dgx-h1000")
    with pytest.raises(RooflineError, match="no cluster tier"):  # a tier missing from the system
        cost("all_reduce", 1e6, System("lone", s.device, 8, 2, (NVLINK,)), ranks=16)
    with pytest.raises(RooflineError, match="no node tier"):  # one socket per node: no tier inside a node
        get_system("cpu-100gbe", nodes=4).tier("node")
    with pytest.raises(RooflineError, match="nodes must be"):
        get_system("dgx-h100", nodes=0)


S = float(1 << 30)  # a 1 GiB buffer


def test_a_group_inside_one_nvl72_domain_stays_on_nvlink_across_trays():
    """8 ranks on 2 trays of 4 (per_node 4) of a GB200 NVL72: one NVLink domain of 72, so the scale-up tier
    only, even across nodes.  NVLink 5 with NVLS (in-switch reduction) at 900 GB/s per direction, alpha 0.6 us:
    t = 2 x 0.6 us + S / 900 GB/s = 1.2e-6 + 1073741824 / 9e11 = 1.19425e-3 s."""
    s = get_system("gb200-nvl72")
    c = cost("all_reduce", S, s, ranks=8, per_node=4)
    assert [p.tier for p in c.parts] == ["node"]
    assert c.time == pytest.approx(2 * 0.6 * US + S / (900 * GB))
    # an all-gather of the same group: ring, 7 steps, 7/8 of S over 900 GB/s (also across the two trays)
    g = cost("all_gather", S, s, ranks=8, per_node=4)
    assert [p.tier for p in g.parts] == ["node"]
    assert g.time == pytest.approx(7 * 0.6 * US + 7 / 8 * S / (900 * GB))


def test_the_same_group_across_two_dgx_b200_crosses_the_network():
    """The same 8 ranks, 4 per node, on two DGX B200 (domain = node): hierarchical.  Reduce-scatter over the
    4 in each node on NVLink 5 (ring: 3 steps x 0.6 us + 3/4 S / 900 GB/s), all-reduce of the S/4 shard over
    the 2 nodes on InfiniBand (8 NICs of 50 GB/s shared by 8 GPUs: 50 GB/s each; ring: 2 steps x 2.7 us +
    2(2-1)/2 x S/4 / 50 GB/s), all-gather back (as the reduce-scatter)."""
    s = get_system("dgx-b200", nodes=2)
    c = cost("all_reduce", S, s, ranks=8, per_node=4)
    assert [p.tier for p in c.parts] == ["node", "cluster", "node"]
    node = 3 * 0.6 * US + 3 / 4 * S / (900 * GB)
    net = 2 * 2.7 * US + S / 4 / (50 * GB)
    assert c.time == pytest.approx(2 * node + net)


def test_groups_over_several_nvl72_racks_are_hierarchical_by_rack():
    """144 GB200s = 2 racks (domains of 72).  A group of 144 ranks, 72 per domain: all-reduce = reduce-scatter
    inside each rack (ring on NVLink, 71 steps, 71/72 S), all-reduce of S/72 across the 2 racks on the per-GPU
    400 Gb/s NICs (50 GB/s; ring: 2 steps, S/72), all-gather inside the rack; a group of 2, one per rack
    (per_domain 1), goes over the network alone."""
    s = get_system("gb200-nvl72", devices=144)
    assert (s.nodes, s.domain, s.domains) == (36, 72, 2)
    c = cost("all_reduce", S, s, ranks=144)
    assert [p.tier for p in c.parts] == ["node", "cluster", "node"]
    rs = 71 * 0.6 * US + 71 / 72 * S / (900 * GB)
    assert c.time == pytest.approx(2 * rs + 2 * 2.7 * US + S / 72 / (50 * GB))
    pair = cost("send_recv", S, s, ranks=2, per_node=1, per_domain=1)
    assert [p.tier for p in pair.parts] == ["cluster"] and pair.time == pytest.approx(2.7 * US + S / (50 * GB))
    with pytest.raises(RooflineError, match="per domain does not fit"):
        cost("all_reduce", S, s, ranks=144, per_domain=144)  # no domain holds 144


def test_an_all_to_all_on_a_torus_is_limited_by_its_bisection():
    """TPU v6e-256, a 16x16 torus at 400 GB/s per chip and direction over 4 links (100 GB/s each).  An
    all-to-all of S per chip over all 256: n S / 4 = 64 S bytes cross the cut through one axis, which severs
    16 rings twice each (wrap-around) = 32 links x 100 GB/s = 3.2 TB/s (the doc's 'bisection bandwidth per
    Pod'); 64 S / 3.2 TB/s is 8x each chip's own 255/256 S / 400 GB/s.  255 steps of 1 us.
    TPU v5p 4x4x4 at 600 GB/s over 6 links: 64 S / 4 = 16 S over 2 x 64 / 4 = 32 links of 100 GB/s."""
    v6e = get_system("tpu-v6e-256")
    assert v6e.domain == 256 and v6e.tier("node").dims == (16, 16)
    c = cost("all_to_all", S, v6e, ranks=256, per_node=8)
    assert [p.tier for p in c.parts] == ["node"]
    assert c.time == pytest.approx(255 * US + 64 * S / 3.2e12)
    v5p = cost("all_to_all", S, get_system("tpu-v5p-64"), ranks=64)
    assert v5p.time == pytest.approx(63 * US + 16 * S / 3.2e12)
    # the reduce-scatter keeps the multi-axis rings (unchanged): 2 axes at once, 15 + 15 steps
    rs = cost("reduce_scatter", S, v6e, ranks=256, per_node=8)
    assert rs.time == pytest.approx(30 * US + 255 / 256 * S / (400 * GB))


def test_new_catalog_systems_are_cited_and_their_domains_as_published():
    # (name, devices per node, nodes as listed, devices per scale-up domain, scale-up GB/s, NICs per node, NIC GB/s)
    want = {"dgx-b200": (8, 1, 8, 900, 8, 50), "dgx-b300": (8, 1, 8, 900, 8, 100), "dgx-h200": (8, 1, 8, 450, 8, 50),
            "gb200-nvl72": (4, 18, 72, 900, 4, 50), "gb300-nvl72": (4, 18, 72, 900, 4, 100),
            "mi355x-platform": (8, 1, 8, 537.6, 8, 50), "tpu-v6e-256": (8, 32, 256, 400, None, None)}
    for name, (per, nodes, domain, up, nics, nic_bw) in want.items():
        s = get_system(name)
        assert (s.devices_per_node, s.nodes, s.domain) == (per, nodes, domain), name
        assert s.tier("node").bandwidth == pytest.approx(up * GB), name
        if nics is not None:
            assert (s.tier("cluster").nics_per_node, s.tier("cluster").bandwidth) == (nics, nic_bw * GB), name
    assert get_system("gb200-nvl72").tier("node").in_switch_reduction  # NVLS
    assert not get_system("mi355x-platform").tier("node").in_switch_reduction
