"""Measured GPU ceilings next to the catalog's datasheet numbers (a script, not a test).

Runs everything `roofline bench --gpu` measures (HBM copy, L2 copy, GEMM per dtype, vector
FMA peak) in one go (a few minutes at most) and prints, per ceiling, the measured median, its
spread, the datasheet figure for the detected GPU (catalog lookup by
torch.cuda.get_device_name) and the ratio.  Without CUDA it says so and exits 0.

    python benchmarks/gpu_ceilings.py [--full] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from roofline.bench.gpu import cuda_available, run_gpu_bench  # noqa: E402
from roofline.catalog import closest, get_device, normalize  # noqa: E402
from roofline.core.errors import RooflineError  # noqa: E402
from roofline.core.units import format_bandwidth, format_flops  # noqa: E402
from roofline.hardware.device import Device  # noqa: E402


def catalog_match(gpu_name: str) -> Device | None:
    """The catalog device for a CUDA name such as 'NVIDIA H100 80GB HBM3', or None."""
    for candidate in (gpu_name, gpu_name.replace("NVIDIA", "").strip()):
        try:
            return get_device(candidate)
        except RooflineError:
            pass
    # accept the closest catalog name only when its model token (e.g. 'h100') is in the CUDA name
    key = normalize(gpu_name)
    for name in closest(gpu_name, n=3):
        dev = get_device(name)
        tokens = [normalize(a) for a in (dev.name, *dev.aliases)]
        if any(t and len(t) >= 4 and t in key for t in tokens):
            return dev
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--out", help="save the measured device JSON")
    args = ap.parse_args()
    if not cuda_available():
        print("skipped: no CUDA device (torch.cuda.is_available() is False or torch is not installed)")
        return 0
    t0 = time.perf_counter()
    dev = run_gpu_bench(quick=not args.full)
    wall = time.perf_counter() - t0
    ref = catalog_match(dev.metadata["gpu_model"])
    print(f"{dev.metadata['gpu_model']} (sm {dev.metadata['compute_capability']}, {dev.metadata['sm_count']} SMs); "
          f"catalog: {ref.name if ref else 'no entry'}; {wall:.0f} s")
    head = f"{'ceiling':14s} {'measured':>16s} {'IQR/median':>10s} {'datasheet':>16s} {'ratio':>6s}"
    print(head)
    print("-" * len(head))
    for c in dev.compute:
        sheet = ref.ceiling(c.unit, c.precision) if ref else None
        spread = (c.provenance.spread[1] - c.provenance.spread[0]) / c.flops if c.provenance.spread else float("nan")
        print(f"{c.label:14s} {format_flops(c.flops):>16s} {spread:10.1%} "
              f"{format_flops(sheet.flops) if sheet else '-':>16s} {c.flops / sheet.flops if sheet else float('nan'):6.2f}")
    for m in dev.memory:
        sheet_m = None
        if ref:
            try:
                sheet_m = ref.memory_level(m.level)
            except RooflineError:
                sheet_m = None
        spread = (m.provenance.spread[1] - m.provenance.spread[0]) / m.bandwidth if m.provenance.spread else float("nan")
        print(f"{m.level:14s} {format_bandwidth(m.bandwidth):>16s} {spread:10.1%} "
              f"{format_bandwidth(sheet_m.bandwidth) if sheet_m else '-':>16s} "
              f"{m.bandwidth / sheet_m.bandwidth if sheet_m else float('nan'):6.2f}")
    for w in dev.metadata.get("warnings", []):
        print(f"warning: {w}")
    if args.out:
        dev.save(args.out)
        print(f"saved: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
