"""roofline report ANALYSIS.json: re-render a saved analysis (terminal, --html, -o chart, --csv) without the model."""

from __future__ import annotations

import argparse

from roofline.commands._common import EXAMPLE_HELP, add_output_options, check_outputs, emit


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="re-render a saved analysis (roofline.analysis/2 JSON) as table, HTML or chart",
                       formatter_class=EXAMPLE_HELP,
                       description="Load an analysis saved with --json and render it again: the terminal table, "
                                   "the interactive HTML report (--html), a chart (-o) or CSV. The source model is "
                                   "not needed. --advice also prints the levers with their computed effects.",
                       epilog="examples:\n  roofline llm llama-3-8b --device h100 --json run.json\n"
                              "  roofline report run.json --html report.html\n"
                              "  roofline report run.json -o chart.png --advice")
    p.add_argument("analysis", help="a saved analysis: JSON with schema roofline.analysis/2")
    add_output_options(p, group_by=("module", "type", "kind", "name"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from roofline.engine.analysis import Analysis

    check_outputs(args)
    analysis = Analysis.load(args.analysis)
    title = f"{analysis.workload.title} on {analysis.device.name}"
    emit(analysis, args, title=title)
    return 0
