"""roofline serve: the serving simulator against the LLM model, queueing laws, the KV cache by hand, bad input."""

import json

import numpy as np
import pytest
from serving_calls import serve

import roofline
from roofline.cli import main
from roofline.core.errors import RooflineError
from roofline.engine.analysis import analyze
from roofline.llm.model import build_workload
from roofline.llm.spec import make_spec
from roofline.serving.engine import simulate
from roofline.serving.run import kv_blocks
from roofline.serving.schedulers import get
from roofline.serving.steps import StepModel, geometric_grid

H100 = roofline.device("h100")


def llm_forecast(model, phase, tp=1, **kw):
    """What `roofline llm MODEL --phase P --flash --forecast` reports as forecast.total_time."""
    spec = make_spec(model, phase=phase, tp=tp, flash=True, **kw)
    return analyze(build_workload(spec), H100, forecast=True).forecast.total_time


@pytest.mark.parametrize("model,tp", [("llama-2-7b", 1), ("llama-3-70b", 8)])
def test_one_request_is_llm_prefill_and_decode(model, tp):
    n = 1000
    prefill = llm_forecast(model, "prefill", tp, prompt=n)
    # the one decode step after the prefill reads the prompt's KV and writes the new token's: context n + 1
    decode = llm_forecast(model, "decode", tp, context=n + 1)
    for exact in (True, False):
        r = serve(model, H100, tp=tp, isl=n, osl=2, requests=1, concurrency=1, exact=exact)
        assert r.figures.ttft.p50 == pytest.approx(prefill, rel=1e-12)  # prefill-only: exact either way
        # exact: the whole table; default: the attention interpolated in the table (within 2%, far less here)
        assert r.figures.tpot.p50 == pytest.approx(decode, rel=1e-12 if exact else 5e-3)
    # four decode steps: the TPOT is the mean of the llm decode steps at contexts n+1 .. n+4
    r = serve(model, H100, tp=tp, isl=n, osl=5, requests=1, concurrency=1, exact=True)
    steps = [llm_forecast(model, "decode", tp, context=n + j) for j in range(1, 5)]
    assert r.figures.tpot.p50 == pytest.approx(sum(steps) / 4, rel=1e-12)
    assert r.figures.e2e.p50 == pytest.approx(prefill + sum(steps), rel=1e-12)


def test_little_law_on_a_closed_loop():
    # L = lambda x W: C clients always in the system, so requests/s x mean latency = C (edges: the last C
    # requests drain with fewer in flight, a share of about C / requests of the run)
    c, n = 16, 800
    r = serve("llama-2-7b", H100, isl=256, osl=64, requests=n, concurrency=c)
    f = r.figures
    assert f.requests_per_s * f.e2e.mean == pytest.approx(c, rel=0.05)
    assert f.max_running == c  # fixed lengths that fit: a static batch of C, as vendors measure


def _cache_run(concurrency, blocks=128, policy="whole-prompts"):
    spec = make_spec("llama-2-7b", phase="prefill", flash=True)
    steps = StepModel(spec, H100)
    n = 4 * concurrency
    isl, osl = np.full(n, 16), np.full(n, 240)
    return simulate(steps, get(policy)(), np.zeros(n), isl, osl, blocks=blocks, block_size=16, concurrency=concurrency)


def test_kv_cache_fills_at_the_predicted_concurrency():
    # a policy admitting by the prompt's blocks (whole-prompts: 1 block each, no watermark): each request ends
    # holding ceil((16 + 240 - 1) / 16) = 16 blocks; 128 blocks hold 128 / 16 = 8 of them
    below, at, past = _cache_run(7), _cache_run(8), _cache_run(9)
    assert np.isnan(below.first_full) and below.preemptions == 0
    assert not np.isnan(at.first_full) and at.preemptions == 0  # full, exactly, and no one evicted
    assert past.preemptions > 0  # 9 admitted at 1 block each outgrow 128 blocks: recomputation
    assert np.all(np.isfinite(past.last))  # every request still completes


def test_kv_blocks_by_hand():
    spec = make_spec("llama-2-7b", phase="prefill", flash=True)
    blocks, mem = kv_blocks(spec, H100, block_size=16, utilization=0.9, act_tokens=2048)
    per_token = 32 * 32 * (128 + 128) * 2  # layers x kv heads x (K + V head dims) x 2 bytes = 512 KiB
    assert mem["kv_bytes_per_token"] == per_token
    # vLLM's --gpu-memory-utilization is of the total the GPU reports: an H100 SXM's nvidia-smi 81,559 MiB
    assert blocks == int((0.9 * 81559 * 2**20 - mem["weights"] - mem["activations"]) // (16 * per_token))


def test_chunked_prefill_lowers_p99_tpot():
    kw = dict(isl="2048:4096:uniform", osl=128, requests=300, rate=2.0, seed=3)
    first = serve("llama-2-7b", H100, **kw)
    chunked = serve("llama-2-7b", H100, scheduler="chunked", **kw)
    # prefill-first stalls every decode for a whole prompt; chunks of 2048 tokens share iterations with decodes
    assert chunked.figures.tpot.p99 < first.figures.tpot.p99


def test_seeds_reproduce():
    kw = dict(isl="128:1024:uniform", osl="16:128:uniform", requests=200, rate=20.0)
    a, b = (serve("llama-2-7b", H100, seed=7, **kw).figures for _ in range(2))
    c = serve("llama-2-7b", H100, seed=8, **kw).figures
    assert a.ttft.p99 == b.ttft.p99 and a.tpot.p99 == b.tpot.p99
    assert a.output_tokens_per_s != c.output_tokens_per_s


@pytest.mark.parametrize("model,tp", [("llama-2-7b", 1), ("llama-3-70b", 8)])
def test_bucket_interpolation_within_two_percent(model, tp):
    spec = make_spec(model, phase="prefill", tp=tp, flash=True)
    table, exact = StepModel(spec, H100), StepModel(spec, H100, exact=True)
    table.build_attention_table(2048, 1024, 8192)
    worst = {False: 0.0, True: 0.0}
    # off the grid's nodes: odd sizes between them, prefill chunks fresh and after a cached prefix
    for b in (1, 3, 37, 301, 1000):
        for ctx in (17, 555, 3001, 7777):
            for chunks in ([], [(77, 0)], [(1500, 0)], [(333, 2000)]):
                if b + sum(c for c, _ in chunks) > 2048 + 1024:
                    continue
                t, e = table.iteration_time(b, b * ctx, chunks), exact.iteration_time(b, b * ctx, chunks)
                cached = any(o for _, o in chunks)
                worst[cached] = max(worst[cached], abs(t / e - 1))
    assert worst[False] < 0.02
    # A chunk after a cached prefix enters the table as the fresh chunk with its query-key pairs (FLOPs and
    # KV bytes exact), so its mean query block (tokens / sequences) is not the exact one: where the fused
    # attention's tile/wave quantization (roofline.engine.gemm_shape) and its cited streaming curve (by bytes) bind,
    # with few decodes beside the chunk, that cost up to 6.7% (333 new tokens after 2,000 cached, 1-3
    # decodes, tp 8) while the H100's cited attention curve was flat.  Since it runs by keys (FA3 Figure 5(d),
    # cuDNN, causal: 0.32 of peak at 512 keys to 0.54 at 16k), the substituted chunk's keys (its mean per
    # sequence) move its efficiency too: up to 10.4% (3 decodes of 17 keys beside 333 new after 2,000 cached,
    # llama-3-70b tp 8; 7.3% at tp 1), the table faster than the exact rows.  A stated miss of the 2% (issue 30
    # stays open on it).
    assert worst[True] < 0.11


def test_prefill_only_iterations_are_the_whole_table():
    spec = make_spec("llama-3-70b", phase="prefill", tp=8, flash=True)
    split, whole = StepModel(spec, H100), StepModel(spec, H100, exact=True)
    for chunks in ([(1000, 0)], [(333, 0), (2047, 0), (5, 0)], [(600, 900)]):
        assert split.iteration_time(0, 0, chunks) == pytest.approx(whole.iteration_time(0, 0, chunks), rel=1e-12)


def test_geometric_grid():
    g = geometric_grid(100, 1.25)
    assert g[0] == 1 and g[-1] == 100 and list(g[:5]) == [1, 2, 3, 4, 5]  # steps of 1 until 25% exceeds 1
    assert np.all(np.diff(g) > 0) and np.all(g[1:] / g[:-1] <= 1.25 + 1 / g[:-1])


def test_replicas_of_a_system_share_the_requests():
    one = serve("llama-2-7b", H100, tp=1, isl=512, osl=64, requests=64, concurrency=8)
    sys8 = serve("llama-2-7b", system="dgx-h100", tp=1, isl=512, osl=64, requests=512, concurrency=64)
    assert sys8.replicas == 8
    # 8 identical replicas, 8 clients each: 8x the throughput at the same per-request latency
    assert sys8.figures.output_tokens_per_s == pytest.approx(8 * one.figures.output_tokens_per_s, rel=1e-9)
    assert sys8.figures.per_device_output_tokens_per_s == pytest.approx(
        one.figures.output_tokens_per_s, rel=1e-9)


def test_cli_json_keys(tmp_path, capsys):
    out = tmp_path / "s.json"
    code = main(["serve", "llama-2-7b", "--device", "h100", "--rate", "4", "--requests", "50", "--isl", "256",
                 "--osl", "32", "--slo", "ttft=2s,tpot=200ms", "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and text.startswith("serves ")
    doc = json.loads(out.read_text())
    for key in ("output_tokens_per_s", "ttft_p50_s", "ttft_p99_s", "tpot_p99_s", "e2e_p99_s", "per_device",
                "goodput_tokens_per_s", "preemptions", "kv_cache_use"):
        assert key in doc
    assert doc["output_tokens_per_s"] == pytest.approx(50 * 32 / doc["makespan_s"])


def _error(capsys, *argv):
    code = main(["serve", *argv])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("roofline: error: ") and "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("body,needle", [
    ("arrival,input,output\n0,100,10\n1,-5,10\n", "input '-5'"),
    ("arrival,input,output\n0,100.5,10\n", "input '100.5'"),
    ("arrival,input,output\n2,100,10\n1,100,10\n", "before the previous"),
    ('{"arrival": 0, "input": 10, "output": 0}\n', "output 0"),
])
def test_bad_traces(tmp_path, capsys, body, needle):
    path = tmp_path / ("t.jsonl" if body.startswith("{") else "t.csv")
    path.write_text(body)
    line = _error(capsys, "llama-2-7b", "--device", "h100", "--trace", str(path))
    assert needle in line and "line " in line


def test_bad_options(capsys, monkeypatch, tmp_path):
    assert "--rate" in _error(capsys, "llama-2-7b", "--device", "h100", "--rate", "0")
    assert "no unit" in _error(capsys, "llama-2-7b", "--device", "h100", "--rate", "1", "--slo", "ttft=2,tpot=200ms")
    line = _error(capsys, "llama-3-70b", "--device", "h100", "--rate", "1")  # 141 GB of weights on one 80 GB
    assert "does not fit" in line and "weights 141" in line
    line = _error(capsys, "llama-2-7b", "--device", "h100", "--rate", "1", "--requests", "1000001")
    assert "exceeds the limit of 20,000" in line and "ROOFLINE_MAX_REQUESTS" in line  # core.limits (issue 53)
    monkeypatch.setenv("ROOFLINE_MAX_REQUESTS", "10")
    assert "ROOFLINE_MAX_REQUESTS" in _error(capsys, "llama-2-7b", "--device", "h100", "--rate", "1",
                                             "--requests", "11")
    assert not list(tmp_path.iterdir())


def test_api_errors():
    with pytest.raises(RooflineError, match="give --rate R"):
        serve("llama-2-7b", H100)  # neither --rate nor --concurrency
    with pytest.raises(RooflineError, match="LO:HI:uniform"):
        serve("llama-2-7b", H100, isl="9:3:uniform", rate=1.0)


def test_sweep_rate_finds_the_edge_of_the_slo(tmp_path, capsys):
    from roofline.serving.figures import Slo
    from roofline.serving.requests import Traffic
    from roofline.serving.sweep import sweep_rate

    slo = Slo(ttft=1.0, tpot=0.012)
    (curve,) = sweep_rate("llama-2-7b", H100, tps=(1,), traffic=Traffic(isl=512, osl=64, requests=120), slo=slo,
                          start=4.0)
    rates = [rate for rate, _ in curve.points]
    met = [rate for rate, r in curve.points if r.figures.meets_slo]
    assert curve.best_rate == max(met)
    # a rate meets only while its run keeps up with the rate offered (issue 48 item 4)
    assert all(r.figures.load is not None and r.figures.load.keeps_up for _, r in curve.points if r.figures.meets_slo)
    # the best rate meets the SLO and the next rate simulated above it misses it
    above = [rate for rate in rates if rate > curve.best_rate]
    assert above and not dict(curve.points)[min(above)].figures.meets_slo
    html, chart, js = tmp_path / "s.html", tmp_path / "s.svg", tmp_path / "s.json"
    code = main(["serve", "llama-2-7b", "--device", "h100", "--isl", "512", "--osl", "64", "--requests", "60",
                 "--sweep-rate", "--rate", "8", "--slo", "ttft=1s,tpot=12ms", "--html", str(html), "-o", str(chart),
                 "--json", str(js)])
    out = capsys.readouterr().out
    assert code == 0 and "highest rate meeting" in out
    assert html.read_text().startswith("<!doctype html>") and chart.read_text().lstrip().startswith("<?xml")
    assert json.loads(js.read_text())["curves"][0]["tp"] == 1


def test_trace_file_drives_the_arrivals(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"arrival": 0.5, "input": 1000, "output": 1}\n{"arrival": 100, "input": 1000, "output": 3}\n')
    r = serve("llama-2-7b", H100, trace=str(path))
    f = r.figures
    # two requests far apart: each TTFT is the lone prefill of 1000 tokens; the last token at 100 s + e2e
    assert f.ttft.p50 == pytest.approx(llm_forecast("llama-2-7b", "prefill", prompt=1000), rel=1e-12)
    prefill = llm_forecast("llama-2-7b", "prefill", prompt=1000)
    second = prefill + sum(llm_forecast("llama-2-7b", "decode", context=1000 + j) for j in (1, 2))  # 3 tokens
    assert f.makespan_s == pytest.approx(100 + second - 0.5, rel=1e-6)  # from the first arrival
    assert f.requests == 2 and f.output_tokens_per_s == pytest.approx(4 / f.makespan_s)
