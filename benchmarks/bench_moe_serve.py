"""How right is the serving simulator on mixture-of-experts models?  (a script, not a test)

    python benchmarks/bench_moe_serve.py

Published MoE serving results, each row cited, against the simulation of the same setup; the figures are for
checking the forecast, never for setting it: no constant here is fitted to them.  Issue 50's targets: throughput
at saturation, simulated over measured, median in [0.8, 1.2] and every row within 2x; Mixtral batch-1 TTFT
within 25%.

Source of every row: NVIDIA/TensorRT-LLM docs/source/performance.md as of release v0.9.0 ("All data was
generated using version 0.9.0"; https://github.com/NVIDIA/TensorRT-LLM/blob/v0.9.0/docs/source/performance.md):
* "Low Latency", "1st Token Latency (ms)" at batch 1, H100 and H200 FP8: Mixtral 8x7B, TP 2, input 128 and
  2048 tokens (13.4 / 89.5 ms on H100, 12.1 / 87.7 ms on H200);
* "Peak Throughput", "Throughput (out tok/s/GPU)", H100 and H200 FP8, Mixtral 8x7B at TP 2: four
  (batch, input, output) rows each.
How they were measured (the same page, "Reproducing Benchmarked Results"): gptSessionBenchmark, a static batch
of ``batch`` sequences of the stated lengths (``--batch_size --input_output_len``; first-token latency with one
output token), engines built ``--context_fmha enable --paged_kv_cache disable --strongly_typed`` with
``quant_algo FP8, kv_cache_quant_algo FP8``.  Simulated as TensorRT-LLM's FP8 recipe (FP8 GEMMs and KV cache,
a 16-bit residual stream: bench_serve.py) with fused attention; a static batch is a closed loop of ``batch``
clients and ``batch`` requests (one batch).  Throughput per GPU x TP = the replica's.

DeepSeek-R1 (the V3 architecture), "H200 max-throughput" of NVIDIA/TensorRT-LLM
docs/source/blogs/Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md at commit
01c4ece911eb569e72cf4177f83238a0520641c2: trtllm-bench throughput, deepseek-ai/DeepSeek-R1 (its FP8 checkpoint;
no KV-cache dtype set: 16-bit), ``--tp 8 --ep 8``, ``enable_attention_dp: true``, ``--max_batch_size 128``
(per rank), ``--max_num_tokens 1151`` (per rank; no chunked MLA context on Hopper: whole prompts),
``--concurrency 1024 --num_requests 5120``, ISL 1,024 / OSL 2,048 fixed, ``--kv_cache_free_gpu_mem_fraction 0.8``,
CUDA graphs: "Total Output Throughput (tokens/sec): 11489.2671".  Simulated with --dp-attention over 8 H200
(DeepEP low-latency dispatch/combine, FlashMLA's decode rate) as that closed loop.

Not simulated: gpt-oss (no published table with the setup stated found in this session).

Where the time goes: the TTFT rows print the forecast's largest op groups, so a miss names the op it comes from
(module ``diagnose``).
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import replace

import roofline
from roofline.catalog import get_device
from roofline.engine.analysis import analyze
from roofline.engine.forecast import compute_forecast
from roofline.llm.model import build_workload
from roofline.llm.spec import make_spec
from roofline.serving import Batching, Kernels, Memory, Precision, ServeConfig, Timing, Traffic, iteration_time
from roofline.serving.config import Parallel

SOURCE = "NVIDIA/TensorRT-LLM docs/source/performance.md (v0.9.0 data), FP8, TP 2"
#: TensorRT-LLM v0.9's FP8 recipe: FP8 GEMMs and KV cache, 16-bit residual stream (FP8Linear; bench_serve.py)
TRTLLM_V09 = ServeConfig(precision=Precision(wbits="fp8", abits="fp8", kvbits="fp8", rbits="fp16"),
                         kernels=Kernels(flash=True))
#: (device, tp, input tokens, published first-token latency s) - "Low Latency", Mixtral 8x7B, batch 1
TTFT_ROWS = (
    ("h100", 2, 128, 13.4e-3), ("h100", 2, 2048, 89.5e-3),
    ("h200", 2, 128, 12.1e-3), ("h200", 2, 2048, 87.7e-3),
)
#: (device, batch, tp, input, output, published output tokens/s per GPU) - "Peak Throughput", Mixtral 8x7B
THROUGHPUT_ROWS = (
    ("h100", 512, 2, 128, 128, 5_255), ("h100", 128, 2, 128, 2048, 3_408),
    ("h100", 64, 2, 2048, 128, 588), ("h100", 32, 2, 2048, 2048, 1_317),
    ("h200", 1024, 2, 128, 128, 5_444), ("h200", 256, 2, 128, 2048, 4_973),
    ("h200", 64, 2, 2048, 128, 605), ("h200", 64, 2, 2048, 2048, 1_821),
)
MODEL = "mixtral-8x7b"
#: (label, device, tp, requests, concurrency, isl, osl, published output tokens/s of the tp GPUs, config)
DEEPSEEK_ROWS = (
    ("DeepSeek-R1 H200 max-throughput", "h200", 8, 5120, 1024, 1024, 2048, 11_489.2671,
     ServeConfig(precision=Precision("fp8", "fp8", "bf16"), kernels=Kernels(flash=True, cuda_graphs=True),
                 batching=Batching("whole-prompts", max_batch=8 * 128, max_tokens=8 * 1151),
                 memory=Memory(gpu_memory_utilization=0.8, kv_of_free=True), parallel=Parallel(8, True))),
)


def ttft(device: str, tp: int, isl: int, bound: bool = False) -> float:
    """One prefill-only iteration of one prompt: the batch-1 TTFT (no queueing)."""
    cfg = replace(TRTLLM_V09, timing=Timing(bound=bound))
    return iteration_time(MODEL, device, tp=tp, chunks=((isl, 0),), config=cfg)


def diagnose(device: str, tp: int, isl: int, published: float, top: int = 3) -> str:
    """The forecast's largest op groups of the prefill (share of the forecast), and what the published TTFT
    implies of the routed expert GEMMs if every other op took its forecast: their FLOP rate (and the forecast's)."""
    spec = make_spec(MODEL, phase="prefill", prompt=isl, tp=tp, **TRTLLM_V09.spec_options())
    w = build_workload(spec)
    t = compute_forecast(analyze(w, get_device(device))).time * w.columns["count"]
    flops = w.columns["flops"] * w.columns["count"]
    names = list(w.tables["name"])
    groups: dict[str, float] = {}
    expert_t = expert_flops = 0.0
    for code, s, f in zip(w.columns["name"], t, flops, strict=True):
        name = names[int(code)]
        key = ".".join(name.split(".")[-2:])
        groups[key] = groups.get(key, 0.0) + float(s)
        if ".experts." in name and name.endswith("_proj"):
            expert_t, expert_flops = expert_t + float(s), expert_flops + float(f)
    total = sum(groups.values())
    ranked = sorted(groups.items(), key=lambda kv: -kv[1])[:top]
    left = published - (total - expert_t)  # what the published time leaves the expert GEMMs
    implied = f"{expert_flops / left / 1e12:,.0f}" if left > 0 else "n/a"
    return (", ".join(f"{k} {v / total:.0%}" for k, v in ranked) +
            f"; expert GEMMs: forecast {expert_flops / expert_t / 1e12:,.0f}, published implies {implied} TFLOP/s")


def throughput(device: str, batch: int, tp: int, isl: int, osl: int, bound: bool = False) -> float:
    """Output tokens/s of the replica (tp GPUs) for one static batch."""
    r = roofline.serve(MODEL, device, tp=tp, traffic=Traffic(isl=isl, osl=osl, requests=batch, concurrency=batch),
                       config=replace(TRTLLM_V09, timing=Timing(bound=bound)))
    return float(r.figures.output_tokens_per_s)


def main() -> int:
    print(f"Mixtral 8x7B batch-1 TTFT: {SOURCE}")
    print(f"  {'device':6} {'tp':>2} {'input':>5} {'published':>9} {'forecast':>9} {'ratio':>6} {'bound':>8} "
          f"{'b/pub':>6}  where the forecast's time goes")
    ttft_r: list[float] = []
    for device, tp, isl, pub in TTFT_ROWS:
        f, b = ttft(device, tp, isl), ttft(device, tp, isl, bound=True)
        ttft_r.append(f / pub)
        print(f"  {device:6} {tp:>2} {isl:>5} {pub * 1e3:>7.1f}ms {f * 1e3:>7.1f}ms {f / pub:>6.2f} "
              f"{b * 1e3:>6.1f}ms {b / pub:>6.2f}  {diagnose(device, tp, isl, pub)}")
    print(f"\nMixtral 8x7B static-batch throughput (output tokens/s of the tp GPUs): {SOURCE}")
    print(f"  {'device':6} {'batch':>5} {'tp':>2} {'in':>5} {'out':>5} {'published':>9} {'forecast':>9} {'ratio':>6} "
          f"{'bound':>9} {'b/pub':>6}")
    thr_r: list[float] = []
    for device, batch, tp, isl, osl, per_gpu in THROUGHPUT_ROWS:
        pub = per_gpu * tp
        f, b = throughput(device, batch, tp, isl, osl), throughput(device, batch, tp, isl, osl, bound=True)
        thr_r.append(f / pub)
        print(f"  {device:6} {batch:>5} {tp:>2} {isl:>5} {osl:>5} {pub:>9,} {f:>9,.0f} {f / pub:>6.2f} {b:>9,.0f} "
              f"{b / pub:>6.2f}")
    print("\nDeepSeek (MLA, attention data-parallel, EP 8): output tokens/s of the tp GPUs, closed loop as published")
    print(f"  {'row':34} {'published':>9} {'forecast':>9} {'ratio':>6} {'bound':>9} {'b/pub':>6}")
    for label, device, tp, n, conc, isl, osl, pub, cfg in DEEPSEEK_ROWS:
        traffic = Traffic(isl=isl, osl=osl, requests=n, concurrency=conc)
        f, b = (float(roofline.serve("deepseek-r1", device, tp=tp, traffic=traffic, config=replace(
            cfg, timing=Timing(bound=bound))).figures.output_tokens_per_s) for bound in (False, True))
        thr_r.append(f / pub)
        print(f"  {label:34} {pub:>9,.0f} {f:>9,.0f} {f / pub:>6.2f} {b:>9,.0f} {b / pub:>6.2f}")
    print(f"\nverdict: TTFT forecast/published median {statistics.median(ttft_r):.2f} (target within 0.75..1.25: "
          f"{'met' if all(0.75 <= r <= 1.25 for r in ttft_r) else 'MISSED'}); throughput median "
          f"{statistics.median(thr_r):.2f} (target 0.8..1.2: "
          f"{'met' if 0.8 <= statistics.median(thr_r) <= 1.2 else 'MISSED'}), worst "
          f"{max(max(thr_r), 1 / min(thr_r)):.2f}x (target <= 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
