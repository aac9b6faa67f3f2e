"""Parallel LLM training: one layout's step (hand-derived pieces) and the layout planner."""

from __future__ import annotations

import json

import numpy as np
import pytest

from roofline.catalog import get_system
from roofline.cli import main
from roofline.core.errors import RooflineError
from roofline.engine.collectives import cost
from roofline.hardware.system import NetworkTier, System
from roofline.llm.config import load_arch
from roofline.llm.sizes import param_counts
from roofline.planner import Layout, TrainingRun, check, estimate, layouts, plan, plan_layouts, training_flops


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


def test_activation_bytes_of_one_llama_layer():
    """Llama-2-7B (h 4096, SwiGLU f 11008, 32 heads of 128, MHA), s 2048, b 1, per layer, from its ops: kept
    for backward, per token, elements: the two norms' inputs 2h, the normed input of Q/K/V h, Q, K, V 3h,
    o_proj's input h, the normed input of gate/up h, gate's and up's outputs 2f (the fused SwiGLU's input:
    Megatron-Core's SwiGLUFunction saves only its input and recomputes SiLU(gate) in the backward), the
    product f (down's input): 8h + 3f elements of 2 bytes (4f if SiLU's output were kept too), plus the fp32
    log-sum-exp of 32 heads (128 B).  tp 4 with SP: all of it / 4; without SP the hidden-width tensors (norm
    inputs 2h, the two normed inputs 2h) stay whole.  Selective = none (FlashAttention keeps no scores to
    drop); full keeps the layer input, 2 s b h (/ tp with SP)."""
    from roofline.llm.training import activation_bytes_per_layer

    h, f, s = 4096, 11008, 2048
    run = TrainingRun.of("llama-2-7b", seq=s, global_batch=16)
    one = s * (2 * (8 * h + 3 * f) + 4 * 32)  # 2048 x (2 x (32,768 + 33,024) + 128) = 269,746,176
    assert activation_bytes_per_layer(run, recompute="none") == pytest.approx(one)
    assert activation_bytes_per_layer(run, recompute="selective") == pytest.approx(one)
    assert activation_bytes_per_layer(run, tp=4, sp=True, recompute="none") == pytest.approx(one / 4)
    no_sp = s * (2 * 4 * h + 2 * (4 * h + 3 * f) / 4 + 4 * 32 / 4)
    assert activation_bytes_per_layer(run, tp=4, sp=False, recompute="none") == pytest.approx(no_sp)
    assert activation_bytes_per_layer(run, tp=4, sp=True, recompute="full") == pytest.approx(s * 2 * h / 4)
    assert activation_bytes_per_layer(run, tp=4, sp=False, recompute="full") == pytest.approx(s * 2 * h)
    # GQA: Llama-3-70B's 8 KV heads of 128 keep K and V at h/8 each: 2h + h + h + h/4 + h + h + 3f
    h3, f3 = 8192, 28672
    run3 = TrainingRun.of("llama-3-70b", seq=s, global_batch=16)
    assert activation_bytes_per_layer(run3, recompute="none") == pytest.approx(
        s * (2 * (6.25 * h3 + 3 * f3) + 4 * 64))


def test_activation_bytes_of_one_gpt_layer_cross_check_korthikanti():
    """GPT-2 (h 768, 12 heads, 4h GeLU MLP, MHA) from its ops: 2h norm inputs + h + 3h (Q, K, V) + h (o_proj
    in) + h (fc1 in) + 4h (GeLU in) + 4h (fc2 in) = 16h elements = 32 s b h bytes (+ the log-sum-exp).
    Korthikanti et al. 2022 (eq. 1-2): 34 s b h with SP / tp, s b h (10 + 24 / tp) without; the 2 s b h
    difference is their two 1-byte dropout masks (attention output, MLP output), which this model omits."""
    from roofline.llm.training import activation_bytes_per_layer

    h, s, heads = 768, 1024, 12
    run = TrainingRun.of("gpt2", seq=s, global_batch=8)
    for tp, sp, korthikanti, masks in ((1, True, 34, 2), (4, True, 34 / 4, 2 / 4), (4, False, 10 + 24 / 4, 2)):
        ours = activation_bytes_per_layer(run, tp=tp, sp=sp, recompute="selective")
        lse = s * 4 * heads / tp
        assert ours - lse + masks * s * h == pytest.approx(korthikanti * s * h)


def test_activations_in_flight_1f1b_and_interleaved():
    """1F1B: the first stage holds pp micro-batches of its layers (Narayanan et al. 2021), the last one;
    interleaved over v chunks the first holds pp (1 + (pp - 1) / (pp v)) (Korthikanti et al. 2022, 4.2.3):
    pp 2, v 2: 2.5 micro-batches of its 16 layers."""
    from roofline.llm.training import activation_bytes_per_layer, logits_bytes

    run = TrainingRun.of("llama-2-7b", seq=2048, global_batch=16)
    s = get_system("dgx-h100")
    per = activation_bytes_per_layer(run, tp=4, recompute="selective")
    e = estimate(run, Layout(tp=4, pp=2, zero=1), s)
    first = per * 16 * 2
    last = per * 16 * 1 + logits_bytes(run, tp=4)  # 2048 x 32000 / 4 fp32 logits: 65.5 MB
    assert e.memory_stage == (0 if first + 0 > last else 1)
    assert e.memory["activations"] == pytest.approx(max(first, last))
    e2 = estimate(run, Layout(tp=4, pp=2, zero=1, interleave=2), s)
    assert e2.memory_stage == 0 and e2.memory["activations"] == pytest.approx(per * 16 * 2 * (1 + 1 / 4))


def test_one_f_one_b_bubble():
    """1F1B: (m + pp - 1) micro-batch slots, bubble (pp - 1) / (m + pp - 1); interleaved v chunks: (pp - 1) / v."""
    run = TrainingRun.of("llama-2-7b", seq=1024, global_batch=8)
    s = get_system("dgx-h100")
    e = estimate(run, Layout(pp=4, dp=2), s)  # 8 / 2 = 4 micro-batches per data-parallel rank
    assert e.micro_batches == 4 and e.bubble_share == pytest.approx(3 / 7)
    e2 = estimate(run, Layout(pp=4, dp=2, interleave=2), s)
    assert e2.bubble_share == pytest.approx(1.5 / 5.5)
    # the step: every slot runs one micro-batch's forward + backward (+ recomputation)
    assert e.time == pytest.approx(e.slots * e.forecast_compute + e.exposed_comm + e.forecast_optimizer + e.sm_contention)
    assert e.backward == pytest.approx(2 * e.forward)


def test_collectives_use_the_tier_their_group_crosses():
    """tp 8 inside a node (NVLink), dp 2 across two nodes (InfiniBand): each comm's time is the collective
    model's for that group, times how often the step runs it."""
    run = TrainingRun.of("llama-2-7b", seq=4096, global_batch=64)
    s = get_system("dgx-h100", nodes=2)
    e = estimate(run, Layout(tp=8, dp=2, zero=1), s)
    comms = {c.name: c for c in e.comms}
    assert comms["tp all-reduce"].tiers == ("node",) and comms["dp grad reduce-scatter"].tiers == ("cluster",)
    msg = 4096 * 4096 * 2  # one sequence's activations, bf16
    per = cost("all_reduce", msg, s, ranks=8, per_node=8).time
    # 2 forward + 2 backward per layer, the vocabulary-parallel embedding's forward and lm_head's input
    # gradient, per micro-batch
    assert comms["tp all-reduce"].time == pytest.approx(per * (4 * 32 + 2) * e.micro_batches)
    grads = 2 * e.memory["weights"] / 2  # bf16 gradients of the device's parameters
    # ZeRO 1 (Megatron's distributed optimizer): one reduce-scatter and one all-gather per step
    assert comms["dp grad reduce-scatter"].time == pytest.approx(
        cost("reduce_scatter", grads, s, ranks=2, per_node=1).time)
    assert comms["dp weight all-gather"].time == pytest.approx(cost("all_gather", grads, s, ranks=2, per_node=1).time)
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
           layouts(run, s, micro_batches=(1,), zeros=(0, 3), recomputes=("none",), interleaves=(1,))}
    shapes = {(1, 1, 1, 2), (1, 1, 2, 1), (1, 2, 1, 1), (2, 1, 1, 1)}
    assert got == {(*shape, z) for shape in shapes for z in (0, 3)}
    p = plan(run, s, top=20, micro_batches=(1,), zeros=(0, 3), recomputes=("none",), interleaves=(1,))
    assert p.tried == 8 and len(p.ranked) + p.too_big == 8
    times = [e.time for e in p.ranked]
    assert times == sorted(times)
    # the best is the fastest of every layout, estimated one by one
    every = [estimate(run, lay, s) for lay in layouts(run, s, micro_batches=(1,), zeros=(0, 3), recomputes=("none",),
                                                      interleaves=(1,))]
    assert p.ranked[0].time == pytest.approx(min(e.time for e in every if e.fits))


def test_bad_layouts_are_one_line():
    run = TrainingRun.of("llama-2-7b", seq=1024, global_batch=8)
    s = get_system("dgx-h100")
    with pytest.raises(RooflineError, match="uses tp x cp x pp x dp = 4 devices"):
        check(run, Layout(tp=4), s)  # does not divide the system (8 devices)
    with pytest.raises(RooflineError, match="below the pipeline depth"):
        check(run, Layout(pp=8, micro_batch=2), s)  # 8 / 2 = 4 micro-batches < pp 8
    with pytest.raises(RooflineError, match="interleave 5 leaves chunk 4 of pipeline stage 2 with 0 layers"):
        check(run, Layout(pp=8, interleave=5), s)  # 4 layers a stage over 5 chunks
    with pytest.raises(RooflineError, match="ep 2 must divide"):
        check(run, Layout(dp=8, ep=2), s)  # a dense model has no experts
    lone = System("lone", s.device, 8, 2, (s.tier("node"),))  # two nodes, no tier between them
    with pytest.raises(RooflineError, match="no cluster tier"):
        estimate(run, Layout(tp=8, dp=2), lone)


def test_plan_cli(tmp_path, capsys):
    """The JSON the command writes is the result's (cross-checked against plan_layouts called directly); the
    cost per million tokens by hand: 2.5 USD per device-hour x 16 devices / 3600 s x the forecast step over the
    step's 64 x 2048 tokens, x 1e6."""
    out = tmp_path / "plan.json"
    assert main(["plan", "llama-2-7b", "--system", "dgx-h100", "--nodes", "2", "--train", "--global-batch", "64",
                 "--seq", "2048", "--top", "3", "--price", "2.5", "--json", str(out)]) == 0
    assert "$/Mtok" in capsys.readouterr().out  # the priced column is drawn
    doc = json.loads(out.read_text())
    assert len(doc["layouts"]) == 3 and doc["devices"] == 16
    steps = [x["seconds"] for x in doc["layouts"]]
    assert steps == sorted(steps)
    for row in doc["layouts"]:
        assert row["usd_per_million_tokens"] == pytest.approx(2.5 * 16 / 3600 * row["forecast_seconds"]
                                                               / (64 * 2048) * 1e6, rel=1e-12)
    run = TrainingRun.of("llama-2-7b", seq=2048, global_batch=64)
    result = plan_layouts(run, get_system("dgx-h100", nodes=2), top=3, price=2.5)
    assert [r.estimate.describe() for r in result.rows] == [x["layout"] for x in doc["layouts"]]
    assert result.search is not None and doc["tried"] == result.tried == result.search.tried > 3
    # four keys named: the rest (pp 1, cp 1 and ep 1 as 16 = 8 x 2 leaves them; recomputation, interleave) searched
    part = plan_layouts(run, get_system("dgx-h100", nodes=2), layout="tp=8,dp=2,zero=1,mb=1")
    assert part.fixed == {"tp": 8, "dp": 2, "zero": 1, "micro_batch": 1} and not part.one_layout
    assert "tp8 pp1 dp2 zero1 mb1 selective" in [e.describe() for e in part.estimates]
    assert main(["plan", "llama-2-7b", "--system", "dgx-h100", "--nodes", "2", "--train", "--global-batch", "64",
                 "--layout", "tp=8,dp=2,zero=1,mb=1"]) == 0


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
    from roofline.engine.analysis import analyze
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
    result = plan_layouts(run, s, top=3)
    assert result.serving and result.mode == "serving" and [r.rank for r in result.rows] == [1, 2, 3]
    assert result.estimates == list(p.ranked[:3]) and all(e.ttft > 0 for e in result.estimates)
    assert not any(r.tied for r in result.rows)  # ties are the training forecast's
    assert result.to_dict()["ranked_by"] == "step seconds" and "ttft_seconds" in result.to_dict()["layouts"][0]
    assert main(["plan", "llama-2-7b", "--system", "dgx-h100", "--serve", "--batch", "8", "--top", "3"]) == 0


def test_training_workload_two_routes():
    """from_llm(phase='train') op by op against the planner's estimate of the same step (tp 8 on one DGX H100
    node, no other parallelism, ZeRO 0, no recomputation): the ops' roofline times add up to the pipeline's
    micro-batch slots x (forward + backward) + the optimizer; on one device its FLOPs, without the
    optimizer, are training_flops."""
    from roofline.engine.analysis import analyze
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
    for lay in (Layout(tp=8, dp=2), Layout(tp=4, pp=2, dp=2, zero=3, overlap_tp=True)):
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
    from roofline.engine.analysis import analyze
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
    from roofline.planner.cache import Cache

    sh = Cache(s2).shard(run, 1, 1, 8, 1)
    dense_p = sh.layer_params - sh.expert_params + sh.first_params + sh.last_params
    assert e.memory["weights"] == pytest.approx(2 * (dense_p + sh.expert_params))
    assert e.memory["gradients"] == pytest.approx(2 * (dense_p / 16 + sh.expert_params / 2))
    assert e.memory["optimizer"] == pytest.approx(12 * (dense_p / 16 + sh.expert_params / 2))
    # context parallel: gradients reduced over dp x cp
    e_cp = estimate(TrainingRun.of("llama-2-7b", seq=4096, global_batch=8), Layout(tp=8, cp=2), s2)
    assert "dp grad reduce-scatter" in {c.name for c in e_cp.comms}
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
    for nodes, message in (("-3", "--nodes '-3': must be"), ("0", "--nodes '0': must be"), ("2", "no cluster tier")):
        assert main(["plan", "llama-2-7b", "--system", str(one), "--nodes", nodes, "--train"]) == 2
        assert message in capsys.readouterr().err
    assert main(["plan", "llama-2-7b", "--system", "dgx-h100", "--nodes", "2", "--serve",
                 "--layout", "tp=8,dp=2,ep=0"]) == 2
    assert "ep must be a whole number" in capsys.readouterr().err
    assert main(["plan", "llama-2-7b", "--system", "dgx-h100", "--train", "--layout", "dp=8,sp=maybe"]) == 2
    assert "sp must be true or false" in capsys.readouterr().err


@pytest.mark.parametrize("m", [1, 8])
def test_zero_stages_memory_and_bytes(m):
    """Llama-2-7B on 8-way data parallelism (one DGX H100), Psi parameters per device, m micro-batches of 1:
    ZeRO 0 all-reduces 2 Psi gradient bytes once per step; 1 (Megatron's distributed optimizer: a full
    gradient buffer) reduce-scatters them and all-gathers the 2 Psi weight bytes once per step, whatever m;
    2 (sharded gradients) reduce-scatters every micro-batch (m calls) and all-gathers once; 3 gathers the
    weights twice per micro-batch (forward, backward) and reduce-scatters every micro-batch.  Memory: 16,
    4 + 12/8, 2 + 14/8, 16/8 bytes per parameter, the same for 1 and 8 micro-batches."""
    from roofline.llm.training import stage_params

    psi = stage_params(load_arch("llama-2-7b"), 1).total
    run = TrainingRun.of("llama-2-7b", seq=1024, global_batch=8 * m)
    s = get_system("dgx-h100")
    expected = {0: {"dp grad all-reduce": 1},
                1: {"dp grad reduce-scatter": 1, "dp weight all-gather": 1},
                2: {"dp grad reduce-scatter": m, "dp weight all-gather": 1},
                3: {"dp fsdp weight all-gather": 2 * m, "dp fsdp grad reduce-scatter": m}}
    per_param = {0: 16, 1: 4 + 12 / 8, 2: 2 + 14 / 8, 3: 16 / 8}
    for zero, calls in expected.items():
        e = estimate(run, Layout(dp=8, zero=zero), s)
        assert e.micro_batches == m
        dp = {c.name: c for c in e.comms if c.name.startswith("dp ")}
        assert set(dp) == set(calls)
        for name, n in calls.items():
            assert dp[name].calls == n and dp[name].message_bytes == pytest.approx(2 * psi)
            assert dp[name].bytes_per_step == pytest.approx(2 * psi * n)
        states = e.memory["weights"] + e.memory["gradients"] + e.memory["optimizer"]
        assert states == pytest.approx(per_param[zero] * psi)
        assert f"ZeRO {zero}: sharded" in e.zero


def test_per_stage_flops_sum_to_the_models():
    """pp 4 x dp 2, no recomputation, ZeRO 1: every device's FLOPs summed (each stage's x dp) are the step's,
    training_flops (3 x the forward, lm_head once) plus Adam's 13 per parameter, each parameter updated by one
    rank; the last stage alone carries lm_head, so it does more than a middle one."""
    from roofline.llm.training import ADAM_FLOPS, stage_params

    run = TrainingRun.of("llama-2-7b", seq=1024, global_batch=8)
    e = estimate(run, Layout(pp=4, dp=2, zero=1, recompute="none"), get_system("dgx-h100"))
    psi = stage_params(run.arch, 1).total
    assert sum(e.stage_flops) * 2 == pytest.approx(training_flops(run) + ADAM_FLOPS * psi, rel=1e-12)
    assert e.flops == pytest.approx(sum(e.stage_flops) / 4)
    lm_head = 2 * 4096 * 32000 * 1024 * 4 * 3  # per token 2 h V, 1024 tokens, 4 micro-batches, x 3 (fwd + bwd)
    assert e.stage_flops[3] - e.stage_flops[1] == pytest.approx(lm_head, rel=1e-3)  # + the final norm


def test_uneven_stages_126_layers_on_pp16():
    """Llama-3-405B's 126 layers on 16 stages: the first and last take 7, the rest 8 (Llama 3, section
    3.3.2); the busiest stage paces the pipeline: forward = max(8 l, 7 l + embedding, 7 l + lm_head) for l
    one layer's time.  stages= sets the split; one not summing to the layers is one line."""
    from roofline.planner.cache import Cache
    from roofline.planner.layout import stage_layers

    assert stage_layers(126, 16) == (7,) + (8,) * 14 + (7,)
    assert stage_layers(10, 4) == (2, 3, 3, 2) and stage_layers(11, 4) == (2, 3, 3, 3)
    s = get_system("dgx-h100", nodes=16)
    run = TrainingRun.of("llama-3-405b", seq=4096, global_batch=16)
    lay = Layout(tp=8, pp=16, dp=1, zero=1, recompute="none")
    e = estimate(run, lay, s)
    assert e.stage_layers == stage_layers(126, 16)
    sh = Cache(s).shard(run, 8, 1, 1, 1)
    layer = sh.layers_time / 126
    assert e.forward == pytest.approx(max(8 * layer, 7 * layer + sh.first_time, 7 * layer + sh.last_time))
    explicit = estimate(run, Layout(tp=8, pp=16, dp=1, zero=1, recompute="none", stages=(6,) + (8,) * 15), s)
    assert explicit.stage_layers[0] == 6 and explicit.forward == pytest.approx(
        max(8 * layer + sh.last_time, 6 * layer + sh.first_time))
    with pytest.raises(RooflineError, match="sums to 127 layers; the model has 126"):
        check(run, Layout(tp=8, pp=16, stages=(7,) + (8,) * 15), s)


def test_fp8_training_on_the_fp8_roof_with_fp32_master_weights():
    """--precision fp8 (Transformer Engine): the GEMMs on the fp8 matrix roof (H100: 2x the bf16 one), the
    rest as under bf16; per parameter a bf16 weight 2, a bf16 gradient 2, the fp32 master 4, Adam's m and v
    4 + 4, and for the GEMM weights their cached fp8 copy and transpose 2."""
    from roofline.engine.analysis import analyze
    from roofline.llm.training import stage_params, state_bytes, training_ceilings, training_workload

    s = get_system("dgx-h100")
    dev = s.device
    bf16 = TrainingRun.of("llama-2-7b", seq=2048, global_batch=8)
    fp8 = TrainingRun.of("llama-2-7b", seq=2048, global_batch=8, precision="fp8")
    assert training_ceilings(dev, fp8)["peak_gemm"] == dev.ceiling("matrix", "fp8").flops
    assert training_ceilings(dev, fp8)["peak_attn"] == training_ceilings(dev, bf16)["peak_attn"]
    assert state_bytes("fp8") == {"bf16 weight": 2, "bf16 gradient": 2, "fp32 master weight": 4, "fp32 Adam m": 4,
                                  "fp32 Adam v": 4, "fp8 weight + transpose (GEMM weights)": 2}
    w = training_workload(fp8, recompute="none")
    a = analyze(w, dev)
    gemm = [i for i in range(len(w)) if w.strings("kind", i) == "matmul"]
    assert {w.strings("precision", i) for i in gemm} == {"fp8"}
    # the same FLOPs as bf16 but for the quantize passes (3 vector FLOPs per element cast: tests/test_fp8_mechanism.py);
    # each GEMM's compute time at the fp8 peak
    cast = np.asarray(w.column("module_type")) == "quantize"
    assert cast.any()
    assert float(np.dot(w.columns["flops"][~cast], w.columns["count"][~cast])) == pytest.approx(
        training_workload(bf16, recompute="none").total_flops)
    for i in gemm[:5]:
        assert a.compute_time[i] == pytest.approx(w.columns["flops"][i] / dev.ceiling("matrix", "fp8").flops)
    held = stage_params(fp8.arch, 1)
    e = estimate(fp8, Layout(dp=8, zero=0, recompute="none"), s)
    assert e.memory["weights"] == pytest.approx(2 * held.total + 2 * held.gemm)
    assert e.memory["optimizer"] == pytest.approx((4 + 4 + 4) * held.total)
    assert e.forward < estimate(bf16, Layout(dp=8, zero=0, recompute="none"), s).forward
    with pytest.raises(RooflineError, match="precision: 'fp4' is not one of bf16, fp8"):
        TrainingRun.of("llama-2-7b", precision="fp4")


def test_search_finds_cp16_for_128k_on_16384_gpus():
    """Llama 3's 128k stage (Dubey et al. 2024, Table 4: tp 8, cp 16, pp 16, dp 8 on 16,384 H100, 16M tokens
    a step = 128 sequences of 131,072): the search reaches cp 16 (no longer capped at 8), estimates the
    published layout, and ranks cp-16 layouts among those that fit."""
    s = get_system("dgx-h100", nodes=2048)
    run = TrainingRun.of("llama-3-405b", seq=131072, global_batch=128)
    published = Layout(tp=8, cp=16, pp=16, dp=8, zero=1, recompute="full")
    assert published in set(layouts(run, s, zeros=(1,), recomputes=("full",)))
    assert estimate(run, published, s).fits
    p = plan(run, s, top=100_000, zeros=(1,), recomputes=("full",), interleaves=(1,))
    assert p.ranked and any(e.layout.cp == 16 for e in p.ranked)


def test_every_searched_layout_passes_check():
    """The search skips re-checking the layouts it yields: each must pass check (uneven stages, interleaving,
    cp splitting the sequence into 2 cp chunks, micro-batches dividing the per-replica batch)."""
    s = get_system("dgx-h100", nodes=4)
    for model, seq, batch in (("llama-2-7b", 4096, 64), ("mixtral-8x7b", 2048, 32)):
        run = TrainingRun.of(model, seq=seq, global_batch=batch)
        seen = list(layouts(run, s))
        assert len(seen) > 100 and any(x.interleave > 1 for x in seen) and any(x.cp > 8 for x in seen)
        for lay in seen:
            assert check(run, lay, s) == batch // (lay.dp * lay.micro_batch)


def test_llama3_published_8k_layout_fits_without_recomputation():
    """Llama 3 405B's published 8k layout (Dubey et al. 2024, Table 4: 8,192 GPUs, tp 8, cp 1, pp 16, 16M tokens:
    dp 64, 2,048 x 8,192) fits with no recomputation.  Stage 2 (8 layers, 15 micro-batches in flight under 1F1B)
    keeps per token per layer, with SP over tp 8: the norm inputs and normed inputs 4 x 16,384 / 8 = 8,192
    elements, Q 16 x 128 = 2,048, K and V 128 each, o_proj's input 2,048, the fused SwiGLU's input
    2 x 53,248 / 8 = 13,312 and the product 6,656: 32,512 elements x 2 B + the fp32 log-sum-exp of 16 heads
    (64 B) = 65,088 B; x 8,192 tokens x 8 layers x 15 = 63.97 GB of activations (with the unfused SwiGLU's
    SiLU output too, 6,656 x 2 B more per token: 77.1 GB, past the 85 GB with the states)."""
    run = TrainingRun.of("llama-3-405b", seq=8192, global_batch=2048)
    e = estimate(run, Layout(tp=8, pp=16, dp=64, zero=1, recompute="none"), get_system("dgx-h100", nodes=1024))
    assert e.memory_stage == 1 and e.memory["activations"] == pytest.approx(65_088 * 8192 * 8 * 15, rel=1e-9)
    assert e.fits


def test_llama3_405b_interleaved_as_meta_ran_it():
    """Llama 3's pipeline (Dubey et al. 2024, section 3.3.2): an interleaved schedule with the first and the last
    stage one layer short, "the first model chunk on the first stage has only the embedding, and the last model
    chunk on the last stage has only output projection and loss calculation": 7/8x14/7 with v 8 chunks of one
    layer (v 2 and 4 too: 7 = 2 x 4 - 1 = 4 x 2 - 1); before, only v 1 passed (7 mod 8 != 0).  The bubble with
    m = 2,048 / 64 = 32: (pp - 1) / (v m + pp - 1) = 15 / (256 + 15).  The memory under Megatron-LM's
    interleaved warm-up: stage 2 (8 layers) holds 2 x 14 + 7 x 16 + 1 = 141 one-layer chunks, x 65,088 B x
    8,192 tokens (the per-layer figure of the test above) = 75.18 GB of activations; stage 1 holds 142 warm-up
    chunks less the 30 of its embedding-only chunk 0 (forwards 0..15 and 128..141) = 112 layers' worth."""
    from roofline.planner.layout import in_flight, interleaves, stage_layers

    assert interleaves(stage_layers(126, 16)) == (1, 2, 4, 8)
    assert in_flight(16, 8, 32, 0, 7) * 7 == pytest.approx(112)
    s = get_system("dgx-h100", nodes=1024)
    run = TrainingRun.of("llama-3-405b", seq=8192, global_batch=2048)
    lay = Layout(tp=8, pp=16, dp=64, zero=1, recompute="none", interleave=8)
    assert check(run, lay, s) == 32
    e = estimate(run, lay, s)
    assert e.bubble_share == pytest.approx(15 / 271)
    assert e.memory_stage == 1 and e.memory["activations"] == pytest.approx(65_088 * 8192 * 141, rel=1e-9)
    assert any(x.interleave == 8 for x in layouts(run, s, zeros=(1,), recomputes=("none",), micro_batches=(1,))
               if (x.tp, x.pp, x.dp) == (8, 16, 64))


def test_plan_cli_does_not_fit_is_timed(capsys):
    """A fully given layout past memory is timed: exit 0, the answer saying so first; tp8 pp16 dp64 with no
    recomputation at 8k and micro-batches of 2 holds 15 of them, of 8 layers, on stage 2 (index 1): twice the
    64 GB of micro-batches of 1, 128 GB of activations; the first and last stages one layer short (126 = 7 + 14
    x 8 + 7)."""
    layout = "tp=8,pp=16,dp=64,zero=1,recompute=none,mb=2"
    run = TrainingRun.of("llama-3-405b", seq=8192, global_batch=2048)
    result = plan_layouts(run, get_system("dgx-h100", nodes=1024), layout=layout)
    e = result.best
    assert result.one_layout and not e.fits and e.memory_stage == 1
    assert e.stage_layers == (7, *[8] * 14, 7)
    assert e.memory["activations"] > e.capacity
    assert main(["plan", "llama-3-405b", "--system", "dgx-h100", "--nodes", "1024", "--train", "--global-batch",
                 "2048", "--seq", "8192", "--layout", layout]) == 0
    assert capsys.readouterr().out.startswith("does not fit:")  # the deciding fact first


def test_plan_cli_json_fits_false(tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["plan", "llama-3-405b", "--system", "dgx-h100", "--nodes", "1024", "--train", "--global-batch",
                 "2048", "--seq", "8192", "--layout", "tp=8,stages=7/8x14/7,dp=64,recompute=none,mb=2",
                 "--json", str(out)]) == 0
    row = json.loads(out.read_text())["layouts"][0]
    assert row["fits"] is False and row["stage_layers"] == [7] + [8] * 14 + [7] and row["pp"] == 16


@pytest.mark.parametrize("argv,message", [
    (["--precision", "fp4"], "--precision 'fp4' is not one of bf16, fp8"),
    (["--layout", "tp=4,stages=10x3/1"], "stages=10/10/10/1 sums to 31 layers; the model has 32"),
    (["--layout", "tp=8,pp=2,stages=16x2,pp=4"], "conflict (both set pp)"),
    (["--layout", "tp=4,pp=4,stages=16x2"], "'pp=4' and 'stages=16x2' conflict (2 stages)"),
    (["--layout", "mb=2,micro_batch=4,dp=16"], "conflict (both set micro_batch)"),
    (["--layout", "tp=8,stages=a/b"], "stages= is layers per stage"),
])
def test_plan_cli_bad_training_input(tmp_path, capsys, argv, message):
    out = tmp_path / "plan.json"
    assert main(["plan", "llama-2-7b", "--system", "dgx-h100", "--nodes", "2", "--train", "--global-batch", "64",
                 "--json", str(out), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("roofline: error:")
    assert not out.exists()


def test_plan_cli_says_which_constraint_failed(capsys):
    """No layout divides: a 4095-token sequence splits into no 2 cp chunks nor over any tp > 1 (sequence
    parallelism), and 1 sequence is fewer micro-batches than 16 GPUs at tp 1 need (dp x pp = 16): the
    nearest global batch that divides, 16, is named with its layout.  None fits: the layouts nearest to fitting are named with their memory."""
    assert main(["plan", "llama-2-7b", "--system", "dgx-h100", "--nodes", "2", "--train", "--global-batch", "1",
                 "--seq", "4095"]) == 2
    err = capsys.readouterr().err
    assert "no layout of llama-2-7b divides" in err and "--global-batch 16 (tp1 pp1 dp16)" in err
    assert "no cp > 1 splits the 4095-token sequence" in err and "over tp 1 only" in err
    assert err.count("\n") == 1
    assert main(["plan", "llama-3-405b", "--system", "dgx-h100", "--nodes", "2", "--train", "--global-batch", "64"]) == 2
    err = capsys.readouterr().err
    # at dp 1 ZeRO shards nothing and ZeRO 3 adds its gathered buffers: the nearest are ZeRO 0-2, with memory
    assert "no layout of llama-3.1-405b fits" in err and "nearest: " in err and " needs " in err and "GiB" in err
    assert err.count("\n") == 1


def test_tpu_vector_ops_run_on_the_fp32_vector_roof():
    """TPU v5p: the VPU's fp32 roof, 2 TensorCores x 2048 fp32 ALUs x 2 FLOPs x 1.75 GHz (the clock
    459e12 / (2 x 4 MXUs x 128 x 128 x 2) implies) = 14.3 TFLOP/s, carries the norms and Adam; before, with no
    vector roof, they fell back to the int8 matrix peak (918 TOP/s)."""
    from roofline.catalog import get_device
    from roofline.engine.analysis import analyze
    from roofline.llm.training import training_ceilings, training_workload

    dev = get_device("tpu-v5p")
    clock = 459e12 / (2 * 4 * 128 * 128 * 2)
    assert dev.ceiling("vector", "fp32").flops == pytest.approx(2 * 2048 * 2 * clock, rel=0.005)
    run = TrainingRun.of("llama-2-7b", seq=1024, global_batch=1)
    assert training_ceilings(dev, run)["peak_vector"] == dev.ceiling("vector", "fp32").flops
    w = training_workload(run, recompute="none")
    a = analyze(w, dev)
    names = [w.strings("name", i) for i in range(len(w))]
    for name in ("train.optimizer.adam", "train.layers.attn.norm"):
        i = names.index(name)
        assert a.compute_time[i] == pytest.approx(w.columns["flops"][i] / 14.3e12)
