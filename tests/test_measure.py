"""Measured points: real timings joined to ops, at or below the measured roof, failures and noise reported."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from roofline import ComputeCeiling, Device, MemoryCeiling, Provenance
from roofline.errors import RooflineError
from roofline.measurement import Timing, join_events, kernel, measure_callable, time_calls, timing_of

N = 4_000_000  # 3 arrays x 32 MB: past the 32 MB L3 of the CI machine


def measured_add_device(x, y, z) -> tuple[Device, Timing]:
    """A roof measured here: the fastest rate np.add reaches on these arrays (bytes counted as 3 x 8 x N)."""
    t = time_calls(lambda: np.add(x, y, out=z), repeats=9, warmup=2)
    nbytes = 3 * 8 * N
    prov = Provenance(kind="measured", source="test", method="np.add best of 9", repeats=9,
                      spread=(nbytes / t.high, nbytes / t.low))
    dev = Device("measured here", kind="cpu",
                 compute=(ComputeCeiling("vector", "fp64", 1e12, Provenance(kind="user", source="not measured")),),
                 memory=(MemoryCeiling("DRAM", nbytes / t.low, None, prov),))
    return dev, t


def test_measured_cpu_point_at_or_below_the_measured_roof_within_spread():
    x, y, z = np.ones(N), np.ones(N), np.empty(N)
    dev, roof_timing = measured_add_device(x, y, z)
    a = measure_callable(np.add, x, y, flops=N, bytes=3 * 8 * N, device=dev, repeats=9, warmup=1,
                         kwargs={"out": z}, kind="elementwise")
    assert a.workload.has_measurements
    achieved_bw = float(a.achieved_bandwidth[0])
    timing = timing_of(a)
    assert timing is not None and timing.repeats == 9
    spread = timing.noise + roof_timing.noise
    # the roof is the best (p10) rate of the same kernel: the median run can only be at or below it, within spread
    assert achieved_bw <= dev.main_memory.bandwidth * (1 + spread)
    assert float(a.efficiency[0]) <= 1 + spread
    # 1 FLOP per 24 bytes: memory-bound far below the 1 TFLOP/s compute roof
    assert a.bound[0] == "memory" and a.intensity[0] == pytest.approx(1 / 24)


def test_measured_cnn_ops_join_the_trace_and_stay_under_the_top_roof():
    torch = pytest.importorskip("torch")
    models = pytest.importorskip("models")  # tests/models.py
    from roofline.measurement import measure

    torch.manual_seed(0)
    model, x = models.SmallCNN().eval(), torch.randn(8, 3, 32, 32)
    # a generous roof: the top of any CPU here (1 TFLOP/s, 10 TB/s), so every honest point is under it
    dev = Device("generous", kind="cpu", compute=(ComputeCeiling("vector", "fp32", 1e12),),
                 memory=(MemoryCeiling("DRAM", 10e12),))
    a = measure(model, x, device=dev, repeats=5, warmup=1, profile_runs=2)
    sec = a.workload.columns["measured_seconds"]
    assert np.isfinite(sec).all()  # every traced op got a profiler time
    info = a.workload.info["measured"]
    # (the per-op sum and the whole-run median are not compared: on a shared 2-core machine either may catch a
    # burst of load; the noise warning covers the whole run)
    assert info["sum_of_op_times"] == pytest.approx(float(sec.sum())) and info["repeats"] == 5
    assert not a.above_roof.any()
    assert (a.efficiency <= 1).all()
    # names and modules come from the trace
    assert a.workload.strings("group", int(np.argmax(a.workload.columns["flops"]))) in ("conv1", "conv2", "fc")


def test_join_events_in_order_skipping_nested_and_missing():
    # (name, start us, end us, seconds): conv2d wraps convolution which wraps _convolution; relu; then addmm
    events = [("aten::conv2d", 0, 10, 1.0), ("aten::convolution", 1, 9, 0.8), ("aten::_convolution", 2, 8, 0.7),
              ("aten::relu", 11, 12, 0.1), ("aten::clamp_min", 11.1, 11.9, 0.05), ("aten::addmm", 13, 20, 0.5),
              ("aten::relu", 21, 22, 0.2)]
    got = join_events(["convolution", "relu", "add", "addmm", "relu"], events)
    assert got[0] == 0.8 and got[1] == 0.1 and math.isnan(got[2]) and got[3] == 0.5 and got[4] == 0.2


def test_model_raising_during_measurement_names_the_op_and_module():
    torch = pytest.importorskip("torch")
    from roofline.measurement import measure

    class Flaky(torch.nn.Module):
        """Fine for the trace and the first runs, then fails inside 'head' (a data-dependent check)."""

        def __init__(self) -> None:
            super().__init__()
            self.body = torch.nn.Linear(8, 8)
            self.head = Head()

        def forward(self, x):  # type: ignore[no-untyped-def]
            return self.head(self.body(x))

    class Head(torch.nn.Module):
        calls = 0

        def forward(self, x):  # type: ignore[no-untyped-def]
            Head.calls += 1
            if Head.calls > 3:
                torch.ops.aten.mm(x, torch.ones(3, 3))  # shape mismatch: raises inside aten::mm
            return x.relu()

    dev = Device.simple("cpu", "10 GFLOP/s", "10 GB/s")
    with pytest.raises(RooflineError) as err:
        measure(Flaky(), torch.randn(4, 8), device=dev, repeats=3, warmup=1)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("the model failed during measurement at op mm in module head (Head)")

    class Broken(torch.nn.Module):  # fails at once: reported by the trace, same one-line form
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x):  # type: ignore[no-untyped-def]
            return self.fc(x[:, :5])

    with pytest.raises(RooflineError, match=r"failed at op .*addmm.* in module fc \(Linear\)") as err:
        measure(Broken(), torch.randn(4, 8), device=dev, repeats=2)
    assert "\n" not in str(err.value)


def test_timing_noise_above_20_percent_is_a_warning_with_the_spread():
    state = {"n": 0}

    def jittery() -> None:
        state["n"] += 1
        time.sleep(0.004 if state["n"] % 2 else 0.012)  # alternately 4 ms and 12 ms: noise ~ 200%

    a = measure_callable(jittery, flops=1e6, bytes=1e6, device=Device.simple("c", "10 GFLOP/s", "10 GB/s"),
                         repeats=6, warmup=0)
    warnings = [w for w in a.workload.warnings if "timing noise" in w]
    assert len(warnings) == 1
    assert "above 20%" in warnings[0] and "spread" in warnings[0] and "ms.." in warnings[0]
    noise = a.workload.info["measured"]["noise"]
    assert noise > 0.2
    from roofline.render.terminal import render

    assert "timing noise" in render(a, color=False)  # shown, not hidden


def test_kernel_decorator_and_flops_functions():
    @kernel(flops=lambda x: 2 * x.size, bytes=lambda x: 2 * x.nbytes, kind="elementwise")
    def axpy(x):
        return 2.0 * x + 1.0

    x = np.ones(1000)
    assert np.array_equal(axpy(x), np.full(1000, 3.0))  # runs unchanged
    a = axpy.measure(x, repeats=3, device=Device.simple("c", "10 GFLOP/s", "10 GB/s"))
    assert a.workload.strings("name", 0) == "axpy"
    assert a.workload.columns["flops"][0] == 2000 and a.workload.bytes[0] == 16000
    assert a.workload.strings("precision", 0) == "fp64"  # from the argument's dtype
    assert float(a.achieved_flops[0]) == pytest.approx(2000 / a.workload.columns["measured_seconds"][0])


def test_measure_callable_bad_input():
    dev = Device.simple("c", "10 GFLOP/s", "10 GB/s")
    with pytest.raises(RooflineError, match="flops must be a finite number >= 0"):
        measure_callable(lambda: None, flops=-1, bytes=1, device=dev)

    def boom():
        raise ValueError("bad\nsecond line")

    with pytest.raises(RooflineError, match=r"^boom failed during measurement: bad$"):
        measure_callable(boom, flops=1, bytes=1, device=dev)


def test_default_device_is_the_cached_local_one(tmp_path, monkeypatch):
    from roofline.bench import save_local_device

    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    save_local_device(Device.simple("cached here", "10 GFLOP/s", "10 GB/s").with_name("cached here"))
    a = measure_callable(lambda: None, flops=1, bytes=1, repeats=2)
    assert a.device.name == "cached here"


def test_default_device_measures_quickly_when_none_is_cached(tmp_path, monkeypatch):
    import roofline.bench

    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    calls = []

    def fake_bench(**kw):  # type: ignore[no-untyped-def]
        calls.append(kw)
        return Device.simple("just measured", "10 GFLOP/s", "10 GB/s")

    monkeypatch.setattr(roofline.bench, "run_bench", fake_bench)
    a = measure_callable(lambda: None, flops=1, bytes=1, repeats=2)
    assert a.device.name == "just measured" and calls == [{"quick": True}]
    assert (tmp_path / "local-device.json").is_file()  # cached for next time


def test_roofline_measure_is_callable_after_the_submodule_is_imported():
    torch = pytest.importorskip("torch")
    import roofline
    import roofline.measurement  # noqa: F401  (the module is named apart from the function it exports)

    net = torch.nn.Sequential(torch.nn.Linear(16, 16))
    a = roofline.measure(net, torch.randn(4, 16), device=Device.simple("c", "10 GFLOP/s", "10 GB/s"), repeats=2)
    assert a.workload.columns["flops"][0] == 2 * 4 * 16 * 16  # one addmm


def test_cli_torch_measure(tmp_path, capsys):
    pytest.importorskip("torch")
    from roofline.analysis import Analysis
    from roofline.cli import main

    (tmp_path / "mymodel.py").write_text(
        "import torch\n\ndef build():\n    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU())\n")
    dev = tmp_path / "dev.json"
    Device.simple("cpu", "10 GFLOP/s", "10 GB/s").save(dev)
    out = tmp_path / "a.json"
    assert main(["torch", f"{tmp_path / 'mymodel.py'}:build", "--input", "8x32", "--device", str(dev), "--measure",
                 "--repeats", "3", "--json", str(out)]) == 0
    a = Analysis.load(out)
    assert np.isfinite(a.workload.columns["measured_seconds"]).all()
    assert [a.workload.strings("name", i) for i in range(len(a.workload))] == ["addmm", "relu"]
    assert "measured:" in capsys.readouterr().out
