"""Megatron-Core's fine-grained recomputation (roofline.llm.recompute, recompute=M1+M2): the modules' parse, the
memory each frees, and the time the backward runs again.  Expected values by hand in the comments."""

from __future__ import annotations

import pytest

from roofline.catalog import get_system
from roofline.core.errors import RooflineError
from roofline.llm import recompute as rc
from roofline.llm.config import load_arch
from roofline.llm.training import TrainingRun, activation_bytes_per_layer
from roofline.planner.layout import Layout, parse_layout
from roofline.planner.train import estimate


def test_parse_and_refuse():
    assert rc.modules("moe_act+layernorm+moe_act") == ("layernorm", "moe_act")
    assert rc.modules("selective") == ("core_attn",)
    assert parse_layout("tp=2,recompute=layernorm+moe_act").recompute == "layernorm+moe_act"
    with pytest.raises(RooflineError, match="Megatron-Core's --recompute-modules"):
        rc.check("layernorm+moe")
    run = TrainingRun(load_arch("qwen3-30b-a3b"), seq=4096, global_batch=64)
    with pytest.raises(RooflineError, match="recompute must be one of"):
        estimate(run, Layout(dp=8, ep=8, recompute="bogus"), get_system("dgx-h100", nodes=1))


def test_memory_saved_by_module_deepseek_v3():
    a = load_arch("deepseek-v3")
    # tp 2 with sequence parallelism, per local token and layer (bf16, 2 bytes):
    # layernorm: the two normed GEMM inputs, 2 x 7168 / 2 = 7168 elements, every layer
    assert rc.saved_elements(a, "layernorm", 2) == (7168.0, 1.0, "gemm")
    # mla_up_proj: Q, K, V of 128 / 2 heads, 2 x 192 + 128 = 512 each: 32768
    assert rc.saved_elements(a, "mla_up_proj", 2) == (32768.0, 1.0, "act")
    # moe_act: the routed down-projection input, 8 x 2048 / 2 = 8192, on 58 of 61 layers
    assert rc.saved_elements(a, "moe_act", 2) == (8192.0, 58 / 61, "gemm")
    # shared_experts: gate, up and their product, 3 x 2048 / 2 = 3072, on the MoE layers
    assert rc.saved_elements(a, "shared_experts", 2) == (3072.0, 58 / 61, "act")
    run = TrainingRun(a, seq=4096, global_batch=512)
    full = activation_bytes_per_layer(run, tp=2, recompute="none")
    mla = rc.activation_bytes(run, tp=2, recompute="mla_up_proj")
    assert full - mla == pytest.approx(4096 * 32768 * 2)  # 4096 tokens x 32768 x 2 B = 256 MiB per layer
    both = rc.activation_bytes(run, tp=2, recompute="layernorm+moe_act")
    assert full - both == pytest.approx(4096 * 2 * (7168 + 8192 * 58 / 61))


def test_whole_layer_settings_unchanged():
    run = TrainingRun(load_arch("deepseek-v3"), seq=4096, global_batch=512)
    for r in ("none", "selective", "full"):
        assert rc.activation_bytes(run, tp=2, recompute=r) == activation_bytes_per_layer(run, tp=2, recompute=r)


def test_recompute_time_is_the_modules_rows():
    run = TrainingRun(load_arch("deepseek-v3"), seq=4096, global_batch=4096)
    system = get_system("dgx-h100", nodes=64)
    base = dict(tp=2, pp=8, dp=32, ep=64, etp=1, micro_batch=1)
    est = {r: estimate(run, Layout(**base, recompute=r), system) for r in
           ("none", "selective", "layernorm", "mla_up_proj", "layernorm+mla_up_proj")}
    sh = est["none"].shard
    assert sh is not None
    times = sh.module_times()
    # selective is core_attn: the same seconds as before the modules (the attention core's rows)
    assert times["core_attn"] == pytest.approx(sh.attention_time)
    # the busiest stage's recomputation is its n of 61 layers' share of the modules' rows (n one of the split's
    # stage sizes, 7 or 8); modules add
    n = est["mla_up_proj"].recompute / times["mla_up_proj"] * 61
    assert n == pytest.approx(round(n)) and round(n) in est["none"].stage_layers
    assert est["layernorm+mla_up_proj"].recompute == pytest.approx(
        est["layernorm"].recompute + est["mla_up_proj"].recompute)
    assert est["none"].recompute == 0.0
    # the forecast of the recomputation is never below its bound, and the module list's forecast lies between
    # none's and full's
    assert est["mla_up_proj"].forecast_recompute >= est["mla_up_proj"].recompute
    assert est["none"].time < est["mla_up_proj"].time
