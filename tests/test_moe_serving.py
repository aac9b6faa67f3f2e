"""Serving mixture-of-experts models: expert parallelism (--ep), attention data-parallel (--dp-attention), experts
touched per EP rank, the DeepEP dispatch/combine, and the cited kernel tables they read."""

from __future__ import annotations

import math

import numpy as np
import pytest

from roofline.catalog.kernels import kernel_table
from roofline.cli import main
from roofline.core.errors import RooflineError
from roofline.llm.config import load_arch
from roofline.llm.expert_parallel import (
    ExpertParallel,
    check_ep,
    deepep_bandwidths,
    dispatch_combine_seconds,
    experts_touched_per_rank,
)
from roofline.llm.model import build_workload
from roofline.llm.spec import LLMSpec, make_spec
from roofline.serving import ServeConfig, iteration_time
from roofline.serving.config import Parallel


def _expert_weight_bytes(spec: LLMSpec) -> float:
    w = build_workload(spec)
    names = list(w.tables["name"])
    return float(sum(wb * c for code, wb, c in zip(w.columns["name"], w.columns["weight_bytes"], w.columns["count"],
                                                    strict=True) if ".moe.experts." in names[int(code)]))


def test_experts_touched_per_rank_by_hand() -> None:
    # DeepSeek-V3 (256 experts, top-8) on EP 8: 32 experts a rank.  One token: 256/8 x (1 - (1 - 8/256)) = 1.
    assert float(experts_touched_per_rank(256, 8, 1, 8)) == pytest.approx(1.0)
    # 64 tokens: 32 x (1 - (31/32)^64) = 32 x (1 - 0.13068) = 27.818
    assert float(experts_touched_per_rank(256, 8, 64, 8)) == pytest.approx(32 * (1 - (31 / 32) ** 64))
    # grows with the batch until all 32 of the rank's experts are read
    n = np.array([1, 2, 8, 32, 128, 1024, 8192])
    v = experts_touched_per_rank(256, 8, n, 8)
    assert np.all(np.diff(v) > 0) and v[-1] == pytest.approx(32.0)
    # worst: all n x k choices on one rank, capped by its 32 experts; best: the k = 8 experts spread, one a rank
    assert float(experts_touched_per_rank(256, 8, 3, 8, "worst")) == 24.0
    assert float(experts_touched_per_rank(256, 8, 5, 8, "worst")) == 32.0
    assert float(experts_touched_per_rank(256, 8, 5, 8, "best")) == 1.0
    assert float(experts_touched_per_rank(256, 8, 0, 8)) == 0.0


def test_check_ep_refuses_in_one_line() -> None:
    mixtral, dense = load_arch("mixtral-8x7b"), load_arch("llama-2-7b")
    assert check_ep(mixtral, 2, 2) == ExpertParallel(2, False)
    assert check_ep(mixtral, 4, 1, True) == ExpertParallel(4, True)  # dp-attention: the experts over all 4
    for args, words in (((mixtral, 4, 3), "must divide the 8 routed experts"),
                        ((mixtral, 2, 4), "replica's 2 devices"),
                        ((dense, 2, 2), "dense model"),
                        ((dense, 2, 1, True), "dense model"),
                        ((mixtral, 4, 2, True), "must be 4"),
                        ((mixtral, 2, 0), ">= 1")):
        with pytest.raises(RooflineError, match=words) as e:
            check_ep(*args)
        assert "\n" not in str(e.value)


def test_cli_refuses_bad_ep_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "mixtral-8x7b", "--device", "h100", "--tp", "2", "--ep", "3", "--requests", "2"]) == 2
    assert main(["llm", "llama-2-7b", "--device", "h100", "--tp", "2", "--dp-attention"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("roofline: error:") for line in err)


def test_ep_expected_reads_what_tp_reads() -> None:
    # Expected routing: a rank reads touched/ep experts, each ep/tp of an expert wide -> touched/tp experts' bytes,
    # the tensor-parallel slice's (linearity of expectation): two routes to the same bytes.
    tp = make_spec("mixtral-8x7b", phase="decode", batch=4, context=512, tp=2)
    ep = make_spec("mixtral-8x7b", phase="decode", batch=4, context=512, tp=2, ep=2)
    assert _expert_weight_bytes(ep) == pytest.approx(_expert_weight_bytes(tp))


def test_ep_worst_is_the_busiest_rank() -> None:
    # Batch 1, worst routing: the token's 2 experts.  tp 2: 2 experts x half width.  ep 2: both on one rank,
    # whole: twice the bytes.  By hand (bf16): 2 x 3 x 4096 x 14336 x 2 B x 32 layers / 2 = 11.27 GB for tp 2.
    kw = dict(phase="decode", batch=1, context=512, tp=2, moe_routing="worst")
    tp = _expert_weight_bytes(make_spec("mixtral-8x7b", **kw))
    ep = _expert_weight_bytes(make_spec("mixtral-8x7b", ep=2, **kw))
    assert tp == pytest.approx(2 * 3 * 4096 * 14336 * 2 * 32 / 2)
    assert ep == pytest.approx(2 * tp)


def test_dp_attention_runs_each_devices_share_with_every_head() -> None:
    # tp 2, dp-attention, batch 64 decode: each device projects its 32 sequences' tokens with all 32 heads:
    # q_proj 32 x 2 x 4096 x 4096 FLOPs a layer (tensor parallel: 64 x 2 x 4096 x 2048, the same FLOPs, half the weights)
    dp = build_workload(make_spec("mixtral-8x7b", phase="decode", batch=64, context=512, tp=2, dp_attention=True))
    tp = build_workload(make_spec("mixtral-8x7b", phase="decode", batch=64, context=512, tp=2))
    for w, weights in ((dp, 4096 * 4096 * 2), (tp, 4096 * 2048 * 2)):
        i = list(w.tables["name"]).index("decode.layers.attn.q_proj")
        row = int(np.flatnonzero(w.columns["name"] == i)[0])
        assert w.columns["flops"][row] == pytest.approx(32 * 2 * 4096 * 4096)
        assert w.columns["weight_bytes"][row] == pytest.approx(weights)
    names = [list(dp.tables["name"])[int(c)] for c in dp.columns["name"]]
    assert not any("all_reduce" in n for n in names)  # no tensor-parallel collective left


def test_dispatch_combine_at_the_tables_own_setting() -> None:
    # DeepEP's low-latency row: 128 tokens a rank, hidden 7168, top-8, EP 8: dispatch 77 us, combine 114 us per
    # layer.  Our bytes over the table's bandwidth: 128 x 8 x (7168 + 7168/128 x 4 + 16) / 98 GB/s = 77.4 us;
    # 128 x 8 x 7168 x 2 / 127 GB/s = 115.6 us: within 2% of the latencies it printed (an independent column).
    v3 = load_arch("deepseek-v3")
    t = float(dispatch_combine_seconds(v3, 128 * 8, ExpertParallel(8, True)))
    per_layer = t / v3.moe_layers
    assert per_layer == pytest.approx((77 + 114) * 1e-6, rel=0.02)
    assert float(dispatch_combine_seconds(v3, 1024, ExpertParallel(8, False))) == 0.0  # EP alone: all-reduce
    # between rows, log-linear in EP: EP 11.3 (half way from 8 to 16 in log2) -> (98 + 63) / 2 GB/s
    d, _ = deepep_bandwidths(round(2 ** 3.5))
    assert d / 1e9 == pytest.approx(98 + (63 - 98) * (math.log2(11) - 3), rel=1e-9)


def test_serving_iteration_carries_the_dispatch() -> None:
    # One decode iteration of 64 sequences, dp-attention over 2: the forecast of the device's ops plus the
    # dispatch and combine of 32 tokens a rank, 2 choices each, per MoE layer (32), EP 2 -> the EP 8 row.
    cfg = ServeConfig(parallel=Parallel(1, True))
    t_dp = iteration_time("mixtral-8x7b", "h100", tp=2, decode_batch=64, kv_tokens=64 * 512, config=cfg)
    mixtral = load_arch("mixtral-8x7b")
    comm = 32 * (32 * 2 * (4096 + 4096 / 128 * 4 + 16) / 98e9 + 32 * 2 * 2 * 4096 / 127e9)
    assert float(dispatch_combine_seconds(mixtral, 64, ExpertParallel(2, True))) == pytest.approx(comm)
    assert t_dp > comm > 0


def test_cited_kernel_tables() -> None:
    ll = kernel_table("deepep-low-latency")
    assert ll.source["commit"] == "dd758caf451848bd150e1046af3d0a73e5fff38d"
    first = ll.records()[0]
    assert (first["ep"], first["dispatch_latency_us"], first["combine_latency_us"]) == (8, 77, 114)
    mla = {r["bound"]: r["value"] for r in kernel_table("flashmla-decode").records()}
    assert mla == {"memory": 3000, "compute": 660}
    assert kernel_table("flashmla-decode").source["commit"] == "9241ae3ef9bac614dd25e45e507e089f888280e0"


def test_spec_round_trips_the_layout() -> None:
    s = make_spec("mixtral-8x7b", tp=2, ep=2)
    assert LLMSpec.from_dict(s.to_dict()) == s
    plain = make_spec("mixtral-8x7b", tp=2)
    assert "ep" not in plain.to_dict()  # files of runs without EP are as before


def test_mla_decode_takes_flashmla_compute_rate() -> None:
    # DeepSeek-V3 decode, attention data-parallel over 8 (128 heads a device), FP8 latent cache: 2 x 128 x (576 + 512)
    # FLOPs per key over 576 B -> 484 FLOP/B, above the bf16 ridge (989.4 / 3.35 = 295): compute-bound.  FlashMLA's
    # 660 TFLOPS (H800 SXM5 = H100 SXM5 compute) sets its rate: the work is FLOPs / 660 TFLOP/s.
    from roofline.catalog import get_device
    from roofline.engine.analysis import analyze
    from roofline.engine.forecast import compute_forecast

    s = make_spec("deepseek-v3", phase="decode", batch=1024, context=4096, tp=8, dp_attention=True, kvbits="fp8",
                  flash=True)
    w = build_workload(s)
    f = compute_forecast(analyze(w, get_device("h100")))
    names = list(w.tables["name"])
    i = next(j for j, c in enumerate(w.columns["name"]) if names[int(c)] == "decode.layers.attn.sdpa")
    assert f.term[i] == "compute" and w.columns["k"][i] == 576
    assert f.work[i] == pytest.approx(w.columns["flops"][i] / 660e12, rel=1e-3)


def test_other_attention_keeps_its_head_dim_curve() -> None:
    # the head-dim-576 curve is picked only near 576 (log-nearest): head dims 64..256 keep FlashAttention-3's
    from roofline.catalog.calibrations import cited_calibration
    from roofline.hardware.calibration_curves import by_head_dim

    cal = cited_calibration("NVIDIA H100 SXM5 80GB")
    assert cal is not None
    curve = cal.curve("attention", "compute", "bf16")
    assert curve is not None
    variants = cal.head_dim_variants(curve)  # type: ignore[arg-type]
    fa3_128 = next(c for c in variants if c.head_dim == 128)
    mla = next(c for c in variants if c.head_dim == 576)
    got = by_head_dim(variants, np.array([2048.0, 2048.0]), np.array([128.0, 576.0]))
    assert got[0] == pytest.approx(float(fa3_128.efficiency(2048.0)))
    assert got[1] == pytest.approx(round(660 / 989.4, 4))
    assert mla.sources() == ("flashmla-readme",)


def test_gpt_oss_experts_read_as_mxfp4_by_hand() -> None:
    # gpt-oss-120b decode, batch 1: 4 experts touched a layer (128 x (1 - (1 - 4/128)^1) = 4), 36 layers, each
    # expert gate + up + down of 2880 x 2880, in MXFP4: 4 bits + one 8-bit scale per 32 = 4.25 bits = 0.53125 B;
    # their biases (2880 each, 3 projections) stay bf16.
    a = load_arch("gpt-oss-120b")
    assert (a.hidden, a.moe_intermediate, a.top_k, a.moe_layers, a.expert_format) == (2880, 2880, 4, 36, "mxfp4")
    s = make_spec("gpt-oss-120b", phase="decode", batch=1, context=1000)
    weights = 36 * 4 * 3 * 2880 * 2880 * 0.53125
    biases = 36 * 4 * 3 * 2880 * 2
    assert _expert_weight_bytes(s) == pytest.approx(weights + biases)
    assert "not yet modelled" not in " ".join(s.arch.warnings)
    # resident: all 128 experts x 36 layers (114.7 B parameters) at 0.53125 B instead of bf16's 2 B; one H100 holds it
    import dataclasses

    from roofline.llm.sizes import weight_bytes_resident

    experts = 36 * 128 * 3 * 2880 * 2880
    bf16 = s.replace(precisions=dataclasses.replace(s.precisions, experts=""))
    assert weight_bytes_resident(bf16) - weight_bytes_resident(s) == pytest.approx(experts * (2 - 0.53125))
    assert weight_bytes_resident(s) < 80e9


def test_mla_decode_iteration_is_the_decode_table() -> None:
    # Two routes: serve's MLA iteration of 32 decodes at 2,048 keys each (shared ops from the prefill table, the
    # absorbed attention and absorptions from the decode table) and the llm decode workload of the same step.
    # Attention data-parallel adds exactly the DeepEP dispatch and combine (serve counts them, llm does not).
    from roofline.catalog import get_device
    from roofline.engine.analysis import analyze
    from roofline.engine.forecast import compute_forecast

    v3 = load_arch("deepseek-v3")
    for dp in (False, True):
        t = iteration_time("deepseek-v3", "h100", tp=8, decode_batch=32, kv_tokens=32 * 2048,
                           config=ServeConfig(parallel=Parallel(1, dp)))
        w = build_workload(make_spec("deepseek-v3", phase="decode", batch=32, context=2048, tp=8, flash=True,
                                     dp_attention=dp))
        f = compute_forecast(analyze(w, get_device("h100")))
        comm = float(dispatch_combine_seconds(v3, 32, ExpertParallel(8, True))) if dp else 0.0
        assert t == pytest.approx(float((f.time * w.columns["count"]).sum()) + comm, rel=1e-9)


def test_dp_attention_kv_capacity_of_mla() -> None:
    # MLA's latent cache is replicated under tensor parallelism; under attention data-parallel each device holds
    # its own sequences' only: 8 x the tokens per replica at tp 8 (less what the replicated attention weights take)
    from roofline.catalog import get_device
    from roofline.serving.run import kv_blocks

    dev = get_device("h200")
    tp = make_spec("deepseek-v3", phase="prefill", tp=8, wbits="fp8", abits="fp8")
    dp = make_spec("deepseek-v3", phase="prefill", tp=8, wbits="fp8", abits="fp8", dp_attention=True)
    b_tp, m_tp = kv_blocks(tp, dev, block_size=16, utilization=0.9, act_tokens=2048)
    b_dp, m_dp = kv_blocks(dp, dev, block_size=16, utilization=0.9, act_tokens=2048)
    assert m_dp["weights"] > m_tp["weights"]  # attention, dense layers and embeddings whole on every device
    # same per-token latent bytes on a device; 8 devices' worth of sequences
    per_token = 61 * (512 + 64) * 2
    assert m_tp["kv_bytes_per_token"] == per_token and m_dp["kv_bytes_per_token"] == per_token / 8
    free_dp = m_dp["usable"] - m_dp["weights"] - m_dp["activations"]
    assert b_dp == int(free_dp // (16 * per_token / 8))
