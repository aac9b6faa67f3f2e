"""Does a run's set of roofs agree with what the ISA fixes?  Rules that flag, never rules that replace.

Every roof is measured.  These rules only compare measured figures with each other and with the
ISA's ratios; a figure that breaks one is *flagged* (and the run may be measured again,
:func:`roofline.bench.run_bench`), never replaced by one derived from another:

- **fp32 = 2 x fp64** on the vector units of the same width: an FMA instruction holds twice as many
  fp32 lanes as fp64 ones and issues at the same rate.  Flagged when fp64 is above half of fp32, or fp32
  above twice fp64, by more than :data:`ISA_TOLERANCE`.
- **bf16 dot product against fp32** as the microarchitecture table states
  (:func:`roofline.bench.uarch.bf16_dot_ratio`: 2x for AVX512-BF16 / BFDOT, 16x for AMX): the best bf16
  roof above that ratio x the fp32 vector roof by more than :data:`ISA_TOLERANCE` is flagged.
  Without native bf16 there is no bf16 roof (it falls back to fp32) and nothing to check.
- **each memory level at least as fast as the next slower one** (levels by capacity, main memory
  last): a level above the one nearer the core by more than :data:`MEMORY_TOLERANCE` is flagged.

>>> isa_findings({("vector", "fp64"): 150e9, ("vector", "fp32"): 200e9}, set())[0][:48]
'fp64 vector 150 GFLOP/s is 1.50x half of fp32 ve'
>>> memory_findings([("L2", 200e9, 1 << 20), ("L3", 250e9, 32 << 20), ("DRAM", 20e9, None)])[0][:38]
'L3 250 GB/s is above L2 200 GB/s (1.25'
"""

from __future__ import annotations

from roofline.bench import uarch
from roofline.core.units import format_bandwidth, format_flops
from roofline.hardware.device import Device

ISA_TOLERANCE = 0.10  # a ratio may miss the ISA's by 10 % (clock steps between runs, GEMM vs FMA kernels)
MEMORY_TOLERANCE = 0.05  # a slower level may beat a faster one by 5 % (plateau edges, sampling)


def isa_findings(compute: dict[tuple[str, str], float], flags: set[str]) -> list[str]:
    """Causes of inconsistency among compute roofs ``{(unit, precision): FLOP/s}`` on a CPU with ``flags``."""
    out: list[str] = []
    fp64, fp32 = compute.get(("vector", "fp64")), compute.get(("vector", "fp32"))
    if fp64 and fp32:
        if fp64 > fp32 / 2 * (1 + ISA_TOLERANCE):
            out.append(f"fp64 vector {format_flops(fp64)} is {fp64 / (fp32 / 2):.2f}x half of fp32 vector "
                       f"{format_flops(fp32)}; the ISA gives fp32 exactly twice fp64 per cycle (twice the lanes): "
                       "one of them was measured slow or disturbed")
        elif fp32 > 2 * fp64 * (1 + ISA_TOLERANCE):
            out.append(f"fp32 vector {format_flops(fp32)} is {fp32 / (2 * fp64):.2f}x twice fp64 vector "
                       f"{format_flops(fp64)}; the ISA gives fp32 exactly twice fp64 per cycle (twice the lanes): "
                       "one of them was measured slow or disturbed")
    ratio = uarch.bf16_dot_ratio(flags)
    bf16 = max((v for (_, p), v in compute.items() if p == "bf16"), default=0.0)
    if ratio is not None and bf16 and fp32:
        factor, instruction = ratio
        if bf16 > factor * fp32 * (1 + ISA_TOLERANCE):
            out.append(f"bf16 roof {format_flops(bf16)} is {bf16 / fp32:.2f}x the fp32 vector roof "
                       f"{format_flops(fp32)}, above the {factor:g}x {instruction} gives (microarchitecture table): "
                       "the fp32 roof was measured low, or the bf16 one is wrong")
    return out


def memory_findings(levels: list[tuple[str, float, float | None]]) -> list[str]:
    """Causes of inconsistency among memory levels ``(name, bandwidth B/s, capacity bytes or None for main
    memory)``: a level faster than the next level nearer the core."""
    ordered = sorted(levels, key=lambda x: (x[2] is None, x[2] or 0.0))
    out: list[str] = []
    for (near, bw_near, _), (far, bw_far, _) in zip(ordered, ordered[1:], strict=False):
        if bw_near > 0 and bw_far > bw_near * (1 + MEMORY_TOLERANCE):
            out.append(f"{far} {format_bandwidth(bw_far)} is above {near} {format_bandwidth(bw_near)} "
                       f"({bw_far / bw_near:.2f}x): a slower level cannot outrun a faster one; "
                       f"the {near} plateau was measured slow or disturbed")
    return out


def device_findings(device: Device, flags: set[str]) -> list[str]:
    """Every rule above on a measured device (its compute roofs and memory levels)."""
    compute = {c.key: c.flops for c in device.compute}
    main = device.main_memory
    levels = [(m.level, m.bandwidth, None if m is main else m.capacity) for m in device.memory]
    return isa_findings(compute, flags) + memory_findings(levels)
