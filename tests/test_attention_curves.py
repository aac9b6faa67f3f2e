"""The cited attention efficiency curves by keys and head dim (forward), and the fused attention's backward rate
(``attention-backward``, a share of the forward's rate), per catalog GPU: each table reproduces its figure's bar
labels by hand, the forward curves rise, each op takes the curve of its nearest head dim."""

from __future__ import annotations

import numpy as np
import pytest

from roofline import Op, Workload, analyze, get_device
from roofline.catalog.calibrations import cited_calibration, devices_with_cited_calibration
from roofline.core.errors import RooflineError
from roofline.hardware.calibration_curves import CitedPoint, TabulatedCurve, by_head_dim
from roofline.planner.forecast import FLASH_BACKWARD_RATE, flash_backward_rate

H100, H200, A100 = "NVIDIA H100 SXM5 80GB", "NVIDIA H200 SXM 141GB", "NVIDIA A100 SXM4 80GB"
SEQ = [512, 1024, 2048, 4096, 8192, 16384]


def _table(device: str, kind: str, head_dim: float):
    cal = cited_calibration(device)
    assert cal is not None
    [t] = [t for t in cal.tables if t.kind == kind and t.term == "compute" and not t.precision
           and t.head_dim == head_dim]
    return t


@pytest.mark.parametrize("device", [H100, H200])
def test_h100_forward_is_the_fa3_papers_cudnn_causal_bars(device):
    # FA3 paper Figure 5(d), forward with causal mask, head dim 128, cuDNN bars (TFLOP/s) / 989.4 peak:
    #   315 / 989.4 = 0.3184, 410 / 989.4 = 0.4144, 484 / 989.4 = 0.4892, 518 / 989.4 = 0.52355,
    #   529 / 989.4 = 0.5347, 539 / 989.4 = 0.5448
    t = _table(device, "attention", 128)
    assert t.relative_to == "peak" and [p.x for p in t.points] == SEQ
    assert [p.efficiency for p in t.points] == pytest.approx([0.3184, 0.4144, 0.4892, 0.5236, 0.5347, 0.5448], abs=1e-4)
    # Figure 5(b), head dim 64: 225 / 989.4 = 0.2274 ... 388 / 989.4 = 0.3922
    t64 = _table(device, "attention", 64)
    assert [t64.points[0].efficiency, t64.points[-1].efficiency] == pytest.approx([0.2274, 0.3922], abs=1e-4)
    # Figure 5(f), head dim 256: 308 / 989.4 = 0.3113 ... 509 / 989.4 = 0.5145
    t256 = _table(device, "attention", 256)
    assert [t256.points[0].efficiency, t256.points[-1].efficiency] == pytest.approx([0.3113, 0.5145], abs=1e-4)


def test_h100_backward_rate_is_cudnn_backward_over_forward():
    # FA3 paper Figure 6 (backward, head dim 128, no mask) over Figure 5(c) (forward, no mask), cuDNN:
    #   305/497 = 0.6137, 408/574 = 0.7108, 465/617 = 0.7536, 499/609 = 0.8194, 518/600 = 0.8633, 516/595 = 0.8672
    t = _table(H100, "attention-backward", 128)
    assert t.relative_to == "forward"
    assert [p.efficiency for p in t.points] == pytest.approx([0.6137, 0.7108, 0.7536, 0.8194, 0.8633, 0.8672], abs=1e-4)
    # head dim 64: 266/335 = 0.7940 at 512, 433/413 = 1.0484 at 16k (faster than its forward: a ratio may pass 1,
    # and 432/412 = 1.0485 at 8k shows it need not rise)
    t64 = _table(H100, "attention-backward", 64)
    assert [t64.points[0].efficiency, t64.points[-1].efficiency] == pytest.approx([0.7940, 1.0484], abs=1e-4)


def test_a100_is_the_fa2_papers_forward_plus_backward_bars_for_both_passes():
    # FA2 paper Figure 4(d), forward + backward with causal mask, head dim 128, FlashAttention-2 / 312 peak:
    #   99/312 = 0.3173, 133/312 = 0.4263, 155/312 = 0.4968, 173/312 = 0.5545, 182/312 = 0.5833, 189/312 = 0.6058
    t = _table(A100, "attention", 128)
    assert [p.efficiency for p in t.points] == pytest.approx([0.3173, 0.4263, 0.4968, 0.5545, 0.5833, 0.6058], abs=1e-4)
    # (c), head dim 64: 88/312 = 0.2821 ... 171/312 = 0.5481
    t64 = _table(A100, "attention", 64)
    assert [t64.points[0].efficiency, t64.points[-1].efficiency] == pytest.approx([0.2821, 0.5481], abs=1e-4)
    # the figure's rate is the two passes': the backward runs at the forward's (rate 1) as FA2 counts FLOPs (the
    # backward at 2.5 x the forward's); the planner counts it at 2 x, so its rate is 1 x 2 / 2.5 = 0.8 (the two passes'
    # seconds then 1 + 2 / 0.8 = 3.5 forward-FLOP units over the figure's rate, what the figure measures)
    dev = get_device("a100-sxm4-80gb")
    assert flash_backward_rate(dev, np.array([2048.0]), np.array([128.0]), "bf16") == pytest.approx([0.8])


def test_every_cited_forward_attention_curve_rises():
    for name in devices_with_cited_calibration():
        cal = cited_calibration(name)
        assert cal is not None
        for t in cal.tables:
            if t.kind == "attention" and t.term == "compute":
                e = [p.efficiency for p in t.points]
                assert e == sorted(e), (name, t.head_dim)


def test_flash_backward_rate_by_keys_and_head_dim():
    dev = get_device("h100")
    keys, hd = np.array([4096.0, 4096.0, 1448.0, 4096.0]), np.array([128.0, 64.0, 128.0, 96.0])
    r = flash_backward_rate(dev, keys, hd, "bf16")
    # 4k, head dim 128: 499/609 = 0.8194; head dim 64: 417/408 = 1.0221; 1448 keys: halfway in log2 between 1k and
    # 2k (log2 1448 = 10.4998): 0.7108 + 0.4998 x (0.7536 - 0.7108) = 0.7322; head dim 96 is nearer 128 in log
    # (ln 128/96 = 0.288 < ln 96/64 = 0.405): 0.8194; each x 2 / 2.5 (the figures count the backward's FLOPs at 2.5 x
    # the forward's, the planner at 2 x): 0.6555, 0.8177, 0.5858, 0.6555
    assert r == pytest.approx([0.6555, 0.8177, 0.5858, 0.6555], abs=2e-4)
    # a device without a cited backward curve keeps the stated constant, counted the same way: 0.84 x 0.8 = 0.672
    plain = get_device("rtx-4090")
    assert flash_backward_rate(plain, keys, hd, "bf16") == pytest.approx([FLASH_BACKWARD_RATE * 0.8] * 4)


def test_an_attention_op_takes_the_curve_of_its_head_dim():
    dev = get_device("h100")
    ops = [Op(f"a{d}", kind="attention", flops=4 * 16 * 2048 * 2048 * d / 2, bytes_read=3 * 2 * 16 * 2048 * d,
              bytes_written=2 * 16 * 2048 * d, precision="bf16", unit="matrix", m=2048, n=2048, k=d, batch=16)
           for d in (64, 128, 256)]
    f = analyze(Workload.from_ops(ops), dev, forecast=True).forecast
    # at 2k keys: Figure 5(b) 334, 5(d) 484 and 5(f) 450 TFLOP/s of 989.4, as fractions of the achievable 794.5:
    #   334 / 794.5 = 0.4204, 484 / 794.5 = 0.6092, 450 / 794.5 = 0.5664
    assert f.efficiency == pytest.approx([334 / 794.5, 484 / 794.5, 450 / 794.5], rel=2e-3)


def test_head_dim_choice_and_bad_head_dim():
    c64 = TabulatedCurve("attention", "compute", "keys", (CitedPoint(512, 0.3, "s"),), head_dim=64)
    c128 = TabulatedCurve("attention", "compute", "keys", (CitedPoint(512, 0.5, "s"),), head_dim=128)
    # 256 -> 128, 32 -> 64, unknown -> the first curve given
    assert by_head_dim((c128, c64), np.array([512.0] * 3), np.array([256, 32, np.nan])).tolist() == [0.5, 0.3, 0.5]
    bad = {"kind": "attention", "term": "compute", "axis": "keys", "head_dim": -1,
           "points": [{"x": 512, "efficiency": 0.5, "source": "s"}]}
    with pytest.raises(RooflineError, match="head_dim must be a whole number from 1 to"):
        TabulatedCurve.from_dict(bad, "tables[0]", "f.json", {"s": {}})
