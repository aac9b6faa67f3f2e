"""Tests never read or write the user's bench cache: each gets an empty one unless it sets its own.  Subprocesses run
with ResourceWarning an error; tests/hostile is marked ``hostile``."""

from pathlib import Path

import pytest

HOSTILE = Path(__file__).parent / "hostile"


def pytest_collection_modifyitems(config, items):
    """Every test under tests/hostile is marked ``hostile``: the whole suite (CI's one command) runs the corpus, and
    ``-m "not hostile"`` leaves it out of a quick local run, ``-m hostile`` runs it alone."""
    for item in items:
        if HOSTILE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.hostile)


@pytest.fixture(autouse=True)
def _private_bench_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path_factory.mktemp("roofline-cache")))
    # a CLI (or any Python) run in a subprocess fails on a file left open, as the suite does (pyproject)
    monkeypatch.setenv("PYTHONWARNINGS", "error::ResourceWarning")


# -- the CPU that ISA-dependent code sees, forced to each family people have (roofline.bench.host) -----------

_X86 = "fpu sse sse2 ssse3 sse4_1 sse4_2 avx f16c fma avx2 bmi2"
_AVX512 = " avx512f avx512dq avx512cd avx512bw avx512vl"


def _cpu(arch, vendor, family, model, flags, name, max_mhz, part=""):
    from roofline.bench.host import HostCpu

    return HostCpu(arch, vendor, family, model, part, name, frozenset(flags.split()), None, max_mhz)


#: one CPU per ISA family: (the CPU, what the decisions must be, each derived by hand from the family's
#: manuals and roofline.bench.uarch).  "vector" is the FMA kernel's (bits, chains) (roofline.bench.fma's
#: table); "fp64_spec" is the spec roof on 2 cores at max_mhz: 2 x GHz x FMA pipes x fp64 lanes x 2.
CPU_FAMILIES = {
    # AMD EPYC 7R13 (Zen 3): 2 x 256-bit FMA pipes, 4 fp64 lanes: 2 x 3.0 x 2 x 4 x 2 = 96 GFLOP/s
    "avx2": (_cpu("x86_64", "AuthenticAMD", 25, 1, _X86, "AMD EPYC 7R13 Processor", 3000.0),
             {"native": ("fp64", "fp32"), "vector": (256, 12), "fp64_spec": 96e9}),
    # Intel Xeon Ice Lake-SP: 2 x 512-bit FMA pipes, 8 lanes (VNNI is int8, not bf16): 2 x 3.5 x 2 x 8 x 2 = 224
    "avx512": (_cpu("x86_64", "GenuineIntel", 6, 106, _X86 + _AVX512 + " avx512_vnni",
                    "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", 3500.0),
               {"native": ("fp64", "fp32"), "vector": (512, 24), "fp64_spec": 224e9}),
    # AMD EPYC 9R45 (Zen 5, the CPU issue 25 failed on): full 512-bit datapath, 2 pipes, 8 lanes,
    # AVX512-BF16: 2 x 4.5 x 2 x 8 x 2 = 288
    "avx512_bf16": (_cpu("x86_64", "AuthenticAMD", 26, 2, _X86 + _AVX512 + " avx512_vnni avx512_bf16",
                         "AMD EPYC 9R45 192-Core Processor", 4500.0),
                    {"native": ("fp64", "fp32", "bf16"), "vector": (512, 24), "fp64_spec": 288e9}),
    # Intel Sapphire Rapids: AMX-BF16 and AVX512-FP16; 2 x 512-bit pipes: 2 x 3.8 x 2 x 8 x 2 = 243.2
    "amx": (_cpu("x86_64", "GenuineIntel", 6, 143,
                 _X86 + _AVX512 + " avx512_vnni avx512_bf16 avx512_fp16 amx_tile amx_bf16 amx_int8",
                 "Intel(R) Xeon(R) Platinum 8480+", 3800.0),
            {"native": ("fp64", "fp32", "bf16", "fp16"), "vector": (512, 24), "fp64_spec": 243.2e9}),
    # Arm Neoverse V1 (AWS Graviton3): 4 x 128-bit NEON pipes, 2 fp64 lanes, bf16 and fp16 arithmetic:
    # 2 x 2.6 x 4 x 2 x 2 = 83.2
    "arm": (_cpu("aarch64", "0x41", -1, -1, "fp asimd evtstrm aes crc32 atomics fphp asimdhp sve bf16 i8mm",
                 "", 2600.0, part="0xd40"),
            {"native": ("fp64", "fp32", "bf16", "fp16"), "vector": (128, 24), "fp64_spec": 83.2e9}),
}


@pytest.fixture(params=sorted(CPU_FAMILIES))
def cpu_family(request):
    """(family name, the forced CPU, its expected decisions): roofline.bench.host.host_cpu() returns the CPU
    for the test's duration, whatever the host is.  Kernels are not compiled for a forced CPU."""
    from roofline.bench import host

    cpu, expected = CPU_FAMILIES[request.param]
    with host.forced(cpu):
        yield request.param, cpu, expected
