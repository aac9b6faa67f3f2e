"""roofline analyze WORKLOAD.json|csv --device NAME: per-op table, chart and exports."""

from __future__ import annotations

import argparse

from roofline.commands._common import (
    EXAMPLE_HELP,
    add_device_option,
    add_output_options,
    add_tf32_option,
    check_outputs,
    emit,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("analyze", help="analyse a workload file (roofline.workload/3 JSON or CSV) on a device",
                       formatter_class=EXAMPLE_HELP,
                       description="Place every op of a saved workload under a device's roofs: intensity, bound, "
                                   "attainable FLOP/s and roofline time per op, sorted by time.",
                       epilog="examples:\n  roofline analyze model.json --device h100 -o chart.png\n"
                              "  roofline analyze model.csv --device a100 --group-by kind --json analysis.json")
    p.add_argument("workload", help="workload file: .json (roofline.workload/3; /1 and /2 load too) or .csv")
    add_device_option(p)
    add_output_options(p, group_by=("module", "type", "kind", "name"))
    add_tf32_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from roofline.commands._common import resolve
    from roofline.engine.analysis import analyze
    from roofline.work.workload import Workload

    check_outputs(args)
    workload = Workload.load(args.workload)
    device = resolve(args.device)
    emit(analyze(workload, device, tf32=args.tf32), args, title=f"{workload.title} on {device.name}")
    return 0
