"""roofline demo: the main job on embedded defaults; writes roofline-report/index.html and PNGs."""

from __future__ import annotations

import argparse
import sys

from roofline.commands._common import EXAMPLE_HELP


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="measure this machine, analyse Llama-3-8B and a small CNN, write roofline-report/",
                       formatter_class=EXAMPLE_HELP,
                       description="Quick-measure this machine (cached after the first run), analyse Llama-3-8B "
                                   "prefill and decode here and on a catalog GPU, measure a small CNN for real on "
                                   "this CPU (with torch installed), and write an interactive HTML report plus PNG "
                                   "charts into a folder; prints where they are and a short summary.",
                       epilog="examples:\n  roofline demo\n  roofline demo --out /tmp/report\n"
                              "  roofline demo --full     # the full benchmark instead of --quick")
    p.add_argument("--out", default="roofline-report", help="output folder (default: roofline-report)")
    p.add_argument("--full", action="store_true", help="measure this machine with the full benchmark, not --quick")
    p.add_argument("--tiny", action="store_true", help="a seconds-long benchmark and fewer repeats (for tests)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from roofline.core.text import visible
    from roofline.demo import prepare_outdir, run_demo
    from roofline.words.summary import headline

    prepare_outdir(args.out)

    from roofline.render.fit import warn, wrap

    def progress(text: str) -> None:
        warn(text, sys.stderr)  # as wide as the terminal

    result = run_demo(args.out, quick=not args.full, tiny=args.tiny, progress=progress)
    for key, s in result.summaries.items():
        print(wrap(visible(f"== {result.titles[key]}\n  {headline(s)}")))
    for note in result.notes:
        print(wrap(note))
    print(f"done in {result.seconds['total']:.0f} s; wrote:")
    for f in result.files:
        print(f"  {f}")
    print(f"open {result.report} in a browser for the interactive report")
    return 0
