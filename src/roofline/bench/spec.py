"""What the CPU could do on paper, and which precisions it computes natively.

The **spec roof** per precision is ``cores x clock x FMA pipes x lanes x 2``
(one FMA = 2 FLOPs), from the CPU's identity (:mod:`roofline.bench.uarch`,
a small cited table of microarchitectures) and its clock.  The choices, stated
in every derivation:

- *cores*: the CPUs this process may run on (``sched_getaffinity``; on a VM,
  vCPUs), counted once per physical core where the OS reports SMT siblings
  (two hyper-threads share one core's FMA pipes);
- *clock*: the highest clock the OS reports (cpufreq's maximum, a
  single-core turbo that all cores together may not hold), else the model
  name's ``@ X GHz``, else ``cpu MHz`` from /proc/cpuinfo; which one is said.

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
from roofline.bench_facts import SpecRoof
from roofline.units import format_flops

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


def spec_clock(info: dict[str, Any]) -> tuple[float, str] | None:
    """(Hz, where it came from): cpufreq maximum, else the model name's '@ X GHz', else 'cpu MHz'."""
    max_mhz = info.get("max_mhz")
    if isinstance(max_mhz, (int, float)) and max_mhz > 0:
        return float(max_mhz) * 1e6, "cpufreq maximum (a turbo clock; all cores together may run lower)"
    m = re.search(r"@\s*([\d.]+)\s*GHz", str(info.get("model_name", "")))
    if m:
        return float(m.group(1)) * 1e9, "the model name's nominal clock (all-core turbo unknown here)"
    mhz = info.get("mhz")
    if isinstance(mhz, (int, float)) and mhz > 0:
        return float(mhz) * 1e6, "the current clock in /proc/cpuinfo (all-core turbo unknown here)"
    return None


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


def check_against_spec(measured: dict[str, float], spec: tuple[SpecRoof, ...]) -> list[str]:
    """Warnings for measured vector roofs under 50 % or over 110 % of the spec roof."""
    out = []
    for r in spec:
        got = measured.get(r.precision)
        if got is None:
            continue
        ratio = got / r.flops
        if not SPEC_LOW <= ratio <= SPEC_HIGH:
            out.append(f"{r.precision} vector roof {format_flops(got)} is {ratio:.0%} of the spec roof "
                       f"{format_flops(r.flops)} (expected {SPEC_LOW:.0%}..{SPEC_HIGH:.0%}): "
                       + ("the machine was busy, throttled, or the kernel is not at peak on this ISA" if ratio < SPEC_LOW
                          else "the clock or the microarchitecture table is wrong for this CPU"))
    return out
