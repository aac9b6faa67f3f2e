"""``roofline plan``: every parallel layout of an LLM training step on a system, ranked by step time."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from roofline.commands._common import EXAMPLE_HELP, count_arg, write_all
from roofline.core.errors import RooflineError
from roofline.core.text import display, visible
from roofline.core.units import format_count, format_gib, format_seconds
from roofline.planner.dims import names as dim_names
from roofline.planner.forecast import STATED_ERROR, tied

if TYPE_CHECKING:
    from roofline.planner import Estimate, Layout, ServingEstimate

EPILOG = """\
examples:
  roofline plan llama-3-70b --system dgx-h100 --nodes 16 --train --global-batch 1024 --seq 4096
  roofline plan llama-2-7b --system dgx-a100 --nodes 2 --train --global-batch 256 --price 2.5 -o plan.png
  roofline plan mixtral-8x7b --system dgx-h100 --nodes 8 --train --global-batch 512 --top 5 --json plan.json
  roofline plan llama-2-7b --system dgx-h100 --nodes 2 --train --global-batch 64 --layout tp=8,dp=2,zero=1
  roofline plan llama-3-405b --system dgx-h100 --nodes 16 --train --precision fp8 --layout tp=8,stages=7/8x14/7
  roofline plan llama-3-70b --system dgx-h100 --nodes 2 --serve --batch 64 --prompt 2048 --gen 512

Systems: dgx-h100, dgx-a100, mi300x-platform, tpu-v5p-64, cpu-cluster-100gbe (one node each, cited:
'roofline.catalog.get_system'), or a system JSON file (roofline.system/1).  Every layout tp x cp x pp x dp
that divides the system is tried (tp within a node; cp up to what splits the sequence into 2 cp chunks; pp
up to the layers, the first and last stages taking fewer when pp does not divide them; ep dividing the
experts and dp), with micro-batches of every size dividing the per-replica batch, interleaving, ZeRO
stages 0-3 and recomputation none, selective or full; those that fit the device's memory are ranked by
step time with --overlap of the communication hidden (default 0: none; the bound column hides all that
the schedule allows).  --precision fp8 runs the GEMMs on the fp8 matrix roof (Transformer Engine; the
bf16 weights, fp32 master weights and Adam state kept, plus the GEMM weights' fp8 copy).
--layout times one layout, fitting or not: tp=,pp=,dp=,cp=,ep=,zero=,mb=,recompute=,interleave=,sp=,
stages= (layers per stage, e.g. stages=7/8x14/7; unset: 1, zero 1, selective).  --price (per device-hour)
adds the cost per million tokens; -o CHART draws where each layout's time goes (ops, bubble, each
collective's exposed time, optimizer).
--serve: every replica of tp x cp x pp devices (dp replicas; an MoE model's experts split over ep of
them) decoding --batch sequences (pp micro-batches in flight), ranked by tokens/s; the step column is
the time per output token, ttft the prompt's.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    summary = f"rank parallel layouts ({', '.join(dim_names())}, ZeRO) of LLM training on a system"
    p = subparsers.add_parser("plan", help=summary,
                              description="Estimate an LLM training step on a system for every parallel layout: "
                                          "compute on the device's roofs, the 1F1B pipeline bubble, every collective "
                                          "on the network tier it crosses, memory per device; rank those that fit.",
                              epilog=EPILOG, formatter_class=EXAMPLE_HELP)
    p.add_argument("model", help="bundled model name or Hugging Face id, or a config.json")
    p.add_argument("--system", required=True, help="catalog system (dgx-h100, ...) or a system JSON file")
    p.add_argument("--nodes", type=int, default=None, help="nodes of the system (default: the system's)")
    p.add_argument("--devices", type=int, default=None, metavar="N",
                   help="the total device COUNT (e.g. 64 GPUs), an alternative to --nodes: nodes and racks follow; "
                        "a whole number of the system's nodes (an NVL72 tray is 4 GPUs). Unlike 'compare --devices', "
                        "which takes device names")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--train", action="store_true", help="plan a training step")
    mode.add_argument("--serve", action="store_true", help="plan serving (decode throughput, per-token latency)")
    p.add_argument("--global-batch", type=int, default=1024, metavar="SEQS", help="--train: sequences per step (1024)")
    p.add_argument("--seq", type=int, default=4096, metavar="TOKENS", help="--train: tokens per sequence (4096)")
    p.add_argument("--precision", default="bf16", metavar="P",
                   help="--train: the GEMMs' precision, bf16 or fp8 (Transformer Engine; default bf16)")
    p.add_argument("--batch", type=count_arg, default=64, metavar="SEQS", help="--serve: sequences per replica (64)")
    p.add_argument("--prompt", type=int, default=1024, metavar="TOKENS", help="--serve: prompt tokens (1024)")
    p.add_argument("--gen", type=int, default=256, metavar="TOKENS", help="--serve: generated tokens (256)")
    p.add_argument("--overlap", type=float, default=None, metavar="F",
                   help="--serve: share of communication hidden behind compute (default 0); --train: replaced by "
                        "--overlap-dp/--overlap-tp/--overlap-pp (refused with a pointer)")
    for rule, default, what in (("dp", "on", "gradient reduction bucketed behind backward, ZeRO-3 gathers prefetched"),
                                ("tp", "off", "tp/cp/ep collectives hidden behind the micro-batch's compute"),
                                ("pp", "on", "1F1B steady-state sends hidden (warm-up and cool-down exposed)")):
        p.add_argument(f"--overlap-{rule}", choices=("on", "off"), default=default,
                       help=f"--train forecast: {what} (default {default})")
    p.add_argument("--price", type=float, default=None, metavar="USD", help="price per device-hour")
    p.add_argument("--layout", default=None, metavar="K=V,...",
                   help=f"fix the keys named and search the rest; every key named ({','.join(dim_names())},zero,mb,"
                        "recompute,interleave), or sp=/stages=: time that one layout")
    p.add_argument("--top", type=int, default=10, metavar="N", help="layouts shown (default 10)")
    p.add_argument("--json", metavar="FILE", help="also write the ranked layouts as JSON")
    p.add_argument("-o", "--output", metavar="CHART", help="write where each layout's time goes (.png, .svg, .pdf)")
    p.set_defaults(func=run)


def _parse_stages(part: str, value: str) -> tuple[int, ...]:
    """'7/8x14/7' -> (7, 8, ..., 8, 7): layers per stage, 'NxK' for K stages of N."""
    out: list[int] = []
    for item in value.strip().split("/"):
        n, _, k = item.partition("x")
        try:
            layers, times = int(n), int(k) if k else 1
        except ValueError:
            raise RooflineError(f"--layout {part!r}: stages= is layers per stage, e.g. 7/8x14/7") from None
        if layers < 1 or times < 1:
            raise RooflineError(f"--layout {part!r}: stages= needs whole numbers >= 1")
        out += [layers] * times
    return tuple(out)


#: the keys the search varies: naming all of them (or sp=/stages=, which it does not vary) times one layout
SEARCHED = (*dim_names(), "zero", "micro_batch", "recompute", "interleave")


def parse_layout(text: str, overlap: float) -> Layout:
    """'tp=8,pp=2,dp=4,zero=1,recompute=full' -> Layout; a bad key or value, or two keys that conflict, is
    one line."""
    from roofline.planner import Layout

    return Layout(**layout_keys(text, overlap))


def layout_keys(text: str, overlap: float) -> dict[str, Any]:
    """The Layout fields ``--layout`` names (with ``overlap``), checked (see :func:`parse_layout`)."""
    names = {**{d: d for d in dim_names()}, "zero": "zero", "mb": "micro_batch",
             "micro_batch": "micro_batch", "recompute": "recompute", "interleave": "interleave", "sp": "sp",
             "stages": "stages", "v": "interleave"}
    values: dict[str, Any] = {"overlap": overlap}
    given: dict[str, str] = {}
    for part in filter(None, (x.strip() for x in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in names:
            raise RooflineError(f"--layout {part!r}: expected KEY=VALUE with KEY one of {', '.join(sorted(names))}")
        field = names[key.strip()]
        if field in given:
            raise RooflineError(f"--layout: {given[field]!r} and {part!r} conflict (both set {field})")
        given[field] = part
        if field == "recompute":
            values[field] = value.strip()
        elif field == "stages":
            values[field] = _parse_stages(part, value)
        elif field == "sp":
            flag = value.strip().lower()
            if flag not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
                raise RooflineError(f"--layout {part!r}: sp must be true or false")
            values[field] = flag in ("1", "true", "yes", "on")
        else:
            try:
                values[field] = int(value)
            except ValueError:
                raise RooflineError(f"--layout {part!r}: {key.strip()} must be a whole number") from None
    if "stages" in values:
        if "pp" in values and values["pp"] != len(values["stages"]):
            raise RooflineError(f"--layout: {given['pp']!r} and {given['stages']!r} conflict "
                                f"({len(values['stages'])} stages)")
        values["pp"] = len(values["stages"])
    return values


def run(args: argparse.Namespace) -> int:
    from roofline.catalog import resolve_system
    from roofline.planner import ServingRun, TrainingRun

    _check_args(args)
    system = resolve_system(args.system, nodes=args.nodes, devices=args.devices)
    run_: TrainingRun | ServingRun = (ServingRun.of(args.model, batch=args.batch, prompt=args.prompt, gen=args.gen)
                                      if args.serve else
                                      TrainingRun.of(args.model, seq=args.seq, global_batch=args.global_batch,
                                                     precision=args.precision))
    what = "serving" if args.serve else "training"
    where = f"{display(system.name)} x {system.nodes} ({system.devices} devices)"  # names from files are data
    ranked, header, tried = _ranked(args, run_, system, what, where)
    shape = (f"batch {run_.batch} per replica, prompt {run_.prompt}, gen {run_.gen}" if isinstance(run_, ServingRun)
             else f"global batch {run_.global_batch} x {run_.seq} tokens")
    answer = f"best layout: {ranked[0].headline()}" if not args.layout else ranked[0].headline()
    if isinstance(run_, ServingRun):
        lines = [answer, header, f"{shape}; overlap {args.overlap or 0:.0%} of communication in the time (the bound hides all "
                 "the schedule allows)"]
    else:
        from roofline.planner.overlap import describe

        lines = [answer, header, f"{shape}; ranked by the forecast step time (bound beside it); "
                 + describe(ranked[0].layout), FLOP_NOTE]
    lines += _table(args, ranked)
    lines.append(_glossary(args))
    from roofline.render.fit import wrap

    text = wrap("\n".join(lines) + "\n")
    outputs: list[tuple[str, str, bytes]] = []
    if args.output:
        from roofline.render.plan import plan_bytes

        outputs.append(("chart", args.output, plan_bytes(ranked, header.split(":")[0], args.output)))
    if args.json:
        best = ranked[0].time
        doc = {"model": run_.arch.name, "mode": what, "system": system.name, "nodes": system.nodes,
               "devices": system.devices, "shape": shape, "tried": tried,
               "ranked_by": "step seconds" if args.serve else "forecast step seconds",
               **({"overlap": args.overlap or 0.0} if args.serve else {"overlap_rules": _rules(args)}),
               "layouts": [_row(e, args.price, best) for e in ranked]}
        outputs.append(("json", args.json, (json.dumps(doc, indent=1) + "\n").encode()))
    sys.stdout.write(visible(text))
    write_all(outputs)
    return 0


#: the largest --price taken (USD per device-hour): far above any rental, small enough that a cost per
#: token stays a finite number
MAX_PRICE = 1e6


def _check_args(args: argparse.Namespace) -> None:
    """Every output path and option checked before anything is estimated."""
    from roofline.core.fileio import check_writable

    if args.json:
        check_writable(args.json)
    if args.output:
        from roofline.render import check_chart_path

        check_chart_path(args.output)
    if args.top < 1:
        raise RooflineError(f"--top must be >= 1, got {args.top}")
    if args.overlap is not None and not 0.0 <= args.overlap <= 1.0:
        raise RooflineError(f"--overlap must be from 0 to 1, got {args.overlap}")
    if args.train and args.overlap is not None:
        raise RooflineError("--overlap is serving's; a training step overlaps by rule: use --overlap-dp, --overlap-tp, "
                            "--overlap-pp on|off (defaults on, off, on)")
    from roofline.llm.training import TRAIN_PRECISIONS

    if args.precision not in TRAIN_PRECISIONS:
        raise RooflineError(f"--precision {args.precision!r} is not one of {', '.join(TRAIN_PRECISIONS)}")
    if args.price is not None and not 0 < args.price <= MAX_PRICE:  # inf and nan fail too
        raise RooflineError(f"--price must be above 0 and at most {MAX_PRICE:g} USD per device-hour, got {args.price}")


def _ranked(args: argparse.Namespace, run_: Any, system: Any, what: str,
            where: str) -> tuple[list[Estimate | ServingEstimate], str, int]:
    """(the layouts ranked, the header line, how many were tried): the one ``--layout``, or the search's best."""
    from roofline.planner import Layout, ServingRun, estimate, estimate_serving, plan

    serving = isinstance(run_, ServingRun)
    fixed: dict[str, Any] = {}
    if args.layout:
        keys = layout_keys(args.layout, args.overlap or 0.0)
        if not serving:
            keys.update({f"overlap_{k}": v for k, v in _rules(args).items()})
        fixed = {k: v for k, v in keys.items() if k in SEARCHED}
        if serving or "sp" in keys or "stages" in keys or len(fixed) == len(SEARCHED):
            lay = Layout(**keys)
            one = estimate_serving(run_, lay, system) if serving else estimate(run_, lay, system)
            return [one], f"{display(run_.arch.name)} {what} on {where}: one layout", 1
    p = plan(run_, system, top=args.top, overlap=args.overlap or 0.0, fixed=fixed,
             overlaps=tuple(_rules(args).values()))  # type: ignore[arg-type]
    if not p.ranked and fixed:  # none fits (or none divides): the named layout, the rest at their defaults, timed
        one = estimate(run_, Layout(**keys), system)  # or its constraint, in one line
        return [one], (f"{display(run_.arch.name)} {what} on {where}: one layout (none of the {p.tried:,} with "
                       f"{', '.join(f'{k}={v}' for k, v in fixed.items())} fits; the rest at their defaults)"), 1
    if not p.ranked:
        _none_ranked(p, run_, where)
    header = (f"{display(run_.arch.name)} {what} on {where}: {p.tried:,} layouts tried in {p.seconds:.2f} s "
              f"({p.tried / max(p.seconds, 1e-9):,.0f}/s), {p.too_big:,} of them left out as they do not fit in device memory"
              + (f", {p.uneven:,} splitting groups unevenly over nodes" if p.uneven else "")
              + f", best {len(p.ranked)}"
              + (f" with {', '.join(f'{k}={v}' for k, v in fixed.items())} fixed" if fixed else ""))
    return list(p.ranked), header, p.tried


def _none_ranked(p: Any, run_: Any, where: str) -> None:
    """The one line when no layout is ranked: the constraint that failed, and the nearest that pass."""
    from roofline.planner import TrainingRun
    from roofline.planner.search import no_layout_divides

    name = display(run_.arch.name)
    if p.tried == 0 and isinstance(run_, TrainingRun):
        raise RooflineError(f"no layout of {name} divides {where}: {no_layout_divides(run_, p.system)}")
    if p.tried == p.uneven:
        raise RooflineError(f"no layout of {name} divides {where}: every one of the {p.tried} splits a group "
                            "unevenly over the nodes; use a node count that is a power of two")
    near = "; ".join(f"{e.describe()} needs {format_gib(e.memory_total)}" for e in p.nearest)
    raise RooflineError(f"no layout of {name} fits {where}: {p.tried - p.uneven} tried, all past the device's "
                        f"{format_gib(p.nearest[0].capacity)} of memory; nearest: {near}; add nodes, or shorten "
                        "the sequences")


#: how the table's model FLOPs are counted (:func:`roofline.llm.training.training_flops`)
FLOP_NOTE = ("MFU and model TFLOP/s per device: model FLOPs = 3 x the forward's (6 N per token for the GEMMs, "
             "lm_head included, plus attention counted causal: the query-key pairs at or below the diagonal, "
             "4 d per pair forward), recomputation not counted, over the forecast step time and the dense matrix "
             "peak at the GEMMs' precision; ~ marks a forecast within the planner's stated error "
             f"({STATED_ERROR:.0%}) of the best: tied")


def _glossary(args: argparse.Namespace) -> str:
    """The line under the table: what each time column is."""
    if args.serve:
        return ("times: per token = one decode step of every sequence of a replica, the communication not hidden "
                "counted (--overlap); bound = the same with all of it hidden; ttft = one sequence's prompt through "
                "every stage; exposed comm = per token; tokens/s = output tokens over the whole system")
    return ("times: forecast = the expected step (global batch x seq tokens), what the layouts are ranked by; bound ="
            " its roofline lower bound; exposed comm = per step, the communication the overlap rules do not hide; "
            "tokens/s = the step's tokens over the forecast")


def _rules(args: argparse.Namespace) -> dict[str, bool]:
    return {k: getattr(args, f"overlap_{k}") == "on" for k in ("dp", "tp", "pp")}


def _table(args: argparse.Namespace, ranked: list[Estimate | ServingEstimate]) -> list[str]:
    """The ranked layouts, one line each, and the best one's communication and memory."""
    from roofline.planner import ServingEstimate

    lines = _serving_rows(args, ranked) if args.serve else _training_rows(args, ranked)  # type: ignore[arg-type]
    best = ranked[0]
    lines.append(f"best: {best.describe()} — comms: " + ", ".join(
        f"{display(c.name)} {format_seconds(c.time)} over {'+'.join(c.tiers)}" for c in best.comms) + "; memory: " + ", ".join(
        f"{k} {format_gib(v)}" for k, v in best.memory.items())
        + (f" of {format_gib(best.capacity)}" if best.capacity < float("inf") else " (no capacity given)"))
    if not isinstance(best, ServingEstimate):
        lay = best.layout
        lines.append(f"  {best.zero}; {best.run.precision}"
                     + (f"; layers per stage {'/'.join(map(str, best.stage_layers))}" if lay.pp > 1 else ""))
    return lines


def _serving_rows(args: argparse.Namespace, ranked: list[ServingEstimate]) -> list[str]:
    from roofline.render.fit import Column, table_lines

    rows = [{"#": str(k), "layout": e.describe() + ("" if e.fits else " (does not fit)"),
             "per token": format_seconds(e.time), "bound": format_seconds(e.bound),
             "tokens/s": format_count(e.tokens_per_second), "ttft": format_seconds(e.ttft),
             "exposed comm": format_seconds(e.exposed_comm), "memory": format_gib(e.memory_total),
             "binding": display(e.binding), "$/Mtok": f"{e.cost_per_token(args.price) * 1e6:.3g}" if args.price else ""}
            for k, e in enumerate(ranked, 1)]
    columns = [Column("#", keep=True), Column("layout", kind="label", keep=True), Column("per token", keep=True),
               Column("bound", priority=3), Column("tokens/s", keep=True), Column("ttft", priority=5),
               Column("exposed comm", priority=2), Column("memory", priority=4),
               Column("binding", kind="text", keep=True, min_width=12),
               *((Column("$/Mtok", priority=6),) if args.price else ())]
    return table_lines(columns, rows, title="ranked by tokens/s", indent=0, more="--json has every figure")


def _training_rows(args: argparse.Namespace, ranked: list[Estimate]) -> list[str]:
    from roofline.render.fit import Column, table_lines

    best = ranked[0].time
    rows = [{"#": f"{k}{'~' if k > 1 and tied(e.time, best) else ' '}",  # '~' after the rank: tied with the best
             "layout": e.describe() + ("" if e.fits else " (does not fit)"),
             "forecast": format_seconds(e.time), "bound": format_seconds(e.bound), "MFU": f"{e.mfu:.1%}",
             "TFLOP/s": f"{e.model_tflops_per_device:.1f}", "tokens/s": format_count(e.tokens_per_second),
             "bubble": f"{e.bubble_share:.1%}", "exposed comm": format_seconds(e.exposed_comm),
             "memory": format_gib(e.memory_total), "binding": display(e.binding),
             "$/Mtok": f"{e.cost_per_token(args.price) * 1e6:.3g}" if args.price else ""}
            for k, e in enumerate(ranked, 1)]
    columns = [Column("#", keep=True), Column("layout", kind="label", keep=True), Column("forecast", keep=True),
               Column("bound", priority=3), Column("MFU", priority=7), Column("TFLOP/s", priority=2),
               Column("tokens/s", priority=6), Column("bubble", priority=4), Column("exposed comm", priority=5),
               Column("memory", priority=1), Column("binding", kind="text", keep=True, min_width=12),
               *((Column("$/Mtok", priority=8),) if args.price else ())]
    return table_lines(columns, rows, title="ranked by forecast", indent=0, more="--json has every figure")


def _row(e: Estimate | ServingEstimate, price: float | None, best: float) -> dict[str, Any]:
    from roofline.planner import ServingEstimate

    lay = e.layout
    out: dict[str, Any] = {"layout": e.describe(), "tp": lay.tp, "pp": lay.pp, "dp": lay.dp,
                           "seconds": e.time, "bound_seconds": e.bound, "tokens_per_second": e.tokens_per_second,
                           "exposed_comm_seconds": e.exposed_comm, "binding": e.binding, "fits": e.fits,
                           "memory": e.memory,
                           "comms": [{"name": c.name, "seconds": c.time, "tiers": list(c.tiers)} for c in e.comms]}
    if isinstance(e, ServingEstimate):
        out["ttft_seconds"] = e.ttft
    else:
        out.update(cp=lay.cp, ep=lay.ep, zero=lay.zero, micro_batch=lay.micro_batch, recompute=lay.recompute,
                   interleave=lay.interleave, micro_batches=e.micro_batches, bubble_share=e.bubble_share,
                   stage_layers=list(e.stage_layers), memory_stage=e.memory_stage, precision=e.run.precision,
                   zero_note=e.zero, flops_per_device=e.flops, forecast_seconds=e.time, mfu=e.mfu,
                   model_tflops_per_device=e.model_tflops_per_device, tied_with_best=tied(e.time, best),
                   overlap_rules={"dp": lay.overlap_dp, "tp": lay.overlap_tp, "pp": lay.overlap_pp})
    if price:
        out["usd_per_million_tokens"] = e.cost_per_token(price) * 1e6
    return out
