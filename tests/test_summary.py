"""The summary layer: one definition of each fact, and every renderer naming the same one.

Expected values are derived by hand in the comments.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from roofline import ComputeCeiling, Device, MemoryCeiling, Op, Workload, analyze
from roofline.core.formula import roofline_times, scenario_times
from roofline.core.units import format_count, format_seconds
from roofline.words.summary import binding_roof, dominant_ceiling, summarize

DEV = Device("split", kind="gpu", compute=(
    ComputeCeiling("matrix", "fp8", 2000e9), ComputeCeiling("matrix", "bf16", 1000e9),
    ComputeCeiling("vector", "fp32", 100e9)), memory=(MemoryCeiling("HBM", 100e9, 80e9),))


def split_workload() -> Workload:
    """Compute 55% of the time, split over two ceilings; memory 42% on one level."""
    return Workload.from_ops([
        # 600 GFLOP / 2000 GFLOP/s = 0.3 s (1 MB / 100 GB/s = 10 us): compute-bound on fp8 matrix
        Op("fp8 gemm", kind="matmul", flops=600e9, bytes_read=1e6, precision="fp8", unit="matrix"),
        # 250 GFLOP / 1000 GFLOP/s = 0.25 s: compute-bound on bf16 matrix
        Op("bf16 gemm", kind="matmul", flops=250e9, bytes_read=1e6, precision="bf16", unit="matrix"),
        # 40 GB / 100 GB/s = 0.4 s against 10 GFLOP / 100 GFLOP/s = 0.1 s: memory-bound on HBM
        Op("add", kind="elementwise", flops=10e9, bytes_read=30e9, bytes_written=10e9),
    ], title="split")


def test_binding_roof_is_the_roof_carrying_the_most_time() -> None:
    a = analyze(split_workload(), DEV)
    b = binding_roof(a)
    # per roof: fp8 matrix 0.3 s, bf16 matrix 0.25 s, HBM 0.4 s (of 0.95 s): HBM binds, 0.4 / 0.95 = 42%
    assert (b.kind, b.name, b.value) == ("memory", "HBM", 100e9)
    assert b.time == pytest.approx(0.4) and b.share == pytest.approx(0.4 / 0.95)
    assert b.describe() == "HBM 100 GB/s (memory, 42% of the time)"
    # the old `compare` picked the bound class first (compute: 0.55 s) and then fp8 matrix: not the binding roof
    assert a.time_share_by_bound()["compute"] > 0.5
    # the dominant ceiling counts every op at its compute ceiling: fp8 0.3 s, bf16 0.25 s, fp32 vector 0.4 s
    assert dominant_ceiling(a).label == "fp32 vector"


def test_chart_terminal_html_and_compare_name_the_same_binding_roof(tmp_path) -> None:
    pytest.importorskip("plotly")
    from roofline.render import terminal
    from roofline.render.chart import plot
    from roofline.render.html import render_html
    from roofline.words.comparison import compare

    w = split_workload()
    a = analyze(w, DEV)
    expected = "HBM 100 GB/s (memory, 42% of the time)"
    assert f"binding roof: {expected}" in plot(a).axes[0].get_title()
    assert f"binding roof: {expected}" in terminal.render(a, color=False)
    assert f"binding roof: {expected}" in render_html(a)
    assert compare(w, [DEV])[0].binding == expected


def test_interconnect_and_ties() -> None:
    from roofline.hardware.device import Interconnect

    dev = Device("linked", kind="gpu", compute=(ComputeCeiling("vector", "fp32", 100e9),),
                 memory=(MemoryCeiling("HBM", 100e9),), interconnect=Interconnect("NVLink", 10e9))
    w = Workload.from_ops([Op("allreduce", kind="collective", bytes_read=1e9, level="interconnect"),   # 0.1 s
                           Op("add", kind="elementwise", flops=1e6, bytes_read=5e9)])                 # 0.05 s
    b = binding_roof(analyze(w, dev))
    assert (b.kind, b.name) == ("interconnect", "NVLink") and b.share == pytest.approx(0.1 / 0.15)
    # an empty-time workload: main memory, 0%
    empty = analyze(Workload.from_ops([Op("view", kind="memory")]), dev)
    assert binding_roof(empty).describe() == "HBM 100 GB/s (memory, 0% of the time)"


def test_measured_summary_compares_like_with_like() -> None:
    dev = Device.simple("seed", "100 GFLOP/s", "10 GB/s")
    w = Workload.from_ops([
        Op("a", flops=1e9, bytes_read=1e9, measured_seconds=0.2),  # roofline max(10 ms, 100 ms) = 0.1 s
        Op("b", flops=1e9, bytes_read=4e9),                         # 0.4 s, not measured
        Op("c", flops=1e9, bytes_read=2e9),                         # 0.2 s, not measured
    ])
    m = summarize(analyze(w, dev)).measured
    assert m is not None and (m.ops, m.of_ops) == (1, 3)
    # the measured op against its own prediction: 0.1 / 0.2 = 0.5, not the whole 0.7 s roofline / 0.2 s
    assert m.predicted == pytest.approx(0.1) and m.measured == pytest.approx(0.2) and m.ratio == pytest.approx(0.5)


def test_renderers_are_picked_by_name_or_extension(tmp_path) -> None:
    pytest.importorskip("plotly")
    from roofline.core.errors import RooflineError
    from roofline.render import RENDERERS, renderer_for

    a = analyze(split_workload(), DEV)
    s = summarize(a)
    assert {r.name for r in RENDERERS} == {"chart", "html", "json", "csv", "text"}
    for name, ext, head in (("chart", ".png", b"\x89PNG"), ("chart", ".svg", b"<?xml"), ("html", ".html", b"<!DOCTYPE"),
                            ("json", ".json", b"{"), ("csv", ".csv", b"name"), ("text", ".txt", b"split on split: 950 ms")):
        assert renderer_for(name).name == name and renderer_for(f"x{ext}").name == name
        path = tmp_path / f"out{ext}"
        renderer_for(path).save(a, path, summary=s)
        assert path.read_bytes().startswith(head), ext
    saved = json.loads((tmp_path / "out.json").read_text())
    assert saved["schema"] == "roofline.analysis/2" and saved["totals"]["time"] == pytest.approx(0.95)
    with pytest.raises(RooflineError, match="unknown output format"):
        renderer_for(tmp_path / "out.bmp")


def test_renderers_do_not_compute_the_model(monkeypatch) -> None:
    pytest.importorskip("plotly")
    import roofline.engine.analysis
    import roofline.words.advice
    from roofline.render import renderer_for

    a = analyze(split_workload(), DEV)

    def boom(*args, **kw):
        raise AssertionError("a renderer recomputed the model")

    monkeypatch.setattr(roofline.engine.analysis, "analyze", boom)
    monkeypatch.setattr(roofline.words.advice, "advise", boom)
    for name in ("chart", "html", "csv", "text", "json"):
        out = renderer_for(name).render(a, summary=summarize(a), path="x.png")
        assert out


def test_one_engine_for_ops_and_scenarios() -> None:
    # roofline_times: 2 GFLOP at 100 GFLOP/s = 20 ms against 1 GB at 10 GB/s = 100 ms
    c, m, t = roofline_times(np.array([2e9]), np.array([1e9]), 100e9, 10e9)
    assert (float(c[0]), float(m[0]), float(t[0])) == pytest.approx((0.02, 0.1, 0.1))
    # scenario_times on a symbolic workload equals analyze on the same ops written out:
    # op 0: 4 FLOP/token, 2 B/token + 1e6 B fixed; op 1 (x3): 1e5 FLOP fixed, 8 B/token; tokens 1, 1e6
    terms = np.array([[1.0, 1.0], [1.0, 1e6]])  # (one, tokens)
    flops = np.array([[0.0, 4.0], [1e5, 0.0]])
    nbytes = np.array([[1e6, 2.0], [0.0, 8.0]])
    peak, bw = np.array([[1e9, 1e9]] * 2), np.array([[1e7]] * 2)
    total = scenario_times(terms, flops, nbytes, peak, bw, np.array([0, 1]), np.array([0, 0]), np.array([1.0, 3.0]))
    dev = Device.simple("d", "1 GFLOP/s", "10 MB/s")
    for k, tok in enumerate((1.0, 1e6)):
        w = Workload.from_ops([Op("a", flops=4 * tok, bytes_read=1e6 + 2 * tok),
                               Op("b", flops=1e5, bytes_read=8 * tok, count=3)])
        assert total[k] == pytest.approx(analyze(w, dev).total_time)


def test_summary_reads_like_the_terminal() -> None:
    from roofline.render.terminal import summary_lines

    lines = summary_lines(summarize(analyze(split_workload(), DEV)))
    assert lines[0].startswith("split on split: 950 ms")  # the headline leads
    assert lines[4] == "binding roof: HBM 100 GB/s (memory, 42% of the time)"
    # roofs used, most time first: fp32 vector 0.4 s, fp8 matrix 0.3 s, bf16 matrix 0.25 s
    assert re.search(r"roofs used: fp32 vector 100 GFLOP/s, fp8 matrix 2 TFLOP/s, bf16 matrix 1 TFLOP/s", lines[1])


def test_headline_states_the_answer_with_its_numbers() -> None:
    from roofline.words.summary import headline

    a = analyze(split_workload(), DEV)
    # 0.3 + 0.25 + 0.4 = 0.95 s; HBM carries 0.4 / 0.95 = 42%; attainable (600 + 250 + 10) GFLOP / 0.95 s = 905.3 GFLOP/s
    assert headline(summarize(a)) == ("split on split: 950 ms (roofline bound), memory-bound on HBM 100 GB/s "
                                      "(42% of the time); attainable 905.3 GFLOP/s.")


def test_llm_headline_has_time_per_token_throughput_and_the_best_lever_on_that_device() -> None:
    from roofline import from_llm, get_device
    from roofline.words.advice import advise
    from roofline.words.summary import best_lever, headline

    a = analyze(from_llm("llama-2-7b", phase="decode", batch=1, context=1024), get_device("h100"))
    s = summarize(a, advice=advise(a))  # every catalog device offered too: the headline must not pick one
    r = s.llm
    assert r is not None and r.tpot is not None
    lever = best_lever(s)
    assert lever is not None and lever.name != "device"
    assert lever.speedup == max(lv.speedup for lv in s.advice.levers if lv.name != "device")
    text = headline(s)
    # decode batch 1: one token per step, so tokens/s over the batch = 1 / time per token, in the same clause
    assert text.startswith(f"llama-2-7b decode batch 1 on NVIDIA H100 SXM5 80GB: per output token "
                           f"{format_seconds(r.tpot)} bound ({format_count(1 / r.tpot)} tokens/s over the batch of 1)")
    assert "memory-bound on HBM 3.35 TB/s" in text
    # the lever says what it improves: batching gains throughput and costs each sequence time per token
    assert lever.name == "batching" and lever.effect().startswith(f"{format_count(lever.speedup)}x throughput, ")
    assert f"best lever here: {lever.name} ({lever.effect()})." in text


def test_fallbacks_are_named_in_the_summary_the_terminal_and_the_caption() -> None:
    from roofline.render.html import caption
    from roofline.render.terminal import summary_lines

    # a device with an fp32 roof only: the two bf16 matmuls fall back to fp32 (vector: no matrix unit either)
    dev = Device.simple("cpu", "100 GFLOP/s", "10 GB/s")
    w = Workload.from_ops([Op("g1", kind="matmul", flops=1e9, bytes_read=1e6, precision="bf16"),
                           Op("g2", kind="matmul", flops=1e9, bytes_read=1e6, precision="bf16"),
                           Op("add", kind="elementwise", flops=1e6, bytes_read=1e6)])
    s = summarize(analyze(w, dev))
    assert s.fallbacks == (("bf16 matrix -> fp32 vector", 2),)
    assert "fallbacks (no such roof on this device): bf16 matrix -> fp32 vector (2 ops)" in summary_lines(s)
    assert "run on the next one: bf16 matrix -> fp32 vector (2 ops)." in caption(s)
