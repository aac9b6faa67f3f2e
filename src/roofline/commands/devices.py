"""roofline devices: list the catalog."""

from __future__ import annotations

import argparse
import json
from typing import Any

from roofline.commands._common import EXAMPLE_HELP


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("devices", help="list the device catalog", formatter_class=EXAMPLE_HELP,
                       description="List every catalog device with its fastest roof, main memory and ridge point.",
                       epilog="examples:\n  roofline devices\n  roofline devices --json > devices.json")
    p.add_argument("--json", action="store_true", help="print the full catalog as JSON (roofline.device/3 objects)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from roofline.catalog import devices
    from roofline.units import format_bandwidth, format_flops

    devs = devices()
    if args.json:
        print(json.dumps([d.to_dict() for d in devs], indent=2))
        return 0
    t = Table(title=f"{len(devs)} catalog devices (dense datasheet figures; 'roofline device NAME' for provenance)",
              title_justify="left")
    for col in ("name", "kind", "aliases", "fastest roof", "main memory", "capacity", "ridge"):
        t.add_column(col, justify="right" if col in ("fastest roof", "main memory", "capacity", "ridge") else "left")
    for d in devs:
        top = max(d.compute, key=lambda c: c.flops)
        mm = d.main_memory
        t.add_row(d.name, d.kind, ", ".join(d.aliases[:3]), f"{format_flops(top.flops)} {top.precision}",
                  f"{mm.level} {format_bandwidth(mm.bandwidth)}", _capacity(d),
                  f"{top.flops / mm.bandwidth:.3g} FLOP/B")
    Console(width=180).print(t)
    return 0


def _capacity(d: Any) -> str:
    """What a workload may hold (Device.memory_capacity), in GiB as nvidia-smi counts; '-' when not stated."""
    from roofline.units import format_gib

    cap = d.memory_capacity
    return "-" if cap is None else format_gib(cap)
