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
    scale = 1e15 if "PFLOP" in ax.get_ylabel() else 1e12
    for p in points_of(a):
        assert x0 < p.intensity < x1 and y0 < p.flops / scale < y1
    for c in dev.compute:
        assert x0 < c.flops / dev.main_memory.bandwidth < x1
    assert "TFLOP/s" in ax.get_ylabel() or "PFLOP/s" in ax.get_ylabel()


def test_roofs_slopes_ridge_and_regions_are_labelled():
    a = analyze(Workload.from_ops([Op("app", flops=0.8e9, bytes_read=4e9, measured_seconds=1.0)]),
                Device.simple("seed", "100 GFLOP/s", "10 GB/s"))
    ax = plot(a).axes[0]
    t = " | ".join(texts(ax))
    assert "fp32 vector 100 GFLOP/s" in t and "DRAM 10 GB/s" in t and "ridge 10 FLOP/B" in t
    assert "memory-bound" in t and "compute-bound" in t and "app" in t
    assert ax.get_ylabel() == "performance [GFLOP/s]"
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
    # the longest op is labelled
    top = a.workload.strings("name", a.order()[0])
    assert top in [t.get_text() for t in labels]


def test_device_only_chart_draws_every_ceiling():
    from roofline.catalog import get_device

    dev = get_device("a100")
    ax = plot(dev).axes[0]
    t = " | ".join(texts(ax))
    for c in dev.compute:
        assert c.label in t
