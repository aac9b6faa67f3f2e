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
    from roofline.catalog import devices
    from roofline.core.text import display
    from roofline.core.units import format_bandwidth, format_flops
    from roofline.render.fit import Column, table_lines

    devs = devices()
    if args.json:
        print(json.dumps([d.to_dict() for d in devs], indent=2))
        return 0
    rows = []
    for d in devs:
        top = max(d.compute, key=lambda c: c.flops)
        mm = d.main_memory
        rows.append({"name": display(d.name), "kind": d.kind, "aliases": display(", ".join(d.aliases[:3])),
                     "fastest roof": f"{format_flops(top.flops)} {top.precision}",
                     "main memory": f"{display(mm.level, 24)} {format_bandwidth(mm.bandwidth)}",
                     "capacity": _capacity(d), "ridge": f"{top.ridge(mm):.3g} FLOP/B"})
    # the name gives way to 16 cells before main memory goes; at 40 columns only main memory gives way
    columns = [Column("name", kind="name", keep=True, min_width=16), Column("kind", kind="label", priority=2),
               Column("aliases", kind="text", priority=1, min_width=12), Column("fastest roof", keep=True),
               Column("main memory", priority=5), Column("capacity", priority=4), Column("ridge", priority=3)]
    title = f"{len(devs)} catalog devices (dense datasheet figures; 'roofline device NAME' for provenance)"
    print("\n".join(table_lines(columns, rows, title=title, more="roofline devices --json has every field")))
    return 0


def _capacity(d: Any) -> str:
    """What a workload may hold (Device.memory_capacity), in GiB as nvidia-smi counts; '-' when not stated."""
    from roofline.core.units import format_gib

    cap = d.memory_capacity
    return "-" if cap is None else format_gib(cap)
