"""KV reads per query head (TensorRT-LLM v0.5's masked MHA) against shared KV reads, and the Table 2 setup of
benchmarks/bench_serve.py (TensorRT-LLM v0.5.0's H200 table: FP8, static batches)."""

import importlib.util
from pathlib import Path

import pytest
from serving_calls import serve

import roofline
from roofline.core.errors import RooflineError
from roofline.llm.model import build_workload
from roofline.llm.spec import LLMSpec, make_spec, parse_precision, read_spec

H200 = roofline.device("h200")
BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_serve.py"


def sdpa_bytes(model, kv_reads, **kw):
    spec = make_spec(model, phase="decode", batch=1, context=1024, flash=True, kvbits="fp8", kv_reads=kv_reads, **kw)
    w = build_workload(spec)
    i = list(w.column("name")).index("decode.layers.attn.sdpa")
    return float(w.columns["bytes_read"][i]), w


def test_per_query_head_reads_each_kv_head_once_per_query_head():
    # llama-2-70b on one of 4 devices: 64 / 4 = 16 query heads over 8 / 4 = 2 KV heads, head dim 128, fp8 cache.
    # One sequence of 1,024 keys: shared reads K and V once per KV head, 1024 x 2 x (128 + 128) x 1 B = 524,288 B;
    # per query head 1024 x 16 x 256 x 1 B = 4,194,304 B; the query (16 x 128 bf16 = 4,096 B) is read either way.
    shared, _ = sdpa_bytes("llama-2-70b", "shared", tp=4)
    per_head, w = sdpa_bytes("llama-2-70b", "per-query-head", tp=4)
    assert shared == 524_288 + 4_096
    assert per_head == 4_194_304 + 4_096
    assert "once per query head" in w.bytes_model


def test_multi_head_attention_is_unchanged():
    # llama-2-13b: 40 query heads over 40 KV heads, one query head per KV head: the same bytes either way
    assert sdpa_bytes("llama-2-13b", "shared")[0] == sdpa_bytes("llama-2-13b", "per-query-head")[0]


def test_serve_one_request_decode_follows_the_variant():
    # one request of 1000 prompt tokens and 2 output tokens: its TPOT is the llm decode step at context 1001,
    # under the same variant (the serving table batches prefill and decode in one table)
    from roofline.engine.analysis import analyze

    for reads in ("shared", "per-query-head"):
        spec = make_spec("llama-2-70b", phase="decode", tp=4, context=1001, flash=True, kv_reads=reads)
        decode = analyze(build_workload(spec), H200, forecast=True).forecast.total_time
        r = serve("llama-2-70b", H200, tp=4, isl=1000, osl=2, requests=1, concurrency=1, exact=True,
                           kv_reads=reads)
        assert r.figures.tpot.p50 == pytest.approx(decode, rel=1e-12)
    slow = serve("llama-2-70b", H200, tp=4, isl=1000, osl=2, requests=1, concurrency=1,
                          kv_reads="per-query-head").figures.tpot.p50
    fast = serve("llama-2-70b", H200, tp=4, isl=1000, osl=2, requests=1, concurrency=1).figures.tpot.p50
    assert slow > fast


def test_kv_reads_bad_input_and_files():
    with pytest.raises(RooflineError, match="kv_reads 'per-head' is not one of shared, per-query-head"):
        make_spec("llama-2-7b", kv_reads="per-head")
    with pytest.raises(RooflineError, match="kv_reads"):
        serve("llama-2-7b", H200, isl=16, osl=4, requests=1, concurrency=1, kv_reads=3)
    spec = make_spec("llama-2-70b", kv_reads="per-query-head")
    assert LLMSpec.from_dict(spec.to_dict()) == spec
    old = spec.to_dict()
    del old["kv_reads"]  # a file written before the option: every KV head read once
    assert LLMSpec.from_dict(old).kv_reads == "shared"
    bad = {**spec.to_dict(), "kv_reads": "sometimes"}
    with pytest.raises(RooflineError, match="llm.kv_reads 'sometimes' is not one of"):
        read_spec(bad, "run.json")


def _bench():
    s = importlib.util.spec_from_file_location("bench_serve", BENCH)
    mod = importlib.util.module_from_spec(s)
    s.loader.exec_module(mod)
    return mod


def test_table2_runs_the_v05_engine_in_fp8():
    b = _bench()
    # the table is FP8 ('H200 FP8 Max throughput'); 8 as a number names int8, which has no cited GEMM curve
    assert parse_precision(8, "wbits") == "int8"
    p = b.TRTLLM_V05.precision
    assert {parse_precision(getattr(p, k), k) for k in ("wbits", "abits", "kvbits")} == {"fp8"}
    assert b.TRTLLM_V05.kernels.kv_reads == "per-query-head"
    # the release rows: 7, the two multi-GPU figures totals over their TP (the revision's per-GPU x TP)
    assert len(b.ROWS) == 7
    assert [r[5] for r in b.ROWS if r[2] > 1] == [1_654 * 4, 341 * 2]


def test_table_flag_bad_value(capsys):
    assert _bench().main(["--table", "4"]) == 2
    assert capsys.readouterr().err.strip() == "bench_serve.py: error: --table takes 1, 2 or 3, got '4'"
