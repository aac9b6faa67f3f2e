"""The analytic LLM inference model: hand formulas, cross-checks between routes, bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from roofline import ComputeCeiling, Device, Interconnect, MemoryCeiling, analyze, get_device
from roofline.cli import main
from roofline.core.errors import RooflineError
from roofline.frontends.llm import (
    batch_sweep,
    device_ceilings,
    fitting_batch,
    footprint,
    from_llm,
    grid_sweep,
    list_models,
    load_arch,
    make_spec,
    max_batch,
    ridge_batch,
    sweep_times,
)
from roofline.llm.basis import experts_touched
from roofline.llm.model import build_workload
from roofline.llm.sizes import kv_cache_bytes
from roofline.llm.spec import LLMSpec
from roofline.words.llm_report import report as llm_report
from roofline.work.costs import T, cost

CONFIGS = Path(__file__).parent / "configs"


def a100(capacity: str = "80 GB") -> Device:
    """A100 SXM4 80GB datasheet figures, built here so the tests do not wait on the catalog."""
    return Device(name="A100 SXM4 80GB (test)", kind="gpu",
                  compute=(ComputeCeiling("matrix", "bf16", 312e12), ComputeCeiling("matrix", "fp16", 312e12),
                           ComputeCeiling("matrix", "int8", 624e12), ComputeCeiling("vector", "fp32", 19.5e12)),
                  memory=(MemoryCeiling("HBM", 2.039e12, float(capacity.split()[0]) * 1e9),),
                  interconnect=Interconnect("NVLink 3", 300e9))


def op(w, name):
    names = list(w.column("name"))
    return w.op(names.index(name))


def has(w, name):
    return name in set(w.column("name"))


# -- hand formulas ------------------------------------------------------------------
def test_projection_and_mlp_flops_and_weight_bytes_equal_hand_formulas():
    w = from_llm("llama-2-7b", phase="decode", batch=4, context=100)
    d, f = 4096, 11008
    q = op(w, "decode.layers.attn.q_proj")
    assert q.flops == 2 * 4 * d * d  # 2 x tokens x K x N
    assert q.weight_bytes == d * d * 2  # bf16 weights
    assert q.bytes_read == d * d * 2 + 4 * d * 2  # weights + input activations
    assert q.bytes_written == 4 * d * 2
    assert q.count == 32 and q.unit == "matrix" and q.precision == "bf16" and q.kind == "matmul"
    for name in ("gate_proj", "up_proj"):
        m = op(w, f"decode.layers.mlp.{name}")
        assert m.flops == 2 * 4 * d * f and m.weight_bytes == d * f * 2
    down = op(w, "decode.layers.mlp.down_proj")
    assert down.flops == 2 * 4 * f * d and down.weight_bytes == f * d * 2
    head = op(w, "decode.lm_head")
    assert head.flops == 2 * 4 * d * 32000  # last token of each of the 4 sequences
    p = from_llm("llama-2-7b", phase="prefill", batch=2, prompt=64)
    assert op(p, "prefill.layers.attn.o_proj").flops == 2 * (2 * 64) * d * d
    assert op(p, "prefill.lm_head").flops == 2 * 2 * d * 32000  # generation: last prompt token only
    p_all = from_llm("llama-2-7b", phase="prefill", batch=2, prompt=64, all_logits=True)
    assert op(p_all, "prefill.lm_head").flops == 2 * 128 * d * 32000


def test_gqa_projections_and_kv_cache():
    w = from_llm("llama-3-8b", phase="decode", batch=2, context=300, flash=False)  # unfused: a qk op of its own
    assert op(w, "decode.layers.attn.k_proj").weight_bytes == 4096 * 8 * 128 * 2  # 8 KV heads of 128
    qk = op(w, "decode.layers.attn.qk")
    # reads q (2 x 32 x 128) and the K cache (2 seqs x 300 keys x 8 heads x 128) at 2 bytes
    assert qk.bytes_read == (2 * 32 * 128 + 2 * 300 * 8 * 128) * 2
    assert qk.flops == 2 * 2 * 32 * 128 * 300
    # KV cache: 2 (K, V) x 32 layers x 8 heads x 128 x 300 tokens x 2 seqs x 2 bytes
    assert w.info["kv_cache_bytes"] == 2 * 32 * 8 * 128 * 300 * 2 * 2


def test_prefill_counts_the_causal_triangle_like_the_core_attention_formula():
    b, P, h, dh = 2, 100, 32, 128
    w = from_llm("llama-2-7b", phase="prefill", batch=b, prompt=P, flash=False)
    qk, pv = op(w, "prefill.layers.attn.qk"), op(w, "prefill.layers.attn.pv")
    assert qk.flops + pv.flops == 2 * b * h * (P * (P + 1) // 2) * (dh + dh)
    core = cost("attention", [T((b, h, P, dh), 2)] * 3, [T((b, h, P, dh), 2)], causal=True)
    assert qk.flops + pv.flops == core.flops  # independent route: roofline.work.costs
    # unfused: the full P x P score tensor is written by QK^T and read by PV
    assert qk.bytes_written == b * h * P * P * 2
    flash = from_llm("llama-2-7b", phase="prefill", batch=b, prompt=P, flash=True)
    sdpa = op(flash, "prefill.layers.attn.sdpa")
    assert sdpa.flops == core.flops
    assert sdpa.bytes_read + sdpa.bytes_written == core.bytes_read + core.bytes_written  # q, k, v in; out
    assert op(flash, "prefill.layers.attn.softmax").bytes_read == 0


def test_op_table_flops_equal_the_tensor_formulas_of_costs_for_a_prefill_continuing_a_cache():
    """Two routes to one count: the LLM op table (size formulas over symbolic terms) and roofline.work.costs
    on tensors.  A chunked prefill: b=2 sequences add s=5 tokens to a cache, the last sees S=12 keys.

    Attention, per layer, llama-2-7b (h=32 heads, dh=dv=128): the new queries sit at positions
    8..12 and see 8+9+10+11+12 = 50 keys (s*S - s*(s-1)/2 = 60 - 10); QK^T costs 2*dh per pair and
    PV 2*dv, so 2 seqs x 32 heads x 50 pairs x 2 x 128 = 819,200 FLOPs each, 1,638,400 together.
    q_proj: (b*s x d) @ (d x h*dh) = 2 x 10 x 4096 x 4096 = 335,544,320 FLOPs.
    """
    from roofline.llm.basis import basis, evaluate
    from roofline.llm.spec import Precisions
    from roofline.llm.table import build_table

    b, s, S, h, dh, d = 2, 5, 12, 32, 128, 4096
    arch = load_arch("llama-2-7b")
    q, kv = T((b, h, s, dh), 2), T((b, h, S, dh), 2)
    core = cost("attention", [q, kv, kv], [q], causal=True, causal_offset=S - s)
    assert core.flops == 2 * 2 * 32 * 50 * 128 * 2 == 1_638_400
    gemm = cost("matmul", [T((b, s, d), 2), T((d, h * dh), 2)], [T((b, s, h * dh), 2)])
    assert gemm.flops == 2 * 10 * 4096 * 4096 == 335_544_320
    B = basis(arch, b, s, S)
    for flash, parts in ((False, ("qk", "pv")), (True, ("sdpa",))):
        table = build_table(arch, "prefill", flash=flash)
        flops = dict(zip(table.names, evaluate(table, B, Precisions().bytes())["flops"][0], strict=True))
        assert sum(flops[f"prefill.layers.attn.{p}"] for p in parts) == core.flops
        if not flash:
            assert flops["prefill.layers.attn.qk"] == flops["prefill.layers.attn.pv"] == 819_200
        assert flops["prefill.layers.attn.q_proj"] == gemm.flops


def test_int4_weights_compute_on_the_16_bit_matrix_roof_with_group_scales():
    w = from_llm("llama-2-7b", phase="decode", wbits=4, abits=16, kvbits=8, group_size=64)
    q = op(w, "decode.layers.attn.q_proj")
    assert q.precision == "bf16" and q.unit == "matrix"  # W4A16 dequantises to the 16-bit roof
    assert q.weight_bytes == 4096 * 4096 * (0.5 + 2 / 64)  # 4-bit + one fp16 scale per 64
    assert op(w, "decode.lm_head").weight_bytes == 4096 * 32000 * 2  # lm_head stays 16-bit
    assert op(w, "decode.layers.attn.softmax").unit == "vector"
    assert w.info["kv_cache_bytes"] == 2 * 32 * 4096 * 1024 * 1  # int8 KV cache
    w8 = from_llm("llama-2-7b", phase="decode", wbits=8, abits=8)
    assert op(w8, "decode.layers.attn.q_proj").precision == "int8"


def test_experts_touched_by_hand():
    # Mixtral, E = 8, k = 2: a token leaves a given expert unread with probability 6/8
    assert experts_touched(8, 2, 1) == 2.0  # 8 x (1 - 6/8)
    assert experts_touched(8, 2, 2) == 3.5  # 8 x (1 - 36/64)
    assert experts_touched(8, 2, 4) == pytest.approx(5.47, abs=0.005)  # 8 x (1 - 0.3164) = 5.469
    assert experts_touched(8, 2, 64) == pytest.approx(8.0, abs=1e-6)  # 0.75^64 = 1e-8
    n = np.array([0, 1, 2, 3, 64])
    assert experts_touched(8, 2, n).tolist() == pytest.approx([0, 2, 3.5, 8 * (1 - 0.75 ** 3), 8 * (1 - 0.75 ** 64)])
    assert experts_touched(8, 2, n, "worst").tolist() == [0, 2, 4, 6, 8]  # min(E, n x k)
    assert experts_touched(8, 2, n, "best").tolist() == [0, 2, 2, 2, 2]  # k
    assert experts_touched(8, 8, n).tolist() == [0, 8, 8, 8, 8]  # top_k = E: every expert, every step
    assert experts_touched(0, 0, n).tolist() == [0] * 5  # dense


def test_moe_expert_weight_bytes_follow_the_routing_rule():
    cfg = {**json.loads(CONFIGS.joinpath("mixtral_tiny.json").read_text()), "num_local_experts": 8}  # Mixtral's 8, top-2
    # one expert per layer: gate, up and down, hidden 64 x intermediate 128, bf16: 3 x 64 x 128 x 2 = 49,152 B
    expert = 3 * 64 * 128 * 2

    def expert_bytes(phase="decode", **kw):
        w = from_llm(cfg, phase=phase, **{"context": 256, **kw})  # the tiny config's whole context
        return sum(op(w, f"{phase}.layers.moe.experts.{p}").weight_bytes for p in ("gate_proj", "up_proj", "down_proj"))

    for routing in ("expected", "worst", "best"):
        assert expert_bytes(batch=1, moe_routing=routing) == 2 * expert  # one token: its top-2, whatever the rule
    # batch 2, expected: 8 x (1 - (6/8)^2) = 3.5 experts = 3.5/8 of the 8 x 49,152 = 393,216 B, i.e. 172,032 B
    assert expert_bytes(batch=2) == 172_032 == 3.5 / 8 * 8 * expert
    assert expert_bytes(batch=2, moe_routing="worst") == 4 * expert  # min(8, 2 x 2)
    assert expert_bytes(batch=2, moe_routing="best") == 2 * expert  # both tokens on the same two
    # prefill: n = batch x prompt tokens = 2 x 3 = 6
    assert expert_bytes("prefill", batch=2, prompt=3) == pytest.approx(8 * (1 - 0.75 ** 6) * expert)
    assert expert_bytes("prefill", batch=2, prompt=3, moe_routing="worst") == 8 * expert  # min(8, 12)


def test_moe_worst_case_reads_min_of_experts_and_assignments():
    d, f = 4096, 14336
    expert = 3 * d * f * 2  # gate, up, down in bf16

    def expert_bytes(w, phase):
        return sum(op(w, f"{phase}.layers.moe.experts.{p}").weight_bytes for p in ("gate_proj", "up_proj", "down_proj"))

    worst = {"moe_routing": "worst"}
    assert expert_bytes(from_llm("mixtral-8x7b", phase="decode", batch=1, **worst), "decode") == 2 * expert  # top-2
    assert expert_bytes(from_llm("mixtral-8x7b", phase="decode", batch=3, **worst), "decode") == 6 * expert
    assert expert_bytes(from_llm("mixtral-8x7b", phase="decode", batch=64, **worst), "decode") == 8 * expert
    for routing in ("expected", "worst", "best"):  # FLOPs count token-expert pairs, not experts touched
        w = from_llm("mixtral-8x7b", phase="decode", batch=5, moe_routing=routing)
        assert op(w, "decode.layers.moe.experts.gate_proj").flops == 2 * (5 * 2) * d * f  # 10 token-expert pairs


def test_moe_routing_is_stated_and_travels_with_the_workload():
    w = from_llm("mixtral-8x7b", phase="decode", batch=2)
    line = next(a for a in w.assumptions if a.startswith("MoE"))
    assert "expected" in line and "E x (1 - (1 - top_k/E)^n)" in line
    w = from_llm("mixtral-8x7b", phase="decode", batch=2, moe_routing="worst")
    assert "min(E, n x top_k)" in next(a for a in w.assumptions if a.startswith("MoE"))
    assert w.info["moe_routing"] == "worst"
    assert llm_report(analyze(w, a100())).spec.moe_routing == "worst"  # read back from the workload's llm
    old = {k: v for k, v in w.llm.to_dict().items() if k != "moe_routing"}
    assert LLMSpec.from_dict(old).moe_routing == "worst"  # files from before the option: the old rule


def test_moe_routing_sweep_agrees_with_full_analysis():
    dev = a100()
    for routing in ("worst", "best"):
        spec = make_spec("mixtral-8x7b", phase="generate", prompt=30, gen=5, moe_routing=routing)
        batches = np.array([1, 2, 7])
        t = sweep_times(spec, batch=batches, ceilings=device_ceilings(dev, spec.precisions))["total"]
        for b, tb in zip(batches, t, strict=True):
            assert tb == pytest.approx(analyze(build_workload(spec.replace(batch=int(b))), dev).total_time, rel=1e-9)


def test_parameter_counts_match_the_published_sizes():
    for name, expected in (("llama-2-7b", 6.74e9), ("llama-3-8b", 8.03e9), ("mistral-7b", 7.24e9),
                           ("mixtral-8x7b", 46.7e9)):
        assert abs(from_llm(name, phase="decode").info["params"] / expected - 1) < 0.005, name
    assert abs(from_llm("mixtral-8x7b", phase="decode").info["active_params"] / 12.9e9 - 1) < 0.005


def test_weight_bytes_read_in_decode_cross_check_the_hand_parameter_formula():
    # Llama-2-7B by hand: per layer 4 d^2 + 3 d f + 2 d; plus final norm d and lm_head V d.
    d, f, V, L = 4096, 11008, 32000, 32
    read = L * (4 * d * d + 3 * d * f + 2 * d) + d + V * d + d  # + one embedding row (batch 1)
    w = from_llm("llama-2-7b", phase="decode", batch=1)
    assert float(w.columns["weight_bytes"] @ w.columns["count"]) == read * 2
    assert w.info["params"] == L * (4 * d * d + 3 * d * f + 2 * d) + d + 2 * V * d


def test_a100_decode_time_is_weights_plus_kv_over_bandwidth():
    w = from_llm("llama-2-7b", phase="decode", batch=1, context=1024, wbits="fp16", abits="fp16", kvbits="fp16")
    r = llm_report(analyze(w, a100()))
    params = 6_738_415_616  # hand count, see the test above
    weights_read = (params - 32000 * 4096 + 4096) * 2  # the embedding reads its one row
    kv = 2 * 32 * 4096 * 1024 * 2
    assert r.tpot == pytest.approx((weights_read + kv) / 2.039e12, rel=0.01)
    # with the embedding table counted whole the figure is 1.9% higher: that table is never read in full
    assert (params * 2 + kv) / 2.039e12 / r.tpot == pytest.approx(1.017, abs=0.003)


def test_a100_from_the_catalog():
    from roofline.catalog import get_device

    try:
        dev = get_device("a100-sxm4-80gb")
    except RooflineError:
        pytest.skip("catalog has no A100 SXM4 80GB yet")
    r = llm_report(analyze(from_llm("llama-2-7b", phase="decode", context=1024, wbits="fp16", abits="fp16",
                                    kvbits="fp16"), dev))
    weights_read = (6_738_415_616 - 32000 * 4096 + 4096) * 2
    assert r.tpot == pytest.approx((weights_read + 2 * 32 * 4096 * 1024 * 2) / 2.039e12, rel=0.01)


# -- tensor parallelism ----------------------------------------------------------------
def test_tensor_parallel_splits_work_and_times_the_ring_all_reduce_on_the_link():
    one = from_llm("llama-2-7b", phase="decode", batch=8)
    two = from_llm("llama-2-7b", phase="decode", batch=8, tp=4)
    assert op(two, "decode.layers.attn.q_proj").flops == op(one, "decode.layers.attn.q_proj").flops / 4
    assert op(two, "decode.layers.mlp.down_proj").weight_bytes == op(one, "decode.layers.mlp.down_proj").weight_bytes / 4
    ar = op(two, "decode.layers.attn.all_reduce")
    assert ar.kind == "collective" and ar.level == "interconnect"
    assert ar.bytes_read + ar.bytes_written == 2 * 3 / 4 * (8 * 4096 * 2)  # 2 (tp-1)/tp x message
    a = analyze(two, a100())
    i = list(two.column("name")).index("decode.layers.attn.all_reduce")
    assert a.time[i] == pytest.approx(ar.bytes_read / 300e9)
    assert llm_report(a).interconnect_time > 0
    assert not has(one, "decode.layers.attn.all_reduce")


# -- phases ---------------------------------------------------------------------------
def test_generate_integrates_decode_over_the_growing_context():
    P, N = 50, 6
    gen = from_llm("llama-3-8b", phase="generate", batch=3, prompt=P, gen=N)
    pre = from_llm("llama-3-8b", phase="prefill", batch=3, prompt=P)
    steps = [from_llm("llama-3-8b", phase="decode", batch=3, context=P + i) for i in range(1, N + 1)]
    assert gen.total_flops == pytest.approx(pre.total_flops + sum(s.total_flops for s in steps), rel=1e-12)
    assert gen.total_bytes == pytest.approx(pre.total_bytes + sum(s.total_bytes for s in steps), rel=1e-12)
    dev = a100()
    r = llm_report(analyze(gen, dev))
    step_times = [analyze(s, dev).total_time for s in steps]
    assert r.ttft == pytest.approx(analyze(pre, dev).total_time)
    assert r.tpot == pytest.approx(sum(step_times) / N)  # every op stays on one side of its ridge here


def test_sliding_window_caps_attention_and_cache():
    w = from_llm("mistral-7b", phase="decode", context=8192, flash=False)  # unfused: qk ops of their own
    assert op(w, "decode.layers.attn.sliding.qk").flops == 2 * 32 * 128 * 4096  # window 4096 keys
    assert w.info["kv_cache_bytes"] == 2 * 32 * 8 * 128 * 4096 * 2
    g = from_llm("gemma-2-9b", phase="decode", context=8192, flash=False)
    assert op(g, "decode.layers.attn.qk").count == 21 and op(g, "decode.layers.attn.sliding.qk").count == 21


def test_mla_latent_cache_and_absorbed_decode_weights():
    w = from_llm("deepseek-v3", phase="decode", batch=1, context=1000)
    assert w.info["kv_cache_bytes"] == 61 * (512 + 64) * 1000 * 2  # latent + rope key, one per layer
    kv_b = 512 * 128 * (128 + 128)
    dec = op(w, "decode.layers.attn.q_absorb").weight_bytes + op(w, "decode.layers.attn.v_absorb").weight_bytes
    assert dec == kv_b * 2
    p = from_llm("deepseek-v3", phase="prefill", prompt=64)
    assert op(p, "prefill.layers.attn.kv_b_proj").weight_bytes == kv_b * 2
    assert op(p, "prefill.layers.moe.experts.gate_proj").count == 58  # 3 dense layers first
    assert op(p, "prefill.layers.mlp.gate_proj").count == 3
    assert abs(w.info["params"] / 671e9 - 1) < 0.005


def test_gpt2_learned_positions_layernorm_and_biases():
    w = from_llm("gpt2", phase="prefill", prompt=16)
    assert has(w, "prefill.embed.positions") and not has(w, "prefill.layers.attn.rope")
    assert not has(w, "prefill.layers.mlp.gate_proj")
    assert abs(w.info["params"] / 124.44e6 - 1) < 0.001  # 124,439,808 with tied lm_head


# -- sizes, ridge, sweeps ------------------------------------------------------------------
def test_max_batch_is_the_last_that_fits():
    spec = make_spec("llama-2-7b", phase="decode", context=4096)
    cap = 80e9
    b = max_batch(spec, cap)
    assert b > 1
    assert footprint(spec.replace(batch=b)).total <= cap < footprint(spec.replace(batch=b + 1)).total


def test_ridge_batch_is_where_decode_gemms_turn_compute_bound():
    spec = make_spec("llama-2-7b", phase="decode", context=512)
    dev = a100()
    rb = ridge_batch(spec, dev)

    def gemm_bound(b):
        a = analyze(build_workload(spec.replace(batch=b)), dev)
        m = a.workload.column("kind") == "matmul"
        n = a.workload.columns["count"][m]
        return (a.compute_time[m] @ n) >= (a.memory_time[m] @ n)

    assert not gemm_bound(rb - 1) and gemm_bound(rb)
    # dense GEMM intensity ~ batch, so the ridge batch sits a little above the 153 FLOP/B ridge
    assert 153 < rb < 200


def test_vectorised_sweep_agrees_with_full_analysis():
    dev = a100()
    for phase in ("decode", "prefill", "generate"):
        spec = make_spec("mixtral-8x7b", phase=phase, prompt=300, gen=20, context=700, wbits=4, tp=2)
        batches = np.array([1, 3, 16, 100])
        t = sweep_times(spec, batch=batches, ceilings=device_ceilings(dev, spec.precisions))["total"]
        for b, tb in zip(batches, t, strict=True):
            assert tb == pytest.approx(analyze(build_workload(spec.replace(batch=int(b))), dev).total_time, rel=1e-9)


def test_grid_sweep_shape_and_monotone_in_context():
    spec = make_spec("llama-3-8b", phase="decode")
    h100 = Device(name="h100ish", compute=(ComputeCeiling("matrix", "bf16", 989e12),
                                           ComputeCeiling("vector", "fp32", 67e12)),
                  memory=(MemoryCeiling("HBM", 3.35e12, 80e9),))
    g = grid_sweep(spec, batches=[1, 8, 64], contexts=[512, 2048, 8192], devices=[a100(), h100],
                   precisions=[(16, 16, 16), (4, 16, 8)])
    assert g.time.shape == (3, 3, 2, 2)
    assert (np.diff(g.time, axis=1) > 0).all()  # more context, more KV cache to read
    assert (g.time[:, :, 1] < g.time[:, :, 0]).all()  # faster memory
    assert (g.time[..., 1] < g.time[..., 0]).all()  # 4-bit weights, 8-bit cache


def test_batch_sweep_stops_at_the_largest_fitting_batch():
    spec = make_spec("llama-2-13b", phase="decode", context=2048)
    sw = batch_sweep(spec, a100())
    assert sw.batch[-1] == sw.max_batch == max_batch(spec, 80e9)
    assert sw.fits.all()
    assert (np.diff(sw.tokens_per_s) > 0).all() and (np.diff(sw.latency) > 0).all()


def test_does_not_fit_is_a_finding_and_batch_max_an_error():
    w = from_llm("llama-2-70b", phase="decode")  # 138 GB of bf16 weights
    r = llm_report(analyze(w, a100()))
    assert r.footprint.fits is False and r.max_batch == 0
    assert any("does not fit" in f for f in r.findings)
    with pytest.raises(RooflineError, match="does not fit"):
        fitting_batch(make_spec("llama-2-70b", phase="decode"), a100())
    assert fitting_batch(make_spec("llama-2-70b", phase="decode", tp=2), a100()) >= 1  # half per device


# -- lookup and configs ---------------------------------------------------------------------
def test_lookup_ignores_case_and_punctuation_and_accepts_hf_ids():
    assert load_arch("meta-llama/Llama-2-7b-hf").name == "llama-2-7b"
    assert load_arch("LLaMA 2 7B").name == "llama-2-7b"
    assert load_arch("mistralai/Mixtral-8x7B-v0.1").experts == 8
    names = {m["name"] for m in list_models()}
    assert {"llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "mistral-7b", "mixtral-8x7b",
            "qwen2-7b", "qwen2-72b", "gemma-2-9b", "gpt2", "phi-3-mini", "deepseek-v3"} <= names
    assert all(m["source"].startswith("https://huggingface.co/") for m in list_models())


def test_local_config_file_and_folder(tmp_path):
    cfg = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
           "num_hidden_layers": 2, "vocab_size": 100}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    a = load_arch(str(tmp_path))
    assert a.head_dim == 16 and a.kv_heads == 4
    w = from_llm(str(tmp_path / "config.json"), phase="decode")
    assert w.info["params"] == 2 * (4 * 64 * 64 + 3 * 64 * 128 + 2 * 64) + 64 + 2 * 100 * 64
    assert from_llm(cfg, phase="prefill").info["params"] == w.info["params"]


def test_every_bundled_model_builds_all_phases():
    for m in list_models():
        for phase in ("prefill", "decode", "generate"):
            w = from_llm(m["name"], phase=phase, prompt=128, gen=4, flash=phase == "decode")
            assert w.total_flops > 0 and math.isfinite(w.total_bytes)


# -- bad input -----------------------------------------------------------------------
LLAMA = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
         "num_hidden_layers": 2, "vocab_size": 100}


def test_unknown_model_names_the_closest_three():
    # a typo: difflib ratios of 'lama27b' against 'llama27b' 2*7/15 = 0.93, 'llama270b' 2*7/16 = 0.875,
    # 'llama213b' 2*6/16 = 0.75: all over the 0.6 cutoff, best first
    with pytest.raises(RooflineError, match=r"unknown model 'lama-2-7b'; closest: llama-2-7b, llama-2-70b, llama-2-13b"):
        from_llm("lama-2-7b")


def test_a_model_prefix_resolves_when_unique_and_lists_its_matches_when_not():
    import warnings

    from roofline.core.names import NameResolved

    # 'llama-2-7' starts llama-2-7b and llama-2-70b (their normalised names 'llama27b', 'llama270b'): refused
    with pytest.raises(RooflineError, match=r"ambiguous model 'llama-2-7': it starts 2 names \(llama-2-70b, llama-2-7b\)"):
        from_llm("llama-2-7")
    # 'phi' starts only phi-3-mini (of the bundled names, HF ids and aliases): taken, and said
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        w = from_llm("phi", phase="decode")
    assert "phi-3-mini" in w.title.lower()
    assert [str(x.message) for x in seen if x.category is NameResolved] == [
        "'phi' taken as phi-3-mini (the one model it starts)"]
    # 'gpt' starts gpt2 and the two gpt-oss models: refused, and listed
    with pytest.raises(RooflineError, match=r"ambiguous model 'gpt': it starts 3 names \(gpt-oss-120b, gpt-oss-20b, gpt2\)"):
        from_llm("gpt")
    # an exact spelling (case and punctuation ignored) is no prefix: silent
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        from_llm("Llama3-8B", phase="decode")
    assert not [x for x in seen if x.category is NameResolved]


def test_missing_field_is_named():
    cfg = {k: v for k, v in LLAMA.items() if k != "intermediate_size"}
    with pytest.raises(RooflineError, match="missing field 'intermediate_size'"):
        from_llm(cfg)


@pytest.mark.parametrize("change, message", [
    ({"hidden_size": 66}, "hidden size 66 is not divisible by num_attention_heads 4"),
    ({"num_key_value_heads": 3}, "num_key_value_heads 3 does not divide num_attention_heads 4"),
    ({"num_hidden_layers": 0}, "num_hidden_layers must be a positive integer"),
])
def test_inconsistent_configs(change, message):
    with pytest.raises(RooflineError, match=message):
        from_llm({**LLAMA, **change})


def test_tp_must_divide_heads():
    with pytest.raises(RooflineError, match="tp 3 does not divide num_attention_heads 32"):
        from_llm("llama-2-7b", tp=3)
    with pytest.raises(RooflineError, match="tp must be an integer >= 1"):
        from_llm("llama-2-7b", tp=0)


@pytest.mark.parametrize("knob", ["wbits", "abits", "kvbits"])
def test_bits_outside_the_supported_set(knob):
    with pytest.raises(RooflineError, match=f"{knob}: 3 is not supported"):
        from_llm("llama-2-7b", **{knob: 3})
    with pytest.raises(RooflineError, match=f"{knob}: 'fp4' is not supported"):
        from_llm("llama-2-7b", **{knob: "fp4"})


@pytest.mark.parametrize("knob", ["batch", "prompt", "context", "gen", "group_size"])
def test_sizes_must_be_positive(knob):
    for bad in (0, -5):
        with pytest.raises(RooflineError, match=f"{knob} must be an integer > 0"):
            from_llm("llama-2-7b", **{knob: bad})


def test_bad_phase():
    with pytest.raises(RooflineError,
                       match="from_llm: phase must be one of 'prefill', 'decode', 'generate', 'train', got str 'finetune'"):
        from_llm("llama-2-7b", phase="finetune")


def test_bad_moe_routing():
    with pytest.raises(RooflineError, match=r"^moe_routing: 'average' is not one of expected, worst, best$"):
        from_llm("mixtral-8x7b", moe_routing="average")
    with pytest.raises(RooflineError, match="moe_routing: None is not one of"):
        make_spec("mixtral-8x7b", moe_routing=None)


# -- command line -----------------------------------------------------------------------
@pytest.fixture
def device_file(tmp_path):
    path = tmp_path / "a100.json"
    a100().save(path)
    return str(path)


def test_cli_list(capsys):
    assert main(["llm", "--list"]) == 0
    out = capsys.readouterr().out
    assert "llama-2-7b" in out and "meta-llama/Llama-2-7b-hf" in out and "46.70 B (12.9 B active)" in out


def test_cli_decode_report(capsys, device_file):
    assert main(["llm", "llama-2-7b", "--device", device_file, "--phase", "decode", "--context", "1024"]) == 0
    out = capsys.readouterr().out
    # largest batch = (capacity - weights) / bytes per sequence, by hand: Llama-2-7B has 6,738,415,616 parameters
    # (13.48 GB in bf16); a sequence of 1024 tokens holds 32 layers x 2 (K, V) x 4096 x 2 B x 1024 = 536.9 MB of
    # KV cache plus well under 1 MB of transient activations (one decode token): (80e9 - 13.48e9) / 537e6 = 123.9
    weights, kv = 6_738_415_616 * 2, 32 * 2 * 4096 * 2 * 1024
    assert int((80e9 - weights) // (kv + 1e6)) == int((80e9 - weights) // kv) == 123
    assert "time per token" in out and "ridge batch" in out and "largest batch       123" in out


def test_cli_sweep_to_the_largest_fitting_batch(capsys, device_file):
    assert main(["llm", "llama-2-7b", "--device", device_file, "--phase", "decode", "--sweep", "max"]) == 0
    out = capsys.readouterr().out
    assert "batch sweep (123 batches, 1..123)" in out and "<- ridge" not in out  # ridge 163 does not fit


def test_cli_sweep_writes_the_plot(capsys, device_file, tmp_path):
    chart = tmp_path / "chart.png"
    assert main(["llm", "llama-2-7b", "--device", device_file, "--phase", "decode", "--sweep", "batch=1..64",
                 "-o", str(chart)]) == 0
    out = capsys.readouterr().out
    assert "batch sweep (64 batches, 1..64)" in out
    assert chart.exists() and (tmp_path / "chart-sweep.png").stat().st_size > 1000


def test_cli_errors_are_one_line(capsys, device_file):
    assert main(["llm", "lama-2-7", "--device", device_file]) == 2
    assert "roofline: error: unknown model" in capsys.readouterr().err
    assert main(["llm", "llama-2-7", "--device", device_file]) == 2
    assert "roofline: error: ambiguous model 'llama-2-7'" in capsys.readouterr().err
    assert main(["llm", "llama-2-70b", "--device", device_file, "--batch", "max"]) == 2
    err = capsys.readouterr().err
    assert "does not fit" in err and err.count("\n") == 1
    assert main(["llm", "llama-2-7b", "--device", device_file, "--sweep", "batch=0..4"]) == 2
    assert "cannot read 'batch=0..4'" in capsys.readouterr().err
    assert main(["llm", "llama-2-70b", "--device", device_file, "--phase", "decode", "--sweep", "batch=1..max"]) == 2
    assert "does not fit" in capsys.readouterr().err
    assert main(["llm", "llama-2-7b"]) == 2
    assert "--device (or --system) is required" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:  # a usage error: one line, exit 2
        main(["llm", "mixtral-8x7b", "--device", device_file, "--moe-routing", "average"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("roofline: error:") and "--moe-routing" in err and "'average'" in err and err.count("\n") == 1


def test_cli_moe_routing(capsys, device_file):
    assert main(["llm", "mixtral-8x7b", "--device", device_file, "--phase", "decode", "--batch", "2",
                 "--moe-routing", "best", "--json", str(Path(device_file).with_name("a.json"))]) == 0
    out = capsys.readouterr().out
    assert "MoE routing best" in out
    data = json.loads(Path(device_file).with_name("a.json").read_text())
    assert data["workload"]["info"]["moe_routing"] == "best"
    assert main(["llm", "mixtral-8x7b", "--device", device_file, "--phase", "decode"]) == 0
    assert "MoE routing expected" in capsys.readouterr().out  # the default


def test_kv_cache_bytes_vectorised():
    spec = make_spec("llama-3-8b", phase="decode")
    got = kv_cache_bytes(spec, batch=np.array([1, 2]), context=np.array([10, 10]))
    assert got.tolist() == [2 * 32 * 8 * 128 * 10 * 2, 2 * 2 * 32 * 8 * 128 * 10 * 2]


# -- cross-check against the traced PyTorch model (transformers on the meta device) --------------
def _op_classes(w, hf: bool) -> dict[str, list[float]]:
    """FLOPs and weight bytes per op class: projections, attention matmuls, MLP GEMMs, router, lm_head."""
    out: dict[str, list[float]] = {}
    for o in w:
        parts = (o.group if hf else o.name).split(".")
        leaf = parts[-1]
        if o.kind == "attention":
            c = "attention"
        elif leaf in ("q_proj", "k_proj", "v_proj", "o_proj"):
            c = "projections"
        elif o.kind == "matmul" and (leaf in ("gate_proj", "up_proj", "down_proj") or "experts" in parts):
            c = "mlp"
        elif o.kind == "matmul" and leaf in ("gate", "router"):
            c = "router"
        elif leaf == "lm_head":
            c = "lm_head"
        else:
            continue
        acc = out.setdefault(c, [0.0, 0.0])
        acc[0] += o.flops * o.count
        acc[1] += o.weight_bytes * o.count
    return out


def _cross_check(model: str, layers: int | None) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    hf_frontend = pytest.importorskip("roofline.frontends.hf")
    from roofline.llm.config import bundled

    cfg = {k: v for k, v in bundled()[model].items() if not k.startswith("_")}
    if layers:
        cfg["num_hidden_layers"] = layers  # identical layers: per-layer agreement is the whole story
    moe = "num_local_experts" in cfg
    # prefill: HF's plain forward computes logits for every token (all_logits); causal SDPA in both
    traced = hf_frontend.from_hf_config(cfg, phase="prefill", batch=2, seq_len=64)
    ours = from_llm(cfg, phase="prefill", batch=2, prompt=64, all_logits=True)
    pairs = [(_op_classes(traced, True), _op_classes(ours, False), True)]
    # decode: HF's static cache holds kv_len tokens plus the new one, which attention reads
    traced = hf_frontend.from_hf_config(cfg, phase="decode", batch=2, kv_len=256)
    ours = from_llm(cfg, phase="decode", batch=2, context=257)
    pairs.append((_op_classes(traced, True), _op_classes(ours, False), not moe))
    for hf, mine, weights_agree in pairs:
        assert set(hf) == set(mine)
        for c in hf:
            assert mine[c][0] == pytest.approx(hf[c][0], rel=0.02), c
            if weights_agree or c != "mlp":
                assert mine[c][1] == pytest.approx(hf[c][1], rel=0.02), c
            else:
                # grouped-matmul experts read all 8 experts; a batch of 2 touches 8 x (1 - (6/8)^2) = 3.5
                # (expected, uniform routing); prefill's 128 tokens touch all 8 to within 1e-15
                assert mine[c][1] == pytest.approx(hf[c][1] * 3.5 / 8, rel=0.02), c


@pytest.mark.parametrize("model", ["llama-2-7b", "mixtral-8x7b"])
def test_cross_check_with_the_traced_transformers_model(model):
    _cross_check(model, layers=2)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["llama-2-7b", "llama-3-8b", "mixtral-8x7b"])
def test_cross_check_full_depth(model):
    _cross_check(model, layers=None)


def test_an_edited_config_file_is_read_again(tmp_path):
    cfg = json.loads((Path(__file__).parent / "configs" / "llama_tiny.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**cfg, "num_hidden_layers": 2}))
    assert load_arch(str(path)).layers == 2
    assert load_arch(str(tmp_path)).layers == 2  # the folder holding it: the same file
    path.write_text(json.dumps({**cfg, "num_hidden_layers": 12}))  # edited (its size changes with it)
    assert load_arch(str(path)).layers == 12
    assert load_arch(str(tmp_path)).layers == 12
    assert from_llm(str(path), phase="decode", context=256).llm.arch.layers == 12  # its context: 256


# -- issue 13: validation at the boundary, bounded work -----------------------------------------------
@pytest.mark.parametrize("change, message", [
    ({"hidden_size": float("nan")}, "hidden_size must be a non-negative integer, got nan"),
    ({"num_hidden_layers": 20_000}, "num_hidden_layers 20,000 exceeds the limit of 10,000 .*ROOFLINE_MAX_LAYERS"),
    ({"vocab_size": 10**8}, "vocab_size 100,000,000 exceeds the limit of 10,000,000 .*ROOFLINE_MAX_VOCAB"),
    ({"rope_scaling": {"rope_type": "bogus"}}, "rope_scaling.rope_type 'bogus' is not one of"),
    ({"tie_word_embeddings": "false"}, "tie_word_embeddings must be true or false"),
])
def test_config_fields_are_validated_before_building(change, message):
    with pytest.raises(RooflineError, match=message):
        from_llm({**LLAMA, **change})


def test_config_limits_are_overridable_by_environment(monkeypatch):
    cfg = {**LLAMA, "num_hidden_layers": 20_000}
    monkeypatch.setenv("ROOFLINE_MAX_LAYERS", "30000")
    w = from_llm(cfg, phase="decode")
    assert w.op(int(list(w.tables["name"]).index("decode.layers.attn.q_proj"))).count == 20_000
    monkeypatch.setenv("ROOFLINE_MAX_LAYERS", "many")
    with pytest.raises(RooflineError, match="ROOFLINE_MAX_LAYERS='many' must be a positive integer"):
        from_llm(cfg, phase="decode")


def test_sweep_ranges_with_steps_and_a_point_cap(monkeypatch):
    from roofline.frontends.llm import parse_range

    assert parse_range("batch=1..16:*2") == ("batch", [1, 2, 4, 8, 16])
    assert parse_range("batch=1..10:+4") == ("batch", [1, 5, 9, 10])
    assert parse_range("batch=1..1e3:*10") == ("batch", [1, 10, 100, 1000])
    assert parse_range("batch=2..max:*2") == ("batch", [2, -1, -2])
    with pytest.raises(RooflineError, match=r"10,000,000 batches exceed the limit of 100,000 points.*:\*2"):
        parse_range("batch=1..1e7")
    monkeypatch.setenv("ROOFLINE_MAX_SWEEP_POINTS", "8")
    with pytest.raises(RooflineError, match="ROOFLINE_MAX_SWEEP_POINTS"):
        parse_range("batch=1..9")


def test_batch_sweep_in_chunks_agrees_with_one_evaluation():
    spec = make_spec("llama-2-7b", phase="decode", context=512)
    dev = a100()
    batches = list(range(1, 10_001))
    sw = batch_sweep(spec, dev, batches)
    whole = sweep_times(spec, batch=np.asarray(batches, dtype=float), ceilings=device_ceilings(dev, spec.precisions))
    np.testing.assert_allclose(sw.latency, whole["decode"], rtol=1e-12)
    assert list(batch_sweep(spec, dev, [1, -1, -2]).batch[:4]) == [1, 2, 4, 8]


def test_tp_sweeps_carry_the_collectives_per_hop_latency():
    # Llama-2-7B decode at tp 8 on the catalog A100 (NVLink 3, 0.6 us per hop): 65 all-reduces (the embedding's and
    # two per layer) of 2(8-1) = 14 hops and the logits' all-gather of 7: (65 x 14 + 7) x 0.6 us = 550.2 us per step
    from roofline.catalog import get_device
    from roofline.llm.metrics import collective_latency

    dev = get_device("a100")
    spec = make_spec("llama-2-7b", phase="decode", context=105, tp=8)
    assert collective_latency(spec, dev, "decode") == pytest.approx((65 * 14 + 7) * 0.6e-6)
    sw = batch_sweep(spec, dev, [1, 4, 32])
    g = grid_sweep(spec, batches=[1, 4, 32], contexts=[105], devices=[dev], precisions=[(16, 16, 16)])
    for i, b in enumerate((1, 4, 32)):  # the per-op analysis (which charges the hops) is the second route
        full = analyze(build_workload(spec.replace(batch=b)), dev).total_time
        assert sw.latency[i] == pytest.approx(full, rel=1e-9) and g.time[i, 0, 0, 0] == pytest.approx(full, rel=1e-9)
    assert collective_latency(spec.replace(tp=1), dev, "decode") == 0.0


# -- the model's context and fused attention as a way to fit (issue 48, item 3) ---------------------------------


def test_a_prompt_past_the_context_is_one_line_naming_the_limit(capsys):
    from roofline.llm.spec import context_note, make_spec

    assert context_note(make_spec("llama-3-8b", phase="prefill", prompt=8192)) == ""  # its whole context: accepted
    with pytest.raises(RooflineError, match=r"^prompt 8,193 tokens is longer than llama-3-8b's context: "
                                            r"max_position_embeddings 8,192 \(no rope scaling\)$"):
        make_spec("llama-3-8b", phase="prefill", prompt=8193)
    with pytest.raises(RooflineError, match=r"^context 4,097 tokens is longer than llama-2-7b's context"):
        make_spec("llama-2-7b", phase="decode", context=4097)
    assert main(["llm", "llama-3-8b", "--device", "h100", "--prompt", "100000", "--phase", "prefill"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "max_position_embeddings 8,192" in err


def test_rope_scaling_extends_the_context_with_a_headline_note():
    """A YaRN config (Qwen2.5 style): max_position_embeddings 32,768, rope scaling factor 4 from an original
    32,768: 131,072 positions.  Past 32,768 the run is accepted and its headline leads with the note; past
    131,072 it is refused naming both."""
    import roofline
    from roofline.llm.spec import make_spec
    from roofline.words.summary import headline, summarize

    cfg = json.loads((Path(roofline.__file__).parent / "models" / "qwen2-7b.json").read_text())
    cfg.update(max_position_embeddings=32768, rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                                             "original_max_position_embeddings": 32768})
    spec = make_spec(cfg, phase="prefill", prompt=40000)
    assert (spec.arch.max_positions, spec.arch.rope_positions, spec.arch.rope_type) == (32768, 4 * 32768, "yarn")
    text = headline(summarize(analyze(from_llm(cfg, phase="prefill", prompt=40000), get_device("h200"))))
    assert text.startswith("prompt 40,000 tokens is past max_position_embeddings 32,768, within the config's rope "
                           "scaling (yarn: 131,072). ")
    with pytest.raises(RooflineError, match=r"its rope scaling \(yarn\) reaches 131,072\)$"):
        make_spec(cfg, phase="prefill", prompt=131073)
    # Llama 3.1 states its scaled context itself: original 8,192 x 8 = 65,536 does not reach past its 131,072
    cfg.update(max_position_embeddings=131072, rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                                              "original_max_position_embeddings": 8192})
    assert make_spec(cfg, phase="prefill", prompt=1024).arch.rope_positions == 0


def test_fused_attention_is_a_way_to_fit():
    """Prefill of 8,192 tokens x 8 sequences on an H100: the unfused score tensors (s x s per head) do not fit;
    fused attention (no score tensor in memory) does, and the headline names it (issue 48, item 3)."""
    from roofline.llm.metrics import fit_options, footprint
    from roofline.llm.spec import make_spec
    from roofline.words.summary import headline, summarize

    dev = get_device("h100")
    cap = dev.memory_capacity
    spec = make_spec("llama-3-8b", phase="prefill", prompt=8192, batch=8, flash=False)
    # the two footprints, each from the footprint model: unfused past the capacity, fused within it
    assert footprint(spec).total > cap >= footprint(spec.replace(flash=True)).total
    assert "fused attention (drop --unfused)" in [o.describe() for o in fit_options(spec, cap)]
    text = headline(summarize(analyze(from_llm("llama-3-8b", phase="prefill", prompt=8192, batch=8, flash=False), dev)))
    assert text.startswith("does not fit: ") and "fused attention (drop --unfused)" in text.split(". ")[0]
