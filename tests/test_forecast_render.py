"""The forecast in every renderer, beside the bound, never in its place: terminal lines and columns, the HTML
summary, table, hover and caption, achievable roofs on both charts, CSV columns and the JSON block.

Hand-derived figures (the device: 100 GFLOP/s, 10 GB/s peak; 8 GB/s achievable DRAM; 2 us torch-eager floor;
no calibration, so efficiency 1):

    copy  1 MFLOP, 4 MB   bound 4e6 / 10e9 = 400 us     forecast 2 us + 4e6 / 8e9 = 502 us   memory
    tiny  1 kFLOP, 4 kB   bound 4e3 / 10e9 = 0.4 us     forecast 2 us + 4e3 / 8e9 = 2.5 us   overhead (2 us >= 0.5 us)
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json

import numpy as np
import pytest

from roofline import Device, Op, Workload, analyze
from roofline.hardware.device import ComputeCeiling, MemoryCeiling, OverheadFloor


def device(achievable_compute: bool = False) -> Device:
    """100 GFLOP/s and 10 GB/s peak; DRAM sustains 8 GB/s (and fp32 vector 80 GFLOP/s when asked); 2 us a
    torch-eager op."""
    return dataclasses.replace(
        Device.simple("seed", "100 GFLOP/s", "10 GB/s"),
        achievable_compute=(ComputeCeiling("vector", "fp32", 80e9),) if achievable_compute else (),
        achievable_memory=(MemoryCeiling("DRAM", 8e9),), overhead=(OverheadFloor("torch-eager", 2e-6),))


def ops(name: str = "copy", measured: bool = False) -> Workload:
    m = {"measured_seconds": 1e-3} if measured else {}
    return Workload.from_ops([Op(name, flops=1e6, bytes_read=4e6, **m),
                              Op("tiny", flops=1e3, bytes_read=4e3, **({"measured_seconds": 5e-6} if measured else {}))],
                             title="two ops")


def table_row(text: str, first: str) -> list[str]:
    """The cells of the terminal table's row that starts with ``first``."""
    return next(line.split() for line in text.splitlines() if line.strip().startswith(first + " "))


def header(text: str) -> str:
    return next(line for line in text.splitlines() if line.strip().startswith("op "))


# -- the model's figures the renderers read (checked here once, by hand) -------------------------------------

def test_the_hand_figures():
    f = analyze(ops(), device(), forecast=True).forecast
    assert f is not None
    assert f.bound.tolist() == pytest.approx([400e-6, 0.4e-6])  # 4e6 / 10e9, 4e3 / 10e9
    assert f.time.tolist() == pytest.approx([502e-6, 2.5e-6])  # 2 us + 4e6 / 8e9, 2 us + 4e3 / 8e9
    assert f.verdict.tolist() == ["memory", "overhead"] and f.efficiency.tolist() == [1.0, 1.0]


# -- terminal -------------------------------------------------------------------------------------------------

def test_terminal_summary_and_op_columns(monkeypatch):
    from roofline.render.terminal import render

    monkeypatch.setenv("COLUMNS", "200")
    text = render(analyze(ops(), device(), forecast=True), color=False)
    # 502 + 2.5 = 504.5 us (3 digits: 505) beside 400 + 0.4 = 400.4 us; roof 400.4 / 504.5 = 79.4%, below roof
    # (100 + 0.1) / 504.5 = 19.8%, overhead 4 / 504.5 = 0.79%
    # no calibration: efficiency 1, so the forecast is the bound on the achievable 8 GB/s roof plus the floor
    assert ("forecast 505 µs beside the 400 µs bound (uncalibrated: forecast = bound on achievable roofs + "
            "torch-eager floor): roof 79%, below roof 20%, overhead 0.79%") in text
    assert ("forecast basis: the device's achievable roofs (its peaks where it has none), torch-eager overhead "
            "floor 2 µs per op; no calibration (efficiency 1)") in text
    assert "forecast note: device 'seed' has no calibration" in text  # the one note: on its own line
    assert "vs measured" not in text
    head = header(text)
    assert "forecast" in head and "fc verdict" in head and "fc/meas" not in head
    copy, tiny = table_row(text, "copy"), table_row(text, "tiny")
    assert "400 µs" in " ".join(copy) and "502 µs" in " ".join(copy) and "memory" in copy
    assert "2.5 µs" in " ".join(tiny) and "overhead" in tiny


def test_terminal_measured_analysis_gets_fc_over_measured(monkeypatch):
    from roofline.render.terminal import render

    monkeypatch.setenv("COLUMNS", "220")
    text = render(analyze(ops(measured=True), device(), forecast=True), color=False)
    assert "fc/meas" in header(text)
    assert "0.502" in table_row(text, "copy")  # 502 us forecast / 1 ms measured
    assert "0.5" in table_row(text, "tiny")  # 2.5 us / 5 us
    # per op: bound/measured 0.4 (copy) and 0.08 (tiny), forecast/measured 0.502 and 0.5: medians 0.24, 0.501
    assert ("forecast and bound vs measured: per op (median and quartiles of 2): bound/measured 0.24 (0.16..0.32), "
            "forecast/measured 0.50 (0.50..0.50)") in text


def test_terminal_keeps_the_forecast_columns_longest(monkeypatch):
    from roofline.render.terminal import render

    a = analyze(ops(measured=True), device(), forecast=True)
    monkeypatch.setenv("COLUMNS", "220")
    wide = header(render(a, color=False))
    assert all(c in wide for c in ("count", "kind", "forecast", "fc/meas", "fc verdict"))
    monkeypatch.setenv("COLUMNS", "120")
    narrow = render(a, color=False)
    head = header(narrow).split()
    # --forecast asked for the forecast: the bound's details (count, kind, attainable) go first, each named
    # under the table; FLOPs and bytes are then totals, as the times are
    assert "count" not in head and "kind" not in head and "attainable" not in head
    assert all(c in head for c in ("forecast", "fc/meas", "time", "share", "verdict")) and "total" in head
    assert any(line.strip().startswith("not shown at 120 columns: kind, count, attainable")
               for line in narrow.splitlines())
    assert max(len(line.rstrip()) for line in narrow.splitlines()) <= 120


def test_terminal_notes_are_one_line_unless_verbose(monkeypatch):
    from roofline.render.terminal import render

    monkeypatch.setenv("COLUMNS", "200")
    bare = Device.simple("bare", "100 GFLOP/s", "10 GB/s")  # no calibration, no floor, no sustained figures
    a = analyze(ops(), bare, forecast=True)
    assert a.forecast is not None and len(a.forecast.notes) == 3
    text = render(a, color=False)
    assert "forecast notes: 3 (--verbose lists them" in text and "forecast note: " not in text
    assert "no torch-eager overhead floor" in text
    verbose = render(a, color=False, verbose=True)
    assert verbose.count("forecast note: ") == 3


def test_no_forecast_no_forecast_output(monkeypatch):
    from roofline.render.export import to_csv
    from roofline.render.html import figure, render_html
    from roofline.render.terminal import render

    monkeypatch.setenv("COLUMNS", "220")
    a = analyze(ops(measured=True), device())
    assert a.forecast is None
    text = render(a, color=False)
    assert "forecast" not in text and "fc verdict" not in text and "fc/meas" not in text
    page = render_html(a)
    assert ">forecast<" not in page and "fc verdict" not in page and "forecast:" not in page
    assert "forecast_seconds" not in to_csv(a).splitlines()[0]
    # the achievable roofs are the device's: drawn whether or not a forecast was asked for
    assert any(t.get("legendgroup") == "achievable" for t in figure(a)["data"])


def test_markup_in_a_forecast_row_is_shown_as_text(monkeypatch):
    from roofline.render.terminal import render

    monkeypatch.setenv("COLUMNS", "220")
    hostile = "[bold]x[/bold]<b>&"
    text = render(analyze(ops(hostile), device(), forecast=True), color=False)
    row = next(line for line in text.splitlines() if "502 µs" in line)
    assert hostile in row  # rich markup printed, not applied


# -- HTML -----------------------------------------------------------------------------------------------------

def test_html_summary_table_hover_and_caption():
    pytest.importorskip("plotly")
    from roofline.render.html import figure, render_html

    hostile = "<img src=x onerror=alert(1)>"
    a = analyze(ops(hostile, measured=True), device(), forecast=True)
    page = render_html(a)
    assert ("<li>forecast 505 µs beside the 400 µs bound (uncalibrated: forecast = bound on achievable roofs + "
            "torch-eager floor): roof 79%, below roof 20%, overhead 0.79%</li>") in page
    assert "<li>forecast basis: the device&#x27;s achievable roofs" in page
    assert "<li>forecast note: device &#x27;seed&#x27; has no calibration" in page
    assert "forecast and bound vs measured: per op" in page
    table = page[page.index('<table class="sortable ops"'):]
    table = table[:table.index("</table>")]
    assert all(f">{h}</th>" in table for h in ("forecast", "fc verdict", "fc/meas"))
    row = next(r for r in table.split("<tr") if "onerror" in r)
    # the forecast row's name escaped; its forecast (502 us), verdict and forecast / measured (0.502)
    assert "&lt;img src=x onerror=alert(1)&gt;" in row and "<img" not in row
    assert ">502 µs</td>" in row and "<td>memory</td>" in row and ">0.502</td>" in row
    assert "<img src=x" not in page
    # hover: the forecast beside the roofline time, escaped (plotly renders hover text as HTML)
    hovers = [h for t in figure(a)["data"] for h in t.get("hovertext", []) if isinstance(t.get("hovertext"), list)]
    copy = next(h for h in hovers if "onerror" in h and "(predicted)" in h)
    assert "&lt;img" in copy and "forecast: 502 µs (memory; efficiency 100%), forecast/measured 0.502" in copy
    # the caption names the achievable figures; a device without any says nothing of them
    assert 'Dashed lines labelled &quot;achievable&quot; are the device&#x27;s sustained figures (DRAM 8 GB/s)' in page
    bare = render_html(analyze(ops(), Device.simple("bare", "100 GFLOP/s", "10 GB/s"), forecast=True))
    assert "Dashed lines labelled" not in bare


def test_plotly_figure_draws_achievable_roofs_dashed():
    pytest.importorskip("plotly")
    from roofline.render.html import figure

    a = analyze(ops(), device(achievable_compute=True), forecast=True)
    fig = figure(a)
    ach = {t["name"]: t for t in fig["data"] if t.get("legendgroup") == "achievable"}
    assert set(ach) == {"fp32 vector achievable 80 GFLOP/s", "DRAM achievable 8 GB/s"}
    roof, slope = ach["fp32 vector achievable 80 GFLOP/s"], ach["DRAM achievable 8 GB/s"]
    assert all(t["line"]["dash"] == "dash" for t in ach.values())
    # they meet where the achievable roofs meet: 80 GFLOP/s / 8 GB/s = 10 FLOP/B
    assert roof["y"] == [80e9, 80e9] and roof["x"][0] == pytest.approx(10)
    assert slope["x"][1] == pytest.approx(10) and slope["y"] == pytest.approx([x * 8e9 for x in slope["x"]])
    # the peak roofs stay, one trace each; every button restyles every trace
    assert sum(t.get("legendgroup") == "compute" for t in fig["data"]) == 1
    assert sum(t.get("legendgroup") == "memory" for t in fig["data"]) == 1
    buttons = fig["layout"]["updatemenus"][0]["buttons"]
    assert [len(b["args"][0]["visible"]) for b in buttons] == [len(fig["data"])] * 3


# -- matplotlib chart -----------------------------------------------------------------------------------------

def chart_texts(fig) -> list[str]:
    ax = fig.axes[0]
    legend = ax.get_legend()
    return [t.get_text() for t in ax.texts] + ([t.get_text() for t in legend.get_texts()] if legend else [])


def test_chart_draws_achievable_roofs_dashed_and_labelled():
    pytest.importorskip("matplotlib")
    from roofline.render.chart import plot

    fig = plot(analyze(ops(), device(achievable_compute=True), forecast=True))
    ax = fig.axes[0]
    lines = [ln for ln in ax.get_lines() if ln.get_gid() == "achievable"]
    assert len(lines) == 2 and all(ln.get_linestyle() == "--" for ln in lines)
    flat = next(ln for ln in lines if len(ln.get_ydata()) == 2)
    assert list(flat.get_ydata()) == pytest.approx([80.0, 80.0])  # in GFLOP/s, the axis' scale
    texts = chart_texts(fig)
    assert "fp32 vector achievable 80 GFLOP/s" in texts and "DRAM achievable 8 GB/s" in texts
    # the peak roofs keep their own labels
    assert "fp32 vector 100 GFLOP/s" in texts and "DRAM 10 GB/s" in texts


def test_chart_with_close_achievable_roofs_keeps_labels_clear():
    """An H100-like device (catalog figures): achievable roofs a few pixels under the peaks; no label overlaps
    another or is crossed by any line, the achievable ones included, and every achievable roof drawn is named."""
    pytest.importorskip("matplotlib")
    from test_chart_pixels import check_chart, segment_crosses_box  # the pixel checks, independent of the placer

    from roofline import from_llm
    from roofline.catalog import get_device
    from roofline.core.units import format_bandwidth, format_flops
    from roofline.render.chart import achievable_roofs, plot

    dev = get_device("h100")
    if not dev.achievable_memory:
        dev = dataclasses.replace(dev, achievable_memory=(MemoryCeiling("HBM", 2.9e12),))
    a = analyze(from_llm("llama-2-7b", phase="decode"), dev, forecast=True)
    fig = plot(a)
    check_chart(fig, dev, a)
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    from matplotlib.text import Text

    boxes = [(t.get_text(), Text.get_window_extent(t, renderer)) for t in ax.texts if t.get_visible()]
    for ln in (ln for ln in ax.get_lines() if ln.get_gid() == "achievable"):
        xy = ln.get_transform().transform(np.asarray(ln.get_xydata(), dtype=float))
        for seg in np.hstack([xy[:-1], xy[1:]]):
            for text, box in boxes:
                assert not segment_crosses_box(seg, box), f"an achievable line crosses {text!r}"
    # drawn: the ops' roofs and the fastest in their precisions (bf16 and fp32: bf16 matrix), never fp8
    used = {c.precision for c in a.ceilings}
    drawn = {c.key for c in a.ceilings} | {max((c for c in dev.compute if c.precision in used),
                                               key=lambda c: c.flops).key}
    assert "fp8" not in used and not any("fp8" in t for t in chart_texts(fig))
    compute, memory = achievable_roofs(dev, [c for c in dev.compute if c.key in drawn], list(dev.memory))
    texts = chart_texts(fig)
    for _, c in compute:
        assert any(c.label in t and f"achievable {format_flops(c.flops)}" in t for t in texts), (c, texts)
    for _, m in memory:
        assert f"{m.level} achievable {format_bandwidth(m.bandwidth)}" in texts


# -- CSV and JSON ---------------------------------------------------------------------------------------------

def test_csv_has_the_forecast_columns():
    from roofline.render.export import to_csv

    rows = list(csv.DictReader(io.StringIO(to_csv(analyze(ops("=cmd|' /C calc'!A0"), device(), forecast=True)))))
    copy, tiny = rows  # longest bound first
    assert float(copy["time"]) == pytest.approx(400e-6) and float(copy["forecast_seconds"]) == pytest.approx(502e-6)
    assert copy["forecast_verdict"] == "memory" and float(copy["forecast_efficiency"]) == 1.0
    assert copy["name"].startswith("'=")  # a formula-like name stays text
    assert float(tiny["forecast_seconds"]) == pytest.approx(2.5e-6) and tiny["forecast_verdict"] == "overhead"


def test_json_export_keeps_the_forecast_and_reloads_it():
    from roofline.engine.analysis import Analysis
    from roofline.render import renderer_for

    a = analyze(ops(), device(), forecast=True)
    d = json.loads(renderer_for("json").render(a))
    assert d["forecast"]["time"] == pytest.approx([502e-6, 2.5e-6]) and d["forecast"]["verdict"] == ["memory", "overhead"]
    again = Analysis.from_dict(d)
    assert again.forecast is not None and again.forecast.time.tolist() == pytest.approx([502e-6, 2.5e-6])
