"""roofline serve MODEL --device D --tp N: throughput at a latency target, simulated iteration by iteration."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from roofline.commands._common import (
    EXAMPLE_HELP,
    add_device_option,
    add_ep_options,
    add_llm_model_options,
    add_moe_options,
)
from roofline.core.errors import RooflineError
from roofline.core.fileio import json_ready

EPILOG = """examples:
  roofline serve llama-3-70b --device h100 --tp 8 --rate 10 --isl 512:2048:uniform --osl 128:512:uniform
  roofline serve llama-2-70b --device h100 --tp 8 --concurrency 64 --isl 1024 --osl 256 --json out.json
  roofline serve llama-3-70b --system dgx-h100 --tp 2,4,8 --sweep-rate --slo ttft=2s,tpot=200ms --price 2.5
  roofline serve llama-2-7b --device a100 --trace requests.csv --chunked-prefill
  roofline serve deepseek-v3 --device h200 --tp 8 --dp-attention --wbits fp8 --abits fp8 --concurrency 1024

Iteration times are the forecast of each iteration's op table (--bound: the roofline bound).  The scheduler is
continuous batching: prefill-first (admitting a request only when the KV blocks of its prompt and whole output
are free above a 1% watermark, so a saturating load does not thrash), or --chunked-prefill (Sarathi-Serve) under
--max-tokens (default 2048); a paged KV cache of --block-size tokens (16) in --gpu-memory-utilization (0.9) of
memory after weights and activations; preemption by recomputation where a policy admits by the prompt's blocks
only (preemptions are counted; over 5% of the requests, a note names --scheduler trtllm).  --scheduler names a
policy of roofline.serving.schedulers; --engine a preset, which is a policy plus an engine's costs.  --max-batch
and --max-tokens are off unless given.  A --rate run that
serves under 90% of the rate its requests arrived at misses any --slo: it is saturated, or too short to reach
steady state (give more --requests).  Not modelled: prefix caching, disaggregated prefill/decode, speculative
decoding.  --requests at most ROOFLINE_MAX_REQUESTS (default 20,000).  'roofline plan --serve' ranks layouts
by one decode step instead (no arrivals)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serving simulation: TTFT/TPOT percentiles and throughput at a request rate",
                       formatter_class=EXAMPLE_HELP, epilog=EPILOG,
                       description="Simulate an LLM serving engine's scheduler over arriving requests, each "
                                   "iteration timed by the forecast: TTFT, TPOT and latency percentiles, "
                                   "throughput, goodput under an SLO, KV-cache use and preemptions.")
    p.add_argument("model", help="bundled model name or Hugging Face id (see 'roofline llm --list'), or a config.json")
    add_device_option(p, required=False)
    p.add_argument("--system", help="instead of --device: a catalog system; devices / tp replicas, round robin")
    p.add_argument("--tp", default="1", metavar="N[,N...]", help="tensor-parallel devices per replica (several: "
                   "one curve each with --sweep-rate)")
    add_ep_options(p)
    for name, what in (("wbits", "weight"), ("abits", "activation"), ("kvbits", "KV-cache")):
        p.add_argument(f"--{name}", default="16", metavar="BITS", help=f"{what} precision (default 16 = bf16)")
    add_llm_model_options(p, kv_reads=False, fusions_note="; --engine trtllm-mlperf-v4.1 gives all three")
    add_moe_options(p)
    p.add_argument("--isl", default="1024", metavar="N|LO:HI:uniform|MED:SIGMA:lognormal|Q0,...,Qk:quantiles",
                   help="input tokens: fixed, uniform, log-normal, or a data set's quantiles at equal steps of "
                        "probability, smallest to largest (48,109,152,266,1021:quantiles: the 0/25/50/75/100th "
                        "percentiles; drawn piecewise linear between them) (default 1024)")
    p.add_argument("--osl", default="256", metavar="N|LO:HI:uniform|MED:SIGMA:lognormal|Q0,...,Qk:quantiles",
                   help="output tokens, in the forms of --isl (default 256)")
    p.add_argument("--trace", metavar="FILE", help="CSV or JSONL of arrival (s), input, output per request")
    p.add_argument("--rate", type=float, metavar="R", help="Poisson arrivals, requests/s")
    p.add_argument("--concurrency", type=int, metavar="C", help="closed loop of C clients")
    p.add_argument("--requests", type=int, default=1000, metavar="N", help="requests simulated (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="random seed of lengths and arrivals (default 0)")
    p.add_argument("--scheduler", metavar="NAME", help="the scheduler policy (roofline.serving.schedulers: "
                   "prefill-first, the default (KV reserved for prompt + output at admission: never preempts); "
                   "chunked; whole-prompts; the engines' own: vllm-v0 (prefill-first, the prompt's blocks above a "
                   "1%% KV watermark, preempts), vllm (V1 chunked, no admission after a preemption), sarathi "
                   "(stall-free, 512-token budget), trtllm (GUARANTEED_NO_EVICT: KV reserved for the whole output))")
    p.add_argument("--chunked-prefill", action="store_true", help="mix prefill chunks with decodes (Sarathi-Serve): "
                   "--scheduler chunked")
    p.add_argument("--max-batch", type=int, metavar="N", help="most running sequences (default: off)")
    p.add_argument("--max-tokens", type=int, metavar="N", help="token budget per iteration (default: off; 2048 "
                   "with --chunked-prefill)")
    p.add_argument("--block-size", type=int, metavar="TOKENS", help="KV block (default 16, vLLM's)")
    p.add_argument("--gpu-memory-utilization", type=float, metavar="F",
                   help="share of device memory used (default 0.9, vLLM's)")
    p.add_argument("--cuda-graphs", action="store_true", help="every iteration replays a CUDA graph (the "
                   "device's cuda-graph overhead floor per kernel, not its launch floor)")
    p.add_argument("--engine", metavar="NAME", help="an engine preset, which is a scheduler policy plus the "
                   "engine's costs: its cited kernels, batching limits and KV-cache settings "
                   "(roofline.serving.engines: trtllm-bench (the trtllm policy, max batch and tokens by "
                   "trtllm-bench's heuristic, CUDA graphs), trtllm-mlperf-v4, trtllm-mlperf-v4.1, vllm-v0 (the "
                   "vllm-v0 policy)); the flags you give win (--scheduler swaps the policy and keeps the costs)")
    p.add_argument("--iteration-overhead", type=float, default=0.0, metavar="SECONDS",
                   help="CPU time added to each iteration (default 0: none counted)")
    p.add_argument("--slo", metavar="ttft=2s,tpot=200ms", help="latency limits on the p99s (units required)")
    p.add_argument("--sweep-rate", action="store_true", help="find the highest rate meeting --slo, per tp")
    p.add_argument("--price", type=float, metavar="USD", help="price per device-hour: $/Mtok")
    p.add_argument("--bound", action="store_true", help="iteration times from the roofline bound, not the forecast")
    p.add_argument("--unfused", action="store_true", help="unfused attention (default fused, as serving engines)")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    p.add_argument("--html", metavar="FILE", help="write an HTML report")
    p.add_argument("-o", "--output", metavar="CHART", help="with --sweep-rate: latency vs throughput (.png/.svg/.pdf)")
    p.set_defaults(func=run, cli_parameters={"resolve_system.spec": "--system", "engine_config.name": "--engine"})


def _tps(text: str) -> tuple[int, ...]:
    try:
        out = tuple(int(x) for x in str(text).split(","))
    except ValueError:
        out = ()
    if not out or min(out) < 1:
        raise RooflineError(f"--tp {text!r}: give integers >= 1, comma-separated (8 or 2,4,8)")
    return out


def _check(args: argparse.Namespace) -> None:
    from roofline.core.fileio import check_writable

    if not args.device and not args.system:
        raise RooflineError("--device (or --system) is required (see 'roofline devices')")
    if args.rate is not None and not 0 < args.rate < float("inf"):  # nan fails both comparisons
        raise RooflineError(f"--rate must be a number of requests/s > 0, got {args.rate:g}")
    if args.price is not None and not 0 < args.price < float("inf"):
        raise RooflineError(f"--price must be a finite number of US$ per device-hour above 0, got {args.price}")
    if args.engine is not None and not args.engine.strip():
        raise RooflineError("--engine '': give an engine name (see 'roofline serve --help')")
    for attr, flag in (("json", "--json"), ("html", "--html"), ("output", "-o")):
        if getattr(args, attr) is not None and not getattr(args, attr).strip():
            raise RooflineError(f"{flag} '': give a file name")
    if args.iteration_overhead < 0:
        raise RooflineError(f"--iteration-overhead must be >= 0 seconds, got {args.iteration_overhead}")
    for attr, ext in (("json", (".json",)), ("html", (".html", ".htm"))):
        path = getattr(args, attr)
        if path is not None:
            if not path.lower().endswith(ext):
                raise RooflineError(f"--{attr} expects a {ext[0]} file, got {path!r}")
            check_writable(path)
    if args.output:
        from roofline.render import check_chart_path

        if not args.sweep_rate:
            raise RooflineError("-o draws the --sweep-rate curves: add --sweep-rate")
        check_chart_path(args.output)


def _given(group: Any, **values: Any) -> Any:
    """``group`` with the values the flags gave (None: not given, the group's kept)."""
    from dataclasses import replace

    return replace(group, **{k: v for k, v in values.items() if v is not None})


def _config(args: argparse.Namespace) -> Any:
    """The :class:`~roofline.serving.config.ServeConfig`: ``--engine``'s cited one (else vLLM's defaults), with
    the flags given on top of it (the flags win)."""
    from roofline.serving.config import Parallel, Precision, ServeConfig, Timing
    from roofline.serving.engines import engine_config

    base = engine_config(args.engine) if args.engine else ServeConfig()
    scheduler = "chunked" if args.chunked_prefill else args.scheduler
    return ServeConfig(
        precision=Precision(args.wbits, args.abits, args.kvbits, args.rbits),
        kernels=_given(base.kernels, flash=not args.unfused, fusions=args.fusions,
                       cuda_graphs=args.cuda_graphs or base.kernels.cuda_graphs, moe_load=args.moe_load,
                       mtp=args.mtp),
        batching=_given(base.batching, scheduler=scheduler, max_batch=args.max_batch, max_tokens=args.max_tokens),
        memory=_given(base.memory, block_size=args.block_size, gpu_memory_utilization=args.gpu_memory_utilization),
        timing=Timing(bound=args.bound, overhead=args.iteration_overhead),
        parallel=Parallel(args.ep, args.dp_attention))


def run(args: argparse.Namespace) -> int:
    from roofline.render.fit import wrap
    from roofline.render.serve import headline, result_text
    from roofline.serving.figures import parse_slo
    from roofline.serving.requests import Traffic
    from roofline.serving.run import serve

    _check(args)
    tps = _tps(args.tp)
    slo = parse_slo(args.slo) if args.slo else None
    config = _config(args)
    traffic = Traffic(isl=args.isl, osl=args.osl, rate=args.rate, concurrency=args.concurrency,
                      requests=args.requests, seed=args.seed, trace=args.trace)
    if args.sweep_rate:
        return _sweep(args, tps, slo, traffic, config)
    if len(tps) > 1:
        raise RooflineError("several --tp sizes are compared by --sweep-rate: add it, or give one")
    r = serve(args.model, args.device, system=args.system, tp=tps[0], traffic=traffic, config=config, slo=slo)
    usd = r.usd_per_mtok(args.price) if args.price else None
    doc = {**r.to_dict(headline=headline(r)), **({"usd_per_mtok": usd} if usd is not None else {})}
    outputs = _outputs(args, doc, [r], None, slo)
    sys.stdout.write(wrap(result_text(r, usd)))
    _write(outputs)
    return 0


def _sweep(args: argparse.Namespace, tps: tuple[int, ...], slo: Any, traffic: Any, config: Any) -> int:
    from dataclasses import replace

    from roofline.render.fit import wrap
    from roofline.render.serve import sweep_text
    from roofline.serving.sweep import sweep_rate

    if slo is None:
        raise RooflineError("--sweep-rate needs --slo (e.g. ttft=2s,tpot=200ms)")
    curves = sweep_rate(args.model, args.device, system=args.system, tps=tps, traffic=replace(traffic, rate=None),
                        config=config, slo=slo, start=args.rate or 1.0)
    usd = {c.tp: c.best.usd_per_mtok(args.price) for c in curves if c.best is not None and args.price}
    doc = {"schema": "roofline.serve-sweep/1", "model": args.model, "slo": slo.describe(),
           "slo_limits": {"ttft_p99_s": slo.ttft, "tpot_p99_s": slo.tpot},
           "curves": [{**c.to_dict(), **({"usd_per_mtok": usd[c.tp]} if c.tp in usd else {})} for c in curves]}
    outputs = _outputs(args, doc, [b for b in (c.best for c in curves) if b is not None], curves, slo)
    sys.stdout.write(wrap(sweep_text(curves, slo, usd)))
    _write(outputs)
    return 0


def _outputs(args: argparse.Namespace, doc: dict[str, Any], results: list[Any], curves: Any,
             slo: Any) -> list[tuple[str, str, bytes]]:
    out: list[tuple[str, str, bytes]] = []
    if args.json:
        out.append(("json", args.json, (json.dumps(json_ready(doc), indent=1, default=_jsonable) + "\n").encode()))
    if args.html or args.output:
        from roofline.render.serve import serve_chart_bytes, serve_html

        if args.html:
            out.append(("html", args.html, serve_html(results, curves).encode()))
        if args.output:
            out.append(("chart", args.output, serve_chart_bytes(args.model, curves, slo, args.output)))
    return out




def _jsonable(x: Any) -> Any:
    return float(x) if hasattr(x, "__float__") else str(x)


def _write(outputs: list[tuple[str, str, bytes]]) -> None:
    from roofline.commands._common import write_all

    write_all(outputs)
