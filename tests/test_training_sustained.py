"""What a real training step pays that short kernel benchmarks do not (each by hand): the sustained,
power-saturated SM clock of a training step (compute-bound tensor-core ops at the cited MSMF / MAMF share of their
benchmarked rate), and NCCL's bus bandwidth below the NVLink line rate on the A100."""

from __future__ import annotations

import numpy as np
import pytest

from roofline.catalog import get_device, get_system
from roofline.engine.analysis import analyze
from roofline.planner import Layout, TrainingRun, estimate
from roofline.planner import forecast as pf
from roofline.planner.forecast import _rows
from roofline.work.workload import WorkloadBuilder


def test_sustained_rate_is_the_cited_msmf_over_mamf():
    """stas00/ml-engineering (fast-mamf 082816f), H200 SXM: BF16 MSMF 708.5 / MAMF 841.9 = 0.84155, stored to four
    places, 0.8415 (fp16 the same tensor-core rate); FP8 1288.7 / 1491.9 = 0.86380 -> 0.8638; the H100 SXM5 takes
    the H200's (same die and 700 W limit).  The A100 has no published sustained figure: 1."""
    for name in ("h100", "h200"):
        dev = get_device(name)
        assert pf.sustained_rate(dev, "bf16") == pytest.approx(0.8415)
        assert pf.sustained_rate(dev, "fp16") == pytest.approx(0.8415)
        assert pf.sustained_rate(dev, "fp8") == pytest.approx(0.8638)
    assert 708.5 / 841.9 == pytest.approx(0.8415, abs=1e-4) and 1288.7 / 1491.9 == pytest.approx(0.8638, abs=1e-4)
    assert pf.sustained_rate(get_device("a100"), "bf16") == 1.0


def _layer_forward(run: TrainingRun, device):
    """(forward seconds of the layers' compute-bound GEMM and attention rows, of every other layer row) at the
    analysis' own (burst) rates, and each row's launch overhead x count."""
    ops = WorkloadBuilder()
    table, owner, bwd = _rows(ops, run, (1, 1, 1, 1))
    w = ops.build(title="t", source="t")
    f = analyze(w, device, forecast=True).forecast
    names = np.asarray(w.column("name"))
    layer = ~bwd & np.array([".layers." in n for n in names])
    tensor = (f.term == "compute") & np.isin(np.asarray(w.column("kind")), ("matmul", "attention"))
    work = f.work * f.counts
    return float(work[layer & tensor].sum()), float((f.time * f.counts)[layer & ~tensor].sum()), float(
        (f.overhead * f.counts)[layer & tensor].sum())


def test_compute_bound_tensor_ops_run_at_the_sustained_clock():
    """GPT-2, one 1,024-token sequence on the H100: the layers' forward = C / 0.8415 + overhead of those rows + M,
    C the compute-bound GEMM and attention rows' work at the benchmarked rates, M every other row (memory-bound
    norms, activations, residuals: the HBM clock is not the SM clock) unchanged."""
    run = TrainingRun.of("gpt2", seq=1024, global_batch=1)
    dev = get_device("h100")
    C, M, L = _layer_forward(run, dev)
    assert C > 0 and M > 0
    got = pf.shard_forecast(run, 1, 1, 1, 1, dev).layers_forward
    assert got == pytest.approx(C / 0.8415 + L + M, rel=1e-9)


def test_without_a_sustained_figure_the_burst_rate_stands():
    """The A100 (no MSMF published): the layers' forward is the analysis' own forecast, C + overhead + M."""
    run = TrainingRun.of("gpt2", seq=1024, global_batch=1)
    dev = get_device("a100")
    C, M, L = _layer_forward(run, dev)
    assert pf.shard_forecast(run, 1, 1, 1, 1, dev).layers_forward == pytest.approx(C + L + M, rel=1e-9)


def test_a100_collectives_run_at_nccls_230_of_300_gb_per_s():
    """NVIDIA/nccl-tests#149 (maintainer): 12 NVLinks x 25 GB/s = 300 GB/s line rate, ~230 GB/s NCCL bus bandwidth:
    efficiency 230 / 300 = 0.7667.  A tp-8 all-reduce on a DGX A100 is forecast at its bound / 0.7667."""
    dev = get_device("a100")
    assert pf.collective_efficiency(dev, 2**30) == pytest.approx(0.7667)
    assert 230 / 300 == pytest.approx(0.7667, abs=1e-4)
    run = TrainingRun.of("gpt2", seq=1024, global_batch=8)
    e = estimate(run, Layout(tp=4, dp=2, zero=0, micro_batch=1, recompute="none", sp=False), get_system("dgx-a100"))
    ar = next(c for c in e.comms if c.name == "tp all-reduce")
    assert ar.forecast == pytest.approx(ar.time / 0.7667, rel=1e-9)


def test_nccl_efficiency_applies_to_the_nvlink_tier_only():
    """The catalog's NCCL figure (0.7667, nccl-tests#149) is NVLink collective bus bandwidth: a dp all-reduce over
    2 DGX A100 nodes (tp 8, so the dp ranks are one a node: all of it on the cluster tier) is forecast at its bound,
    so are the pipeline's point-to-point sends; a hierarchical one (dp 16 over 2 nodes, tp 1) charges its node
    parts / 0.7667 and its cluster part at 1 -- the parts read from roofline.engine.collectives.cost, a second route."""
    from roofline.engine.collectives import cost

    run = TrainingRun.of("llama-2-7b", seq=1024, global_batch=32)
    sys2 = get_system("dgx-a100", nodes=2)
    e = estimate(run, Layout(tp=8, dp=2, zero=0, micro_batch=1, recompute="none", sp=False), sys2)
    dp = next(c for c in e.comms if c.name == "dp grad all-reduce")
    assert dp.tiers == ("cluster",) and dp.forecast == pytest.approx(dp.time, rel=1e-12)
    e = estimate(run, Layout(tp=1, dp=16, zero=0, micro_batch=1, recompute="none", sp=False), sys2)
    dp = next(c for c in e.comms if c.name == "dp grad all-reduce")
    parts = cost("all_reduce", dp.message_bytes, sys2, ranks=16, per_node=8).parts
    node = sum(p.time for p in parts if p.tier == "node")
    far = sum(p.time for p in parts if p.tier != "node")
    assert node > 0 and far > 0
    assert dp.forecast == pytest.approx(far + node / 0.7667, rel=1e-9)
    e = estimate(run, Layout(tp=1, pp=2, dp=8, zero=0, micro_batch=1, recompute="none", sp=False), sys2)
    pp = next(c for c in e.comms if c.name == "pp send/recv")
    assert pp.forecast == pytest.approx(pp.time, rel=1e-12)


def test_which_hidden_collectives_hold_sms():
    """NCCL's 24 CTAs for data-parallel syncs (the gradients' behind the backward, the weights' behind the forward,
    ZeRO 3's gathers behind both); Transformer Engine's userbuffers, 16 SMs on 6 of a sequence-parallel layer's 10
    collectives, only when tp overlap is on; NCCL again for the cp exchange under it; pipeline sends none."""
    from roofline.planner import Comm
    from roofline.planner.overlap import sm_holders

    def c(name):
        return Comm(name, 1.0, ("node",), "step", 1e6, 1, 1.0)

    on, off = Layout(tp=8, overlap_tp=True), Layout(tp=8)
    assert sm_holders(c("dp grad reduce-scatter"), off) == (24, 1.0, "backward")
    assert sm_holders(c("dp weight all-gather"), off) == (24, 1.0, "forward")
    assert sm_holders(c("dp fsdp weight all-gather"), off) == (24, 1.0, "both")
    assert sm_holders(c("tp all-reduce"), on) == (16, 0.6, "both")
    assert sm_holders(c("tp all-reduce"), off)[0] == 0
    assert sm_holders(c("cp kv all-gather"), on) == (24, 1.0, "both")
    assert sm_holders(c("pp send/recv"), on)[0] == 0


def test_sm_contention_is_hidden_seconds_times_the_phase_share():
    """A ZeRO-1 step on 8 DGX H100 nodes: each data-parallel sync's hidden seconds (its forecast less its exposed
    part, overlap.exposed) x 1 (NCCL holds its 24 SMs throughout) x the share the phase it hides behind loses per
    second beside 24 held SMs (the gradients' reduce-scatter: the backward's; the weights' all-gather: the
    forward's); tp overlap off, so its all-reduces hold none; sequence parallelism's backward all-gathers hide
    behind their GEMMs' input gradients whatever the switch, holding NCCL's 24 over the backward.  The shares: every compute-bound tensor op's
    forecast x (132 q(132) / (108 q(108)) - 1), summed over the phase, over the phase's forecast."""
    from roofline.engine.gemm_shape import op_quantization
    from roofline.planner.overlap import exposed

    run = TrainingRun.of("llama-2-7b", seq=4096, global_batch=64)
    system = get_system("dgx-h100", nodes=8)
    e = estimate(run, Layout(tp=2, dp=32, zero=1, micro_batch=1, recompute="none"), system)
    bwd = e.forecast_backward + e.forecast_recompute
    fc = e.contention_shares
    want = 0.0
    for c in e.comms:
        if c.name.startswith("dp"):
            hidden = c.forecast - exposed(c, e.layout, e.micro_batches, e.slots, e.forecast_forward, bwd)
            want += hidden * fc.contention_share(24, "backward" if "grad" in c.name else "forward")
        elif c.name == "tp all-gather (weight-gradient input)":
            hidden = c.forecast - exposed(c, e.layout, e.micro_batches, e.slots, e.forecast_forward,
                                          e.forecast_backward)
            assert hidden > 0
            want += hidden * fc.contention_share(24, "backward")
    assert want > 0 and e.sm_contention == pytest.approx(want, rel=1e-12)
    assert e.parts()["SM contention"] == pytest.approx(want, rel=1e-12)
    # the backward share by a second route: the shard's ops analysed here, each sped back to the sustained clock
    ops = WorkloadBuilder()
    _, owner, back = _rows(ops, run, (2, 1, 1, 1))
    w = ops.build(title="t", source="t")
    f = analyze(w, get_device("h100"), forecast=True).forecast
    kinds = np.asarray(w.column("kind"))
    tensor = (f.term == "compute") & np.isin(kinds, ("matmul", "attention"))
    assert tensor[back].any()

    def q(sms):
        return op_quantization(kinds, w.columns["m"], w.columns["n"], w.columns["batch"], sms)

    lost = np.where(tensor, (132 * q(132)) / (108 * q(108)) - 1, 0.0)
    t = pf.shard_forecast(run, 2, 1, 1, 1, get_device("h100"))
    B = t.layers_backward + t.first_backward + t.last_backward
    # the same ops at the forecast's own times: compute-bound ones at the sustained clock, the attention backward
    # below its forward's rate; their loss beside 24 SMs over the backward's forecast
    secs = (f.overhead + f.work / np.where(tensor, pf.sustained_rate(get_device("h100"), "bf16"), 1.0)) * f.counts
    attn = back & (kinds == "attention")
    rate = pf.flash_backward_rate(get_device("h100"), np.asarray(w.columns["n"], dtype=float)[attn],
                                  np.asarray(w.columns["k"], dtype=float)[attn], "bf16")
    secs[attn] = secs[attn] / rate
    assert float(secs[back].sum()) == pytest.approx(B, rel=1e-9)
    assert t.contention_share(24, "backward") == pytest.approx(float((secs * lost)[back].sum()) / B, rel=1e-9)


def test_sequence_parallel_backward_gathers_each_column_parallel_input_again():
    """Megatron-Core (core_r0.8.0 layers.py): under sequence parallelism the weight gradient of the qkv and first
    MLP GEMMs all-gathers their input again in the backward.  Llama-2-7B, seq 1,024, global batch 8 at tp 8, dp 1:
    8 micro-batches x 32 layers x 2 = 512 all-gathers of 1,024 tokens x 4,096 x 2 B = 8,388,608 B; none without
    sequence parallelism."""
    run = TrainingRun.of("llama-2-7b", seq=1024, global_batch=8)
    s = get_system("dgx-h100")
    name = "tp all-gather (weight-gradient input)"
    ag = next(c for c in estimate(run, Layout(tp=8, recompute="none"), s).comms if c.name == name)
    assert (ag.calls, ag.message_bytes) == (512, 1024 * 4096 * 2)
    assert name not in {c.name for c in estimate(run, Layout(tp=8, recompute="none", sp=False), s).comms}


def test_sequence_parallel_gather_hides_behind_its_gemms_input_gradient():
    """The sp rule (overlap.exposed), by hand on a toy Comm: 4 calls (one layer's two gathers x 2 micro-batches),
    T = 4 s, so 1 s a call; dgrad shares (0.2, 0.6) of a backward of 2 s: 0.4 s and 1.2 s, so each group exposes
    (1 - 0.4) + max(0, 1 - 1.2) = 0.6 s; 2 groups x 0.6 x slots 3 / m 2 = 1.8 s -- whatever overlap_tp says.
    Megatron-Core core_r0.8.0 (baf94af3) tensor_parallel/layers.py: the gather is async_op=True, waited on after
    ``grad_output.matmul(weight)``."""
    from roofline.planner.layout import Comm
    from roofline.planner.overlap import exposed, sm_holders

    c = Comm("tp all-gather (weight-gradient input)", 4.0, ("node",), "micro-batch", 1.0, 4, 4.0, 0.0, (0.2, 0.6))
    for tp_on in (False, True):
        lay = Layout(tp=2, overlap_tp=tp_on)
        assert exposed(c, lay, 2, 3.0, 5.0, 2.0) == pytest.approx(2 * 0.6 * 3 / 2)  # forward (5 s) plays no part
    assert sm_holders(c, Layout(tp=2)) == (24, 1.0, "backward")  # NCCL's channels, beside the backward
    # the shares by hand for Llama-2-7B at seq 4,096 (h 4096, 32 heads of 128, MHA, ffn 11008 gated), 32 layers:
    # kn qkv 4096 x 12288, proj 4096^2, fc1 4096 x 22016, fc2 11008 x 4096; denominator 2 x sum + 2 x 4096 x 32 x 128
    from roofline.planner.overlap import sp_dgrad_shares
    run = TrainingRun.of("llama-2-7b", seq=4096, global_batch=8)
    qkv, proj, fc1, fc2 = 4096 * 12288, 4096 * 4096, 4096 * 22016, 11008 * 4096
    total = 2 * (qkv + proj + fc1 + fc2) + 2 * 4096 * 32 * 128
    assert sp_dgrad_shares(run.arch, 4096, 32) == pytest.approx((qkv / total / 32, fc1 / total / 32))


def test_shard_parts_sum_to_the_shard_forecast():
    """The by-kind split of a micro-batch (bench_published.py breakdown) is the same seconds as the shard forecast
    the planner sums: forward parts = layers + first + last forward, backward likewise; GEMMs under 'GEMM'."""
    run = TrainingRun.of("gpt2", seq=1024, global_batch=1, flash=False, dropout=True, main_grad_bytes=2,
                         grad_accumulation_fusion=False)
    dev = get_device("a100")
    parts = pf.shard_parts(run, 1, 1, 1, 1, dev)
    f = pf.shard_forecast(run, 1, 1, 1, 1, dev)
    fwd = sum(v for k, v in parts.items() if k.startswith("forward"))
    bwd = sum(v for k, v in parts.items() if k.startswith("backward"))
    assert fwd == pytest.approx(f.layers_forward + f.first_forward + f.last_forward, rel=1e-12)
    assert bwd == pytest.approx(f.layers_backward + f.first_backward + f.last_backward, rel=1e-12)
    assert {"forward GEMM", "backward GEMM", "forward attention", "forward cross-entropy",
            "backward grad accumulate"} <= set(parts)


def test_pipeline_receivers_gather_the_scattered_activations_without_sequence_parallelism():
    """Megatron-LM 2021's scatter/gather (p2p_communication.py at 50a4b5fa): each tp rank sends 1/tp of the
    activation, the receiver all-gathers the pieces over tp.  GPT-2 (h 768), seq 1,024, global batch 16 on a DGX
    A100, tp 2 pp 2 dp 2, micro-batches of 1: 16 / 2 = 8 micro-batches x 2 received tensors (activations forward,
    gradients backward) = 16 all-gathers of 1,024 x 768 x 2 B = 1,572,864 B each; none under sequence
    parallelism, none without a pipeline (tp 2 pp 1 dp 4: no sends)."""
    run = TrainingRun.of("gpt2", seq=1024, global_batch=16)
    s = get_system("dgx-a100")
    name = "pp all-gather (scatter-gather)"

    def find(**kw):
        lay = Layout(tp=2, zero=0, micro_batch=1, recompute="none", **kw)
        return [c for c in estimate(run, lay, s).comms if c.name == name]

    ag = find(pp=2, dp=2, sp=False)
    assert len(ag) == 1 and (ag[0].calls, ag[0].message_bytes) == (16, 1024 * 768 * 2)
    assert find(pp=2, dp=2, sp=True) == [] and find(pp=1, dp=4, sp=False) == []


def test_weight_gradient_gemms_are_looked_up_as_the_bf16_gemms_they_are():
    """dW = X^T dY reads no weight.  Carrying the forward's W bytes (2 k n) over its own n x k' (k' the tokens it
    reduces over) it would read as 8 x 2 k n / (n x tokens) = 16 k / tokens bits per weight: GPT-2's 768-wide
    layers over 4,096 tokens, 16 x 768 / 4,096 = 3 bits, an 'int4-weights' lookup (forecast.curve_precisions).
    With no weight bytes every GEMM row of the shard takes its own precision's curve: bf16."""
    from roofline.engine.forecast import curve_precisions

    run = TrainingRun.of("gpt2", seq=4096, global_batch=1)
    ops = WorkloadBuilder()
    _rows(ops, run, (1, 1, 1, 1))
    w = ops.build(title="t", source="t")
    gemm = np.asarray(w.column("kind")) == "matmul"
    assert gemm.sum() > 0
    assert set(curve_precisions(w)[gemm].tolist()) == {"bf16"}


def test_a_users_fitted_gemm_or_attention_curve_is_not_scaled_to_the_sustained_clock_again():
    """The user's own calibration (``roofline calibrate``, perhaps from a training trace already at the sustained
    clock) fitted the matmul or the attention compute curve: its rates are measurements, so sustained_rate is 1; a
    user curve of another kind (elementwise memory) leaves the cited 0.8415 in place."""
    from dataclasses import replace

    from roofline.hardware.calibration import Calibration, EfficiencyCurve

    dev = get_device("h100")
    for kind in ("matmul", "attention"):
        user = Calibration(dev.name, "", "cuda-launch", "2026-12-02", "my runs", 0.0,
                           (EfficiencyCurve(kind, "compute", 0.7, 1e3, 1.0, (1e6, 1e13)),))
        assert pf.sustained_rate(replace(dev, calibration=user), "bf16") == 1.0
    other = Calibration(dev.name, "", "cuda-launch", "2026-12-02", "my runs", 0.0,
                        (EfficiencyCurve("elementwise", "memory", 0.8, 1e3, 1.0, (1e3, 1e10)),))
    assert pf.sustained_rate(replace(dev, calibration=other), "bf16") == pytest.approx(0.8415)
