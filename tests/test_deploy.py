"""plan --serve, the deployment search (issue 52 items 1, 2, 4, 5): speculative decoding, KV transfer, prefix
caching, the mean-static prices (aggregated as AIConfigurator's run_agg, disaggregated as min of the pools), the
enumeration, the JSON (/2 written, /1 read as step prices), the limit, and every flag honoured or refused."""

from __future__ import annotations

import json
import math
import re

import pytest

from roofline.catalog import resolve_system
from roofline.cli import main
from roofline.core.errors import RooflineError
from roofline.llm.config import load_arch
from roofline.planner.deploy import (
    AIC_TTFT_CAP,
    Deployment,
    Options,
    Pool,
    Pricer,
    Speculation,
    stage_arch,
    tokens_per_step,
)
from roofline.planner.deploy_search import (
    SCHEMA,
    enumerate_deployments,
    pareto,
    read_plan_serve,
    search,
    worker_layouts,
)
from roofline.planner.deploy_sim import requests_for
from roofline.serving.figures import Slo

SLO = Slo(1.0, 0.05)
H100 = resolve_system("dgx-h100")
L8 = load_arch("llama-3-8b")


@pytest.fixture(scope="module")
def found():
    """One search of Llama-3-8B on 8 H100 (ISL 4000 / OSL 500, TTFT 1 s, TPOT 50 ms), short list 2."""
    return search(L8, H100, Options(4000, 500, SLO), short_list=2)


def test_speculative_acceptance_is_a_geometric_sum():
    # K = 3 drafts accepted with a = 0.8 each: 1 + 0.8 + 0.64 + 0.512 = 2.952 = (1 - 0.8^4) / (1 - 0.8)
    assert tokens_per_step(3, 0.8) == pytest.approx(2.952)
    assert tokens_per_step(3, 0.0) == 1.0 and tokens_per_step(3, 1.0) == 4.0
    s = Speculation.parse("mtp:3", 0.8, None)
    assert s.mtp and s.k == 3 and s.tokens == pytest.approx(2.952)
    d = Speculation.parse("draft:llama-3.2-1b:4", None, 2.5)
    assert not d.mtp and d.draft == "llama-3.2-1b" and d.tokens == 2.5  # --accept-len given directly


@pytest.mark.parametrize("text, accept, accept_len, message", [
    ("mtp:0", 0.5, None, "N and K from 1 to 16"), ("draft::3", 0.5, None, "give mtp:N"),
    ("eagle:3", 0.5, None, "give mtp:N"), ("mtp:2", None, None, "needs one of --accept"),
    ("mtp:2", 0.5, 2.0, "needs one of --accept"), ("mtp:2", 1.5, None, "probability from 0 to 1"),
    ("mtp:2", None, 3.5, "from 1 to K + 1 = 3")])
def test_bad_speculation_is_one_line(text, accept, accept_len, message):
    with pytest.raises(RooflineError, match=re.escape(message)):
        Speculation.parse(text, accept, accept_len)


def test_speculative_step_is_the_verify_step_over_its_tokens():
    # MTP: a verify step of K + 1 = 3 tokens per sequence over the context, with the 2 MTP modules in its op
    # table, makes (1 - 0.7^3) / (1 - 0.7) = 2.19 tokens: the time per token is the step over 2.19
    p = Pricer(L8, H100, Options(4000, 500, SLO, spec=Speculation.parse("mtp:2", 0.7, None)))
    pool = Pool("replica", 1, 8, batch=16)
    verify = p.time(pool, 0, 0.0, [(3, 4100)] * 16)
    assert p.step(pool, 16, 4100) == pytest.approx(verify / 2.19)
    assert p.must(pool).steps.spec.mtp == 2 and p.must(pool).draft is None


def test_kv_transfer_is_alpha_plus_the_prompts_bytes_over_the_links():
    # Llama-3-8B, bf16: K and V x 32 layers x 8 KV heads x 128 x 2 bytes = 131,072 bytes per token; a prompt of
    # 4,000 tokens is 524,288,000 bytes, leaving a tp 2 prefill worker over 2 NVLink ports of 450 GB/s, after
    # NCCL's 0.6 us: 0.6e-6 + 524.288e6 / 900e9 = 583.1 us
    p = Pricer(L8, H100, Options(4000, 500, SLO))
    assert p.transfer_time(Pool("prefill", 2, 1), 8) == pytest.approx(0.6e-6 + 524_288_000 / 900e9)
    # layer-wise overlap: only the last of the 32 layers' share is exposed
    q = Pricer(L8, H100, Options(4000, 500, SLO, kv_overlap=True))
    assert q.transfer_time(Pool("prefill", 2, 1), 8) == pytest.approx(0.6e-6 + 524_288_000 / 32 / 900e9)
    # half the prompt cached: its KV is already on the decode side, half the bytes move
    h = Pricer(L8, H100, Options(4000, 500, SLO, prefix_hit=0.5))
    assert h.transfer_time(Pool("prefill", 2, 1), 8) == pytest.approx(0.6e-6 + 262_144_000 / 900e9)


def test_a_prefix_hit_is_skipped_in_prefill_and_its_blocks_counted_once():
    p = Pricer(L8, H100, Options(4000, 500, SLO, prefix_hit=0.5))
    pool = Pool("replica", 1, 8)
    # 2,000 of the 4,000 prompt tokens cached: the prefill is a chunk of 2,000 after them
    assert p.prefill(pool, 1) == pytest.approx(p.must(pool).steps.iteration_time(0, 0.0, [(2000, 2000)]))
    assert p.prefill(pool, 1) < Pricer(L8, H100, Options(4000, 500, SLO)).prefill(pool, 1)
    # b sequences hold b x (2,000 + 500) tokens of their own and the 2,000 shared once
    kv = p.must(pool).kv_tokens
    most = (kv - 2000) // 2500
    assert p.fits(pool, most) and not p.fits(pool, most + 1)


def test_disaggregated_throughput_is_the_slower_pool():
    # x prefill workers deliver x / prefill requests/s, y decode workers of batch b deliver y b / (OSL x TPOT):
    # the deployment makes the smaller of the two, times OSL tokens, over its devices
    p = Pricer(L8, H100, Options(4000, 500, SLO))
    pre, dec = Pool("prefill", 1, 3, batch=1), Pool("decode", 1, 5, batch=64)
    s = p.static(Deployment((pre, dec)))
    assert s is not None
    prefill, tpot = p.prefill(pre, 1), p.tpot(dec, 64)
    assert s.tokens_per_s_per_device == pytest.approx(min(3 / prefill, 5 * 64 / (500 * tpot)) * 500 / 8)
    assert s.ttft == pytest.approx(prefill + p.transfer_time(pre, 8)) and s.tpot == pytest.approx(tpot)


def test_aggregated_mean_static_is_aiconfigurators_mixed_steps():
    # b = 64 prompts of 4,000 tokens at 2,048 tokens per step: s = ceil(256,000 / 2,048) = 125 mixed steps, each
    # beside g = 64 - ceil(2,048 / 4,000) = 63 decodes; TTFT = ceil(4,000 / 2,048) = 2 mixed steps x the
    # correction min(2 + (125 - 3) / 20, 4) = 4; 375 decode-only steps; TPOT over 122 + 375 steps
    p = Pricer(L8, H100, Options(4000, 500, SLO))
    pool = Pool("replica", 1, 8, batch=64, chunk=2048)
    s = p.static(Deployment((pool,)))
    assert s is not None
    mixed, decode = p._mixed(pool, 2048, 63, 4250), p.step(pool, 64, 4250)
    assert s.ttft == pytest.approx(mixed * 2 * AIC_TTFT_CAP)
    assert s.tpot == pytest.approx((mixed * 122 + decode * 375) / 497)
    assert s.tokens_per_s_per_device == pytest.approx(8 * 64 * 499 / (125 * mixed + 375 * decode) / 8)


def test_a_pipeline_stage_holds_its_share_of_layers_and_more_kv():
    # pp 2: each device holds 16 of the 32 layers, half the weights and half of each token's KV, so the tokens
    # the worker holds are 2 (M - W/2 - a) / k > 2 (M - W - a) / k: more than twice pp 1's
    assert stage_arch(L8, 2).layers == 16
    p = Pricer(L8, H100, Options(4000, 500, SLO))
    one, two = p.must(Pool("replica", 1, 8)), p.must(Pool("replica", 1, 4, pp=2))
    assert two.kv_tokens > 2 * one.kv_tokens
    assert two.steps is one.steps  # the whole model's iteration, shared: a micro-batch's latency


def test_an_aggregated_replica_fixed_at_tp_8_has_47_deployments():
    # one replica of tp 8 on 8 devices, ISL 4,000; AIConfigurator keeps a decode beside each chunk of c tokens
    # (b - ceil(c / 4,000) >= 1): b = 1 -> 1 (its one chunk), b = 2 -> c <= 4,000: 2, b = 4 -> c <= 12,000: 4,
    # b = 8 ... 1,024 (8 sizes) -> all 5: 1 + 2 + 4 + 40 = 47
    found = enumerate_deployments(L8, H100, Options(4000, 500, SLO), fixed={"tp": 8, "pp": 1})
    assert len(found) == 47 and all(d.devices == 8 and not d.disaggregated for d in found)


def test_every_deployment_fills_the_devices_and_disagg_only_is_only_disaggregated():
    found = enumerate_deployments(L8, H100, Options(4000, 500, SLO), disagg="only")
    assert found and all(d.disaggregated and d.devices == 8 for d in found)
    assert (1, 1, 1, False) in worker_layouts(L8, H100) and all(lay[2] == 1 for lay in worker_layouts(L8, H100))


def test_the_pareto_front_keeps_only_the_unbeaten():
    from roofline.planner.deploy import Static
    from roofline.planner.deploy_search import Row

    d = Deployment((Pool("replica", 1, 8),))
    rows = [Row(d, Static(1, 0.1, 1 / u, dev)) for dev, u in ((100, 10), (80, 20), (90, 15), (70, 15), (50, 30))]
    # (70, 15) is beaten by (90, 15); the rest trade one for the other
    assert [(r.figures("mean-static")[0]) for r in pareto(rows)] == [100, 90, 80, 50]


def test_a_run_spans_its_steady_lifetimes():
    # 4 lifetimes of 15 s at 4 requests/s: 240 requests; at least 200, at most 4,000
    assert requests_for(4.0, 15.0) == 240 and requests_for(0.1, 1.0) == 200 and requests_for(1e4, 100) == 4000


def test_the_search_ranks_simulated_capacities_and_reports_both_statistics(found):
    best = found.best
    assert best is not None and best.simulated and found.tried > 1000
    dev, user, ttft, tpot = best.figures("p99")
    assert ttft is not None and ttft <= 1.0 and tpot is not None and tpot <= 0.05  # within the SLO, p99s
    p = best.poisson
    assert p is not None and p.rate is not None
    assert dev == pytest.approx(p.rate * 500 / best.deployment.devices)  # the goodput: that rate's tokens per GPU
    assert found.best_by("mean-static") is not None


def test_fp8_changes_the_answer(found):
    # fp8 weights, activations and KV halve a memory-bound decode step's bytes and double the KV cache's tokens
    fp8 = search(L8, H100, Options(4000, 500, SLO, precision="fp8"), short_list=1, slo_stat="mean-static")
    bf16 = found.best_by("mean-static")
    assert bf16 is not None and fp8.best is not None
    assert fp8.best.figures("mean-static")[0] > 1.2 * bf16.figures("mean-static")[0]


def test_json_round_trips_and_an_old_file_loads_as_step_prices(found):
    doc = json.loads(json.dumps(found.to_dict(top=None)))
    assert doc["schema"] == SCHEMA == "roofline.plan-serve/2"
    row = doc["layouts"][0]
    for key in ("tokens_per_s_per_device", "tokens_per_s_per_user", "ttft_p99_s", "tpot_p99_s", "deployment"):
        assert key in row
    saved = read_plan_serve(doc)
    assert saved.kind == "capacity at the SLO"
    assert saved.deployments() == [r.deployment for r in found.ranked]
    # the step-price file plan --serve wrote before (no schema, mode serving), and one tagged /1
    for old in ({"mode": "serving", "layouts": [{"tokens_per_s": 4488}]}, {"schema": "roofline.plan-serve/1"}):
        s = read_plan_serve(old)
        assert s.schema == "roofline.plan-serve/1" and s.kind == "decode-step price, not a capacity"
        assert s.deployments() == []
    with pytest.raises(RooflineError, match="schema: expected 'roofline.plan-serve/2'"):
        read_plan_serve({"schema": "roofline.plan/9"})


def test_plan_serve_answers_with_a_capacity_and_writes_both(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    out, chart = tmp_path / "p.json", tmp_path / "front.png"
    assert main(["plan", "llama-3-8b", "--system", "dgx-h100", "--serve", "--short-list", "1", "--json", str(out),
                 "-o", str(chart), "--disagg", "off", "--batch", "64"]) == 0
    text = capsys.readouterr().out
    first = text.splitlines()[0]
    assert first.startswith("best deployment: agg ") and "output tokens/s per GPU" in first
    assert "per output token" not in text and "decode step" not in text  # no step price shown as a capacity
    assert "by the mean-static statistic:" in text
    doc = json.loads(out.read_text())
    assert doc["schema"] == SCHEMA and all(r["deployment"]["kind"] == "aggregated" for r in doc["layouts"])
    assert all(r["deployment"]["pools"][0]["max_batch"] == 64 for r in doc["layouts"])  # --batch honoured
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_deployment_limit_is_refused_in_one_line(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_MAX_DEPLOYMENTS", "10")
    out = tmp_path / "p.json"
    assert main(["plan", "llama-3-8b", "--system", "dgx-h100", "--serve", "--json", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ROOFLINE_MAX_DEPLOYMENTS" in err[0] and "more than 10 deployments" in err[0]
    assert not out.exists()


@pytest.mark.parametrize("extra, message", [
    (["--serve", "--slo-stat", "p50"], "--slo-stat"),
    (["--serve", "--spec", "mtp:0", "--accept", "0.5"], "N and K from 1 to 16"),
    (["--serve", "--accept", "0.5"], "--accept and --accept-len need --spec"),
    (["--serve", "--prefix-hit", "1.5"], "--prefix-hit must be a share"),
    (["--serve", "--prefix-hit", "nan"], "--prefix-hit must be a share"),
    (["--serve", "--scheduler", "fifo"], "unknown scheduler 'fifo'"),
    (["--serve", "--short-list", "0"], "--short-list must be >= 1"),
    (["--serve", "--slo", "ttft=1"], "has no unit"),
    (["--serve", "--disagg", "maybe"], "--disagg"),
    (["--serve", "--overlap", "0.5"], "--overlap is refused"),
    (["--serve", "--layout", "tp=8,zero=1"], "zero are training's"),
    (["--serve", "--precision", "nvfp4"], "--precision 'nvfp4' is not one of"),
    (["--serve", "--isl", "200000"], "context"),
    (["--train", "--isl", "1000"], "--isl: --serve's options"),
    (["--train", "--slo-stat", "mean-static"], "--slo-stat: --serve's options"),
])
def test_bad_serve_flags_exit_2_with_one_line(capsys, tmp_path, extra, message):
    out = tmp_path / "p.json"
    try:  # argparse's own refusals (a choice not offered) leave by SystemExit(2), the rest return 2
        code = main(["plan", "llama-3-8b", "--system", "dgx-h100", *extra, "--json", str(out)])
    except SystemExit as e:
        code = e.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not out.exists()


def test_options_refuse_a_search_without_both_limits():
    with pytest.raises(RooflineError, match="needs both limits"):
        Options(4000, 500, Slo(1.0, None))
    assert math.isclose(Options(4000, 500, SLO, prefix_hit=0.25).cached, 1000)
