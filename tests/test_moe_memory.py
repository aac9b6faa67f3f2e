"""Memory of MoE training (roofline.planner.moe_memory, roofline.planner.train.memory_per_device): expert states
over the expert-data-parallel replicas, the routed tokens' activations (dropless, and at a capacity factor), DeepEP's
all-to-all buffers, and the published layouts that ran without recomputation fitting.  Expected values by hand."""

from __future__ import annotations

import pytest

from roofline.catalog import get_system
from roofline.llm.training import TrainingRun, routed_activation_bytes_per_layer
from roofline.planner import estimate
from roofline.planner.layout import in_flight, parse_layout
from roofline.planner.moe_memory import deepep_buffer_bytes


def test_deepep_buffers_by_hand():
    """DeepEP ``config.hpp`` hints, 20 SMs = 10 channels, int64 top-k indices, 8-byte SourceMeta.
    ep 64, h 7168 bf16: H = 14336; per token 14336 + 8 + 128 x 8 + 128 x 4 + 128 x 4 = 16392.
    NVLink (8 ranks, 8 RDMA ranks, 288 tokens): 10 x 8 x 19 x 4 + 10 x 8 x 288 x 16392 = 6080 + 377,671,680 =
    377,677,760, up to 128: 377,677,824.  RDMA (128 tokens): 10 x 8 x 18 x 2 x 4 + 2 x 10 x 8 x 128 x 16408 =
    11,520 + 336,035,840 = 336,047,360 (a multiple of 128).  Sum 713,725,184.
    ep 8, h 4096: no RDMA; 10 x 8 x 5 x 4 + 10 x 8 x 256 x (8192 + 8 + 2048) = 1600 + 209,879,040 = 209,880,640,
    up to 128: 209,880,704."""
    assert deepep_buffer_bytes(64, 7168) == 713_725_184
    assert deepep_buffer_bytes(8, 4096) == 209_880_704


def test_routed_activations_match_megatrons_estimator():
    """DeepSeek-V3, s 4096, b 1, tp 1, bf16, per MoE layer (the mean over 61 layers x 61 / 58).  Megatron-MoE-ModelZoo
    ``misc/tools/deepseek_mem_estimate.py`` (e8650517) keeps for the routed experts ``permute_out`` s k h x 2 B =
    4096 x 8 x 7168 x 2 = 448 MiB, ``expert_linear_1_out`` s k 2f x 2 = 256 MiB, ``expert_act_out`` 128 MiB and
    ``unpermute_alltoall_out`` 448 MiB: 1280 MiB."""
    run = TrainingRun.of("deepseek-v3", seq=4096, global_batch=512)
    per_moe_layer = routed_activation_bytes_per_layer(run, recompute="none") * 61 / 58
    # Megatron's estimator: 1,280 MiB; the MoE ops (issue 50) read the shared expert's output in an add of its own,
    # which saves nothing for the backward (the 56 MiB the earlier combine op held), and the combine keeps the
    # top-k routing weights for its backward: 64 KiB (4,096 tokens x 8 x 2 B, bf16)
    assert per_moe_layer == pytest.approx(1280 * 2**20 + 65536)
    assert routed_activation_bytes_per_layer(run, recompute="full") == 0  # the layer input only is kept


def test_capacity_factor_scales_the_routed_rows():
    """Mixtral-8x7B, tp 1 pp 4 v 8 ep 8 dp 16, m = 256 / 16 = 16.  Routed per token (k 2, h 4096, f 14336): gate's
    input k h 8192, act's input k f 28672, the product's up 28672, down's input 28672, combine's k h 8192: 102,400
    elements x 2 B x 4096 tokens = 838,860,800 B a layer.  Stage 0 holds min(16 x 8, 2 x 3 + 7 x 4 + 1) / 8 = 35/8
    micro-batches of its 8 layers = 35 layers; capacity 1.25 pads each expert to 1.25 x its balanced rows:
    + 0.25 x 838,860,800 x 35 = 7,340,032,000 B."""
    run = TrainingRun.of("mixtral-8x7b", seq=4096, global_batch=256)
    system = get_system("dgx-h100", nodes=8)
    base = "tp=1,pp=4,interleave=8,ep=8,dp=16,zero=1,mb=1,recompute=none"
    # + 16 KiB: the top-k routing weights the combine keeps (4,096 tokens x 2 x 2 B, bf16)
    assert routed_activation_bytes_per_layer(run, recompute="none") == 838_860_800 + 16_384
    assert in_flight(4, 8, 16, 0) * 8 == 35
    dropless = estimate(run, parse_layout(base), system)
    padded = estimate(run, parse_layout(base + ",capacity=1.25"), system)
    assert dropless.memory_stage == padded.memory_stage == 0
    assert padded.memory["activations"] - dropless.memory["activations"] == pytest.approx(0.25 * (838_860_800 + 16_384) * 35)  # + the routing weights
    full = "tp=1,pp=4,interleave=8,ep=8,dp=16,zero=1,mb=1,recompute=full"
    assert estimate(run, parse_layout(full + ",capacity=1.25"), system).memory == \
        estimate(run, parse_layout(full), system).memory  # full recomputation keeps no routed rows
    assert dropless.memory["ep buffers"] == 209_880_704  # DeepEP's, ep 8, h 4096 (above)


def test_expert_states_over_the_expert_data_parallel_replicas():
    """Mixtral-8x7B, tp 1 pp 4 ep 8 dp 16, ZeRO 1: stage 0 holds 8 layers of 8 experts / ep 8 = 1 expert each,
    3 x 4096 x 14336 = 176,160,768 parameters a layer: 1,409,286,144, whose Adam state (12 B) is sharded over
    dp / ep = 2 expert replicas: 8,455,716,864 B; the dense parameters (attention 2 x 4096^2 + 2 x 4096 x 1024 =
    41,943,040, router 32,768, two norms 8,192 a layer; the embedding 32000 x 4096) over all 16:
    (8 x 41,984,000 + 131,072,000) / 16 x 12 = 350,208,000 B (the final norm is the last stage's)."""
    run = TrainingRun.of("mixtral-8x7b", seq=4096, global_batch=256)
    est = estimate(run, parse_layout("tp=1,pp=4,interleave=8,ep=8,dp=16,zero=1,mb=1,recompute=none"),
                   get_system("dgx-h100", nodes=8))
    assert est.memory_stage == 0
    assert est.memory["optimizer"] == pytest.approx(8_455_716_864 + 350_208_000, rel=1e-6)
    # weights and gradients unsharded under ZeRO 1: 2 B each of 1,409,286,144 + 466,944,000
    assert est.memory["weights"] == pytest.approx(2 * (1_409_286_144 + 466_944_000), rel=1e-6)


# Published MoE training layouts whose publishers ran them without recomputation (bf16, seq 4096, mbs 1, Megatron-Core's
# distributed optimizer = ZeRO 1, fp32 main gradients: Megatron forces them under bf16):
#   * Mixtral-8x7B, 64 H100: TP1 EP8 PP4 VP8 GBS 256 (Megatron-LM megatron/core/transformer/moe/README.md, "Reference
#     Best Parallel Mapping", MCore v0.8; Megatron-MoE-ModelZoo runtime.conf at e8650517: the same, 8 nodes);
#   * Mixtral-8x22B, 128 H100: TP4 EP2 PP8 VP7 GBS 256 (the same README table);
#   * Qwen3-30B-A3B, 32 H100: TP1 EP8 PP1 GBS 256 (Megatron-MoE-ModelZoo best_practice/qwen3/run_30b.sh, its first
#     line, no recompute flags; runtime.conf: MBS 1, GBS 256).
PUBLISHED_NO_RECOMPUTE = [
    ("mixtral-8x7b", 8, 256, "tp=1,pp=4,interleave=8,ep=8,dp=16,zero=1,mb=1,recompute=none"),
    ("mixtral-8x22b", 16, 256, "tp=4,pp=8,interleave=7,ep=2,dp=4,zero=1,mb=1,recompute=none"),
    ("qwen3-30b-a3b", 4, 256, "tp=1,pp=1,ep=8,dp=32,zero=1,mb=1,recompute=none"),
]


@pytest.mark.parametrize(("model", "nodes", "gbs", "layout"), PUBLISHED_NO_RECOMPUTE)
def test_published_layouts_without_recomputation_fit(model: str, nodes: int, gbs: int, layout: str) -> None:
    run = TrainingRun.of(model, seq=4096, global_batch=gbs, main_grad_bytes=4)
    est = estimate(run, parse_layout(layout), get_system("dgx-h100", nodes=nodes))
    assert est.fits, est.fit_clause()


def test_deepseek_v3_needs_the_recomputation_its_publishers_ran():
    """DeepSeek-V3 was never published without recomputation: its report recomputes "all RMSNorm operations and MLA
    up-projections" (DeepSeek-AI 2024, section 3.2.3), Megatron-Core's H100 recipes pass ``--recompute-modules
    mla_up_proj mlp`` (1,024 GPUs) or ``mla_up_proj moe mlp layernorm`` with the optimizer offloaded (256 GPUs)
    (Megatron-MoE-ModelZoo run_deepseek_v3_h100.sh).  Megatron's own estimator puts the pp 16 layout without it at
    131 GB of activations on stage 0 (60 layer-micro-batches x 2236 MiB); the tool agrees it does not fit, and fits
    it with full recomputation."""
    run = TrainingRun.of("deepseek-v3", seq=4096, global_batch=8192)
    system = get_system("dgx-h100", nodes=128)
    none = estimate(run, parse_layout("tp=1,pp=16,ep=64,dp=64,zero=1,mb=1,recompute=none,first=4,last=1"), system)
    assert not none.fits
    assert none.memory["activations"] > 100 * 2**30
    full = estimate(run, parse_layout("tp=1,pp=16,ep=64,dp=64,zero=1,mb=1,recompute=full,first=4,last=1"), system)
    assert full.fits


def test_zero3_gathers_only_the_sharded_states():
    """ZeRO 3 with ep = dp (one expert replica): the experts are held whole, nothing of them is gathered; the dense
    parameters are, over dp.  Mixtral-8x7B, tp 1 pp 4 ep 8 dp 8 (32 devices), the last stage (lm_head, the logits)
    holding the most: dense (8 x 41,984,000 + the final norm 4096 + lm_head 32000 x 4096) / 8 layers = 58,368,512
    a layer, x (2 live layers x 2 B + 2 B of gradient) = 350,211,072 B (before, the experts' 176,160,768 a layer
    were counted as gathered too)."""
    run = TrainingRun.of("mixtral-8x7b", seq=4096, global_batch=256)
    est = estimate(run, parse_layout("tp=1,pp=4,interleave=8,ep=8,dp=8,zero=3,mb=1,recompute=full"),
                   get_system("dgx-h100", nodes=4))
    assert est.memory_stage == 3
    assert est.memory["zero3 buffers"] == pytest.approx(350_211_072, rel=1e-6)
