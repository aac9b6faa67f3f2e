"""``roofline trace``: measured points from torch.profiler traces recorded anywhere (CPU or GPU, one file per rank)."""

from __future__ import annotations

import argparse

from roofline.commands._common import EXAMPLE_HELP, add_device_option, add_output_options, check_outputs, emit, resolve

EPILOG = """\
examples:
  roofline trace trace.json --device h100-sxm
  roofline trace trace.json.gz --device a100 --group-by type --html report.html
  roofline trace rank0.json rank1.json rank2.json rank3.json --device h100-sxm   # one file per rank
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
its share.  Several files are the ranks of one run: each rank's figures are printed and the
slowest rank is analysed.  The file is read as a stream (memory grows with the events kept,
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
    add_output_options(p, group_by=("module", "type", "kind"))
    p.set_defaults(func=run, group_by="module")


def run(args: argparse.Namespace) -> int:
    from roofline.frontends.trace import from_trace

    check_outputs(args)
    device = resolve(args.device)
    analysis = from_trace(args.traces, device)
    emit(analysis, args, title=f"{analysis.workload.title} on {device.name}")
    return 0
