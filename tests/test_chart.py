import numpy as np
import pytest

from roofline import Device, Op, Workload, analyze
from roofline.render.chart import plot, points_of


def many_ops(n):
    rng = np.random.default_rng(0)
    kinds = ["matmul", "elementwise", "norm", "attention", "memory"]
    return Workload.from_ops([Op(f"op{i}", kind=kinds[i % 5], flops=float(rng.lognormal(20, 3)) if i % 5 != 4 else 0.0,
                                 bytes_read=float(rng.lognormal(18, 2)), precision="bf16",
                                 unit="matrix" if i % 5 in (0, 3) else "vector") for i in range(n)])


def texts(ax):
    return [t.get_text() for t in ax.texts]


def test_axes_include_every_point_and_ridge():
    from roofline.catalog import get_device

    dev = get_device("h100")
    a = analyze(many_ops(60), dev)
    fig = plot(a)
    ax = fig.axes[0]
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    # the data are plotted in a display scale; a tick's label ('100 TFLOP/s') over its value gives it
    from roofline.core.units import parse_quantity

    fig.canvas.draw()
    tick, label = next((v, t.get_text()) for v, t in zip(ax.get_yticks(), ax.get_yticklabels(), strict=True)
                       if t.get_text() and y0 <= v <= y1)
    scale = parse_quantity(label, "flops") / tick
    assert scale in (1e12, 1e15)  # an H100 chart is drawn in TFLOP/s or PFLOP/s
    for p in points_of(a):
        assert x0 < p.intensity < x1 and y0 < p.flops / scale < y1
    for c in dev.compute:
        assert x0 < c.flops / dev.main_memory.bandwidth < x1


def test_roofs_slopes_ridge_and_regions_are_labelled():
    a = analyze(Workload.from_ops([Op("app", flops=0.8e9, bytes_read=4e9, measured_seconds=1.0)]),
                Device.simple("seed", "100 GFLOP/s", "10 GB/s"))
    ax = plot(a).axes[0]
    t = " | ".join(texts(ax))
    assert "fp32 vector 100 GFLOP/s" in t and "DRAM 10 GB/s" in t and "ridge 10 FLOP/B" in t
    assert "memory-bound" in t and "compute-bound" in t and "app" in t
    # the ticks carry the unit ('100 GFLOP/s'), so the axis title does not repeat a scale
    assert ax.get_ylabel() == "performance"
    ax.figure.canvas.draw()
    assert "100 GFLOP/s" in [t.get_text() for t in ax.get_yticklabels()]
    # two shaded regions meeting at the ridge: 100 GFLOP/s / 10 GB/s = 10 FLOP/B
    memory, compute = sorted(ax.patches, key=lambda p: p.get_x())[:2]
    assert memory.get_x() + memory.get_width() == pytest.approx(10) and compute.get_x() == pytest.approx(10)
    # the title names the binding roof: 4e9 B / 10 GB/s = 0.4 s against 8 ms of compute
    assert "binding roof: DRAM 10 GB/s (memory, 100% of the time)" in ax.get_title()


@pytest.mark.parametrize("n, max_labels", [(12, 30), (80, 30)])
def test_labels_do_not_overlap_and_are_capped(n, max_labels):
    a = analyze(many_ops(n), Device.simple("d", "1 PFLOP/s", "2 TB/s", unit="matrix", precision="bf16"))
    fig = plot(a, max_labels=max_labels)
    ax = fig.axes[0]
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    labels = [t for t in ax.texts if t.get_text().startswith("op")]
    assert 0 < len(labels) <= max_labels
    from matplotlib.text import Text

    boxes = [Text.get_window_extent(t, r) for t in labels]  # the text, without its leader line
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            assert not boxes[i].overlaps(boxes[j]), (labels[i].get_text(), labels[j].get_text())
    # the longest op is named: on a label of its own, or (in a pile of overlapping markers, labelled "3 ops")
    # in the caption under the x axis
    top = a.workload.strings("name", a.order()[0])
    assert top in [t.get_text() for t in labels] or f"{top} (" in ax.get_xlabel()


def test_device_only_chart_draws_every_ceiling():
    from roofline.catalog import get_device

    dev = get_device("a100")
    ax = plot(dev).axes[0]
    t = " | ".join(texts(ax))
    for c in dev.compute:
        assert c.label in t


def test_plotting_never_switches_the_backend(tmp_path):
    """A notebook's backend stays what it was: charts are built on their own Agg canvas, without pyplot."""
    import sys

    import matplotlib

    from roofline.catalog import get_device
    from roofline.frontends import llm
    from roofline.render.bench import plot_roofline
    from roofline.render.chart import chart_bytes, save_chart
    from roofline.render.compare import compare_chart_bytes
    from roofline.render.sweep import plot_sweep

    before = matplotlib.get_backend()
    pyplot = sys.modules.get("matplotlib.pyplot")
    figures = pyplot.get_fignums() if pyplot is not None else []
    matplotlib.use("svg")  # any backend but Agg: the one the user's notebook runs on
    try:
        dev = get_device("h100")
        a = analyze(many_ops(12), dev)
        fig = plot(a)
        assert matplotlib.get_backend() == "svg"
        assert type(fig).__name__ == "RooflineFigure" and fig._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"
        assert chart_bytes(a, "svg").lstrip().startswith(b"<?xml")
        save_chart(dev, tmp_path / "d.pdf")
        plot_roofline(Device.simple("cpu", "100 GFLOP/s", "10 GB/s", kind="cpu"), tmp_path / "roof.png")
        compare_chart_bytes([a, analyze(many_ops(12), get_device("a100"))])
        spec = llm.make_spec("llama-2-7b", phase="decode", batch=1)
        plot_sweep(llm.batch_sweep(spec, dev, [1, 2, 4, 8]), str(tmp_path / "sweep.png"))
        assert matplotlib.get_backend() == "svg"
        if pyplot is None:  # nothing imported pyplot on the way (a notebook's plt.show() is left alone)
            assert "matplotlib.pyplot" not in sys.modules
        else:
            assert pyplot.get_fignums() == figures  # no figure registered with pyplot
    finally:
        matplotlib.use(before)


def test_y_ticks_have_one_style():
    from roofline.catalog import get_device

    fig = plot(analyze(many_ops(12), get_device("h100")))
    ax = fig.axes[0]
    fig.canvas.draw()
    lo, hi = ax.get_ylim()
    labels = [t.get_text() for loc, t in zip(ax.get_yticks(), ax.get_yticklabels(), strict=True) if lo <= loc <= hi]
    assert labels and all(t.endswith("FLOP/s") and "^" not in t and "e" not in t.split()[0] for t in labels), labels


def test_the_ridge_marked_is_the_summary_s():
    """100 GFLOP/s over 10 GB/s: the ridge is 10 FLOP/B, the summary's (read by the chart, not computed again)
    and, for a bare device, the roof's over main memory; the label says it."""
    from roofline.render.chart import _frame
    from roofline.words.summary import summarize

    dev = Device.simple("seed", "100 GFLOP/s", "10 GB/s")
    a = analyze(Workload.from_ops([Op("app", flops=8e8, bytes_read=4e9)]), dev)
    s = summarize(a)
    f = _frame(dev, points_of(a), s, a, None, None)
    assert s.ridge == pytest.approx(10.0) and f.ridge_at == s.ridge and f.ridge == pytest.approx(10.0)
    bare = _frame(dev, [], None, None, None, None)
    assert bare.ridge_at == pytest.approx(10.0)
    fig = plot(a, summary=s)
    assert any(t.get_text() == "ridge 10 FLOP/B" for ax in fig.axes for t in ax.texts)
