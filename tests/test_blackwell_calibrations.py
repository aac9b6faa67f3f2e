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
