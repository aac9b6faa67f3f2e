"""roofline demo: the main job on embedded defaults; writes roofline-report/."""

from __future__ import annotations

import argparse

from roofline.commands._common import EXAMPLE_HELP


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the embedded demo and write roofline-report/", formatter_class=EXAMPLE_HELP,
                       description="Analyse the embedded default workloads and write charts (and the report) "
                                   "into a folder; prints where they are.",
                       epilog="examples:\n  roofline demo\n  roofline demo --out /tmp/report")
    p.add_argument("--out", default="roofline-report", help="output folder (default: roofline-report)")
    p.add_argument("--full", action="store_true", help="measure this machine with the full benchmark, not --quick")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from roofline.demo import run_demo
    from roofline.fileio import check_writable
    from roofline.render.terminal import summary_lines

    check_writable(f"{args.out}/index.html")
    result = run_demo(args.out, quick=not args.full)
    for key, a in result.analyses.items():
        print(f"== {key}")
        for line in summary_lines(a):
            print("  " + line)
        for i in a.order()[:3]:
            print(f"  {a.workload.strings('name', i)}: {a.verdict(i)}")
    for note in result.notes:
        print(note)
    print("wrote:")
    for f in result.files:
        print(f"  {f}")
    return 0
