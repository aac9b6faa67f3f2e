"""Megatron-Bridge's published dense Llama 3 rows of ``benchmarks/bench_published.py`` (Blackwell and the H100 FP8
table): the measured step by hand, the NVLink segments its executor asks for, the recipe's settings on the run, and
every published layout running with its bound at or below the measured step."""

from __future__ import annotations

import pytest
from tests.published_bench import load_bench_published


@pytest.fixture(scope="module")
def bench():
    return load_bench_published()


def test_segments_as_the_executor_asks(bench) -> None:
    """executors.py: --segment = the trays up to 18, else the largest divisor of the trays up to 18: 8 GPUs = 2 trays
    -> 8; 64 = 16 trays -> 64; 256 = 64 trays -> 16 trays = 64 GPUs (4 domains); B200: nodes of 8.  NVLS off."""
    assert bench.bridge_system("gb200", 8).domain == 8
    assert bench.bridge_system("gb300", 64).domain == 64
    s = bench.bridge_system("gb200", 256)
    assert (s.domain, s.domains) == (64, 4)
    assert bench.bridge_system("b200", 128).domain == 8
    assert not any(t.in_switch_reduction for t in s.tiers)


def test_the_recipe_on_the_run(bench) -> None:
    """The 405B's 126 layers + embedding + loss = 128 over pp 8 x vp 4 = 4 a chunk, the first and the last chunk one
    short; bf16 gradient buffers; no recomputation; FSDP as ZeRO 3."""
    e = bench.bridge_estimate("llama-3-405b", bench.bridge_system("gb300", 256), "fp8-current", 1536, 1, 8192, 0, 4,
                              8, 1, 4)
    assert e.run.main_grad_bytes == 2 and e.layout.recompute == "none" and e.layout.zero == 1
    assert e.layout.embed_split and e.layout.loss_split
    f = bench.bridge_estimate("llama-3-70b", bench.bridge_system("gb200", 64), "fp8-current", 256, 2, 8192, 64, 1, 1,
                              1, 1)
    assert f.layout.zero == 3 and not f.run.grad_accumulation_fusion


def test_every_row_runs_bounded(bench) -> None:
    """Measured by hand, GB300 8B FP8-CS: 128 x 8192 / (37,556 x 8) = 3.490 s; every row's bound <= its measured."""
    r = bench.BLACKWELL_ROWS[0]
    assert r[1:5] == ("gb300", "llama-3-8b", 8, "fp8-current")
    assert r[5] * r[7] / (r[-1] * r[3]) == pytest.approx(3.490, abs=1e-3)
    for rel, dev, model, gpus, prec, gbs, mbs, seq, fsdp, tp, pp, cp, vp, tps in bench.BLACKWELL_ROWS:
        e = bench.bridge_estimate(model, bench.bridge_system(dev, gpus), prec, gbs, mbs, seq, fsdp, tp, pp, cp, vp)
        assert e.bound <= gbs * seq / (tps * gpus), (rel, dev, model, prec)
        assert e.bound <= e.time
