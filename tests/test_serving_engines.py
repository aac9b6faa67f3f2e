"""roofline serve: the engine mechanisms of roofline.serving.engines, each against values derived by hand."""

import json
from dataclasses import FrozenInstanceError, replace

import pytest
from serving_calls import scheduler_state as _state
from serving_calls import serve

import roofline
from roofline.core.errors import RooflineError
from roofline.llm.spec import make_spec
from roofline.serving.engines import ENGINES, engine_config
from roofline.serving.requests import Traffic
from roofline.serving.run import kv_blocks
from roofline.serving.schedulers import get

H100 = roofline.device("h100")


def test_whole_prompts_join_the_decodes_under_the_token_budget():
    # budget 10: 3 decodes leave 7; the 5-token prompt joins (3 + 5 = 8 <= 10), the 4-token one would make
    # 12 > 10 and waits whole (chunked prefill would have taken 2 of its tokens)
    s = _state([16, 16, 16, 5, 4], running=(0, 1, 2), gen=1)
    plan = get("whole-prompts")(token_budget=10).plan(s)
    assert sorted(plan.decode.tolist()) == [0, 1, 2]
    assert plan.chunks == ((3, 5),)
    assert list(s.waiting) == [4]
    chunked = get("chunked")(token_budget=10).plan(_state([16, 16, 16, 5, 4], running=(0, 1, 2), gen=1))
    assert chunked.chunks == ((3, 5), (4, 2))  # the contrast: 10 - 3 - 5 = 2 tokens of the next prompt


def test_a_prompt_over_the_whole_budget_still_runs():
    # a 12-token prompt can never fit a 10-token budget: alone in its iteration it runs whole, never starves
    s = _state([12, 3])
    plan = get("whole-prompts")(token_budget=10).plan(s)
    assert plan.chunks == ((0, 12),)  # the 3-token prompt would make 15 > 10: it waits for the next iteration
    assert list(s.waiting) == [1]


def test_whole_prompts_describe_themselves():
    assert "inflight batching of whole prompts, 4096 tokens" in get("whole-prompts")(token_budget=4096).describe()


def test_kv_of_free_memory_by_hand():
    # vLLM: KV = u x capacity - weights - activations; TensorRT-LLM: KV = u x (capacity - weights - activations).
    # The two differ by (1 - u) x (weights + activations), less than one block each for the rounding.
    spec = make_spec("llama-2-7b", phase="prefill", flash=True)
    u, bs = 0.9, 16
    total, m1 = kv_blocks(spec, H100, block_size=bs, utilization=u, act_tokens=2048)
    free, m2 = kv_blocks(spec, H100, block_size=bs, utilization=u, act_tokens=2048, of_free=True)
    cap, w, a, block = m1["capacity"], m1["weights"], m1["activations"], bs * m1["kv_bytes_per_token"]
    assert free == int(u * (cap - w - a) // block)
    assert total == int((u * cap - w - a) // block)
    assert (free - total) * block == pytest.approx((1 - u) * (w + a), abs=block)


def test_engine_profile_runs_and_limits_the_batch():
    cfg = engine_config("trtllm-mlperf-v4")
    cfg = replace(cfg, batching=replace(cfg.batching, max_batch=24))
    r = roofline.serve("llama-2-7b", H100, traffic=Traffic(isl=200, osl=20, requests=64, concurrency=64), config=cfg)
    assert r.figures.max_running == 24  # gpu_batch_size caps the running batch
    assert "inflight batching of whole prompts, 4096 tokens" in r.scheduler
    # 64 requests x 20 tokens each, all completed
    assert r.figures.requests == 64


def test_engine_configs_are_frozen_and_unknown_names_are_one_line():
    a = engine_config("vllm-v0")
    with pytest.raises(FrozenInstanceError):
        a.batching.max_batch = 1  # type: ignore[misc]
    assert replace(a.batching, max_batch=1).max_batch == 1
    assert ENGINES["vllm-v0"].batching.max_batch == 256  # vLLM SchedulerConfig's max_num_seqs default
    assert ENGINES["vllm-v0"].batching.scheduler == "vllm-v0"  # the preset names vLLM V0's own policy
    with pytest.raises(RooflineError, match="engine_config: name must be one of .trtllm-bench., .trtllm-mlperf-v4., "
                       ".trtllm-mlperf-v4.1., .vllm-v0., got str .sglang."):
        engine_config("sglang")


def test_cli_engine_and_flags_that_win(tmp_path, capsys):
    from roofline.cli import main

    out = tmp_path / "s.json"
    # the engine's whole-prompt batching and 4096-token budget; --max-batch given on top of it
    code = main(["serve", "llama-2-7b", "--device", "h100", "--engine", "trtllm-mlperf-v4", "--max-batch", "24",
                 "--concurrency", "64", "--requests", "64", "--isl", "200", "--osl", "20", "--json", str(out)])
    assert code == 0
    doc = json.loads(out.read_text())
    assert "inflight batching of whole prompts, 4096 tokens per iteration" in doc["scheduler"]
    assert doc["max_running"] == 24
    # vllm-v0: max_num_seqs 256 holds all 64 clients at once
    code = main(["serve", "llama-2-7b", "--device", "h100", "--engine", "vllm-v0", "--concurrency", "64",
                 "--requests", "64", "--isl", "200", "--osl", "20", "--json", str(out)])
    assert code == 0 and json.loads(out.read_text())["max_running"] == 64
    capsys.readouterr()
    code = main(["serve", "llama-2-7b", "--device", "h100", "--engine", "nope", "--rate", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--engine 'nope': must be one of 'trtllm-bench', 'trtllm-mlperf-v4'" in err[0]


def test_hostile_engine_names_are_one_short_line():
    for name in ("x" * 100_000, "\x1b[31mred", 7, None):
        with pytest.raises(RooflineError) as e:
            engine_config(name)  # type: ignore[arg-type]
        msg = str(e.value)
        assert "\n" not in msg and "\x1b" not in msg and len(msg) < 160


def test_kv_of_free_does_not_fit_is_one_line():
    # 70B in bf16 is ~138 GB of weights: more than an 80 GB H100, in either reading of the fraction
    spec = make_spec("llama-2-70b", phase="prefill", flash=True)
    with pytest.raises(RooflineError, match=r"does not fit .* 0\.9 x what they leave of"):
        kv_blocks(spec, H100, block_size=16, utilization=0.9, act_tokens=2048, of_free=True)


def test_cuda_graphs_trade_the_launch_floor_for_the_graph_floor():
    # forecast = overhead + work per kernel: replaying a graph changes only the overhead, from the H100's
    # cuda-launch floor (3.0 us, tritonbench #1017) to its cuda-graph floor (1.27 us, the catalog's cited
    # H100 figure), so one request's TTFT (its prefill iteration) drops by (3.0 - 1.27) us x its kernels
    from roofline.llm.model import build_workload

    n = 512
    kernels = float(build_workload(make_spec("llama-2-7b", phase="prefill", prompt=n, flash=True)).columns["count"].sum())
    launch, graph = H100.overhead_floor("cuda-launch").seconds, H100.overhead_floor("cuda-graph").seconds
    assert (launch, graph) == (3e-06, 1.27e-06)
    eager = serve("llama-2-7b", H100, isl=n, osl=1, requests=1, concurrency=1, exact=True)
    graphs = serve("llama-2-7b", H100, isl=n, osl=1, requests=1, concurrency=1, exact=True, cuda_graphs=True)
    drop = eager.figures.ttft.p50 - graphs.figures.ttft.p50
    assert drop == pytest.approx((launch - graph) * kernels, rel=1e-9)


def test_cli_cuda_graphs_lowers_the_one_request_ttft(tmp_path):
    from roofline.cli import main

    out = {}
    for flag in ((), ("--cuda-graphs",)):
        path = tmp_path / f"s{len(flag)}.json"
        assert main(["serve", "llama-2-7b", "--device", "h100", "--isl", "512", "--osl", "1", "--requests", "1",
                     "--concurrency", "1", "--json", str(path), *flag]) == 0
        out[flag] = json.loads(path.read_text())["ttft_p50_s"]
    assert out[("--cuda-graphs",)] < out[()]  # the same table, a lower floor per kernel (the test above)
