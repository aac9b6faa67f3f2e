"""Korthikanti et al. 2022 (arXiv 2205.05198) Table 5 rows of ``benchmarks/bench_published.py``: the publisher's
FLOP formulas (eq. 7, model FLOPs, for MFU; eq. 8, with selective recomputation, for HFU) checked by hand on one
row, and cross-checked on every row against a second, first-party source: the MFU/HFU table of the NVIDIA/Megatron-LM
README at commit 2e90a342f5 (2022-05-19), which states those runs' utilisations at data-parallel size one."""

from __future__ import annotations

import pytest
from tests.published_bench import load_bench_published


@pytest.fixture(scope="module")
def bench():
    return load_bench_published()


def _rows(bench, source):
    return {r.label.split()[-1]: r for r in bench._training_rows() if r.source is source}


A100_PEAK = 312e12  # dense fp16/bf16 tensor FLOP/s, the peak the paper's MFU divides by (footnote, as transcribed)


def test_present_work_175b_mfu_and_hfu_by_hand(bench):
    """175B: B 64, L 96, s 2048, h 12288, v 51200, 64 GPUs, 13.75 s per iteration.
    eq. 7: 72 B L s h^2 = 72 x 64 x 96 x 2048 x 12288^2 = 136,796,838,681,378,816;
    1 + s/(6h) + v/(12 h L) = 1 + 2048/73728 + 51200/14155776 = 1 + 0.0277778 + 0.0036169 = 1.0313947;
    model FLOPs = 1.410915e17.  GPU-seconds x peak = 13.75 x 64 x 312e12 = 2.7456e17: MFU 0.51388 (README 51.4%).
    eq. 8: 1 + s/(3h) + v/(12 h L) = 1 + 0.0555556 + 0.0036169 = 1.0591725: 1.448914e17 FLOPs, HFU 0.52772
    (README 52.8%)."""
    r = _rows(bench, bench.KORTHIKANTI)["175B"]
    assert r.measured == 13.75  # the published iteration time, not a conversion
    assert r.publisher_flops() == pytest.approx(1.410915e17, rel=1e-6)
    assert r.publisher_hardware_flops() == pytest.approx(1.448914e17, rel=1e-6)
    gpu_seconds_peak = 13.75 * 64 * A100_PEAK  # 2.7456e17
    assert r.publisher_flops() / gpu_seconds_peak == pytest.approx(0.51388, abs=5e-5)
    assert r.publisher_hardware_flops() / gpu_seconds_peak == pytest.approx(0.52772, abs=5e-5)


# NVIDIA/Megatron-LM README.md at 2e90a342f5: 'Model FLOPs Utilization' and 'Hardware FLOPs Utilization' (%)
README_MFU_HFU = {"22B": (41.5, 43.7), "175B": (51.4, 52.8), "530B": (56.0, 57.0), "1T": (56.3, 57.0)}


@pytest.mark.parametrize("size", sorted(README_MFU_HFU))
def test_every_present_work_row_gives_the_readme_utilisations(bench, size):
    """Two routes: the transcribed Table 3 configuration and Table 5 seconds through eqs. 7 and 8, against the
    README's percentages (first party, rounded to 0.1): within 0.2 points (22B, 1.10 s rounded to 10 ms, is
    the loosest: 41.65% against 41.5%)."""
    r = _rows(bench, bench.KORTHIKANTI)[size]
    mfu, hfu = README_MFU_HFU[size]
    peak_seconds = r.measured * r.gpus * A100_PEAK
    assert r.dp == 1  # "measured using a data parallel size of one"
    assert 100 * r.publisher_flops() / peak_seconds == pytest.approx(mfu, abs=0.2)
    assert 100 * r.publisher_hardware_flops() / peak_seconds == pytest.approx(hfu, abs=0.2)


def test_eq7_is_megatron_cores_formula_for_this_architecture(bench):
    """72 B s L h^2 (1 + s/(6h) + v/(12hL)) = 12 B s L h^2 (2 + s/h + 4 + v/(2Lh)) (multi-head, 4h GeLU MLP):
    the r0.8.0 formula the MEGATRON rows use, the same FLOPs by another route."""
    r = _rows(bench, bench.KORTHIKANTI)["530B"]
    as_megatron = bench.TrainRow("x 530B", r.hidden, r.layers, r.heads, r.tp, r.pp, r.gpus, r.batch, 1.0,
                                 bench.MEGATRON, r.seq, r.vocab, r.system)
    assert r.publisher_flops() == pytest.approx(as_megatron.publisher_flops(), rel=1e-12)


def test_full_recompute_rows_count_one_more_forward_for_hfu(bench):
    """Full recomputation: Narayanan et al. eq. 3, 96 B s L h^2 (1 + s/(6h) + v/(16 L h)) -- the layers' forward
    once more (4 passes of 24 B s h^2 (1 + s/(6h)) per layer), the logits' 6 B s h v once.  22B at 1.42 s on
    8 GPUs: 72 x 4 x 48 x 2048 x 6144^2 = 1.068725e15 x (1 + 0.0555556 + 0.0144676) = 1.143561e15 model FLOPs,
    MFU = 1.143561e15 / (1.42 x 8 x 312e12 = 3.54432e15) = 0.32265; hardware FLOPs 96/72 x 1.068725e15 x
    (1 + 0.0555556 + 0.0108507) = 1.519594e15, HFU 0.42874."""
    r = _rows(bench, bench.KORTHIKANTI_FULL)["22B"]
    assert r.measured == 1.42
    peak_seconds = 1.42 * 8 * A100_PEAK
    assert r.publisher_flops() / peak_seconds == pytest.approx(0.32265, abs=5e-5)
    assert r.publisher_hardware_flops() / peak_seconds == pytest.approx(0.42874, abs=5e-5)


def test_every_published_layout_is_searched_and_fits(bench):
    """Each Table 5 layout (tp, pp, dp 1, micro-batch, interleaving where stated, the row's recomputation and
    sequence parallelism) is in the planner's search and fits the memory model: they ran on 80 GB A100s."""
    rows = [r for r in bench._training_rows() if r.source in (bench.KORTHIKANTI, bench.KORTHIKANTI_FULL)]
    assert len(rows) == 8  # 4 model sizes x (full recompute, present work)
    for r in rows:
        x = bench.evaluate_training(r)
        assert x["fits"] and x["rank"] >= 1, r.label
