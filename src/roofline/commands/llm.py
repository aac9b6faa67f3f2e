"""roofline llm MODEL --device NAME: prefill/decode rooflines of an LLM from its config."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from roofline.commands._common import (
    EXAMPLE_HELP,
    add_device_option,
    add_ep_options,
    add_llm_model_options,
    add_moe_options,
    add_output_options,
    add_phase_option,
    add_tf32_option,
    check_outputs,
    count_or_max_arg,
    emit,
)
from roofline.core.errors import RooflineError

if TYPE_CHECKING:
    from roofline.hardware.device import Device
    from roofline.llm.metrics import BatchSweep

EPILOG = """examples:
  roofline llm llama-2-7b --device a100 --phase decode --batch 1 --context 1024
  roofline llm meta-llama/Meta-Llama-3-70B --device h100 --tp 4 --wbits 4 --kvbits 8 --flash
  roofline llm mixtral-8x7b --device h100 --phase decode --sweep batch=1..256 -o chart.png
  roofline llm ./config.json --device a100 --phase prefill --prompt 4096 --batch max
  roofline llm qwen2-7b --device h100 --phase prefill --group-by module --depth 3   (per-layer table)
  roofline llm llama-2-7b --device h100 --train --batch 8 --prompt 4096 --tp 8   (one training step)
  roofline llm llama-3-70b --system dgx-h100 --tp 8 --phase decode --batch 32   (all-reduces on NVLink)
  roofline llm --list

phases: prefill (--prompt tokens), decode (one step at --context), generate (prefill --prompt,
then --gen decode steps; the default).  Precisions: 32, 16, 8, 4 or fp32, bf16, fp16, fp8,
int8, int4 (int4 carries one fp16 scale per --group-size values).
--sweep batch=LO..HI | LO..max | max | a,b,c: decode (or prefill) throughput against per-token latency
per batch; the plot goes to --sweep-plot, or beside -o CHART as CHART-sweep.EXT.  A step coarsens the grid:
LO..HI:*F (LO, LO*F, ..., HI) or LO..HI:+S; at most 100,000 batches (ROOFLINE_MAX_SWEEP_POINTS).
Config sizes are bounded (ROOFLINE_MAX_LAYERS, ROOFLINE_MAX_HIDDEN, ROOFLINE_MAX_VOCAB, ...; see
roofline.llm.config); --batch, --prompt, --context, --gen at most ROOFLINE_MAX_DIM (10**12)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("llm", help="LLM inference rooflines (prefill, decode) from a model config",
                       formatter_class=EXAMPLE_HELP, epilog=EPILOG,
                       description="Analytic per-op model of decoder-only transformer inference: TTFT, time per "
                                   "output token, tokens/s, memory fit, largest batch, ridge batch, batch sweep.")
    p.add_argument("model", nargs="?", help="bundled model name or Hugging Face id (see --list), or a config.json")
    p.add_argument("--list", action="store_true", help="list the bundled model configs and exit")
    add_device_option(p, required=False)
    p.add_argument("--system", help="instead of --device: a catalog system (dgx-h100, ...) or system file; --tp "
                   "devices inside one node, the tensor-parallel collectives under its node tier")
    add_phase_option(p)
    p.add_argument("--batch", type=count_or_max_arg, default=1, metavar="N|max", help="sequences per step, or 'max': the largest that fits")
    p.add_argument("--prompt", type=int, default=None, metavar="TOKENS", help="prompt length (default 1024)")
    p.add_argument("--gen", type=int, default=None, metavar="TOKENS", help="decode steps for generate (default 256)")
    p.add_argument("--context", type=int, default=None, metavar="TOKENS",
                   help="decode: tokens attended to, KV cache length (default: --prompt)")
    p.add_argument("--wbits", default="16", metavar="BITS", help="weight precision: bits (16 = bf16, 8 = int8, 4 = int4), a name (fp8, int4, ...) or a number "
                   "format with its block scales (mxfp8, mxfp4, nvfp4, fp8-block, ...; default 16)")
    p.add_argument("--abits", default="16", metavar="BITS", help="activation precision, as --wbits (default 16 = bf16)")
    p.add_argument("--kvbits", default="16", metavar="BITS", help="KV-cache precision, as --wbits (default 16 = bf16)")
    p.add_argument("--group-size", type=int, default=128, metavar="N", help="int4 quantisation group (default 128)")
    add_llm_model_options(p)
    add_moe_options(p)
    p.add_argument("--tp", type=int, default=1, metavar="N", help="tensor-parallel devices (per-device figures)")
    add_ep_options(p)
    fused = p.add_mutually_exclusive_group()
    fused.add_argument("--flash", action="store_true",
                       help="fused attention: no score tensor in memory (the default, as in 'serve')")
    fused.add_argument("--unfused", action="store_true",
                       help="unfused attention: the s x s scores written and read")
    p.add_argument("--all-logits", action="store_true", help="lm_head on every token, not the last of each sequence")
    p.add_argument("--moe-routing", choices=("expected", "worst", "best"), default="expected",
                   help="MoE experts a step of n tokens reads: expected under uniform top-k routing, "
                        "E(1-(1-k/E)^n) (default); worst, min(E, n*k); best, k")
    p.add_argument("--train", action="store_true",
                   help="one training step instead: --batch sequences of --prompt tokens (default 4096) on one of "
                        "--tp devices, forward, backward, recomputation and Adam ('roofline plan' for layouts)")
    p.add_argument("--recompute", choices=("none", "selective", "full"), default="selective",
                   help="with --train: activation recomputation (default selective)")
    p.add_argument("--sweep", metavar="batch=1..256", help="batch sweep: throughput vs per-token latency")
    p.add_argument("--sweep-plot", metavar="PLOT", help="write the sweep plot here (.png, .svg or .pdf)")
    add_output_options(p, group_by=("module", "type", "kind", "name"))
    add_tf32_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from roofline.engine.analysis import analyze
    from roofline.frontends import llm

    if args.list:
        print(list_text())
        return 0
    if not args.model:
        raise RooflineError("give a model name or config.json (see 'roofline llm --list')")
    if not args.device and not args.system:
        raise RooflineError("--device (or --system) is required (see 'roofline devices')")
    if args.device and args.system:
        raise RooflineError("give --device or --system, not both")
    check_outputs(args)
    if args.train:
        return train(args)
    sweep_plot = sweep_plot_path(args)
    sweep_batches = llm.parse_range(args.sweep)[1] if args.sweep else None
    batch_max = args.batch == "max"  # else a whole number >= 1 (count_or_max_arg)
    spec = llm.make_spec(args.model, phase=args.phase, batch=1 if batch_max else int(args.batch), prompt=args.prompt,
                         context=args.context, gen=args.gen, wbits=args.wbits, abits=args.abits, kvbits=args.kvbits,
                         tp=args.tp, flash=not args.unfused, group_size=args.group_size, all_logits=args.all_logits,
                         moe_routing=args.moe_routing, kv_reads=args.kv_reads, rbits=args.rbits,
                         fusions=args.fusions, moe_load=args.moe_load, mtp=args.mtp, ep=args.ep,
                         dp_attention=args.dp_attention)
    device = device_of(args)
    if batch_max:
        spec = spec.replace(batch=llm.fitting_batch(spec, device))
    analysis = analyze(llm.build_workload(spec), device, tf32=args.tf32)
    title = f"{spec.arch.name} {spec.phase} on {device.name}"
    emit(analysis, args, title=title)
    if args.sweep:
        sw = llm.batch_sweep(spec, device, sweep_batches)
        print(sweep_text(sw))
        if sweep_plot:
            from roofline.render.sweep import plot_sweep

            plot_sweep(sw, sweep_plot, title=f"{spec.arch.name} on {device.name}: batch sweep ({spec.phase})")
            print(f"sweep plot: {sweep_plot}")
    return 0


def device_of(args: argparse.Namespace) -> Device:
    """--device, or --system's device with its node tier as the interconnect (--tp must fit in one node)."""
    from roofline.commands._common import resolve

    if not args.system:
        return resolve(args.device)
    from roofline.catalog import resolve_system

    system = resolve_system(args.system)
    if args.tp > system.devices_per_node:
        raise RooflineError(f"--tp {args.tp} spans more than a node of {system.name!r} ({system.devices_per_node} "
                            "devices): 'roofline plan' times groups across nodes")
    return system.device_on("node") if args.tp > 1 else system.device


def train(args: argparse.Namespace) -> int:
    """``--train``: one training step on one of ``--tp`` devices, op by op (forward, backward, recomputed, Adam)."""
    from roofline.core.units import format_gib
    from roofline.engine.analysis import analyze
    from roofline.llm.training import TrainingRun, training_workload

    if args.sweep or args.batch == "max":
        raise RooflineError("--train times one step: drop --sweep and --batch max")
    if args.rbits is not None or args.fusions is not None or args.kv_reads != "shared":
        raise RooflineError("--rbits, --fusions and --kv-reads set up inference kernels: drop them with --train")
    if args.moe_load != "balanced":
        raise RooflineError("--moe-load shapes the grouped expert GEMMs of an inference step (and plan --train's "
                            "forecast): drop it with llm --train")
    run = TrainingRun.of(args.model, seq=args.prompt or 4096, global_batch=int(args.batch), mtp=args.mtp)
    device = device_of(args)
    workload = training_workload(run, tp=args.tp, recompute=args.recompute)
    analysis = analyze(workload, device, tf32=args.tf32)
    info = workload.info
    cap = device.memory_capacity
    from roofline.render.fit import wrap

    parts = (f"weights {format_gib(info['memory_weights'])}, gradients {format_gib(info['memory_gradients'])}, "
             f"optimizer {format_gib(info['memory_optimizer'])}, activations {format_gib(info['memory_activations'])}")
    if cap and info["memory_bytes"] > cap:  # the deciding fact first
        print(wrap(f"does not fit: {format_gib(info['memory_bytes'])} needed per device, {format_gib(cap)} on "
                   f"{device.name} ({parts}); 'roofline plan --train' finds layouts that fit"))
    emit(analysis, args, title=f"{workload.title} on {device.name}")
    print(wrap(f"memory per device: {format_gib(info['memory_bytes'])} ({parts})"
               + (f" of {format_gib(cap)}: {'fits' if info['memory_bytes'] <= cap else 'does NOT fit'}" if cap else "")))
    return 0


def sweep_plot_path(args: argparse.Namespace) -> str | None:
    """--sweep-plot, else CHART-sweep.EXT beside -o CHART; validated before any work."""
    from roofline.render import check_chart_path

    path = args.sweep_plot
    if path and not args.sweep:
        raise RooflineError("--sweep-plot needs --sweep")
    if not path and args.sweep and args.output:
        out = Path(args.output)
        path = str(out.with_name(f"{out.stem}-sweep{out.suffix}"))
    if path:
        check_chart_path(path)
    return path


def list_text() -> str:
    from roofline.llm.config import list_models, load_arch
    from roofline.llm.sizes import describe_params
    from roofline.render.fit import Column, table_lines

    rows = []
    for m in list_models():
        rows.append({"model": m["name"], "Hugging Face id": m["hf_id"], "type": m["model_type"],
                     "params": describe_params(load_arch(m["name"])),
                     "source": m["source"]})
    columns = [Column("model", kind="label", keep=True), Column("Hugging Face id", kind="label", priority=3),
               Column("type", kind="label", priority=1), Column("params", kind="label", keep=True),
               Column("source", kind="text", priority=1, min_width=40)]
    return "\n".join(table_lines(columns, rows, indent=0, more="the model configs name their sources"))


def sweep_text(sw: BatchSweep) -> str:
    """Rows at powers of two (and the last batch) of a batch sweep."""
    from roofline.core.units import format_gib, format_seconds

    lat = "TTFT" if sw.phase == "prefill" else "time/token"
    tps = "prompt tok/s" if sw.phase == "prefill" else "tokens/s"
    from roofline.render.fit import Column, table_lines

    rows = [{"batch": str(b), lat: format_seconds(sw.latency[i]), tps: f"{sw.tokens_per_s[i]:,.0f}",
             "memory": format_gib(sw.footprint[i]),  # a capacity: GiB
             "fits": ("yes" if sw.fits[i] else "NO") + ("  <- ridge" if b == sw.ridge_batch else "")}
            for i, b in ((i, sw.batch[i]) for i in sw.shown())]
    columns = [Column("batch", keep=True), Column(lat, keep=True), Column(tps, keep=True),
               Column("memory", priority=1), Column("fits", kind="label", keep=True)]
    return "\n".join(table_lines(columns, rows, title=f"batch sweep ({len(sw.batch)} batches, "
                                                      f"{sw.batch[0]}..{sw.batch[-1]}):"))
