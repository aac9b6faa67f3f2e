"""Interleaving with the first and last stages one layer short (Llama 3's pipeline, Dubey et al. 2024, section
3.3.2: "the first model chunk on the first stage has only the embedding, and the last model chunk on the last
stage has only output projection and loss calculation"), on a toy of 14 layers over 4 stages: 3/4/4/3."""

from __future__ import annotations

import pytest

from roofline.catalog import get_system
from roofline.core.errors import RooflineError
from roofline.planner import Layout, TrainingRun, check, estimate, layouts
from roofline.planner.layout import in_flight, interleaves, short_edge, stage_layers

TOY = {"model_type": "gpt2", "n_embd": 1024, "n_layer": 14, "n_head": 16, "vocab_size": 32000, "n_positions": 1024,
       "_name": "toy 14 layers"}


def _run() -> TrainingRun:
    return TrainingRun.of(TOY, seq=1024, global_batch=8)


def test_toy_split_and_the_interleaves_it_allows():
    # 14 over 4: 4 each less one from the first and the last; v 2 (3 = 2 x 2 - 1, 4 = 2 x 2) and v 4
    # (3 = 4 - 1: the edge chunk holds only the embedding / the loss; 4 = 4 x 1) fit, v 3 not (4 mod 3 = 1 on a
    # middle stage), v 5 not (4 mod 5)
    split = stage_layers(14, 4)
    assert split == (3, 4, 4, 3)
    assert interleaves(split) == (1, 2, 4)
    assert short_edge(split, 4, 0) and short_edge(split, 4, 3) and not short_edge(split, 4, 1)
    s = get_system("dgx-h100", nodes=1)
    run = _run()
    assert check(run, Layout(tp=2, pp=4, dp=1, interleave=4), s) == 8  # 8 micro-batches of 1 over dp 1
    # v 3 runs with uneven chunks (roofline.planner.stages: 3 = 1 + 1 + 1, 4 = 2 + 1 + 1); v 5 would leave a
    # stage's chunk empty (the first stage's 3 layers over 5 chunks: 0/0/1/1/1, its chunk 0 the embedding's)
    assert check(run, Layout(tp=2, pp=4, dp=1, interleave=3), s) == 8
    with pytest.raises(RooflineError, match="interleave 5 leaves chunk 1 of pipeline stage 1 with 0 layers"):
        check(run, Layout(tp=2, pp=4, dp=1, interleave=5), s)
    # a one-layer-short stage in the middle has an empty chunk: 4/3/4/3 with v 4
    with pytest.raises(RooflineError, match="interleave 4 leaves chunk 3 of pipeline stage 2 with 0 layers"):
        check(run, Layout(tp=2, pp=4, dp=1, interleave=4, stages=(4, 3, 4, 3)), s)
    got = {lay.interleave for lay in layouts(run, s) if lay.pp == 4}
    assert got == {1, 2, 4}
    # short_edges off: only v dividing every stage (gcd(3, 4, 4, 3) = 1)
    assert {lay.interleave for lay in layouts(run, s, short_edges=False) if lay.pp == 4} == {1}
    assert {lay.interleave for lay in layouts(run, s, short_edges=False) if lay.pp == 2} == {1, 7}  # 7/7


def test_toy_in_flight_by_hand():
    """v 4, m 8, chunks of one layer.  Forward i runs chunk (i mod 16) // 4, backward j chunk 3 - (j mod 16) // 4.
    Stage 0: W = 2 x 3 + 3 x 4 = 18 warm-up forwards, of chunk 0 (weight 0: the embedding only) i = 0..3 and
    16, 17, of chunks 1..3 (a layer each) 12: 12 layers held; forward 18 is chunk 0 again (12), then each step's
    backward takes chunk 3 or 2 before the forward of chunk 1 puts one back: peak 12 layers = 4 x its 3 layers.
    Stage 3: W = 12 (chunks 0..2, 12 layers); forwards 12..15 are chunk 3 (weight 0: the loss only) and so are
    backwards 0..3; forward 16 (chunk 0) comes before backward 4 (chunk 2) takes one: 13 layers, 13 / 3.
    Stage 1 (uniform, 4 layers): (2 x 2 + 3 x 4 + 1) / 4 = 17 / 4 of its 4 layers, the closed form."""
    assert in_flight(4, 4, 8, 0, 3) * 3 == pytest.approx(12)
    assert in_flight(4, 4, 8, 3, 3) * 3 == pytest.approx(13)
    assert in_flight(4, 4, 8, 1, 4) == pytest.approx(17 / 4) == in_flight(4, 4, 8, 1)
    # without the embedding's lighter chunk the closed form would count (2 x 3 + 12 + 1) / 4 = 4.75 x 3 layers
    assert in_flight(4, 4, 8, 0) * 3 == pytest.approx(14.25)


def test_toy_memory_bubble_and_sends_with_v4():
    """The estimate of tp 2 pp 4 v 4 on the toy: stage 0's activations per_layer x 12 (above), stage 1's x 17,
    stage 3's x 13 + its logits; the bubble (pp - 1) / (v m + pp - 1) = 3 / (32 + 3); the pp sends 2 v m = 64
    per stage (a forward and a backward per chunk per micro-batch: the embedding-only chunk sends its output to
    stage 1 as any chunk does)."""
    from roofline.llm.training import activation_bytes_per_layer, logits_bytes
    from roofline.planner.train import memory_per_device

    s = get_system("dgx-h100", nodes=4)
    lay = Layout(tp=2, pp=4, dp=4, zero=1, recompute="none", interleave=4)
    run = TrainingRun.of(TOY, seq=1024, global_batch=32)  # dp 4 x 8 micro-batches of 1
    e = estimate(run, lay, s)
    assert e.micro_batches == 8
    assert e.bubble_share == pytest.approx(3 / 35)
    per = activation_bytes_per_layer(run, tp=2, recompute="none")
    for stage, layers, held in ((0, 3, 12), (1, 4, 17), (3, 3, 13)):
        got = memory_per_device(run, lay, 0.0, 0.0, 8, layers=layers, stage=stage)["activations"]
        logits = logits_bytes(run, tp=2) if stage == 3 else 0.0
        assert got == pytest.approx(per * held + logits)
    sends = next(c for c in e.comms if c.name == "pp send/recv")
    assert sends.calls == 2 * 4 * 8
