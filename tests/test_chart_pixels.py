"""Chart labels measured in pixels on rendered charts: no two text boxes overlap, no roof line (nor ridge line,
measured-to-predicted line or leader line) crosses a label, every roof drawn is named on its line or in the
legend, and the top ops by time are labelled.  Expectations come from the data (devices, ops), not from the
chart code."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.text import Text  # noqa: E402

from roofline import Op, Workload, analyze  # noqa: E402
from roofline.catalog import get_device  # noqa: E402
from roofline.core.units import format_bandwidth, format_flops  # noqa: E402
from roofline.hardware.bench_facts import BenchFacts, ErtCurve, SpecRoof  # noqa: E402
from roofline.hardware.device import ComputeCeiling, Device, MemoryCeiling, Provenance  # noqa: E402

TOP = 5  # the top ops by time that must be labelled
LINE_GIDS = ("roof", "achievable", "ridge-line", "connector", "leader")  # lines no label may be crossed by


# -- building the charts -------------------------------------------------------------------------------------

def measured_cpu(ert: bool = True) -> Device:
    """A measured CPU with fp32/fp64 vector and matrix roofs (and a bf16 one) within a factor 2.4 of each
    other, two theoretical roofs among them, and L1/L2/L3/DRAM slopes (L3 and DRAM 0.13 decades apart)."""
    prov = Provenance(kind="measured", source="roofline bench")
    curve = ErtCurve((1, 2, 8), (1 / 16, 2 / 16, 8 / 16), (2.2e9, 4.1e9, 15e9), ((0.0, 0.0),) * 3, 1e9, 2,
                     (2.26e9, 4.5e9, 18e9)) if ert else None
    return Device("synthetic cpu", kind="cpu", compute=(
        ComputeCeiling("vector", "fp32", 322.7e9, prov), ComputeCeiling("matrix", "fp32", 252e9, prov),
        ComputeCeiling("vector", "fp64", 161e9, prov), ComputeCeiling("matrix", "fp64", 135.3e9, prov),
        ComputeCeiling("matrix", "bf16", 290e9, prov)),
        memory=(MemoryCeiling("L1", 1.2e12, 48 * 2**10, prov), MemoryCeiling("L2", 178.4e9, 2 * 2**20, prov),
                MemoryCeiling("L3", 49.11e9, 32 * 2**20, prov), MemoryCeiling("DRAM", 36.13e9, None, prov)),
        bench=BenchFacts(1, "synthetic", spec=(SpecRoof("vector", "fp32", 358.4e9, "2 x 2.8 GHz x ..."),
                                                SpecRoof("vector", "fp64", 179.2e9, "2 x 2.8 GHz x ...")),
                         ert=curve))


def cnn_measured() -> Workload:
    """A small CNN's ops with measured times (predicted and measured points, joined by lines)."""
    ops = [("conv1.convolution", "conv", 2.4e8, 3.2e7, 0.9e-2), ("conv2.convolution", "conv", 9.4e8, 3.9e7, 3.1e-2),
           ("bn1.native_batch_norm", "norm", 4e6, 8e6, 2.7e-3), ("bn2.native_batch_norm", "norm", 2e6, 4e6, 1.4e-3),
           ("relu", "elementwise", 1e6, 8e6, 5e-3), ("relu_1", "elementwise", 5e5, 4e6, 2.6e-3),
           ("pool.max_pool2d_with_indices", "reduction", 1.2e6, 8e6, 1.2e-2),
           ("fc1.addmm", "matmul", 1.6e8, 2.1e7, 9.5e-3), ("fc2.addmm", "matmul", 1.3e6, 4.2e5, 7e-4)]
    return Workload.from_ops([Op(n, kind=k, flops=f, bytes_read=b, precision="fp32",
                                 unit="matrix" if k in ("conv", "matmul") else "vector", measured_seconds=t)
                              for n, k, f, b, t in ops], title="small CNN (16x3x32x32, fp32)")


def llm_decode() -> Workload:
    from roofline import from_llm

    return from_llm("llama-2-7b", phase="decode")


def bench_figure(device: Device, tmp_path, monkeypatch):
    """The figure ``render.bench.plot_roofline`` renders (caught on its way to the file)."""
    from roofline.render import chart
    from roofline.render.bench import plot_roofline

    caught = []
    original = chart.figure_bytes

    def catch(fig, fmt="png"):
        caught.append(fig)
        return original(fig, fmt)

    monkeypatch.setattr(chart, "figure_bytes", catch)
    plot_roofline(device, tmp_path / "roofline.png")
    assert (tmp_path / "roofline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (fig,) = caught
    return fig


# -- what the data says must be on the chart ----------------------------------------------------------------

def drawn_ceilings(device: Device, analysis=None) -> list[ComputeCeiling]:
    """The compute roofs a chart draws: every one of a bare device; otherwise the ops' ones and the fastest
    in the precisions the ops use (no roof in a precision no op uses)."""
    if analysis is None:
        return list(device.compute)
    used = {analysis.ceilings[j].key: analysis.ceilings[j] for j in np.unique(analysis.ceiling_index)}
    precisions = {c.precision for c in used.values()}
    fastest = max((c for c in device.compute if c.precision in precisions), key=lambda c: c.flops)
    used.setdefault(fastest.key, fastest)
    return list(used.values())


def roof_names(device: Device, analysis=None) -> list[tuple[str, ...]]:
    """Per roof drawn, the words its label must hold."""
    ceilings = drawn_ceilings(device, analysis)
    names = [(c.label, format_flops(c.flops)) for c in ceilings]
    precisions = {c.precision for c in ceilings}
    if device.bench is not None:
        names += [(f"{r.precision} {r.unit}", format_flops(r.flops), "theoretical") for r in device.bench.spec
                  if r.precision in precisions]
    names += [(m.level, format_bandwidth(m.bandwidth)) for m in device.memory]
    return names


def top_ops(analysis, n: int = TOP) -> list[str]:
    """The names of the ``n`` longest ops drawn (ops with FLOPs), each name once, as the chart writes them."""
    w = analysis.workload
    out: list[str] = []
    for i in analysis.order():
        if w.columns["flops"][i] <= 0:
            continue
        name, group = w.strings("name", i), w.strings("group", i)
        label = name if not group or group.endswith(name) else f"{group.split('.')[-1]}.{name}"
        if label not in out:
            out.append(label)
        if len(out) == n:
            break
    return out


# -- what is on the rendered chart ---------------------------------------------------------------------------

def rendered(fig):
    """Draw ``fig``; its visible texts with their pixel boxes, and the pixel segments of its lines by gid."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    texts = []
    for t in [*ax.texts, ax.title, ax.xaxis.label, ax.yaxis.label]:
        if t.get_visible() and t.get_text().strip():
            texts.append(("chart" if t in ax.texts else "frame", t, Text.get_window_extent(t, renderer)))
    legend = ax.get_legend()
    if legend is not None:
        for t in [*legend.get_texts(), legend.get_title()]:
            if t.get_visible() and t.get_text().strip():
                texts.append(("legend", t, t.get_window_extent(renderer)))
    for axis, (lo, hi) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        for tick in axis.get_major_ticks():
            if lo <= tick.get_loc() <= hi and tick.label1.get_visible() and tick.label1.get_text().strip():
                texts.append(("tick", tick.label1, tick.label1.get_window_extent(renderer)))
    lines: dict[str, list[np.ndarray]] = {}
    for line in ax.get_lines():
        if line.get_gid() in LINE_GIDS:
            with np.errstate(all="ignore"):
                xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
            xy = xy[np.isfinite(xy).all(axis=1)]
            lines.setdefault(line.get_gid(), []).append(np.hstack([xy[:-1], xy[1:]]))
    return ax, renderer, texts, lines


def segment_crosses_box(seg, box, slack: float = 0.5) -> bool:
    """Whether a segment passes through the inside of a box (touching allowed): Liang-Barsky clipping."""
    x0, y0, x1, y1 = seg
    bx0, by0, bx1, by1 = box.x0 + slack, box.y0 + slack, box.x1 - slack, box.y1 - slack
    if bx0 >= bx1 or by0 >= by1:
        return False
    dx, dy = x1 - x0, y1 - y0
    t0, t1 = 0.0, 1.0
    for p, q in ((-dx, x0 - bx0), (dx, bx1 - x0), (-dy, y0 - by0), (dy, by1 - y0)):
        if p == 0:
            if q < 0:
                return False
            continue
        r = q / p
        if p < 0:
            t0 = max(t0, r)
        else:
            t1 = min(t1, r)
        if t0 >= t1:
            return False
    return True


def boxes_overlap(a, b, slack: float = 0.5) -> bool:
    """Overlap by more than ``slack`` pixels each way (touching allowed)."""
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > slack) and (min(a.y1, b.y1) - max(a.y0, b.y0) > slack)


def check_chart(fig, device: Device, analysis=None, *, expect_ops: int = TOP) -> dict[str, int]:
    ax, renderer, texts, lines = rendered(fig)
    # no two text boxes overlap (chart labels, legend, title, axis labels, tick labels)
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            (ka, ta, a), (kb, tb, b) = texts[i], texts[j]
            assert not boxes_overlap(a, b), f"{ka} {ta.get_text()!r} overlaps {kb} {tb.get_text()!r}"
    # no roof, slope, ridge, measured-to-predicted or leader line crosses a label on the chart
    segments = [(gid, seg) for gid, parts in lines.items() for part in parts for seg in part]
    assert lines.get("roof"), "no roof drawn"
    chart_labels = [(t, box) for kind, t, box in texts if kind == "chart"]
    for t, box in chart_labels:
        for gid, seg in segments:
            assert not segment_crosses_box(seg, box), f"a {gid} line crosses the label {t.get_text()!r}"
    # labels on the chart lie inside the axes (nothing clipped)
    frame = ax.get_window_extent(renderer)
    for t, box in chart_labels:
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1, t.get_text()
    # the legend hides what runs behind it: opaque, above every line
    legend = ax.get_legend()
    if legend is not None:
        assert legend.get_frame().get_alpha() in (None, 1.0) and legend.get_zorder() > max(
            ln.get_zorder() for ln in ax.get_lines())
    # every roof drawn is named, on its line or in the legend; one line per roof
    named = [t.get_text() for kind, t, _ in texts if kind in ("chart", "legend")]
    expected = roof_names(device, analysis)
    for words in expected:
        assert any(all(w in text for w in words) for text in named), f"roof {words} not labelled: {named}"
    assert len(lines["roof"]) == len(expected)
    assert any(text.startswith("ridge ") for text in named)
    # the top ops by time are named: a label of their own on the chart, else in the caption (under the x axis)
    caption = ax.get_xlabel()
    if analysis is not None:
        for name in top_ops(analysis, expect_ops):
            assert any(text == name for text in named) or f"{name} (" in caption, f"top op {name!r} not named"
    # the legend names kinds, measured/predicted and roofs, never an op
    if legend is not None:
        ops = {analysis.workload.strings("name", i) for i in range(len(analysis.workload))} if analysis else set()
        entries = [t.get_text() for t in legend.get_texts()]
        assert not any(e in ops or e in top_ops(analysis, 50) for e in entries if analysis is not None), entries
        # inside the axes it covers no marker and no roof, slope, ridge or measured-to-predicted line
        box = legend.get_window_extent(renderer)
        if box.x1 <= frame.x1 + 0.5:
            for gid, seg in segments:
                assert not segment_crosses_box(seg, box), f"the legend covers a {gid} line"
            for x, y, r in markers(ax, analysis, fig):
                assert not (box.x0 < x + r and x - r < box.x1 and box.y0 < y + r and y - r < box.y1), "legend on a point"
    return {"chart": len(chart_labels), "legend": sum(kind == "legend" for kind, _, _ in texts)}


def markers(ax, analysis, fig):
    """Every drawn point's centre and marker radius in pixels (from the scatter collections)."""
    out = []
    for coll in ax.collections:
        offsets = coll.get_offset_transform().transform(coll.get_offsets())
        sizes = coll.get_sizes()
        for k, (x, y) in enumerate(offsets):
            if np.isfinite(x) and np.isfinite(y):
                size = sizes[k % len(sizes)] if len(sizes) else 36.0
                out.append((x, y, np.sqrt(size) / 2 * fig.dpi / 72))
    return out


# -- the four charts -----------------------------------------------------------------------------------------

def test_device_chart_h100():
    """``roofline device h100 -o x.png``: every compute roof of the device and its HBM slope."""
    from roofline.render.chart import plot

    dev = get_device("h100")
    fig = plot(dev)  # what save_chart(dev, path), the command's call, renders
    counts = check_chart(fig, dev)
    assert counts["chart"] >= 3


def test_llm_decode_chart_h100():
    """An LLM decode workload: its ops cluster at ~1 FLOP/B on the HBM slope."""
    from roofline.render.chart import plot

    dev = get_device("h100")
    a = analyze(llm_decode(), dev)
    check_chart(plot(a), dev, a)


def test_llm_decode_chart_on_a_cpu_with_cache_slopes():
    from roofline.render.chart import plot

    dev = measured_cpu(ert=False)
    a = analyze(llm_decode(), dev)
    check_chart(plot(a), dev, a)


def test_cnn_chart_with_measured_points():
    from roofline.render.chart import plot

    dev = measured_cpu(ert=False)
    a = analyze(cnn_measured(), dev)
    assert np.isfinite(a.achieved_flops).all()
    fig = plot(a)
    check_chart(fig, dev, a)
    # measured points are drawn, each joined to its prediction
    _, _, _, lines = rendered(fig)
    assert len(lines["connector"]) == len(a.workload)


def test_bench_chart_with_close_roofs(tmp_path, monkeypatch):
    """``roofline bench`` 's measured roofline: five compute roofs and two theoretical ones within a factor 2.7,
    four memory slopes."""
    dev = measured_cpu()
    fig = bench_figure(dev, tmp_path, monkeypatch)
    check_chart(fig, dev)


def test_many_ops_keep_the_top_ones_labelled():
    """300 ops spread over the chart: labels never collide; the top ones are all named."""
    from roofline.render.chart import plot

    rng = np.random.default_rng(1)
    ops = [Op(f"op{i}", kind=("matmul", "elementwise", "norm")[i % 3], flops=float(rng.lognormal(20, 3)),
              bytes_read=float(rng.lognormal(18, 2)), precision="bf16", unit="matrix" if i % 3 == 0 else "vector")
           for i in range(300)]
    dev = get_device("a100")
    a = analyze(Workload.from_ops(ops), dev)
    check_chart(plot(a), dev, a)


@pytest.mark.parametrize("figsize", [(6.0, 4.0), (14.0, 9.0)])
def test_labels_hold_at_other_sizes(figsize):
    from roofline.render.chart import plot

    dev = measured_cpu(ert=False)
    a = analyze(cnn_measured(), dev)
    check_chart(plot(a, figsize=figsize), dev, a)


def test_segment_box_intersection_helper():
    from matplotlib.transforms import Bbox

    box = Bbox.from_extents(0, 0, 10, 10)
    assert segment_crosses_box((-5, 5, 15, 5), box)  # straight through
    assert segment_crosses_box((5, 5, 5, 5.5), box)  # inside
    assert not segment_crosses_box((-5, 10, 15, 10), box)  # along the top edge: touching
    assert not segment_crosses_box((-5, -5, -1, 20), box)
    assert not segment_crosses_box((11, 0, 20, 9), box)
    assert segment_crosses_box((-5, 0, 5, 15), box)  # across a corner


def test_every_chart_the_demo_writes(tmp_path):
    """Every PNG `roofline demo` writes, re-plotted with the call that wrote it (save_chart -> plot(a, title=...)):
    no overlapping labels, no label crossed, every roof named, the top ops labelled."""
    from roofline.demo import run_demo
    from roofline.render.chart import plot

    # a measured CPU with close roofs and four cache slopes as "this machine": the hardest case the demo draws
    r = run_demo(tmp_path / "r", local=measured_cpu(), tiny=True)
    for key, a in r.analyses.items():
        assert (r.outdir / f"{key}.png").is_file()
        drawn = int((a.workload.columns["flops"] > 0).sum())  # 0-FLOP ops are not drawn
        check_chart(plot(a, title=r.titles[key]), a.device, a, expect_ops=min(TOP, drawn))


# -- issue 31: charts by kind --------------------------------------------------------------------------------

def test_decode_matmuls_pile_into_one_group_label_and_the_caption_names_the_top_ops():
    """At batch 1 every decode GEMM reads each bf16 weight (2 B) once for 2 FLOPs: ~1 FLOP/B at the same
    attainable rate, so the matmul markers overlap: one label '<n> matmuls' (n = the distinct matmul names),
    the top ops named in the caption, none of them in the legend.  Llama-3-8B's grouped-query attention
    (32 query heads on 8 KV heads) reuses each KV element 4 times: ~4 FLOP/B, a separate point."""
    from roofline import from_llm
    from roofline.render.chart import plot

    dev = get_device("h100")
    a = analyze(from_llm("llama-3-8b", phase="decode"), dev)
    fig = plot(a)
    check_chart(fig, dev, a)
    w = a.workload
    matmuls = {w.strings("name", i) for i in range(len(w)) if w.strings("kind", i) == "matmul"
               and w.columns["flops"][i] > 0}
    intensity = {round(float(a.intensity[i]), 1) for i in range(len(w)) if w.strings("name", i) in matmuls}
    assert intensity == {1.0}  # the hand estimate above: 2 FLOP / 2 B, the activations negligible at batch 1
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.texts]
    assert f"{len(matmuls)} matmuls" in labels, labels
    assert not matmuls & set(labels)  # no single matmul name piled onto the point
    caption = ax.get_xlabel()
    assert "top ops by time:" in caption and all(f"{n} (" in caption for n in top_ops(a))


def test_roofs_only_in_the_precisions_the_workload_uses():
    """An fp32 workload on H100: fp32 roofs only (H100 also lists fp8, int8, bf16, fp16 and tf32 ones)."""
    from roofline.render.chart import plot

    dev = get_device("h100")
    ops = [Op("gemm", kind="matmul", flops=2e12, bytes_read=3e9, precision="fp32", unit="matrix"),
           Op("add", kind="elementwise", flops=1e8, bytes_read=1.2e9, precision="fp32", unit="vector")]
    a = analyze(Workload.from_ops(ops), dev)
    fig = plot(a)
    check_chart(fig, dev, a)
    assert {c.precision for c in dev.compute} > {"fp32"}  # the device has other precisions to leave out
    roofs = [t.get_text() for t in fig.axes[0].texts if "FLOP/s" in t.get_text()]
    legend = fig.axes[0].get_legend()
    roofs += [t.get_text() for t in legend.get_texts() if "FLOP/s" in t.get_text()] if legend else []
    assert roofs and all("fp32" in r for r in roofs), roofs
    # the HTML chart shows the same roofs by default (the others only in its legend, to toggle)
    from roofline.render.html_chart import figure

    shown = {t["name"].rsplit(" ", 2)[0] for t in figure(a)["data"] if t.get("legendgroup") == "compute"
             and t.get("visible") is True}
    assert shown and all(s.startswith("fp32") for s in shown), shown


def test_plan_chart_draws_communication_as_a_readable_share():
    """`plan -o`: a second panel with each part but the ops as a share of the step, labelled in percent; the
    legend lists no part that is 0 s in every layout."""
    from roofline.render.plan import drawn_parts, plan_figure

    class Est:  # the two methods the chart reads of an Estimate
        def __init__(self, name, parts):
            self.name, self._parts, self.tokens_per_second = name, parts, 1000.0

        def parts(self):
            return self._parts

        def describe(self):
            return self.name

    ests = [Est("tp1", {"ops": 9.7, "bubble": 0.0, "dp grad reduce-scatter": 0.3, "tp all-reduce": 0.0}),
            Est("tp2", {"ops": 9.0, "bubble": 0.5, "dp grad reduce-scatter": 0.0, "tp all-reduce": 0.5})]
    assert drawn_parts(ests) == ["ops", "bubble", "dp grad reduce-scatter", "tp all-reduce"]
    ests[1]._parts["tp all-reduce"] = 0.0
    ests[1]._parts["ops"] = 9.5
    assert drawn_parts(ests) == ["ops", "bubble", "dp grad reduce-scatter"]  # 0 s everywhere: not listed
    fig = plot_figure = plan_figure(ests, "t")
    fig.canvas.draw() if fig.canvas is not None else None
    _, share_ax = plot_figure.axes[:2]
    entries = [t.get_text() for t in share_ax.get_legend().get_texts()]
    assert entries == ["ops", "bubble", "dp grad reduce-scatter (exposed)"]
    assert share_ax.get_xlabel() == "share of that time: communication, bubble\n(everything but the ops)"
    # percent labels: tp1 0.3 s of 10 s = 3%, tp2 0.5 s of 10 s = 5%
    assert sorted(t.get_text() for t in share_ax.texts) == ["3%", "5%"]


def test_sweep_chart_batch_labels_do_not_overlap():
    """The batch sweep on a log throughput axis: batch 1, 2 and 4 all labelled, no two labels overlapping."""
    from roofline.catalog import get_device as dev_of
    from roofline.frontends import llm
    from roofline.render import chart
    from roofline.render.sweep import plot_sweep

    caught = []
    spec = llm.make_spec("llama-3-8b", phase="decode", batch=1)
    sweep = llm.batch_sweep(spec, dev_of("h100"), list(range(1, 257)))
    original = chart.new_figure

    def catch(*args, **kw):
        caught.append(original(*args, **kw))
        return caught[-1]

    import tempfile

    with tempfile.TemporaryDirectory() as d, pytest.MonkeyPatch.context() as mp:
        mp.setattr(chart, "new_figure", catch)
        plot_sweep(sweep, f"{d}/s.png")
    (fig,) = caught
    renderer = fig.canvas.get_renderer()
    labels = [t for t in fig.axes[0].texts if t.get_gid() == "batch-label"]
    assert {"1", "2", "4"} <= {t.get_text() for t in labels}
    boxes = [t.get_window_extent(renderer) for t in labels]
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            assert not boxes_overlap(boxes[i], boxes[j]), (labels[i].get_text(), labels[j].get_text())


def test_serve_chart_draws_the_slo_and_names_its_throughput_basis():
    import io

    from matplotlib.image import imread

    from roofline.render import serve
    from roofline.serving.figures import KvUse, Percentiles, ServingFigures, Slo
    from roofline.serving.run import ServeResult
    from roofline.serving.sweep import RateCurve

    def run(x: float, t: float) -> ServeResult:
        """A run of 8 replicas of tp 1 at x output tokens/s, p99 TPOT t and TTFT 10 t (the rest placeholders)."""
        def p(v: float) -> Percentiles:
            return Percentiles(v, v, v, v)

        f = ServingFigures(1, 1.0, x, x, 1.0, p(10 * t), p(t), p(11 * t), 8, 1, 0, 1, KvUse(1, None, (), ()))
        return ServeResult("m", "d", 1, 8, "s", "forecast", f, {}, "r")

    curve = RateCurve(1, ((1.0, run(100, 0.01)), (2.0, run(900, 0.02))), 2.0)
    figs = []
    original = serve.figure_bytes

    def catch(fig, fmt="png"):
        figs.append(fig)
        return original(fig, fmt)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(serve, "figure_bytes", catch)
        png = serve.serve_chart_bytes("m", [curve], Slo(ttft=2.0, tpot=0.05), "c.png")
    assert imread(io.BytesIO(png)).shape[0] > 100
    tpot, ttft = figs[0].axes
    for ax, limit in ((tpot, 0.05), (ttft, 2.0)):
        slo = [ln for ln in ax.get_lines() if ln.get_label().startswith("SLO")]
        assert len(slo) == 1 and set(slo[0].get_ydata()) == {limit}
        assert ax.get_xlabel() == "output tokens/s, total over all 8 devices (not per device)"


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_the_notebook_chart_keeps_its_legend_off_labels_points_and_lines(phase):
    """The chart a notebook shows (render.html._notebook_chart: 8 x 5.2 in, 10 labels): check_chart's rules,
    the legend (inside the axes) on no point, no line and no label."""
    from roofline import from_llm
    from roofline.render.chart import plot

    dev = get_device("h100")
    a = analyze(from_llm("llama-2-7b", phase=phase), dev)
    check_chart(plot(a, max_labels=10, figsize=(8, 5.2)), dev, a)
