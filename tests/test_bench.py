"""roofline bench: plateau detection, the measured Device's schema, the CLI's fault handling.

Measurements here are tiny (a few MiB, 3 repeats, short samples): they check
shapes and bookkeeping, never speed.  Speed targets live in
benchmarks/bench_ceilings.py.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys

import numpy as np
import pytest

from roofline import cli
from roofline.bench import cpu as bench_cpu
from roofline.bench import gemm as bench_gemm
from roofline.bench import levels, machine, sampling, spec
from roofline.bench import sweep as bench_sweep
from roofline.hardware.device import Device, MemoryCeiling

KiB, MiB = 1024, 1024 * 1024

TINY = dict(max_bytes=2 * MiB, points_per_octave=2, repeats=3, min_sample_seconds=2e-4, gemm_sizes=(64,),
            torch_gemm=False, ert_flops=(1, 2, 8), fma_sample_seconds=2e-4, audit=False)


# -- plateau detection on synthetic curves ------------------------------------------------

def staircase(sizes: np.ndarray, steps: list[tuple[float, float]], noise: float = 0.0, seed: int = 0) -> np.ndarray:
    """Bandwidth that falls smoothly (over ~half an octave) at each (capacity, next level) step."""
    rng = np.random.default_rng(seed)
    levels_ = [bw for _, bw in steps]
    caps = [cap for cap, _ in steps[1:]]
    log_bw = np.full(len(sizes), math.log(levels_[0]))
    for cap, hi, lo in zip(caps, levels_, levels_[1:], strict=False):
        # logistic step in log2(size), centred at the capacity
        s = 1 / (1 + np.exp(-(np.log2(sizes) - math.log2(cap)) * 6))
        log_bw += s * (math.log(lo) - math.log(hi))
    return np.exp(log_bw) * (1 + noise * rng.standard_normal(len(sizes)))


SIZES = 2.0 ** np.arange(14, 28.01, 1 / 3)  # 16 KiB .. 256 MiB, 3 per octave
# L1 300 GB/s up to 48 KiB, L2 150 up to 1 MiB, L3 80 up to 32 MiB, DRAM 30
STEPS = [(0, 300e9), (48 * KiB, 150e9), (1 * MiB, 80e9), (32 * MiB, 30e9)]
CACHES = {"L1": 48 * KiB, "L2": 1 * MiB, "L3": 32 * MiB}


@pytest.mark.parametrize("noise", [0.0, 0.03])
def test_plateaus_of_a_four_level_staircase(noise: float) -> None:
    bw = staircase(SIZES, STEPS, noise=noise)
    named = levels.label_plateaus(levels.detect_plateaus(SIZES, bw), CACHES)
    assert [n for n, _ in named] == ["L1", "L2", "L3", "DRAM"]
    for (name, p), (_, expected) in zip(named, STEPS, strict=False):
        # each level's median within 5 % of the synthetic level (noise 3 % per point, medians over >= 3 points)
        assert p.bandwidth == pytest.approx(expected, rel=0.05), name
    # L3 holds from just above L2 (1 MiB) to just below its capacity (32 MiB): the range sits inside (1 MiB, 32 MiB)
    l3 = dict(named)["L3"]
    assert 1 * MiB < l3.start_bytes < 4 * MiB and 8 * MiB < l3.end_bytes <= 32 * MiB


def test_one_outlier_neither_splits_nor_adds_a_level() -> None:
    bw = staircase(SIZES, STEPS, noise=0.01)
    bw[20] *= 0.4  # a single sample hit by another process
    assert len(levels.detect_plateaus(SIZES, bw)) == 4


def test_flat_curve_is_one_level_named_dram_without_sysfs() -> None:
    bw = np.full(len(SIZES), 20e9)
    plats = levels.detect_plateaus(SIZES, bw)
    assert len(plats) == 1 and plats[0].bandwidth == pytest.approx(20e9)
    # no cache sizes known: plateaus are named in order and the last is main memory
    assert [n for n, _ in levels.label_plateaus(plats)] == ["DRAM"]


def test_labels_in_order_without_sysfs() -> None:
    bw = staircase(SIZES, STEPS)
    assert [n for n, _ in levels.label_plateaus(levels.detect_plateaus(SIZES, bw))] == ["L1", "L2", "L3", "DRAM"]


def test_main_memory_is_the_last_plateau_not_a_shelf_past_the_last_cache() -> None:
    # the L3 -> DRAM transition of a 2-core EPYC sweep: a 2-point shelf at 114 GB/s just past L3
    # (32 MiB), then main memory at 62 GB/s.  Both shelves lie beyond every cache, so both are named
    # DRAM; main memory is the last (largest working sets), not the first of two equally long runs.
    P = levels.Plateau
    plats = [P(0, 11, 2 * MiB, 26 * MiB, 167e9, (160e9, 170e9)), P(12, 13, 33.5e6, 42.3e6, 114e9, (106e9, 123e9)),
             P(16, 17, 84.5e6, 106.5e6, 62e9, (62e9, 62e9))]
    named = levels.label_plateaus(plats, {"L1": 64 * KiB, "L2": 2 * MiB, "L3": 32 * MiB})
    # L3's middle sqrt(2 MiB x 26 MiB) ~ 7.2 MiB fits L3; the shelf's middle ~ 37.6 MB > 33.6 MB (32 MiB)
    assert [(n, p.bandwidth) for n, p in named] == [("L3", 167e9), ("DRAM", 62e9)]


def test_a_plateau_slower_than_a_later_one_is_not_a_level() -> None:
    # a 2-core sweep: 16-24 KiB at 131 GB/s (per-call overhead on 3 KiB chunks), then 32 KiB .. 21 MB at
    # 183 GB/s.  Bandwidth falls level by level, so the first run cannot be L1: it is dropped.
    P = levels.Plateau
    plats = [P(1, 2, 20480, 24576, 131e9, (1e9, 2e9)), P(3, 31, 32768, 21e6, 183e9, (1e9, 2e9)),
             P(37, 38, 84.5e6, 106.5e6, 71e9, (1e9, 2e9))]
    named = levels.label_plateaus(plats, {"L1": 64 * KiB, "L2": 2 * MiB, "L3": 32 * MiB})
    # 183 GB/s: middle sqrt(32 KiB x 21 MB) ~ 0.83 MB fits L2 (2 MiB), not L1 (64 KiB)
    assert [(n, p.bandwidth) for n, p in named] == [("L2", 183e9), ("DRAM", 71e9)]
    assert [n for n, _ in levels.label_plateaus(plats)] == ["L1", "DRAM"]  # in order without sysfs


def test_bad_curve_input() -> None:
    with pytest.raises(ValueError):
        levels.detect_plateaus([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        levels.detect_plateaus([2.0, 1.0], [1.0, 1.0])


def test_sysfs_disagreement_is_noted() -> None:
    # a curve whose L2 plateau ends at 4 MiB while "sysfs" says L2 is 256 KiB
    steps = [(0, 300e9), (48 * KiB, 150e9), (4 * MiB, 80e9), (32 * MiB, 30e9)]
    sizes = [int(s) for s in SIZES]
    bw = staircase(SIZES, steps)
    curves = {2: {k: [sampling.Stat(float(v), float(v), float(v), [float(v)]) for v in bw] for k in bench_sweep.KERNELS}}
    caches = {"L1": {"capacity": 48 * KiB, "size": 24 * KiB}, "L2": {"capacity": 256 * KiB, "size": 128 * KiB},
              "L3": {"capacity": 32 * MiB, "size": 32 * MiB}}
    memory, info = bench_sweep.memory_levels(sizes, curves, 2, caches, sampling.BenchConfig.quick(), "d", None, [])
    assert any("sysfs reports" in n for n in info["notes"]), info["notes"]


# -- timing helpers ---------------------------------------------------------------------------

def test_measure_rate_grows_reps_until_a_sample_is_long_enough(monkeypatch) -> None:
    calls: list[int] = []

    def call(reps: int) -> None:
        calls.append(reps)

    # a deterministic clock: every rep takes 0.1 ms
    monkeypatch.setattr(sampling, "timeit", lambda fn: (fn(), 1e-4 * calls[-1])[1])
    stat, reps = sampling.measure_rate(call, 1.0, 3, 0.002)
    # 1 rep = 0.1 ms < 2 ms, so reps grows to ceil(1.2 x 2 ms / 0.1 ms) = 24 (2.4 ms >= 2 ms)
    assert reps == 24
    # each sample: 24 units of work in 2.4 ms = 1e4 per second
    assert stat.median == pytest.approx(1e4) and len(stat.samples) == 3
    assert calls == [1, 1, 24, 24, 24, 24]  # warm-up, calibration 1 -> 24, three samples


def test_sweep_sizes_are_geometric_and_cover_the_range() -> None:
    s = bench_sweep.sweep_sizes(16 * KiB, 128 * MiB, 3)
    assert s[0] == 16 * KiB and s[-1] == 128 * MiB
    # 13 octaves x 3 per octave + 1 = 40 points; ratios 2^(1/3) ~ 1.26 (rounding to 4 KiB blurs the first few)
    assert len(s) == 40
    assert all(b > a for a, b in zip(s, s[1:], strict=False))
    assert np.allclose(np.diff(np.log2(s[10:])), 1 / 3, atol=0.03)  # 4 KiB rounding of 160 KiB: +-1.3 %


@pytest.mark.skipif(__import__("platform").machine() not in ("x86_64", "AMD64"), reason="x86 assembly")
def test_the_bandwidth_and_ert_loops_vectorise() -> None:
    numba = pytest.importorskip("numba")
    import re

    from roofline.bench import _kernels as k

    a, b, c = np.ones(1024), np.ones(1024), np.ones(1024)
    calls = {"_read": (a, 0.0), "_write": (a, 1.0), "_copy": (a, b), "_triad": (a, b, c, 0.5),
             "_ert_add": (a, 0.5), "_ert_fma": (a, 2, 0.5, 0.5)}
    for name, args in calls.items():
        f = getattr(k, name)
        # numba will not show the assembly of cached code: recompile the same function with the same flags
        opts = {key: v for key, v in f.targetoptions.items() if key not in ("cache", "nopython")}
        g = numba.njit(**opts)(f.py_func)
        g(*args)
        asm = g.inspect_asm(g.signatures[0])
        # packed double instructions on 256- or 512-bit registers (scalar code uses %xmm with *sd)
        assert re.search(r"\bv\w+p[sd]\s.*%[yz]mm", asm), name


# -- ISA decisions, for every CPU family on any host (tests/conftest.py: cpu_family) -----------------------
#
# Which tests need which ISA:
# - the decisions below (native precisions, GEMMs timed, kernel shape, spec roof, fallbacks, cache
#   fingerprint) need none: they read roofline.bench.host.host_cpu(), forced to each family;
# - test_fma_kernel_of_the_family_runs_where_the_host_has_its_isa runs the family's FMA kernel only on a host
#   with the same vector ISA (x86 avx512f / avx2+fma, or aarch64), and skips elsewhere saying which;
# - tests/test_bench_roofs.py compiles the kernel for named CPUs (LLVM cross-compiles: any host) and runs
#   it on this host's own ISA; the tiny real run above measures this host whatever its ISA.

def test_native_precisions_follow_the_family(cpu_family) -> None:
    _, cpu, expected = cpu_family
    from roofline.bench import host

    assert host.host_cpu() is cpu  # every ISA decision sees the forced CPU
    assert spec.native_precisions(machine.cpu_flags()) == expected["native"]


def test_gemms_timed_follow_the_native_precisions(cpu_family) -> None:
    _, _, expected = cpu_family
    native = spec.native_precisions(machine.cpu_flags())
    plan = bench_gemm.gemm_plan(native, True, True)
    # numpy fp64/fp32 in both layouts, torch fp32 linear, and torch A@B and x@W.T for each native 16-bit one
    assert {p for p, _, _ in plan} == set(expected["native"])
    assert sum(1 for p, lib, _ in plan if lib == "torch" and p in ("bf16", "fp16")) == 2 * (len(expected["native"]) - 2)
    # torch GEMMs off (or torch missing): fp64/fp32 only, and a native 16-bit precision left unmeasured is said
    off = bench_gemm.gemm_plan(native, False, True)
    assert {p for p, _, _ in off} == {"fp64", "fp32"} and off == bench_gemm.gemm_plan(native, True, False)
    said = bench_gemm.unmeasured_native_warnings(native, off, False)
    lost = [p for p in ("bf16", "fp16") if p in expected["native"]]
    assert bool(said) == bool(lost) and all(p in said[0] and "torch GEMMs are off" in said[0] for p in lost)
    assert bench_gemm.unmeasured_native_warnings(native, plan, True) == []


def test_fma_kernel_shape_follows_the_family(cpu_family) -> None:
    from roofline.bench import fma

    _, _, expected = cpu_family
    for prec, lanes_per_bit in (("fp64", 64), ("fp32", 32)):
        shape = fma.host_shape(prec)
        assert (shape.bits, shape.chains) == expected["vector"] and shape.fused
        assert shape.lanes == shape.bits // lanes_per_bit
    with pytest.raises(RuntimeError, match="not compiled while a CPU is forced"):
        fma.compiled_shape("fp64")  # a kernel for a forced ISA would be an illegal instruction: refused


def test_spec_roof_follows_the_family(cpu_family) -> None:
    _, cpu, expected = cpu_family
    info = spec.cpuinfo()
    assert info["flags"] == set(cpu.flags)
    clock = spec.spec_clock(info)
    assert clock is not None and clock[0] == cpu.max_mhz * 1e6 and "cpufreq" in clock[1]
    roofs = {r.precision: r.flops for r in spec.spec_roofs(info, 2, clock)}
    assert roofs["fp64"] == pytest.approx(expected["fp64_spec"]) and roofs["fp32"] == pytest.approx(2 * roofs["fp64"])


def test_fallbacks_follow_the_family(cpu_family) -> None:
    """The roofs a bench of this family publishes (vector and matrix fp64/fp32, a matrix roof per 16-bit
    precision timed: bench.cpu._compute_ceilings), and where a bf16/fp16 op then runs."""
    from roofline.hardware.device import ComputeCeiling, Provenance

    _, _, expected = cpu_family
    timed = {p for p, _, _ in bench_gemm.gemm_plan(spec.native_precisions(machine.cpu_flags()), True, True)}
    prov = Provenance(kind="measured", source="roofline bench")
    compute = [ComputeCeiling(u, p, 1e11, prov) for u in ("vector", "matrix") for p in ("fp64", "fp32")]
    compute += [ComputeCeiling("matrix", p, 4e11, prov) for p in ("bf16", "fp16") if p in timed]
    d = Device("family", kind="cpu", compute=tuple(compute),
               memory=(MemoryCeiling("DRAM", 1e10, 2**34, prov),))
    for p, other in (("bf16", "fp16"), ("fp16", "bf16")):
        # the documented order (device.PRECISION_FALLBACK): its own roof, the other 16-bit one, then fp32
        # (a looser roof is still a bound): Zen 5's fp16 ops land on its bf16 roof, Zen 3's on fp32
        want = p if p in expected["native"] else other if other in expected["native"] else "fp32"
        assert d.choose_compute("matrix", p).ceiling.precision == want
        assert d.choose_compute("vector", p).ceiling.key == ("vector", "fp32")  # no 16-bit vector roof on a CPU


def test_cache_fingerprint_names_the_familys_isa(cpu_family) -> None:
    name, cpu, _ = cpu_family
    fp = machine.fingerprint()
    isa = fp.split("isa ")[1].split(",")
    assert fp.startswith(cpu.model_name or "") and set(isa) <= set(cpu.flags)
    assert ("avx512_bf16" in isa) == (name in ("avx512_bf16", "amx")) and ("sve" in isa) == (name == "arm")


def test_fma_kernel_of_the_family_runs_where_the_host_has_its_isa(cpu_family) -> None:
    pytest.importorskip("llvmlite")
    from roofline.bench import fma, host

    name, cpu, expected = cpu_family
    real = host._read_host()
    if real.is_arm != cpu.is_arm or (not cpu.is_arm and set(real.vector_isa()) != set(cpu.vector_isa())):
        pytest.skip(f"the {name} kernel needs {'aarch64' if cpu.is_arm else '+'.join(cpu.vector_isa())}; this host "
                    f"has {real.arch} {'+'.join(real.vector_isa()) or '(no FMA ISA)'}")
    host._FORCED.remove(cpu)  # run on the real CPU, which has this family's vector ISA
    try:
        shape = fma.compiled_shape("fp64")
        assert (shape.bits, shape.chains) == expected["vector"]
        assert fma.run_fma_peak("fp64", 1000, 1) > 0
    finally:
        host._FORCED.append(cpu)


# -- a tiny real run: the Device schema ---------------------------------------------------------

OMP_VARS = ("OMP_WAIT_POLICY", "OMP_PROC_BIND", "OMP_PLACES")
#: this process's OpenMP environment and CPUs before and after tiny_device's run_bench
PROCESS_STATE: dict[str, dict[str, object]] = {}


def _process_state() -> dict[str, object]:
    return {"env": {v: os.environ.get(v) for v in OMP_VARS},
            "cpus": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None}


@pytest.fixture(scope="module")
def tiny_device() -> Device:
    pytest.importorskip("numba")
    from roofline.bench import run_bench

    before = _process_state()
    device = run_bench(quick=True, threads=min(2, os.cpu_count() or 1), **TINY)
    PROCESS_STATE.update(before=before, after=_process_state())
    return device


@pytest.fixture
def in_process_bench(monkeypatch):
    """run_cpu_bench in this process sets OpenMP and numba settings for it (run_bench would not): undo them."""
    numba = pytest.importorskip("numba")
    from unittest import mock

    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    for name in ("THREADING_LAYER", "THREADING_LAYER_PRIORITY"):
        monkeypatch.setattr(numba.config, name, getattr(numba.config, name))
    with mock.patch.dict(os.environ):
        yield
    if cpus is not None:
        os.sched_setaffinity(0, cpus)


def test_run_bench_measures_in_a_child_and_leaves_this_process_as_it_was(tiny_device: Device) -> None:
    # the OpenMP settings and the pinned main thread stay in the child process
    assert PROCESS_STATE["after"] == PROCESS_STATE["before"]


def test_tiny_run_is_a_valid_measured_cpu_device(tiny_device: Device) -> None:
    d = tiny_device
    assert d.kind == "cpu"
    assert {c.key for c in d.compute} >= {("vector", "fp64"), ("vector", "fp32"), ("matrix", "fp64"), ("matrix", "fp32")}
    assert "DRAM" in [m.level for m in d.memory]
    for ceiling in [*d.compute, *d.memory]:
        p = ceiling.provenance
        assert p.kind == "measured" and p.method and p.date and p.repeats >= 3
        assert p.spread is not None and p.spread[0] <= p.spread[1]
        assert "threads" in p.details and "working_set_bytes" in p.details
    # a CPU's GEMMs run on its FMA units: its matrix roof is the best of the GEMMs and the vector roof's methods,
    # so it is the vector roof (bench version 3)
    for prec in ("fp64", "fp32"):
        matrix, vector = d.ceiling("matrix", prec), d.ceiling("vector", prec)
        assert matrix.flops == vector.flops
        names = [m.method for m in matrix.provenance.methods]
        assert any("matmul" in n for n in names) and any("FMA kernel" in n for n in names)
    dram = d.memory_level("DRAM")
    assert "triad 24 B" in dram.provenance.note
    # the DRAM roof is the best of long read/copy/triad/in-place runs (max(7, repeats=3) = 7 samples each);
    # every method's figure is kept, and the winner is named
    methods = {m.method.split(",")[0]: m.value for m in dram.provenance.methods}
    assert set(methods) == {"numba STREAM read", "numba STREAM copy", "numba STREAM triad", "numba in-place x = x + s"}
    assert dram.bandwidth == max(methods.values())
    assert dram.provenance.method.startswith(max(methods, key=methods.get))
    # each compute roof is the best of its methods; a CPU's vector roof counts its GEMMs
    for c in d.compute:
        assert c.flops == max(m.value for m in c.provenance.methods), c.label
    v64 = {m.method.split(" (")[0] for m in d.ceiling("vector", "fp64").provenance.methods}
    assert {"LLVM FMA kernel", "numba ERT in-place FMA curve", "numpy.matmul A@B", "numpy.matmul x@W.T"} <= v64
    assert d.bench is not None and d.bench.version >= 2 and d.bench.machine == machine.fingerprint()
    check_low_precision_roofs(d, TINY["torch_gemm"])
    assert dram.provenance.details["working_set_bytes"][1] <= 2 * MiB  # a range within the sweep (TINY: 2 MiB)
    for key in ("cpu_model", "cores", "versions", "blas", "date", "warnings"):
        assert key in d.metadata, key
    # the figures read back are typed bench facts: threads, the sweep (every kernel), ERT, caches
    assert d.bench.threads == (os.cpu_count() or 1) and d.bench.sweep is not None and d.bench.ert is not None
    assert {c.kernel for c in d.bench.sweep.curves} == set(bench_sweep.KERNELS)
    assert all(len(c.median) == len(d.bench.sweep.working_set_bytes) for c in d.bench.sweep.curves)
    assert d.metadata["versions"]["numpy"] == np.__version__
    # JSON round trip keeps every number and its provenance
    again = Device.from_dict(json.loads(d.to_json()))
    assert again.to_dict() == json.loads(d.to_json())


def check_low_precision_roofs(d: Device, torch_gemm: bool) -> None:
    """A bf16/fp16 roof exists exactly where the bench timed a GEMM of it: native arithmetic AND torch GEMMs on.
    TINY turns them off, so on a CPU with native bf16 (Zen 4/5, Sapphire Rapids) there is none, and the
    bench says why.  The bench records which precisions are native."""
    assert d.bench is not None and d.bench.native == spec.native_precisions(machine.cpu_flags() | EXTRA_FLAGS)
    timed = {p for p, _, _ in bench_gemm.gemm_plan(d.bench.native, torch_gemm, True)}
    for p in ("bf16", "fp16"):
        assert (d.ceiling("matrix", p) is not None) == (p in timed), p
        said = any(p in w.split(" is native on this CPU but no ")[0].split("/") for w in d.metadata["warnings"]
                   if " is native on this CPU but no " in w)
        assert said == (p in d.bench.native and p not in timed), p


#: flags a test adds to what this host's bench sees (test_tiny_run_on_a_cpu_with_native_bf16)
EXTRA_FLAGS: set[str] = set()


def test_tiny_run_on_a_cpu_with_native_bf16(monkeypatch, in_process_bench) -> None:
    """The case issue 25 found on Zen 5: bench.native lists bf16 and the tiny configuration measures no bf16
    roof.  The host's flags gain avx512_bf16 for the precision decision only (the kernels still run on the
    host's real ISA), in this process (run_bench's child would not see the patch)."""
    real = spec.this_cpu_spec
    monkeypatch.setattr(spec, "this_cpu_spec", lambda threads: (real(threads)[0], real(threads)[1] | {"avx512_bf16"}))
    monkeypatch.setattr(sys.modules[__name__], "EXTRA_FLAGS", {"avx512_bf16"})
    d = bench_cpu.run_cpu_bench(sampling.BenchConfig.quick(threads=1, **{**TINY, "max_bytes": 1 * MiB}))
    assert "bf16" in d.bench.native and d.ceiling("matrix", "bf16") is None
    check_low_precision_roofs(d, TINY["torch_gemm"])


def test_ert_curve_is_checked_against_the_devices_own_roofline(tiny_device: Device) -> None:
    ert = tiny_device.bench.ert
    peak = tiny_device.ceiling("vector", "fp64").flops
    dram = tiny_device.memory_level("DRAM").bandwidth
    # intensity = FLOPs per element / 16 B (one 8-B read + one 8-B write in place): 1/16, 2/16, 8/16
    assert ert.intensity == (1 / 16, 2 / 16, 8 / 16)
    for ai, model, got, dev in zip(ert.intensity, ert.model_flops, ert.flops, ert.deviation, strict=True):
        assert model == pytest.approx(min(peak, ai * dram))
        assert dev == pytest.approx(got / model - 1)
    assert abs(ert.deviation[ert.worst]) == pytest.approx(max(abs(x) for x in ert.deviation))


def test_plots_of_a_measured_device(tiny_device: Device, tmp_path) -> None:
    pytest.importorskip("matplotlib")
    from roofline.render.bench import plot_bandwidth, plot_roofline

    plot_bandwidth(tiny_device, tmp_path / "bw.png")
    plot_roofline(tiny_device, tmp_path / "roof.png")
    for name in ("bw.png", "roof.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- CLI and faults -----------------------------------------------------------------------------

@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(d))
    return d


def _no_measuring(monkeypatch) -> None:
    import roofline.bench

    def boom(**kw):
        raise AssertionError("measured although the arguments were bad")

    monkeypatch.setattr(roofline.bench, "run_bench", boom)


def test_numba_missing_names_the_extra(monkeypatch, capsys, cache) -> None:
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba -> ImportError
    assert cli.main(["bench"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install 'roofline[bench]'" in err


def test_no_cuda_is_one_line(capsys, cache) -> None:
    from roofline.bench.gpu import cuda_available

    if cuda_available():
        pytest.skip("this machine has CUDA")
    assert cli.main(["bench", "--gpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and ("no CUDA device" in err or "roofline[torch]" in err)


@pytest.mark.parametrize("threads", [0, (os.cpu_count() or 1) + 1])
def test_threads_out_of_range(threads, monkeypatch, capsys, cache) -> None:
    _no_measuring(monkeypatch)
    assert cli.main(["bench", "--threads", str(threads)]) == 2
    assert f"--threads: {threads} is out of range" in capsys.readouterr().err


def test_unwritable_out_fails_before_measuring(tmp_path, monkeypatch, capsys, cache) -> None:
    _no_measuring(monkeypatch)
    a_file = tmp_path / "f.txt"
    a_file.write_text("x")
    # a directory; a path under a file; a path under a file two levels up
    for bad in (str(tmp_path), str(a_file / "dev.json"), str(a_file / "sub" / "dev.json")):
        assert cli.main(["bench", "--out", bad]) == 2, bad
        assert "roofline: error:" in capsys.readouterr().err
    if os.geteuid() != 0:  # root may write anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        assert cli.main(["bench", "--out", str(ro / "dev.json")]) == 2
        assert cli.main(["bench", "--out", str(ro / "new" / "dev.json")]) == 2
    assert cli.main(["bench", "--plot", str(a_file)]) == 2  # --plot wants a directory


def test_memory_shortage_shrinks_and_says_so(monkeypatch, in_process_bench) -> None:
    # 64 MiB headroom + 2 MiB spare: the 4 MiB working set needs 4*1.25 MiB + 64 MiB, so it
    # shrinks to (available - 64 MiB) / 2 = 1 MiB
    monkeypatch.setattr(machine, "available_memory", lambda: 66.0 * MiB)
    # in this process (run_bench's child would not see the patch)
    d = bench_cpu.run_cpu_bench(sampling.BenchConfig.quick(threads=1, **{**TINY, "max_bytes": 4 * MiB}))
    short = d.metadata["memory_shortage"]
    assert short["wanted_bytes"] == 4 * MiB and short["used_bytes"] == 1 * MiB
    assert max(d.bench.sweep.working_set_bytes) == 1 * MiB
    assert any("shrunk" in w for w in d.metadata["warnings"])
    assert "shrunk" in d.memory_level("DRAM").provenance.note


@pytest.mark.skipif(os.name != "posix", reason="SIGINT to a process")
@pytest.mark.parametrize("who", ["both", "child"])
def test_ctrl_c_leaves_no_partial_file_and_the_cache_intact(who, tmp_path, monkeypatch, capsys, cache) -> None:
    # Ctrl-C in a terminal sends SIGINT to both processes ("both"); 'kill -INT' may reach the child alone
    pytest.importorskip("numba")
    import contextlib
    import signal
    import subprocess

    from roofline.bench import cache as bench_cache
    from roofline.commands import bench as bench_cmd

    old = Device.simple("previous", "1 GFLOP/s", "1 GB/s")
    bench_cache.save_local_device(old)
    before = bench_cache.local_device_path().read_text()
    children: list[subprocess.Popen] = []
    real_popen = subprocess.Popen

    def popen(*args, **kw):
        children.append(real_popen(*args, **kw))
        return children[-1]

    @contextlib.contextmanager
    def progress():
        def update(fraction: float, what: str) -> None:
            if what.startswith("bandwidth sweep") and children[-1].returncode is None and not sent:
                sent.append(what)  # mid-sweep, once
                os.kill(children[-1].pid, signal.SIGINT)
                if who == "both":
                    signal.raise_signal(signal.SIGINT)

        yield update

    sent: list[str] = []
    monkeypatch.setattr(subprocess, "Popen", popen)
    monkeypatch.setattr(bench_cmd, "_progress", progress)
    out = tmp_path / "dev.json"
    assert cli.main(["bench", "--out", str(out), "--plot", str(tmp_path / "plots")]) == 130
    assert sent and "interrupted" in capsys.readouterr().err
    assert len(children) == 1 and children[0].poll() is not None  # the child is gone, not left running
    assert not out.exists() and not (tmp_path / "plots" / "roofline.png").exists()
    assert bench_cache.local_device_path().read_text() == before
    # nothing half-written beside the cache; the writers' lock file (empty once released) may stay
    names = sorted(p.name for p in bench_cache.local_device_path().parent.iterdir())
    assert names == ["local-device.json", "local-device.lock"] and bench_cache.lock_path().read_text() == ""


def test_bad_input_found_in_the_child_is_the_same_one_line_error(monkeypatch) -> None:
    pytest.importorskip("numba")
    from roofline.bench import run_bench
    from roofline.core.errors import RooflineError

    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs 2 CPUs")
    # --threads 2 is in range for this machine (checked here), but not for numba in the child
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    with pytest.raises(RooflineError, match=r"^--threads: 2 is more than NUMBA_NUM_THREADS=1$"):
        run_bench(quick=True, threads=2, **TINY)


def test_a_crash_in_the_child_keeps_its_traceback() -> None:
    from roofline.bench import _worker

    tb = 'Traceback (most recent call last):\n  File "cpu.py", line 1, in run_cpu_bench\nZeroDivisionError: x\n'
    with pytest.raises(RuntimeError, match=r"(?s)worker process:\nTraceback.*ZeroDivisionError: x$"):
        _worker._result({"error": "exception", "traceback": tb}, 1)
    with pytest.raises(RuntimeError, match="exit code -9 and no result"):
        _worker._result({}, -9)


def test_show_and_device_local(tiny_device: Device, monkeypatch, capsys, cache) -> None:
    from roofline.bench import cache as bench_cache
    from roofline.bench.resolve import resolve_device

    assert cli.main(["bench", "--show"]) == 2
    assert "run 'roofline bench' first" in capsys.readouterr().err
    bench_cache.save_local_device(tiny_device)
    assert cli.main(["bench", "--show"]) == 0
    out = capsys.readouterr().out
    assert "fp64 vector" in out and "DRAM" in out and "IQR/median" in out
    # the device as measured, plus the file it was read from (which reports name beside its run)
    local = resolve_device("local").to_dict()
    assert local["metadata"].pop("device_file") == str(bench_cache.local_device_path())
    assert local == tiny_device.to_dict()
    assert f"run {tiny_device.metadata['run']['id']}" in out


def test_cache_dir_override_and_xdg(monkeypatch, tmp_path) -> None:
    from roofline.bench.cache import cache_dir

    monkeypatch.delenv("ROOFLINE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "roofline"
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path / "x"))
    assert cache_dir() == tmp_path / "x"


# -- GPU (skipped without CUDA) ---------------------------------------------------------------------

def test_gpu_quartiles_match_the_cpu_convention() -> None:
    from roofline.bench.gpu import _stats

    # 1..7: median 4; numpy-style (linear) quartiles at positions 0.25 x 6 = 1.5 and 4.5 -> 2.5 and 5.5
    assert _stats([7.0, 1.0, 3.0, 2.0, 6.0, 5.0, 4.0]) == (4.0, 2.5, 5.5)
    s = sampling.Stat.of([7.0, 1.0, 3.0, 2.0, 6.0, 5.0, 4.0])
    assert (s.median, s.q1, s.q3) == (4.0, 2.5, 5.5)
    assert _stats([3.0]) == (3.0, 3.0, 3.0)


def test_time_cuda_reports_seconds_per_call_without_a_gpu() -> None:
    from types import SimpleNamespace

    from roofline.bench.gpu import time_cuda

    calls: list[str] = []

    class Event:
        def __init__(self, enable_timing: bool = False) -> None:
            assert enable_timing  # elapsed_time needs timing events

        def record(self) -> None:
            calls.append("record")

        def elapsed_time(self, end: Event) -> float:
            return 2.0  # milliseconds, as CUDA events report

    fake = SimpleNamespace(cuda=SimpleNamespace(Event=Event, synchronize=lambda: calls.append("sync")))
    secs = time_cuda(fake, lambda: calls.append("fn"), inner=10, repeats=3, warmup=2)
    # 2 ms for 10 calls = 2e-4 s per call
    assert secs == pytest.approx([2e-4] * 3)
    # warm-up, sync; then per sample: record, 10 calls, record, sync (the end event must have completed)
    assert calls[:3] == ["fn", "fn", "sync"]
    assert calls[4:] == (["record"] + ["fn"] * 10 + ["record", "sync"]) * 3


@pytest.mark.cuda
def test_gpu_bench_schema() -> None:
    from roofline.bench.gpu import cuda_available, run_gpu_bench

    if not cuda_available():
        pytest.skip("no CUDA device")
    d = run_gpu_bench(quick=True, copy_bytes=64 * MiB, gemm_n=1024, repeats=3)
    assert d.kind == "gpu" and d.memory_level("HBM").provenance.kind == "measured"
    assert d.ceiling("matrix", "fp32") is not None
    for ceiling in [*d.compute, *d.memory]:
        p = ceiling.provenance
        assert p.method and p.date and p.repeats == 3 and p.spread[0] <= p.spread[1]
        assert "threads" in p.details and "working_set_bytes" in p.details
    if importlib.util.find_spec("triton") is not None:  # the vector peak needs Triton
        assert d.ceiling("vector", "fp32") is not None, d.metadata["warnings"]


def test_dram_roof_is_the_best_of_two_slices_and_a_drift_between_them_is_reported(monkeypatch, in_process_bench) -> None:
    """Issue 32: a shared host's memory bandwidth moves over tens of seconds, so main memory is sampled at the
    sweep's end and again after the GEMMs; the roof is the best sample of both.  The late slice is replaced by
    a fake that reads 3x the first slice's best: the DRAM roof must be that figure (best of the union), both
    slices' bests are kept in the roof's details, and the drift (3x > 1.15x) is in the warnings."""
    from roofline.bench.sampling import Stat

    first: dict[str, list[float]] = {}
    real = bench_cpu.long_samples

    def late(k, buf, threads, cfg):
        runs = real(k, buf, threads, cfg)  # the real kernels run, so the slice's shape is the real one
        top = max(s.best for s in first["sweep"].values()) if "sweep" in first else max(s.best for s in runs.values())
        return {name: Stat.of([3 * top] + s.samples[1:]) for name, s in runs.items()}

    real_sweep = bench_cpu.run_sweep

    def sweep(*a, **kw):
        curves, runs = real_sweep(*a, **kw)
        first["sweep"] = runs
        return curves, runs

    monkeypatch.setattr(bench_cpu, "run_sweep", sweep)
    monkeypatch.setattr(bench_cpu, "long_samples", late)
    d = bench_cpu.run_cpu_bench(sampling.BenchConfig.quick(threads=1, **{**TINY, "max_bytes": 4 * MiB}))
    top = max(s.best for s in first["sweep"].values())
    dram = d.memory_level("DRAM")
    assert dram.bandwidth == pytest.approx(3 * top)  # the late slice's fake best
    assert dram.provenance.details["slice_best_bandwidths"] == pytest.approx([top, 3 * top])
    assert any("moved between the bench's 2 DRAM slices" in w for w in d.metadata["warnings"])


def test_merge_slices_keeps_every_sample_and_stays_quiet_without_drift() -> None:
    from roofline.bench.sampling import Stat
    from roofline.bench.sweep import merge_slices

    a = {"read": Stat.of([50e9, 52e9]), "triad": Stat.of([40e9])}
    b = {"read": Stat.of([55e9]), "triad": Stat.of([41e9, 42e9])}
    warnings: list[str] = []
    runs, bests = merge_slices([a, b], warnings)
    assert runs["read"].samples == [50e9, 52e9, 55e9] and runs["triad"].best == 42e9
    assert bests == [52e9, 55e9]  # 55/52 = 1.058 < 1.15: no note
    assert warnings == []
