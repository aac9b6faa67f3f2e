"""roofline compare WORKLOAD_OR_MODEL --devices a,b,c [--precision bf16,fp8]: rank devices by roofline time."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from roofline.commands._common import EXAMPLE_HELP, add_moe_options, add_phase_option, add_tf32_option, count_arg
from roofline.core.errors import RooflineError
from roofline.words.comparison import CompareRow, answer, compare, glossary, ranked_by, time_basis, times_best, vs_best

if TYPE_CHECKING:
    from roofline.work.workload import Workload

EPILOG = """\
examples:
  roofline compare llama-3-8b --devices h100,mi300x,l4,local --phase decode --batch 8
  roofline compare llama-3-8b --devices h100,a100 --precision bf16,fp8 -o compare.png --html compare.html
  roofline compare model.json --devices h100,l4 --csv ranking.csv

WORKLOAD_OR_MODEL: a workload file (.json roofline.workload/3 or .csv), a saved analysis
(.json roofline.analysis/2; its workload is used), an .onnx file, or a bundled LLM name
(see 'roofline llm --list'). --precision re-runs the workload at each precision: LLMs are
rebuilt with those weight/activation precisions; other workloads have their matrix-shaped
ops moved to the matrix unit at that precision and every op's bytes scaled by the bit ratio.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="rank devices by roofline time for one workload or model (what-if)",
                       formatter_class=EXAMPLE_HELP, epilog=EPILOG,
                       description="Analyse one workload on several devices (and precisions), rank them by "
                                   "roofline time (and tokens/s for LLMs), name the binding roof on each, and draw "
                                   "every device's points on one chart.")
    p.add_argument("workload", metavar="WORKLOAD_OR_MODEL", help="workload/analysis file, .onnx file, or LLM name")
    p.add_argument("--devices", required=True, help="comma-separated catalog names, device JSON files or 'local'")
    p.add_argument("--precision", default=None, help="comma-separated precisions, e.g. bf16,fp8 (default: as given)")
    llm = p.add_argument_group("LLM options (when WORKLOAD_OR_MODEL is a model name)")
    add_phase_option(llm)  # one definition with 'roofline llm': the same choices and default
    llm.add_argument("--batch", type=count_arg, default=1, help="sequences per step (default 1)")
    llm.add_argument("--prompt", type=int, default=None, metavar="TOKENS", help="prompt length (default 1024)")
    llm.add_argument("--context", type=int, default=None, metavar="TOKENS",
                     help="decode: tokens attended to, KV cache length (default: --prompt)")
    llm.add_argument("--gen", type=int, default=None, metavar="TOKENS", help="decode steps for generate (default 256)")
    llm.add_argument("--tp", type=int, default=1, metavar="N",
                     help="tensor-parallel devices (per-device figures; collectives on each device's interconnect)")
    add_moe_options(llm)
    add_tf32_option(p)
    p.add_argument("--forecast", action="store_true",
                   help="also forecast each device's real time beside its bound (achievable roofs, overhead floor, "
                        "calibration) and rank by the forecast")
    p.add_argument("-o", "--output", metavar="CHART", help="chart with every device (.png, .svg or .pdf)")
    p.add_argument("--html", metavar="FILE", help="interactive report: the comparison chart, then each device")
    p.add_argument("--json", metavar="FILE", help="the ranking as JSON")
    p.add_argument("--csv", metavar="FILE", help="the ranking as CSV")
    p.set_defaults(func=run)


def load_workload(spec: str, args: argparse.Namespace) -> Workload:
    """The workload in a file, or of a model name."""
    from roofline.work.workload import Workload

    path = Path(spec)
    low = spec.lower()
    if (args.moe_load != "balanced" or args.mtp) and (low.endswith((".onnx", ".csv", ".json")) or path.is_file()):
        raise RooflineError("--moe-load and --mtp set up an LLM's op table: give a model name, not a file")
    if low.endswith(".onnx"):
        from roofline.frontends.onnx import from_onnx

        return from_onnx(spec)
    if low.endswith(".csv"):
        return Workload.load(spec)
    if low.endswith(".json") or path.is_file():
        from roofline.core.fileio import read_json

        data = read_json(spec)
        if isinstance(data, dict) and str(data.get("schema", "")).startswith("roofline.analysis"):
            from roofline.engine.analysis import Analysis

            return Analysis.from_dict(data, where=spec).workload
        return Workload.from_dict(data, where=spec)
    from roofline.frontends.llm import from_llm

    return from_llm(spec, phase=args.phase, batch=args.batch, prompt=args.prompt, context=args.context, gen=args.gen,
                    tp=args.tp, moe_load=args.moe_load, mtp=args.mtp)


def run(args: argparse.Namespace) -> int:
    from roofline.bench.resolve import resolve_device
    from roofline.commands._common import write_all

    _check_outputs(args)
    names = [n.strip() for n in args.devices.split(",") if n.strip()]
    if not names:
        raise RooflineError("--devices: give at least one device, e.g. --devices h100,mi300x,l4")
    devices = [resolve_device(n) for n in names]
    precisions = [p.strip().lower() for p in args.precision.split(",")] if args.precision else ["as given"]
    workload = load_workload(args.workload, args)
    rows = compare(workload, devices, precisions, forecast=args.forecast, tf32=args.tf32)
    lines = _table_lines(workload, rows, args.forecast)
    # every output rendered first, then all written together: a failure leaves no file half-made
    outputs = _outputs(args, workload, rows)
    print("\n".join(lines))
    write_all(outputs)
    return 0


def _check_outputs(args: argparse.Namespace) -> None:
    """Every output path checked (extension, writable folder) before anything is computed."""
    from roofline.core.fileio import check_writable
    from roofline.render import check_chart_path

    if args.output:
        check_chart_path(args.output)
    for attr, exts in (("html", (".html", ".htm")), ("json", (".json",)), ("csv", (".csv",))):
        path = getattr(args, attr)
        if path:
            if Path(path).suffix.lower() not in exts:
                raise RooflineError(f"--{attr} expects a {' or '.join(exts)} file, got {path!r}")
            check_writable(path)


def _table_lines(workload: Workload, rows: list[CompareRow], forecast: bool) -> list[str]:
    """The ranking as the terminal shows it (:mod:`roofline.render.fit`: as wide as the terminal), with each
    fallback's note under it."""
    from roofline.core.text import display
    from roofline.core.units import format_count, format_seconds
    from roofline.render.fit import Column, table_lines, terminal_width, wrap_line

    llm = workload.llm
    width = terminal_width()
    basis = time_basis(workload)[0]  # the time column is named by its basis (run time, per token, TTFT)
    lines = wrap_line(answer(workload, rows), width)
    lines.extend(wrap_line(f"{display(workload.title)}: {len(workload)} ops, ranked by {ranked_by(rows)}", width))
    # an uncalibrated device's forecast is its bound: marked '*', what each such forecast is said under the table
    labels = dict.fromkeys(r.uncalibrated for r in rows if r.uncalibrated)
    cells = [{"#": str(k), "device": display(r.device), "precision": r.precision_label, basis: format_seconds(r.time),
              "vs best": vs_best(k, x), "tokens/s": format_count(r.tokens_per_s),
              "forecast": format_seconds(r.forecast) + ("*" if r.uncalibrated else ""),
              "binding roof": display(r.binding), "memory": display(r.memory) or "-"}
             for k, (r, x) in enumerate(zip(rows, times_best(rows), strict=True), 1)]
    columns = [Column("#", keep=True), Column("device", kind="name", keep=True),
               Column("precision", kind="label", priority=3), Column(basis, keep=True),
               Column("vs best", kind="label", priority=4, requires=(basis,)),
               *((Column("tokens/s", priority=6),) if llm is not None else ()),
               *((Column("forecast", keep=True),) if forecast else ()),  # what the rows are ranked by
               Column("binding roof", kind="text", keep=True, min_width=28),
               # a device the model does not fit keeps the memory column: it decides the row
               *((Column("memory", kind="text", priority=7, min_width=24,
                         keep=any("not fit" in r.memory.lower() for r in rows)),) if any(r.memory for r in rows) else ())]
    lines.extend(table_lines(columns, cells, width, indent=0, more="--csv has every column"))
    # a precision a device has no roof for ran at its fallback: say so under the ranking
    lines.extend(x for n in dict.fromkeys(r.note for r in rows if r.note) for x in wrap_line(f"note: {display(n)}", width))
    lines.extend(x for label in labels for x in wrap_line(
        "* " + ", ".join(display(r.label) for r in rows if r.uncalibrated == label) + f": {label}", width))
    lines.extend(wrap_line(glossary(workload, rows), width))
    return lines


def _outputs(args: argparse.Namespace, workload: Workload, rows: list[CompareRow]) -> list[tuple[str, str, bytes]]:
    """(kind, path, bytes) of every output asked for, all rendered before any is written."""
    import json

    series = [r.analysis for r in rows]
    title = f"{workload.title}: devices compared"
    outputs: list[tuple[str, str, bytes]] = []
    if args.output:
        from roofline.render.compare import compare_chart_bytes

        outputs.append(("chart", args.output, compare_chart_bytes(
            series, Path(args.output).suffix.lower().lstrip("."), title=title, labels=[_label(r) for r in rows])))
    if args.html:
        outputs.append(("html", args.html, _html_page(workload, rows, title)))
    if args.json:
        doc = {"schema": "roofline.compare/1", "workload": workload.title, "ranked_by": ranked_by(rows),
               "answer": answer(workload, rows), "time_basis": time_basis(workload)[2],
               "rows": [r.to_dict(x) for r, x in zip(rows, times_best(rows), strict=True)]}
        outputs.append(("json", args.json, (json.dumps(doc, indent=2) + "\n").encode("utf-8", "backslashreplace")))
    if args.csv:
        outputs.append(("csv", args.csv, _csv_bytes(rows)))
    return outputs


def _html_page(workload: Workload, rows: list[CompareRow], title: str) -> bytes:
    from roofline.core.units import format_count, format_seconds
    from roofline.render.html import Section, compare_figure, render_report

    llm = workload.llm
    fig = compare_figure([r.analysis for r in rows], title, [_label(r) for r in rows])
    head = time_basis(workload)[0]
    by = "forecast" if ranked_by(rows) == "forecast" else "bound"
    intro = [*(f"{k}. {_label(r)}: {format_seconds(r.ranked_time(by))} {head} {by} "
             + ("(the best)" if k == 1 else f"({vs_best(k, x)} as the best)")
             + (f", bound {format_seconds(r.time)}" if by == "forecast" else "")
             + (f" ({r.uncalibrated})" if r.uncalibrated else "")
             + (f", {format_count(r.tokens_per_s)} tokens/s" if llm is not None else "") + f"; binding roof {r.binding}"
             + (f"; memory {r.memory}" if r.memory else "") + (f"; {r.note}" if r.note else "")
               for k, (r, x) in enumerate(zip(rows, times_best(rows), strict=True), 1)), glossary(workload, rows)]
    page = render_report([Section(f"{workload.title} on {_label(r)}", r.analysis) for r in rows], title,
                         extra_charts=[("all devices", fig)], intro=intro, extra_headlines=[answer(workload, rows)])
    return page.encode("utf-8", "backslashreplace")


def _csv_bytes(rows: list[CompareRow]) -> bytes:
    import csv
    import io

    from roofline.core.text import for_csv

    buf = io.StringIO()
    cw = csv.writer(buf, lineterminator="\r\n")
    dicts = [r.to_dict(x) for r, x in zip(rows, times_best(rows), strict=True)]
    keys = list(dicts[0])
    cw.writerow(keys)
    for d in dicts:
        cw.writerow([for_csv("" if d[k] is None else d[k]) for k in keys])
    return buf.getvalue().encode("utf-8", "backslashreplace")


def _label(r: CompareRow) -> str:
    return r.device if r.precision == "as given" else f"{r.device} ({r.precision_label})"

