"""Request lengths from a data set's quantiles, and one iteration timed at a chosen operating point."""

from __future__ import annotations

import json

import numpy as np
import pytest
from serving_calls import serve

from roofline.core.errors import RooflineError
from roofline.serving.requests import Lengths, parse_lengths
from roofline.serving.run import iteration_time


def test_quantile_law_mean_median_and_share_by_hand() -> None:
    law = Lengths.from_quantiles((10, 20, 40))
    x = law.draw(np.random.default_rng(0), 200_000)
    # u uniform on [0, 2]: 10 -> 20 on [0, 1], 20 -> 40 on [1, 2]; mean = (15 + 30) / 2 = 22.5 (rounding to
    # integers is symmetric inside each segment); median at u = 1: 20
    assert abs(x.mean() - 22.5) < 0.1
    assert np.median(x) == 20
    # rint(x) <= 15 <=> x < 15.5 <=> u < 0.55: a share 0.55 / 2 = 0.275
    assert abs((x <= 15).mean() - 0.275) < 0.005
    assert x.min() == 10 and x.max() == 40 and law.top == 40


def test_quantile_law_parsed_as_given() -> None:
    assert parse_lengths("10,20,40:quantiles", "--isl") == Lengths.from_quantiles([10.0, 20.0, 40.0])
    for bad in ("10,5:quantiles", "0,4:quantiles", "7:quantiles", "a,b:quantiles"):
        with pytest.raises(RooflineError) as e:
            parse_lengths(bad, "--isl")
        assert "\n" not in str(e.value) and "--isl" in str(e.value)


def test_constant_quantiles_serve_as_a_fixed_length() -> None:
    # two routes to the same requests: every draw of (64, 64) is 64; a closed loop draws no arrivals
    kw = dict(osl=8, requests=6, concurrency=3)
    a = serve("llama-2-7b", "h100", isl=Lengths.from_quantiles((64, 64)), **kw)
    b = serve("llama-2-7b", "h100", isl=64, **kw)
    for key in ("output_tokens_per_s", "ttft_p99_s", "tpot_p99_s", "iterations"):
        assert a.figures.to_dict()[key] == b.figures.to_dict()[key]


def test_iteration_time_is_the_simulated_step() -> None:
    # one request of 300 input and 2 output tokens, every iteration exact: its TTFT is the prefill of 300 fresh
    # tokens; its one TPOT interval is a decode of 1 sequence holding 300 + 1 keys (the prefill made token 1)
    r = serve("llama-2-7b", "h100", isl=300, osl=2, requests=1, concurrency=1, exact=True)
    prefill = iteration_time("llama-2-7b", "h100", chunks=((300, 0),))
    decode = iteration_time("llama-2-7b", "h100", decode_batch=1, kv_tokens=301)
    assert r.figures.ttft.p50 == pytest.approx(prefill, rel=1e-12)
    assert r.figures.tpot.p50 == pytest.approx(decode, rel=1e-12)
    # more work costs more time: a prefill chunk joining the decode
    assert iteration_time("llama-2-7b", "h100", decode_batch=1, kv_tokens=301, chunks=((300, 0),)) > decode


def test_iteration_time_bad_input_is_one_line() -> None:
    big = 2**30 + 1  # past the length limit min(ROOFLINE_MAX_DIM, 2**30)
    cases = [(dict(decode_batch=-1), "decode_batch"), (dict(), "decode_batch"), (dict(chunks=((0, 0),)), "decode_batch"),
             (dict(decode_batch=1.5), "decode_batch"),
             *((dict(decode_batch=1, kv_tokens=v), "kv_tokens") for v in (-1, float("nan"), float("inf"), "128",
                                                                          10**13)),
             (dict(decode_batch=4, kv_tokens=3), "kv_tokens"),  # 4 sequences read at least 4 keys
             (dict(chunks=((10, -1),)), "chunks[0] cached"), (dict(chunks=((10, 2.5),)), "chunks[0] cached"),
             (dict(chunks=((10, "a"),)), "chunks[0] cached"), (dict(chunks=((10,),)), "chunks[0]"),
             (dict(chunks=(10, 0)), "chunks[0]"), (dict(chunks="10,0"), "chunks"),
             (dict(chunks=((big, 0),)), "chunks[0] new"), (dict(chunks=((10, 0), (1, big))), "chunks[1] cached")]
    for kw, name in cases:
        with pytest.raises(RooflineError) as e:
            iteration_time("llama-2-7b", "h100", **kw)  # type: ignore[arg-type]
        msg = str(e.value)
        assert "\n" not in msg and msg.startswith("iteration_time: ") and name in msg, (kw, msg)
    # numpy integers and a list of lists are accepted, and give the same time as plain ints in tuples
    a = iteration_time("llama-2-7b", "h100", decode_batch=np.int64(2), kv_tokens=np.float64(40), chunks=[[8, 3]])
    assert a == iteration_time("llama-2-7b", "h100", decode_batch=2, kv_tokens=40, chunks=((8, 3),))


def test_iteration_time_is_exported() -> None:
    import roofline.serving

    assert roofline.serving.iteration_time is iteration_time and "iteration_time" in roofline.serving.__all__


def test_lengths_past_the_limit_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # the limit is min(ROOFLINE_MAX_DIM, 2**30): 2**30 = 1,073,741,824 by default (int32 holds isl + osl)
    for text, option in (("1e30,1e30:quantiles", "--isl"), ("1,3e9:quantiles", "--osl"), ("3000000000", "--isl"),
                         ("5:3000000000:uniform", "--osl"), ("2e9:1:lognormal", "--isl")):
        with pytest.raises(RooflineError) as e:
            parse_lengths(text, option)
        msg = str(e.value)
        assert "\n" not in msg and option in msg and "1,073,741,824" in msg, msg
    assert parse_lengths(str(2**30), "--isl") == Lengths("fixed", 2**30)  # at the limit: accepted
    monkeypatch.setenv("ROOFLINE_MAX_DIM", "100")
    assert parse_lengths("100", "--isl").a == 100
    with pytest.raises(RooflineError, match="limit of 100 tokens"):
        parse_lengths("10,101:quantiles", "--isl")
    with pytest.raises(RooflineError, match="limit of 100 tokens"):
        Lengths("fixed", 101).check("--isl")  # a law built by hand is checked the same way


def test_quantile_error_shows_the_value_clipped() -> None:
    text = ",".join(["5"] * 8000) + ",x:quantiles"  # 16 kB
    with pytest.raises(RooflineError) as e:
        parse_lengths(text, "--isl")
    assert len(str(e.value)) < 200 and "..." in str(e.value)
    # a string given to from_quantiles is not read character by character: '12' is not the law (1, 2)
    with pytest.raises(RooflineError):
        Lengths.from_quantiles("12")


def test_lognormal_draws_clip_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROOFLINE_MAX_DIM", "50")
    law = parse_lengths("40:3:lognormal", "--isl")
    x = law.draw(np.random.default_rng(0), 10_000)
    # P(lognormal(ln 40, 3) > 50) = P(Z > ln(1.25) / 3 = 0.074) ~ 0.47: about half the draws clip to 50
    assert x.max() == 50 and 0.4 < (x == 50).mean() < 0.55 and law.top == 50


def test_serve_result_records_its_model(tmp_path) -> None:
    from roofline.cli import main

    out = tmp_path / "s.json"
    # llama-2-7b: gated MLP, so gate-up applies; tp 1: no all-reduce, so reduce-norm does not
    code = main(["serve", "llama-2-7b", "--device", "h100", "--wbits", "fp8", "--abits", "fp8", "--kvbits", "fp8",
                 "--rbits", "fp16", "--fusions", "QKV,gate-up,reduce-norm", "--concurrency", "2", "--requests", "2",
                 "--isl", "10,20,40:quantiles", "--osl", "4:8:uniform", "--json", str(out)])
    assert code == 0
    doc = json.loads(out.read_text())
    s = doc["setup"]
    assert (s["wbits"], s["abits"], s["kvbits"], s["rbits"]) == ("fp8", "fp8", "fp8", "fp16")
    assert s["fusions"] == ["qkv", "gate-up"] and s["fusions_asked"] == ["qkv", "gate-up", "reduce-norm"]
    assert s["kv_reads"] == "shared" and s["flash"] is True
    # the length laws as the options take them: parsing them back gives the same laws
    assert parse_lengths(s["isl"], "--isl") == Lengths.from_quantiles((10, 20, 40))
    assert parse_lengths(s["osl"], "--osl") == Lengths("uniform", 4, 8)
    assert "residual stream in fp16" in s["bytes_model"] and s["bytes_model"].endswith("reduce-norm; residual stream in fp16")
    assert not any("forecast" in k for k in s)
    # the API gives the same record; without rbits, the residual stream is the activations' precision
    r = serve("llama-2-7b", "h100", isl=64, osl=4, requests=1, concurrency=1)
    assert r.setup["rbits"] == r.setup["abits"] == "bf16" and r.setup["fusions"] == [] and r.setup["isl"] == "64"
    assert r.to_dict(headline="")["setup"] == r.setup


def test_serve_report_shows_its_model(capsys) -> None:
    from roofline.cli import main

    assert main(["serve", "llama-2-7b", "--device", "h100", "--abits", "fp8", "--rbits", "fp16", "--concurrency", "1",
                 "--requests", "1", "--isl", "64", "--osl", "4"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # the report wraps long lines
    assert "model: wbits bf16, abits fp8, kvbits bf16, rbits fp16" in text and "isl 64, osl 4" in text
    assert "bytes model: fused kernels: attention" in text
