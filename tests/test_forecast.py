"""The forecast beside the bound: overhead floor, achievable roofs, calibration curves, `roofline calibrate`."""

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from roofline import Device, Op, Workload, analyze
from roofline.cli import main
from roofline.core.errors import RooflineError
from roofline.engine.analysis import with_forecast
from roofline.engine.forecast import compute_forecast
from roofline.hardware.calibration import (
    CALIBRATION_SCHEMA,
    Calibration,
    EfficiencyCurve,
    SuitePoint,
    fit,
    fit_curve,
    forecast_seconds,
)
from roofline.hardware.device import MemoryCeiling, OverheadFloor
from roofline.words.advice import advise


def dev(**kw):
    """100 GFLOP/s fp32 vector, DRAM 10 GB/s; a 2 us torch-eager floor unless told otherwise."""
    d = Device.simple("seed", "100 GFLOP/s", "10 GB/s")
    return replace(d, overhead=kw.pop("overhead", (OverheadFloor("torch-eager", 2e-6),)), **kw)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ----------------------------------------------------------------------------- the forecast by hand
def test_overhead_floor_and_verdicts_by_hand():
    ops = [Op("tiny", kind="elementwise", flops=1e3, bytes_read=4e3),  # bound 4e3 / 10e9 = 0.4 us < 2 us floor
           Op("stream", kind="elementwise", flops=1e6, bytes_read=4e7),  # bound 4e7 / 10e9 = 4 ms
           Op("gemm", kind="matmul", flops=1e10, bytes_read=1e6)]  # bound 1e10 / 1e11 = 100 ms
    a = analyze(Workload.from_ops(ops), dev(), forecast=True)
    f = a.forecast
    # no calibration, no achievable figures: forecast = 2 us + the bound itself
    assert f.time == pytest.approx([2e-6 + 0.4e-6, 2e-6 + 4e-3, 2e-6 + 0.1])
    assert f.verdict.tolist() == ["overhead", "memory", "compute"]
    parts = f.parts()
    assert parts["overhead"] == pytest.approx(6e-6) and parts["below roof"] == pytest.approx(0.0)
    assert parts["roof"] == pytest.approx(0.4e-6 + 4e-3 + 0.1)
    assert any("no calibration" in n for n in f.notes)


def test_bound_unchanged_when_forecast_is_on():
    w = Workload.from_ops([Op("a", kind="matmul", flops=3e9, bytes_read=2e8), Op("b", flops=1e5, bytes_read=9e7)])
    plain, fc = analyze(w, dev()), analyze(w, dev(), forecast=True)
    assert plain.forecast is None and fc.forecast is not None
    for name in ("time", "compute_time", "memory_time", "bound", "attainable_flops"):
        assert np.array_equal(getattr(plain, name), getattr(fc, name))


def test_achievable_roofs_and_floor_in_the_forecast():
    # achievable DRAM 8 GB/s: 4e6 B -> 500 us, + 2 us floor = 502 us; the bound stays 4e6 / 10e9 = 400 us
    d = dev(achievable_memory=(MemoryCeiling("DRAM", 8e9),))
    a = analyze(Workload.from_ops([Op("copy", kind="memory", bytes_read=2e6, bytes_written=2e6)]), d, forecast=True)
    assert float(a.time[0]) == pytest.approx(400e-6)
    assert float(a.forecast.time[0]) == pytest.approx(502e-6)
    assert a.forecast.parts()["below roof"] == pytest.approx(100e-6)


def test_achievable_roof_must_match_a_peak_roof():
    with pytest.raises(RooflineError, match="achievable.memory: level 'L1'"):
        dev(achievable_memory=(MemoryCeiling("L1", 8e9),))
    with pytest.raises(RooflineError, match="above its peak roof"):
        dev(achievable_memory=(MemoryCeiling("DRAM", 12e9),))


def test_forecast_keeps_the_level_of_the_bound():
    # an op on L2 (100 GB/s, achievable 80 GB/s) and one on main memory (10 GB/s): each forecast at its own level
    d = replace(dev(overhead=()), memory=(MemoryCeiling("DRAM", 10e9), MemoryCeiling("L2", 100e9, 1e6)),
                achievable_memory=(MemoryCeiling("L2", 80e9),))
    a = analyze(Workload.from_ops([Op("small", bytes_read=4e5, level="L2"), Op("big", bytes_read=4e6)]), d,
                forecast=True)
    assert a.forecast.time == pytest.approx([4e5 / 80e9, 4e6 / 10e9])  # 5 us, 400 us
    assert a.time == pytest.approx([4e-6, 400e-6])


def _curve_cal(curves, device="seed", machine="", overhead=2e-6):
    return Calibration(device, machine, "torch-eager", "2026-11-30", "test suite", overhead, tuple(curves))


def test_calibrated_efficiency_and_out_of_range_note():
    # matmul curve e = 0.5 / (1 + (1e9 / s)): at s = 1e9 FLOPs e = 0.25, at 1e12 e ~ 0.4995
    c = EfficiencyCurve("matmul", "compute", 0.5, 1e9, 1.0, (1e8, 1e10))
    d = dev(calibration=_curve_cal([c]))
    a = analyze(Workload.from_ops([Op("g1", kind="matmul", flops=1e9), Op("g2", kind="matmul", flops=1e12)]), d,
                forecast=True)
    # g1: roof 1e9 / 1e11 = 10 ms; / 0.25 = 40 ms; + 2 us
    assert float(a.forecast.time[0]) == pytest.approx(40e-3 + 2e-6)
    assert float(a.forecast.efficiency[1]) == pytest.approx(0.5 / (1 + 1e-3))
    assert a.forecast.outside.tolist() == [False, True]
    assert any("outside the calibrated size range" in n for n in a.forecast.notes)


def test_kind_curve_before_pooled():
    kind = EfficiencyCurve("reduction", "memory", 0.5, 1.0, 1.0, (1, 1e9))
    pooled = EfficiencyCurve("*", "memory", 0.9, 1.0, 1.0, (1, 1e9))
    cal = _curve_cal([pooled, kind])
    assert cal.curve("reduction", "memory") is kind
    assert cal.curve("softmax", "memory") is pooled
    assert cal.curve("softmax", "compute") is None


def test_efficiency_is_monotone_and_the_fit_recovers_a_known_curve():
    rng = np.random.default_rng(0)
    truth = EfficiencyCurve("k", "memory", 0.6, 3e5, 1.3, (1e3, 1e8))
    s = np.logspace(3, 8, 25)
    roof = s / 10e9
    measured = forecast_seconds(truth, s, roof, roof, 1e-6) * np.exp(rng.normal(0, 0.03, len(s)))  # 3% noise
    c = fit_curve("k", "memory", s, roof, roof, measured, 1e-6)
    grid = np.logspace(2, 10, 50)
    assert np.all(np.diff(c.efficiency(grid)) >= 0)  # monotone non-decreasing in size
    fitted = forecast_seconds(c, s, roof, roof, 1e-6)
    exact = forecast_seconds(truth, s, roof, roof, 1e-6)
    assert np.max(np.abs(fitted / exact - 1)) < 0.06
    assert c.e_max == pytest.approx(0.6, rel=0.1)


def test_fit_keeps_three_parameters_per_curve_not_the_points():
    pts = [SuitePoint(f"p{i}", "matmul", "compute", "fp32", "", 10.0 ** i, 10.0 ** i / 1e11, 10.0 ** i / 1e11,
                      10.0 ** i / 5e10 + 2e-6, (0, 0), op="addmm") for i in range(5, 10)]
    curves = fit(pts, 2e-6)
    assert {(c.kind, c.term) for c in curves} == {("matmul", "compute"), ("*", "compute")}
    assert all(set(c.to_dict()) == {"kind", "term", "e_max", "half", "slope", "size_range", "points", "error"}
               for c in curves)


# ----------------------------------------------------------------------------- files
def test_calibration_round_trips_through_the_device_file(tmp_path):
    pts = (SuitePoint("linear 8x96", "matmul", "compute", "fp32", "x 8x96", 1.5e5, 1e-6, 1e-6, 1.2e-5,
                      (1.1e-5, 1.3e-5), 1.25e-5, "addmm"),)
    cal = Calibration("seed", "cpu x", "torch-eager", "2026-11-30", "suite v1", 2e-6,
                      (EfficiencyCurve("matmul", "compute", 0.7, 1e6, 0.8, (1e4, 1e9), 8, 0.1),), pts,
                      ("conv: failed here",))
    d = dev(calibration=cal, achievable_memory=(MemoryCeiling("DRAM", 8e9),))
    d.save(tmp_path / "d.json")
    back = Device.load(tmp_path / "d.json")
    assert back.calibration == cal and back.overhead == d.overhead
    assert back.achievable_memory[0].bandwidth == 8e9
    assert json.loads((tmp_path / "d.json").read_text())["calibration"]["schema"] == CALIBRATION_SCHEMA


def test_saved_analysis_keeps_its_forecast(tmp_path):
    c = EfficiencyCurve("matmul", "compute", 0.5, 1e9, 1.0, (1e8, 1e10))
    a = analyze(Workload.from_ops([Op("g", kind="matmul", flops=1e9)]), dev(calibration=_curve_cal([c])),
                forecast=True)
    a.save(tmp_path / "a.json")
    from roofline.engine.analysis import Analysis

    back = Analysis.load(tmp_path / "a.json")
    assert back.forecast is not None and back.forecast.time == pytest.approx(a.forecast.time)


def test_calibration_for_another_device_is_refused():
    a = analyze(Workload.from_ops([Op("g", kind="matmul", flops=1e9)]), dev())
    with pytest.raises(RooflineError, match="calibration is for device 'h100'"):
        with_forecast(a, _curve_cal([], device="h100"))
    machine = replace(a, device=replace(a.device, bench=None))
    with_forecast(machine, _curve_cal([]))  # same name, no machine fingerprint: applies


def _save_local(tmp_path):
    from roofline.bench import save_local_device

    d = replace(Device.simple("local test cpu", "100 GFLOP/s", "10 GB/s"), overhead=())
    save_local_device(d)
    return d


def _cal_file(tmp_path, device="local test cpu", **over):
    data = _curve_cal([EfficiencyCurve("*", "memory", 0.5, 1e3, 1.0, (1e3, 1e9))], device=device).to_dict()
    data.update(over)
    p = tmp_path / "cal.json"
    p.write_text(json.dumps(data))
    return p


def test_cli_forecast_with_a_calibration_file(tmp_path, capsys):
    _save_local(tmp_path)
    cal = _cal_file(tmp_path)
    code, out, err = run(capsys, "plot", "--device", "local", "--point", "app:1e6:4e9", "--forecast",
                         "--calibration", str(cal), "--json", str(tmp_path / "a.json"))
    assert code == 0, err
    saved = json.loads((tmp_path / "a.json").read_text())
    # 4e9 B at 10 GB/s = 0.4 s bound; e = 0.5 / (1 + 1e3/4e9) ~ 0.5: forecast ~ 0.8 s
    assert saved["forecast"]["total_time"] == pytest.approx(0.8, rel=1e-3)
    assert saved["totals"]["time"] == pytest.approx(0.4)


@pytest.mark.parametrize("change, words", [
    ({"device": "h100"}, "calibration is for device 'h100'"),
    ({"schema": "roofline.calibration/9"}, "schema: expected 'roofline.calibration/2'"),
    ({"curves": [{"kind": "x"}]}, "curves[0]: missing field 'term'"),
])
def test_cli_bad_calibration_file_is_one_line_and_nothing_written(tmp_path, capsys, change, words):
    _save_local(tmp_path)
    cal = _cal_file(tmp_path, **change)
    out_json = tmp_path / "a.json"
    code, out, err = run(capsys, "plot", "--device", "local", "--point", "app:1e6:4e9", "--forecast",
                         "--calibration", str(cal), "--json", str(out_json))
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1
    assert not out_json.exists()


def test_cli_calibration_needs_forecast(tmp_path, capsys):
    code, _, err = run(capsys, "plot", "--device", "h100", "--point", "a:1:1", "--calibration",
                       str(_cal_file(tmp_path)))
    assert code == 2 and "add --forecast" in err


# ----------------------------------------------------------------------------- roofline calibrate
def _tiny_suite():
    from roofline.bench.calibrate import SuiteOp

    def boom(t, g):
        raise RuntimeError("this op does not run here")

    ok = [SuiteOp(f"relu {n}", f"x {n}", lambda t, g, n=n: (t.relu, (t.randn(n, generator=g),)))
          for n in (1000, 30000, 300000)]
    return [*ok, SuiteOp("broken op", "", boom)]


def test_run_calibration_lists_a_failing_op_and_fits_the_rest():
    torch = pytest.importorskip("torch")
    from roofline.bench.calibrate import run_calibration

    d = replace(Device.simple("local test cpu", "100 GFLOP/s", "10 GB/s"), overhead=())
    # the device is not this machine's: its fit error says nothing of noise (no limit), and one pass is enough
    cal, calibrated = run_calibration(d, ops=_tiny_suite(), retries=0, error_limit=None)
    assert [p.op for p in cal.points] == ["relu"] * 3 and cal.failed == ("broken op: RuntimeError: this op does "
                                                                         "not run here",)
    assert {c.kind for c in cal.curves} == {"elementwise", "*"}
    assert all(p.measured > 0 and math.isfinite(p.forecast) for p in cal.points)
    assert calibrated.calibration is cal and calibrated.overhead_floor("torch-eager") is not None
    assert torch.get_num_threads() >= 1


def test_cli_calibrate_interrupted_writes_nothing(tmp_path, capsys, monkeypatch):
    _save_local(tmp_path)
    from roofline.bench import calibrate as mod
    from roofline.bench import local_device_path

    before = local_device_path().read_bytes()

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(mod, "run_calibration", interrupted)
    out_file = tmp_path / "cal.json"
    code, out, err = run(capsys, "calibrate", "--quick", "--out", str(out_file))
    assert code == 2 and "calibration interrupted" in err and "nothing written" in err
    assert not out_file.exists() and local_device_path().read_bytes() == before


def test_cli_calibrate_writes_the_device_and_the_file(tmp_path, capsys, monkeypatch):
    pytest.importorskip("torch")
    _save_local(tmp_path)
    from roofline.bench import calibrate as mod
    from roofline.bench import load_local_device

    real = mod.run_calibration
    monkeypatch.setattr(mod, "run_calibration", lambda d, **k: real(d, ops=_tiny_suite()[:3], retries=0,
                                                                   error_limit=None))
    out_file = tmp_path / "cal.json"
    code, out, err = run(capsys, "calibrate", "--quick", "--out", str(out_file))
    assert code == 0, err
    assert "elementwise (memory-bound)" in out
    cal = Calibration.from_dict(json.loads(out_file.read_text()), "cal.json")
    assert load_local_device().calibration == cal
    code, out, _ = run(capsys, "calibrate", "--show")
    assert code == 0 and "relu 1000" in out


def test_cli_calibrate_refuses_a_gpu_device_without_cuda(tmp_path, capsys):
    from roofline.bench import save_local_device

    save_local_device(Device.simple("local gpu", "100 TFLOP/s", "1 TB/s", kind="gpu"))
    code, _, err = run(capsys, "calibrate", "--quick")
    assert code == 2 and "is a gpu" in err


# ----------------------------------------------------------------------------- levers on the overhead
def test_overhead_levers_by_hand():
    ops = [Op(f"e{i}", kind="elementwise", flops=1e3, bytes_read=8e3, bytes_written=4e3) for i in range(10)]
    a = analyze(Workload.from_ops(ops), dev(overhead=(OverheadFloor("torch-eager", 5e-6),)), forecast=True)
    # each op: 12 kB / 10 GB/s = 1.2 us + 5 us floor; 10 ops = 62 us
    assert a.forecast.total_time == pytest.approx(62e-6)
    lever = next(lv for lv in advise(a, devices=False).levers if lv.name == "fewer launches")
    # fused: reads 8 kB + 9 x (8 - 4) kB = 44 kB, writes 4 kB: 48 kB / 10 GB/s = 4.8 us + one 5 us floor
    assert lever.after == pytest.approx(9.8e-6) and lever.figures["ops_saved"] == 9


def test_cuda_graph_lever_on_a_gpu():
    d = replace(Device.simple("g", "100 TFLOP/s", "1 TB/s", kind="gpu"),
                overhead=(OverheadFloor("cuda-launch", 4e-6), OverheadFloor("cuda-graph", 1e-6)))
    ops = [Op(f"k{i}", kind="matmul", flops=1e6, bytes_read=1e5) for i in range(100)]
    a = analyze(Workload.from_ops(ops), d, forecast=True)
    lever = next(lv for lv in advise(a, devices=False).levers if lv.name == "CUDA graphs")
    # per op: max(1e6 / 1e14, 1e5 / 1e12) = 0.1 us; 100 x (4 + 0.1) us -> 100 x (1 + 0.1) us
    assert lever.before == pytest.approx(410e-6) and lever.after == pytest.approx(110e-6)


def test_gpu_forecast_uses_the_launch_floor():
    d = replace(Device.simple("g", "100 TFLOP/s", "1 TB/s", kind="gpu"), overhead=(OverheadFloor("cuda-launch", 4e-6),))
    f = compute_forecast(analyze(Workload.from_ops([Op("k", flops=1e3)]), d))
    assert f.framework == "cuda-launch" and f.overhead == 4e-6


# ----------------------------------------------------------------------------- measured: predicted vs measured
def test_measured_analysis_reports_bound_and_forecast_against_measured():
    torch = pytest.importorskip("torch")
    from roofline.measurement import measure
    from roofline.words.summary import summarize

    net = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256))
    a = measure(net, torch.randn(64, 256), device=dev(), repeats=5)
    s = summarize(a).forecast
    assert s is not None and s.ops_measured == 3
    t = a.workload.measured.timing
    # whole model: the bound over the unprofiled median, its spread over q3 and q1
    assert s.whole_bound.value == pytest.approx(a.total_time / t.median)
    assert s.whole_bound.low == pytest.approx(a.total_time / t.high)
    ratios = a.forecast.time / a.workload.columns["measured_seconds"]
    assert s.op_forecast.value == pytest.approx(float(np.median(ratios)))
    assert a.workload.measured.profiled_seconds > 0 and math.isfinite(s.profiler_cost)
    assert "whole model: bound/measured" in s.describe_measured()


def test_gpu_overhead_floors_are_measured():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from roofline.bench.overhead import measure_cuda

    floors = {o.framework: o for o in measure_cuda(torch, repeats=5, inner=50)}
    launch = floors["cuda-launch"].seconds
    assert 1e-7 < launch < 1e-4  # a kernel launch is microseconds
    if "cuda-graph" in floors:
        assert floors["cuda-graph"].seconds <= launch * 1.2  # replay is no slower than launching
