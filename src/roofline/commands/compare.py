"""roofline compare WORKLOAD_OR_MODEL --devices a,b,c [--precision bf16,fp8]: rank devices by roofline time."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline.analysis import Analysis
from roofline.commands._common import EXAMPLE_HELP
from roofline.errors import RooflineError

EPILOG = """\
examples:
  roofline compare llama-3-8b --devices h100,mi300x,l4,local --phase decode --batch 8
  roofline compare llama-3-8b --devices h100,a100 --precision bf16,fp8 -o compare.png --html compare.html
  roofline compare model.json --devices h100,l4 --csv ranking.csv

WORKLOAD_OR_MODEL: a workload file (.json roofline.workload/1 or .csv), a saved analysis
(.json roofline.analysis/1; its workload is used), an .onnx file, or a bundled LLM name
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
    llm.add_argument("--phase", choices=("prefill", "decode", "generate"), default="decode")
    llm.add_argument("--batch", type=int, default=1)
    llm.add_argument("--prompt", type=int, default=None)
    llm.add_argument("--context", type=int, default=None)
    llm.add_argument("--gen", type=int, default=None)
    p.add_argument("-o", "--output", metavar="CHART", help="chart with every device (.png, .svg or .pdf)")
    p.add_argument("--html", metavar="FILE", help="interactive report: the comparison chart, then each device")
    p.add_argument("--json", metavar="FILE", help="the ranking as JSON")
    p.add_argument("--csv", metavar="FILE", help="the ranking as CSV")
    p.set_defaults(func=run)


@dataclass
class Row:
    device: str
    precision: str
    time: float
    tokens_per_s: float
    binding: str
    analysis: Analysis
    memory: str = ""  # LLMs: footprint per device against the device's capacity

    def to_dict(self, best: float) -> dict[str, Any]:
        return {"device": self.device, "precision": self.precision, "time_s": self.time,
                "tokens_per_s": None if math.isnan(self.tokens_per_s) else self.tokens_per_s,
                "x_best": self.time / best, "binding_roof": self.binding, "memory": self.memory or None}


def load_workload(spec: str, args: argparse.Namespace) -> tuple[Any, Any]:
    """(Workload, LLM spec or None) from a file or a model name."""
    from roofline.workload import Workload

    path = Path(spec)
    low = spec.lower()
    if low.endswith(".onnx"):
        from roofline.frontends.onnx import from_onnx

        return from_onnx(spec), None
    if low.endswith(".csv"):
        return Workload.load(spec), None
    if low.endswith(".json") or path.is_file():
        from roofline.fileio import read_json

        data = read_json(spec)
        if isinstance(data, dict) and str(data.get("schema", "")).startswith("roofline.analysis"):
            from roofline.analysis import Analysis

            return Analysis.from_dict(data, where=spec).workload, None
        return Workload.from_dict(data, where=spec), None
    from roofline.advice import _llm_spec
    from roofline.frontends.llm import from_llm

    w = from_llm(spec, phase=args.phase, batch=args.batch, prompt=args.prompt, context=args.context, gen=args.gen)
    return w, _llm_spec(w)


def at_precision(workload: Any, llm: Any, precision: str) -> Any:
    """The workload re-run at ``precision`` (see the command's help)."""
    import numpy as np

    from roofline.advice import MATRIX_KINDS, llm_workload, with_matrix_precision
    from roofline.device import PRECISIONS

    if precision not in PRECISIONS:
        raise RooflineError(f"--precision: {precision!r} is not one of {', '.join(PRECISIONS)}")
    if llm is not None:
        from dataclasses import replace

        from roofline.llm.model import NAMES

        if precision not in NAMES:
            raise RooflineError(f"--precision: {precision!r} is not available for LLMs; use one of "
                                f"{', '.join(sorted(set(NAMES.values())))}")
        p = replace(llm.precisions, weights=precision, activations=precision)
        return llm_workload(llm, precisions=p)
    mask = np.isin(workload.column("kind"), MATRIX_KINDS)
    w = with_matrix_precision(workload, precision, mask) if mask.any() else workload
    # the other ops store their data at that precision too
    from roofline.advice import BITS

    old = np.asarray([BITS[p] for p in w.tables["precision"]], dtype=float)[w.columns["precision"]]
    scale = np.where(~mask & (old > BITS[precision]), BITS[precision] / old, 1.0)
    return w.replace(bytes_read=w.columns["bytes_read"] * scale, bytes_written=w.columns["bytes_written"] * scale,
                     weight_bytes=w.columns["weight_bytes"] * scale,
                     precision=np.where(~mask, precision, w.column("precision")))


def binding_roof(a: Analysis) -> str:
    """The roof carrying most of the time: 'HBM 3.35 TB/s (memory, 92%)' or 'bf16 matrix 989.4 TFLOP/s (...)'."""
    from roofline.units import format_bandwidth, format_flops

    share = a.time_share_by_bound()
    bound = max(share, key=lambda k: share[k]) if share else "memory"
    import numpy as np

    if bound == "compute":
        t = np.bincount(a.ceiling_index, weights=a.total_op_time * (a.bound == "compute"), minlength=len(a.ceilings))
        c = a.ceilings[int(np.argmax(t))]
        return f"{c.label} {format_flops(c.flops)} (compute, {share[bound]:.0%} of the time)"
    if bound == "interconnect" and a.device.interconnect is not None:
        ic = a.device.interconnect
        return f"{ic.name or 'interconnect'} {format_bandwidth(ic.bandwidth)} (interconnect, {share[bound]:.0%})"
    m = a.device.main_memory
    return f"{m.level} {format_bandwidth(m.bandwidth)} (memory, {share.get('memory', 0):.0%} of the time)"


def memory_fit(workload: Any, device: Any) -> str:
    """LLMs: 'fits (16.6 of 80 GB)' or 'DOES NOT FIT (141.2 > 80 GB)' per device; '' otherwise.

    A ranking by roofline time alone would put a model that cannot be loaded first."""
    from roofline.advice import _llm_spec

    spec = _llm_spec(workload)
    cap = device.main_memory.capacity
    if spec is None or not cap:
        return ""
    from roofline.llm.metrics import footprint

    need = footprint(spec).total
    if need <= cap:
        return f"fits ({need / 1e9:.1f} of {cap / 1e9:.0f} GB)"
    return f"DOES NOT FIT ({need / 1e9:.1f} > {cap / 1e9:.0f} GB)"


def compare(workload: Any, devices: list[Any], precisions: list[str], llm: Any = None) -> list[Row]:
    """Every (device, precision) analysed, fastest first."""
    from roofline.advice import tokens
    from roofline.analysis import analyze

    rows = []
    for prec in precisions:
        w = workload if prec == "as given" else at_precision(workload, llm, prec)
        for d in devices:
            a = analyze(w, d)
            tps = tokens(w) / a.total_time if llm is not None and a.total_time > 0 else math.nan
            rows.append(Row(d.name, prec, a.total_time, tps, binding_roof(a), a, memory_fit(w, d)))
    rows.sort(key=lambda r: r.time)
    return rows


def run(args: argparse.Namespace) -> int:
    import json

    from roofline.catalog import resolve_device
    from roofline.fileio import check_writable, write_text_atomic
    from roofline.render import check_chart_path
    from roofline.units import format_seconds

    if args.output:
        check_chart_path(args.output)
    for attr, exts in (("html", (".html", ".htm")), ("json", (".json",)), ("csv", (".csv",))):
        path = getattr(args, attr)
        if path:
            if Path(path).suffix.lower() not in exts:
                raise RooflineError(f"--{attr} expects a {' or '.join(exts)} file, got {path!r}")
            check_writable(path)
    names = [n.strip() for n in args.devices.split(",") if n.strip()]
    if not names:
        raise RooflineError("--devices: give at least one device, e.g. --devices h100,mi300x,l4")
    devices = [resolve_device(n) for n in names]
    precisions = [p.strip().lower() for p in args.precision.split(",")] if args.precision else ["as given"]
    workload, llm = load_workload(args.workload, args)
    rows = compare(workload, devices, precisions, llm)
    best = rows[0].time
    print(f"{workload.title}: {len(workload)} ops, ranked by roofline time")
    head = f"{'#':>2}  {'device':<32} {'precision':<9} {'time':>10} {'x best':>7}"
    if llm is not None:
        head += f" {'tokens/s':>12}"
    print(head + "  binding roof")
    for k, r in enumerate(rows, 1):
        line = f"{k:>2}  {r.device[:32]:<32} {r.precision:<9} {format_seconds(r.time):>10} {r.time / best:>7.3g}"
        if llm is not None:
            line += f" {r.tokens_per_s:>12,.0f}"
        print(line + f"  {r.binding}" + (f"; {r.memory}" if r.memory else ""))
    series = [r.analysis for r in rows]
    if args.output:
        from roofline.render.compare import save_compare_chart

        save_compare_chart(series, args.output, title=f"{workload.title}: devices compared",
                           labels=[_label(r) for r in rows])
        print(f"chart: {args.output}")
    if args.html:
        from roofline.render.html import Section, compare_figure, save_report

        fig = compare_figure(series, f"{workload.title}: devices compared", [_label(r) for r in rows])
        intro = [f"{k}. {_label(r)}: {format_seconds(r.time)} (x{r.time / best:.3g} the best)"
                 + (f", {r.tokens_per_s:,.0f} tokens/s" if llm is not None else "") + f"; binding roof {r.binding}"
                 + (f"; memory {r.memory}" if r.memory else "")
                 for k, r in enumerate(rows, 1)]
        save_report([Section(f"{workload.title} on {_label(r)}", r.analysis) for r in rows], args.html,
                    title=f"{workload.title}: devices compared", extra_charts=[("all devices", fig)], intro=intro)
        print(f"html: {args.html}")
    if args.json:
        write_text_atomic(args.json, json.dumps({"schema": "roofline.compare/1", "workload": workload.title,
                                                 "rows": [r.to_dict(best) for r in rows]}, indent=2) + "\n")
        print(f"json: {args.json}")
    if args.csv:
        import csv
        import io

        buf = io.StringIO()
        cw = csv.writer(buf, lineterminator="\n")
        keys = list(rows[0].to_dict(best))
        cw.writerow(keys)
        for r in rows:
            d = r.to_dict(best)
            cw.writerow(["" if d[k] is None else d[k] for k in keys])
        write_text_atomic(args.csv, buf.getvalue())
        print(f"csv: {args.csv}")
    return 0


def _label(r: Row) -> str:
    return r.device if r.precision == "as given" else f"{r.device} ({r.precision})"
