"""``roofline plan``: every parallel layout of an LLM training step on a system, ranked by step time."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from roofline.commands._common import EXAMPLE_HELP, add_moe_options, count_arg, write_all
from roofline.core.errors import RooflineError
from roofline.core.text import visible
from roofline.planner.dims import names as dim_names

EPILOG = """\
examples:
  roofline plan llama-3-70b --system dgx-h100 --nodes 16 --train --global-batch 1024 --seq 4096
  roofline plan llama-2-7b --system dgx-a100 --nodes 2 --train --global-batch 256 --price 2.5 -o plan.png
  roofline plan mixtral-8x7b --system dgx-h100 --nodes 8 --train --global-batch 512 --top 5 --json plan.json
  roofline plan llama-2-7b --system dgx-h100 --nodes 2 --train --global-batch 64 --layout tp=8,dp=2,zero=1
  roofline plan llama-3-405b --system dgx-h100 --nodes 16 --train --precision fp8 --layout tp=8,stages=7/8x14/7
  roofline plan llama-3-8b --system dgx-h100 --serve --isl 4000 --osl 500 --slo ttft=1s,tpot=50ms -o front.png
  roofline plan llama-3-70b --system dgx-h100 --serve --precision fp8 --slo-stat mean-static --json plan.json

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
--serve: a deployment search.  Every aggregated replica (tp x pp devices; an MoE model's ep, attention
data-parallel) filling the devices at each max batch and max tokens per step, and every disaggregated pair of
x prefill and y decode workers with their own layouts, is priced at the mean-static statistic (AIConfigurator's:
fixed-length static batches); those within --slo are ranked, and the first --short-list are simulated under
Poisson arrivals (--scheduler) for the highest rate whose p99 TTFT and TPOT meet it.  The answer is a capacity:
output tokens/s per GPU at the SLO, with tokens/s per user beside it; --slo-stat picks the statistic that
decides (both are shown).  -o draws the Pareto front; --json writes roofline.plan-serve/2.
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
    mode.add_argument("--serve", action="store_true",
                      help="search serving deployments (aggregated, disaggregated) for the most tokens/s per GPU "
                           "within an SLO")
    p.add_argument("--global-batch", type=int, default=1024, metavar="SEQS", help="--train: sequences per step (1024)")
    p.add_argument("--seq", type=int, default=4096, metavar="TOKENS", help="--train: tokens per sequence (4096)")
    p.add_argument("--precision", default="bf16", metavar="P",
                   help="--train: the GEMMs' number format: bf16, fp8 (per-tensor, Transformer Engine), fp8-block "
                        "(1x128/128x128, DeepSeek-V3), mxfp8 or nvfp4 (block-scaled, Blackwell); --serve: weights, "
                        "activations and KV cache in bf16 or fp8; default bf16")
    p.add_argument("--overlap", type=float, default=None, metavar="F",
                   help="refused: --train uses --overlap-dp/-tp/-pp/-ep; --serve --kv-overlap")
    for rule, default, what in (("dp", "on", "gradient reduction bucketed behind backward, ZeRO-3 gathers prefetched"),
                                ("tp", "off", "tp/cp/ep collectives hidden behind the micro-batch's compute"),
                                ("pp", "on", "1F1B steady-state sends hidden (warm-up and cool-down exposed)"),
                                ("ep", "on", "expert all-to-alls hidden behind another micro-batch's compute (1F1B "
                                 "with A2A overlap, DualPipe)")):
        p.add_argument(f"--overlap-{rule}", choices=("on", "off"), default=default,
                       help=f"--train forecast: {what} (default {default})")
    add_moe_options(p)
    _add_serve_options(p)
    p.add_argument("--price", type=float, default=None, metavar="USD", help="price per device-hour")
    p.add_argument("--layout", default=None, metavar="K=V,...",
                   help=f"fix the keys named and search the rest; every key named ({','.join(dim_names())},zero,mb,"
                        "recompute,interleave), or sp=/stages=: time that one layout")
    p.add_argument("--top", type=int, default=10, metavar="N", help="layouts (deployments) shown (default 10)")
    p.add_argument("--json", metavar="FILE", help="also write the ranked layouts (deployments) as JSON")
    p.add_argument("-o", "--output", metavar="CHART",
                   help="--train: where each layout's time goes; --serve: the Pareto front (.png, .svg, .pdf)")
    p.set_defaults(func=run, cli_parameters={"resolve_system.spec": "--system", "with_devices.devices": "--devices",
                                             "with_nodes.nodes": "--nodes"})


#: --serve's options and their defaults: each one given with --train is refused (module epilog)
SERVE_DEFAULTS = {"isl": 1024, "osl": 256, "batch": None, "slo": "ttft=1s,tpot=50ms", "slo_stat": "p99", "spec": None,
                  "accept": None, "accept_len": None, "prefix_hit": 0.0, "kv_overlap": "off", "disagg": "on",
                  "scheduler": "vllm", "short_list": 3}


def _add_serve_options(p: argparse.ArgumentParser) -> None:
    """The deployment search's options (``--serve``)."""
    g = p.add_argument_group("--serve: the deployment search")
    d = SERVE_DEFAULTS
    g.add_argument("--isl", "--prompt", dest="isl", type=count_arg, default=d["isl"], metavar="TOKENS",
                   help="prompt tokens per request (default 1024; --prompt is the same)")
    g.add_argument("--osl", "--gen", dest="osl", type=count_arg, default=d["osl"], metavar="TOKENS",
                   help="output tokens per request (default 256; --gen is the same)")
    g.add_argument("--batch", type=count_arg, default=None, metavar="SEQS",
                   help="fix every worker's max batch (default: search 1 to 1024)")
    g.add_argument("--slo", default=d["slo"], metavar="ttft=...,tpot=...", help="the latency limits (default "
                   "ttft=1s,tpot=50ms; units s, ms, us)")
    g.add_argument("--slo-stat", choices=("p99", "mean-static"), default=d["slo_stat"],
                   help="the statistic that decides: p99 under Poisson arrivals (simulated; default) or mean-static "
                        "(AIConfigurator's: fixed-length static batches); both are reported")
    g.add_argument("--spec", default=None, metavar="mtp:N|draft:MODEL:K",
                   help="speculative decoding: N MTP heads, or a draft model drafting K tokens per step")
    g.add_argument("--accept", type=float, default=None, metavar="A",
                   help="--spec: per-draft-token acceptance probability (tokens per step (1 - A^(K+1)) / (1 - A))")
    g.add_argument("--accept-len", type=float, default=None, metavar="L",
                   help="--spec: mean tokens per verify step, given directly")
    g.add_argument("--prefix-hit", type=float, default=d["prefix_hit"], metavar="H",
                   help="share of each prompt's tokens already in the prefix cache (skipped in prefill; their KV "
                        "blocks shared); default 0")
    g.add_argument("--kv-overlap", choices=("on", "off"), default=d["kv_overlap"],
                   help="disaggregated: the KV transfer overlaps the prefill layer by layer (default off)")
    g.add_argument("--disagg", choices=("on", "off", "only"), default=d["disagg"],
                   help="disaggregated prefill/decode deployments: searched beside aggregated ones (on, the "
                        "default), not at all (off), or alone (only)")
    g.add_argument("--scheduler", default=d["scheduler"], metavar="NAME",
                   help="the simulated scheduler policy (roofline.serving.schedulers; default vllm: V1 chunked "
                        "prefill); serve's --engine presets name one of these plus engine costs")
    g.add_argument("--short-list", type=int, default=d["short_list"], metavar="N",
                   help="deployments simulated after the analytic filter (default 3)")


def run(args: argparse.Namespace) -> int:
    from roofline.catalog import resolve_system
    from roofline.planner import TrainingRun
    from roofline.planner.result import plan_layouts
    from roofline.render.plan import plan_bytes, plan_text
    from roofline.words.plan import plan_words

    _check_args(args)
    system = resolve_system(args.system, nodes=args.nodes, devices=args.devices)
    if args.serve:
        return _serve(args, system)
    run_ = TrainingRun.of(args.model, seq=args.seq, global_batch=args.global_batch, precision=args.precision,
                          moe_load=args.moe_load, mtp=args.mtp)
    result = plan_layouts(run_, system, layout=args.layout, top=args.top, overlap=0.0, rules=_rules(args),
                          price=args.price)
    words = plan_words(result)
    outputs: list[tuple[str, str, bytes]] = []
    if args.output:
        outputs.append(("chart", args.output, plan_bytes(result.estimates, words.title, args.output)))
    if args.json:
        outputs.append(("json", args.json, (json.dumps(result.to_dict(), indent=1) + "\n").encode()))
    sys.stdout.write(visible(plan_text(result, words)))
    write_all(outputs)
    return 0


def _serve(args: argparse.Namespace, system: Any) -> int:
    """``plan --serve``: the deployment search (:mod:`roofline.planner.deploy_search`), its words, table, front."""
    from roofline.core.fileio import json_ready
    from roofline.llm.config import load_arch
    from roofline.planner.deploy import Options, Speculation
    from roofline.planner.deploy_search import BATCHES, search
    from roofline.render.deploy import deploy_text, front_bytes
    from roofline.serving.figures import parse_slo
    from roofline.words.deploy import deploy_words

    spec = Speculation.parse(args.spec, args.accept, args.accept_len) if args.spec else None
    opts = Options(args.isl, args.osl, parse_slo(args.slo), args.precision, spec, args.prefix_hit,
                   args.kv_overlap == "on")
    result = search(load_arch(args.model), system, opts, slo_stat=args.slo_stat, short_list=args.short_list,
                    scheduler=args.scheduler, fixed=_serve_layout(args.layout), disagg=args.disagg,
                    batches=(args.batch,) if args.batch else BATCHES)
    words = deploy_words(result)
    outputs: list[tuple[str, str, bytes]] = []
    if args.output:
        outputs.append(("chart", args.output, front_bytes(result, words.title, args.output)))
    if args.json:
        doc = json_ready(result.to_dict(top=None))
        outputs.append(("json", args.json, (json.dumps(doc, indent=1) + "\n").encode()))
    sys.stdout.write(visible(deploy_text(result, words, args.top, args.price)))
    write_all(outputs)
    return 0


def _serve_layout(text: str | None) -> dict[str, int] | None:
    """``--layout`` with --serve: the tp, pp and ep every aggregated replica keeps (no disaggregated ones)."""
    if not text:
        return None
    from roofline.planner.layout import layout_keys

    keys = {k: v for k, v in layout_keys(text).items() if k != "overlap"}
    other = sorted(set(keys).difference(("tp", "pp", "ep", "dp")))
    if other:
        raise RooflineError(f"--layout with --serve fixes a replica's tp, pp and ep (dp follows from the devices); "
                            f"{', '.join(other)} are training's")
    for k, v in keys.items():
        if int(v) < 1:
            raise RooflineError(f"--layout: {k} must be a whole number >= 1, got {v}")
    return {k: int(v) for k, v in keys.items() if k in ("tp", "pp", "ep")}


def _check_args(args: argparse.Namespace) -> None:
    """Every output path and option checked before anything is estimated."""
    from roofline.core.fileio import check_writable
    from roofline.planner.result import MAX_PRICE

    if args.json:
        check_writable(args.json)
    if args.output:
        from roofline.render import check_chart_path

        check_chart_path(args.output)
    if args.top < 1:
        raise RooflineError(f"--top must be >= 1, got {args.top}")
    if args.serve and args.moe_load != "balanced":
        raise RooflineError("--moe-load is not modelled by plan --serve yet: use it with plan --train, 'roofline "
                            "serve' or 'roofline llm'")
    if args.serve and args.mtp:
        raise RooflineError("--mtp with --serve: give speculative decoding with MTP heads as --spec mtp:N --accept A")
    if args.overlap is not None:
        raise RooflineError("--overlap is refused: a training step overlaps by rule (--overlap-dp, --overlap-tp, "
                            "--overlap-pp, --overlap-ep on|off); a serving search states its KV transfer "
                            "overlap (--kv-overlap on|off)")
    _check_serve_args(args)
    from roofline.llm.spec import SERVE_PRECISIONS
    from roofline.llm.training import TRAIN_PRECISIONS

    allowed = SERVE_PRECISIONS if args.serve else TRAIN_PRECISIONS
    if args.precision not in allowed:
        raise RooflineError(f"--precision {args.precision!r} is not one of {', '.join(allowed)}"
                            + (" with --serve" if args.serve else ""))
    if args.price is not None and not 0 < args.price <= MAX_PRICE:  # inf and nan fail too
        raise RooflineError(f"--price must be above 0 and at most {MAX_PRICE:g} USD per device-hour, got {args.price}")


def _rules(args: argparse.Namespace) -> dict[str, bool]:
    """The training forecast's overlap rules, as ``--overlap-dp/-tp/-pp/-ep`` set them."""
    from roofline.planner.result import RULES

    return {k: getattr(args, f"overlap_{k}") == "on" for k in RULES}


def _check_serve_args(args: argparse.Namespace) -> None:
    """--serve's options given with --train are refused; with --serve, each is checked before any work."""
    given = [k for k, v in SERVE_DEFAULTS.items() if getattr(args, k) != v]
    if args.train and given:
        flags = ", ".join("--" + k.replace("_", "-") for k in given)
        raise RooflineError(f"{flags}: --serve's options; --train takes --global-batch and --seq")
    if not args.serve:
        return
    if (args.accept is not None or args.accept_len is not None) and not args.spec:
        raise RooflineError("--accept and --accept-len need --spec mtp:N or --spec draft:MODEL:K")
    if args.short_list < 1:
        raise RooflineError(f"--short-list must be >= 1, got {args.short_list}")
    if not 0 <= args.prefix_hit < 1:  # nan fails too
        raise RooflineError(f"--prefix-hit must be a share from 0 to below 1, got {args.prefix_hit}")
    from roofline.serving.figures import parse_slo
    from roofline.serving.schedulers import get

    parse_slo(args.slo)
    get(args.scheduler)
