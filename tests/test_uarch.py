from __future__ import annotations

import pytest

from roofline.bench.uarch import SOURCES, UARCHES, Uarch, identify, identify_cpuinfo, parse_cpuinfo

X86_FLAGS = "fpu vme de pse tsc msr pae mce cx8 apic sep sse sse2 ssse3 fma cx16 sse4_1 sse4_2 avx f16c avx2"

ICELAKE_SP = f"""processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 106
model name\t: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz
stepping\t: 6
flags\t\t: {X86_FLAGS} avx512f avx512dq avx512cd avx512bw avx512vl
bugs\t\t: spectre_v1 spectre_v2

processor\t: 1
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
flags\t\t: fpu
"""

AARCH64_N1 = """processor\t: 0
BogoMIPS\t: 243.75
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x3
CPU part\t: 0xd0c
CPU revision\t: 1

processor\t: 1
CPU implementer\t: 0x41
CPU part\t: 0xd40
"""


def _x86(vendor: str, family: int, model: int, flags: str) -> str:
    return f"processor : 0\nvendor_id : {vendor}\ncpu family : {family}\nmodel : {model}\nflags : {flags}\n"


def _ident(text: str) -> Uarch | None:
    info = parse_cpuinfo(text)
    return identify(info["vendor_id"], info["family"], info["model"], info["flags"], info.get("cpu_part", ""))


def test_parse_icelake_sp_first_block_only():
    info = parse_cpuinfo(ICELAKE_SP)
    assert info["vendor_id"] == "GenuineIntel"
    assert info["family"] == 6 and info["model"] == 106
    assert {"avx512f", "fma", "avx2"} <= info["flags"]
    assert info["model_name"].startswith("Intel(R) Xeon(R) Platinum 8375C")
    assert "cpu_part" not in info
    u = _ident(ICELAKE_SP)
    assert u is not None and u.name == "Intel Ice Lake-SP"
    assert (u.fma_pipes, u.vector_bits) == (2, 512)
    assert u.flops_per_cycle(64) == 32 and u.flops_per_cycle(32) == 64


def test_minimal_icelake_sp_text():
    u = _ident("vendor_id : GenuineIntel\ncpu family : 6\nmodel : 106\nflags : avx512f fma avx2\n")
    assert u is not None and (u.fma_pipes, u.vector_bits) == (2, 512)


@pytest.mark.parametrize("model, name", [(1, "AMD Zen 3"), (0x21, "AMD Zen 3"), (17, "AMD Zen 4"),
                                         (0x61, "AMD Zen 4"), (0xA0, "AMD Zen 4")])
def test_amd_family_19h(model, name):
    u = _ident(_x86("AuthenticAMD", 25, model, X86_FLAGS + " avx512f"))
    assert u is not None and u.name == name
    assert (u.fma_pipes, u.vector_bits) == (2, 256)


def test_amd_zen_zen2_zen5():
    assert (_ident(_x86("AuthenticAMD", 23, 1, X86_FLAGS)).vector_bits) == 128  # Naples / Summit Ridge
    assert (_ident(_x86("AuthenticAMD", 23, 0x31, X86_FLAGS)).vector_bits) == 256  # Rome
    z5 = _ident(_x86("AuthenticAMD", 26, 0x44, X86_FLAGS + " avx512f"))  # Granite Ridge
    assert z5 is not None and (z5.fma_pipes, z5.vector_bits) == (2, 512)
    z5m = _ident(_x86("AuthenticAMD", 26, 0x24, X86_FLAGS + " avx512f"))  # Strix Point
    assert z5m is not None and z5m.vector_bits == 256


def test_haswell_without_avx512():
    text = _x86("GenuineIntel", 6, 63, X86_FLAGS)
    assert "avx512f" not in parse_cpuinfo(text)["flags"]
    u = _ident(text)
    assert u is not None and u.name == "Intel Haswell"
    assert (u.fma_pipes, u.vector_bits) == (2, 256)


def test_avx512_model_without_avx512f_flag_gets_256():
    for model in (85, 106, 125, 143):
        u = _ident(_x86("GenuineIntel", 6, model, X86_FLAGS))
        assert u is not None and (u.fma_pipes, u.vector_bits) == (2, 256)
    sp = _ident(_x86("GenuineIntel", 6, 85, X86_FLAGS + " avx512f"))
    assert (sp.fma_pipes, sp.vector_bits) == (2, 512) and "one 512-bit FMA" in sp.note
    icl = _ident(_x86("GenuineIntel", 6, 140, X86_FLAGS + " avx512f"))  # Tiger Lake
    assert (icl.fma_pipes, icl.vector_bits) == (1, 512)


def test_alder_lake_is_2x256():
    for model in (151, 154, 183, 186, 191):
        u = _ident(_x86("GenuineIntel", 6, model, X86_FLAGS))
        assert u is not None and (u.fma_pipes, u.vector_bits) == (2, 256)


def test_no_fma_or_avx2_is_none():
    assert _ident(_x86("GenuineIntel", 6, 63, "fpu sse sse2 avx")) is None
    assert identify("GenuineIntel", 6, 63, set()) is None


def test_aarch64_neoverse_n1():
    info = parse_cpuinfo(AARCH64_N1)
    assert info["vendor_id"] == "0x41" and info["cpu_part"] == "0xd0c"
    assert "asimd" in info["flags"] and "family" not in info
    u = identify(info["vendor_id"], info.get("family", -1), info.get("model", -1), info["flags"], info["cpu_part"])
    assert u is not None and u.name == "Arm Neoverse N1"
    assert (u.fma_pipes, u.vector_bits) == (2, 128)
    assert identify_cpuinfo(AARCH64_N1) == u


@pytest.mark.parametrize("part, pipes, bits", [("0xd40", 4, 128), ("0xd49", 2, 128), ("0xd4f", 4, 128),
                                               ("d4f", 4, 128)])
def test_other_neoverse(part, pipes, bits):
    u = identify("0x41", -1, -1, set(), part)
    assert u is not None and (u.fma_pipes, u.vector_bits) == (pipes, bits)


def test_unknown_cpus_are_none():
    assert _ident(_x86("GenuineIntel", 6, 999, X86_FLAGS)) is None
    assert _ident(_x86("AuthenticAMD", 21, 2, X86_FLAGS)) is None  # Bulldozer family 15h
    assert _ident(_x86("CentaurHauls", 6, 15, X86_FLAGS)) is None
    assert identify("0x41", -1, -1, set(), "0xd08") is None  # Cortex-A72
    assert identify("0x51", -1, -1, set(), "0xd0c") is None  # not Arm Ltd
    assert identify("", 0, 0, set()) is None
    assert identify_cpuinfo("") is None


@pytest.mark.parametrize("junk", ["", "\n\n", "garbage ::: here\n\x00\xff", "model : notanumber\n",
                                  "cpu family : \nflags\n", "::::", "processor : 0\n"])
def test_junk_is_tolerated(junk):
    info = parse_cpuinfo(junk)
    assert isinstance(info, dict)
    assert "family" not in info and "model" not in info


def test_pure_junk_is_empty():
    assert parse_cpuinfo("this is not cpuinfo\nat all\n") == {}
    assert parse_cpuinfo("") == {}
    assert parse_cpuinfo(None) == {}  # type: ignore[arg-type]


def test_every_source_exists():
    assert UARCHES
    for u in UARCHES.values():
        assert u.source in SOURCES, u
        src = SOURCES[u.source]
        assert src["url"].startswith("https://") and src["title"] and src["where"]
        assert u.fma_pipes in (1, 2, 4) and u.vector_bits in (128, 256, 512)
