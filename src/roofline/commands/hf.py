"""``roofline hf``: roofline of a Hugging Face causal LM from its local config.json (no weights)."""

from __future__ import annotations

import argparse

from roofline.commands._common import (
    EXAMPLE_HELP,
    add_device_option,
    add_output_options,
    add_tf32_option,
    check_outputs,
    count_arg,
    emit,
    resolve,
)

EPILOG = """\
examples:
  roofline hf llama-2-7b/config.json --phase prefill --batch 1 --seq-len 2048 --device h100
  roofline hf config.json --phase decode --batch 8 --kv-len 4096 --device h100 --group-by type
  roofline hf mixtral/config.json --phase decode --batch 32 --kv-len 1024 --device h100 --group-by module --depth 3

The model is built with transformers on the meta device: nothing is downloaded or
allocated.  prefill: one forward over --seq-len tokens per sequence; decode: one token
per sequence against a static KV cache of --kv-len tokens.  Needs the 'hf' extra.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("hf", help="roofline of a Hugging Face model from its config.json (meta device)",
                              description="Build a Hugging Face causal LM from a local config.json on the meta device, "
                                          "trace one prefill or decode step, and place every op under a device's roofs.",
                              epilog=EPILOG, formatter_class=EXAMPLE_HELP)
    p.add_argument("config", metavar="CONFIG.json", help="a config.json (or the folder holding it)")
    p.add_argument("--phase", choices=("prefill", "decode"), default="prefill", help="default prefill")
    p.add_argument("--batch", type=count_arg, default=1, help="sequences (default 1)")
    p.add_argument("--seq-len", type=int, default=512, help="prefill: prompt tokens per sequence (default 512)")
    p.add_argument("--kv-len", type=int, default=None,
                   help="decode: tokens already in the KV cache (default 1024); prefill: a cached prefix (default 0)")
    p.add_argument("--dtype", default="bf16", help="bf16 (default), fp16 or fp32")
    add_device_option(p)
    add_output_options(p, group_by=("module", "type", "kind"))
    add_tf32_option(p)
    p.set_defaults(func=run, group_by="module")


def run(args: argparse.Namespace) -> int:
    from roofline.engine.analysis import analyze
    from roofline.frontends.hf import from_hf_config

    check_outputs(args)
    device = resolve(args.device)
    kv_len = args.kv_len if args.kv_len is not None else (1024 if args.phase == "decode" else 0)
    workload = from_hf_config(args.config, phase=args.phase, batch=args.batch, seq_len=args.seq_len,
                              kv_len=kv_len, dtype=args.dtype)
    analysis = analyze(workload, device, tf32=args.tf32)
    emit(analysis, args, title=f"{workload.title} on {device.name}")
    return 0
