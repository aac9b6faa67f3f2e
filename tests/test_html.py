"""The HTML report: renders in headless Chromium (chart, table, no console errors), escapes hostile names, works offline."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from roofline import Device, Op, Workload, analyze, get_device
from roofline.core.errors import RooflineError

pytest.importorskip("plotly")

HOSTILE = "<img src=x onerror=alert(1)>"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or (
    "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
# under CI=true a missing browser fails the run (.ci/run installs it); elsewhere the test skips
needs_chromium = pytest.mark.skipif(CHROMIUM is None and os.environ.get("CI") != "true",
                                    reason="chromium is not installed")


def hostile_analysis():
    ops = [Op(HOSTILE, kind="matmul", flops=2e9, bytes_read=3e7, bytes_written=1e6, weight_bytes=2e7,
              group="layer1.<script>alert(2)</script>", module_type="Linear", precision="bf16", unit="matrix",
              measured_seconds=1e-4),
           Op("relu", kind="elementwise", flops=1e6, bytes_read=4e6, bytes_written=4e6, group="layer1.act"),
           Op("add", kind="elementwise", flops=1e6, bytes_read=8e6, bytes_written=4e6, group="layer1"),
           Op("copy", kind="memory", bytes_read=4e6, bytes_written=4e6, group="layer1")]
    w = Workload.from_ops(ops, title="hostile </title><script>alert(3)</script>",
                          assumptions=["an <b>assumption</b>"])
    return analyze(w, get_device("h100"))


class DomScan(HTMLParser):
    """Collects element tags, attributes and text of a dumped DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []
        self.svg_in_chart = 0
        self.text: list[str] = []
        self.chart_depth: int | None = None

    def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
        d = dict(attrs)
        self.tags.append((tag, d))
        if d.get("id") == "chart0":
            self.chart_depth = len(self.stack)
        if tag == "svg" and self.chart_depth is not None:
            self.svg_in_chart += 1
        if tag not in ("img", "br", "meta", "input", "path", "rect", "line", "stop", "use"):
            self.stack.append(tag)

    def handle_endtag(self, tag):  # type: ignore[no-untyped-def]
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()
            if self.chart_depth is not None and len(self.stack) <= self.chart_depth:
                self.chart_depth = None

    def handle_data(self, data):  # type: ignore[no-untyped-def]
        self.text.append(data)


def run_chromium(url: str, tmp_path: Path, *extra: str) -> tuple[str, list[str]]:
    """(dumped DOM, console lines) of ``url`` in headless Chromium with no network."""
    args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
            "--virtual-time-budget=3000", *extra, "--dump-dom", url]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    console = [line for line in p.stderr.splitlines() if ":CONSOLE" in line]
    return p.stdout, console


@needs_chromium
def test_report_renders_in_chromium_with_no_errors_and_hostile_names_as_text(tmp_path):
    from roofline.render.html import save_html

    page = tmp_path / "report.html"
    save_html(hostile_analysis(), page)
    dom, console = run_chromium(page.as_uri(), tmp_path)
    assert console == []  # no console errors (nor any other console output)
    scan = DomScan()
    scan.feed(dom)
    # the chart rendered: plotly drew svg inside the chart div, with one point per op that has FLOPs
    assert scan.svg_in_chart >= 1
    assert "scatterlayer" in dom and dom.count('class="point"') >= 3  # 3 predicted ops with FLOPs > 0 (+1 measured)
    # the table rendered: one row per op
    rows = re.findall(r'<table class="sortable ops">.*?</table>', dom, re.S)
    assert rows and rows[0].count("<tr") == 1 + 4  # header + 4 ops
    # the hostile name is text, never an element; nothing got an onerror handler; no injected script ran
    assert not any(tag == "img" for tag, _ in scan.tags)
    assert not any("onerror" in attrs for _, attrs in scan.tags)
    text = "".join(scan.text)
    assert HOSTILE in text
    assert "<script>alert(2)</script>" in text  # the module path, as text
    scripts = [t for t, _ in scan.tags if t == "script"]
    assert len(scripts) == 3  # plotly.js, the figures, the table sorter: nothing injected


@needs_chromium
def test_table_sorts_on_header_click(tmp_path):
    from roofline.render.html import render_html

    page = render_html(hostile_analysis())
    # a test-only script clicks the 'FLOPs' header twice (ascending, then descending) and records the op order
    probe = ("<script>var th=[].slice.call(document.querySelectorAll('table.ops th')).filter(function(h){"
             "return h.textContent==='FLOPs'})[0];th.click();var up=[].map.call(document.querySelectorAll("
             "'table.ops tbody tr'),function(r){return r.cells[1].textContent});th.click();var down=[].map.call("
             "document.querySelectorAll('table.ops tbody tr'),function(r){return r.cells[1].textContent});"
             "document.body.setAttribute('data-probe',JSON.stringify([up,down]));</script>")
    path = tmp_path / "sort.html"
    path.write_text(page.replace("</body>", probe + "</body>"), encoding="utf-8")
    dom, console = run_chromium(path.as_uri(), tmp_path)
    assert console == []
    m = re.search(r'data-probe="([^"]*)"', dom)
    assert m
    import html as htmlmod

    up, down = json.loads(htmlmod.unescape(m.group(1)))
    # FLOPs: copy 0 < relu 1e6 = add 1e6 (stable: table order, i.e. by time: add before relu) < hostile 2e9
    assert up[0] == "copy" and up[-1] == HOSTILE
    assert down[0] == HOSTILE and down[-1] == "copy"


def test_report_is_self_contained_and_escaped():
    import plotly.offline

    from roofline.render.html import render_html

    full = render_html(hostile_analysis())
    js = plotly.offline.get_plotlyjs()
    assert js in full  # plotly.js is inline: no network needed
    page = full.replace(js, "")
    assert "<script src" not in page and "<link" not in page and "@import" not in page  # nothing else to fetch
    assert HOSTILE not in page  # neither raw in HTML nor in the JSON (where '<' is \u003c)
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "</title><script>alert(3)" not in page
    # the figure JSON cannot close its <script>: no '</' inside it
    figs = page.split("var FIG=", 1)[1].split(";Plotly.newPlot", 1)[0]
    assert "</" not in figs and "<" not in figs


def test_figure_traces_toggle_ceilings_and_levels():
    from roofline.render.html import figure

    dev = get_device("h100")
    a = hostile_analysis()
    fig = figure(a)
    names = [t["name"] for t in fig["data"]]
    # one trace per compute ceiling and per memory level, each toggled from the legend
    assert sum(1 for t in fig["data"] if t.get("legendgroup") == "compute") == len(dev.compute)
    assert sum(1 for t in fig["data"] if t.get("legendgroup") == "memory") == len(dev.memory)
    # the used roofs (bf16 matrix for the matmul, fp32 vector for the elementwise ops) and the fastest in
    # their precisions (bf16 matrix again) are shown; the others (fp8, int8, ...: precisions no op uses)
    # start hidden ('legendonly')
    shown = {t["name"].split(" ")[0] + " " + t["name"].split(" ")[1] for t in fig["data"]
             if t.get("legendgroup") == "compute" and t.get("visible") is True}
    assert shown == {"bf16 matrix", "fp32 vector"}
    # their achievable (dashed) figures follow them: the H100's fp8 achievable roof (1.403 PFLOP/s, above the
    # bf16 peak) starts hidden too, the bf16 one (794.5 TFLOP/s) is shown
    ach = {t["name"].split(" achievable")[0]: t.get("visible", True) for t in fig["data"]
           if t.get("legendgroup") == "achievable" and t["name"].split(" ")[1] == "matrix"}
    assert ach["bf16 matrix"] is True and ach["fp8 matrix"] == "legendonly"
    buttons = fig["layout"]["updatemenus"][0]["buttons"]
    assert [len(b["args"][0]["visible"]) for b in buttons] == [len(fig["data"])] * 3
    # predicted and measured joined: one line segment (2 points + gap) per measured op
    join = [t for t in fig["data"] if t["name"] == "predicted → measured"][0]
    assert join["x"] == [a.intensity[0], a.intensity[0], None]
    assert join["y"][:2] == [a.attainable_flops[0], a.achieved_flops[0]]
    assert "measured" in names


def test_notebook_repr_has_table_and_chart_and_dataframe_export():
    a = hostile_analysis()
    page = a._repr_html_()
    assert "<table" in page and "<svg" in page  # Jupyter: table + chart
    from roofline.render.html import notebook_html

    nb = notebook_html(a)
    assert "<svg" in nb and "<table" in nb and HOSTILE not in nb
    pd = pytest.importorskip("pandas")
    from roofline.render.export import to_dataframe

    df = to_dataframe(a)
    assert isinstance(df, pd.DataFrame) and len(df) == 4
    # sorted by time, longest first; the hostile name survives as data
    assert df["name"].iloc[0] == HOSTILE
    assert list(df["total_time"]) == sorted(df["total_time"], reverse=True)
    # efficiency = roofline time / measured: 2e9 FLOPs on 989.4e12 bf16 matrix vs 31e6 B on 3.35e12 B/s -> memory
    t = max(2e9 / 989.4e12, 31e6 / 3.35e12)
    assert math.isclose(df["efficiency"].iloc[0], t / 1e-4, rel_tol=1e-9)


# -- bad input ------------------------------------------------------------------------
def test_unknown_extension_lists_the_valid_ones(tmp_path):
    from roofline.render import check_output_path, renderer_for

    with pytest.raises(RooflineError, match=r"unknown output format '\.xyz'; valid: .png, .svg, .pdf, .html"):
        renderer_for(tmp_path / "out.xyz")
    with pytest.raises(RooflineError, match="valid:"):
        check_output_path(tmp_path / "noext")


def test_cli_unknown_chart_extension_and_unwritable_output(tmp_path, capsys):
    from roofline.cli import main

    saved = tmp_path / "a.json"
    hostile_analysis().save(saved)
    assert main(["report", str(saved), "-o", str(tmp_path / "chart.bmp")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("roofline: error:") and ".png, .svg, .pdf" in err and err.count("\n") == 1
    assert main(["report", str(saved), "--html", str(tmp_path / "r.pdf")]) == 2
    assert ".html" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["report", str(saved), "--html", str(blocker / "sub" / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "cannot write" in err and err.count("\n") == 1
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        assert main(["report", str(saved), "--html", str(ro / "r.html")]) == 2
        assert "not writable" in capsys.readouterr().err


def test_report_rerenders_a_saved_analysis_identically(tmp_path, capsys):
    from roofline.cli import main
    from roofline.render.html import render_html
    from roofline.words.advice import advise
    from roofline.words.summary import summarize

    a = hostile_analysis()
    saved = tmp_path / "a.json"
    a.save(saved)
    out = tmp_path / "r.html"
    assert main(["report", str(saved), "--html", str(out), "--advice"]) == 0
    text = capsys.readouterr().out
    assert "advice:" in text and f"html: {out}" in text
    strip = lambda s: re.sub(r"generated by roofline \S+ on [^;]+;", "", s)  # noqa: E731
    from roofline.engine.analysis import Analysis

    again = Analysis.load(saved)  # --advice: levers on other catalog devices too
    assert strip(out.read_text()) == strip(render_html(again, f"{a.workload.title} on {a.device.name}",
                                                       summary=summarize(again, advice=advise(again))))


def test_saved_analysis_of_another_schema_version(tmp_path, capsys):
    from roofline.cli import main

    data = hostile_analysis().to_dict()
    data["schema"] = "roofline.analysis/3"
    p = tmp_path / "future.json"
    p.write_text(json.dumps(data))
    assert main(["report", str(p), "--html", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert f"{p}: schema: expected 'roofline.analysis/2' (or an older roofline.analysis/1), got 'roofline.analysis/3'" in err
    assert not (tmp_path / "r.html").exists()


def test_summary_states_the_binding_roof_and_the_measured_ratio():
    from roofline.render.html import render_html

    a = analyze(Workload.from_ops([Op("app", flops=0.8e9, bytes_read=4e9, measured_seconds=1.0)]),
                Device.simple("textbook", "100 GFLOP/s", "10 GB/s"))
    page = render_html(a)
    # 4e9 B / 10 GB/s = 0.4 s against 0.8e9 / 100e9 = 8 ms: memory-bound, all the time on DRAM
    assert "binding roof: DRAM 10 GB/s (memory, 100% of the time)" in page
    # measured: 0.4 s roofline vs 1 s measured
    assert "measured: 1 of 1 ops; their roofline time 400 ms vs 1 s measured (roofline / measured = 0.4)" in page
    assert "<h3>Advice</h3>" not in page  # the renderer computes no advice


def test_llm_report_carries_the_llm_facts_the_terminal_prints():
    from roofline.core.units import format_seconds
    from roofline.frontends.llm import from_llm
    from roofline.render.html import render_html
    from roofline.words.llm_report import report as llm_report

    a = analyze(from_llm("llama-3-8b", phase="decode", batch=8, context=1024), get_device("h100"))
    page = render_html(a)
    r = llm_report(a)
    assert "<h3>LLM inference</h3>" in page
    assert f"time per token {format_seconds(r.tpot)}" in re.sub(r"\s+", " ", page)
    assert f"ridge batch {r.ridge_batch}" in page and "largest batch" in page
    assert "LLM inference" not in render_html(hostile_analysis())


def test_report_of_a_saved_llm_analysis_prints_the_llm_facts(tmp_path, capsys):
    from roofline.cli import main
    from roofline.frontends.llm import from_llm

    saved = tmp_path / "llm.json"
    analyze(from_llm("llama-2-7b", phase="decode", context=1024), get_device("a100")).save(saved)
    assert main(["report", str(saved)]) == 0
    out = capsys.readouterr().out
    # (13.21 GB of weights read + 0.54 GB KV cache) / 2.039 TB/s = 6.74 ms, + the small activations: 6.75 ms, as
    # `roofline llm` prints (fused attention, the default; unfused adds the 32 x 32 x 1,024 scores: 6.76 ms)
    assert "time per token      6.75 ms" in out and "largest batch" in out
