"""Admission by lifetime KV reservation, decode stretches against stepping one iteration at a time, trtllm-bench's
max batch / max num tokens heuristic, and the preemption note (issue 52, item 3)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from serving_calls import scheduler_state, serve

import roofline
from roofline.llm.spec import make_spec
from roofline.serving.config import Batching, Memory, Precision, ServeConfig
from roofline.serving.engine import simulate
from roofline.serving.engines import engine_config
from roofline.serving.requests import Traffic, make_requests
from roofline.serving.schedulers import get
from roofline.serving.steps import StepModel
from roofline.serving.trtllm_bench import engine_setting, limits

H100 = roofline.device("h100")


def _admitted(policy: str, isl: list[int], free_blocks: int) -> list[int]:
    s = scheduler_state(isl, free_blocks=free_blocks)
    return [r for r, _ in get(policy)()._admit(s, None)]


def test_a_request_whose_lifetime_kv_does_not_fit_is_not_admitted():
    # a prompt of 160 tokens and 100 to generate (scheduler_state's): its lifetime is ceil((160 + 100) / 16) = 17
    # blocks, its prompt 10.  prefill-first's watermark on a cache of 17 blocks is int(0.01 x 17) = 0 blocks
    assert _admitted("prefill-first", [160], 17) == [0]
    assert _admitted("prefill-first", [160], 16) == []  # 17 > 16: it waits
    assert _admitted("whole-prompts", [160], 16) == [0]  # by its prompt's 10 blocks, it would start
    s = scheduler_state([160], free_blocks=17)
    get("prefill-first")()._admit(s, None)
    assert s.blocks[0] == 17 and s.free_blocks == 0  # the whole lifetime taken at admission
    # on 1000 blocks the watermark is int(0.01 x 1000) = 10: at most 990 blocks may be taken
    assert _admitted("prefill-first", [16 * 983 + 60], 1000) == []  # (15,788 + 100) / 16 = 993 > 990: waits
    assert _admitted("prefill-first", [16 * 983 - 100], 1000) == [0]  # (15,628 + 100) / 16 = 983 <= 990
    assert get("prefill-first").reserve_lifetime and not get("vllm-v0").reserve_lifetime
    assert get("trtllm").reserve_lifetime and not get("whole-prompts").reserve_lifetime


def _saturating(policy: str, stretches: bool = True):
    # 9 closed-loop clients, prompts of 16 tokens and 240 outputs on 128 blocks of 16: each request ends holding
    # ceil((16 + 240 - 1) / 16) = 16 blocks, so 9 at once (144 blocks) outgrow the cache
    spec = make_spec("llama-2-7b", phase="prefill")
    n = 36
    return simulate(StepModel(spec, H100), get(policy)(), np.zeros(n), np.full(n, 16), np.full(n, 240), blocks=128,
                    block_size=16, concurrency=9, stretches=stretches)


def test_no_preemption_under_lifetime_reservation_on_a_saturating_load():
    thrash, reserved = _saturating("whole-prompts"), _saturating("prefill-first")
    assert thrash.preemptions > 0  # admitted by its prompt's block, the 9th outgrows the cache
    # prefill-first reserves ceil((16 + 240) / 16) = 16 blocks a request above a watermark of int(0.01 x 128) = 1:
    # (128 - 1) // 16 = 7 run at once, and none is ever preempted
    assert reserved.preemptions == 0 and reserved.max_running == 7
    assert np.all(np.isfinite(reserved.last))  # every request completes
    assert _saturating("trtllm").preemptions == 0  # GUARANTEED_NO_EVICT: no watermark, 128 // 16 = 8 at once
    assert _saturating("trtllm").max_running == 8


def _same(a, b) -> bool:
    """Two replica runs with the same figures, to the bit."""
    return (np.array_equal(a.first, b.first, equal_nan=True) and np.array_equal(a.last, b.last, equal_nan=True)
            and (a.iterations, a.preemptions, a.max_running) == (b.iterations, b.preemptions, b.max_running)
            and np.array_equal(a.usage.time[: a.usage.n], b.usage.time[: b.usage.n])
            and np.array_equal(a.usage.used[: a.usage.n], b.usage.used[: b.usage.n])
            and (a.first_full == b.first_full or (np.isnan(a.first_full) and np.isnan(b.first_full))))


@pytest.mark.parametrize("policy", ["prefill-first", "vllm-v0", "chunked", "trtllm", "vllm"])
def test_decode_stretches_give_the_figures_of_stepping_one_iteration_at_a_time(policy):
    # two routes to one simulation: pure-decode iterations advanced together, or each planned on its own;
    # Poisson arrivals (stretches end at an arrival) and a closed loop on a cache that fills (they end before
    # the blocks run out; vllm-v0 and chunked preempt there)
    spec = make_spec("llama-3-8b", phase="prefill", wbits="fp8", abits="fp8", kvbits="fp8")
    for traffic, blocks in ((Traffic(isl="100:900:uniform", osl="20:300:uniform", requests=300, rate=30.0, seed=1), 2000),
                            (Traffic(isl=300, osl=400, requests=200, concurrency=100), 1500)):
        r = make_requests(traffic)
        runs = []
        for stretches in (True, False):
            steps = StepModel(spec, H100)
            planned = []
            sched = get(policy)()
            plan = sched.plan
            sched.plan = lambda s, plan=plan, planned=planned: planned.append(1) or plan(s)  # type: ignore[method-assign]
            runs.append((simulate(steps, sched, r.arrival, r.isl, r.osl, blocks=blocks, block_size=16,
                                  concurrency=r.concurrency, stretches=stretches), len(planned)))
        (fast, fast_plans), (slow, slow_plans) = runs
        assert _same(fast, slow)
        assert slow_plans >= slow.iterations and fast_plans < slow_plans / 2  # the stretches did skip planning


def test_trtllm_bench_heuristic_by_hand():
    # tensorrt_llm/bench/build/tuning.py (04cba882): Llama-3.1-8B FP8 (the perf overview's checkpoint) on one H100,
    # the perf overview's 128/128 row at kv_cache_free_gpu_mem_fraction 0.95.  Parameters: 32 layers x
    # (2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x 14336 + 2 x 4096) + 2 x 128256 x 4096 + 4096 = 8,030,261,248, one
    # byte each; NVML's 81,559 MiB = 85,520,809,984 B; KV per token 2 x 32 x max(1, 8) x 128 x 1 B = 65,536 B.
    # cache = (85,520,809,984 - 8,030,261,248) x 0.95 = 73,616,021,299 B; / (65,536 x 256) = 4,387.8 requests
    # raw_bs = min(4,387.8, 4096) = 4096 >= 1024: 256 x ceil(4096 / 256) = 4096
    # raw_token = min(4096 x (1 + 128 / 128), 32768) = 8192, not < 8192: 1024 x ceil(8192 / 1024) = 8192
    spec = make_spec("llama-3-8b", phase="prefill", wbits="fp8", abits="fp8", kvbits="fp8")
    assert limits(spec, H100, isl=128, osl=128, max_isl=128, fraction=0.95) == (4096, 8192)
    # 20000/2000: 73,616,021,299 / (65,536 x 22,000) = 51.06 requests; raw_bs 51.06 < 256: max(64, 32 x 2) = 64;
    # raw_token = 51.06 x 11 = 561.6 < 4096: max(2048, 256 x 3) = 2048; no chunking: max(2048, 20000 + 64) = 20064
    assert limits(spec, H100, isl=20000, osl=2000, max_isl=20000, fraction=0.95) == (64, 20064)
    # the other branches of finetune_setting
    assert engine_setting(kv_max_requests=700.0, isl=1000, osl=1000, max_isl=1000) == (768, 2048)  # 128 x 6; 1,400
    assert engine_setting(kv_max_requests=3000.0, isl=2048, osl=128, max_isl=2048) == (3072, 32768)  # 256 x 12; cap
    assert engine_setting(kv_max_requests=2000.0, isl=500, osl=2000, max_isl=500) == (2048, 2560)  # 256 x 8; 2,500: 256 x 10


def test_trtllm_bench_preset_sets_the_limits_per_run():
    # the preset's tuning and the heuristic called directly (two routes): 8 requests of the 128/128 row
    cfg = engine_config("trtllm-bench")
    cfg = ServeConfig(precision=Precision("fp8", "fp8", "fp8"), kernels=cfg.kernels, batching=cfg.batching,
                      memory=Memory(block_size=32, gpu_memory_utilization=0.95, kv_of_free=True))
    r = roofline.serve("llama-3-8b", H100, traffic=Traffic(isl=128, osl=128, requests=8, concurrency=8), config=cfg)
    assert "GUARANTEED_NO_EVICT, 8192 tokens per iteration), max batch 4096" in r.scheduler
    given = ServeConfig(precision=cfg.precision, kernels=cfg.kernels, memory=cfg.memory,
                        batching=Batching("trtllm", max_batch=100, tuning="trtllm-bench"))
    r2 = roofline.serve("llama-3-8b", H100, traffic=Traffic(isl=128, osl=128, requests=8, concurrency=8), config=given)
    assert "8192 tokens per iteration), max batch 100" in r2.scheduler  # a limit given is kept
    assert engine_config("vllm-v0").batching.scheduler == "vllm-v0" and cfg.kernels.cuda_graphs


def test_thrashing_run_names_a_scheduler_that_does_not(tmp_path):
    # llama-2-7b on an H100 at 0.2 of its memory: 16.3 GB less 13.5 GB of weights and the activations leave a
    # few thousand tokens of KV, while 32 clients of 16 + 240 tokens need 8,192: admitted by their prompts, they thrash
    kw = dict(isl=16, osl=240, requests=64, concurrency=32, gpu_memory_utilization=0.2)
    thrash = serve("llama-2-7b", H100, scheduler="whole-prompts", **kw)
    calm = serve("llama-2-7b", H100, **kw)
    assert thrash.figures.preemptions > 0.05 * 64 and calm.figures.preemptions == 0
    assert any("--scheduler trtllm" in n for n in thrash.notes) and not any("--scheduler" in n for n in calm.notes)
    out = tmp_path / "s.json"
    from roofline.cli import main

    assert main(["serve", "llama-2-7b", "--device", "h100", "--scheduler", "whole-prompts", "--isl", "16", "--osl",
                 "240", "--requests", "64", "--concurrency", "32", "--gpu-memory-utilization", "0.2",
                 "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["preemptions"] == thrash.figures.preemptions and any("--scheduler trtllm" in n for n in doc["notes"])


def test_engine_help_says_a_preset_is_a_scheduler_plus_engine_costs(capsys):
    from roofline.cli import main

    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "a scheduler policy plus the engine's costs" in text and "trtllm-bench" in text


def test_a_preempted_request_keeps_its_prompt_length():
    # a preemption sets the request's prefill target to prompt + generated; the prompt itself (and the caller's
    # array) stays: 16 tokens each, as given (the two were one int32 array before, so the prompt grew too)
    isl = np.full(36, 16, dtype=np.int32)
    spec = make_spec("llama-2-7b", phase="prefill")
    r = simulate(StepModel(spec, H100), get("whole-prompts")(), np.zeros(36), isl, np.full(36, 240, dtype=np.int32),
                 blocks=128, block_size=16, concurrency=9)
    assert r.preemptions > 0 and np.all(isl == 16) and np.all(r.isl == 16)


def test_bench_serve_sets_the_request_limit_only_while_main_runs(monkeypatch):
    import importlib.util
    import os
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_serve.py"
    spec = importlib.util.spec_from_file_location("bench_serve_limit", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.delenv("ROOFLINE_MAX_REQUESTS", raising=False)
    assert "ROOFLINE_MAX_REQUESTS" not in os.environ  # importing it set nothing
    assert bench.main(["--table", "4"]) == 2 and "ROOFLINE_MAX_REQUESTS" not in os.environ
    monkeypatch.setenv("ROOFLINE_MAX_REQUESTS", "500")
    assert bench.main(["--table", "4"]) == 2 and os.environ["ROOFLINE_MAX_REQUESTS"] == "500"  # the caller's, back
