import math

import numpy as np
import pytest

from roofline import Device, Op, Workload, analyze
from roofline.engine.analysis import Analysis
from roofline.hardware.device import ComputeCeiling, Interconnect, MemoryCeiling


@pytest.fixture
def seed():
    return Device.simple("seed", "100 GFLOP/s", "10 GB/s")


def gpu():
    return Device("toy-gpu",
                  compute=(ComputeCeiling("matrix", "bf16", 1000e12), ComputeCeiling("vector", "fp32", 50e12)),
                  memory=(MemoryCeiling("HBM", 2e12, 80e9), MemoryCeiling("L2", 10e12, 50e6)),
                  interconnect=Interconnect("link", 400e9))


def test_seed_example(seed):
    # 0.8 GFLOP over 4 GB: AI = 0.2 FLOP/B < ridge 100e9/10e9 = 10 -> memory-bound,
    # attainable = 0.2 * 10 GB/s = 2 GFLOP/s, time = 4e9 / 10e9 = 0.4 s
    a = analyze(Workload.from_ops([Op("app", flops=0.8e9, bytes_read=4e9, measured_seconds=1.0)]), seed)
    assert a.intensity[0] == pytest.approx(0.2)
    assert a.ridge_intensity[0] == pytest.approx(10.0)
    assert a.bound[0] == "memory"
    assert a.attainable_flops[0] == pytest.approx(2e9)
    assert a.time[0] == pytest.approx(0.4)
    # measured 1 s: achieved 0.8 GFLOP/s, efficiency 0.8 / 2 = 40 %
    assert a.achieved_flops[0] == pytest.approx(0.8e9)
    assert a.efficiency[0] == pytest.approx(0.4)
    assert not a.above_roof[0]


def test_compute_bound_and_ridge(seed):
    # AI 1000 > 10: compute-bound, time = 1e12 / 1e11 = 10 s
    a = analyze(Workload.from_ops([Op("gemm", flops=1e12, bytes_read=1e9)]), seed)
    assert a.bound[0] == "compute" and a.time[0] == pytest.approx(10.0)
    assert a.attainable_flops[0] == pytest.approx(100e9)


def test_zero_flop_op_is_memory_bound_at_zero_intensity(seed):
    # 1 GB copy: 0 FLOPs, time = 1e9 / 10e9 = 0.1 s
    a = analyze(Workload.from_ops([Op("copy", kind="memory", bytes_read=5e8, bytes_written=5e8)]), seed)
    assert a.intensity[0] == 0 and a.bound[0] == "memory" and a.time[0] == pytest.approx(0.1)
    assert a.attainable_flops[0] == 0


def test_per_op_ceilings_levels_and_fallbacks():
    ops = [
        Op("gemm", kind="matmul", flops=2e12, bytes_read=1e9, precision="bf16", unit="matrix"),
        Op("fp8gemm", kind="matmul", flops=2e12, bytes_read=1e9, precision="fp8", unit="matrix"),
        Op("act", kind="elementwise", flops=1e9, bytes_read=4e9, precision="bf16"),
        Op("l2op", flops=1e9, bytes_read=1e9, level="L2"),
        Op("allreduce", kind="collective", bytes_read=8e8, level="interconnect"),
    ]
    a = analyze(Workload.from_ops(ops), gpu())
    # gemm: max(2e12/1e15, 1e9/2e12) = max(2 ms, 0.5 ms) = 2 ms, compute-bound
    assert a.time[0] == pytest.approx(2e-3) and a.bound[0] == "compute"
    # fp8 falls back to the fp8 -> fp16 -> bf16 matrix roof (same time) and records it
    assert a.fallback(1) == "fp8 matrix -> bf16 matrix" and a.time[1] == pytest.approx(2e-3)
    assert any("fell back" in w for w in a.warnings)
    # bf16 vector has no roof: falls back to fp32 vector (50 TFLOP/s); memory time 4e9/2e12 = 2 ms
    assert a.ceiling_label(2) == "fp32 vector" and a.time[2] == pytest.approx(2e-3)
    # L2 op uses 10 TB/s: 1e9 / 10e12 = 0.1 ms vs compute 1e9/50e12 = 0.02 ms
    assert a.level_label(3) == "L2" and a.time[3] == pytest.approx(1e-4)
    # collective: 8e8 B over 400 GB/s = 2 ms, bound by the interconnect
    assert a.bound[4] == "interconnect" and a.time[4] == pytest.approx(2e-3)


def test_attainable_is_min_of_roofs_everywhere():
    # invariant: attainable == min(peak, AI * bw) for single-level ops, and never above the roof
    rng = np.random.default_rng(1)
    n = 2000
    w = Workload.from_columns(name=[f"o{i}" for i in range(n)], flops=rng.lognormal(15, 4, n),
                              bytes_read=rng.lognormal(15, 4, n), bytes_written=np.zeros(n),
                              precision=["bf16"] * n, unit=["matrix"] * n)
    a = analyze(w, gpu())
    expected = np.minimum(1000e12, a.intensity * 2e12)
    np.testing.assert_allclose(a.attainable_flops, expected, rtol=1e-12)
    assert np.all(a.attainable_flops <= a.peak_flops * (1 + 1e-12))


def test_time_monotone_in_flops_and_bytes(seed):
    base = analyze(Workload.from_ops([Op("x", flops=1e9, bytes_read=1e8)]), seed).time[0]
    more_flops = analyze(Workload.from_ops([Op("x", flops=2e9, bytes_read=1e8)]), seed).time[0]
    more_bytes = analyze(Workload.from_ops([Op("x", flops=1e9, bytes_read=2e9)]), seed).time[0]
    assert more_flops >= base and more_bytes >= base


def test_above_roof_flag(seed):
    # 1e9 FLOPs in 1 ms = 1 TFLOP/s > the 100 GFLOP/s roof
    a = analyze(Workload.from_ops([Op("x", flops=1e9, bytes_read=1e6, measured_seconds=1e-3)]), seed)
    assert a.above_roof[0]
    assert "above roof" in a.verdict(0)
    assert any("above roof" in w for w in a.warnings)


def test_group_bys_and_shares(seed):
    ops = [Op("a", flops=1e9, bytes_read=1e9, group="m.l0.attn", module_type="Attn", kind="matmul"),
           Op("b", flops=1e9, bytes_read=1e9, group="m.l0.mlp", module_type="MLP", kind="matmul", count=3),
           Op("c", flops=0, bytes_read=1e9, group="m.l1.mlp", module_type="MLP", kind="memory")]
    a = analyze(Workload.from_ops(ops), seed)
    # each op 0.1 s per run (1e9 B at 10 GB/s); b runs 3 times: total 0.1 + 0.3 + 0.1 = 0.5 s
    assert a.total_time == pytest.approx(0.5)
    rows = {r.name: r for r in a.by("group", depth=2)}
    assert rows["m.l0"].time == pytest.approx(0.4) and rows["m.l0"].share == pytest.approx(0.8)
    assert rows["m.l1"].flops == 0 and rows["m.l1"].bound == "memory"
    types = {r.name: r for r in a.by("module_type")}
    assert types["MLP"].ops == 2 and types["MLP"].flops == pytest.approx(3e9)
    kinds = {r.name: r for r in a.by("kind")}
    assert kinds["matmul"].time == pytest.approx(0.4)
    assert sum(a.share) == pytest.approx(1.0)


def test_analysis_json_round_trip(tmp_path, seed):
    a = analyze(Workload.from_ops([Op("app", flops=0.8e9, bytes_read=4e9, measured_seconds=1.0)]), seed)
    p = tmp_path / "a.json"
    a.save(p)
    b = Analysis.load(p)
    assert b.to_dict() == a.to_dict()


def test_saved_analysis_of_other_schema_version(tmp_path, seed):
    from roofline.core.errors import RooflineError

    a = analyze(Workload.from_ops([Op("app", flops=1, bytes_read=1)]), seed)
    d = a.to_dict()
    d["schema"] = "roofline.analysis/3"
    with pytest.raises(RooflineError, match="expected 'roofline.analysis/2' \\(or an older roofline.analysis/1\\)"):
        Analysis.from_dict(d)


def test_million_ops_are_fast_enough_to_run_in_tests():
    n = 100_000
    w = Workload.from_columns(name=["x"] * n, flops=np.ones(n), bytes_read=np.ones(n), bytes_written=np.zeros(n))
    a = analyze(w, gpu())
    assert math.isclose(a.total_time, n * 1 / 2e12)


def test_cache_aware_time_takes_the_slowest_level():
    # 1e9 B at HBM (2 TB/s) = 0.5 ms; 8e9 B at L2 (10 TB/s) = 0.8 ms; compute 1e9 / 50e12 = 0.02 ms
    a = analyze(Workload.from_ops([Op("stencil", flops=1e9, bytes_read=1e9, bytes_l2=8e9)]), gpu())
    assert a.time[0] == pytest.approx(0.8e-3) and a.bound[0] == "memory"
    # no L1 ceiling on this device: the column is ignored with a warning
    b = analyze(Workload.from_ops([Op("x", flops=1e9, bytes_read=1e9, bytes_l1=1e12)]), gpu())
    assert b.time[0] == pytest.approx(0.5e-3) and any("no L1 ceiling" in w for w in b.warnings)


# -- cache-aware judging of measured points ---------------------------------------------
KiB, MiB = 1024, 1024 * 1024


def cached_cpu():
    """L1 1 TB/s (32 KiB), L2 400 GB/s (1 MiB), DRAM 50 GB/s (no capacity: unbounded); one 1 TFLOP/s roof."""
    return Device("cached-cpu", kind="cpu", compute=(ComputeCeiling("vector", "fp32", 1e12),),
                  memory=(MemoryCeiling("L1", 1e12, 32 * KiB), MemoryCeiling("L2", 400e9, 1 * MiB),
                          MemoryCeiling("DRAM", 50e9, None)))


def unary_elementwise(working_set: float, speedup_over_dram: float) -> Op:
    """x -> f(x) in fp32: n FLOPs, reads 4n B, writes 4n B (AI 1/8), measured at ``speedup`` x the DRAM time."""
    n = working_set / 8
    return Op("mul", kind="elementwise", flops=n, bytes_read=4 * n, bytes_written=4 * n,
              measured_seconds=working_set / 50e9 / speedup_over_dram)


def test_measured_op_whose_working_set_fits_l2_is_judged_against_l2():
    a = analyze(Workload.from_ops([unary_elementwise(512 * KiB, 3.0)]), cached_cpu())
    # working set 524288 B: > L1's 32 KiB, <= L2's 1 MiB -> judged vs L2
    assert a.judged_level.tolist() == ["L2"] and a.judged_label(0) == "L2" and a.judged_at_cache[0]
    # AI = 65536 FLOP / 524288 B = 0.125; L2 attainable = min(1e12, 0.125 x 400e9) = 50 GFLOP/s
    assert a.intensity[0] == pytest.approx(0.125)
    assert a.judged_attainable_flops[0] == pytest.approx(50e9)
    # achieved = 3 x the DRAM slope = 3 x 0.125 x 50e9 = 18.75 GFLOP/s; efficiency = 18.75 / 50 = 0.375
    assert a.achieved_flops[0] == pytest.approx(18.75e9)
    assert a.efficiency[0] == pytest.approx(18.75e9 / (0.125 * 400e9)) and a.efficiency[0] == pytest.approx(0.375)
    assert not a.above_roof[0] and not any("above roof" in w for w in a.warnings)
    assert "judged vs L2" in a.verdict(0) and "above roof" not in a.verdict(0)


def test_measured_op_too_big_for_any_cache_is_judged_against_dram_and_flagged():
    a = analyze(Workload.from_ops([unary_elementwise(64 * MiB, 3.0)]), cached_cpu())
    # 64 MiB > L2's 1 MiB: judged vs DRAM, attainable 0.125 x 50e9 = 6.25 GFLOP/s; 3x that -> efficiency 3
    assert a.judged_level.tolist() == ["DRAM"] and not a.judged_at_cache[0]
    assert a.judged_attainable_flops[0] == pytest.approx(6.25e9)
    assert a.efficiency[0] == pytest.approx(3.0)
    assert a.above_roof[0] and any("above roof" in w for w in a.warnings)


def test_judging_leaves_the_predicted_time_and_bound_alone():
    small, big = unary_elementwise(512 * KiB, 3.0), unary_elementwise(64 * MiB, 3.0)
    unmeasured = Op("mul", kind="elementwise", flops=small.flops, bytes_read=small.bytes_read,
                    bytes_written=small.bytes_written)
    a = analyze(Workload.from_ops([small, big, unmeasured]), cached_cpu())
    # predicted from main memory, as the bytes model says: 524288 B / 50e9 = 10.48576 us, 64 MiB / 50e9 = 1.342 ms
    np.testing.assert_allclose(a.time, [524288 / 50e9, 64 * MiB / 50e9, 524288 / 50e9], rtol=1e-12)
    np.testing.assert_allclose(a.attainable_flops, [6.25e9] * 3, rtol=1e-12)  # 0.125 x 50e9
    assert a.bound.tolist() == ["memory"] * 3 and [a.level_label(i) for i in range(3)] == ["DRAM"] * 3
    # the unmeasured op is not judged: it keeps its predicted level and attainable
    assert a.judged_level.tolist() == ["L2", "DRAM", "DRAM"]
    assert a.judged_attainable_flops[2] == a.attainable_flops[2]


def test_judging_skips_ops_naming_a_level_and_caches_without_capacity():
    # an op that names L2 keeps L2; a collective keeps the link, whatever their working sets
    ops = [Op("l1op", flops=1e3, bytes_read=1e3, level="L2", measured_seconds=1.0),
           Op("ar", kind="collective", bytes_read=1e3, level="interconnect", measured_seconds=1.0)]
    a = analyze(Workload.from_ops(ops), gpu())
    assert a.judged_level.tolist() == ["L2", "interconnect"] and not a.judged_at_cache.any()
    # a cache level with no stated capacity never takes an op: 1 kB fits anything, but L2 here has no capacity
    dev = Device("no-cap", compute=(ComputeCeiling("vector", "fp32", 1e12),),
                 memory=(MemoryCeiling("HBM", 1e12, 80e9), MemoryCeiling("L2", 10e12, None)))
    b = analyze(Workload.from_ops([Op("x", flops=1e3, bytes_read=1e3, measured_seconds=1.0)]), dev)
    assert b.judged_level.tolist() == ["HBM"]


def test_judging_keeps_the_per_level_bytes_terms():
    # bytes_l2 = 4 MiB at L2 400 GB/s = 10.49 us; working set 512 KiB fits L2: 524288 / 400e9 = 1.31 us
    # judged time = max(65536 / 1e12, 1.31 us, 10.49 us) = 10.49 us
    op = Op("stencil", kind="elementwise", flops=65536, bytes_read=262144, bytes_written=262144,
            bytes_l2=4 * MiB, measured_seconds=20e-6)
    a = analyze(Workload.from_ops([op]), cached_cpu())
    assert a.judged_level[0] == "L2"
    assert a.efficiency[0] == pytest.approx((4 * MiB / 400e9) / 20e-6)
    # predicted: max(524288 / 50e9 = 10.49 us, 4 MiB / 400e9 = 10.49 us): unchanged by judging
    assert a.time[0] == pytest.approx(max(524288 / 50e9, 4 * MiB / 400e9))


def test_per_op_tolerance_array(seed):
    # both ops at efficiency 1.08: 1e9 B at 10 GB/s = 0.1 s predicted, measured 0.1 / 1.08 s
    ops = [Op(f"op{k}", flops=1e8, bytes_read=1e9, measured_seconds=0.1 / 1.08) for k in range(2)]
    w = Workload.from_ops(ops)
    # own tolerances 5% and 12%: 1.08 > 1.05 flags the first, 1.08 < 1.12 spares the second
    a = analyze(w, seed, above_roof_tolerance=np.array([0.05, 0.12]))
    assert a.above_roof.tolist() == [True, False]
    assert "above roof" in a.verdict(0) and "above roof" not in a.verdict(1)
    # one number still works for every op
    assert analyze(w, seed, above_roof_tolerance=0.15).above_roof.tolist() == [False, False]
    from roofline.core.errors import RooflineError

    with pytest.raises(RooflineError, match=r"expected one number or 2 \(one per op\)"):
        analyze(w, seed, above_roof_tolerance=[0.1, 0.1, 0.1])
    with pytest.raises(RooflineError, match="analyze: above_roof_tolerance must be finite numbers >= 0"):
        analyze(w, seed, above_roof_tolerance=[0.1, float("nan")])


def test_per_op_tolerance_and_judging_survive_a_json_round_trip(tmp_path):
    w = Workload.from_ops([unary_elementwise(512 * KiB, 3.0), unary_elementwise(64 * MiB, 1.03)])
    a = analyze(w, cached_cpu(), above_roof_tolerance=np.array([0.05, 0.02]))
    # op 1: efficiency 1.03 > 1.02 -> flagged
    assert a.above_roof.tolist() == [False, True]
    d = a.to_dict()
    assert d["ops"]["judged_level"] == ["L2", "DRAM"]
    assert d["ops"]["judged_attainable_flops"] == pytest.approx([50e9, 6.25e9])
    p = tmp_path / "a.json"
    a.save(p)
    b = Analysis.load(p)
    assert b.to_dict() == d and b.above_roof.tolist() == [False, True]
