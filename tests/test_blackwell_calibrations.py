"""Cited calibrations from kernel-level tables for Blackwell, CDNA 3/4 and Gaudi (each efficiency by hand from its
row), and the label a forecast carries when its calibration has no curve for the ops holding most of its time."""

from __future__ import annotations

import pytest

from roofline.catalog import get_device
from roofline.engine.analysis import analyze
from roofline.engine.forecast import effective_calibration
from roofline.frontends.llm import from_llm

#: MAMF table rows (stas00/ml-engineering): measured TFLOPS over the catalog device's own dense peak
MAMF = {("b200", "bf16"): 1745.0 / 2250, ("b200", "fp8"): 3432.5 / 4500, ("b300", "bf16"): 1769.0 / 2250,
        ("b300", "fp8"): 3353.3 / 4500, ("gb200", "bf16"): 1822.0 / 2500, ("gb200", "fp8"): 3615.6 / 5000,
        ("mi355x", "bf16"): 1565.0 / 2500, ("mi325x", "bf16"): 784.9 / 1307.4, ("mi300x", "bf16"): 668.4 / 1307.4,
        ("gaudi2", "bf16"): 418.7 / 432, ("gaudi2", "fp8"): 826.5 / 865, ("gaudi3", "bf16"): 1243.0 / 1835,
        ("gaudi3", "fp8"): 1289.5 / 1835}


@pytest.mark.parametrize("device,precision", sorted(MAMF))
def test_mamf_rows_are_the_matmul_curves(device: str, precision: str) -> None:
    cal = effective_calibration(get_device(device))
    assert cal is not None
    curve = cal.curve("matmul", "compute", precision)
    assert curve is not None and curve.precision == precision and curve.relative_to == "peak"
    assert float(curve.efficiency(1e12)) == pytest.approx(MAMF[(device, precision)], abs=5e-5)


def test_mi300x_has_no_fp8_curve_the_table_leaves_it_blank() -> None:
    cal = effective_calibration(get_device("mi300x"))
    assert cal is not None and all(t.precision != "fp8" for t in cal.tables)


def test_b300_kernel_families_from_transformer_engines_profiling() -> None:
    """Pre-quantized per-layer GEMM time of 3 x 6.391e12 FLOPs (2 x 15,872 x 4,096 x 49,152 per pass): FP8
    CurrentScaling 6.812 ms -> 2,814.6 TFLOP/s / 4,500 = 0.6255; MXFP8 7.161 ms -> 0.5950; NVFP4 3.764 ms ->
    5,093.8 TFLOP/s over the catalog's fp4 peak."""
    dev = get_device("b300")
    cal = effective_calibration(dev)
    assert cal is not None
    flops = 3 * 2 * 15872 * 4096 * 49152
    fp4 = next(c.flops for c in dev.compute if c.unit == "matrix" and c.precision == "fp4")
    for key, ms, peak in (("fp8-tensor", 6.812, 4500e12), ("mxfp8", 7.161, 4500e12), ("nvfp4", 3.764, fp4)):
        curve = cal.curve("matmul", "compute", key)
        assert curve is not None and curve.precision == key
        assert float(curve.efficiency(1e12)) == pytest.approx(flops / (ms * 1e-3) / peak, abs=5e-5)


def test_a_calibration_without_curves_for_the_binding_ops_is_labelled_uncalibrated_there() -> None:
    """The B200's cited curves are compute curves (MAMF); decode at batch 1 is memory-bound throughout, so its
    forecast is the bound there and says so; prefill is compute-bound and calibrated."""
    dev = get_device("b200")
    decode = analyze(from_llm("llama-3-8b", phase="decode"), dev, forecast=True).forecast
    assert decode is not None and decode.calibration is not None
    assert decode.curve_share < 0.5 and decode.uncalibrated.startswith("uncalibrated")
    prefill = analyze(from_llm("llama-3-8b", phase="prefill", batch=8), dev, forecast=True).forecast
    assert prefill is not None and prefill.curve_share >= 0.5 and prefill.uncalibrated == ""


def _table(device: str, kind: str, precision: str = "") -> object:
    cal = effective_calibration(get_device(device))
    assert cal is not None
    return next(t for t in cal.tables if t.kind == kind and t.precision == precision)


def test_cudnn_sdpa_rows_are_the_attention_curves() -> None:
    """cuDNN's SDPA benchmark, causal, head dim 128, BF16, 8k tokens (NVIDIA/cudnn-frontend results, cited in the
    files): B200 forward 1384.231 TFLOP/s / 2250 = 0.6152, backward 994.850 / 1384.231 = 0.7187; GB200 1574 / 2500 =
    0.6296, 1332 / 1574 = 0.8463; GB300 1856 / 2500 = 0.7424, 1435 / 1856 = 0.7732."""
    for dev, fwd, bwd in (("b200", 0.6152, 0.7187), ("gb200", 0.6296, 0.8463), ("gb300", 0.7424, 0.7732)):
        f, b = _table(dev, "attention"), _table(dev, "attention-backward")
        assert f.relative_to == "peak" and f.head_dim == 128 and b.relative_to == "forward"
        assert float(f.efficiency(8192.0)) == pytest.approx(fwd, abs=1e-4)
        assert float(b.efficiency(8192.0)) == pytest.approx(bwd, abs=1e-4)


def test_b200_msmf_is_the_sustained_clock_and_gb200_carries_it() -> None:
    """ml-engineering at 082816f9: B200 SXM BF16 MSMF 1456.3 / MAMF 1770.9 = 0.8224; FP8 2795.7 / 3435.2 = 0.8138."""
    from roofline.planner.forecast import sustained_rate

    for dev in ("b200", "gb200"):
        assert sustained_rate(get_device(dev), "bf16") == pytest.approx(1456.3 / 1770.9, abs=5e-5)
        assert sustained_rate(get_device(dev), "fp8") == pytest.approx(2795.7 / 3435.2, abs=5e-5)


def test_mxfp8_is_the_fp8_curve_at_the_b300s_kernel_ratio() -> None:
    """B300 pre-quantized per-layer GEMM time, FP8 CurrentScaling 6.812 ms / MXFP8 7.161 ms = 0.9513, times each
    device's FP8 MAMF share: B200 0.7628 x 0.9513 = 0.7256; GB200 3615.6 / 5000 = 0.7231 x 0.9513 = 0.6879."""
    assert float(_table("b200", "matmul", "mxfp8").efficiency(1e12)) == pytest.approx(0.7256, abs=2e-4)
    assert float(_table("gb200", "matmul", "mxfp8").efficiency(1e12)) == pytest.approx(0.6879, abs=2e-4)


def test_gb300_carries_the_b300s_gemm_rates() -> None:
    """The B300's measured TFLOP/s over the GB300's peaks: BF16 1769.0 / 2500 = 0.7076; MXFP8 2677.4 / 5000 = 0.5355;
    NVFP4 5093.7 / 15000 = 0.3396."""
    for prec, eff in (("bf16", 0.7076), ("mxfp8", 0.5355), ("nvfp4", 0.3396)):
        assert float(_table("gb300", "matmul", prec).efficiency(1e12)) == pytest.approx(eff, abs=1e-4)
