"""The expert all-to-all's dispatcher (roofline.planner.ep, dispatcher=alltoall|deepep): the plain NCCL all-to-all's
copies and legs, token drop at a capacity factor, DeepEP's NVLink leg, and the SMs each holds while hidden
(roofline.planner.overlap).  Expected values derived by hand in the comments."""

from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pytest

from roofline.catalog import get_system
from roofline.core.errors import RooflineError
from roofline.llm.config import load_arch
from roofline.llm.training import TrainingRun
from roofline.planner import ep as epmod
from roofline.planner.forecast import collective_efficiency, contention_factor
from roofline.planner.layout import Comm, Layout, parse_layout
from roofline.planner.overlap import DEEPEP_SMS, NCCL_CTAS, sm_holders
from roofline.planner.train import estimate

DSV3 = NS(experts=256, top_k=8, expert_groups=8, topk_groups=4)


def test_alltoall_sends_one_copy_per_expert():
    # ep 64 over 8 nodes of 8: each of a token's 8 experts is on a given rank with chance 1/64 (balanced routing,
    # the group limit or not): 8 x 7/64 = 0.875 to the node's 7 other ranks, 8 x 56/64 = 7 off the node
    c = epmod.copies(DSV3, 64, 8, "alltoall")
    assert (c.scale_up, c.scale_out, c.up_peers, c.out_peers) == (0.875, 7.0, 7, 56)
    # DeepEP sends one copy per node reached (3.175, module docs): the plain all-to-all 2.2x as much off the node
    assert epmod.copies(DSV3, 64, 8).scale_out == pytest.approx(3.175, abs=1e-3)
    # within one node (ep 8): 8 x 7/8 = 7 copies over NVLink, none out
    c8 = epmod.copies(DSV3, 8, 8, "alltoall")
    assert (c8.scale_up, c8.scale_out, c8.out_peers) == (7.0, 0.0, 0)


def test_token_drop_at_a_capacity_factor():
    # padded to capacity (NeMo's MegatronTokenDropCallback: factor 1.0, pad on) each expert takes exactly c x its
    # mean rows: c k copies per token; 1.0 is the dropless balanced count, 0.5 half of it, 1.25 a quarter more
    full = epmod.copies(DSV3, 64, 8, "alltoall", 1.0)
    assert full == epmod.copies(DSV3, 64, 8, "alltoall")
    half = epmod.copies(DSV3, 64, 8, "alltoall", 0.5)
    assert (half.scale_up, half.scale_out) == (0.4375, 3.5)  # 4 x 7/64, 4 x 56/64
    assert epmod.copies(DSV3, 64, 8, "alltoall", 1.25).scale_out == 8.75  # 10 x 56/64


def test_alltoall_call_by_hand():
    system = get_system("dgx-h100", nodes=8)
    node, cluster = system.tier("node"), system.tier("cluster")
    c = epmod.copies(DSV3, 64, 8, "alltoall")
    t = epmod.call_times(system, c, 2048, 2, 7168, "dispatch", "alltoall")
    up, out = 2048 * 0.875 * 7168 * 2, 2048 * 7 * 7168 * 2  # tokens x copies x hidden x bf16
    assert (t.up_bytes, t.out_bytes) == (pytest.approx(up), pytest.approx(out))
    alpha = 7 * node.latency + 56 * cluster.latency  # one message per peer rank: 7 in the node, 56 beyond it
    assert t.bound == pytest.approx(max(up / 450e9, out / 50e9) + alpha)
    # forecast: NVLink on the NCCL curve at the leg's bytes, InfiniBand at 47 of 50 GB/s (nccl-tests #290's 46-48)
    eff_up = collective_efficiency(system.device, up)
    assert t.forecast == pytest.approx(max(up / (450e9 * eff_up), out / 47e9) + alpha)
    assert epmod.nccl_alltoall_nic_efficiency() == pytest.approx(0.94)


def test_deepep_nvlink_leg():
    # DeepEP issue 16: 337.35 GB/s logical on 8 H20 (NVLink 4, 450 GB/s a direction); the link carries 7/8 of it
    assert epmod.deepep_nvlink_efficiency() == pytest.approx(337.35 * 7 / 8 / 450)
    system = get_system("dgx-h100", nodes=1)
    c = epmod.copies(DSV3, 8, 8)
    t = epmod.call_times(system, c, 4096, 2, 7168, "combine")
    up = 4096 * c.scale_up * 7168 * 2
    assert t.forecast == pytest.approx(up / (450e9 * 0.6559) + 7 * system.tier("node").latency, rel=1e-3)


def test_dispatcher_key_and_its_check():
    lay = parse_layout("tp=2,pp=8,dp=32,ep=64,etp=1,dispatcher=alltoall,capacity=1.0")
    assert (lay.dispatcher, lay.capacity) == ("alltoall", 1.0)
    assert "dispatcher=alltoall" in lay.describe()
    with pytest.raises(RooflineError, match="dispatcher must be one of deepep, alltoall"):
        epmod.check_dispatcher(Layout(dispatcher="nccl"))


def test_alltoall_step_carries_the_per_expert_bytes():
    run = TrainingRun(load_arch("deepseek-v3"), seq=4096, global_batch=4096)
    system = get_system("dgx-h100", nodes=64)
    base = dict(tp=2, pp=8, dp=32, ep=64, etp=1, micro_batch=1, overlap_ep=False)
    a2a = {c.name: c for c in estimate(run, Layout(**base, dispatcher="alltoall", capacity=1.0), system).comms}
    deep = {c.name: c for c in estimate(run, Layout(**base), system).comms}
    # etp 1 under tp 2: a device sends its 4096 / 2 sequence shard; the forward's pair (dispatch, combine) each
    # 2048 x (0.875 + 7) x 7168 x 2 bytes
    assert a2a[epmod.FORWARD].message_bytes == pytest.approx(2048 * 7.875 * 7168 * 2)
    assert a2a[epmod.FORWARD].forecast > 1.5 * deep[epmod.FORWARD].forecast  # 7 copies off the node, not 3.2


def test_sms_held_by_the_dispatcher():
    fwd = Comm(epmod.FORWARD, 1.0, ("NVLink",), "micro-batch")
    assert sm_holders(fwd, Layout(dispatcher="deepep")) == (DEEPEP_SMS, 1.0, "backward")
    assert sm_holders(fwd, Layout(dispatcher="alltoall")) == (NCCL_CTAS, 1.0, "backward")
    assert (DEEPEP_SMS, NCCL_CTAS) == (20, 24)
    # a GEMM of many full waves runs at (132 - 20) / 132 of its roof beside DeepEP: 16384^2 in 128x128 tiles is
    # 16384 tiles, 124.1 waves on 132 SMs, 146.3 on 112; time ratio ~ 132 / 112 (the quantization within 1%)
    f = contention_factor(np.array(["matmul"]), np.array([16384.0]), np.array([16384.0]), np.array([1.0]), 132, 20)
    assert float(f[0]) == pytest.approx(132 / 112, rel=0.01)


def test_folded_layout_keeps_its_sequence_shards_routed_rows():
    from roofline.planner.moe_memory import folded_saving, moe_memory

    run = TrainingRun(load_arch("deepseek-v3"), seq=4096, global_batch=4096)
    lay = Layout(tp=2, pp=8, dp=32, ep=64, etp=1, micro_batch=1)
    # the dispatched input and the combine's input, 2 x 8 x 7168 elements a token, kept for 4096 / 2 tokens, not
    # 4096: (1 - 1/2) x 2 x 8 x 7168 x 2 B x 4096 on 58 of 61 layers
    assert folded_saving(run, lay) == pytest.approx(0.5 * 2 * 8 * 7168 * 2 * 4096 * 58 / 61)
    assert folded_saving(run, Layout(tp=2, pp=8, dp=32, ep=64, etp=2)) == 0.0  # etp = tp: every token, 1/tp wide
    # NCCL's all-to-all keeps no DeepEP buffer
    _, deepep = moe_memory(run, lay, 1.0)
    _, nccl = moe_memory(run, Layout(tp=2, pp=8, dp=32, ep=64, etp=1, dispatcher="alltoall"), 1.0)
    assert deepep > 0 and nccl == 0.0


def test_no_tp_collective_in_a_folded_moe_block_without_shared_experts():
    run = TrainingRun(load_arch("qwen3-235b-a22b"), seq=4096, global_batch=64)
    system = get_system("dgx-h100", nodes=4)
    folded = {c.name: c for c in estimate(run, Layout(tp=2, pp=2, dp=8, ep=8, etp=1), system).comms}
    whole = {c.name: c for c in estimate(run, Layout(tp=2, pp=2, dp=8, ep=8, etp=2), system).comms}
    m = 64 // 8  # micro-batches
    # 47 layers a stage, every one MoE without shared experts: attention's forward and backward collective only
    # (2 x 47), plus the edge stage's embedding or lm_head one; etp = tp keeps the MLP block's two (4 x 47 + 1)
    assert folded["tp all-reduce"].calls == (2 * 47 + 1) * m
    assert whole["tp all-reduce"].calls == (4 * 47 + 1) * m


def test_mtp_memory_counted_on_the_last_stage():
    from roofline.planner.moe_memory import mtp_params

    a = load_arch("deepseek-v3")
    system = get_system("dgx-h100", nodes=32)
    lay = Layout(tp=1, pp=4, dp=64, ep=64, zero=3, micro_batch=1, recompute="full")
    plain = estimate(TrainingRun(a, seq=4096, global_batch=512), lay, system)
    run = TrainingRun(a, seq=4096, global_batch=512, mtp=1)
    with_mtp = estimate(run, lay, system)
    d, e = mtp_params(run, 1, 64)
    # one MoE block's 256 / 64 experts: 4 x 3 x 7168 x 2048 = 176M routed parameters a device, the rest dense
    assert e == pytest.approx(4 * 3 * 7168 * 2048)
    from roofline.planner.train import memory_per_device
    m = plain.micro_batches
    last0 = memory_per_device(TrainingRun(a, seq=4096, global_batch=512), lay, 1e9, 1e9, m, layers=15, stage=3)
    last1 = memory_per_device(run, lay, 1e9, 1e9, m, layers=15, stage=3)
    # ZeRO 3 over dp 64 (dense) and 64 / 64 = 1 expert replica: optimizer 12 B x (d / 64 + e)
    assert last1["optimizer"] - last0["optimizer"] == pytest.approx(12 * (d / 64 + e))
    assert sum(with_mtp.memory.values()) >= sum(plain.memory.values())


def test_1f1b_a2a_overlap_pairs_each_call_with_one_segment():
    from roofline.planner.overlap import exposed

    lay = Layout(pp=4, dp=8, ep=8)
    # 10 micro-batches, 3 unpaired (pp - 1); per micro-batch the forward's all-to-alls 0.4 s, F 1 s, B 2 s, the
    # attention 0.1 of the compute: the combine (0.2) behind the paired backward's attention 0.2 -> 0, the dispatch
    # (0.2) behind half the MLP segment 0.9 x 3 / 2 -> 0: only the 3 unpaired, 3 x 0.4
    fwd = Comm(epmod.FORWARD, 4.0, ("NVLink",), "micro-batch", forecast=4.0, attention_share=0.1)
    assert exposed(fwd, lay, 10, 13.0, 1.0, 2.0) == pytest.approx(3 * 0.4)
    # the backward's (0.6 a micro-batch): combine 0.3 behind the forward's attention 0.1 -> 0.2 exposed, dispatch
    # 0.3 behind 1.35 -> 0: 3 x 0.6 + 7 x 0.2
    bwd = Comm(epmod.BACKWARD, 6.0, ("NVLink",), "micro-batch", forecast=6.0, attention_share=0.1)
    assert exposed(bwd, lay, 10, 13.0, 1.0, 2.0) == pytest.approx(3 * 0.6 + 7 * 0.2)
    # no share: behind the whole partner phase (F = 1 for the backward's): 0.6 - 1 -> 0
    assert exposed(Comm(epmod.BACKWARD, 6.0, ("NVLink",), "micro-batch", forecast=6.0), lay, 10, 13.0, 1.0, 2.0
                   ) == pytest.approx(3 * 0.6)


def test_permute_backward_is_one_pass():
    from roofline.planner.forecast import _rows
    from roofline.work.workload import WorkloadBuilder

    run = TrainingRun(load_arch("qwen3-30b-a3b"), seq=4096, global_batch=64)
    ops = WorkloadBuilder()
    table, owner, bwd = _rows(ops, run, (1, 1, 8, 1))
    w = ops.build(title="t", source="test")
    names = [str(n) for n in w.column("name")]
    read = np.asarray(w.column("bytes_read"), dtype=float)
    rows = [i for i, n in enumerate(names) if n.endswith("layers.moe.permute")]
    # the forward's gather and the backward's scatter of the gradient move the same bytes (one pass each way)
    fwd = [i for i in rows if not bwd[i]]
    back = [i for i in rows if bwd[i]]
    assert len(fwd) == len(back) == 1 and read[back[0]] == pytest.approx(read[fwd[0]])
    # a norm's backward keeps its 2x
    norm = [i for i, n in enumerate(names) if n.endswith("layers.mlp.norm")]
    f_n, b_n = [i for i in norm if not bwd[i]], [i for i in norm if bwd[i]]
    assert read[b_n[0]] == pytest.approx(2 * read[f_n[0]])
