"""The framework mechanisms of a training step the planner forecasts (each by hand): unfused attention over every
pair, dropout's passes and masks, fp32 main gradients (held, reduced, read by Adam), the per-micro-batch gradient
accumulation, the loss's cross-entropy passes, full recomputation repeating the forward's collectives."""

from __future__ import annotations

import numpy as np
import pytest

from roofline.catalog import get_system
from roofline.core.errors import RooflineError
from roofline.planner import Layout, TrainingRun, estimate
from roofline.planner.forecast import _rows
from roofline.work.workload import WorkloadBuilder

GPT2 = "gpt2"  # h 768, 12 heads of 64, 12 layers, 4h GeLU MLP, vocab 50257


def _row(table, v, suffix):
    i = next(i for i, n in enumerate(table.names) if n.endswith(suffix))
    return {k: float(x[i]) for k, x in v.items()}


def test_unfused_attention_multiplies_every_pair_and_drops_out_its_probabilities():
    """GPT-2, one sequence of 1,024 tokens, per layer.  Unfused (torch.baddbmm over the whole score tensor):
    QK^T = 2 x 1,024 x 1,024 x 768 FLOPs = 1,610,612,736 (the causal table counts 1,024 x 1,025 / 2 pairs).
    The score tensor, 12 x 1,024 x 1,024 = 12,582,912 elements: the softmax reads and writes it (2 B each),
    the probabilities' dropout reads it and writes it and a 1-byte mask: read 2 x 2 B, written 2 + 2 + 1 B
    per element = 50,331,648 B read, 62,914,560 B written."""
    from roofline.llm.training import forward_ops

    fused = TrainingRun.of(GPT2, seq=1024, global_batch=1)
    unfused = TrainingRun.of(GPT2, seq=1024, global_batch=1, flash=False, dropout=True)
    table, v = forward_ops(unfused, 1, 1, 1, 1)
    assert _row(table, v, "attn.qk")["flops"] == pytest.approx(2 * 1024 * 1024 * 768)
    sm = _row(table, v, "attn.softmax")
    assert sm["bytes_read"] == pytest.approx(4 * 12_582_912) and sm["bytes_written"] == pytest.approx(5 * 12_582_912)
    # fused: one sdpa op over the causal pairs, 4 x 64 FLOPs per pair per head x 12 heads
    ft, fv = forward_ops(fused, 1, 1, 1, 1)
    assert _row(ft, fv, "attn.sdpa")["flops"] == pytest.approx(4 * 64 * 12 * 1024 * 1025 / 2)


def test_dropout_writes_a_mask_on_each_residual_branch():
    """The fused bias-dropout-add writes the sum (1,024 tokens x 768 x 2 B = 1,572,864 B) and a 1-byte mask
    (786,432 B): 2,359,296 B written, against 1,572,864 without dropout."""
    from roofline.llm.training import forward_ops

    for dropout, written in ((False, 1_572_864), (True, 2_359_296)):
        table, v = forward_ops(TrainingRun.of(GPT2, seq=1024, global_batch=1, dropout=dropout), 1, 1, 1, 1)
        assert _row(table, v, "mlp.residual")["bytes_written"] == pytest.approx(written)


def test_activation_memory_with_dropout_and_unfused_attention_is_korthikanti_eq1():
    """Korthikanti et al. 2022, eq. 1: per layer s b h (34 + 5 a s / h) bytes with dropout and an unfused attention,
    no recomputation, tp 1.  GPT-2, s 1,024, b 1: 1,024 x 768 x (34 + 5 x 12 x 1,024 / 768) = 1,024 x 768 x 114
    = 89,653,248 B, plus this model's fp32 log-sum-exp per head (1,024 x 12 x 4 = 49,152 B).  Selective
    recomputation drops the 5 a s^2 b: 1,024 x 768 x 34 + 49,152."""
    from roofline.llm.training import activation_bytes_per_layer

    run = TrainingRun.of(GPT2, seq=1024, global_batch=1, flash=False, dropout=True)
    lse = 1024 * 12 * 4
    assert activation_bytes_per_layer(run, recompute="none") == pytest.approx(1024 * 768 * 114 + lse)
    assert activation_bytes_per_layer(run, recompute="selective") == pytest.approx(1024 * 768 * 34 + lse)


def test_fp32_main_gradients_are_megatrons_18_and_6_plus_12_over_d_bytes():
    """Megatron-LM docs/source/distrib_optimizer.md: 'float16 param, fp32 grads': 18 bytes per parameter, 6 + 12/d
    with the distributed optimizer (ZeRO 1).  dp 8: 18 and 6 + 1.5 = 7.5.  The gradient sync moves the fp32
    buffer: the ZeRO-0 all-reduce's message is 4 B per parameter held, twice the 16-bit one's."""
    run = TrainingRun.of("llama-2-7b", seq=1024, global_batch=8, main_grad_bytes=4)
    half = TrainingRun.of("llama-2-7b", seq=1024, global_batch=8)
    s = get_system("dgx-h100")
    for zero, per in ((0, 18), (1, 6 + 12 / 8)):
        e = estimate(run, Layout(dp=8, zero=zero), s)
        psi = e.memory["weights"] / 2
        assert (e.memory["weights"] + e.memory["gradients"] + e.memory["optimizer"]) / psi == pytest.approx(per)
    ar = next(c for c in estimate(run, Layout(dp=8, zero=0), s).comms if c.name == "dp grad all-reduce")
    ar2 = next(c for c in estimate(half, Layout(dp=8, zero=0), s).comms if c.name == "dp grad all-reduce")
    assert ar.message_bytes == pytest.approx(2 * ar2.message_bytes)
    with pytest.raises(RooflineError, match="main_grad_bytes: 3 is not one of 2, 4"):
        TrainingRun.of(GPT2, main_grad_bytes=3)


def _shard_rows(run: TrainingRun, tp: int = 1):
    ops = WorkloadBuilder()
    table, owner, bwd = _rows(ops, run, (tp, 1, 1, 1))
    w = ops.build(title="t", source="t")
    return w, owner, bwd


def test_gradient_accumulation_pass_per_micro_batch():
    """Megatron-LM 2021 (main_grad.add_(grad) per micro-batch, fp16 buffers): per parameter read 2 + 2 B, written
    2 B; every parameter of the shard once per micro-batch.  GPT-2 at tp 1: every layer's weights, the
    embedding and position table, the final norm: stage_params' total P; the pass reads 4 P and writes 2 P.
    Fused (Megatron-Core, fp32 buffer): no pass of its own for the GEMM weights, their weight-gradient GEMMs
    read and write the buffer instead of writing a 16-bit gradient: 2 x 4 - 2 = 6 B per GEMM parameter more."""
    from roofline.llm.training import grad_accumulation_bytes, stage_params

    run = TrainingRun.of(GPT2, seq=1024, global_batch=1, grad_accumulation_fusion=False)
    w, _, _ = _shard_rows(run)
    acc = np.array([n.endswith("(grad accumulate)") for n in w.column("name")])
    count = np.asarray(w.columns["count"])
    P = stage_params(run.arch, 1).total
    assert float(np.dot(np.asarray(w.columns["bytes_read"])[acc], count[acc])) == pytest.approx(4 * P)
    assert float(np.dot(np.asarray(w.columns["bytes_written"])[acc], count[acc])) == pytest.approx(2 * P)
    assert grad_accumulation_bytes(TrainingRun.of(GPT2, main_grad_bytes=4)) == (6, 4, 6)

    fused = TrainingRun.of(GPT2, seq=1024, global_batch=1, main_grad_bytes=4)
    wf, _, _ = _shard_rows(fused)
    names = list(wf.column("name"))
    assert not any(n.endswith("mlp.up_proj (grad accumulate)") for n in names)
    plain, _, _ = _shard_rows(TrainingRun.of(GPT2, seq=1024, global_batch=1))
    ups = [i for i, n in enumerate(names) if n.endswith("mlp.up_proj")]
    extra = sum(float(wf.bytes[i] - plain.bytes[i]) for i in ups)  # forward, dX and dW rows
    # fp32 buffer: 2 x 4 - 2 = 6 B per weight in the dW GEMM; 16-bit: 2 x 2 - 2 = 2 B; the difference 4 B per
    # up_proj parameter (fc1: 768 x 3,072 weights + 3,072 biases = 2,362,368): 9,449,472 B
    assert extra == pytest.approx(4 * (768 * 3072 + 3072))


def test_cross_entropy_passes_over_the_logits():
    """Megatron-LM's vocabulary-parallel cross-entropy on logits.float(): forward read 22 B, written 16 B per logit,
    backward 8 and 6.  GPT-2, one sequence of 1,024 tokens at tp 1: 1,024 x 50,257 = 51,463,168 logits:
    forward 1,132,189,696 B read, 823,410,688 written; backward 411,705,344 and 308,779,008."""
    run = TrainingRun.of(GPT2, seq=1024, global_batch=1)
    w, _, bwd = _shard_rows(run)
    names = list(w.column("name"))
    f = names.index(next(n for n in names if n.endswith("lm_head (cross-entropy)")))
    b = names.index(next(n for n in names if n.endswith("lm_head (cross-entropy backward)")))
    logits = 1024 * 50257
    rd, wr = np.asarray(w.columns["bytes_read"]), np.asarray(w.columns["bytes_written"])
    assert (rd[f], wr[f], rd[b], wr[b]) == pytest.approx((22 * logits, 16 * logits, 8 * logits, 6 * logits))
    assert not bwd[f] and bwd[b]


def test_full_recomputation_repeats_the_forwards_tensor_parallel_all_reduces():
    """Llama-2-7B at tp 8, pp 1, 32 layers, 8 micro-batches: 4 all-reduces per layer (2 forward, 2 backward) plus
    the embedding's and lm_head's = (4 x 32 + 2) x 8 = 1,040 calls; under full recomputation the forward runs
    again in the backward, its 2 per layer too: (6 x 32 + 2) x 8 = 1,552; selective: 1,040."""
    run = TrainingRun.of("llama-2-7b", seq=1024, global_batch=8)
    s = get_system("dgx-h100")
    calls = {rec: next(c.calls for c in estimate(run, Layout(tp=8, recompute=rec), s).comms if c.name == "tp all-reduce")
             for rec in ("none", "selective", "full")}
    assert calls == {"none": 1040, "selective": 1040, "full": 1552}


def test_the_last_gradient_bucket_is_exposed():
    """Megatron-Core's bucket: max(40M, 1M x dp) parameters.  A 400M-parameter ZeRO-1 reduce-scatter over dp 8 of
    T = 2 s: 10 buckets; with a 5 s backward all of it would hide, but the last bucket (0.2 s) is reduced after
    the backward ends: 0.2 s exposed; with a 1 s backward, T - B = 1 s.  The weight all-gather's first bucket
    likewise before the forward: 0.2 s.  dp 100: buckets of 100M, a quarter: 0.5 s."""
    from roofline.planner import Comm
    from roofline.planner.overlap import exposed

    rs = Comm("dp grad reduce-scatter", 2.0, ("cluster",), "step", 8e8, 1, 2.0, 400e6)
    ag = Comm("dp weight all-gather", 2.0, ("cluster",), "step", 8e8, 1, 2.0, 400e6)
    lay = Layout(dp=8, zero=1)
    assert exposed(rs, lay, 4, 4, 5.0, 5.0) == pytest.approx(0.2)
    assert exposed(rs, lay, 4, 4, 5.0, 1.0) == pytest.approx(1.0)
    assert exposed(ag, lay, 4, 4, 5.0, 5.0) == pytest.approx(0.2)
    assert exposed(rs, Layout(dp=100, zero=1), 4, 4, 5.0, 5.0) == pytest.approx(0.5)


def test_flash_backward_runs_below_the_forwards_rate(monkeypatch):
    """The fused attention's backward rows forecast at flash_backward_rate of their own rate: on the H100 the cited
    cuDNN backward / forward at 4k keys, head dim 128 (FA3 paper Figures 6 and 5(c): 499 / 609 = 0.8194), x 2 / 2.5
    (the figures count the backward at 2.5x the forward's FLOPs, the planner at 2x); the shard's backward grows by
    A (1 / (0.8194 x 0.8) - 1), A the backward attention rows' forecast at the forward's rate
    (compute-bound, so at the sustained clock too: the analysis' time / sustained_rate, 708.5 / 841.9 on the H100)."""
    from roofline.catalog import get_device
    from roofline.engine.analysis import analyze
    from roofline.planner import forecast as pf

    run = TrainingRun.of("llama-2-7b", seq=4096, global_batch=1)
    dev = get_device("h100")
    w, owner, bwd = _shard_rows(run, tp=8)
    a = analyze(w, dev, forecast=True)
    f = a.forecast
    kinds = np.asarray(w.column("kind"))
    rows = bwd & (kinds == "attention")
    assert (f.term[rows] == "compute").all()
    A = float(((f.overhead + f.work / pf.sustained_rate(dev, "bf16")) * f.counts)[rows].sum())
    slow = pf.shard_forecast(run, 8, 1, 1, 1, dev)
    monkeypatch.setattr(pf, "flash_backward_rate", lambda device, keys, head_dim, precision: np.ones(len(keys)))
    plain = pf.shard_forecast(run, 8, 1, 1, 1, dev)
    assert A > 0
    # the published ratio counts the backward at 2.5x the forward's FLOPs, the planner at 2x (flash_backward_rate):
    # the rate is 499 / 609 x 2 / 2.5, so the shard grows by A (609 x 2.5 / (499 x 2) - 1)
    assert slow.layers_backward - plain.layers_backward == pytest.approx(A * (609 * 2.5 / (499 * 2) - 1), rel=1e-3)


def test_zero3_holds_two_layers_of_gathered_weights_and_one_of_gradients():
    """ZeRO 3 (FSDP, BACKWARD_PRE): the current and the next layer's gathered weights (2 B each) and the current
    layer's full gradient (2 B): 6 B per parameter of one layer.  Llama-2-7B at tp 1, dp 8, pp 1 (32 layers): the
    device's parameters over its 32 layers, the embedding's and lm_head's included (stage_params' total / 32),
    x 6 B; no such buffers under ZeRO 0-2."""
    from roofline.llm.training import stage_params

    run = TrainingRun.of("llama-2-7b", seq=1024, global_batch=8)
    s = get_system("dgx-h100")
    e = estimate(run, Layout(dp=8, zero=3), s)
    P = stage_params(run.arch, 1).total
    assert e.memory["zero3 buffers"] == pytest.approx(6 * P / 32)
    assert "zero3 buffers" not in estimate(run, Layout(dp=8, zero=2), s).memory


def test_model_flops_stay_causal_under_an_unfused_attention():
    """MFU's model FLOPs are the model's: an unfused attention multiplies every pair (2x the causal QK^T and PV
    FLOPs on the device), but training_flops counts the causal pairs either way."""
    from roofline.llm.training import training_flops

    fused = TrainingRun.of(GPT2, seq=1024, global_batch=4)
    unfused = TrainingRun.of(GPT2, seq=1024, global_batch=4, flash=False, dropout=True)
    assert training_flops(unfused) == pytest.approx(training_flops(fused))
