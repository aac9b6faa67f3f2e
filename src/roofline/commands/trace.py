"""``roofline trace``: measured points from torch.profiler traces recorded anywhere (CPU or GPU, one file per rank)."""

from __future__ import annotations

import argparse

from roofline.commands._common import EXAMPLE_HELP, add_device_option, add_output_options, check_outputs, emit, resolve

EPILOG = """\
examples:
  roofline trace trace.json --device h100-sxm
  roofline trace trace.json.gz --device a100 --group-by type --html report.html
  roofline trace rank0.json rank1.json rank2.json rank3.json --device h100-sxm   # one file per rank
  roofline trace 'run/rank*.json' --device h100-sxm --jobs 4 --ranks ranks.html   # quoted: roofline expands it
  roofline trace 'run/rank*.json' --device h100-sxm --dask local                  # a LocalCluster, 2 processes
  roofline trace 'run/rank*.json' --device h100-sxm --dask tcp://scheduler:8786   # each worker reads its files
  roofline trace trace.json --device h100-sxm --analyses all        # idle, kernels, overlap, launch, ...
  roofline trace trace.json --device h100-sxm --analyses all --html report.html   # as report sections
  roofline trace before.json --device h100-sxm --diff after.json    # what got slower, and why
  roofline calibrate --from-trace trace.json --device h100-sxm --out h100.cal.json

Record a trace (torch >= 2.4; Chrome trace schemaVersion 1):
  from torch.profiler import profile, ProfilerActivity
  with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
               with_stack=True) as prof:
      model(x)
  prof.export_chrome_trace("trace.json")

Each aten op becomes a measured point: its recorded call is rebuilt on meta tensors and
costed by the same tables as 'roofline torch'.  GPU traces use kernel time, joined to the
op through the launch's correlation id; CPU traces the op's own time.  with_stack=True and
record_function scopes give the module path (--group-by module; without them, one group).  Time in
no op (wrappers, views, calls that could not be rebuilt, unlinked kernels) is listed with
its share.  With profiler steps (ProfilerStep#N), the time per step is their median and quartiles (steps
are not runs); a measured time more than 100x the bound is noted first, with what that usually means.
Several files are the ranks of one run: each rank's figures are printed and the slowest rank (the
longest step time) is analysed, after the cross-rank view: per rank compute, exposed and overlapped
communication, memcpy and idle; each collective (lined up by process group and sequence number), its
waits and the rank that arrived last; per rank the time it waited and the delay it caused the others;
stragglers (the ranks the others waited for) with their cause (--ranks FILE: .json, .csv, or .html /
.png with the heat map, stacked bars and the straggler's ops against the median rank's).  The file is read as a stream (memory grows with the events kept,
not the file size); .json.gz is read as is.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("trace", help="roofline of a torch.profiler trace (measured points, any machine)",
                              description="Place every aten op of a torch.profiler Chrome trace as a measured "
                                          "point under a device's roofs, with FLOPs and bytes from the PyTorch "
                                          "frontend's cost tables.",
                              epilog=EPILOG, formatter_class=EXAMPLE_HELP)
    p.add_argument("traces", nargs="+", metavar="TRACE", help="trace.json or trace.json.gz; several: one per rank")
    add_device_option(p)
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="read the ranks in N local processes")
    p.add_argument("--dask", metavar="ADDRESS", default=None,
                   help="read the ranks on a Dask cluster: 'local' (a LocalCluster of 2 worker processes) or a "
                        "scheduler address; workers open the files themselves")
    p.add_argument("--skip-bad-ranks", action="store_true", help="go on without a rank that cannot be read")
    p.add_argument("--ranks", metavar="FILE", default=None, help="write the cross-rank view (.json, .csv, .html; .png, .svg, .pdf: its three charts)")
    p.add_argument("--analyses", metavar="LIST", default=None,
                   help="also run these trace analyses: 'all' or a comma-separated list of idle, kernels, overlap, "
                        "launch, critical-path, memory; printed, and sections of the --html report (-o writes only "
                        "the roofline chart: .png, .svg or .pdf)")
    p.add_argument("--analyses-json", metavar="FILE", default=None,
                   help="with --analyses: write them as JSON (roofline.trace-analyses/1)")
    p.add_argument("--diff", metavar="TRACE_B", default=None,
                   help="compare TRACE_B against the (one) trace: ops and kernels matched, each change attributed "
                        "to work, device, efficiency or host")
    p.add_argument("--diff-device", metavar="DEVICE", default=None,
                   help="with --diff: the device TRACE_B ran on, when not --device (the roofs' expected ratio)")
    add_output_options(p, group_by=("module", "type", "kind"))
    p.set_defaults(func=run, group_by="module", cli_parameters={"diff_traces.b": "--diff"})


def run(args: argparse.Namespace) -> int:
    from roofline.core.errors import RooflineError
    from roofline.core.fileio import check_writable
    from roofline.frontends.trace import analyse_trace, from_trace, read_traces, with_ranks
    from roofline.frontends.trace.ranks import expand
    from roofline.frontends.workers import start_early
    from roofline.render.ranks import IMAGE_EXTENSIONS, TEXT_EXTENSIONS, render, view_lines

    if args.jobs < 1:
        raise RooflineError(f"--jobs {args.jobs}: give a number of processes >= 1")
    _check_given(args)
    from roofline.core.limits import check_work, max_jobs
    from roofline.frontends.trace.ranks import check_address

    check_work("--jobs", args.jobs, max_jobs(), "ROOFLINE_MAX_JOBS", " processes")
    check_address(args.dask, "trace", "--dask")
    if args.output and str(args.output).lower().endswith((".html", ".htm")):
        raise RooflineError(f"-o {args.output}: -o writes the roofline chart (.png, .svg or .pdf); the report, with "
                            f"the analyses as sections, is --html {args.output}")
    start_early(args.jobs, args.dask)  # started by roofline.cli already, unless an option was abbreviated
    check_outputs(args)
    if args.ranks:
        if not str(args.ranks).lower().endswith((*TEXT_EXTENSIONS, *IMAGE_EXTENSIONS)):
            raise RooflineError(f"--ranks {args.ranks}: give a .json, .csv, .html, .png, .svg or .pdf file")
        check_writable(args.ranks)
    device = resolve(args.device)
    files = expand(args.traces)
    one_file = len(files) == 1 and args.jobs == 1 and args.dask is None and not args.ranks
    _check_extras(args, one_file)
    if args.diff or args.analyses and one_file:
        return _one_file_extras(args, files, device)
    if len(files) == 1 and args.jobs == 1 and args.dask is None and not args.ranks:
        analysis = from_trace(files, device)
        emit(analysis, args, title=f"{analysis.workload.title} on {device.name}")
        return 0

    view, work = read_traces(files, jobs=args.jobs, dask=args.dask, skip_bad_ranks=args.skip_bad_ranks,
                             with_workload=True)
    analysis = analyse_trace(with_ranks(view, work), device)
    per_rank = _per_rank_analyses(view, files, device, args.analyses) if args.analyses else []
    # every output rendered before any is written, and all written together (or none: a fifo nobody reads)
    more = [("ranks", args.ranks, render(view, args.ranks))] if args.ranks else []
    text, analyses_out = _per_rank_text(args, view, per_rank) if per_rank else ("", None)
    print("\n".join(view_lines(view)))
    emit(analysis, args, title=f"{analysis.workload.title} on {device.name}", html_after=_html_ranks(args, per_rank),
         more_text=text,
         more_outputs=[*more, *([("analyses", args.analyses_json, analyses_out)] if analyses_out is not None else [])])
    return 0


def _check_given(args: argparse.Namespace) -> None:
    """An option given is never read as not given: an empty --diff, --diff-device, --analyses or --analyses-json is
    one line (not the report without it); --analyses-json names a .json file; --jobs and --dask (two ways of reading
    the ranks in parallel) are not given together."""
    from roofline.core.errors import RooflineError
    from roofline.core.fileio import shown

    for option in ("diff", "diff_device", "analyses", "analyses_json"):
        value = getattr(args, option)
        if value is not None and not value.strip():
            flag = "--" + option.replace("_", "-")
            raise RooflineError(f"{flag} {shown(value)}: empty; give {flag} a value, or leave the option out")
    if args.analyses_json and not args.analyses_json.lower().endswith(".json"):
        raise RooflineError(f"--analyses-json {shown(args.analyses_json)}: give a .json file (the analyses are "
                            "written as JSON, roofline.trace-analyses/1)")
    if args.dask is not None and args.jobs != 1:
        raise RooflineError(f"--jobs {args.jobs} and --dask: give one (local processes, or a Dask cluster's workers)")


def _check_extras(args: argparse.Namespace, one_file: bool) -> None:
    """The options of ``--diff`` and ``--analyses``, checked before anything is read."""
    from roofline.core.errors import RooflineError
    from roofline.core.fileio import check_writable
    from roofline.frontends.trace.analyses.suite import parse_analyses

    if args.diff and not one_file:
        raise RooflineError("--diff compares one trace file (one rank) with another: give one TRACE, without "
                            "--ranks, --jobs or --dask")
    if args.diff_device and not args.diff:
        raise RooflineError("--diff-device goes with --diff TRACE_B")
    if args.analyses_json and not args.analyses:
        raise RooflineError("--analyses-json goes with --analyses LIST")
    if args.analyses:
        parse_analyses(args.analyses)  # a bad list is one line before any reading
    if args.analyses_json:
        check_writable(args.analyses_json)


def _one_file_extras(args: argparse.Namespace, files: list, device: object) -> int:
    """``--diff`` and ``--analyses`` on one trace file (one rank)."""
    from roofline.frontends.trace import analyse_with_analyses, diff_traces
    from roofline.render.trace_analyses import analyses_json, analyses_lines, diff_lines
    from roofline.render.trace_analyses_html import analyses_html

    if args.diff:
        d = diff_traces(files[0], args.diff, device, resolve(args.diff_device) if args.diff_device else None)
        print("\n".join(diff_lines(d)))
        if not args.analyses:
            return 0
    analysis, more = analyse_with_analyses(files[0], device, args.analyses)
    html = [analyses_html(more)] if args.html else []
    out = [("analyses", args.analyses_json, analyses_json(more).encode())] if args.analyses_json else []
    emit(analysis, args, title=f"{analysis.workload.title} on {device.name}",  # type: ignore[attr-defined]
         html_after=html, more_text="".join(f"{line}\n" for line in analyses_lines(more)), more_outputs=out)
    return 0


def _per_rank_analyses(view: object, files: list, device: object, asked: str) -> list:
    """``--analyses`` with several ranks: each rank's file read again and placed, its analyses on its own
    roofline points: [(rank, TraceAnalyses)] in the table's order."""
    from roofline.core.text import shown_path
    from roofline.frontends.trace import rank_analyses

    path_of = {shown_path(f): f for f in files}  # the summaries name each file as messages show it
    ranks = view.ranks  # type: ignore[attr-defined]
    per_rank = rank_analyses([path_of.get(r.file, r.file) for r in ranks], device, asked)
    return [(t.key, more) for t, more in zip(view.totals, per_rank, strict=True)]  # type: ignore[attr-defined]


def _html_ranks(args: argparse.Namespace, per_rank: list) -> list[str]:
    """The per-rank analyses as sections of the --html report (none without --html)."""
    from roofline.render.trace_analyses_html import ranks_analyses_html

    return [ranks_analyses_html(per_rank)] if args.html and per_rank else []


def _per_rank_text(args: argparse.Namespace, view: object, per_rank: list) -> tuple[str, bytes | None]:
    """Each rank's analyses as text (printed after the report) and the JSON --analyses-json asks for."""
    from roofline.render.trace_analyses import analyses_lines, ranks_analyses_json

    text: list[str] = []
    for (key, more), r in zip(per_rank, view.ranks, strict=True):  # type: ignore[attr-defined]
        text.extend([f"\nrank {key} ({r.file}): analyses", *analyses_lines(more)])
    return "".join(f"{line}\n" for line in text), ranks_analyses_json(per_rank).encode() if args.analyses_json else None
