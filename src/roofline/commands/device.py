"""roofline device NAME: one device's ceilings, ridge points and provenance."""

from __future__ import annotations

import argparse

from roofline.commands._common import EXAMPLE_HELP


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("device", help="show one device: ceilings, ridge points, provenance", formatter_class=EXAMPLE_HELP,
                       description="Show a device's compute and memory ceilings, the ridge point of every pair, "
                                   "and where each number came from.",
                       epilog="examples:\n  roofline device h100\n  roofline device local\n"
                              "  roofline device mydevice.json -o h100-roofs.png\n  roofline device mi300x --json")
    p.add_argument("name", help="catalog name or alias, a device JSON file, or 'local'")
    p.add_argument("--json", action="store_true", help="print the device as JSON (roofline.device/2)")
    p.add_argument("-o", "--output", metavar="CHART", help="also draw its rooflines (.png, .svg, .pdf)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from roofline.bench.resolve import resolve_device
    from roofline.core.units import format_bandwidth, format_flops, format_gib, format_seconds

    if args.output:
        from roofline.render import check_chart_path

        check_chart_path(args.output)
    d = resolve_device(args.name)
    if args.json:
        print(d.to_json())
        return 0
    from roofline.core.text import display
    from roofline.render.citations import Citations
    from roofline.render.fit import Column, falling_priorities, table_lines, terminal_width, wrap_line

    width = terminal_width()
    # names from a device file are data: control characters made visible, long ones cut
    out = wrap_line(f"{display(d.name)} ({display(d.vendor_kind())}); aliases: {display(', '.join(d.aliases)) or '-'}",
                    width)
    cite = Citations()  # provenance in full under the tables, numbered: a table row stays one line

    ridges = {f"ridge vs {display(m.level, 24)}": m for m in d.memory}
    rows = [{"unit": display(c.unit), "precision": display(c.precision), "peak": format_flops(c.flops),
             **{k: f"{c.ridge(m):.3g} FLOP/B" for k, m in ridges.items()},
             "source": cite(c.provenance, f"{display(c.precision)} {display(c.unit)}")}
            for c in sorted(d.compute, key=lambda c: c.flops, reverse=True)]
    columns = [Column("unit", kind="label", keep=True), Column("precision", kind="label", keep=True),
               Column("peak", keep=True),
               *(Column(k, priority=p) for k, p in zip(ridges, falling_priorities(2, len(ridges)), strict=True)),
               Column("source", kind="label", keep=True)]
    out.extend(table_lines(columns, rows, width, title="compute ceilings (dense)"))
    mem_rows = [{"level": display(m.level), "bandwidth": format_bandwidth(m.bandwidth),
                 "capacity": (format_gib(m.capacity) + (f" less {format_gib(m.reserve)} reserve" if m.reserve else "")
                              if m.capacity else "-"),
                 "source": cite(m.provenance, display(m.level, 24))} for m in d.memory]
    columns = [Column("level", kind="name", keep=True, min_width=8), Column("bandwidth", keep=True),
               Column("capacity", kind="label", priority=1), Column("source", kind="label", keep=True)]
    out.extend(table_lines(columns, mem_rows, width, title="memory ceilings"))
    if d.interconnect:
        ic = d.interconnect
        hop = f", {format_seconds(ic.latency)} per hop" if ic.latency else ""
        nvls = ", in-switch reduction" if ic.in_switch_reduction else ""
        out.extend(wrap_line(f"interconnect: {display(ic.name)} {format_bandwidth(ic.bandwidth)} per direction{hop}"
                             f"{nvls} " + cite(ic.provenance, "interconnect"), width))
    out.extend(cite.lines(width))
    for k, v in d.metadata.items():
        out.extend(wrap_line(display(f"{k}: {v}", 2000), width))
    print("\n".join(out))
    if args.output:
        from roofline.render.chart import save_chart

        save_chart(d, args.output)
        print(f"chart: {args.output}")
    return 0

