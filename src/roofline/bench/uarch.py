"""A small, cited table of CPU microarchitectures for the theoretical (spec) FLOP/s of a CPU.

Peak FLOP/s = cores x clock x ``fma_pipes`` x (``vector_bits`` / bits per element) x 2.

Each :class:`Uarch` names its source in :data:`SOURCES` (title, address, and where the figure was
confirmed).  A source whose ``where`` says "NOT confirmed in a stored copy" carries a figure that
is kept from general knowledge but was not checked against a stored copy of a document.

:func:`parse_cpuinfo` reads the first processor block of ``/proc/cpuinfo`` (x86 or aarch64);
:func:`identify` maps its fields to a :class:`Uarch`.

>>> info = parse_cpuinfo("vendor_id : GenuineIntel\\ncpu family : 6\\nmodel : 106\\nflags : fma avx2 avx512f\\n")
>>> u = identify(info["vendor_id"], info["family"], info["model"], info["flags"])
>>> (u.name, u.fma_pipes, u.vector_bits)
('Intel Ice Lake-SP', 2, 512)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

NOT_CONFIRMED = "NOT confirmed in a stored copy"


@dataclass(frozen=True)
class Uarch:
    """FMA resources of one core of a microarchitecture."""

    name: str  # e.g. "Intel Ice Lake-SP"
    fma_pipes: int  # FMA-capable vector pipes per core, each starting one FMA per cycle at `vector_bits`
    vector_bits: int  # width of each of those FMA operations (128, 256, 512)
    source: str  # key into SOURCES
    note: str = ""

    def flops_per_cycle(self, element_bits: int = 64) -> int:
        """FLOPs per cycle per core (an FMA counts 2) for elements of ``element_bits`` (64: fp64)."""
        return self.fma_pipes * (self.vector_bits // element_bits) * 2


_LLVM = "https://github.com/llvm/llvm-project/blob/main/llvm/lib/Target"

SOURCES: dict[str, dict[str, str]] = {
    "llvm-haswell": {
        "title": "LLVM X86SchedHaswell.td (Haswell machine model)",
        "url": f"{_LLVM}/X86/X86SchedHaswell.td",
        "where": "WriteFMA/WriteFMAX/WriteFMAY -> [HWPort01]: FMA, including 256-bit (YMM), "
                 "issues on port 0 or port 1, 1 uop.",
    },
    "llvm-broadwell": {
        "title": "LLVM X86SchedBroadwell.td (Broadwell machine model)",
        "url": f"{_LLVM}/X86/X86SchedBroadwell.td",
        "where": "WriteFMA/WriteFMAX/WriteFMAY -> [BWPort01], 1 uop; WriteFMAZ unsupported.",
    },
    "llvm-skylake-client": {
        "title": "LLVM X86SchedSkylakeClient.td (Skylake client machine model)",
        "url": f"{_LLVM}/X86/X86SchedSkylakeClient.td",
        "where": "WriteFMA/WriteFMAX/WriteFMAY -> [SKLPort01], 1 uop; WriteFMAZ unsupported.",
    },
    "llvm-skylake-server": {
        "title": "LLVM X86SchedSkylakeServer.td (Skylake-SP machine model); vpu-count README (Intel)",
        "url": f"{_LLVM}/X86/X86SchedSkylakeServer.td",
        "where": "WriteFMAY -> [SKXPort01] and WriteFMAZ -> [SKXPort05], 1 uop each: two 512-bit FMAs per "
                 "cycle (ports 0+1 fused, and port 5). One-FMA SKUs: github.com/jeffhammond/vpu-count README "
                 "('Number of AVX-512 FMAs' per Xeon Scalable model, e.g. Platinum 8180: 2) and "
                 "hpc.rz.rptu.de/Tutorials/AVX/vechowto.shtml (port-5 512-bit FMA only on Gold 61xx, "
                 "Gold 5122 and Platinum).",
    },
    "agner-tiger-lake": {
        "title": "Agner Fog, The microarchitecture of Intel, AMD and VIA CPUs (Ice Lake / Tiger Lake chapter)",
        "url": "https://www.agner.org/optimize/microarchitecture.pdf",
        "where": "Execution-port table for Tiger Lake (Ice Lake): ports 0 and 1 'floating point add, multiply, "
                 "FMA. 256 bits', port 5 has no FMA; confirmed in a stored copy of that table "
                 "(github.com/MzaxnaV/handmadehero_zig, misc/llvm_mca_outputs.md), not in the PDF itself. "
                 "512-bit FMA = ports 0+1 fused (one per cycle).",
    },
    "iotech-icelake-sp": {
        "title": "io-tech.fi: Intel esitteli ... Ice Lake-SP:n teknisiä ominaisuuksia (Hot Chips 32 report)",
        "url": "https://www.io-tech.fi/uutinen/intel-esitteli-10-nanometrin-prosessin-palvelimiin-tuovan-"
               "ice-lake-spn-teknisia-ominaisuuksia/",
        "where": "'Sunny Coven palvelinversio on saanut lisäksi toisen FMA-yksikön' (the server Sunny Cove has "
                 "a second FMA unit), i.e. 2 x 512 versus 1 x 512 on client Ice Lake.",
    },
    "intel-optimization-manual": {
        "title": "Intel 64 and IA-32 Architectures Optimization Reference Manual",
        "url": "https://www.intel.com/content/www/us/en/developer/articles/technical/"
               "intel-64-ia-32-architectures-optimization-reference-manual.html",
        "where": f"{NOT_CONFIRMED}. Two 512-bit FMA units per core on Sapphire/Emerald/Granite Rapids Xeon is "
                 "general knowledge; LLVM's machine-generated X86SchedSapphireRapids.td lists WriteFMAZ on "
                 "port 0 only, so treat 2 x 512 as unverified here.",
    },
    "llvm-alderlake-p": {
        "title": "LLVM X86SchedAlderlakeP.td (Golden Cove P-core machine model)",
        "url": f"{_LLVM}/X86/X86SchedAlderlakeP.td",
        "where": "WriteFMA/WriteFMAX/WriteFMAY -> [ADLPPort00_01], 1 uop; WriteFMAZ unsupported "
                 "(AVX-512 disabled on hybrid parts).",
    },
    "llvm-znver1": {
        "title": "LLVM X86ScheduleZnver1.td (Zen machine model, after AMD SOG for Family 17h)",
        "url": f"{_LLVM}/X86/X86ScheduleZnver1.td",
        "where": "WriteFMA/WriteFMAX/WriteFMAY -> [ZnFPU03] (two pipes); 'Operations on 256-bit data types "
                 "are cracked into two COPs' on 128-bit registers (AMD SOG Family 17h).",
    },
    "flatlib-zen3": {
        "title": "flatlib wlog: Ryzen Zen3 vfpbench (Ryzen 5 5560U measurement)",
        "url": "https://wlog.flatlib.jp/2024/01/13/ryzen-zen3-vfpbench/",
        "where": "'実行ユニットは Zen2 同様 256bit の乗算(積和) x2 + 加算 x2' (execution units, as in Zen 2: "
                 "two 256-bit multiply/FMA + two add); measured vfmaddps ymm peak ~ 2 FMA/cycle.",
    },
    "llvm-znver4": {
        "title": "LLVM X86ScheduleZnver4.td (after AMD SOG Family 19h Zen4, 57647)",
        "url": f"{_LLVM}/X86/X86ScheduleZnver4.td",
        "where": "SOG Zen4 2.11.1: (v)FMA* on FP0/FP1 (Zn4FPFMul01); WriteFMAY ReleaseAtCycles [1], "
                 "WriteFMAZ [2]: one 512-bit FMA per cycle = 2 x 256. numberworld.org Zen5 teardown: Zen4 "
                 "'double-pumping' 512-bit instructions into the 256-bit hardware.",
    },
    "amd-zen5": {
        "title": "AMD Zen 5 Tech Day slides (thefpsreview.com); numberworld.org Zen5 AVX512 teardown; "
                 "LLVM X86ScheduleZnver5.td",
        "url": "https://www.thefpsreview.com/2024/07/18/a-closer-look-at-amds-ryzen-9000-series-zen-5-"
               "rdna-3-5-xdna-architecture/2",
        "where": "'512-bit AI Datapath with AVX-512 with full 512-bit data path'; numberworld.org/blogs/"
                 "2024_8_7_zen5_avx512_teardown (widened from Zen4's 2 x 256); LLVM Znver5 (SOG 58455): "
                 "(v)FMA* on FP0/FP1. Mobile Strix Point: gamebastion.com report of David Huang's tests "
                 "(reduced vector pipelines, 512-bit throughput unchanged from Zen 4). The mobile model "
                 f"range 0x20-0x2f used here is {NOT_CONFIRMED}.",
    },
    "llvm-neoverse-n1": {
        "title": "LLVM AArch64SchedNeoverseN1.td (after Arm Neoverse N1 Software Optimization Guide)",
        "url": f"{_LLVM}/AArch64/AArch64SchedNeoverseN1.td",
        "where": "Issue ports N1UnitV0, N1UnitV1 'FP/ASIMD 0/1' (group N1UnitV): two 128-bit FP/ASIMD pipes.",
    },
    "llvm-neoverse-v1": {
        "title": "LLVM AArch64SchedNeoverseV1.td (after Arm Neoverse V1 SWOG); AnandTech Neoverse V1/N2",
        "url": f"{_LLVM}/AArch64/AArch64SchedNeoverseV1.td",
        "where": "Issue ports V1UnitV0..V1UnitV3 'FP/ASIMD 0..3': four 128-bit pipes; anandtech.com/show/16640 "
                 "page 2: 'an SVE capable processor, with two native 256b SIMD pipelines'.",
    },
    "llvm-neoverse-n2": {
        "title": "LLVM AArch64SchedNeoverseN2.td (after Arm Neoverse N2 SWOG)",
        "url": f"{_LLVM}/AArch64/AArch64SchedNeoverseN2.td",
        "where": "Issue ports N2UnitV0, N2UnitV1 'FP/ASIMD 0/1' (group N2UnitV): two 128-bit pipes.",
    },
    "llvm-neoverse-v2": {
        "title": "LLVM AArch64SchedNeoverseV2.td (from the Neoverse V2 Software Optimisation Guide)",
        "url": f"{_LLVM}/AArch64/AArch64SchedNeoverseV2.td",
        "where": "Issue ports V2UnitV0..V2UnitV3 'FP/ASIMD 0/1/2/3' (group V2UnitV): four 128-bit pipes.",
    },
}

UARCHES: dict[str, Uarch] = {
    "haswell": Uarch("Intel Haswell", 2, 256, "llvm-haswell"),
    "broadwell": Uarch("Intel Broadwell", 2, 256, "llvm-broadwell"),
    "skylake": Uarch("Intel Skylake (client; also Kaby/Coffee/Whiskey/Comet Lake)", 2, 256, "llvm-skylake-client"),
    "skylake-sp": Uarch(
        "Intel Skylake-SP / Cascade Lake / Cooper Lake", 2, 512, "llvm-skylake-server",
        "Xeon Bronze/Silver and some Gold 5xxx SKUs have one 512-bit FMA unit (half this peak); "
        "Gold 5122, Gold 6xxx and Platinum have two"),
    "icelake-client": Uarch(
        "Intel Ice Lake / Tiger Lake (client)", 1, 512, "agner-tiger-lake",
        "one 512-bit FMA per cycle (ports 0+1 fused); 256-bit code runs 2 x 256, the same peak"),
    "icelake-sp": Uarch("Intel Ice Lake-SP", 2, 512, "iotech-icelake-sp"),
    "sapphire-rapids": Uarch("Intel Sapphire Rapids", 2, 512, "intel-optimization-manual"),
    "emerald-rapids": Uarch("Intel Emerald Rapids", 2, 512, "intel-optimization-manual"),
    "granite-rapids": Uarch("Intel Granite Rapids", 2, 512, "intel-optimization-manual"),
    "alderlake-p": Uarch(
        "Intel Alder Lake / Raptor Lake (P-core)", 2, 256, "llvm-alderlake-p",
        "AVX-512 disabled; E-cores (Gracemont) are slower and not modelled here"),
    "zen": Uarch("AMD Zen / Zen+", 2, 128, "llvm-znver1", "256-bit AVX ops are split into two 128-bit ops"),
    "zen2": Uarch("AMD Zen 2", 2, 256, "flatlib-zen3"),
    "zen3": Uarch("AMD Zen 3", 2, 256, "flatlib-zen3"),
    "zen4": Uarch(
        "AMD Zen 4", 2, 256, "llvm-znver4",
        "512-bit ops run on the 256-bit units (one 512-bit FMA per cycle = 2 x 256)"),
    "zen5": Uarch(
        "AMD Zen 5", 2, 512, "amd-zen5",
        "desktop/server: full 512-bit datapath; mobile Zen 5 (Strix Point etc.) has 256-bit units"),
    "zen5-mobile": Uarch(
        "AMD Zen 5 (mobile)", 2, 256, "amd-zen5", "512-bit ops run on 256-bit units, as on Zen 4"),
    "neoverse-n1": Uarch("Arm Neoverse N1", 2, 128, "llvm-neoverse-n1"),
    "neoverse-v1": Uarch(
        "Arm Neoverse V1", 4, 128, "llvm-neoverse-v1",
        "4 x 128-bit NEON or 2 x 256-bit SVE: the same peak"),
    "neoverse-n2": Uarch("Arm Neoverse N2", 2, 128, "llvm-neoverse-n2"),
    "neoverse-v2": Uarch("Arm Neoverse V2", 4, 128, "llvm-neoverse-v2", "SVE vectors are 128-bit on V2"),
}

# Intel family 6 model numbers, as /proc/cpuinfo prints them (decimal).
_INTEL_MODELS: dict[int, str] = {
    60: "haswell", 63: "haswell", 69: "haswell", 70: "haswell",  # 0x3C 0x3F 0x45 0x46
    61: "broadwell", 71: "broadwell", 79: "broadwell", 86: "broadwell",  # 0x3D 0x47 0x4F 0x56
    78: "skylake", 94: "skylake",  # 0x4E 0x5E
    142: "skylake", 158: "skylake", 165: "skylake", 166: "skylake",  # 0x8E 0x9E 0xA5 0xA6 Kaby/Coffee/Comet
    85: "skylake-sp",  # 0x55 Skylake-SP, Cascade Lake, Cooper Lake
    125: "icelake-client", 126: "icelake-client",  # 0x7D 0x7E
    140: "icelake-client", 141: "icelake-client",  # 0x8C 0x8D Tiger Lake
    106: "icelake-sp", 108: "icelake-sp",  # 0x6A 0x6C
    143: "sapphire-rapids",  # 0x8F
    207: "emerald-rapids",  # 0xCF
    173: "granite-rapids", 174: "granite-rapids",  # 0xAD 0xAE
    151: "alderlake-p", 154: "alderlake-p",  # 0x97 0x9A Alder Lake
    183: "alderlake-p", 186: "alderlake-p", 191: "alderlake-p",  # 0xB7 0xBA 0xBF Raptor Lake
}

# Arm Ltd (implementer 0x41) CPU part numbers.
_ARM_PARTS: dict[int, str] = {
    0xD0C: "neoverse-n1",
    0xD40: "neoverse-v1",
    0xD49: "neoverse-n2",
    0xD4F: "neoverse-v2",
}


def _amd(family: int, model: int) -> str | None:
    if family == 0x17:
        return "zen2" if model >= 0x30 else "zen"
    if family == 0x19:
        if 0x10 <= model <= 0x1F or 0x60 <= model <= 0x7F or 0xA0 <= model <= 0xAF:
            return "zen4"
        if 0x00 <= model <= 0x0F or 0x20 <= model <= 0x5F:
            return "zen3"
        return None
    if family == 0x1A:
        return "zen5-mobile" if 0x20 <= model <= 0x2F else "zen5"
    return None


def _to_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip().lower()
    if not text:
        return None
    try:
        return int(text, 16) if text.startswith("0x") else int(text, 10)
    except ValueError:
        return None


def _hex(value: Any) -> int | None:
    """A 'CPU part' value ('0xd0c', 'd0c' or an int) as an int."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value or "").strip().lower()
    try:
        return int(text, 16) if text else None
    except ValueError:
        return None


def identify(vendor_id: str, family: int, model: int, flags: set[str], cpu_part: str = "") -> Uarch | None:
    """The microarchitecture from /proc/cpuinfo fields (x86: vendor_id GenuineIntel/AuthenticAMD, 'cpu family',
    'model', 'flags'; ARM: 'CPU implementer' (vendor_id passed as e.g. '0x41'), 'CPU part' as cpu_part).
    None when unknown.

    An x86 CPU whose flags lack ``fma`` or ``avx2`` gets None (no entry here covers it); one whose flags
    lack ``avx512f`` never gets 512-bit width (it is given 2 x 256: the 256-bit FMA ports).
    """
    vendor = str(vendor_id or "").strip()
    flag_set = {str(f).lower() for f in (flags or ())}
    if vendor in ("GenuineIntel", "AuthenticAMD"):
        fam, mod = _to_int(family), _to_int(model)
        if fam is None or mod is None or not {"fma", "avx2"} <= flag_set:
            return None
        if vendor == "AuthenticAMD":
            key = _amd(fam, mod)
        else:
            key = _INTEL_MODELS.get(mod) if fam == 6 else None
        if key is None:
            return None
        uarch = UARCHES[key]
        if uarch.vector_bits > 256 and "avx512f" not in flag_set:
            note = "avx512f absent: counted as 2 x 256-bit FMA" + (f"; {uarch.note}" if uarch.note else "")
            uarch = replace(uarch, fma_pipes=2, vector_bits=256, note=note)
        return uarch
    implementer, part = _to_int(vendor), _hex(cpu_part)
    if implementer == 0x41 and part in _ARM_PARTS:
        return UARCHES[_ARM_PARTS[part]]
    return None


_FIELDS = {
    "vendor_id": "vendor_id",
    "cpu implementer": "vendor_id",
    "cpu family": "family",
    "model": "model",
    "model name": "model_name",
    "flags": "flags",
    "features": "flags",
    "cpu part": "cpu_part",
    "cpu mhz": "mhz",
}


def parse_cpuinfo(text: str) -> dict[str, Any]:
    """vendor_id, family (int), model (int), flags (set), cpu_part, model_name from the FIRST processor block of
    /proc/cpuinfo text (x86 and aarch64 formats; aarch64 uses 'CPU implementer', 'CPU part', 'Features').
    Missing fields absent; tolerant of junk."""
    if not isinstance(text, str):
        return {}
    out: dict[str, Any] = {}
    seen_processor = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            if out:  # a blank line ends the first block that gave us fields
                break
            continue
        if ":" not in line:
            continue
        key, _, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key == "processor":
            if seen_processor and out:
                break  # the second processor's block begins (no blank line between blocks)
            seen_processor = True
            continue
        field = _FIELDS.get(key)
        if field is None or field in out:
            continue
        if field in ("family", "model"):
            number = _to_int(value)
            if number is not None:
                out[field] = number
        elif field == "mhz":
            try:
                out[field] = float(value)
            except ValueError:
                pass
        elif field == "flags":
            out[field] = set(value.lower().split())
        elif field == "vendor_id":
            out[field] = value.lower() if value.lower().startswith("0x") else value
        elif field == "cpu_part":
            out[field] = value.lower()
        elif value:
            out[field] = value
    return out


def identify_cpuinfo(text: str) -> Uarch | None:
    """:func:`identify` applied to :func:`parse_cpuinfo` of ``text``."""
    info = parse_cpuinfo(text)
    if "vendor_id" not in info:
        return None
    return identify(info["vendor_id"], info.get("family", -1), info.get("model", -1), info.get("flags", set()),
                    info.get("cpu_part", ""))


#: Boost (maximum single-core) clocks of CPU models a VM's /proc/cpuinfo names, in GHz, for the spec roof's
#: clock where cpufreq is absent (a VM shows the nominal clock as 'cpu MHz'). Keyed by the model name
#: /proc/cpuinfo prints. (base GHz, boost GHz, source key).
BOOST_CLOCKS: dict[str, tuple[float, float, str]] = {
    "AMD EPYC 7763 64-Core Processor": (2.45, 3.5, "amd-epyc-7003"),
    "AMD EPYC 7713 64-Core Processor": (2.0, 3.675, "amd-epyc-7003"),
    "AMD EPYC 7543 32-Core Processor": (2.8, 3.7, "amd-epyc-7003"),
    "AMD EPYC 7513 32-Core Processor": (2.6, 3.65, "amd-epyc-7003"),
    "AMD EPYC 75F3 32-Core Processor": (2.95, 4.0, "amd-epyc-7003"),
}

SOURCES["amd-epyc-7003"] = {
    "title": "AMD EPYC 7003 series product pages (e.g. amd.com/en/products/cpu/amd-epyc-7763); "
             "figures as tabulated in Techgage's Milan launch article",
    "url": "https://www.amd.com/en/products/processors/server/epyc/7003-series.html",
    "where": "Techgage 'AMD EPYC Milan launch' table, Clock (Peak): 7763 2.45 GHz (3.5), 7713 2.0 GHz (3.675), "
             "7543 2.8 GHz (3.7), 7513 2.6 GHz (3.65); anandtech.com/show/16529 page 2: 75F3 2950/4000 MHz. "
             "The amd.com pages themselves are NOT confirmed in a stored copy.",
}

SOURCES["bf16-dot"] = {
    "title": "Intel Intrinsics Guide, _mm512_dpbf16_ps (VDPBF16PS); Arm A64 BFDOT; Intel AMX overview",
    "url": "https://www.intel.com/content/www/us/en/docs/intrinsics-guide/index.html",
    "where": "VDPBF16PS / BFDOT: each fp32 lane accumulates the products of 2 bf16 pairs (2 FMAs per lane per "
             "instruction, twice an fp32 FMA's FLOPs at the same width). AMX-BF16: 1024 bf16 ops per cycle per "
             "core against 64 fp32 FLOPs per cycle of two 512-bit FMA units (16x): the per-instruction ratio is "
             "the ISA's; equal instruction throughput and the AMX figure are NOT confirmed in a stored copy.",
}


def boost_clock(model_name: str) -> tuple[float, str] | None:
    """(boost clock in Hz, its source text) for a model name in :data:`BOOST_CLOCKS`, else None.

    >>> boost_clock("AMD EPYC 7763 64-Core Processor")[0]
    3500000000.0
    >>> boost_clock("AMD EPYC") is None
    True
    """
    entry = BOOST_CLOCKS.get(model_name.strip())
    if entry is None:
        return None
    _, boost, key = entry
    return boost * 1e9, SOURCES[key]["title"]


def bf16_dot_ratio(flags: set[str]) -> tuple[float, str] | None:
    """The ISA's bf16 dot-product FLOPs per fp32 FMA FLOP at the same width (:data:`SOURCES` 'bf16-dot'), and
    the instruction it comes from; None without native bf16 arithmetic (bf16 then runs as fp32).

    >>> bf16_dot_ratio({"avx512f", "avx512_bf16"})[0], bf16_dot_ratio({"amx_bf16"})[0], bf16_dot_ratio({"avx2"})
    (2.0, 16.0, None)
    """
    f = {x.lower() for x in flags}
    if "amx_bf16" in f:
        return 16.0, "AMX-BF16 tiles (TDPBF16PS)"
    if "avx512_bf16" in f:
        return 2.0, "AVX512-BF16 VDPBF16PS"
    if "bf16" in f:
        return 2.0, "Arm BFDOT"
    return None
