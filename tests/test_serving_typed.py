"""roofline.serving's typed results (issue 47) and the load judged against the rate offered (issue 48 item 4):
figures and their JSON keys, ServeConfig's checks, the scheduler registry, each against values derived by hand."""

from __future__ import annotations

import json
import math
from dataclasses import FrozenInstanceError, replace

import numpy as np
import pytest
from serving_calls import scheduler_state as _state
from serving_calls import serve

import roofline
from roofline.core.errors import RooflineError
from roofline.serving.config import Batching, Kernels, Memory, Precision, ServeConfig, Timing
from roofline.serving.engine import ReplicaResult, UsageTrace
from roofline.serving.figures import Load, Percentiles, ServingFigures, Slo, figures
from roofline.serving.requests import Traffic
from roofline.serving.schedulers import REGISTRY, Plan, Scheduler, State, get, names, register

H100 = roofline.device("h100")

#: The keys the figures' JSON had before they were typed (derived by hand from the old figures(): five rates
#: and counts, p50/p90/p99/mean of each of ttft, tpot, e2e, per_device, six run counters; four SLO keys)
OLD_KEYS = ["requests", "makespan_s", "output_tokens_per_s", "input_tokens_per_s", "requests_per_s",
            *[f"{n}_{k}_s" for n in ("ttft", "tpot", "e2e") for k in ("p50", "p90", "p99", "mean")],
            "per_device", "iterations", "preemptions", "max_running", "kv_cache_full_at_s", "kv_cache_blocks",
            "kv_cache_use"]
OLD_SLO_KEYS = ["meets_slo", "goodput_tokens_per_s", "slo_attainment", "slo"]


def _replica(arrival, first, last, osl, isl=None, blocks=100) -> ReplicaResult:
    """A replica's run written by hand (times in seconds)."""
    n = len(arrival)
    usage = UsageTrace()
    usage.add(0.0, 10.0)
    usage.add(float(max(last)), 0.0)
    return ReplicaResult(np.asarray(arrival, float), np.asarray(isl or [100] * n), np.asarray(osl),
                         np.asarray(first, float), np.asarray(last, float), iterations=7, preemptions=1, usage=usage,
                         blocks=blocks, first_full=math.nan, max_running=3)


def test_percentiles_by_hand_and_their_keys():
    p = Percentiles.of(np.array([1.0, 2.0, 3.0, 4.0, np.nan]))
    # numpy's linear percentile of 1..4: p50 = 2.5, p90 = 1 + 0.9 * 3 = 3.7, p99 = 1 + 0.99 * 3 = 3.97; the nan
    # is left out of all four
    assert (p.p50, p.p90, p.p99, p.mean) == pytest.approx((2.5, 3.7, 3.97, 2.5))
    assert list(p.to_dict("ttft")) == ["ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "ttft_mean_s"]
    assert Percentiles.from_dict(p.to_dict("x"), "x") == p
    assert all(math.isnan(v) for v in vars(Percentiles.of(np.array([np.nan]))).values())


def test_figures_by_hand_and_the_old_key_set_round_trip():
    # two requests: arrive at 0 and 1 s, first tokens at 0.5 and 2 s, last at 2.5 and 3 s, 5 and 3 output tokens
    r = _replica([0.0, 1.0], [0.5, 2.0], [2.5, 3.0], [5, 3])
    f = figures([r], devices=2, slo=Slo(ttft=1.5, tpot=0.6))
    assert f.makespan_s == 3.0  # last token 3 s - first arrival 0 s
    assert f.output_tokens_per_s == 8 / 3 and f.per_device_output_tokens_per_s == 8 / 6
    assert f.ttft.p50 == pytest.approx(0.75)  # TTFTs 0.5 and 1.0
    assert f.tpot.mean == pytest.approx((0.5 + 0.5) / 2)  # (2.5 - 0.5) / 4 and (3 - 2) / 2
    # p99 TTFT = 0.5 + 0.99 * 0.5 = 0.995 <= 1.5 and TPOT 0.5 <= 0.6: met; no offered rate, no load
    assert f.meets_slo is True and f.load is None and f.slo is not None and f.slo.goodput_tokens_per_s == 8 / 3
    doc = f.to_dict()
    assert list(doc) == OLD_KEYS + OLD_SLO_KEYS  # the published keys, in their order
    assert doc["per_device"] == {"output_tokens_per_s": 8 / 6, "requests_per_s": 2 / 6}
    back = ServingFigures.from_dict(json.loads(json.dumps(doc)))
    assert back == f
    without = figures([r], devices=1)
    assert list(without.to_dict()) == OLD_KEYS and without.meets_slo is None
    with pytest.raises(FrozenInstanceError):
        f.requests = 3  # type: ignore[misc]


def test_a_serve_document_keeps_its_keys_and_reads_back():
    r = serve("llama-2-7b", H100, isl=64, osl=4, requests=3, concurrency=3, slo="ttft=1s,tpot=100ms")
    doc = json.loads(json.dumps(r.to_dict(headline="h")))
    old = ["schema", "model", "device", "tp", "replicas", "devices", "scheduler", "ranked_by", "requests_model",
           "memory_per_device", "uncalibrated", "headline", *OLD_KEYS, *OLD_SLO_KEYS, "notes", "setup"]
    # 'uncalibrated' (issue 48): None on the H100, which has a cited calibration
    assert list(doc) == old  # a closed loop offers no rate: no 'load'
    assert ServingFigures.from_dict(doc) == r.figures


def test_load_verdicts_by_hand():
    # 10 requests, one a second from 0 to 9 s (span 9 s), each generating for 1 s.  Served two seconds apart
    # (the last token at 20 s): 9 / 20 = 45% of the rate that arrived, and 9 s spans 9 x the 1 s generation
    # time, the steady-state bar at 10 %: saturated
    a = np.arange(10.0)
    sat = figures([_replica(a, 2 * a + 1, 2 * a + 2, [3] * 10)], 1, Slo(ttft=100.0), offered_rate=1.0)
    assert sat.load is not None and sat.load.served_share == pytest.approx(9 / 20)
    assert sat.load.verdict == "saturated" and not sat.load.keeps_up
    assert sat.slo is not None and sat.slo.within and not sat.meets_slo  # within the p99 limit, still a miss
    assert sat.slo.goodput_tokens_per_s == 0.0
    # the same arrivals, each served at once but generating for 5 s: last token at 9 + 5 = 14 s, 9 / 14 = 64 %
    # short, but 9 s is under 9 x 5 s: too short to tell
    short = figures([_replica(a, a, a + 5, [3] * 10)], 1, Slo(ttft=100.0), offered_rate=1.0)
    assert short.load is not None and short.load.verdict == "too short" and not short.meets_slo
    # 100 requests a second apart, first token after 0.5 s, last after 1 s: 99 / 100 = 99 % served: keeps up
    b = np.arange(100.0)
    ok = figures([_replica(b, b + 0.5, b + 1, [3] * 100)], 1, Slo(ttft=1.0), offered_rate=1.0)
    assert ok.load is not None and ok.load.keeps_up and ok.meets_slo
    assert ok.load.arrived_per_s == pytest.approx(100 / 99) and ok.load.offered_per_s == 1.0
    assert ServingFigures.from_dict(json.loads(json.dumps(sat.to_dict()))) == sat


def test_load_words_and_the_sweep_cell():
    from roofline.render.serve import load_words, point_verdict, slo_words

    # the tp4 run: 200 requests offered at 20.5 req/s (arrivals over 9.76 s: 200 / 9.76 = 20.5), served at
    # 200 / 20.58 s = 9.72 req/s, 9.76 / 20.58 = 47 %; 9.76 s spans over 9 x a 1 s generation: saturated
    load = Load(20.5, 200, 9.76, 20.58, 1.0)
    assert load.served_per_s == pytest.approx(200 / 20.58) and load.verdict == "saturated"
    assert load_words(load).startswith("saturated: serves 9.72 req/s of the 20.5 that arrived (47%; 20.5 offered, as drawn)")
    short = replace(load, generation_p99_s=10.0)  # 9.76 s of arrivals under 9 x 10 s
    assert "too short to reach steady state" in load_words(short) and "--requests" in load_words(short)
    a = np.arange(10.0)
    sat = figures([_replica(a, 2 * a + 1, 2 * a + 2, [3] * 10)], 1, Slo(ttft=100.0), offered_rate=1.0)
    assert slo_words(sat).startswith("misses the SLO: saturated") and point_verdict(sat) == "saturated"


def test_a_poisson_run_names_its_load_in_json(tmp_path, capsys):
    from roofline.cli import main

    out = tmp_path / "s.json"
    assert main(["serve", "llama-2-7b", "--device", "h100", "--rate", "2", "--requests", "40", "--isl", "128",
                 "--osl", "8", "--slo", "ttft=2s,tpot=200ms", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert list(doc)[: len(doc) - 3] == ["schema", "model", "device", "tp", "replicas", "devices", "scheduler",
                                         "ranked_by", "requests_model", "memory_per_device", "uncalibrated",
                                         "headline", *OLD_KEYS,
                                         *OLD_SLO_KEYS]
    assert list(doc)[-3:] == ["load", "notes", "setup"]
    load = doc["load"]
    # 2 req/s on a 7B model that serves a 128-token prompt in milliseconds: it keeps up, so the SLO is met
    assert load["offered_requests_per_s"] == 2.0 and load["verdict"] == "keeps up" and doc["meets_slo"] is True
    assert load["served_share"] == pytest.approx(load["arrival_span_s"] / doc["makespan_s"])
    assert "meets the SLO" in capsys.readouterr().out


def test_serve_config_checks_each_field_in_one_line():
    cases = [(lambda: Batching(max_batch=0), "max_batch (--max-batch)"),
             (lambda: Batching(max_tokens=1.5), "max_tokens (--max-tokens)"),
             (lambda: Batching("orca"), "Batching: scheduler must be one of 'chunked', 'prefill-first', 'sarathi', "
              "'trtllm', 'vllm', 'vllm-v0', 'whole-prompts', got str 'orca'"),
             (lambda: Memory(block_size=0), "block_size (--block-size)"),
             (lambda: Memory(gpu_memory_utilization=1.5), "gpu_memory_utilization (--gpu-memory-utilization)"),
             (lambda: Memory(kv_of_free="yes"), "kv_of_free"),
             (lambda: Timing(overhead=-1.0), "overhead (--iteration-overhead)"),
             (lambda: Timing(exact=1), "exact"),
             (lambda: Kernels(flash="no"), "flash"),
             (lambda: Kernels(kv_reads="sometimes"), "kv_reads"),
             (lambda: Kernels(fusions="qkv,nope"), "fusion 'nope'"),
             (lambda: Precision(wbits=7), "wbits"),
             (lambda: Precision(abits="fp8", rbits=8), "rbits"),
             (lambda: ServeConfig(batching={"max_batch": 4}), "batching"),  # type: ignore[arg-type]
             (lambda: Traffic(requests=0), "requests"),
             (lambda: Traffic(concurrency=0), "concurrency"),
             (lambda: Traffic(seed=-1), "seed")]
    for make, needle in cases:
        with pytest.raises(RooflineError) as e:
            make()
        msg = str(e.value)
        assert needle in msg and "\n" not in msg, msg
    # a string of fusions is split and ordered as make_spec orders them
    assert Kernels(fusions="gate-up,qkv").fusions == ("qkv", "gate-up")
    with pytest.raises(RooflineError, match="serve: config must be"):
        roofline.serve("llama-2-7b", H100, traffic=Traffic(rate=1.0), config={"exact": True})  # type: ignore[arg-type]


def test_registry_names_lookup_and_a_new_policy_in_one_class():
    assert names() == ("chunked", "prefill-first", "sarathi", "trtllm", "vllm", "vllm-v0", "whole-prompts")
    assert get("chunked").name == "chunked" and get("prefill-first")().token_budget is None
    assert get("chunked")().token_budget == 2048 and get("whole-prompts")().token_budget == 2048  # CHUNK_TOKENS
    for bad in ("orca", 7, "x" * 10_000):
        with pytest.raises(RooflineError) as e:
            get(bad)  # type: ignore[arg-type]
        assert "known: chunked, prefill-first, sarathi" in str(e.value) and len(str(e.value)) < 200
    with pytest.raises(ValueError, match="registered twice"):
        register("chunked")(type("Again", (Scheduler,), {}))

    @register("decode-first-test")
    class DecodeFirst(Scheduler):
        """Decodes while any sequence runs; admits one whole prompt only when none does."""

        def describe(self) -> str:
            return "decode-first"

        def plan(self, s: State) -> Plan:
            dec = self._decodes(s)
            return Plan(dec) if len(dec) else Plan(dec, tuple(self._admit(s, None)[:1]))

        def admitted_tokens(self, left: int, used: int, budget: int | None, first: bool) -> int:
            return left if first else 0

    try:
        # one request at a time, each alone: the same single-request figures as prefill-first
        one = serve("llama-2-7b", H100, isl=64, osl=3, requests=2, concurrency=1, scheduler="decode-first-test")
        ref = serve("llama-2-7b", H100, isl=64, osl=3, requests=2, concurrency=1)
        assert one.scheduler == "decode-first" and one.figures.ttft == ref.figures.ttft
        assert one.figures.e2e == ref.figures.e2e
    finally:
        del REGISTRY["decode-first-test"]


def test_prefill_first_by_hand():
    # budget 10: prompts of 4 and 5 join (9 <= 10), the 3-token one would make 12 and waits; nothing decodes
    s = _state([16, 4, 5, 3], running=(0,), gen=1)
    plan = get("prefill-first")(token_budget=10).plan(s)
    assert plan.chunks == ((1, 4), (2, 5)) and len(plan.decode) == 0 and list(s.waiting) == [3]
    # a prompt over the whole budget is the iteration's first: it runs whole, alone
    s = _state([12, 3])
    assert get("prefill-first")(token_budget=10).plan(s).chunks == ((0, 12),) and list(s.waiting) == [1]
    # no prompt waits: every running sequence decodes; 17 + 1 tokens need a second block of 16, 5 + 1 do not
    s = _state([17, 5], running=(0, 1), gen=1)
    s.blocks[0], s.free_blocks = 1, s.free_blocks + 1
    plan = get("prefill-first")().plan(s)
    assert sorted(plan.decode.tolist()) == [0, 1] and s.blocks[0] == 2 and s.blocks[1] == 1


def test_preemption_by_hand():
    # two prompts of 16 tokens holding 1 block each, 1 block free: both decode (17 tokens held after it), each
    # needs a second block (2 > 1 free): the most recently admitted (1) is preempted, its block freed, 0 decodes
    s = _state([16, 16], running=(0, 1), gen=1)
    s.blocks[:], s.free_blocks = 1, 1
    plan = get("chunked")().plan(s)
    assert plan.decode.tolist() == [0] and s.preemptions == 1 and list(s.waiting) == [1]
    assert s.target[1] == 16 + 1 and s.done[1] == 0  # recomputation: its prompt and its 1 generated token
    # chunked: the 17 tokens to recompute go in the budget's rest, but need 2 blocks, none free: it waits
    assert plan.chunks == ()


def test_whole_prompts_and_chunked_agree_when_every_prompt_fits():
    # prompts of 64 tokens under a budget of 2048: chunked never splits one, so the two policies run the same
    # iterations (two routes to one simulation)
    kw = dict(isl=64, osl=8, requests=12, concurrency=4, exact=True)
    chunked = serve("llama-2-7b", H100, scheduler="chunked", **kw).figures
    whole = serve("llama-2-7b", H100, scheduler="whole-prompts", **kw).figures
    assert chunked.ttft == whole.ttft and chunked.tpot == whole.tpot and chunked.iterations == whole.iterations


def test_engine_config_and_cli_flags():
    from roofline.serving.engines import engine_config

    cfg = engine_config("trtllm-mlperf-v4")
    assert cfg.batching == Batching("whole-prompts", max_tokens=4096) and cfg.memory.kv_of_free
    assert cfg.batching.policy().describe() == ("continuous batching (inflight batching of whole prompts, 4096 "
                                                "tokens per iteration)")
    assert replace(cfg, timing=Timing(bound=True)).batching is cfg.batching


def test_cli_scheduler_flag_and_config_errors_are_one_line(tmp_path, capsys):
    from roofline.cli import main

    out = tmp_path / "s.json"
    assert main(["serve", "llama-2-7b", "--device", "h100", "--scheduler", "whole-prompts", "--max-tokens", "512",
                 "--concurrency", "2", "--requests", "2", "--isl", "64", "--osl", "4", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["scheduler"] == ("continuous batching (inflight batching of whole prompts, "
                                                       "512 tokens per iteration)")
    capsys.readouterr()
    for argv, needle in ((["--scheduler", "orca"], "--scheduler 'orca': must be one of 'chunked', 'prefill-first'"),
                         (["--max-batch", "0"], "--max-batch '0': must be a whole number >= 1"),
                         (["--block-size", "0"], "--block-size '0': must be a whole number >= 1"),
                         (["--gpu-memory-utilization", "2"], "--gpu-memory-utilization '2.0': must be in (0, 1]")):
        code = main(["serve", "llama-2-7b", "--device", "h100", "--rate", "1", *argv])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and needle in err[0], err
