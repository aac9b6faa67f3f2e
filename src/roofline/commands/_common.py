"""Options and output shared by every analysing command (analyze, plot, llm, torch, hf, onnx, ...).

``add_device_option`` / ``add_output_options`` declare the flags; ``check_outputs``
validates every output path before any work starts (nothing half-written);
``emit`` prints the terminal table and writes every requested file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from roofline.analysis import Analysis
from roofline.device import Device
from roofline.errors import RooflineError
from roofline.fileio import check_writable

EXAMPLE_HELP = argparse.RawDescriptionHelpFormatter


def add_device_option(p: argparse.ArgumentParser, required: bool = True, default: str | None = None) -> None:
    p.add_argument("--device", "-d", required=required and default is None, default=default,
                   help="catalog name (see 'roofline devices'), a device JSON file, or 'local' (the last 'roofline bench')")


def add_output_options(p: argparse.ArgumentParser, group_by: tuple[str, ...] = ()) -> None:
    p.add_argument("-o", "--output", metavar="CHART", help="write the roofline chart (.png, .svg or .pdf)")
    p.add_argument("--json", metavar="FILE", help="write the analysis as JSON (roofline.analysis/1)")
    p.add_argument("--csv", metavar="FILE", help="write the per-op results as CSV")
    p.add_argument("--html", metavar="FILE", help="write the interactive HTML report")
    p.add_argument("--top", type=int, default=20, metavar="N", help="rows in the terminal table (default 20)")
    if group_by:
        p.add_argument("--group-by", choices=group_by, default=None, help="table rows: one per group instead of per op")
        p.add_argument("--depth", type=int, default=None, metavar="N", help="with --group-by module: module path depth")


def resolve(spec: str) -> Device:
    from roofline.catalog import resolve_device

    return resolve_device(spec)


def check_outputs(args: argparse.Namespace) -> None:
    """Validate output paths and extensions before doing any work."""
    from roofline.render import check_chart_path

    if getattr(args, "output", None):
        check_chart_path(args.output)
    for attr, ext in (("json", ".json"), ("csv", ".csv"), ("html", ".html")):
        path = getattr(args, attr, None)
        if path:
            if Path(path).suffix.lower() not in (ext, ".htm" if ext == ".html" else ext):
                raise RooflineError(f"--{attr} expects a {ext} file, got {path!r}")
            check_writable(path)


def emit(analysis: Analysis, args: argparse.Namespace, *, title: str | None = None) -> None:
    """Terminal table + every requested output file; prints where each file went."""
    from roofline.render import terminal

    group_by = getattr(args, "group_by", None)
    text = terminal.render(analysis, top=getattr(args, "top", 20), group_by=group_by,
                           depth=getattr(args, "depth", None), title=title)
    sys.stdout.write(text)
    write_outputs(analysis, args, title=title)


def write_outputs(analysis: Analysis, args: argparse.Namespace, *, title: str | None = None) -> None:
    if getattr(args, "output", None):
        from roofline.render.chart import save_chart

        save_chart(analysis, args.output, title=title)
        print(f"chart: {args.output}")
    if getattr(args, "json", None):
        analysis.save(args.json)
        print(f"json: {args.json}")
    if getattr(args, "csv", None):
        from roofline.render.export import save_csv

        save_csv(analysis, args.csv)
        print(f"csv: {args.csv}")
    if getattr(args, "html", None):
        from roofline.render.html import save_html

        save_html(analysis, args.html, title=title)
        print(f"html: {args.html}")
