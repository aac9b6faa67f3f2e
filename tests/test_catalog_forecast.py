"""The catalog's forecast data: achievable (sustained) figures and per-op overhead floors.

Every expected number below is typed in from the cited source (the comment names it); none is read back from the
catalog code.  A forecast figure sits beside the roofline bound, so each must be at most its peak roof and not so
far below it that it is more likely a mis-transcription than a measurement.
"""

from __future__ import annotations

import json
from importlib import resources

import pytest

from roofline.catalog import devices, get_device

ALL = devices()
T = 1e12
US = 1e-6

# (device, "compute", unit, precision) or (device, "memory", level, "") -> the cited figure, in FLOP/s or B/s.
CITED_ACHIEVABLE: dict[tuple[str, str, str, str], float] = {
    # stas00/ml-engineering MAMF table (v2), "NVIDIA A100 SXM": 271.2 TFLOPS bf16 of 312, torch 2.6.0+cu126
    ("NVIDIA A100 SXM4 80GB", "compute", "matrix", "bf16"): 271.2 * T,
    # same row, carried over to the 40 GB SXM4 part (same GA100 SXM compute; kind "derived")
    ("NVIDIA A100 SXM4 40GB", "compute", "matrix", "bf16"): 271.2 * T,
    # NVIDIA forum "Trouble to Reach Peak Bandwidth of A100": read kernel on A100 80GB SXM "stuck at 1.80 TB/s"
    ("NVIDIA A100 SXM4 80GB", "memory", "HBM", ""): 1.80 * T,
    # MAMF table (v2), "NVIDIA A100 PCIe": 252.9 TFLOPS bf16 of 312, torch 2.5.1+cu124
    ("NVIDIA A100 PCIe 80GB", "compute", "matrix", "bf16"): 252.9 * T,
    # MAMF table (v2), "NVIDIA H100 SXM": 794.5 TFLOPS bf16 of 989, torch 2.7.0+cu126
    ("NVIDIA H100 SXM5 80GB", "compute", "matrix", "bf16"): 794.5 * T,
    # MAMF FP8 table, "NVIDIA H100 SXM": 1402.6 TFLOPS float8_e4m3fn of 1979
    ("NVIDIA H100 SXM5 80GB", "compute", "matrix", "fp8"): 1402.6 * T,
    # aigatech/vpbenchmarking (Voltage Park): "GPU D2D (HBM3) 2,903 GB/s, 86.7% of HBM3 peak"
    ("NVIDIA H100 SXM5 80GB", "memory", "HBM", ""): 2903e9,
    # MAMF table (v2), "AMD MI300X": 668.4 TFLOPS bf16 of 1300, torch 2.5.1+rocm6.3, PYTORCH_TUNABLEOP_ENABLED=1
    ("AMD Instinct MI300X", "compute", "matrix", "bf16"): 668.4 * T,
    # MAMF table (v2), "AMD MI325X": 784.9 TFLOPS bf16 of 1300, 1000 W, TunableOp
    ("AMD Instinct MI325X", "compute", "matrix", "bf16"): 784.9 * T,
    # MAMF v1 table (no cache reset), "Intel Gaudi 2": 429.3 TFLOPS bf16 of 432, Gaudi 1.15
    ("Intel Gaudi 2", "compute", "matrix", "bf16"): 429.3 * T,
    # MAMF v1 table, "Intel Gaudi 3": 1288.8 TFLOPS bf16 of 1677 (catalog peak: white paper 1835), Gaudi 1.19
    ("Intel Gaudi 3", "compute", "matrix", "bf16"): 1288.8 * T,
}

# (device, framework) -> the cited seconds.
NVIDIA_GPUS = [d.name for d in ALL if d.kind == "gpu" and d.vendor == "NVIDIA"]
CPUS = [d.name for d in ALL if d.kind == "cpu"]
CITED_OVERHEAD: dict[tuple[str, str], float] = {
    # meta-pytorch/tritonbench PR #1017: raw cuLaunchKernel of a no-op Triton kernel 3.0 us (GB200), reused per GPU
    **{(name, "cuda-launch"): 3.0 * US for name in NVIDIA_GPUS},
    # ahrefs/ocannl issue #488: CUDA graph replay "~15 us fixed plus ~0.58 us per node" (RTX 5070 Ti Laptop)
    **{(name, "cuda-graph"): 0.58 * US for name in NVIDIA_GPUS},
    # RRZE-HPC/gpu-benches gpu-small-kernels, graph mode: intercept of T = a + V/b over the L2-resident points <= 2 MB
    # (a100_80_graph.txt 1.35 us; h200_graph.txt 1.27 us, also the H100 SXM5's: same GH100 die; l40_graph.txt
    # 0.96 us, the L40S's: same AD102 die): the per-kernel floor measured on (or nearest to) the GPU itself
    ("NVIDIA A100 SXM4 80GB", "cuda-graph"): 1.35 * US,
    ("NVIDIA H200 SXM 141GB", "cuda-graph"): 1.27 * US,
    ("NVIDIA H100 SXM5 80GB", "cuda-graph"): 1.27 * US,
    ("NVIDIA L40S", "cuda-graph"): 0.96 * US,
    # pytorch/pytorch issue #41383, maintainer: "x*x with requires_grad=False is approx 2 us" (CPU eager)
    **{(name, "torch-eager"): 2.0 * US for name in CPUS},
    # Quansight-Labs/uarray issue #156, rgommers: "the overhead of ... a numpy ufunc 400 ns"
    **{(name, "numpy"): 0.4 * US for name in CPUS},
}

# GPUs for which no published launch-latency figure was found (HIP on CDNA; Metal on Apple): no cuda-launch floor.
GPUS_WITHOUT_LAUNCH_SOURCE = {
    "AMD Instinct MI250X",
    "AMD Instinct MI300X",
    "AMD Instinct MI325X",
    "AMD Instinct MI355X",
    "Apple M2 Ultra (76-core GPU)",
    "Apple M4 Max (40-core GPU)",
}


def _catalog_files() -> list[tuple[str, dict]]:
    out = []
    for p in resources.files("roofline.catalog").iterdir():
        if p.name.endswith(".json"):
            out.append((p.name, json.loads(p.read_text(encoding="utf-8"))))
    return out


def _forecast_entries():
    """(file, device name, section, entry) for every achievable and overhead entry in the raw JSON."""
    for fname, data in _catalog_files():
        for d in data["devices"]:
            ach = d.get("achievable", {})
            for section in ("compute", "memory"):
                for e in ach.get(section, []):
                    yield fname, data["sources"], d["name"], f"achievable.{section}", e
            for e in d.get("overhead", []):
                yield fname, data["sources"], d["name"], "overhead", e


def test_the_forecast_data_is_present():
    # at least the devices the forecast was asked for: A100, H100 SXM, MI300X
    for name in ("NVIDIA A100 SXM4 80GB", "NVIDIA H100 SXM5 80GB", "AMD Instinct MI300X"):
        assert get_device(name).achievable_compute, name
    assert get_device("h100").achievable_memory


def test_every_forecast_entry_cites_a_source_with_title_url_and_a_note():
    entries = list(_forecast_entries())
    assert len(entries) >= len(CITED_ACHIEVABLE) + len(CITED_OVERHEAD)
    for fname, sources, name, section, e in entries:
        prov = e.get("provenance", {})
        key = prov.get("source", "")
        assert key, f"{fname}: {name} {section} has no source"
        assert key in sources, f"{fname}: {name} {section} cites unknown source {key!r}"
        assert sources[key].get("title"), f"{fname}: source {key} has no title"
        assert sources[key].get("url", "").startswith("https://"), f"{fname}: source {key} has no https url"
        assert len(prov.get("note", "")) >= 40, f"{fname}: {name} {section} needs a note saying what was measured"
        assert prov.get("kind") in ("measured", "datasheet", "derived"), f"{fname}: {name} {section}"


def test_achievable_figures_are_the_cited_ones():
    found: dict[tuple[str, str, str, str], float] = {}
    for d in ALL:
        for c in d.achievable_compute:
            found[(d.name, "compute", c.unit, c.precision)] = c.flops
        for m in d.achievable_memory:
            found[(d.name, "memory", m.level, "")] = m.bandwidth
    assert set(found) == set(CITED_ACHIEVABLE), "an achievable figure was added or dropped without a cited value here"
    for key, cited in CITED_ACHIEVABLE.items():
        assert found[key] == pytest.approx(cited, rel=1e-9), key


@pytest.mark.parametrize("key", sorted(CITED_ACHIEVABLE))
def test_achievable_is_at_most_the_peak_and_above_three_tenths_of_it(key):
    name, section, what, precision = key
    d = get_device(name)
    if section == "compute":
        peak = next(c.flops for c in d.compute if (c.unit, c.precision) == (what, precision))
        got = next(c.flops for c in d.achievable_compute if (c.unit, c.precision) == (what, precision))
    else:
        peak = next(m.bandwidth for m in d.memory if m.level == what)
        got = next(m.bandwidth for m in d.achievable_memory if m.level == what)
    # a sustained figure above the roof means a wrong roof or a mis-transcribed figure
    assert got <= peak, f"{key}: achievable {got:.4g} is above the peak {peak:.4g}"
    # below 0.3x is more likely a transcription slip than a measurement (the lowest cited, MI300X, is 0.51x)
    assert got > 0.3 * peak, f"{key}: achievable {got:.4g} is below 0.3x the peak {peak:.4g}"


def test_overhead_floors_are_the_cited_ones():
    found = {(d.name, o.framework): o.seconds for d in ALL for o in d.overhead}
    assert set(found) == set(CITED_OVERHEAD), "an overhead floor was added or dropped without a cited value here"
    for key, cited in CITED_OVERHEAD.items():
        assert found[key] == pytest.approx(cited, rel=1e-9), key


def test_every_gpu_has_a_cuda_launch_floor_of_half_to_fifty_microseconds():
    gpus = [d for d in ALL if d.kind == "gpu"]
    assert GPUS_WITHOUT_LAUNCH_SOURCE <= {d.name for d in gpus}
    for d in gpus:
        floor = d.overhead_floor("cuda-launch")
        if d.name in GPUS_WITHOUT_LAUNCH_SOURCE:
            assert floor is None, f"{d.name} now has a launch floor: drop it from GPUS_WITHOUT_LAUNCH_SOURCE"
            continue
        assert floor is not None, f"{d.name} has no cited cuda-launch floor"
        assert 0.5 * US <= floor.seconds <= 50 * US, (d.name, floor.seconds)
        graph = d.overhead_floor("cuda-graph")
        if graph is not None:
            # a kernel replayed inside a graph costs less than one launched on its own
            assert 0 < graph.seconds < floor.seconds, (d.name, graph.seconds)


def test_every_cpu_has_a_torch_eager_floor_of_a_tenth_to_a_hundred_microseconds():
    cpus = [d for d in ALL if d.kind == "cpu"]
    assert cpus
    for d in cpus:
        floor = d.overhead_floor("torch-eager")
        assert floor is not None, f"{d.name} has no cited torch-eager floor"
        assert 0.1 * US <= floor.seconds <= 100 * US, (d.name, floor.seconds)
        np_floor = d.overhead_floor("numpy")
        if np_floor is not None:
            assert 10e-9 <= np_floor.seconds <= 10 * US, (d.name, np_floor.seconds)


def test_forecast_fields_survive_a_round_trip():
    d = get_device("h100")
    again = type(d).from_dict(json.loads(d.to_json()))
    assert again.achievable_compute == d.achievable_compute
    assert again.achievable_memory == d.achievable_memory
    assert again.overhead == d.overhead


#: new devices no published kernel-level table covers (the MAMF table covers B200, B300, GB200 and MI355X, cuDNN's SDPA
#: benchmark the GB300 (with the B300's GEMM rows carried over): theirs are cited calibrations now,
#: tests/test_blackwell_calibrations.py)
NEW_DEVICES = ("h20", "rtx-pro-6000", "tpu-v6e", "tpu-v7")


@pytest.mark.parametrize("name", NEW_DEVICES)
def test_a_device_without_a_cited_calibration_forecasts_its_bound(name: str):
    """No cited kernel table exists for these devices (yet): efficiency 1 and no sustained figures, so every
    op's forecast work is its roofline bound (the overhead floor comes on top), and the forecast says so."""
    import numpy as np

    from roofline.engine.analysis import analyze
    from roofline.engine.forecast import effective_calibration
    from roofline.frontends.llm import from_llm

    dev = get_device(name)
    assert effective_calibration(dev) is None
    a = analyze(from_llm("llama-2-7b", phase="decode", batch=8, context=1024), dev, forecast=True)
    f = a.forecast
    assert np.allclose(f.work, a.time)
    assert any("no calibration" in n for n in f.notes)
