"""Speed of the LLM analyzer: one full analysis, a 10,000-point vectorised sweep, and the
side-by-side Python-loop baseline (a one-layer-times-L model, one configuration at a time).

    PYTHONPATH=src python3 benchmarks/bench_llm.py [--repeats 7]

Prints a table: figure, measured, target, ratio (measured / target for times; for the
speed-up, target / measured, so a ratio <= 1 meets the target in every row).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from roofline import analyze
from roofline.catalog import get_device
from roofline.frontends.llm import grid_sweep, make_spec
from roofline.llm import config as llm_config
from roofline.llm import metrics as llm_metrics
from roofline.llm import sizes as llm_sizes
from roofline.llm import table as llm_table
from roofline.llm.model import build_workload
from roofline.words.llm_report import report as llm_report

BATCHES = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 1024]
CONTEXTS = [128, 256, 384, 512, 768, 1024, 1536, 2048, 2560, 3072, 4096, 5120, 6144, 8192, 10240, 12288, 16384,
            20480, 24576, 32768, 40960, 49152, 65536, 98304, 131072]
DEVICES = ("a100", "h100", "h200", "mi300x")
PRECISIONS = [(16, 16, 16), (8, 8, 8), (4, 16, 16), (4, 16, 8)]


def clear_caches() -> None:
    for cached in (llm_table.build_table, llm_sizes.param_counts, llm_sizes._weights_resident,
                   llm_sizes._activation_per_sequence, llm_metrics._ridge_batch, llm_config._load_cached):
        cached.cache_clear()


def timed(fn, repeats: int) -> tuple[float, float, float]:  # type: ignore[no-untyped-def]
    """(median, min, max) seconds of ``fn()`` over ``repeats`` runs after one warm-up."""
    fn()
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), min(runs), max(runs)


def full_analysis(cold: bool) -> None:
    """Llama-3-70B: prefill of 4096 tokens and decode at 4096, every op analysed, plus the report."""
    if cold:
        clear_caches()
    dev = get_device("h100")
    for phase in ("prefill", "decode"):
        spec = make_spec("llama-3-70b", phase=phase, prompt=4096, context=4096)
        llm_report(analyze(build_workload(spec), dev))


def vector_sweep() -> np.ndarray:
    spec = make_spec("llama-3-70b", phase="decode", tp=8)
    devs = [get_device(d) for d in DEVICES]
    return grid_sweep(spec, batches=BATCHES, contexts=CONTEXTS, devices=devs, precisions=PRECISIONS).time


def roofline_analyze(bandwidth: float, peak: float, ops: float, memory_access: float) -> tuple[float, float, str]:
    """LLM-Viewer's per-op roofline: (arithmetic intensity, attainable FLOP/s, bound)."""
    intensity = ops / memory_access
    turning_point = peak / bandwidth
    if intensity < turning_point:
        return intensity, intensity * bandwidth, "memory"
    return intensity, peak, "compute"


def loop_baseline(configs: list[tuple[float, float, float, float, float, float]]) -> list[float]:
    """The simpler model the issue compares against, LLM-Viewer style: one decoder layer's ops as
    dicts (q, k, v, o, gate, up, down, QK^T, PV, softmax), each analysed on the roofline, the
    layer time times L plus lm_head; one configuration per loop iteration (decode step)."""
    d, f, h, kv, dh, L, V = 8192, 28672, 64, 8, 128, 80, 128256
    out = []
    for b, ctx, peak, bw, wb, kvb in configs:
        layer: dict[str, dict[str, float]] = {}
        for name, k, n in (("q_proj", d, h * dh), ("k_proj", d, kv * dh), ("v_proj", d, kv * dh),
                           ("out_proj", h * dh, d), ("gate_proj", d, f), ("up_proj", d, f), ("down_proj", f, d)):
            layer[name] = {"OPs": 2.0 * b * k * n, "load_weight": k * n * wb, "load_act": b * k * 2.0,
                           "store_act": b * n * 2.0, "load_kv_cache": 0.0, "store_kv_cache": 0.0}
        layer["k_proj"]["store_kv_cache"] = b * kv * dh * kvb
        layer["v_proj"]["store_kv_cache"] = b * kv * dh * kvb
        layer["qk_matmul"] = {"OPs": 2.0 * b * h * dh * ctx, "load_weight": 0.0, "load_act": b * h * dh * 2.0,
                              "store_act": b * h * ctx * 2.0, "load_kv_cache": b * ctx * kv * dh * kvb,
                              "store_kv_cache": 0.0}
        layer["sv_matmul"] = {"OPs": 2.0 * b * h * dh * ctx, "load_weight": 0.0, "load_act": b * h * ctx * 2.0,
                              "store_act": b * h * dh * 2.0, "load_kv_cache": b * ctx * kv * dh * kvb,
                              "store_kv_cache": 0.0}
        layer["softmax"] = {"OPs": 5.0 * b * h * ctx, "load_weight": 0.0, "load_act": b * h * ctx * 2.0,
                            "store_act": b * h * ctx * 2.0, "load_kv_cache": 0.0, "store_kv_cache": 0.0}
        results: dict[str, dict[str, float | str]] = {}
        total = 0.0
        for name, op in layer.items():
            access = (op["load_weight"] + op["load_act"] + op["store_act"] + op["load_kv_cache"]
                      + op["store_kv_cache"])
            ai, perf, bound = roofline_analyze(bw, peak, op["OPs"], access)
            results[name] = {"arithmetic_intensity": ai, "performance": perf, "bound": bound,
                             "inference_time": op["OPs"] / perf, "memory_access": access}
            total += op["OPs"] / perf
        head_access = d * V * 2.0 + b * (d + V) * 2.0
        _, perf, _ = roofline_analyze(bw, peak, 2.0 * b * d * V, head_access)
        out.append(total * L + 2.0 * b * d * V / perf)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    n_configs = len(BATCHES) * len(CONTEXTS) * len(DEVICES) * len(PRECISIONS)

    warm = timed(lambda: full_analysis(cold=False), args.repeats)
    cold = timed(lambda: full_analysis(cold=True), args.repeats)
    sweep = timed(vector_sweep, args.repeats)
    rng = np.random.default_rng(0)
    configs = [(float(rng.choice(BATCHES)), float(rng.choice(CONTEXTS)), float(rng.choice([312e12, 989e12])),
                float(rng.choice([2.039e12, 3.35e12])), float(rng.choice([2.0, 0.5])), float(rng.choice([2.0, 1.0])))
               for _ in range(n_configs)]
    loop = timed(lambda: loop_baseline(configs), max(3, args.repeats // 2))
    per_vec, per_loop = sweep[0] / n_configs, loop[0] / n_configs

    rows = [
        ("full analysis, Llama-3-70B prefill 4096 + decode 4096 (warm caches)", warm, 5e-3),
        ("full analysis, same, cold (config + op tables rebuilt)", cold, 5e-3),
        (f"vectorised sweep, {n_configs:,} (batch, context, device, precision)", sweep, 0.15),
    ]
    print(f"{'figure':<74} {'measured':>12} {'(min..max)':>20} {'target':>10} {'ratio':>7}")
    for label, (med, lo, hi), target in rows:
        print(f"{label:<74} {med * 1e3:>9.2f} ms {f'({lo * 1e3:.2f}..{hi * 1e3:.2f})':>20} "
              f"{f'<= {target * 1e3:g} ms':>10} {med / target:>7.3f}")
    print(f"{'per configuration, vectorised sweep':<74} {per_vec * 1e6:>9.3f} µs {'':>20} {'':>10} {'':>7}")
    print(f"{f'per configuration, Python loop over one layer x L ({n_configs:,} configs)':<74} "
          f"{per_loop * 1e6:>9.3f} µs {f'({loop[1] / n_configs * 1e6:.1f}..{loop[2] / n_configs * 1e6:.1f})':>20} "
          f"{'~70 µs':>10} {'':>7}")
    speedup = per_loop / per_vec
    print(f"{'speed-up per configuration, vectorised vs loop (same run)':<74} {speedup:>10.0f} x {'':>20} "
          f"{'>= 5 x':>10} {5 / speedup:>7.3f}")


if __name__ == "__main__":
    main()
