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
    from rich.console import Console
    from rich.table import Table

    from roofline.bench.resolve import resolve_device
    from roofline.units import format_bandwidth, format_flops, format_gib, format_seconds

    if args.output:
        from roofline.render import check_chart_path

        check_chart_path(args.output)
    d = resolve_device(args.name)
    if args.json:
        print(d.to_json())
        return 0
    from roofline.text import display, for_terminal

    con = Console(width=200)
    # names from a device file are data: escaped for rich, control characters made visible
    con.print(f"[bold]{for_terminal(d.name)}[/bold] ({for_terminal(d.vendor_kind())}); aliases: "
              f"{for_terminal(', '.join(d.aliases)) or '-'}")
    t = Table(title="compute ceilings (dense)", title_justify="left")
    for col in ("unit", "precision", "peak", *(f"ridge vs {for_terminal(m.level)}" for m in d.memory), "source"):
        t.add_column(col, overflow="fold")
    for c in sorted(d.compute, key=lambda c: -c.flops):
        t.add_row(c.unit, c.precision, format_flops(c.flops), *(f"{c.flops / m.bandwidth:.3g} FLOP/B" for m in d.memory),
                  for_terminal(c.provenance.describe()))
    con.print(t)
    t = Table(title="memory ceilings", title_justify="left")
    for col in ("level", "bandwidth", "capacity", "source"):
        t.add_column(col, overflow="fold")
    for m in d.memory:
        cap = (format_gib(m.capacity) + (f" less {format_gib(m.reserve)} reserve" if m.reserve else "")
               if m.capacity else "-")
        t.add_row(for_terminal(m.level), format_bandwidth(m.bandwidth), cap,
                  for_terminal(m.provenance.describe()))
    con.print(t)
    if d.interconnect:
        ic = d.interconnect
        hop = f", {format_seconds(ic.latency)} per hop" if ic.latency else ""
        nvls = ", in-switch reduction" if ic.in_switch_reduction else ""
        con.print(f"interconnect: {display(ic.name)} {format_bandwidth(ic.bandwidth)} per direction{hop}{nvls} — "
                  f"{display(ic.provenance.describe())}", markup=False)
    for k, v in d.metadata.items():
        con.print(display(f"{k}: {v}", 2000), markup=False)
    if args.output:
        from roofline.render.chart import save_chart

        save_chart(d, args.output)
        print(f"chart: {args.output}")
    return 0
