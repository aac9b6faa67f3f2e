"""``roofline plan``: every parallel layout of an LLM training step on a system, ranked by step time."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from roofline.commands._common import EXAMPLE_HELP, write_all
from roofline.errors import RooflineError
from roofline.text import display, visible
from roofline.units import format_bytes, format_count, format_seconds

if TYPE_CHECKING:
    from roofline.planner import Estimate, Layout, ServingEstimate

EPILOG = """\
examples:
  roofline plan llama-3-70b --system dgx-h100 --nodes 16 --train --global-batch 1024 --seq 4096
  roofline plan llama-2-7b --system dgx-a100 --nodes 2 --train --global-batch 256 --price 2.5 -o plan.png
  roofline plan mixtral-8x7b --system dgx-h100 --nodes 8 --train --global-batch 512 --top 5 --json plan.json
  roofline plan llama-2-7b --system dgx-h100 --nodes 2 --train --global-batch 64 --layout tp=8,dp=2,zero=1
  roofline plan llama-3-70b --system dgx-h100 --nodes 2 --serve --batch 64 --prompt 2048 --gen 512

Systems: dgx-h100, dgx-a100, mi300x-platform, tpu-v5p-64, cpu-cluster-100gbe (one node each, cited:
'roofline.catalog.get_system'), or a system JSON file (roofline.system/1).  Every layout tp x cp x pp x dp
that divides the system is tried (tp within a node, pp dividing the layers, cp up to 8, ep dividing the
experts and dp), with micro-batches of 1, 2, 4, 8 sequences, ZeRO stages 0-3 and recomputation none,
selective or full; those that fit the device's memory are ranked by step time with --overlap of the
communication hidden (default 0: none; the bound column hides all that the schedule allows).
--layout times one layout: tp=,pp=,dp=,cp=,ep=,zero=,mb=,recompute=,interleave= (unset: 1, zero 1,
selective).  --price (per device-hour) adds the cost per million tokens; -o CHART draws where each
layout's time goes (ops, bubble, each collective's exposed time, optimizer).
--serve: every replica of tp x cp x pp devices (dp replicas; an MoE model's experts split over ep of
them) decoding --batch sequences (pp micro-batches in flight), ranked by tokens/s; the step column is
the time per output token, ttft the prompt's.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("plan", help="rank parallel layouts (tp, pp, dp, cp, ep, ZeRO) of LLM training on a system",
                              description="Estimate an LLM training step on a system for every parallel layout: "
                                          "compute on the device's roofs, the 1F1B pipeline bubble, every collective "
                                          "on the network tier it crosses, memory per device; rank those that fit.",
                              epilog=EPILOG, formatter_class=EXAMPLE_HELP)
    p.add_argument("model", help="bundled model name or Hugging Face id, or a config.json")
    p.add_argument("--system", required=True, help="catalog system (dgx-h100, ...) or a system JSON file")
    p.add_argument("--nodes", type=int, default=None, help="nodes of the system (default: the system's)")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--train", action="store_true", help="plan a training step")
    mode.add_argument("--serve", action="store_true", help="plan serving (decode throughput, per-token latency)")
    p.add_argument("--global-batch", type=int, default=1024, metavar="SEQS", help="--train: sequences per step (1024)")
    p.add_argument("--seq", type=int, default=4096, metavar="TOKENS", help="--train: tokens per sequence (4096)")
    p.add_argument("--batch", type=int, default=64, metavar="SEQS", help="--serve: sequences per replica (64)")
    p.add_argument("--prompt", type=int, default=1024, metavar="TOKENS", help="--serve: prompt tokens (1024)")
    p.add_argument("--gen", type=int, default=256, metavar="TOKENS", help="--serve: generated tokens (256)")
    p.add_argument("--overlap", type=float, default=0.0, metavar="F",
                   help="share of communication hidden behind compute in the step time (default 0)")
    p.add_argument("--price", type=float, default=None, metavar="USD", help="price per device-hour")
    p.add_argument("--layout", default=None, metavar="K=V,...", help="time this one layout instead of ranking")
    p.add_argument("--top", type=int, default=10, metavar="N", help="layouts shown (default 10)")
    p.add_argument("--json", metavar="FILE", help="also write the ranked layouts as JSON")
    p.add_argument("-o", "--output", metavar="CHART", help="write where each layout's time goes (.png, .svg, .pdf)")
    p.set_defaults(func=run)


def parse_layout(text: str, overlap: float) -> Layout:
    """'tp=8,pp=2,dp=4,zero=1,recompute=full' -> Layout; a bad key or value is one line."""
    from roofline.planner import Layout

    names = {"tp": "tp", "pp": "pp", "dp": "dp", "cp": "cp", "ep": "ep", "zero": "zero", "mb": "micro_batch",
             "micro_batch": "micro_batch", "recompute": "recompute", "interleave": "interleave", "sp": "sp"}
    values: dict[str, Any] = {"overlap": overlap}
    for part in filter(None, (x.strip() for x in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in names:
            raise RooflineError(f"--layout {part!r}: expected KEY=VALUE with KEY one of {', '.join(sorted(names))}")
        field = names[key.strip()]
        if field == "recompute":
            values[field] = value.strip()
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
    return Layout(**values)


def run(args: argparse.Namespace) -> int:
    from roofline.catalog import resolve_system
    from roofline.planner import ServingRun, TrainingRun

    _check_args(args)
    system = resolve_system(args.system, nodes=args.nodes)
    run_: TrainingRun | ServingRun = (ServingRun.of(args.model, batch=args.batch, prompt=args.prompt, gen=args.gen)
                                      if args.serve else
                                      TrainingRun.of(args.model, seq=args.seq, global_batch=args.global_batch))
    what = "serving" if args.serve else "training"
    where = f"{display(system.name)} x {system.nodes} ({system.devices} devices)"  # names from files are data
    ranked, header, tried = _ranked(args, run_, system, what, where)
    shape = (f"batch {run_.batch} per replica, prompt {run_.prompt}, gen {run_.gen}" if isinstance(run_, ServingRun)
             else f"global batch {run_.global_batch} x {run_.seq} tokens")
    lines = [header, f"{shape}; overlap {args.overlap:.0%} of communication in the time (the bound hides all the "
             "schedule allows)"]
    lines += _table(args, ranked)
    text = "\n".join(lines) + "\n"
    outputs: list[tuple[str, str, bytes]] = []
    if args.output:
        from roofline.render.plan import plan_bytes

        outputs.append(("chart", args.output, plan_bytes(ranked, header.split(":")[0], args.output)))
    if args.json:
        doc = {"model": run_.arch.name, "mode": what, "system": system.name, "nodes": system.nodes,
               "devices": system.devices, "shape": shape, "overlap": args.overlap, "tried": tried,
               "layouts": [_row(e, args.price) for e in ranked]}
        outputs.append(("json", args.json, (json.dumps(doc, indent=1) + "\n").encode()))
    sys.stdout.write(visible(text))
    write_all(outputs)
    return 0


#: the largest --price taken (USD per device-hour): far above any rental, small enough that a cost per
#: token stays a finite number
MAX_PRICE = 1e6


def _check_args(args: argparse.Namespace) -> None:
    """Every output path and option checked before anything is estimated."""
    from roofline.fileio import check_writable

    if args.json:
        check_writable(args.json)
    if args.output:
        from roofline.render import check_chart_path

        check_chart_path(args.output)
    if args.top < 1:
        raise RooflineError(f"--top must be >= 1, got {args.top}")
    if not 0.0 <= args.overlap <= 1.0:
        raise RooflineError(f"--overlap must be from 0 to 1, got {args.overlap}")
    if args.price is not None and not 0 < args.price <= MAX_PRICE:  # inf and nan fail too
        raise RooflineError(f"--price must be above 0 and at most {MAX_PRICE:g} USD per device-hour, got {args.price}")


def _ranked(args: argparse.Namespace, run_: Any, system: Any, what: str,
            where: str) -> tuple[list[Estimate | ServingEstimate], str, int]:
    """(the layouts ranked, the header line, how many were tried): the one ``--layout``, or the search's best."""
    from roofline.planner import ServingRun, estimate, estimate_serving, plan

    if args.layout:
        lay = parse_layout(args.layout, args.overlap)
        one = estimate_serving(run_, lay, system) if isinstance(run_, ServingRun) else estimate(run_, lay, system)
        return [one], f"{display(run_.arch.name)} {what} on {where}: one layout", 1
    p = plan(run_, system, top=args.top, overlap=args.overlap)
    if not p.ranked:
        if p.tried == p.uneven:
            raise RooflineError(f"no layout of {display(run_.arch.name)} divides {where} (the batch, the layers and the "
                                "nodes into whole groups); change --nodes or the batch")
        raise RooflineError(f"no layout of {display(run_.arch.name)} fits {where}: {p.tried - p.uneven} tried, all past the "
                            "device's memory; add nodes, or shorten the sequences or the batch")
    header = (f"{display(run_.arch.name)} {what} on {where}: {p.tried:,} layouts tried in {p.seconds:.2f} s "
              f"({p.tried / max(p.seconds, 1e-9):,.0f}/s), {p.too_big:,} past memory"
              + (f", {p.uneven:,} splitting groups unevenly over nodes" if p.uneven else "")
              + f", best {len(p.ranked)}")
    return list(p.ranked), header, p.tried


def _table(args: argparse.Namespace, ranked: list[Estimate | ServingEstimate]) -> list[str]:
    """The ranked layouts, one line each, and the best one's communication and memory."""
    from roofline.planner import ServingEstimate

    step = "per token" if args.serve else "step"
    head = (f"{'#':>3} {'layout':40} {step:>9} {'bound':>9} {'tokens/s':>11} "
            + (f"{'ttft':>9}" if args.serve else f"{'bubble':>7}")
            + f" {'exposed comm':>13} {'memory':>10} {'binding':18}" + (f" {'$/Mtok':>8}" if args.price else ""))
    lines = [head]
    for k, e in enumerate(ranked, 1):
        fits = "" if e.fits else " (does not fit)"
        extra = (f"{format_seconds(e.ttft):>9}" if isinstance(e, ServingEstimate) else f"{e.bubble_share:>7.1%}")
        lines.append(f"{k:>3} {e.describe():40} {format_seconds(e.time):>9} {format_seconds(e.bound):>9} "
                     f"{format_count(e.tokens_per_second):>11} {extra} "
                     f"{format_seconds(e.exposed_comm):>13} {format_bytes(e.memory_total):>10} {e.binding[:18]:18}"
                     + (f" {e.cost_per_token(args.price) * 1e6:>8.3g}" if args.price else "") + fits)
    best = ranked[0]
    lines.append(f"best: {best.describe()} — comms: " + ", ".join(
        f"{display(c.name)} {format_seconds(c.time)} over {'+'.join(c.tiers)}" for c in best.comms) + "; memory: " + ", ".join(
        f"{k} {format_bytes(v)}" for k, v in best.memory.items())
        + (f" of {format_bytes(best.capacity)}" if best.capacity < float("inf") else " (no capacity given)"))
    return lines


def _row(e: Estimate | ServingEstimate, price: float | None) -> dict[str, Any]:
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
                   micro_batches=e.micro_batches, bubble_share=e.bubble_share)
    if price:
        out["usd_per_million_tokens"] = e.cost_per_token(price) * 1e6
    return out
