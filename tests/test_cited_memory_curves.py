"""Cited DRAM-streaming ``memory`` curves, the per-kernel CUDA-graph floor and the weight-only dequantization tables:
each forecast derived by hand from the published figures (RRZE-HPC gpu-small-kernels; ml-explore/mlx GEMV PRs)."""

from __future__ import annotations

import numpy as np
import pytest

from roofline import Op, Workload, analyze, get_device
from roofline.calibration_curves import streaming_efficiency
from roofline.catalog.calibrations import cited_calibration
from roofline.forecast import compute_forecast, curve_precisions

A100 = "NVIDIA A100 SXM4 80GB"
US = 1e-6
# RRZE gpu-small-kernels, a100_80_graph.txt, least squares of T = a + V/b: a = 3.33 us, b = 1753 GB/s over the 31
# DRAM-resident points 98-986 MB; the per-kernel floor f = 1.35 us (intercept over the L2-resident points <= 2 MB)
A, B, F = 3.33 * US, 1.753e12, 1.35 * US
# mlx PR #3180 (A100, FP16 x INT8 GEMV vs cuBLAS FP16 GEMV): 1118.1/1466.7 = 0.7623, 1039.1/1494.6 = 0.6952
R8 = (1118.1 / 1466.7 + 1039.1 / 1494.6) / 2
# mlx PR #3197 (A100, FP16 x INT4): 1031.1/1427.5 = 0.7223, 1158.0/1476.1 = 0.7845, 1313.1/1691.5 = 0.7763
R4 = (1031.1 / 1427.5 + 1158.0 / 1476.1 + 1313.1 / 1691.5) / 3


def _table(device: str, kind: str, precision: str = ""):
    cal = cited_calibration(device)
    assert cal is not None
    (t,) = [t for t in cal.tables if (t.kind, t.term, t.precision) == (kind, "memory", precision)]
    return t


def test_the_fit_reproduces_the_published_points():
    # a100_80_graph.txt rows (elements x 16 bytes, best GB/s): 6123637 -> 1655, 15420351 -> 1712, 61620009 -> 1742;
    # T = V / GB/s against a + V/b: e.g. 97.98 MB / 1655 GB/s = 59.20 us vs 3.33 + 97.98e6 / 1.753e12 = 59.22 us
    for elements, gbs in ((6123637, 1655), (15420351, 1712), (61620009, 1742)):
        v = elements * 16
        assert A + v / B == pytest.approx(v / (gbs * 1e9), rel=2e-3)


def test_shipped_a100_table_is_the_formula():
    t = _table(A100, "matmul")
    assert t.relative_to == "peak" and t.axis == "bytes"
    xs = np.array([p.x for p in t.points])
    assert xs.tolist() == [2.0 ** k for k in range(16, 31)]
    # at V = 2^25 (33.55 MB): (V / 2.039e12) / (1.98 us + V / 1.753e12) = 16.456 / (1.98 + 19.141) = 0.7791
    assert t.efficiency(2.0 ** 25) == pytest.approx(0.7791, abs=1e-4)
    want = streaming_efficiency(xs, A - F, B, 2.039e12)
    assert np.allclose([p.efficiency for p in t.points], want, atol=6e-5)  # 4 decimals in the file
    assert np.all(np.diff([p.efficiency for p in t.points]) > 0)
    # attention streams its KV cache the same way: the same points
    assert [p.efficiency for p in _table(A100, "attention").points] == [p.efficiency for p in t.points]


def test_gemv_forecast_by_hand_under_cuda_graphs():
    # a bf16 GEMV moving V = 2^25 bytes on an A100 replayed in a CUDA graph:
    #   forecast = f + (a - f) + V / b = 1.35 + 1.98 + 19.141 = 22.47 us (the bound: V / 2.039 TB/s = 16.46 us)
    v = 2 ** 25
    op = Op("gemv", kind="matmul", flops=v, bytes_read=v, precision="bf16", unit="matrix", m=1, n=4096,
            k=v // 2 // 4096, batch=1, weight_bytes=v)
    a = analyze(Workload.from_ops([op]), get_device("a100"), forecast=True)
    f = compute_forecast(a, framework="cuda-graph")
    assert f.overhead == pytest.approx(F)
    assert f.time[0] == pytest.approx(F + (A - F) + v / B, rel=1e-4)
    assert f.bound[0] == pytest.approx(v / 2.039e12)
    assert any("matmul (memory)" in n and "rrze-gpu-small-kernels" in n for n in f.notes)


def test_weight_only_int8_and_int4_gemv_by_hand():
    # 4096 x 8192 int8 weights (1 byte each: V = 2^25) or 4096 x 16384 int4 ones with group scales (4.5 bits each:
    # V = 2^26 x 4.5 / 8 = 37.75 MB): the dequantizing GEMV streams at b x R, forecast = f + (a - f) + V / (b x R)
    # (int4's V falls between two table points: log-linear interpolation, within 0.5% of the formula)
    for k, bits, r, key, tol in ((8192, 8, R8, "int8-weights", 1e-3), (16384, 4.5, R4, "int4-weights", 5e-3)):
        v = 4096 * k * bits / 8
        op = Op("q", kind="matmul", flops=2 * 4096 * k, bytes_read=v, precision="bf16", unit="matrix", m=1, n=4096,
                k=k, batch=1, weight_bytes=v)
        w = Workload.from_ops([op])
        assert str(curve_precisions(w)[0]) == key
        f = compute_forecast(analyze(w, get_device("a100"), forecast=True), framework="cuda-graph")
        assert f.time[0] == pytest.approx(F + (A - F) + v / (B * r), rel=tol), key
        assert any(f"matmul (memory, {key})" in n for n in f.notes)


def test_curve_precisions_leave_other_ops_alone():
    ops = [Op("bf16", kind="matmul", flops=2 * 64 * 64, bytes_read=2 * 64 * 64, weight_bytes=2 * 64 * 64,
              precision="bf16", m=1, n=64, k=64, batch=1),
           Op("fp8", kind="matmul", flops=2 * 64 * 64, bytes_read=64 * 64, weight_bytes=64 * 64, precision="fp8",
              m=1, n=64, k=64, batch=1),
           Op("no dims", kind="matmul", flops=2 * 64 * 64, bytes_read=64 * 64, weight_bytes=64 * 64,
              precision="bf16"),
           Op("norm", kind="norm", flops=64, bytes_read=64, weight_bytes=32, precision="bf16")]
    # 16 bits per weight, fp8 activations (not weight-only), unknown n x k, not a matmul: each keeps its precision
    assert curve_precisions(Workload.from_ops(ops)).tolist() == ["bf16", "fp8", "bf16", "bf16"]


def test_tiny_activation_ops_pay_the_floor_only():
    # a 24 kB norm has no memory curve (its data sit in L2; RRZE's L2-resident kernels run at ~5 TB/s):
    # forecast = f + V / achievable = 1.35 us + 24576 / 1.80e12 = 1.3637 us
    op = Op("norm", kind="norm", flops=8192, bytes_read=16384, bytes_written=8192, precision="bf16")
    f = compute_forecast(analyze(Workload.from_ops([op]), get_device("a100"), forecast=True), framework="cuda-graph")
    assert f.time[0] == pytest.approx(F + 24576 / 1.80e12)
    assert str(f.verdict[0]) == "overhead"


@pytest.mark.parametrize("device, fixed, bandwidth, roof", [
    # H200: a = 1.77, f = 1.27 us, b = 3416 GB/s, peak 4.8 TB/s; H100 SXM5: the H200's a - f, its own achievable
    # 2.903 TB/s; L40S: the L40's a = 4.20, f = 0.96 us, b = 769 GB/s, peak 864 GB/s
    ("NVIDIA H200 SXM 141GB", 0.50 * US, 3.416e12, 4.8e12),
    ("NVIDIA H100 SXM5 80GB", 0.50 * US, 2.903e12, 2.903e12),
    ("NVIDIA L40S", 3.24 * US, 0.769e12, 0.864e12),
    # no file of their own: the same die's fixed part, the device's own (peak = achievable) bandwidth
    ("NVIDIA A100 SXM4 40GB", 1.98 * US, 1.555e12, 1.555e12),
    ("NVIDIA A100 PCIe 80GB", 1.98 * US, 1.935e12, 1.935e12),
    ("NVIDIA H100 PCIe 80GB", 0.50 * US, 2.0e12, 2.0e12),
])
def test_other_gpus_tables_are_the_formula(device, fixed, bandwidth, roof):
    t = _table(device, "matmul")
    xs = np.array([p.x for p in t.points])
    assert np.allclose([p.efficiency for p in t.points], streaming_efficiency(xs, fixed, bandwidth, roof), atol=6e-5)


def test_h100_fp8_gemm_tables_from_deepgemm_by_hand():
    # DeepGEMM README (H800 SXM5, FP8): 4096x4096x7168 at 1410 TFLOPS. q by hand: 256x128 -> 16 x 32 = 512 tiles,
    # 4 waves of 132 -> 4096*4096 / (4*132*32768) = 0.9697 (the smaller tiles tie); roof = 2*4096*4096*7168 /
    # (1402.6e12 x 0.9697) = 177.3 us, measured 240.5e9 / 1410e12 = 170.6 us -> 1.0367. 4096x24576x1536 at 1212: 64x64
    # -> 64 x 384 = 24576 tiles, 187 waves (24684 slots) -> q = 0.9956; roof / measured = 0.8680. The next-larger-FLOPs
    # row is lower, so the monotone fit pools the two: (1.0367 + 0.8680) / 2 = 0.9523
    t = [t for t in cited_calibration("NVIDIA H100 SXM5 80GB").tables
         if (t.kind, t.term, t.precision) == ("matmul", "compute", "fp8")][0]
    fl = 2 * 4096 * 4096 * 7168
    e1 = (fl / (1402.6e12 * 4096 * 4096 / (4 * 132 * 32768))) / (fl / 1410e12)
    fl2 = 2 * 4096 * 24576 * 1536
    e2 = (fl2 / (1402.6e12 * 4096 * 24576 / (187 * 132 * 4096))) / (fl2 / 1212e12)
    assert e1 == pytest.approx(1.0367, abs=1e-3) and e2 == pytest.approx(0.8680, abs=1e-3)
    assert t.efficiency(float(fl)) == pytest.approx((e1 + e2) / 2, abs=2e-4)
    # memory-bound 128x4096x7168: V = 128*7168 + 7168*4096 + 2*128*4096 = 31.26 MB at 2221 GB/s -> 2221/2903 = 0.765,
    # pooled with 64x4096x7168 (30.3 MB, 2320 GB/s -> 0.799): (0.7992 + 0.7651) / 2 = 0.782
    m = [t for t in cited_calibration("NVIDIA H100 SXM5 80GB").tables
         if (t.kind, t.term, t.precision) == ("matmul", "memory", "fp8")][0]
    v = 128 * 7168 + 7168 * 4096 + 2 * 128 * 4096
    assert m.efficiency(float(v)) == pytest.approx((2320 / 2903 + 2221 / 2903) / 2, abs=2e-3)
