"""How fast is plan --serve's deployment search, and what does it recommend?  (a script, not a test)

    python benchmarks/bench_serve_search.py

Issue 52 item 5 (targets on a 2-core machine): each side-by-side search <= 3 s; a search over >= 1,000
deployments <= 10 s; one serve of 10,000 requests <= 3 s.  Times are wall and CPU seconds (the machine is
shared by several engineers: CPU seconds are the fairer figure), the median of two runs.

Side by side (issue 52's accept line): 8 H100 (dgx-h100), ISL 4000 / OSL 500, TTFT <= 1 s, TPOT <= 50 ms, for
Llama-3.1-8B in bf16 and Llama-3.1-70B in fp8 (this tool's bundled llama-3-8b / llama-3-70b: the same shapes).
AIConfigurator publishes no figure for these two setups (searched: ai-dynamo/aiconfigurator and ai-dynamo/dynamo
docs, README and issues; the published CLI examples are Qwen3-32B), so its figures below were produced here:
``pip install aiconfigurator==0.12.0`` (trtllm backend, perf DB 1.3.0rc20, system h100_sxm), run on this
machine on 2026-12-05 as

    aiconfigurator cli default --model-path meta-llama/Meta-Llama-3.1-8B --total-gpus 8 --system h100_sxm \\
        --isl 4000 --osl 500 --ttft 1000 --tpot 50 --backend trtllm
    aiconfigurator cli default --model-path nvidia/Llama-3.1-70B-Instruct-FP8 ... (same flags; fp8 GEMMs + fp8 KV)

8B: agg, 8 replicas of tp1, batch 96: 2,290.19 tokens/s/GPU, 24.47 tokens/s/user, TTFT 812.56 ms, TPOT 40.86 ms
(searched in 85.6 s here).  70B fp8: disagg, prefill 4x tp1 + decode 1x tp4 batch 84: 449.10 tokens/s/GPU,
51.14 tokens/s/user, TTFT 902.02 ms, TPOT 19.55 ms (175.5 s here).  Both are AIConfigurator's mean-static
statistic, which this tool's ``--slo-stat mean-static`` reproduces; its own p99 ranking is printed beside.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from roofline.catalog import resolve_system
from roofline.llm.config import load_arch
from roofline.planner.deploy import Options
from roofline.planner.deploy_search import SearchResult, search
from roofline.serving.figures import Slo

SLO = Slo(1.0, 0.05)
#: AIConfigurator 0.12.0's recommendations, run here (module docs): deployment, tokens/s/GPU, per user, TTFT, TPOT
AIC = {"8B bf16": ("agg 8x tp1 b96", 2290.19, 24.47, 0.81256, 0.04086),
       "70B fp8": ("disagg prefill 4x tp1 + decode 1x tp4 b84", 449.10, 51.14, 0.90202, 0.01955)}
CASES = {"8B bf16": ("llama-3-8b", "bf16"), "70B fp8": ("llama-3-70b", "fp8")}


def timed(f: Callable[[], Any]) -> tuple[Any, float, float]:
    """The result and the median wall and CPU seconds of two runs."""
    walls, cpus, out = [], [], None
    for _ in range(2):
        t0, c0 = time.perf_counter(), time.process_time()
        out = f()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return out, statistics.median(walls), statistics.median(cpus)


def verdict(cpu: float, target: float) -> str:
    return f"{'met' if cpu <= target else 'MISSED'} (x{cpu / target:.2f})"


def side_by_side() -> dict[str, SearchResult]:
    system = resolve_system("dgx-h100")
    print(f"{'search':28} {'deployments':>11} {'wall s':>7} {'CPU s':>6}  target <= 3 s (CPU)")
    out = {}
    for name, (model, precision) in CASES.items():
        r, wall, cpu = timed(lambda m=model, p=precision: search(load_arch(m), system,
                                                                Options(4000, 500, SLO, precision=p)))
        out[name] = r
        print(f"{name + ' on 8 H100':28} {r.tried:>11,} {wall:>7.2f} {cpu:>6.2f}  {verdict(cpu, 3.0)}")
    return out


def large() -> None:
    system = resolve_system("dgx-h100", nodes=2)
    r, wall, cpu = timed(lambda: search(load_arch("llama-3-70b"), system, Options(4000, 500, SLO, precision="fp8")))
    print(f"{'70B fp8 on 16 H100':28} {r.tried:>11,} {wall:>7.2f} {cpu:>6.2f}  target <= 10 s: {verdict(cpu, 10.0)}")


def one_serve() -> None:
    import roofline
    from roofline.serving.config import ServeConfig
    from roofline.serving.requests import Traffic

    r, wall, cpu = timed(lambda: roofline.serve("llama-3-70b", "h100", tp=8, config=ServeConfig(),
                                                traffic=Traffic(isl="128:1024:uniform", osl="64:512:uniform",
                                                                requests=10_000, rate=20.0, seed=0)))
    print(f"{'serve 10,000 requests':28} {'':>11} {wall:>7.2f} {cpu:>6.2f}  target <= 3 s: {verdict(cpu, 3.0)} "
          f"(llama-3-70b tp 8 on H100, Poisson 20/s, {r.figures.iterations:,} iterations)")


def recommendations(found: dict[str, SearchResult]) -> None:
    print("\nRecommendations (8 H100, ISL 4000 / OSL 500, TTFT <= 1 s, TPOT <= 50 ms)")
    print(f"  {'case':8} {'by':12} {'deployment':44} {'tok/s/GPU':>9} {'tok/s/user':>10} {'TTFT':>7} {'TPOT':>7}")
    for name, r in found.items():
        for stat in ("p99", "mean-static"):
            row = r.best_by(stat)
            if row is None:
                print(f"  {name:8} {stat:12} none within the SLO")
                continue
            dev, user = row.figures(stat)[:2]
            ttft, tpot = row.times(stat)
            print(f"  {name:8} {stat:12} {row.deployment.describe():44} {dev:>9,.0f} {user:>10.1f} "
                  f"{(ttft or 0) * 1e3:>5.0f}ms {(tpot or 0) * 1e3:>5.1f}ms")
        d, dev, user, ttft, tpot = AIC[name]
        ours = r.best_by("mean-static")
        ratio = ours.figures("mean-static")[0] / dev if ours is not None else float("nan")
        print(f"  {name:8} {'AIC 0.12.0':12} {d:44} {dev:>9,.0f} {user:>10.1f} {ttft * 1e3:>5.0f}ms "
              f"{tpot * 1e3:>5.1f}ms  ours (mean-static) / AIC = {ratio:.3f}: {'within' if abs(ratio - 1) <= 0.2 else 'OUTSIDE'} 20%")


def main() -> None:
    print(f"plan --serve search speed (load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; shared)")
    found = side_by_side()
    large()
    one_serve()
    recommendations(found)


if __name__ == "__main__":
    main()
