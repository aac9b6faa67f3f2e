"""Expert parallelism on the network in training (roofline.planner.ep): bytes that leave the device, tiers,
node-limited routing, alpha per message, DeepEP's efficiencies, the bound and --overlap-ep."""

from __future__ import annotations

import dataclasses
import json
import math
from importlib import resources
from types import SimpleNamespace as NS

import pytest

from roofline.catalog import get_system
from roofline.catalog.kernels import KernelTable, kernel_table
from roofline.llm.config import load_arch
from roofline.llm.training import TrainingRun
from roofline.planner import ep as epmod
from roofline.planner.layout import Comm, Layout
from roofline.planner.overlap import exposed
from roofline.planner.train import estimate

DSV3 = NS(experts=256, top_k=8, expert_groups=8, topk_groups=4)


def _rows(name: str) -> list[dict]:
    data = json.loads((resources.files("roofline.catalog.kernels") / f"{name}.json").read_text())
    return [dict(zip(data["columns"], r, strict=True)) for r in data["rows"]]


def test_deepseek_v3_config_gives_its_group_limit():
    a = load_arch("deepseek-v3")
    assert (a.expert_groups, a.topk_groups) == (8, 4)  # config.json: n_group 8, topk_group 4


def test_hit_probability_two_routes():
    # a node of 32 experts = one of the 8 groups of 32; chosen with 4/8; then 8 of the 4 x 32 = 128 chosen experts
    # miss its 32 with C(96, 8) / C(128, 8)
    want = 0.5 * (1 - math.comb(96, 8) / math.comb(128, 8))
    assert epmod.hit_probability(DSV3, 32) == pytest.approx(want, rel=1e-12)
    # a rank's 4 experts (inside one group): 1/2 x (1 - C(124, 8) / C(128, 8))
    assert epmod.hit_probability(DSV3, 4) == pytest.approx(0.5 * (1 - math.comb(124, 8) / math.comb(128, 8)))
    # two whole groups on a node (4 nodes of 64 experts): 0, 1 or 2 of them chosen, hypergeometric over C(8, 4) = 70
    miss1, miss2 = math.comb(96, 8) / math.comb(128, 8), math.comb(64, 8) / math.comb(128, 8)
    want2 = (2 * 20 * (1 - miss1) + 15 * (1 - miss2)) / 70  # i=1: C(2,1)C(6,3) = 40; i=2: C(2,2)C(6,2) = 15
    assert epmod.hit_probability(DSV3, 64) == pytest.approx(want2)


def test_copies_that_leave_the_device():
    # Mixtral-like, 8 experts top-2 over ep 8 in one node: one expert per rank, each copy a distinct rank;
    # 2 copies, 1/8 of them to the sender itself: 2 x 7/8 = 1.75 over NVLink, none across nodes
    c = epmod.copies(NS(experts=8, top_k=2, expert_groups=0, topk_groups=0), 8, 8)
    assert (c.scale_up, c.scale_out, c.up_peers, c.out_peers) == (pytest.approx(1.75), 0.0, 7, 0)
    # DeepSeek-V3, ep 64 over 8 nodes: once per other node reached, 7 x p_node; NVLink 64 p_rank x 7/8
    c = epmod.copies(DSV3, 64, 8)
    p_node = 0.5 * (1 - math.comb(96, 8) / math.comb(128, 8))
    p_rank = 0.5 * (1 - math.comb(124, 8) / math.comb(128, 8))
    assert c.scale_out == pytest.approx(7 * p_node) and c.scale_up == pytest.approx(64 * p_rank * 7 / 8)
    assert c.scale_out < 4 and c.scale_out + c.scale_up / 8 < 8  # at most 4 nodes; fewer copies than top-k


def test_node_limited_routing_cuts_the_scale_out_copies():
    free = NS(experts=256, top_k=8, expert_groups=0, topk_groups=0)
    # without the limit a node's 32 experts are missed with C(224, 8) / C(256, 8)
    assert epmod.copies(free, 64, 8).scale_out == pytest.approx(7 * (1 - math.comb(224, 8) / math.comb(256, 8)))
    assert epmod.copies(DSV3, 64, 8).scale_out < epmod.copies(free, 64, 8).scale_out


def test_efficiencies_are_the_deepep_rows():
    rows = _rows("deepep-normal")
    intra = next(r for r in rows if r["type"] == "Intranode")
    ep64 = next(r for r in rows if r["dispatch_ep"] == 64)
    # logical bandwidth x (n - 1)/n over the link maximum the table states (160 GB/s NVLink, 50 GB/s RDMA)
    assert epmod.efficiency("NVLink", "dispatch", 1) == pytest.approx(intra["dispatch_bottleneck_GBps"] * 7 / 8 / 160)
    assert epmod.efficiency("RDMA", "combine", 8) == pytest.approx(ep64["combine_bottleneck_GBps"] * 7 / 8 / 50)
    ep32 = next(r for r in rows if r["dispatch_ep"] == 32)  # 4 nodes: 58 x 3/4 / 50
    assert epmod.efficiency("RDMA", "dispatch", 4) == pytest.approx(ep32["dispatch_bottleneck_GBps"] * 3 / 4 / 50)


def test_every_ep_efficiency_comes_from_the_file(monkeypatch):
    """The forecast moves with the file: every bandwidth in the table doubled, each leg's time at the forecast
    halves (latency apart); the bound does not move."""
    system = get_system("dgx-h100", nodes=8)
    c = epmod.copies(DSV3, 64, 8)
    before = epmod.call_times(system, c, 4096, 2, 7168, "combine")
    fakes = {}
    for name in (epmod.DEEPEP_NORMAL, epmod.DEEPEP_NVLINK4):  # the RDMA leg's table and the NVLink leg's
        t = kernel_table(name)
        doubled = [tuple(v * 2 if isinstance(v, (int, float)) and col.endswith("bottleneck_GBps") else v
                         for col, v in zip(t.columns, r, strict=True)) for r in t.rows]
        fakes[name] = dataclasses.replace(t, rows=tuple(doubled))
    monkeypatch.setattr(epmod, "kernel_table", lambda name: fakes.get(name, KernelTable))
    caches = (epmod.efficiency, epmod.deepep_nvlink_efficiency)
    for f in caches:
        f.cache_clear()
    try:
        after = epmod.call_times(system, c, 4096, 2, 7168, "combine")
    finally:
        for f in caches:
            f.cache_clear()
    latency = 7 * system.tier("node").latency + 7 * system.tier("cluster").latency
    assert after.forecast - latency == pytest.approx((before.forecast - latency) / 2)
    assert after.bound == before.bound


def test_one_call_by_hand():
    system = get_system("dgx-h100", nodes=8)
    node, cluster = system.tier("node"), system.tier("cluster")
    c = epmod.copies(DSV3, 64, 8)
    t = epmod.call_times(system, c, 4096, 2, 7168, "dispatch")
    up, out = 4096 * c.scale_up * 7168 * 2, 4096 * c.scale_out * 7168 * 2  # tokens x copies x hidden x bf16
    assert (t.up_bytes, t.out_bytes) == (pytest.approx(up), pytest.approx(out))
    bw_up, bw_out = node.per_device_bandwidth(8), cluster.per_device_bandwidth(8)
    alpha = 7 * node.latency + 7 * cluster.latency  # a message to each of 7 peers in the node, 7 other nodes
    assert t.bound == pytest.approx(max(up / bw_up, out / bw_out) + alpha)  # the legs at once, at peak
    # the NVLink leg at DeepEP's intranode rate on a full NVLink 4 (337.35 x 7/8 / 450), the RDMA leg its EP 64 row
    eff_up, eff_out = 337.35 * 7 / 8 / 450, epmod.efficiency("RDMA", "dispatch", 8)
    assert t.forecast == pytest.approx(max(up / (bw_up * eff_up), out / (bw_out * eff_out)) + alpha)


def _run(precision: str = "bf16") -> TrainingRun:
    return TrainingRun(load_arch("deepseek-v3"), seq=4096, global_batch=512, precision=precision)


LAY = Layout(tp=1, pp=4, ep=64, dp=64, zero=3, micro_batch=1, recompute="full")


def test_fp8_dispatch_bytes():
    system = get_system("dgx-h100", nodes=32)
    bf16 = {c.name: c for c in estimate(_run(), LAY, system).comms}
    fp8 = {c.name: c for c in estimate(_run("fp8-block"), LAY, system).comms}
    # forward: dispatch + combine per call pair; the dispatch's bytes (1 + 4/128) / 2 of bf16's, the combine's alike
    f16, f8 = bf16[epmod.FORWARD].message_bytes, fp8[epmod.FORWARD].message_bytes
    assert f8 == pytest.approx(f16 * ((1 + 4 / 128) / 2 + 1) / 2)
    # backward: the combine's gradient dispatched and the dispatch's combined, BF16 both; full recomputation's
    # forward again (its dispatch FP8): 3 BF16 calls and one FP8 of 4
    b16, b8 = bf16[epmod.BACKWARD].message_bytes, fp8[epmod.BACKWARD].message_bytes
    assert b8 == pytest.approx(b16 * (3 + (1 + 4 / 128) / 2) / 4)


def test_calls_per_step():
    system = get_system("dgx-h100", nodes=32)
    e = estimate(_run(), LAY, system)
    comms = {c.name: c for c in e.comms}
    # busiest stage 16 of 61 layers, 58 of them MoE: 58 x 16/61 per micro-batch, 8 micro-batches; forward 2 calls,
    # backward 2 + the recomputed forward's 2
    moe = 58 * max(e.stage_layers) / 61 * 8
    assert comms[epmod.FORWARD].calls == pytest.approx(2 * moe)
    assert comms[epmod.BACKWARD].calls == pytest.approx(4 * moe)


def test_overlap_ep_off_never_below_on_and_the_bound_is_the_same():
    system = get_system("dgx-h100", nodes=32)
    for lay in (LAY, dataclasses.replace(LAY, pp=8, dp=32, ep=32), dataclasses.replace(LAY, pp=1, dp=256, ep=64,
                                                                                       zero=3)):
        run = TrainingRun(load_arch("deepseek-v3"), seq=4096, global_batch=1024, precision="bf16")
        on = estimate(run, lay, system)
        off = estimate(run, dataclasses.replace(lay, overlap_ep=False), system)
        assert off.time >= on.time
        assert off.bound == on.bound <= on.time


def test_exposed_ep_rule_by_hand():
    lay = Layout(pp=4, dp=8, ep=8)
    fwd = Comm(epmod.FORWARD, 0.0, (), "micro-batch", forecast=8.0, calls=16)
    bwd = Comm(epmod.BACKWARD, 0.0, (), "micro-batch", forecast=16.0, calls=32)
    # m 8, pp 4: 3 unpaired micro-batches; per micro-batch forward 1 s behind a 0.6 s backward, backward 2 s behind
    # a 0.5 s forward: 3 x 1 + 5 x 0.4 = 5; 3 x 2 + 5 x 1.5 = 13.5
    assert exposed(fwd, lay, 8, 11, 0.5, 0.6) == pytest.approx(5.0)
    assert exposed(bwd, lay, 8, 11, 0.5, 0.6) == pytest.approx(13.5)
    off = dataclasses.replace(lay, overlap_ep=False)
    assert exposed(fwd, off, 8, 11, 0.5, 0.6) == pytest.approx(8 * 11 / 8)  # T x slots / m


def test_published_row_bound_is_below_the_measured_step():
    # Megatron-Core, DeepSeek-V3 on 256 H100 (tp1 pp4 ep64), 8.18 s per step (issue 50's row): a bound may not exceed it
    system = get_system("dgx-h100", nodes=32)
    e = estimate(_run(), LAY, system)
    assert e.bound <= 8.18


def test_etp_folds_the_expert_group():
    system = get_system("dgx-h100", nodes=128)
    run = TrainingRun(load_arch("deepseek-v3"), seq=4096, global_batch=8192, precision="bf16")
    lay = Layout(tp=2, pp=8, ep=64, dp=64, zero=1, micro_batch=1, recompute="full")
    as_tp = {c.name: c for c in estimate(run, dataclasses.replace(lay, etp=2), system).comms}
    folded = {c.name: c for c in estimate(run, dataclasses.replace(lay, etp=1), system).comms}
    given_none = {c.name: c for c in estimate(run, lay, system).comms}  # not given: as etp 1
    assert given_none[epmod.BACKWARD].message_bytes == folded[epmod.BACKWARD].message_bytes
    # under tp 2 each rank's all-to-all carries its sequence shard's bytes, half the tokens, whatever etp (etp = tp
    # sends the tp group's tokens at half the hidden width, all-gathered after: Megatron-Core's
    # MoEAlltoAllTokenDispatcher, "[SEQL, H/TP]"); etp 1's 64 ep peers are consecutive ranks (8 nodes), etp 2's
    # 2 apart (16 nodes): p_node over 8 nodes of one group each, vs 16 of half a group
    c8, c16 = epmod.copies(DSV3, 64, 8), epmod.copies(DSV3, 64, 4)
    want8 = (2048 * (c8.scale_up + c8.scale_out) * 7168 * 2, 2048 * (c16.scale_up + c16.scale_out) * 7168 * 2)
    assert folded[epmod.BACKWARD].message_bytes == pytest.approx(want8[0])
    assert as_tp[epmod.BACKWARD].message_bytes == pytest.approx(want8[1])


def test_etp_must_divide_tp():
    from roofline.core.errors import RooflineError
    from roofline.planner.train import check

    run = TrainingRun(load_arch("deepseek-v3"), seq=4096, global_batch=8192, precision="bf16")
    with pytest.raises(RooflineError, match="etp 3 must divide tp 2"):
        check(run, Layout(tp=2, pp=8, ep=64, dp=64, etp=3), get_system("dgx-h100", nodes=128))


def test_overlap_ep_reaches_the_layouts_through_plan():
    from roofline.planner import plan_layouts

    system = get_system("dgx-h100", nodes=32)
    got = {}
    for flag in (True, False):
        res = plan_layouts(_run(), system, layout="tp=1,pp=4,ep=64,dp=64,zero=3,mb=1",
                           rules={"dp": True, "tp": False, "pp": True, "ep": flag})
        row = res.rows[0]
        got[flag] = row.estimate.time
        assert row.estimate.layout.overlap_ep is flag
    assert got[False] >= got[True]


# Published steps (seconds) a bound may not exceed, each with its publisher's layout:
# NVIDIA/dgxc-benchmarking deepseek_v3/pretraining/README.md @ 1f6d9f40e4117d7c71b726f86074ac01c29f87f5 (512 H100:
# 48.948 s; 1024 H100: 52.04 s); yanring/Megatron-MoE-ModelZoo best_practice/Qwen3/readme.md @ c1ad0b5c89f4 (256 H100,
# DeepEP: 19.7 s; with 1F1B A2A overlap 17.6 s; tp4 ep8 pp8: 29.0 s)
PUBLISHED = (
    ("deepseek-v3", 512, 4096, Layout(tp=2, pp=8, dp=32, ep=64, etp=1, zero=1, recompute="selective"), 48.948),
    ("deepseek-v3", 1024, 8192, Layout(tp=2, pp=16, dp=32, ep=64, etp=1, zero=1, recompute="selective"), 52.04),
    ("qwen3-235b-a22b", 256, 2048, Layout(tp=2, pp=8, dp=16, ep=32, etp=1, zero=1, recompute="selective"), 17.6),
    ("qwen3-235b-a22b", 256, 2048, Layout(tp=4, pp=8, dp=8, ep=8, etp=1, zero=1, recompute="none"), 29.0),
)


@pytest.mark.parametrize("model,gpus,batch,lay,measured", PUBLISHED)
def test_bound_below_published_steps(model, gpus, batch, lay, measured):
    run = TrainingRun(load_arch(model), seq=4096, global_batch=batch, precision="bf16")
    e = estimate(run, lay, get_system("dgx-h100", nodes=gpus // 8))
    assert e.bound <= measured <= 3 * e.time  # a bound; and a forecast not absurdly low
