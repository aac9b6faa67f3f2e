"""True roofs: the FMA kernel's code on every ISA, spec roofs, native precisions, the audit, the cache check.

Expected values are derived by hand in the comments; nothing here times anything for speed.
"""

from __future__ import annotations

import json
import re

import pytest

from roofline import cli
from roofline.bench import audit as bench_audit
from roofline.bench import spec
from roofline.hardware.bench_facts import BENCH_VERSION, BenchFacts
from roofline.hardware.device import ComputeCeiling, Device, MemoryCeiling, Provenance

pytest.importorskip("llvmlite")


# -- the FMA kernel: packed FMAs, nothing on the stack, whatever the host ------------------------

def loop_body(asm: str) -> list[str]:
    """Instructions of the innermost loop: from a label to the branch back to it."""
    lines = [line.strip() for line in asm.splitlines()]
    labels = {line[:-1]: i for i, line in enumerate(lines) if re.match(r"^\.?L\w+:$", line)}
    for i, line in enumerate(lines):
        m = re.match(r"^(j[a-z]+|b\.[a-z]+)\s+(\.?L\w+)$", line)  # conditional branch: x86 jl, Arm b.lt
        if m and m.group(2) in labels and labels[m.group(2)] < i:
            return [x for x in lines[labels[m.group(2)] + 1:i + 1] if x and not x.startswith((".", "#", "//"))]
    raise AssertionError("no backward branch found in the kernel's assembly")


@pytest.mark.parametrize("cpu, reg", [("haswell", "ymm"), ("skylake-avx512", "zmm"), ("znver3", "ymm"),
                                      ("znver4", "zmm")])
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_fma_kernel_is_packed_and_register_resident_on_x86(cpu: str, reg: str, precision: str) -> None:
    from roofline.bench import fma

    shape, asm = fma.assembly(precision, cpu)
    body = loop_body(asm)
    suffix = "pd" if precision == "fp64" else "ps"
    fmas = [x for x in body if re.match(rf"^vfn?madd\d+{suffix}\s", x)]
    # AVX2 (16 ymm): 12 chains of 4 fp64 / 8 fp32 lanes; AVX-512 (32 zmm): 24 chains of 8 / 16 lanes
    assert shape.chains == (12 if reg == "ymm" else 24)
    assert shape.lanes == (256 if reg == "ymm" else 512) // (64 if precision == "fp64" else 32)
    assert len(fmas) == shape.chains, body
    assert all(f"%{reg}" in x for x in fmas), fmas
    # no operand on the stack, no scalar FMA, no spill anywhere in the loop
    assert not [x for x in body if re.search(r"\(%r[sb]p\)|%r[sb]p", x)], body
    assert not [x for x in body if re.match(r"^vfn?madd\d+s[sd]\s", x)]


def test_fma_kernel_on_arm_neon() -> None:
    from roofline.bench import fma

    try:
        shape, asm = fma.assembly("fp64", "neoverse-n1", triple="aarch64-unknown-linux-gnu")
    except RuntimeError as exc:  # an llvmlite built without the AArch64 target
        pytest.skip(f"no AArch64 target in this LLVM: {exc}")
    body = loop_body(asm)
    fmas = [x for x in body if re.match(r"^fmla\s+v\d+\.2d", x)]
    assert shape.lanes == 2 and len(fmas) == shape.chains == 24  # 128-bit NEON: 2 fp64 lanes, 24 chains
    assert not [x for x in body if re.search(r"\bsp\b", x)]


def test_fma_kernel_counts_its_flops_on_this_host() -> None:
    from roofline.bench import fma

    shape = fma.compiled_shape("fp64")
    assert shape.flops_per_iteration == 2 * shape.chains * shape.lanes  # one FMA = 2 FLOPs per lane per chain
    assert fma.run_fma_peak("fp64", 1000, 1) > 0


# -- spec roofs ------------------------------------------------------------------------------------

def cpu(vendor: str, family: int, model: int, flags: str, part: str = "") -> dict:
    return {"vendor_id": vendor, "family": family, "model": model, "flags": set(flags.split()), "cpu_part": part}


@pytest.mark.parametrize("info, cores, ghz, fp64", [
    # Haswell: 2 FMA pipes x 256 bit = 4 fp64 lanes: 4 cores x 3.0 GHz x 2 x 4 x 2 = 192 GFLOP/s
    (cpu("GenuineIntel", 6, 63, "fma avx2"), 4, 3.0, 192e9),
    # Ice Lake-SP: 2 x 512 bit = 8 lanes: 2 x 2.8 x 2 x 8 x 2 = 179.2
    (cpu("GenuineIntel", 6, 106, "fma avx2 avx512f"), 2, 2.8, 179.2e9),
    # Zen 4 (family 25, model 17): 512-bit ops on 2 x 256-bit pipes: 8 x 4.0 x 2 x 4 x 2 = 512
    (cpu("AuthenticAMD", 25, 17, "fma avx2 avx512f"), 8, 4.0, 512e9),
    # Neoverse N1 (part 0xd0c): 2 x 128 bit = 2 lanes: 64 x 2.5 x 2 x 2 x 2 = 1280
    (cpu("0x41", -1, -1, "fp asimd", "0xd0c"), 64, 2.5, 1280e9),
])
def test_spec_roof_is_cores_clock_pipes_lanes_two(info: dict, cores: int, ghz: float, fp64: float) -> None:
    roofs = {r.precision: r for r in spec.spec_roofs(info, cores, (ghz * 1e9, "given"))}
    assert roofs["fp64"].flops == pytest.approx(fp64)
    assert roofs["fp32"].flops == pytest.approx(2 * fp64)  # twice the lanes
    assert f"{cores} core(s)" in roofs["fp64"].derivation and "given" in roofs["fp64"].derivation


def test_spec_roof_unknown_cpu_or_clock_is_absent_and_checks_warn() -> None:
    assert spec.spec_roofs(cpu("GenuineIntel", 6, 999, "fma avx2"), 4, (3e9, "x")) == ()
    assert spec.spec_roofs(cpu("GenuineIntel", 6, 63, "fma avx2"), 4, None) == ()
    roofs = spec.spec_roofs(cpu("GenuineIntel", 6, 63, "fma avx2"), 4, (3e9, "x"))  # fp64 192, fp32 384
    assert spec.check_against_spec({"fp64": 100e9, "fp32": 380e9}, roofs) == []  # 52 %, 99 %: fine
    low, high = spec.check_against_spec({"fp64": 90e9, "fp32": 430e9}, roofs)  # 47 %, 112 %
    assert "47%" in low and "112%" in high


# -- low precision without native hardware ------------------------------------------------------------

@pytest.mark.parametrize("flags, native", [
    ({"avx2", "fma"}, ("fp64", "fp32")),                               # AMD EPYC Zen 3, most laptops
    ({"avx512f", "avx512_vnni"}, ("fp64", "fp32")),                    # Ice Lake: VNNI is int8, not bf16
    ({"avx512f", "avx512_bf16"}, ("fp64", "fp32", "bf16")),            # Cooper Lake, Zen 4
    ({"avx512f", "amx_bf16", "avx512_fp16"}, ("fp64", "fp32", "bf16", "fp16")),  # Sapphire Rapids
    ({"asimd", "asimdhp", "bf16"}, ("fp64", "fp32", "bf16", "fp16")),  # Neoverse V1
])
def test_native_precisions_from_flags(flags: set[str], native: tuple[str, ...]) -> None:
    assert spec.native_precisions(flags) == native


def test_bf16_gemm_is_measured_only_where_native() -> None:
    pytest.importorskip("torch")
    from roofline.bench.gemm import BenchConfig, time_gemms

    cfg = BenchConfig.quick(gemm_sizes=(64,), repeats=1, min_sample_seconds=1e-4)
    without = time_gemms(cfg, 1, ("fp64", "fp32"), [], lambda f, w: None)
    with_bf16 = time_gemms(cfg, 1, ("fp64", "fp32", "bf16"), [], lambda f, w: None)
    assert {p for p, _ in without} == {"fp64", "fp32"}
    # both layouts: A @ B and x @ W.T (nn.Linear)
    assert {layout for p, layout in with_bf16 if p == "bf16"} == {"torch A@B", "torch x@W.T"}


# -- the audit ---------------------------------------------------------------------------------------

def synthetic_device() -> Device:
    prov = Provenance(kind="measured", source="roofline bench")
    return Device("synthetic", kind="cpu", compute=(
        ComputeCeiling("vector", "fp32", 100e9, prov), ComputeCeiling("matrix", "fp32", 50e9, prov)),
        memory=(MemoryCeiling("L2", 400e9, 1 * 2**20, prov), MemoryCeiling("DRAM", 20e9, 2**34, prov)),
        bench=BenchFacts(BENCH_VERSION, "synthetic"))


def kernel(name: str, unit: str, flops: float, nbytes: float) -> bench_audit.AuditKernel:
    return bench_audit.AuditKernel(name, unit, "fp32", flops, nbytes, lambda: (lambda: None))


def test_audit_raises_only_the_roof_a_kernel_beats() -> None:
    kernels = [
        kernel("fast gemm", "matrix", 1e9, 1e6),      # 1 GFLOP in 10 ms = 100 GFLOP/s vs the 50 GFLOP/s roof
        kernel("slow gemm", "matrix", 1e9, 1e6),      # 40 ms: 25 GFLOP/s, efficiency 0.5
        kernel("l2 add", "vector", 1e5, 512 * 1024),  # 512 KiB fits L2 (1 MiB): judged at 400 GB/s
        kernel("dram add", "vector", 1e6, 64e6),      # 64 MB: DRAM at 20 GB/s
        kernel("noisy gemm", "matrix", 1e9, 1e6),     # efficiency 1.03 inside its own 10 % spread
    ]
    # (median, fast quartile, slow quartile, best, samples) in seconds per call
    times = {"fast gemm": (0.010, 0.0099, 0.0101, 0.0095, 5), "slow gemm": (0.040, 0.039, 0.041, 0.038, 5),
             "l2 add": (2.0e-6, 1.95e-6, 2.05e-6, 1.9e-6, 5),  # 524288 B / 2 us = 262 GB/s: 0.66 of L2
             "dram add": (3.0e-3, 2.8e-3, 3.2e-3, 2.8e-3, 5),  # 64e6 / 3 ms = 21.3 GB/s: 1.07 x DRAM
             "noisy gemm": (0.0194, 0.018, 0.020, 0.0175, 5)}
    order = iter(kernels)

    def time_call(call):
        return times[next(order).name]

    dev = synthetic_device()
    raised, messages = bench_audit.run_audit(dev, time_call, kernels=kernels)
    res = {r.kernel: r for r in raised.bench.audit}
    assert res["fast gemm"].efficiency == pytest.approx((1e9 / 50e9) / 0.010)  # 0.02 s / 0.01 s = 2.0
    assert res["slow gemm"].efficiency == pytest.approx(0.5) and not res["slow gemm"].raised
    assert res["l2 add"].level == "L2" and res["l2 add"].binding == "memory"
    assert res["l2 add"].efficiency == pytest.approx((512 * 1024 / 400e9) / 2e-6)  # 1.31 us / 2 us = 0.655
    # 64e6 B / 20 GB/s = 3.2 ms bound vs 3.0 ms measured: 1.067, inside 1 + its own spread 0.4/3 = 1.133:
    # noise, not a wrong ceiling, so not raised
    assert res["dram add"].efficiency == pytest.approx(3.2e-3 / 3.0e-3)
    assert not res["dram add"].raised
    assert res["noisy gemm"].efficiency == pytest.approx(0.02 / 0.0194) and not res["noisy gemm"].raised
    # the matrix roof is raised to the fast kernel's best call: 1e9 / 0.0095 s = 105.3 GFLOP/s ...
    assert raised.ceiling("matrix", "fp32").flops == pytest.approx(1e9 / 0.0095)
    assert "fast gemm" in raised.ceiling("matrix", "fp32").provenance.method
    assert [m for m in messages if "wrong ceiling: fast gemm" in m]
    # ... and, on a CPU (no matrix unit), the vector roof follows: at least its best GEMM
    assert raised.ceiling("vector", "fp32").flops == pytest.approx(1e9 / 0.0095)
    # memory roofs untouched; efficiencies are against the roofs before raising
    assert raised.memory_level("DRAM").bandwidth == 20e9 and res["fast gemm"].efficiency == pytest.approx(2.0)
    # the results round-trip through the device format
    again = Device.from_dict(json.loads(raised.to_json()))
    assert again.bench == raised.bench


def test_audit_kernel_sizes_follow_the_memory_levels() -> None:
    ks = bench_audit.audit_kernels(synthetic_device(), torch_kernels=False)
    adds = {k.name.rsplit("(", 1)[1].rstrip(")"): k for k in ks if " add " in k.name}
    assert set(adds) == {"L2", "DRAM"}
    # half of L2 (1 MiB): 43690 fp32 elements x 12 B = 524280 B; DRAM: 4 x the largest cache, at least 64 MiB
    assert adds["L2"].bytes == 12 * (2**19 // 12)
    assert synthetic_device().judging_level(adds["L2"].working_set).level == "L2"
    assert adds["DRAM"].bytes >= 64 * 2**20 - 12


# -- the cache is this machine's, from this bench -------------------------------------------------------

@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def measured(machine_id: str, version: int = BENCH_VERSION) -> Device:
    from roofline.bench.machine import fingerprint

    prov = Provenance(kind="measured", source="roofline bench")
    return Device("local: x", kind="cpu", compute=(ComputeCeiling("vector", "fp32", 1e11, prov),),
                  memory=(MemoryCeiling("DRAM", 2e10, None, prov),),
                  bench=BenchFacts(version, fingerprint() if machine_id == "here" else machine_id))


def test_cache_from_this_machine_loads(cache) -> None:
    from roofline.bench import load_local_device, save_local_device
    from roofline.bench.machine import fingerprint

    save_local_device(measured("here"))
    assert load_local_device().bench.machine == measured("here").bench.machine
    # a GPU measured from this host (run_gpu_bench writes fingerprint("gpu NAME")) loads too
    save_local_device(measured(fingerprint("gpu NVIDIA H200")))
    assert load_local_device().bench.machine.endswith("; gpu NVIDIA H200")


@pytest.mark.parametrize("device, words", [
    (lambda: measured("AMD EPYC 7B13; 64 CPUs; isa avx2,fma"), "another machine ('AMD EPYC 7B13"),
    (lambda: measured("here", version=1), "older roofline bench (version 1"),
    (lambda: Device.from_dict({**json.loads(measured("here").to_json()), "bench": None}), "older roofline bench (no version"),
])
def test_cache_from_elsewhere_or_an_older_bench_is_refused(device, words, cache, capsys) -> None:
    from roofline.bench import save_local_device

    save_local_device(device())
    assert cli.main(["device", "local"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0] and "'roofline bench'" in err[0] and "local-device.json" in err[0]


def test_audit_without_a_cache_says_how_to_make_one(cache, capsys) -> None:
    assert cli.main(["bench", "--audit"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "run 'roofline bench' first" in err[0]


@pytest.mark.parametrize("bad, field", [
    ({"version": "2"}, "bench.version"),
    ({"version": 2, "spec": [{"unit": "vector", "precision": "fp64", "flops": "fast"}]}, "bench.spec[0].flops"),
    ({"version": 2, "audit": [{"kernel": "k", "seconds": 1.0, "spread": [1.0], "efficiency": 1.0}]}, "spread"),
    ({"version": 2, "audit": [{"kernel": "k", "seconds": float("nan"), "spread": [1, 2], "efficiency": 1}]},
     "bench.audit[0].seconds"),
])
def test_bad_bench_facts_are_one_line(bad, field, tmp_path, capsys) -> None:
    doc = json.loads(measured("here").to_json())
    doc["bench"] = bad
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(doc))
    assert cli.main(["device", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0] and "Traceback" not in err[0]


# -- the end-to-end check a user makes on a CPU without native bf16 ------------------------------------

@pytest.mark.slow
def test_llama_decode_on_this_cpu_is_memory_bound(cache) -> None:
    pytest.importorskip("numba")
    from roofline import analyze, from_llm
    from roofline.bench import run_bench, save_local_device
    from roofline.bench.machine import cpu_flags
    from roofline.bench.resolve import resolve_device

    if "bf16" in spec.native_precisions(cpu_flags()):
        pytest.skip("this CPU computes bf16 natively")
    # a small real bench: 64 MiB reaches past most L3s; GEMMs up to n=512, no audit
    dev = run_bench(quick=True, max_bytes=64 * 2**20, points_per_octave=1, repeats=3, min_sample_seconds=1e-3,
                    gemm_sizes=(512,), ert_flops=(1, 4), audit=False)
    save_local_device(dev)
    local = resolve_device("local")
    assert local.ceiling("matrix", "bf16") is None  # no emulated bf16 roof: the fp32 roofs apply
    w = from_llm("llama-3-8b", phase="decode")
    a = analyze(w, local)
    assert a.fallbacks[int(a.ceiling_index[0])] or any("bf16" in f for f in a.fallbacks)
    compute, memory = float(a.compute_time @ w.columns["count"]), float(a.memory_time @ w.columns["count"])
    assert memory > compute  # memory-bound as a whole
    # time per token within 20 % of (weights + KV cache) / DRAM: decode reads every weight and the KV once
    expected = (w.info["weight_bytes"] + w.info["kv_cache_bytes"]) / local.main_memory.bandwidth
    assert a.total_time == pytest.approx(expected, rel=0.2)


def test_spec_roofs_are_drawn_dashed_and_labelled_theoretical() -> None:
    pytest.importorskip("matplotlib")
    from dataclasses import replace

    from roofline.hardware.bench_facts import SpecRoof
    from roofline.render.chart import SPEC_COLOR, plot

    dev = synthetic_device()  # fp32 roofs only
    dev = replace(dev, bench=replace(dev.bench, spec=(SpecRoof("vector", "fp32", 150e9, "2 x 2.8 GHz x ..."),
                                                      SpecRoof("vector", "fp64", 75e9, "2 x 2.8 GHz x ..."))))
    ax = plot(dev).axes[0]
    # only the precisions drawn: the fp32 theoretical roof, not the fp64 one
    dashed = [ln for ln in ax.get_lines() if ln.get_color() == SPEC_COLOR]
    assert len(dashed) == 1 and dashed[0].get_ydata()[0] == pytest.approx(150)  # GFLOP/s axis
    assert "fp32 vector 150 GFLOP/s (theoretical)" in [t.get_text() for t in ax.texts]


def test_a_spec_roof_the_machine_beats_is_not_called_theoretical() -> None:
    """A measured fp32 vector roof above the spec figure (574 GFLOP/s measured over a 332 GFLOP/s spec on a VM
    whose spec uses the nominal clock, issue 48 item 5): the spec roof is labelled as the nominal-clock figure,
    on the chart and in the bench table, never "theoretical"."""
    pytest.importorskip("matplotlib")
    from dataclasses import replace

    from roofline.commands.bench import _ceiling_rows
    from roofline.core.units import format_flops
    from roofline.hardware.bench_facts import SpecRoof
    from roofline.render.chart import plot

    dev = synthetic_device()
    measured = dev.ceiling("vector", "fp32").flops
    spec = SpecRoof("vector", "fp32", measured * 0.6, "2 x 1.6 GHz x ...")  # 60% of what the machine measured
    dev = replace(dev, bench=replace(dev.bench, spec=(spec,)))
    ax = plot(dev).axes[0]
    # a roof label with no free place goes to the legend (render.labels): read both
    labels = [t.get_text() for t in ax.texts] + [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"fp32 vector {format_flops(measured * 0.6)} (nominal-clock spec)" in labels, labels
    assert not any("theoretical" in t for t in labels)
    rows, _ = _ceiling_rows(dev)
    assert [r[-1] for r in rows if r[0] == "fp32 vector (spec)"] == ["nominal-clock spec: see the derivation"]
