"""`roofline compare`: ranking by roofline time (and tokens/s), binding roofs, charts, bad input."""

from __future__ import annotations

import json
import re

import pytest

from roofline import Device, Op, Workload, analyze, get_device
from roofline.cli import main


def workload_file(tmp_path):
    w = Workload.from_ops([
        Op("gemm", kind="matmul", flops=2 * 4096**3, bytes_read=2 * 2 * 4096**2, bytes_written=2 * 4096**2,
           precision="bf16", unit="matrix"),
        Op("softmax", kind="softmax", flops=5 * 4096**2, bytes_read=4 * 4096**2, bytes_written=4 * 4096**2)],
        title="two ops")
    p = tmp_path / "w.json"
    w.save(p)
    return w, p


def test_ranking_matches_independent_analyses(tmp_path, capsys):
    w, p = workload_file(tmp_path)
    out = tmp_path / "rank.json"
    assert main(["compare", str(p), "--devices", "h100,l4,mi300x", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    times = {d: analyze(w, get_device(d)).total_time for d in ("h100", "l4", "mi300x")}
    expected = sorted(times.values())
    assert [r["time_s"] for r in rows] == pytest.approx(expected)
    assert rows[0]["x_best"] == 1.0 and rows[-1]["x_best"] == pytest.approx(expected[-1] / expected[0])
    # the gemm dominates on each: 137.4 GFLOP at 989.4 TFLOP/s (H100 bf16 matrix) = 139 us vs 100 MB / 3.35 TB/s
    h100 = [r for r in rows if r["device"].startswith("NVIDIA H100")][0]
    assert h100["binding_roof"].startswith("bf16 matrix 989.4 TFLOP/s (compute")
    text = capsys.readouterr().out
    assert text.index("AMD Instinct MI300X") < text.index("NVIDIA L4")  # fastest first


def test_llm_tokens_per_second_and_precisions(tmp_path, capsys):
    from roofline.frontends.llm import from_llm

    out = tmp_path / "r.csv"
    assert main(["compare", "llama-3-8b", "--devices", "h100,l4", "--precision", "bf16,fp8", "--phase", "decode",
                 "--batch", "4", "--csv", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0].split(",")[:4] == ["device", "precision", "time_s", "tokens_per_s"]
    rows = [ln.split(",") for ln in lines[1:]]
    assert len(rows) == 4
    for device, prec, t, tps, *_ in rows:
        w = from_llm("llama-3-8b", phase="decode", batch=4, wbits=prec, abits=prec)
        ref = analyze(w, get_device(device)).total_time
        assert float(t) == pytest.approx(ref)
        assert float(tps) == pytest.approx(4 / ref)  # one decode step: 4 sequences x 1 token
        if (device, prec) == ("NVIDIA H100 SXM5 80GB", "bf16"):
            # by hand: weights but the embedding (7.505e9 params x 2 B) + 4 sequences' KV cache (4 x 134.2 MB at
            # 1024 tokens) over 3.35 TB/s = 4.64 ms
            assert float(t) == pytest.approx((7.505e9 * 2 + 4 * 134.2e6) / 3.35e12, rel=0.01)
    assert "tokens/s" in capsys.readouterr().out


def test_local_device_chart_and_html(tmp_path, monkeypatch, capsys):
    pytest.importorskip("plotly")
    from roofline.bench import save_local_device

    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path / "cache"))
    save_local_device(Device.simple("my cpu", "200 GFLOP/s", "40 GB/s"))
    _, p = workload_file(tmp_path)
    chart, html = tmp_path / "c.png", tmp_path / "c.html"
    assert main(["compare", str(p), "--devices", "local,h100", "-o", str(chart), "--html", str(html)]) == 0
    assert chart.read_bytes()[:4] == b"\x89PNG"
    page = html.read_text()
    assert "my cpu" in page and "all devices" in page and page.count("Plotly.newPlot(") == 3


def test_generic_precision_rescales_bytes(tmp_path):
    from roofline.words.comparison import at_precision

    w, _ = workload_file(tmp_path)
    w8 = at_precision(w, "fp8")
    # gemm: bf16 -> fp8 halves its bytes; softmax (fp32) -> fp8 quarters them
    assert w8.bytes[0] == pytest.approx(w.bytes[0] / 2) and w8.bytes[1] == pytest.approx(w.bytes[1] / 4)
    assert w8.strings("precision", 0) == "fp8" and w8.strings("unit", 0) == "matrix"


@pytest.mark.parametrize("argv,message", [
    (["--devices", "h1000"], "unknown device 'h1000'; closest:"),
    (["--devices", "h100", "--precision", "fp7"], "--precision: 'fp7' is not one of"),
    (["--devices", "h100", "-o", "x.bmp"], "unknown chart format '.bmp'; valid: .png, .svg, .pdf"),
    (["--devices", "h100", "--html", "x.txt"], "--html expects a .html or .htm file"),
    (["--devices", ","], "--devices: give at least one device"),
])
def test_bad_input_is_one_line(tmp_path, capsys, argv, message):
    _, p = workload_file(tmp_path)
    assert main(["compare", str(p), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_unknown_model_and_unwritable_output(tmp_path, capsys):
    assert main(["compare", "no-such-model", "--devices", "h100"]) == 2
    assert capsys.readouterr().err.startswith("roofline: error:")
    _, p = workload_file(tmp_path)
    blocker = tmp_path / "f"
    blocker.write_text("x")
    assert main(["compare", str(p), "--devices", "h100", "--json", str(blocker / "a" / "r.json")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_llm_rows_say_whether_the_model_fits(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["compare", "llama-3-70b", "--devices", "h100,mi300x", "--phase", "decode", "--json", str(out)]) == 0
    rows = {r["device"]: r for r in json.loads(out.read_text())["rows"]}
    # 70.55 B params x 2 B = 141.1 GB + KV 80 layers x 8 heads x 128 x 2 (K, V) x 2 B x 1024 tokens = 0.34 GB
    # in GiB, as the capacity (Device.memory_capacity) is printed: 141.4e9 B / 2^30 = 131.7 GiB; the H100 holds
    # (81559 MiB reported - 512 MiB reserve) / 1024 = 79.15 GiB; the MI300X 206141652992 B / 2^30 = 191.98 GiB
    assert rows["NVIDIA H100 SXM5 80GB"]["memory"] == "DOES NOT FIT (131.7 > 79.15 GiB)"
    assert rows["AMD Instinct MI300X"]["memory"].startswith("fits (131.7 of 192 GiB")
    assert "DOES NOT FIT" in capsys.readouterr().out


def test_llm_generate_tokens_per_second_are_output_tokens(tmp_path):
    from roofline.frontends.llm import from_llm

    out = tmp_path / "r.json"
    assert main(["compare", "llama-3-8b", "--devices", "h100", "--phase", "generate", "--batch", "8",
                 "--json", str(out)]) == 0
    row = json.loads(out.read_text())["rows"][0]
    t = analyze(from_llm("llama-3-8b", phase="generate", batch=8), get_device("h100")).total_time
    assert row["tokens_per_s"] == pytest.approx(8 * 256 / t)  # 8 sequences x 256 generated tokens, prompt excluded


def test_llm_default_phase_is_generate_as_in_roofline_llm(tmp_path):
    from roofline.frontends.llm import from_llm

    out = tmp_path / "r.json"
    assert main(["compare", "llama-3-8b", "--devices", "h100", "--json", str(out)]) == 0  # no --phase
    doc = json.loads(out.read_text())
    assert doc["workload"] == "llama-3-8b generate batch 1"
    t = analyze(from_llm("llama-3-8b", phase="generate", batch=1), get_device("h100")).total_time
    # generate, batch 1: 1 sequence x 256 generated tokens (the --gen default) in the whole run's time
    assert doc["rows"][0]["time_s"] == pytest.approx(t) and doc["rows"][0]["tokens_per_s"] == pytest.approx(256 / t)


def test_precision_without_a_roof_says_what_it_runs_as(tmp_path, capsys):
    pytest.importorskip("plotly")
    _, p = workload_file(tmp_path)
    out, html = tmp_path / "r.json", tmp_path / "r.html"
    assert main(["compare", str(p), "--devices", "a100,h100", "--precision", "fp8", "--json", str(out),
                 "--html", str(html)]) == 0
    rows = {r["device"]: r for r in json.loads(out.read_text())["rows"]}
    a100, h100 = rows["NVIDIA A100 SXM4 80GB"], rows["NVIDIA H100 SXM5 80GB"]
    # A100 has no fp8 roof (fp16/bf16 matrix 312 TFLOP/s, fp32 vector 19.5 TFLOP/s, HBM 2.039 TB/s). At fp8:
    #   gemm (matrix): fp8 -> fp16 matrix: 2 x 4096^3 = 137.4 GFLOP / 312 TFLOP/s = 440.5 us, against
    #     3 x 4096^2 x 1 B = 50.3 MB / 2.039 TB/s = 24.7 us: compute, 440.5 us
    #   softmax (vector): fp8, fp16, bf16: no vector roof -> fp32 vector: 5 x 4096^2 = 83.9 MFLOP / 19.5 TFLOP/s
    #     = 4.3 us, against its fp32 bytes (4096^2 read + 4096^2 written x 4 B = 134.2 MB) quartered at fp8,
    #     2 x 4096^2 = 33.6 MB / 2.039 TB/s
    #     = 16.5 us: memory, 16.5 us
    # fp16 carries the most time, then fp32
    assert a100["precision"] == "fp8" and a100["runs_as"] == "fp16/fp32"
    assert a100["note"] == "fp8 runs as fp16/fp32 on NVIDIA A100 SXM4 80GB (no fp8 roof)"
    assert a100["time_s"] == pytest.approx(2 * 4096**3 / 312e12 + 2 * 4096**2 / 2.039e12)
    # H100 has an fp8 matrix roof: native, no note (its softmax on the fp16 vector roof is no fp8 shortfall)
    assert h100["runs_as"] is None and h100["note"] is None
    text = capsys.readouterr().out
    assert re.search(r"NVIDIA A100 SXM4 80GB +fp8->fp16/fp32", text)
    assert "note: fp8 runs as fp16/fp32 on NVIDIA A100 SXM4 80GB (no fp8 roof)" in text
    page = html.read_text()
    assert "NVIDIA A100 SXM4 80GB (fp8-&gt;fp16/fp32)" in page
    assert "; fp8 runs as fp16/fp32 on NVIDIA A100 SXM4 80GB (no fp8 roof)</p>" in page


def test_llm_on_a100_at_fp8_runs_as_fp16():
    from roofline.frontends.llm import from_llm
    from roofline.words.comparison import compare

    [row] = compare(from_llm("llama-3-8b", phase="decode"), [get_device("a100")], ["fp8"])
    # an LLM at fp8: weights and activations fp8 on the matrix unit -> A100's fp16 matrix roof (fp8, then fp16 in the
    # fallback order); its other ops keep bf16/fp32, which A100 runs natively
    assert (row.precision_label, row.runs_as) == ("fp8->fp16", "fp16")
    assert row.to_dict(row.time)["note"] == "fp8 runs as fp16 on NVIDIA A100 SXM4 80GB (no fp8 roof)"


# -- forecasts of unlike devices (issue 48, item 1) ----------------------------------------------------------


def test_an_uncalibrated_forecast_is_labelled_and_is_the_bound() -> None:
    """The label says what the forecast is, and it is true: with no calibration, no overhead floor and no sustained
    figures the forecast is the bound itself; with a floor, the bound plus the floor per op instance."""
    from roofline.frontends.llm import from_llm

    w = from_llm("llama-3-8b", phase="decode")
    bare = analyze(w, Device.simple("bare", "100 TFLOP/s", "1 TB/s", precision="bf16", unit="matrix", kind="gpu"),
                   forecast=True)
    f = bare.forecast
    assert f is not None and f.uncalibrated == "uncalibrated: forecast = bound" and f.overhead == 0
    assert f.total_time == pytest.approx(bare.total_time, rel=1e-12)
    gb = analyze(w, get_device("h20"), forecast=True)  # H20: no cited calibration
    fb = gb.forecast
    assert fb is not None and fb.overhead > 0 and fb.uncalibrated == "uncalibrated: forecast = bound + cuda-launch floor"
    assert fb.total_time == pytest.approx(gb.total_time + fb.overhead * float(fb.counts.sum()), rel=1e-9)
    h100 = analyze(w, get_device("h100"), forecast=True).forecast
    assert h100 is not None and h100.calibration is not None and h100.uncalibrated == ""  # a cited calibration


def test_forecasts_of_unlike_devices_say_so_in_the_first_line(tmp_path, capsys, monkeypatch) -> None:
    """H100 (cited calibration) against H20 (none; the GB300 now has cited curves): ranked by forecast, the first line says the forecasts are not
    alike, names the uncalibrated device and the fastest by the bound; the H20's forecast is marked and the mark
    explained; 'vs best' has one 'best' and follows the ranking, on the forecast it was ranked by."""
    from roofline.frontends.llm import from_llm

    monkeypatch.setenv("COLUMNS", "200")
    out = tmp_path / "r.json"
    assert main(["compare", "llama-3-8b", "--devices", "h100,h20", "--phase", "decode", "--forecast",
                 "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    w = from_llm("llama-3-8b", phase="decode")
    a = {d: analyze(w, get_device(d), forecast=True) for d in ("h100", "h20")}
    # decode is memory-bound: the H20's 4.0 TB/s HBM3 against the H100's 3.35 TB/s makes it the faster by the bound
    assert a["h20"].total_time < a["h100"].total_time
    assert lines[0].startswith("forecasts not alike: 1 of 2 devices uncalibrated (forecast = bound): "
                               "NVIDIA H20 (HGX, 96GB); by the bound, NVIDIA H20 (HGX, 96GB) is the fastest")
    rows = json.loads(out.read_text())["rows"]
    forecast = {r["device"]: r["forecast_s"] for r in rows}
    by_forecast = sorted(a, key=lambda d: a[d].forecast.total_time)
    assert [r["device"] for r in rows] == [a[d].device.name for d in by_forecast]
    best = a[by_forecast[0]].forecast.total_time
    # x_best on the basis the rows were ranked by: each forecast over the best forecast
    assert [r["x_best"] for r in rows] == pytest.approx([forecast[r["device"]] / best for r in rows])
    assert [r["uncalibrated"] for r in rows if r["device"].startswith("NVIDIA H20")] == [
        "uncalibrated: forecast = bound + cuda-launch floor"]
    table = lines[lines.index(next(x for x in lines if x.startswith("#  device"))):]
    vs = [x for x in table[1:3]]
    assert sum(" best " in x for x in vs) == 1 and " best " in vs[0]
    gb300_row = next(x for x in vs if "H20" in x)
    assert re.search(r"\d (ms|s)\*", gb300_row)  # the uncalibrated forecast is marked
    assert "* NVIDIA H20 (HGX, 96GB): uncalibrated: forecast = bound + cuda-launch floor" in lines


def test_alike_forecasts_lead_with_the_answer() -> None:
    """Every device calibrated (H100, H200: cited) or none: no caveat; the answer leads."""
    from roofline.frontends.llm import from_llm
    from roofline.words.comparison import answer, calibration_mix, compare

    w = from_llm("llama-3-8b", phase="decode")
    rows = compare(w, ["h100", "h200"], forecast=True)
    assert calibration_mix(rows) == "" and answer(w, rows).startswith("NVIDIA H200")
    rows = compare(w, ["b200", "mi300x"], forecast=True)
    assert calibration_mix(rows) == "" and not answer(w, rows).startswith("forecasts")
