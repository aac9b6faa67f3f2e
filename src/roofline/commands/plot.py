"""roofline plot: the classic chart from a device (or peak + bandwidth) and user points."""

from __future__ import annotations

import argparse

from roofline.commands._common import EXAMPLE_HELP, add_output_options, check_outputs, cli_quantity, emit
from roofline.core.errors import RooflineError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plot", help="roofline chart from a device or a peak and a bandwidth, with your points",
                       formatter_class=EXAMPLE_HELP,
                       description="Draw a roofline and place points given as name:flops:bytes[:seconds] "
                                   "(FLOPs and bytes of one run; seconds measured, optional).",
                       epilog="examples:\n"
                              "  roofline plot --peak 100GFLOP/s --bandwidth 10GB/s --point app:0.8e9:4e9:1 -o chart.png\n"
                              "  roofline plot --device h100 --point 'gemm:2.2T:100M' --point 'softmax:1G:4G' -o h100.png")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--device", "-d", help="catalog name, device JSON file, or 'local'")
    src.add_argument("--peak", help="compute roof with its unit, e.g. 100GFLOP/s (use with --bandwidth)")
    p.add_argument("--bandwidth", help="memory roof with its unit, e.g. 10GB/s (with --peak)")
    p.add_argument("--point", action="append", default=[], metavar="NAME:FLOPS:BYTES[:SECONDS]",
                   help="a point: FLOPs and bytes of one run, optionally its measured seconds (repeatable)")
    p.add_argument("--precision", default="fp32",
                   help="precision of the points (default fp32, as in a workload file; the roof it runs on, or "
                        "its fallback, is named in the table)")
    p.add_argument("--unit", choices=("vector", "matrix"), default="vector",
                   help="unit of the points (default vector, like a bare op of any kind but matmul/conv/attention)")
    add_output_options(p)
    p.set_defaults(func=run)


def parse_point(text: str) -> tuple[str, float, float, float]:
    """'name:flops:bytes[:seconds]' -> Op fields; numbers accept SI prefixes ('2.2T', '4e9', '1.5ms')."""
    from roofline.core.units import parse_quantity

    parts = text.split(":")
    if len(parts) not in (3, 4) or not parts[0]:
        raise RooflineError(f"--point {text!r}: expected NAME:FLOPS:BYTES[:SECONDS], e.g. app:0.8e9:4e9:1")
    name = parts[0]
    flops = parse_quantity(parts[1], "flop", field=f"--point {text!r} FLOPs")
    nbytes = parse_quantity(parts[2], "bytes", field=f"--point {text!r} bytes")
    seconds = parse_quantity(parts[3], "seconds", field=f"--point {text!r} seconds") if len(parts) == 4 else float("nan")
    for label, v in (("FLOPs", flops), ("bytes", nbytes)):
        if not v >= 0 or v == float("inf"):
            raise RooflineError(f"--point {text!r}: {label} must be a finite number >= 0, got {v!r}")
    if len(parts) == 4 and not (0 < seconds < float("inf")):
        raise RooflineError(f"--point {text!r}: seconds must be a finite number > 0, got {seconds!r}")
    return name, flops, nbytes, seconds


def run(args: argparse.Namespace) -> int:
    from roofline.commands._common import resolve
    from roofline.engine.analysis import analyze
    from roofline.hardware.device import Device
    from roofline.work.workload import Op, Workload

    check_outputs(args)
    if args.peak is not None and args.bandwidth is None:
        raise RooflineError("--peak needs --bandwidth (or use --device)")
    if args.device and args.bandwidth:
        raise RooflineError("--bandwidth goes with --peak, not with --device")
    points = [parse_point(t) for t in args.point]
    if args.device:
        device = resolve(args.device)
    else:  # command-line roofs need their units: '10' is not taken as 10 B/s
        device = Device.simple(f"peak {args.peak}, bandwidth {args.bandwidth}",
                               cli_quantity(args.peak, "flops", "--peak"),
                               cli_quantity(args.bandwidth, "bandwidth", "--bandwidth"))
    precision, unit = args.precision, args.unit
    if not points:
        if not args.output:
            raise RooflineError("nothing to do: give --point and/or -o CHART")
        from roofline.render.chart import save_chart

        save_chart(device, args.output)
        print(f"chart: {args.output}")
        return 0
    ops = [Op(name, flops=f, bytes_read=b, precision=precision, unit=unit, measured_seconds=s)
           for name, f, b, s in points]
    analysis = analyze(Workload.from_ops(ops, title="points", source="command line"), device)
    emit(analysis, args, title=f"points on {device.name}")
    return 0
