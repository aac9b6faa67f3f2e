"""roofline calibrate: measure a fixed suite of ops here and fit the forecast's efficiency curves."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from roofline.core.errors import RooflineError
from roofline.core.fileio import check_writable
from roofline.core.units import format_seconds
from roofline.hardware.calibration import Calibration

EPILOG = """\
examples:
  roofline bench && roofline calibrate          # the cached local device gains a calibration
  roofline calibrate --quick --out cal.json     # also a calibration file, for --calibration elsewhere
  roofline calibrate --show                     # print the cached calibration
  roofline torch mymodel.py:build --device local --forecast
  roofline calibrate --from-trace trace.json --device h100-sxm --out h100.cal.json
  roofline trace trace2.json --device h100-sxm --forecast --calibration h100.cal.json

--from-trace fits the curves from a torch.profiler trace recorded on that device (see
'roofline trace --help'), so a cluster user calibrates without running the suite there:
each distinct measured op is a point; about 1 in 4 (by a hash of its name and size) is
held out of the fit and its forecast error printed.  A catalog device is not written: give --out.
"""


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "calibrate", help="fit the forecast's efficiency curves from a fixed suite of ops measured here",
        description=("Measure a fixed suite of ops (GEMMs across shapes and layouts, convolutions, elementwise, "
                     "norm, softmax, attention, pooling, embedding, copies; fp32, PyTorch eager) on this machine "
                     "with torch.profiler, and fit, per op and per kind, the achieved fraction of the achievable "
                     "roof as a monotone function of op size (3 parameters per curve). The fit, its residuals and "
                     "the suite's description are stored on the cached local device ('roofline bench' first), "
                     "which --forecast then uses. --quick: 3 sizes per op family, fewer runs (about 20 s)."),
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="3 sizes per op family and fewer runs")
    p.add_argument("--gpu", action="store_true", help="run the suite on the CUDA GPU (the cached device must be "
                   "a 'roofline bench --gpu' measurement)")
    p.add_argument("--out", metavar="FILE", help="also write the calibration here (roofline.calibration/1)")
    p.add_argument("--show", action="store_true", help="print the cached device's calibration instead of measuring")
    p.add_argument("--from-trace", metavar="TRACE", help="fit from a torch.profiler trace recorded on --device "
                   "instead of running the suite here")
    p.add_argument("--device", "-d", help="with --from-trace: the device the trace was recorded on (catalog name, "
                   "device JSON, or 'local', the default)")
    p.add_argument("--strict", action="store_true", help="refuse a fit measured under contention too (its causes "
                   "printed, nothing written, exit 2); a fit above the held-in error limit is always refused")
    p.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                   help="wait this long for another bench or calibrate writing the cache (default: fail at once)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from roofline import bench

    if args.out:
        check_writable(args.out)
    if args.from_trace:
        with bench.writer_lock("roofline calibrate --from-trace", args.wait):
            return from_trace(args)
    if args.device:
        raise RooflineError("--device is read with --from-trace; the suite runs on the local device")
    if args.show:
        device = bench.load_local_device()  # one line with the fix when there is none
        if device.calibration is None:
            raise RooflineError(f"the cached device {device.name!r} has no calibration; run 'roofline calibrate'")
        sys.stdout.write(render(device.calibration))
        return 0
    with bench.writer_lock("roofline calibrate", args.wait):
        return _calibrate(args)


def _calibrate(args: argparse.Namespace) -> int:
    """The suite on the cached device, read and written while holding the writers' lock."""
    from roofline import bench
    from roofline.bench.calibrate import run_calibration, suite, suite_done

    device = bench.load_local_device()  # one line with the fix when there is none
    total = len(suite(args.quick))
    done = [0]

    def progress(fraction: float, what: str) -> None:
        done[0] = suite_done(fraction, total)

    try:
        cal, calibrated = run_calibration(device, quick=args.quick, cuda=args.gpu, progress=progress)
    except KeyboardInterrupt:
        raise RooflineError(f"calibration interrupted after {done[0]} of {total} suite ops; nothing written") from None
    text = render(cal)
    sys.stdout.write(text)
    if args.strict and cal.quality:
        raise RooflineError(f"refused (--strict): the calibration was measured under contention: "
                            f"{'; '.join(cal.quality)}; nothing written")
    # every output only once measuring is over (an interrupted run leaves every file as it was)
    if args.out:
        from roofline.core.fileio import write_text_atomic

        write_text_atomic(args.out, _json(cal))
        print(f"saved: {args.out}")
    print(f"cached: {bench.save_local_device(calibrated)}  (--device local --forecast uses it)")
    return 0


def from_trace(args: argparse.Namespace) -> int:
    """``--from-trace``: fit from a trace's measured ops (the held-out ones forecast, not fitted)."""
    from dataclasses import replace

    from roofline import bench
    from roofline.bench.machine import now
    from roofline.bench.resolve import resolve_device
    from roofline.core.fileio import write_text_atomic
    from roofline.core.text import shown_path
    from roofline.frontends.trace import from_trace as analyse_trace
    from roofline.hardware.calibration import fit_measured

    local = args.device in (None, "local")
    if args.show:
        raise RooflineError("--show prints the cached calibration; drop --from-trace")
    if not local and not args.out:
        raise RooflineError(f"--from-trace with device {args.device!r}: give --out FILE (a catalog or file device "
                            "is not written; --calibration FILE then applies it)")
    device = resolve_device(args.device or "local")
    bare = replace(device, calibration=None)
    a = analyse_trace(args.from_trace, bare)
    tf = fit_measured(a, device=device.name, machine=device.bench.machine if device.bench else "", date=now(),
                      source=f"trace {shown_path(args.from_trace)}")
    parts = [render(tf.calibration)]
    if tf.held_out:
        parts.append(f"  held out of the fit ({len(tf.held_out)} ops): median |forecast/measured - 1| "
                     f"{tf.held_out_error:.1%} (fitted ops: {tf.calibration.error:.1%})\n")
        parts.extend(f"    {p.name[:42]:42} {p.term:8} {format_seconds(p.measured):>10} "
                     f"{format_seconds(p.forecast):>10} {p.error:>+7.0%}\n" for p in tf.held_out)
    sys.stdout.write("".join(parts))
    if args.out:
        write_text_atomic(args.out, _json(tf.calibration))
        print(f"saved: {args.out}")
    if local:
        print(f"cached: {bench.save_local_device(replace(device, calibration=tf.calibration))}  "
              "(--device local --forecast uses it)")
    return 0


def _json(cal: Calibration) -> str:
    import json

    return json.dumps(cal.to_dict(), indent=1) + "\n"


def render(cal: Calibration) -> str:
    """The curves, then every suite op with its measured and fitted time, then what failed."""
    from roofline.core.text import display, visible  # every name here comes from a cache or calibration file: data

    lines = [f"WARNING: NOISY calibration: {display('; '.join(cal.quality), 512)}"] if cal.quality else []
    lines.extend([f"calibration of {display(cal.device)}", f"  {display(cal.describe())}",
                  f"  suite: {display(cal.suite)}", "  curves:"])
    lines.extend(f"    {display(c.describe(), 512)}" for c in cal.curves)
    from roofline.render.fit import Column, table_lines, terminal_width, wrap

    width = terminal_width()
    lines = [wrap(line, width) for line in lines]
    rows = [{"suite op": display(p.name), "term": display(p.term, 24), "measured": format_seconds(p.measured),
             "forecast": format_seconds(p.forecast), "error": f"{p.error:+.0%}"} for p in cal.points]
    columns = [Column("suite op", kind="name", keep=True), Column("term", kind="label", priority=1),
               Column("measured", keep=True), Column("forecast", keep=True),
               Column("error", keep=True, requires=("measured", "forecast"))]
    lines.extend(table_lines(columns, rows, width, more="--json has every figure"))
    lines.extend(wrap(f"  failed: {display(f)}", width) for f in cal.failed)
    return visible("\n".join(lines) + "\n")
