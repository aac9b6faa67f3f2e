"""Parallel LLM training: one layout's step (hand-derived pieces) and the layout planner."""

from __future__ import annotations

import json

import numpy as np
import pytest

from roofline.catalog import get_system
from roofline.cli import main
from roofline.collectives import cost
from roofline.errors import RooflineError
from roofline.llm.config import load_arch
from roofline.llm.sizes import param_counts
from roofline.planner import Layout, TrainingRun, check, estimate, layouts, plan, training_flops
from roofline.system import NetworkTier, System


def test_training_flops_llama2_7b():
    """3 x (2 N T + causal attention) for T = 2048, N = the linear layers and lm_head:
    N = 32 x (4 x 4096^2 + 3 x 4096 x 11008) + 32000 x 4096 = 6,607,077,376;
    attention = 32 layers x 2 x 32 heads x (128 + 128) x 2048 x 2049 / 2 pairs = 1,100,048,498,688."""
    run = TrainingRun.of("llama-2-7b", seq=2048, global_batch=1)
    N = 32 * (4 * 4096**2 + 3 * 4096 * 11008) + 32000 * 4096
    expected = 3 * (2 * N * 2048 + 32 * 2 * 32 * 256 * 2048 * 2049 // 2)
    assert training_flops(run) == pytest.approx(expected, rel=0.02)  # norms, RoPE, activations: 0.07% more
    assert training_flops(run, "full") == pytest.approx(training_flops(run) * 4 / 3)  # forward recomputed


def test_zero_memory_per_device_7b():
    """ZeRO (Rajbhandari et al. 2020) on 8-way data parallelism, Psi = 6.74e9 parameters per device:
    stage 0 keeps 2 + 2 + 12 bytes per parameter; stage 1 shards the 12 optimizer bytes, stage 2 also the
    2 gradient bytes, stage 3 also the 2 weight bytes (paper's Figure 1: 16, 4 + 12/Nd, 2 + 14/Nd, 16/Nd)."""
    psi = param_counts(load_arch("llama-2-7b"))[0]
    run = TrainingRun.of("llama-2-7b", seq=1024, global_batch=8)
    s = get_system("dgx-h100")
    per_param = {}
    for zero in (0, 1, 2, 3):
        m = estimate(run, Layout(dp=8, zero=zero), s).memory
        per_param[zero] = (m["weights"] + m["gradients"] + m["optimizer"]) / psi
    assert per_param[0] == pytest.approx(16)
    assert per_param[1] == pytest.approx(2 + 2 + 12 / 8)
    assert per_param[2] == pytest.approx(2 + (2 + 12) / 8)
    assert per_param[3] == pytest.approx(16 / 8)


def test_activation_memory_korthikanti():
    """Per layer and micro-batch, sequence parallel: s b h x 34 / tp bytes; without it 10 + 24 / tp; full
    recomputation keeps only the 2 s b h input; the first pipeline stage holds pp micro-batches."""
    run = TrainingRun.of("llama-2-7b", seq=2048, global_batch=16)
    s = get_system("dgx-h100")
    sbh = 2048 * 1 * 4096
    e = estimate(run, Layout(tp=4, pp=2, zero=1), s)
    assert e.memory["activations"] == pytest.approx(sbh * 34 / 4 * 16 * 2)  # 16 layers per stage, 2 in flight
    e = estimate(run, Layout(tp=4, pp=2, sp=False), s)
    assert e.memory["activations"] == pytest.approx(sbh * (10 + 24 / 4) * 16 * 2)
    e = estimate(run, Layout(tp=4, pp=2, recompute="full"), s)
    assert e.memory["activations"] == pytest.approx(sbh * 2 * 16 * 2)


def test_one_f_one_b_bubble():
    """1F1B: (m + pp - 1) micro-batch slots, bubble (pp - 1) / (m + pp - 1); interleaved v chunks: (pp - 1) / v."""
    run = TrainingRun.of("llama-2-7b", seq=1024, global_batch=8)
    s = get_system("dgx-h100")
    e = estimate(run, Layout(pp=4, dp=2), s)  # 8 / 2 = 4 micro-batches per data-parallel rank
    assert e.micro_batches == 4 and e.bubble_share == pytest.approx(3 / 7)
    e2 = estimate(run, Layout(pp=4, dp=2, interleave=2), s)
    assert e2.bubble_share == pytest.approx(1.5 / 5.5)
    # the step: every slot runs one micro-batch's forward + backward (+ recomputation)
    assert e.time == pytest.approx(e.slots * e.compute + e.exposed_comm + e.optimizer)
    assert e.backward == pytest.approx(2 * e.forward)


def test_collectives_use_the_tier_their_group_crosses():
    """tp 8 inside a node (NVLink), dp 2 across two nodes (InfiniBand): each comm's time is the collective
    model's for that group, times how often the step runs it."""
    run = TrainingRun.of("llama-2-7b", seq=4096, global_batch=64)
    s = get_system("dgx-h100", nodes=2)
    e = estimate(run, Layout(tp=8, dp=2, zero=1), s)
    comms = {c.name: c for c in e.comms}
    assert comms["tp all-reduce"].tiers == ("node",) and comms["dp grad all-reduce"].tiers == ("cluster",)
    msg = 4096 * 4096 * 2  # one sequence's activations, bf16
    per = cost("all_reduce", msg, s, ranks=8, per_node=8).time
    # 2 forward + 2 backward per layer, the vocabulary-parallel embedding's forward and lm_head's input
    # gradient, per micro-batch
    assert comms["tp all-reduce"].time == pytest.approx(per * (4 * 32 + 2) * e.micro_batches)
    grads = 2 * e.memory["weights"] / 2  # bf16 gradients of the device's parameters
    assert comms["dp grad all-reduce"].time == pytest.approx(cost("all_reduce", grads, s, ranks=2, per_node=1).time)
    # the bound overlaps: never more than the exposed time, never less than the compute
    assert e.slots * e.compute + e.optimizer <= e.bound + 1e-12 <= e.time + 1e-12


def test_planner_enumerates_a_hand_case():
    """A 2-device node: tp in {1, 2} (heads divide), cp in {1, 2}, pp in {1, 2} (layers divide), dp the rest:
    (tp, cp, pp, dp) = (1,1,1,2), (1,1,2,1), (1,2,1,1), (2,1,1,1); x 2 ZeRO stages x 1 micro-batch size x 1
    recomputation = 8 layouts."""
    tier = NetworkTier("link", "node", 100e9, 1e-6, "switch")
    s = System("pair", get_system("dgx-h100").device, 2, 1, (tier,))
    run = TrainingRun.of("llama-2-7b", seq=512, global_batch=4)
    got = {(x.tp, x.cp, x.pp, x.dp, x.zero) for x in
           layouts(run, s, micro_batches=(1,), zeros=(0, 3), recomputes=("none",))}
    shapes = {(1, 1, 1, 2), (1, 1, 2, 1), (1, 2, 1, 1), (2, 1, 1, 1)}
    assert got == {(*shape, z) for shape in shapes for z in (0, 3)}
    p = plan(run, s, top=20, micro_batches=(1,), zeros=(0, 3), recomputes=("none",))
    assert p.tried == 8 and len(p.ranked) + p.too_big == 8
    times = [e.time for e in p.ranked]
    assert times == sorted(times)
    # the best is the fastest of every layout, estimated one by one
    every = [estimate(run, lay, s) for lay in layouts(run, s, micro_batches=(1,), zeros=(0, 3), recomputes=("none",))]
    assert p.ranked[0].time == pytest.approx(min(e.time for e in every if e.fits))


def test_bad_layouts_are_one_line():
    run = TrainingRun.of("llama-2-7b", seq=1024, global_batch=8)
    s = get_system("dgx-h100")
    with pytest.raises(RooflineError, match="uses tp x cp x pp x dp = 4 devices"):
        check(run, Layout(tp=4), s)  # does not divide the system (8 devices)
    with pytest.raises(RooflineError, match="below the pipeline depth"):
        check(run, Layout(pp=8, micro_batch=2), s)  # 8 / 2 = 4 micro-batches < pp 8
    with pytest.raises(RooflineError, match="does not divide the 32 layers"):
        check(run, Layout(pp=8, interleave=3), s)
    with pytest.raises(RooflineError, match="ep 2 must divide"):
        check(run, Layout(dp=8, ep=2), s)  # a dense model has no experts
    lone = System("lone", s.device, 8, 2, (s.tier("node"),))  # two nodes, no tier between them
    with pytest.raises(RooflineError, match="no cluster tier"):
        estimate(run, Layout(tp=8, dp=2), lone)


def test_plan_cli(tmp_path, capsys):
    out = tmp_path / "plan.json"
    assert main(["plan", "llama-2-7b", "--system", "dgx-h100", "--nodes", "2", "--train", "--global-batch", "64",
                 "--seq", "2048", "--top", "3", "--price", "2.5", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "layouts tried" in text and "$/Mtok" in text and text.count("\n") >= 6
    doc = json.loads(out.read_text())
    assert len(doc["layouts"]) == 3 and doc["devices"] == 16
    steps = [x["seconds"] for x in doc["layouts"]]
    assert steps == sorted(steps)
    assert main(["plan", "llama-2-7b", "--system", "dgx-h100", "--nodes", "2", "--train", "--global-batch", "64",
                 "--layout", "tp=8,dp=2,zero=1,mb=1"]) == 0
    assert "tp8 pp1 dp2 zero1 mb1 selective" in capsys.readouterr().out


@pytest.mark.parametrize("argv,message", [
    (["--layout", "tp=8,dp=3"], "uses tp x cp x pp x dp"),
    (["--layout", "tp=8,pp=2,mb=64"], "below the pipeline depth"),
    (["--layout", "tq=8"], "KEY=VALUE"),
    (["--layout", "tp=x"], "whole number"),
    (["--overlap", "2"], "--overlap"),
])
def test_plan_cli_bad_input(tmp_path, capsys, argv, message):
    out = tmp_path / "plan.json"
    assert main(["plan", "llama-2-7b", "--system", "dgx-h100", "--nodes", "2", "--train", "--global-batch", "64",
                 "--json", str(out), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()


def test_plan_cli_bad_system_file(tmp_path, capsys):
    bad = tmp_path / "sys.json"
    bad.write_text(json.dumps({"schema": "roofline.system/1", "name": "x", "device": "h100", "devices_per_node": 8,
                               "nodes": 2, "tiers": [{"name": "nv", "scope": "node", "bandwidth": "-5 GB/s",
                                                      "latency": "1 us"}]}))
    assert main(["plan", "llama-2-7b", "--system", str(bad), "--train", "--global-batch", "64"]) == 2
    assert "bandwidth" in capsys.readouterr().err


def test_serving_stage_is_the_llm_decode_step():
    """One replica, tp 4, no pipeline, 1 generated token: the time per token is the decode step of
    'roofline llm' at context prompt + 1 on the same device (its compute ops; the tp all-reduces are the
    collective model's here) plus 2 all-reduces per layer of batch x hidden bf16 values."""
    from roofline.analysis import analyze
    from roofline.frontends.llm import from_llm
    from roofline.planner import ServingRun, estimate_serving

    s = get_system("dgx-h100")
    run = ServingRun.of("llama-2-7b", batch=8, prompt=1024, gen=1)
    e = estimate_serving(run, Layout(tp=4, dp=2), s)
    a = analyze(from_llm("llama-2-7b", phase="decode", batch=8, context=1025, tp=4, flash=True), s.device)
    ops = np.asarray([a.workload.strings("kind", i) != "collective" for i in range(len(a.workload))])
    assert e.stage == pytest.approx(float(a.total_op_time[ops].sum()))
    ar = cost("all_reduce", 8 * 4096 * 2, s, ranks=4).time
    assert e.time == pytest.approx(e.stage + 2 * 32 * ar)
    assert e.tokens_per_second == pytest.approx(2 * 8 / e.time)  # 2 replicas of 8 sequences
    assert e.memory["weights"] == pytest.approx(param_counts(load_arch("llama-2-7b"))[0] * 2 / 4, rel=1e-3)


def test_serving_plan_and_bad_layouts(capsys):
    from roofline.planner import ServingRun, check_serving

    s = get_system("dgx-h100")
    run = ServingRun.of("llama-2-7b", batch=8)
    with pytest.raises(RooflineError, match="not a whole number of micro-batches"):
        check_serving(ServingRun.of("llama-2-7b", batch=6), Layout(tp=2, pp=4), s)
    with pytest.raises(RooflineError, match="interleave is a training pipeline's"):
        check_serving(run, Layout(tp=4, pp=2, interleave=2), s)
    p = plan(run, s)
    rates = [e.tokens_per_second for e in p.ranked]
    assert rates == sorted(rates, reverse=True) and p.tried == len(list(__import__(
        "roofline.planner", fromlist=["serving_layouts"]).serving_layouts(run, s)))
    assert main(["plan", "llama-2-7b", "--system", "dgx-h100", "--serve", "--batch", "8", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "serving on NVIDIA DGX H100" in out and "ttft" in out


def test_training_workload_two_routes():
    """from_llm(phase='train') op by op against the planner's estimate of the same step (tp 8 on one DGX H100
    node, no other parallelism, ZeRO 0, no recomputation): the ops' roofline times add up to the pipeline's
    micro-batch slots x (forward + backward) + the optimizer; on one device its FLOPs, without the
    optimizer, are training_flops."""
    from roofline.analysis import analyze
    from roofline.frontends.llm import from_llm
    from roofline.llm.training import training_workload

    run = TrainingRun.of("llama-2-7b", seq=2048, global_batch=8)
    w = training_workload(run, tp=8, recompute="none")
    s = get_system("dgx-h100")
    a = analyze(w, s.device)
    kinds = np.asarray([w.strings("kind", i) for i in range(len(w))])
    names = [w.strings("name", i) for i in range(len(w))]
    compute = kinds != "collective"
    e = estimate(run, Layout(tp=8, zero=0, recompute="none"), s)
    assert float(a.total_op_time[compute].sum()) == pytest.approx(e.slots * e.compute + e.optimizer, rel=1e-9)
    # on one device (tp 1: nothing replicated), the ops' FLOPs without Adam's are training_flops
    w1 = training_workload(run, tp=1, recompute="none")
    flops = w1.columns["flops"] * w1.columns["count"]
    adam = [w1.strings("name", i) for i in range(len(w1))].index("train.optimizer.adam")
    assert float(flops.sum() - flops[adam]) == pytest.approx(training_flops(run), rel=1e-9)
    assert any(n.endswith(" (backward)") for n in names) and not any(n.endswith(" (recompute)") for n in names)
    # the same through from_llm, with selective recomputation: the attention core once more
    w2 = from_llm("llama-2-7b", phase="train", batch=8, prompt=2048, tp=8)
    assert any(n.endswith("(recompute)") for n in (w2.strings("name", i) for i in range(len(w2))))
    assert w2.info["memory_bytes"] == pytest.approx(sum(estimate(run, Layout(tp=8, zero=0), s).memory.values()))


def test_llm_train_cli(capsys, tmp_path):
    out = tmp_path / "t.json"
    assert main(["llm", "llama-2-7b", "--device", "h100", "--train", "--batch", "8", "--prompt", "2048", "--tp", "8",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "training step" in text and "memory per device" in text and "fits" in text
    assert main(["llm", "llama-2-7b", "--device", "h100", "--train", "--sweep", "batch=1..8"]) == 2
    assert "drop --sweep" in capsys.readouterr().err


def test_plan_chart_parts_sum_to_the_time(tmp_path, capsys):
    """Each bar's parts are the step split: they add up to the step time; the chart is written with the JSON."""
    run = TrainingRun.of("llama-2-7b", seq=2048, global_batch=64)
    s = get_system("dgx-h100", nodes=2)
    for lay in (Layout(tp=8, dp=2), Layout(tp=4, pp=2, dp=2, zero=3, overlap=0.5)):
        e = estimate(run, lay, s)
        assert sum(e.parts().values()) == pytest.approx(e.time)
    png = tmp_path / "plan.png"
    assert main(["plan", "llama-2-7b", "--system", "dgx-h100", "--nodes", "2", "--train", "--global-batch", "64",
                 "--top", "4", "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["plan", "llama-2-7b", "--system", "dgx-h100", "--train", "-o", str(tmp_path / "p.txt")]) == 2
    assert "roofline: error:" in capsys.readouterr().err


def test_llm_on_a_system_uses_the_node_tier(capsys):
    """roofline llm --system: the tensor-parallel all-reduces run under the node tier (450 GB/s NVLink per GPU
    on DGX H100, 0.6 us per hop, in-switch reduction), timed as the planner times them; --tp past a node is
    refused."""
    from roofline.analysis import analyze
    from roofline.frontends.llm import from_llm

    s = get_system("dgx-h100")
    dev = s.device_on("node")
    assert dev.interconnect.bandwidth == 450e9 and "NVLink 4" in dev.interconnect.name
    a = analyze(from_llm("llama-2-7b", phase="decode", batch=8, context=1024, tp=8), dev)
    i = [a.workload.strings("name", k) for k in range(len(a.workload))].index("decode.layers.attn.all_reduce")
    # the node tier's in-switch reduction (NVLS) and per-hop latency: 8 x 4096 x 2 B = 65536 B per all-reduce,
    # 2 x 0.6 us + 65536 B / 450 GB/s = 1.3456 us, the hops the larger part (collectives.on_tier, as the planner)
    assert dev.interconnect.latency == 0.6e-6 and dev.interconnect.in_switch_reduction
    assert a.bound[i] == "latency" and a.time[i] == pytest.approx(1.2e-6 + 65536 / 450e9)
    from roofline.render.chart import interconnect_roof

    link = interconnect_roof(dev, a)  # the chart draws the tier's slope, the all-reduces on it
    assert link is not None and link.bandwidth == 450e9 and "NVLink 4" in link.level
    assert interconnect_roof(dev, analyze(from_llm("llama-2-7b", phase="decode", batch=8, context=1024), dev)) is None
    assert main(["llm", "llama-2-7b", "--system", "dgx-h100", "--tp", "8", "--phase", "decode"]) == 0
    assert "NVIDIA H100" in capsys.readouterr().out
    assert main(["llm", "llama-2-7b", "--system", "dgx-h100", "--tp", "16", "--phase", "decode"]) == 2
    assert "spans more than a node" in capsys.readouterr().err


def test_serving_context_and_expert_parallel():
    """cp splits the KV cache (each device 1/cp of it) and the prompt's prefill; ep splits the routed experts'
    weights (each device 1/ep of them) and adds 2 all-to-alls per MoE layer and token."""
    from roofline.planner.serve import ServingRun, _expert_weight_bytes, check_serving, estimate_serving

    s = get_system("dgx-h100", nodes=2)
    dense = ServingRun.of("llama-2-7b", batch=8, prompt=4096, gen=64)
    one = estimate_serving(dense, Layout(tp=8, dp=2), s)
    two = estimate_serving(dense, Layout(tp=8, dp=1, cp=2), s)
    assert two.memory["kv cache"] == pytest.approx(one.memory["kv cache"] / 2)
    assert two.memory["weights"] == pytest.approx(one.memory["weights"])  # replicated over cp
    assert two.ttft < one.ttft and "cp attention combine" in {c.name for c in two.comms}
    moe = ServingRun.of("mixtral-8x7b", batch=8, prompt=1024, gen=64)
    e1 = estimate_serving(moe, Layout(tp=4, dp=4), s)
    e2 = estimate_serving(moe, Layout(tp=4, dp=4, ep=2), s)
    experts = _expert_weight_bytes(moe.arch, 4, moe.precisions)
    assert e1.memory["weights"] - e2.memory["weights"] == pytest.approx(experts / 2)  # half the experts held
    a2a = [c for c in e2.comms if c.name == "ep all-to-all"][0]
    msg = 8 * moe.arch.top_k * moe.arch.hidden * 2  # the micro-batch's routed tokens, bf16
    assert a2a.time == pytest.approx(2 * 32 * cost("all_to_all", msg, s, ranks=2, per_node=2).time)
    with pytest.raises(RooflineError, match="does not divide the prompt"):
        check_serving(ServingRun.of("llama-2-7b", prompt=1001), Layout(tp=8, cp=2), s)
    with pytest.raises(RooflineError, match="ep 2 must divide"):
        check_serving(dense, Layout(tp=8, dp=2, ep=2), s)


def test_review_findings():
    """Groups that split unevenly over nodes are skipped by the planner (3 nodes of 8: a 12-rank group);
    ZeRO shards the experts over dp / ep ranks only; cp ranks reduce their gradients too; a pipeline stage
    sends its 1/tp of the activations."""
    s3 = get_system("dgx-h100", nodes=3)
    p = plan(TrainingRun.of("llama-2-7b", seq=2048, global_batch=96), s3, top=3)
    assert p.ranked and p.uneven > 0
    with pytest.raises(RooflineError, match="splits unevenly"):
        estimate(TrainingRun.of("llama-2-7b", seq=2048, global_batch=96), Layout(tp=1, pp=2, dp=12), s3)
    # Mixtral on 2 nodes, tp 1, dp 16, ep 8, ZeRO 2: each expert is held by 16 / 8 = 2 ranks
    s2 = get_system("dgx-h100", nodes=2)
    run = TrainingRun.of("mixtral-8x7b", seq=4096, global_batch=64)
    e = estimate(run, Layout(tp=1, dp=16, ep=8, zero=2), s2)
    dense_expert = {c.name: c for c in e.comms}
    assert "expert dp grad reduce-scatter" in dense_expert and "dp grad reduce-scatter" in dense_expert
    from roofline.planner.cache import _Cache

    sh = _Cache(s2).shard(run, 1, 1, 8, 1)
    dense_p = sh.layer_params - sh.expert_params + sh.first_params + sh.last_params
    assert e.memory["weights"] == pytest.approx(2 * (dense_p + sh.expert_params))
    assert e.memory["gradients"] == pytest.approx(2 * (dense_p / 16 + sh.expert_params / 2))
    assert e.memory["optimizer"] == pytest.approx(12 * (dense_p / 16 + sh.expert_params / 2))
    # context parallel: gradients reduced over dp x cp
    e_cp = estimate(TrainingRun.of("llama-2-7b", seq=4096, global_batch=8), Layout(tp=8, cp=2), s2)
    assert "dp grad all-reduce" in {c.name for c in e_cp.comms}
    # pipeline send of a tp-sharded stage: 1/tp of the micro-batch's activations per device
    e_pp = estimate(TrainingRun.of("llama-2-7b", seq=4096, global_batch=8), Layout(tp=8, pp=2), s2)
    send = [c for c in e_pp.comms if c.name == "pp send/recv"][0]
    one = cost("send_recv", 4096 * 4096 * 2 / 8, s2, ranks=2, per_node=1).time
    assert send.time == pytest.approx(one * 2 * e_pp.micro_batches)


def test_plan_cli_review_edges(tmp_path, capsys):
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"schema": "roofline.system/1", "name": "solo", "device": "h100",
                               "devices_per_node": 8, "nodes": 1,
                               "tiers": [{"name": "nv", "scope": "node", "bandwidth": "450 GB/s", "latency": "1 us"}]}))
    for nodes, message in (("-3", "nodes must be"), ("0", "nodes must be"), ("2", "no cluster tier")):
        assert main(["plan", "llama-2-7b", "--system", str(one), "--nodes", nodes, "--train"]) == 2
        assert message in capsys.readouterr().err
    assert main(["plan", "llama-2-7b", "--system", "dgx-h100", "--nodes", "2", "--serve",
                 "--layout", "tp=8,dp=2,ep=0"]) == 2
    assert "ep must be a whole number" in capsys.readouterr().err
    assert main(["plan", "llama-2-7b", "--system", "dgx-h100", "--train", "--layout", "dp=8,sp=maybe"]) == 2
    assert "sp must be true or false" in capsys.readouterr().err
