"""Headlines that cannot mislead (issue 31, part A): the deciding fact first, one time basis per clause, and
a measured figure that one slow run cannot move."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from roofline import Device, Op, Workload, analyze, from_llm, get_device, summarize
from roofline.core.stats import OpTimings, Timing
from roofline.words.summary import chart_heading, headline, table_glossary
from roofline.work.workload import MeasuredRun

GIB = 2**30


@pytest.fixture(scope="module")
def seventy_b() -> object:
    """llama-3-70b generate, batch 16, prompt 1024 + 256 generated tokens, bf16, on one H100, forecast on."""
    # unfused attention, as the derivations below count its score tensors (fused is the default)
    return summarize(analyze(from_llm("llama-3-70b", phase="generate", batch=16, flash=False), get_device("h100"),
                             forecast=True))


def test_a_run_that_does_not_fit_leads_with_it_and_with_the_ways_to_fit(seventy_b) -> None:
    s = seventy_b
    r = s.llm
    text = headline(s)
    assert text.startswith("does not fit: 141.9 GiB needed, 79.15 GiB on NVIDIA H100 SXM5 80GB (weights 131.4 GiB, "
                           "KV cache 6.25 GiB, activations 4.25 GiB); fits with tp 2 / int8 weights. ")
    # by hand: weights 70.55 B parameters x 2 B = 141.1 GB = 131.4 GiB; KV cache 80 layers x 8 KV heads x 128 x
    # (K and V) x 2 B = 327,680 B per token x (1024 + 256) tokens x 16 sequences = 6.71 GB = 6.25 GiB; the
    # device stores 81,559 - 512 MiB = 79.15 GiB (Device.memory_capacity, as nvidia-smi counts)
    fp = r.footprint
    assert fp.weights / GIB == pytest.approx(70.55e9 * 2 / GIB, rel=2e-3)
    assert fp.kv_cache == 80 * 8 * 128 * 2 * 2 * 1280 * 16 and fp.capacity == (81559 - 512) * 2**20
    ways = {o.describe(): o.total for o in r.fits_with}
    assert list(ways) == ["tp 2", "int8 weights"]
    # tp 2 halves the weights (65.7 GiB) and the KV heads (3.1 GiB): under 79.15 GiB with room for activations
    assert fp.weights / 2 + fp.kv_cache / 2 < ways["tp 2"] < fp.capacity
    # int8 weights: embedding and lm_head stay bf16 (2 x 128,256 x 8,192 x 2 B = 4.20 GB), the other 136.9 GB
    # halve to 68.45 GB: 72.65 GB = 67.66 GiB, + 6.25 + 4.25 GiB = 78.17 GiB < 79.15 GiB
    embed = 2 * 128256 * 8192 * 2
    assert ways["int8 weights"] == pytest.approx(embed + (fp.weights - embed) / 2 + fp.kv_cache + fp.activations,
                                                 rel=1e-3)
    assert ways["int8 weights"] / GIB == pytest.approx(78.17, abs=0.01)
    # an int8 KV cache is not enough (131.4 GiB of weights alone), nor any batch: neither is offered
    assert fp.weights > fp.capacity and r.max_batch == 0


def test_per_token_rate_and_whole_run_are_each_on_their_own_basis(seventy_b) -> None:
    s = seventy_b
    r = s.llm
    text = headline(s)
    m = re.search(r"per output token ([\d.]+) ms bound \(([\d,]+) tokens/s over the batch of 16\), "
                  r"([\d.]+) ms forecast \(([\d,]+) tokens/s\)", text)
    assert m, text
    tpot, rate, ftpot, frate = float(m[1]), float(m[2].replace(",", "")), float(m[3]), float(m[4].replace(",", ""))
    # by hand: 16 sequences / 43.9 ms = 364.5 tokens/s, printed 365 (3 significant digits of 43.86 ms: 364.8)
    assert tpot == 43.9 and 16 / (tpot * 1e-3) == pytest.approx(364.5, abs=0.05) and rate == 365
    assert frate == pytest.approx(16 / (ftpot * 1e-3), rel=2e-3)  # the forecast's rate from its own time
    assert r.tpot == pytest.approx(r.phase_time["decode"] / 256)  # the mean decode step of the 256
    # TTFT alone, then the whole run labelled as such: 16 x 256 output tokens / 13.9 s = 294.7 -> 295
    assert f"TTFT {2.68} s bound" in text
    w = re.search(r"whole run \(prompt 1,024 \+ 256 generated tokens, batch 16\) ([\d.]+) s bound \((\d+) output "
                  r"tokens/s\)", text)
    assert w and float(w[1]) == 13.9 and int(w[2]) == round(16 * 256 / r.latency)
    assert 16 * 256 / 13.9 == pytest.approx(294.7, abs=0.05)
    # the tokens/s of the whole run (prefill included) never sits beside the per-token time
    assert text.index("295 output tokens/s") > text.index("whole run")


def test_the_100000_batch_names_the_largest_batch_that_fits() -> None:
    s = summarize(analyze(from_llm("llama-3-8b", phase="generate", batch=100000), get_device("h100")))
    text = headline(s)
    assert text.startswith("does not fit: ") and "GiB needed, 79.15 GiB on NVIDIA H100 SXM5 80GB" in text
    assert "e+" not in text.split(".")[0]  # '28,920 GiB', never '2.892e+04 GiB'
    r = s.llm
    (way,) = r.fits_with  # tp 8 leaves 1/8 of 28,920 GiB: far too much; only a smaller batch fits
    assert way.describe() == f"batch <= {r.max_batch}" and f"fits with batch <= {r.max_batch}" in text
    # by hand: the per-sequence bytes are (total - weights) / 100,000; the capacity left after the weights holds
    # floor((79.15 GiB - weights) / per-sequence) of them
    fp = r.footprint
    per_seq = (fp.total - fp.weights) / 100000
    assert r.max_batch == math.floor((fp.capacity - fp.weights) / per_seq)


def test_a_fitting_run_has_no_fit_clause_and_decode_names_its_step() -> None:
    s = summarize(analyze(from_llm("llama-3-8b", phase="decode", batch=16), get_device("h100")))
    text = headline(s)
    assert text.startswith("llama-3-8b decode batch 16 on NVIDIA H100 SXM5 80GB: per output token ")
    assert "does not fit" not in text and "whole run" not in text and "TTFT" not in text
    assert "(100% of the bound)" in text
    assert "every instance counted" in table_glossary(s)


def _measured(per_run: np.ndarray, whole: list[float]) -> object:
    """Ten 1-GFLOP ops on a 100 GFLOP/s device (10 ms bound each), timed over the runs of ``per_run`` (runs x ops,
    seconds) and the whole model over the runs of ``whole``."""
    ops = OpTimings.of(per_run)
    w = Workload.from_ops([Op(f"op{i}", flops=1e9, bytes_read=1e3) for i in range(10)], title="net")
    w = w.replace(measured_seconds=ops.median,
                  measured=MeasuredRun(Timing.of(whole), "cpu", "test", per_run.shape[0], float(ops.median.sum()), ops))
    return summarize(analyze(w, Device.simple("d", "100 GFLOP/s", "1 TB/s")))


def _measured_ms(text: str) -> float:
    m = re.search(r"measured ([\d.]+) ms whole model", text)
    assert m, text
    return float(m[1])


def test_one_10x_outlier_among_10_runs_moves_the_headline_by_less_than_5_percent() -> None:
    rng = np.random.default_rng(0)
    per_run = 0.020 * (1 + 0.01 * rng.standard_normal((10, 10)))  # 20 ms per op and run, 1% noise
    whole = list(0.200 * (1 + 0.01 * rng.standard_normal(10)))  # the whole model 200 ms, 1% noise
    base = _measured(per_run, whole)
    slow_run, slow_whole = per_run.copy(), list(whole)
    slow_run[3, 0] *= 10  # one profiled run of op0 is 10x slower (a preempted run)
    slow_whole[7] *= 10  # and one whole-model run
    noisy = _measured(slow_run, slow_whole)
    a, b = _measured_ms(headline(base)), _measured_ms(headline(noisy))
    assert abs(b - a) / a < 0.05, (headline(base), headline(noisy))
    # the medians ignore it: one sample of ten moves the median by at most the gap between two neighbours
    assert noisy.measured.measured == pytest.approx(base.measured.measured, rel=0.02)
    # 200 ms measured against the 100 ms bound (10 x 1 GFLOP / 100 GFLOP/s): 2x the bound
    assert "(median of 10 runs" in headline(noisy) and "2x the bound" in headline(noisy)
    # one slow run of ten leaves op0's quartiles where they were: not noisy
    assert noisy.measured.noisy == ()


def test_an_op_with_a_wide_spread_is_marked_and_does_not_lead() -> None:
    # three profiled runs (the demo's), conv1-like op0 11.6 ms in one of them, 1.2 ms in the others; the whole
    # model measured at 12.5 ms: the headline leads with 12.5 ms, not with the per-op sum
    per_run = np.full((3, 10), 1.2e-3)
    per_run[0, 0] = 11.6e-3
    s = _measured(per_run, [12.5e-3] * 10)
    text = headline(s)
    assert re.search(r"measured 12.5 ms whole model \(median of 10 runs, 12.5 ms\.\.12.5 ms; 0.125x the bound\); "
                     r"per-op medians sum to 12 ms \(12 ms\.\.17.2 ms\) for 10 of 10 ops, 1 noisy", text), text
    # by hand: op0's samples sorted (1.2, 1.2, 11.6) ms; numpy's linear quartiles sit at ranks 0.5, 1, 1.5: q1 1.2,
    # median 1.2, q3 1.2 + 0.5 x 10.4 = 6.4 ms, a spread (6.4 - 1.2) / 1.2 = 433% > 10%.  The sums: medians
    # 10 x 1.2 = 12 ms, q3s 12 + (6.4 - 1.2) = 17.2 ms; 12.5 ms against the 100 ms bound is 0.125x
    assert s.measured.noisy == (0,)
    assert s.measured.measured_high == pytest.approx(12e-3 + 5.2e-3)
    from roofline.render.terminal import render

    out = render(s.analysis, summary=s, color=False)
    assert "1.2 ms ±" in out or "1.2 ms ±" in out.replace("\n", " ")
    assert "± = spread over the profiled runs above 10%" in out.replace("\n", " ")


def test_compare_answers_first_and_names_its_time_basis(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one line per sentence: the content, not the wrap (tests/test_widths.py)
    from roofline.cli import main

    assert main(["compare", "llama-3-8b", "--devices", "a100,h100", "--phase", "decode"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # both memory-bound at 100%: the A100 takes 3.35 / 2.039 = 1.64x as long per token; by hand, fused attention
    # (the default): 16.06 GB of weights less the embedding table (one row read: 128,256 x 4,096 x 2 B = 1.05 GB
    # not) = 15.01 GB, + 1,024 tokens x 131,072 B of KV cache = 0.134 GB: 15.15 GB / 3.35 TB/s = 4.52 ms
    assert lines[0].startswith("NVIDIA H100 SXM5 80GB is the fastest: 4.52 ms bound per output token (one decode "
                               "step at context 1,024, batch 1)") and "1.64x faster than NVIDIA A100 SXM4 80GB" in lines[0]
    assert "per token" in lines[2] and lines[-1].startswith("times: per token = the bound of one decode step")
    assert main(["compare", "llama-3-70b", "--devices", "h100,mi300x"]) == 0
    out = capsys.readouterr().out.splitlines()
    # 141.9 GiB do not fit 79.15 GiB; MI300X's 192 GiB hold them
    assert out[0].startswith("AMD Instinct MI300X is the fastest that fits: ") and out[0].endswith(
        "does not fit: NVIDIA H100 SXM5 80GB")
    assert "for the whole run (prompt 1,024 + 256 generated tokens, batch 1)" in out[0]
    assert "run time" in out[2] and "not per token" in out[-1]


def test_the_chart_the_notebook_and_the_html_top_carry_the_same_headline(seventy_b) -> None:
    pytest.importorskip("matplotlib")
    from roofline.render.html import esc, notebook_html

    s = seventy_b
    assert chart_heading(s)[0] == "does not fit: 141.9 GiB needed, 79.15 GiB on the device, fits with tp 2 / int8 weights"
    assert all(len(x) <= 120 for x in chart_heading(s))
    page = notebook_html(s.analysis)
    assert page.index(f'<p class="headline"><b>{esc(headline(summarize(s.analysis)))}</b></p>') < page.index("<svg")
    assert s.analysis._repr_html_().count("does not fit: 141.9 GiB needed") >= 1


def test_the_html_report_leads_with_the_headline(seventy_b) -> None:
    pytest.importorskip("plotly")
    from roofline.render.html import esc, render_html

    page = render_html(seventy_b.analysis, summary=seventy_b)
    assert f'<p class="headline">{esc(headline(seventy_b))}</p>' in page
    assert esc("does not fit: 141.9 GiB needed") in page.split('<p class="headline">')[1][:60]


def test_plan_answers_first(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one line per sentence: the content, not the wrap (tests/test_widths.py)
    from roofline.cli import main

    # plan --serve answers with a capacity at the SLO (issue 52), never a decode step's price
    assert main(["plan", "llama-3-8b", "--system", "dgx-h100", "--serve", "--top", "2", "--short-list", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    m = re.match(r"best deployment: (.+): ([\d,]+) output tokens/s per GPU, ([\d.]+) tokens/s per user \(p99 TTFT "
                 r".*\): the capacity at TTFT <= 1 s, TPOT <= 50 ms", lines[0])
    assert m, lines[0]
    assert lines[-1].startswith("  prefill)") or "columns: tok/s/GPU" in "\n".join(lines[-4:])


def test_compare_outputs_carry_the_answer_and_the_basis(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one line per sentence: the content, not the wrap (tests/test_widths.py)
    import json

    from roofline.cli import main

    pytest.importorskip("plotly")
    j, h = tmp_path / "c.json", tmp_path / "c.html"
    assert main(["compare", "llama-3-8b", "--devices", "h100,a100", "--json", str(j), "--html", str(h)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    doc = json.loads(j.read_text())
    assert doc["answer"] == first and doc["time_basis"].startswith("the bound of the whole run (prompt 1,024 + 256")
    from roofline.render.html import esc

    page = h.read_text(encoding="utf-8")
    # the device-comparison section starts with its headline, as every section does
    assert f'<h2>all devices</h2><p class="headline">{esc(first)}</p>' in page


def test_an_uncalibrated_forecast_is_labelled_once_where_it_is_shown() -> None:
    """A device without a calibration (TPU v5p: no cited curves, no overhead floor for torch eager, no sustained
    figures): its forecast is its bound, and every output that shows the forecast says so once (issue 48, item 1);
    a calibrated device's (H100, cited) says nothing of the kind."""
    from roofline.render.terminal import forecast_lines

    w = from_llm("llama-3-8b", phase="generate", gen=16)
    s = summarize(analyze(w, get_device("tpu-v5p"), forecast=True))
    assert s.forecast is not None and s.forecast.total == pytest.approx(s.forecast.bound, rel=1e-12)  # = bound
    text = headline(s)
    assert text.count("uncalibrated: forecast = bound") == 1
    assert "forecast (" in text and "tokens/s; uncalibrated: forecast = bound)" in text
    assert " ".join(chart_heading(s, width=400)).count("uncalibrated: forecast = bound") == 1
    assert "(uncalibrated: forecast = bound)" in forecast_lines(s.forecast)[0]
    calibrated = summarize(analyze(w, get_device("h100"), forecast=True))
    assert "uncalibrated" not in headline(calibrated) + " ".join(forecast_lines(calibrated.forecast))


def test_analysis_commands_lead_with_the_answer(tmp_path, capsys, monkeypatch) -> None:
    """`llm` and `report` (the emit path `trace`, `torch`, `onnx` share) print the headline first, no title line
    above it repeating the workload and the device (issue 48, item 6)."""
    from roofline.cli import main

    monkeypatch.setenv("COLUMNS", "400")
    saved = tmp_path / "a.json"
    assert main(["llm", "llama-3-8b", "--device", "h100", "--phase", "decode", "--json", str(saved)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    want = headline(summarize(analyze(from_llm("llama-3-8b", phase="decode"), get_device("h100"))))
    assert first == want and first.startswith("llama-3-8b decode batch 1 on NVIDIA H100 SXM5 80GB: per output token")
    assert main(["report", str(saved)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == want
