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
    add_output_options(p, group_by=("module", "type", "kind"))
    p.set_defaults(func=run, group_by="module")


def run(args: argparse.Namespace) -> int:
    from roofline.core.errors import RooflineError
    from roofline.core.fileio import check_writable, write_files_atomic
    from roofline.frontends.trace import analyse_trace, from_trace, read_traces, with_ranks
    from roofline.frontends.trace.ranks import expand
    from roofline.frontends.workers import start_early
    from roofline.render.ranks import IMAGE_EXTENSIONS, TEXT_EXTENSIONS, render, view_lines

    if args.jobs < 1:
        raise RooflineError(f"--jobs {args.jobs}: give a number of processes >= 1")
    from roofline.core.limits import check_work, max_jobs
    from roofline.frontends.trace.ranks import check_address

    check_work("--jobs", args.jobs, max_jobs(), "ROOFLINE_MAX_JOBS", " processes")
    check_address(args.dask, "trace", "--dask")
    start_early(args.jobs, args.dask)  # started by roofline.cli already, unless an option was abbreviated
    check_outputs(args)
    if args.ranks:
        if not str(args.ranks).lower().endswith((*TEXT_EXTENSIONS, *IMAGE_EXTENSIONS)):
            raise RooflineError(f"--ranks {args.ranks}: give a .json, .csv, .html, .png, .svg or .pdf file")
        check_writable(args.ranks)
    device = resolve(args.device)
    files = expand(args.traces)
    if len(files) == 1 and args.jobs == 1 and args.dask is None and not args.ranks:
        analysis = from_trace(files, device)
        emit(analysis, args, title=f"{analysis.workload.title} on {device.name}")
        return 0

    view, work = read_traces(files, jobs=args.jobs, dask=args.dask, skip_bad_ranks=args.skip_bad_ranks,
                             with_workload=True)
    ranks_out = render(view, args.ranks) if args.ranks else None  # rendered before anything is written
    analysis = analyse_trace(with_ranks(view, work), device)
    print("\n".join(view_lines(view)))
    emit(analysis, args, title=f"{analysis.workload.title} on {device.name}")
    if ranks_out is not None:
        write_files_atomic([(args.ranks, ranks_out)])
        print(f"ranks: {args.ranks}")
    return 0
