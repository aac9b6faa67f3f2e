"""The pipelines published runs use (roofline.planner.stages): Megatron-Core's first/last-stage layers, the embedding
and the loss counted in the split, stages= with virtual stages, interleaving over uneven stages, and what an uneven
split does to the bubble and to the activations in flight.  Every expected value derived by hand in its comment."""

from __future__ import annotations

import pytest

from roofline.catalog import get_system
from roofline.core.errors import RooflineError
from roofline.planner import Layout, TrainingRun, check, estimate
from roofline.planner.layout import in_flight, layout_keys, parse_layout
from roofline.planner.stages import bubble_skew, describe, layout_chunks, peak_layers, split


def test_first_and_last_as_megatron_core_splits_them():
    # DeepSeek-V3 at pp 16 with --decoder-first-pipeline-num-layers 4 --decoder-last-pipeline-num-layers 1
    # (Megatron-MoE-ModelZoo runtime.conf at e8650517): the 61 - 4 - 1 = 56 left over 14 middle stages, 4 each
    chunks = layout_chunks(parse_layout("pp=16,first=4,last=1"), 61)
    assert tuple(map(sum, chunks)) == (4,) * 15 + (1,)
    # pp 4, first 16, last 13: (61 - 29) / 2 = 16 on each middle stage
    assert tuple(map(sum, split(61, 4, 1, first=16, last=13))) == (16, 16, 16, 13)
    # with v 8 Megatron-Core refuses 13 layers on the last stage (13 mod 8 = 5)
    with pytest.raises(RooflineError, match="must be divisible by interleave 8"):
        split(61, 4, 8, first=16, last=13)
    # 61 - 10 - 10 = 41 over 2 middle stages: not whole
    with pytest.raises(RooflineError, match="41 of the 61 layers for 2 middle stages"):
        split(61, 4, 1, first=10, last=10)
    with pytest.raises(RooflineError, match="cannot be set together"):
        split(61, 4, 1, first=16, embed=True)


def test_embedding_and_loss_in_the_split():
    # Qwen3-235B-A22B at pp 8, v 4 with both accounted (Megatron-MoE-ModelZoo Qwen3-235B-A22B.yaml): (94 + 2) / 8 =
    # 12 a rank, chunks of 3; the first rank's chunk 0 and the last rank's chunk 3 hold 2 layers (the embedding /
    # the loss the third)
    chunks = layout_chunks(parse_layout("pp=8,interleave=4,embed-split,loss-split"), 94)
    assert chunks[0] == (2, 3, 3, 3) and chunks[-1] == (3, 3, 3, 2) and chunks[3] == (3, 3, 3, 3)
    assert tuple(map(sum, chunks)) == (11,) + (12,) * 6 + (11,)
    # 61 + 1 + 1 = 63 does not divide over 4 ranks
    with pytest.raises(RooflineError, match="63 do not divide evenly over pp 4"):
        split(61, 4, 1, embed=True, loss=True)
    # only the embedding: (61 + 1) / 2 = 31 a rank, the first rank 30
    assert tuple(map(sum, split(61, 2, 1, embed=True))) == (30, 31)


def test_uneven_interleaving_61_layers_over_pp4_v8():
    # per rank the default split 15/15/16/15 (the edges one short); each rank's layers over 8 chunks as evenly as
    # possible: 15 = 7 x 2 + 1, the lighter chunk first on the first rank (embedding), last elsewhere
    chunks = split(61, 4, 8)
    assert tuple(map(sum, chunks)) == (15, 15, 16, 15)
    assert chunks[0] == (1,) + (2,) * 7 and chunks[1] == (2,) * 7 + (1,) and chunks[2] == (2,) * 8
    # the largest chunk (2 layers) is 1/8 of the busiest stage (16): the even bubble, (pp - 1) / v
    assert bubble_skew(chunks) == 1.0
    run = TrainingRun.of("deepseek-v3", seq=4096, global_batch=512)
    system = get_system("dgx-h100", nodes=32)
    lay = parse_layout("tp=1,pp=4,ep=64,dp=64,zero=1,mb=1,recompute=full,interleave=8")
    assert check(run, lay, system) == 8  # 512 / 64 = 8 micro-batches, a multiple of pp 4: runs (was refused)
    est = estimate(run, lay, system)
    assert est.stage_layers == (15, 15, 16, 15)
    assert est.slots == pytest.approx(8 + 3 / 8)  # m + (pp - 1) / v


def test_stages_with_virtual_stages():
    # DeepSeek-V3's published H100 layout "Et|(tt|)*30mL" at pp 8, v 4 (Megatron-MoE-ModelZoo
    # run_deepseek_v3_h100.sh): virtual stages 1, 2 x 30, 0 in model order; virtual stage j on rank j mod 8
    keys = layout_keys("pp=8,interleave=4,stages=1/2x30/0")
    assert keys["pp"] == 8 and len(keys["stages"]) == 32
    chunks = layout_chunks(Layout(pp=8, interleave=4, stages=keys["stages"]), 61)
    assert chunks[0] == (1, 2, 2, 2) and chunks[7] == (2, 2, 2, 0) and chunks[4] == (2, 2, 2, 2)
    assert tuple(map(sum, chunks)) == (7,) + (8,) * 6 + (6,)  # 1 + 6 = 7, 6 + 0 = 6, the rest 4 x 2
    assert describe(chunks) == "1/2x30/0"
    # pp x v entries without pp named are per-rank stages, where an empty stage (0) is refused: pp and v must be
    # named for virtual stages
    with pytest.raises(RooflineError, match="0 only for an edge of pp x v virtual stages"):
        layout_keys("interleave=4,stages=1/2x30/0")
    assert layout_keys("interleave=4,stages=1/2x30/1")["pp"] == 32
    # an empty virtual stage other than the first (embedding) or the last (loss)
    with pytest.raises(RooflineError, match="leaves chunk 0 of pipeline stage 2 with 0 layers"):
        split(61, 2, 2, stages=(1, 0, 30, 30))  # virtual stage 1 is chunk 0 of rank 1
    # a split that does not sum to the model's layers
    with pytest.raises(RooflineError, match="sums to 60 layers; the model has 61"):
        split(61, 2, 2, stages=(15, 15, 15, 15))


def test_the_keys_parse_and_describe():
    lay = parse_layout("tp=1,pp=4,first=16,last=13,capacity=1.25")
    assert (lay.first_layers, lay.last_layers, lay.capacity) == (16, 13, 1.25)
    assert lay.describe().endswith("first=16 last=13 capacity=1.25")
    lay = parse_layout("pp=8,embed-split,loss-split=true")
    assert lay.embed_split and lay.loss_split and "embed-split loss-split" in lay.describe()
    with pytest.raises(RooflineError, match="capacity is the experts' capacity factor"):
        parse_layout("capacity=0")
    with pytest.raises(RooflineError, match="embed-split must be true or false"):
        parse_layout("embed-split=maybe")


def test_in_flight_over_uneven_chunks_by_hand():
    """pp 2, m 4, stage 0, chunks of 1, 1 and 2 layers (v 3).  Warm-up W = 2 (2 - 0 - 1) + (3 - 1) 2 = 6 forwards,
    chunks (f mod 6) // 2 = 0, 0, 1, 1, 2, 2: held 1, 2, 3, 4, 6, 8.  Then per step a forward and a backward
    (chunk 2 - (b mod 6) // 2): f6 chunk 0 -> 9 (the peak), b0 chunk 2 -> 7; f7 chunk 0 -> 8, b1 chunk 2 -> 6;
    f8 chunk 1 -> 7, b2 chunk 1 -> 6; f9 -> 7, b3 -> 6; f10 chunk 2 -> 8, b4 chunk 0 -> 7; f11 -> 9, b5 -> 8.
    Peak 9 layers of the stage's 4: 2.25 micro-batches, below the even chunks' closed form (2 + 4 + 1) / 3."""
    assert peak_layers(2, 4, 0, (1, 1, 2)) == 9
    assert in_flight(2, 3, 4, 0) == pytest.approx(7 / 3)
    # uniform chunks: the closed form, 4 (1 + 3 / 8) = 5.5 of a stage with 2 chunks of 3 (Korthikanti et al. 2022)
    assert peak_layers(4, 8, 0, (3, 3)) / 6 == pytest.approx(5.5)


def test_the_bubble_of_uneven_chunks():
    """Two stages of 4 layers, v 3: chunks 1/1/2 and 2/1/1; the largest (2 layers) is 2/4 of a stage, not 1/3:
    the forecast's bubble (pp - 1) / v x 3 x 2 / 4 = 1/3 x 1.5 = 0.5 micro-batches; the bound keeps 1/3."""
    toy = {"model_type": "gpt2", "n_embd": 1024, "n_layer": 8, "n_head": 16, "vocab_size": 32000,
           "n_positions": 1024, "_name": "toy 8 layers"}
    run = TrainingRun.of(toy, seq=1024, global_batch=8)
    system = get_system("dgx-h100", nodes=1)
    lay = Layout(tp=4, pp=2, dp=1, interleave=3, recompute="none")
    chunks = layout_chunks(lay, 8)
    assert chunks == ((1, 1, 2), (2, 1, 1))
    assert bubble_skew(chunks) == pytest.approx(1.5)
    est = estimate(run, lay, system)
    m = 8  # 8 sequences of 1 over dp 1
    assert est.slots == pytest.approx(m + 0.5)
    pipeline = (m + 1 / 3) * max(est.compute, sum(c.time for c in est.comms if c.overlappable_with == "micro-batch") / m)
    step = sum(c.time for c in est.comms if c.overlappable_with == "step")
    assert est.bound == pytest.approx(max(pipeline, step) + est.optimizer)
