"""Cited DRAM-streaming ``memory`` curves, the per-kernel CUDA-graph floor and the weight-only dequantization tables:
each forecast derived by hand from the published figures (RRZE-HPC gpu-small-kernels; ml-explore/mlx GEMV PRs)."""

from __future__ import annotations

import numpy as np
import pytest

from roofline import Op, Workload, analyze, get_device
from roofline.catalog.calibrations import cited_calibration
from roofline.engine.forecast import compute_forecast, curve_precisions
from roofline.hardware.calibration_curves import streaming_efficiency

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


def _h100(kind: str, term: str, precision: str):
    (t,) = [t for t in cited_calibration("NVIDIA H100 SXM5 80GB").tables
            if (t.kind, t.term, t.precision) == (kind, term, precision)]
    return t


def test_h100_fp8_gemm_tables_are_the_cutlass_kernel_of_deepgemm_by_hand():
    # DeepGEMM README (327ec92, H800 SXM5, FP8): 4096x4096x7168 at 1410 TFLOPS, speedup 1.3 over its CUTLASS 3.6
    # implementation -> the library kernel ran 1410 / 1.3 = 1084.6 TFLOPS. q by hand: 256x128 -> 16 x 32 = 512 tiles,
    # 4 waves of 132 -> 4096*4096 / (4*132*32768) = 0.9697 (the smaller tiles tie); roof = FLOPs / (1402.6e12 x 0.9697),
    # measured = FLOPs / 1084.6e12 -> 1084.6 / (1402.6 x 0.9697) = 0.7975. 4096x24576x1536 at 1212 / 1.2 = 1010.0: 64x64
    # -> 64 x 384 = 24576 tiles, 187 waves (24684 slots) -> q = 0.9956 -> 1010.0 / (1402.6 x 0.9956) = 0.7233. The
    # larger-FLOPs row is lower, so the monotone fit pools the two: (0.7975 + 0.7233) / 2 = 0.7604
    t = _h100("matmul", "compute", "fp8")
    e1 = (1410e12 / 1.3) / (1402.6e12 * 4096 * 4096 / (4 * 132 * 32768))
    e2 = (1212e12 / 1.2) / (1402.6e12 * 4096 * 24576 / (187 * 132 * 4096))
    assert e1 == pytest.approx(0.7975, abs=1e-3) and e2 == pytest.approx(0.7233, abs=1e-3)
    assert t.efficiency(float(2 * 4096 * 4096 * 7168)) == pytest.approx((e1 + e2) / 2, abs=2e-4)
    # memory-bound 128x4096x7168: V = 128*7168 + 7168*4096 + 2*128*4096 = 31.33 MB at 2221 / 2.0 = 1110.5 GB/s of
    # 2903 -> 0.3825; the monotone fit pools it with 128x32768x512 (2103 / 1.5 = 1402 GB/s -> 0.4830) and 64x4096x7168
    # (2320 / 1.4 = 1657 GB/s -> 0.5709): (0.4830 + 0.5709 + 0.3825) / 3 = 0.4788
    m = _h100("matmul", "memory", "fp8")
    v = 128 * 7168 + 7168 * 4096 + 2 * 128 * 4096
    pooled = (2103 / 1.5 + 2320 / 1.4 + 2221 / 2.0) / 3 / 2903
    assert m.efficiency(float(v)) == pytest.approx(pooled, abs=2e-3)


@pytest.mark.parametrize("kind, term, precision", [("matmul", "compute", "fp8"), ("matmul", "memory", "fp8"),
                                                   ("matmul", "compute", "bf16"), ("matmul", "compute", "fp16")])
def test_h100_gemm_tables_are_monotone(kind, term, precision):
    t = _h100(kind, term, precision)
    xs = np.array([p.x for p in t.points])
    es = t.efficiency(np.logspace(np.log10(xs[0]) - 1, np.log10(xs[-1]) + 1, 200))
    assert np.all(np.diff(xs) > 0) and np.all(np.diff(es) >= 0)


def test_h100_bf16_gemm_table_from_xla_by_hand():
    # XLA matmul_interpolator_data.h, key sm_90, bf16xbf16->bf16, b = 1. 4096x4096x4096: 780193877565849 FLOP/s; q by
    # hand: 256x128 tiles -> 16 x 32 = 512 tiles in 4 waves of 132 -> 4096^2 / (4 x 132 x 32768) = 0.9697; efficiency =
    # 780.19 / (794.5 x 0.9697) = 1.0127, the table's largest point (alone at its FLOPs, above every smaller one)
    t = _h100("matmul", "compute", "bf16")
    q = 4096 * 4096 / (4 * 132 * 256 * 128)
    assert q == pytest.approx(0.9697, abs=1e-4)
    assert t.efficiency(2.0 * 4096**3) == pytest.approx(780193877565849 / (794.5e12 * q), abs=2e-4)
    # the smallest row, 256x256x256: 6721641025641 FLOP/s; the best tile is 64x64 -> 16 tiles, one wave of 132 ->
    # q = 65536 / (132 x 4096) = 0.1212; efficiency = 6.7216 / (794.5 x 0.1212) = 0.0698 (alone at its FLOPs, below the rest)
    small = 65536 / (132 * 4096)
    assert t.efficiency(2.0 * 256**3) == pytest.approx(6721641025641 / (794.5e12 * small), abs=2e-4)
    # measured as bf16; fp16 shares the table (the same tensor-core rate)
    assert [p.efficiency for p in t.points] == [p.efficiency for p in _h100("matmul", "compute", "fp16").points]


def test_l40s_quantization_and_flat_gemm_compute_tables_by_hand():
    # gpu-specs L40S: 568 tensor cores at 4 per SM -> 142 SMs; torch-performance-test-data #43: BF16 269.15, FP16 264.02
    # of the 362.05 TFLOP/s dense peak -> 0.7434 and 0.7292; FP8 takes the BF16 fraction (derived, flagged in its note)
    cal = cited_calibration("NVIDIA L40S")
    assert cal is not None and cal.quantization is not None and cal.quantization.sms == 568 // 4
    got = {t.precision: t for t in cal.tables if (t.kind, t.term) == ("matmul", "compute")}
    assert got["bf16"].efficiency(1e9) == pytest.approx(269.15 / 362.05, abs=1e-4)
    assert got["fp16"].efficiency(1e13) == pytest.approx(264.02 / 362.05, abs=1e-4)
    assert got["fp8"].efficiency(1e11) == pytest.approx(269.15 / 362.05, abs=1e-4)
    assert "DERIVED" in got["fp8"].points[0].note and all(t.relative_to == "peak" for t in got.values())
    # a 2048x4096x4096 fp8 GEMM over 142 SMs, q by hand: 256x128 -> 8 x 32 = 256 tiles, 2 waves (284 slots) -> 0.9014;
    # 128x128, 128x64, 64x128, 64x256 also 0.9014; 64x64 -> 32 x 64 = 2048 tiles, 15 waves (2130 slots) -> 0.9615, the
    # best. L40S has no achievable FP8 figure, so the roof is the 733 TFLOP/s peak: forecast = FLOPs / (733e12 x 0.9615 x
    # 0.7434) + launch 3 us
    fl = 2 * 2048 * 4096 * 4096
    op = Op("g", kind="matmul", flops=fl, bytes_read=2048 * 4096 + 4096 * 4096, bytes_written=2 * 2048 * 4096,
            precision="fp8", unit="matrix", m=2048, n=4096, k=4096, batch=1)
    f = analyze(Workload.from_ops([op]), get_device("l40s"), forecast=True).forecast
    q = 2048 / 2130
    assert f.time[0] == pytest.approx(fl / (733e12 * q * 269.15 / 362.05) + 3e-6, rel=2e-4)


@pytest.mark.parametrize("precision, m", [("bf16", 4096), ("bf16", 512), ("fp8", 4096), ("fp8", 128)])
def test_h200_runs_compute_bound_gemms_as_the_h100_does(precision, m):
    # the H200's tables are the H100's times achievable / peak (794.5 / 989.4 for BF16, 1402.6 / 1978.9 for FP8), relative
    # to its peak (it has no achievable compute figure): the same die, SMs and clocks give the same GEMM time (to the
    # tables' 4-decimal rounding), whatever its faster memory does to memory-bound ones
    item = 2 if precision == "bf16" else 1
    fl = 2 * m * 4096 * 4096
    op = Op("g", kind="matmul", flops=fl, bytes_read=item * (m * 4096 + 4096 * 4096), bytes_written=2 * m * 4096,
            precision=precision, unit="matrix", m=m, n=4096, k=4096, batch=1)
    t = {d: analyze(Workload.from_ops([op]), get_device(d), forecast=True).forecast for d in ("h100", "h200")}
    if str(t["h100"].term[0]) == "compute":
        assert t["h200"].time[0] == pytest.approx(t["h100"].time[0], rel=1e-3)
    else:  # memory-bound on the H100 (fp8, m = 128): the H200's 4.8 TB/s makes it no slower
        assert t["h200"].time[0] <= t["h100"].time[0]
