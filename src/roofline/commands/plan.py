"""``roofline plan``: every parallel layout of an LLM training step on a system, ranked by step time."""

from __future__ import annotations

import argparse
import json
import sys

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
                   help="--train: the GEMMs' number format: bf16, fp8 (per-tensor, Transformer Engine), fp8-block "
                        "(1x128/128x128, DeepSeek-V3), mxfp8 or nvfp4 (block-scaled, Blackwell); default bf16")
    p.add_argument("--batch", type=count_arg, default=64, metavar="SEQS", help="--serve: sequences per replica (64)")
    p.add_argument("--prompt", type=int, default=1024, metavar="TOKENS", help="--serve: prompt tokens (1024)")
    p.add_argument("--gen", type=int, default=256, metavar="TOKENS", help="--serve: generated tokens (256)")
    p.add_argument("--overlap", type=float, default=None, metavar="F",
                   help="--serve: share of communication hidden behind compute (default 0); --train: replaced by "
                        "--overlap-dp/--overlap-tp/--overlap-pp/--overlap-ep (refused with a pointer)")
    for rule, default, what in (("dp", "on", "gradient reduction bucketed behind backward, ZeRO-3 gathers prefetched"),
                                ("tp", "off", "tp/cp/ep collectives hidden behind the micro-batch's compute"),
                                ("pp", "on", "1F1B steady-state sends hidden (warm-up and cool-down exposed)"),
                                ("ep", "on", "expert all-to-alls hidden behind another micro-batch's compute (1F1B "
                                 "with A2A overlap, DualPipe)")):
        p.add_argument(f"--overlap-{rule}", choices=("on", "off"), default=default,
                       help=f"--train forecast: {what} (default {default})")
    add_moe_options(p)
    p.add_argument("--price", type=float, default=None, metavar="USD", help="price per device-hour")
    p.add_argument("--layout", default=None, metavar="K=V,...",
                   help=f"fix the keys named and search the rest; every key named ({','.join(dim_names())},zero,mb,"
                        "recompute,interleave), or sp=/stages=: time that one layout")
    p.add_argument("--top", type=int, default=10, metavar="N", help="layouts shown (default 10)")
    p.add_argument("--json", metavar="FILE", help="also write the ranked layouts as JSON")
    p.add_argument("-o", "--output", metavar="CHART", help="write where each layout's time goes (.png, .svg, .pdf)")
    p.set_defaults(func=run, cli_parameters={"resolve_system.spec": "--system", "with_devices.devices": "--devices",
                                             "with_nodes.nodes": "--nodes"})


def run(args: argparse.Namespace) -> int:
    from roofline.catalog import resolve_system
    from roofline.planner import ServingRun, TrainingRun
    from roofline.planner.result import plan_layouts
    from roofline.render.plan import plan_bytes, plan_text
    from roofline.words.plan import plan_words

    _check_args(args)
    system = resolve_system(args.system, nodes=args.nodes, devices=args.devices)
    run_: TrainingRun | ServingRun = (ServingRun.of(args.model, batch=args.batch, prompt=args.prompt, gen=args.gen,
                                                   precision=args.precision)
                                      if args.serve else
                                      TrainingRun.of(args.model, seq=args.seq, global_batch=args.global_batch,
                                                     precision=args.precision, moe_load=args.moe_load, mtp=args.mtp))
    result = plan_layouts(run_, system, layout=args.layout, top=args.top, overlap=args.overlap or 0.0,
                          rules=_rules(args), price=args.price)
    words = plan_words(result)
    outputs: list[tuple[str, str, bytes]] = []
    if args.output:
        outputs.append(("chart", args.output, plan_bytes(result.estimates, words.title, args.output)))
    if args.json:
        outputs.append(("json", args.json, (json.dumps(result.to_dict(), indent=1) + "\n").encode()))
    sys.stdout.write(visible(plan_text(result, words)))
    write_all(outputs)
    return 0


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
    if args.serve and (args.moe_load != "balanced" or args.mtp):
        raise RooflineError("--moe-load and --mtp are not modelled by plan --serve yet: use them with plan --train, "
                            "'roofline serve' or 'roofline llm'")
    if args.overlap is not None and not 0.0 <= args.overlap <= 1.0:
        raise RooflineError(f"--overlap must be from 0 to 1, got {args.overlap}")
    if args.train and args.overlap is not None:
        raise RooflineError("--overlap is serving's; a training step overlaps by rule: use --overlap-dp, --overlap-tp, "
                            "--overlap-pp, --overlap-ep on|off (defaults on, off, on, on)")
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
