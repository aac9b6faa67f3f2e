"""What the CPU could do on paper, and which precisions it computes natively.

The **spec roof** per precision is ``cores x clock x FMA pipes x lanes x 2``
(one FMA = 2 FLOPs), from the CPU's identity (:mod:`roofline.bench.uarch`,
a small cited table of microarchitectures) and its clock.  The choices, stated
in every derivation:

- *cores*: the CPUs this process may run on (``sched_getaffinity``; on a VM,
  vCPUs), counted once per physical core where the OS reports SMT siblings
  (two hyper-threads share one core's FMA pipes);
- *clock*: the highest clock the OS reports (cpufreq's maximum, a
  single-core turbo that all cores together may not hold), else the boost
  clock of a model the microarchitecture table knows (a VM's /proc/cpuinfo
  shows only the nominal clock), else the model name's ``@ X GHz``, else
  ``cpu MHz`` from /proc/cpuinfo; which one is said (:func:`clock_sources`).
  A roof above 110 % of spec is explained by a stated clock within 5 %, or,
  with only /proc/cpuinfo's clock, the clock is *inferred* from it and that
  roof marked unverified, or flagged (:func:`judge_spec`).

It is drawn dashed as "theoretical" beside the measured roofs, never in
their place; the bench warns when a measured roof is under 50 % or over 110 %
of it.

**Native precisions**: bf16 and fp16 count as native only with hardware that
computes them (x86: AVX512-BF16 / AMX-BF16, AVX512-FP16 / AMX-FP16; Arm: the
``bf16`` and ``asimdhp`` features).  Without it a CPU converts to fp32 and
computes there, so no bf16/fp16 roof is published: the documented fallback to
the fp32 roofs applies, recorded on each op.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from roofline.bench import host as _host
from roofline.bench import uarch as _uarch
from roofline.core.units import format_flops
from roofline.hardware.bench_facts import SpecRoof

SPEC_LOW, SPEC_HIGH = 0.5, 1.1  # a measured vector roof outside [50 %, 110 %] of spec is warned about

#: flags (x86 /proc/cpuinfo names, Arm 'Features' names) that mean native arithmetic in a precision
NATIVE_FLAGS: dict[str, tuple[str, ...]] = {
    "bf16": ("avx512_bf16", "amx_bf16", "bf16"),
    "fp16": ("avx512_fp16", "amx_fp16", "asimdhp"),
}


def native_precisions(flags: set[str]) -> tuple[str, ...]:
    """Precisions this CPU computes natively: fp64 and fp32 always, bf16/fp16 by their flags.

    >>> native_precisions({"avx2", "fma"})
    ('fp64', 'fp32')
    >>> native_precisions({"avx512f", "avx512_bf16", "amx_bf16"})
    ('fp64', 'fp32', 'bf16')
    """
    return ("fp64", "fp32") + tuple(p for p, names in NATIVE_FLAGS.items() if flags & set(names))


def cpuinfo() -> dict[str, Any]:
    """The first processor block of /proc/cpuinfo, as :func:`roofline.bench.host.host_cpu` read it."""
    return _host.host_cpu().info()


def physical_cores(cpus: list[int]) -> int:
    """Distinct (package, core) pairs among ``cpus`` from sysfs topology; ``len(cpus)`` when unreadable."""
    seen = set()
    for c in cpus:
        base = Path(f"/sys/devices/system/cpu/cpu{c}/topology")
        try:
            seen.add((base.joinpath("physical_package_id").read_text().strip(),
                      base.joinpath("core_id").read_text().strip()))
        except OSError:
            return len(cpus)
    return len(seen) or len(cpus)


#: labels of the clock sources, in the order :func:`spec_clock` prefers them
CLOCK_LABELS = {
    "cpufreq": "cpufreq maximum (a turbo clock; all cores together may run lower)",
    "table": "the boost clock of this model in the microarchitecture table",
    "model name": "the model name's nominal clock (all-core turbo unknown here)",
    "cpuinfo": "the clock /proc/cpuinfo shows (on a VM: the nominal clock, not the turbo)",
    "inferred": "inferred from the FMA measurement (unverified: the roof it came from set it)",
}
EXPLAIN_WITHIN = 0.05  # a stated clock explains a roof above spec when its spec reproduces the roof within 5 %


def clock_sources(info: dict[str, Any]) -> list[tuple[str, float, str]]:
    """Every clock this machine states: (kind, Hz, label), in :data:`CLOCK_LABELS` order (no 'inferred').

    >>> [k for k, _, _ in clock_sources({"model_name": "AMD EPYC 7763 64-Core Processor", "mhz": 2445.4})]
    ['table', 'cpuinfo']
    """
    out: list[tuple[str, float, str]] = []
    max_mhz = info.get("max_mhz")
    if isinstance(max_mhz, (int, float)) and max_mhz > 0:
        out.append(("cpufreq", float(max_mhz) * 1e6, CLOCK_LABELS["cpufreq"]))
    boost = _uarch.boost_clock(str(info.get("model_name", "")))
    if boost is not None:
        out.append(("table", boost[0], f"{CLOCK_LABELS['table']}: {boost[1]}"))
    m = re.search(r"@\s*([\d.]+)\s*GHz", str(info.get("model_name", "")))
    if m:
        out.append(("model name", float(m.group(1)) * 1e9, CLOCK_LABELS["model name"]))
    mhz = info.get("mhz")
    if isinstance(mhz, (int, float)) and mhz > 0:
        out.append(("cpuinfo", float(mhz) * 1e6, CLOCK_LABELS["cpuinfo"]))
    return out


def spec_clock(info: dict[str, Any]) -> tuple[float, str] | None:
    """(Hz, where it came from): the first of :func:`clock_sources` (cpufreq maximum, the table's boost
    clock of a known model, the model name's '@ X GHz', the 'cpu MHz' of /proc/cpuinfo)."""
    sources = clock_sources(info)
    return (sources[0][1], sources[0][2]) if sources else None


def spec_roofs(info: dict[str, Any], cores: int, clock: tuple[float, str] | None) -> tuple[SpecRoof, ...]:
    """fp64 and fp32 vector spec roofs, or () when the microarchitecture or the clock is unknown.

    >>> info = {"vendor_id": "GenuineIntel", "family": 6, "model": 106, "flags": {"avx512f", "avx2", "fma"}}
    >>> r = spec_roofs(info, 2, (2.8e9, "given"))
    >>> [(x.precision, x.flops / 1e9) for x in r]
    [('fp64', 179.2), ('fp32', 358.4)]
    """
    ua = _uarch.identify(str(info.get("vendor_id", "")), int(info.get("family", -1)), int(info.get("model", -1)),
                         set(info.get("flags", set())), str(info.get("cpu_part", "")))
    if ua is None or clock is None or cores < 1:
        return ()
    hz, clock_source = clock
    src = _uarch.SOURCES.get(ua.source, {})
    out = []
    for prec, bits in (("fp64", 64), ("fp32", 32)):
        lanes = ua.vector_bits // bits
        flops = cores * hz * ua.fma_pipes * lanes * 2
        out.append(SpecRoof("vector", prec, flops, (
            f"{cores} core(s) x {hz / 1e9:.3g} GHz ({clock_source}) x {ua.fma_pipes} FMA pipe(s) x {lanes} {prec} "
            f"lanes ({ua.vector_bits}-bit, {ua.name}: {src.get('title', ua.source)}"
            f"{', ' + src['url'] if src.get('url') else ''}) x 2 FLOP/FMA = {format_flops(flops)}"
            + (f"; {ua.note}" if ua.note else ""))))
    return tuple(out)


def this_cpu_spec(threads: int) -> tuple[tuple[SpecRoof, ...], set[str]]:
    """(spec roofs for ``threads`` threads on this machine, its flags)."""
    info = cpuinfo()
    from roofline.bench.fma import ALLOWED_CPUS

    cpus = ALLOWED_CPUS or list(range(os.cpu_count() or 1))
    cores = min(threads, physical_cores(cpus))
    flags = set(info.get("flags", set()))
    return spec_roofs(info, cores, spec_clock(info)), flags


def this_cpu_clocks() -> list[tuple[str, float, str]]:
    """:func:`clock_sources` of this machine (the first is the one its spec roofs use)."""
    return clock_sources(cpuinfo())


def check_against_spec(measured: dict[str, float], spec: tuple[SpecRoof, ...],
                       clocks: list[tuple[str, float, str]] | None = None) -> list[str]:
    """Warnings for measured vector roofs under 50 % or over 110 % of the spec roof (:func:`judge_spec`'s)."""
    return judge_spec(measured, spec, clocks)[0]


def judge_spec(measured: dict[str, float], spec: tuple[SpecRoof, ...],
               clocks: list[tuple[str, float, str]] | None = None) -> tuple[list[str], list[str], dict[str, Any]]:
    """(warnings, causes of inconsistency, the clock record) for measured vector roofs against the spec.

    The spec roofs were derived at the first of ``clocks`` (:func:`clock_sources`).  A roof over
    110 % of spec is explained when some stated clock's spec reproduces it within :data:`EXPLAIN_WITHIN`
    (said, not flagged).  Otherwise: where the only stated clock is /proc/cpuinfo's (a VM's nominal
    clock), the clock is *inferred* from the roof (labelled so) and the roof marked unverified; where a
    cpufreq, table or model-name clock was stated, the roof is a cause of inconsistency.
    """
    warnings: list[str] = []
    causes: list[str] = []
    clocks = clocks or []
    used = clocks[0] if clocks else None
    record: dict[str, Any] = {"kind": used[0], "hz": used[1], "label": used[2]} if used else {}
    unverified: list[str] = []
    for r in spec:
        got = measured.get(r.precision)
        if got is None:
            continue
        ratio = got / r.flops
        if ratio < SPEC_LOW:
            warnings.append(f"{r.precision} vector roof {format_flops(got)} is {ratio:.0%} of the spec roof "
                            f"{format_flops(r.flops)} (expected {SPEC_LOW:.0%}..{SPEC_HIGH:.0%}): the machine was "
                            "busy, throttled, or the kernel is not at peak on this ISA")
        if ratio <= SPEC_HIGH:
            continue
        if used is None:  # no clock stated to explain it with
            warnings.append(f"{r.precision} vector roof {format_flops(got)} is {ratio:.0%} of the spec roof "
                            f"{format_flops(r.flops)} (expected {SPEC_LOW:.0%}..{SPEC_HIGH:.0%}): the clock or the "
                            "microarchitecture table is wrong for this CPU")
            continue
        per_hz = r.flops / used[1]
        explained = [(k, hz, lab) for k, hz, lab in clocks if abs(got / (per_hz * hz) - 1) <= EXPLAIN_WITHIN]
        if explained:
            k, hz, lab = explained[0]
            warnings.append(f"{r.precision} vector roof {format_flops(got)} is {ratio:.0%} of the spec roof at "
                            f"{used[1] / 1e9:.3g} GHz; explained by {lab} ({hz / 1e9:.3g} GHz: spec "
                            f"{format_flops(per_hz * hz)}, {got / (per_hz * hz):.0%} of it)")
        elif all(k == "cpuinfo" for k, _, _ in clocks):
            hz = got / per_hz
            unverified.append(r.precision)
            record.setdefault("inferred_hz", hz)
            warnings.append(f"{r.precision} vector roof {format_flops(got)} is {ratio:.0%} of the spec roof at the "
                            f"{used[1] / 1e9:.3g} GHz /proc/cpuinfo shows; clock {hz / 1e9:.3g} GHz "
                            f"{CLOCK_LABELS['inferred']}: the {r.precision} vector roof is unverified")
        else:
            causes.append(f"{r.precision} vector roof {format_flops(got)} is {ratio:.0%} of the spec roof "
                          f"{format_flops(r.flops)} and no stated clock ({', '.join(k for k, _, _ in clocks)}) "
                          f"reproduces it within {EXPLAIN_WITHIN:.0%}: the clock or the microarchitecture table "
                          "is wrong for this CPU, or the measurement is")
    if unverified:
        record["unverified"] = unverified
    return warnings, causes, record
