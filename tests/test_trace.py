"""roofline trace: profiler traces in (recorded for real here, and GPU/NCCL ones written from the documented format)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import models  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from roofline.cli import main  # noqa: E402
from roofline.core.errors import RooflineError  # noqa: E402
from roofline.frontends.torch import from_torch  # noqa: E402
from roofline.frontends.trace import from_trace, read_trace  # noqa: E402
from roofline.frontends.trace.events import read_events  # noqa: E402
from roofline.words.summary import summarize, trace_lines  # noqa: E402
from roofline.work import costs  # noqa: E402


def record(path: Path, model, x, *, training: bool = False, shapes: bool = True, stack: bool = True) -> Path:
    model.train(training)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=shapes, with_stack=stack) as prof:
        if training:
            model(x).sum().backward()
        else:
            with torch.no_grad():
                model(x)
    prof.export_chrome_trace(str(path))
    return path


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Real traces recorded on this CPU: a CNN and a small transformer block, inference and training."""
    d = tmp_path_factory.mktemp("traces")
    torch.manual_seed(0)
    cnn, (xc,) = models.small_cnn(batch=2, device="cpu")
    block, (xb,) = models.transformer_block(device="cpu")
    return {
        "cnn": (record(d / "cnn.json", cnn, xc), cnn, xc),
        "block": (record(d / "block.json", block, xb), block, xb),
        "block_train": (record(d / "block_train.json", block, xb, training=True), block, xb),
        "no_shapes": (record(d / "noshapes.json", cnn, xc, shapes=False), cnn, xc),
    }


def _ops(w):
    return [(w.strings("name", i), float(w.columns["flops"][i])) for i in range(len(w))]


@pytest.mark.parametrize("key", ["cnn", "block", "block_train"])
def test_same_ops_and_flops_as_from_torch(traces, key):
    """The same model traced by from_torch on the same real inputs (same dispatch) gives the same ops, in order,
    with the same FLOPs: one cost table, two routes in (the profiler's recorded call, the dispatch mode)."""
    path, model, x = traces[key]
    training = key.endswith("train")
    for p in model.parameters():
        p.grad = None  # as when the trace was recorded: the first backward accumulates into nothing
    ref = from_torch(model, x, mode="training" if training else "inference")
    w = read_trace(path)
    assert _ops(w) == _ops(ref)
    assert w.total_flops == ref.total_flops > 0


def test_cnn_bytes_and_module_types_match_from_torch(traces):
    path, _, _ = traces["cnn"]
    meta_model, (meta_x,) = models.small_cnn(batch=2, device="meta")
    ref = from_torch(meta_model, meta_x)  # what a user gets from 'roofline torch' without running the model
    w = read_trace(path)
    # the recorded calls are replayed on meta tensors, so the compulsory bytes agree op for op with the meta trace
    # (a real eval-mode batch norm returns empty save_mean/save_invstd, which the meta kernel sizes per channel)
    assert np.array_equal(w.bytes, ref.bytes)
    # with_stack gives 'nn.Module: Conv2d_0': the innermost module's class, as from_torch's module_type
    assert [w.strings("module_type", i) for i in range(len(w))] == [ref.strings("module_type", i)
                                                                     for i in range(len(ref))]
    # paths are relative to the model (SmallCNN_0 dropped), instance-numbered by type: 'Conv2d_0', 'BatchNorm2d_0'
    assert w.strings("group", 0) == "Conv2d_0" and ref.strings("group", 0) == "conv1"


def test_times_are_the_trace_event_durations(traces):
    """CPU trace: each op's measured time is its own event's duration, read from the JSON independently."""
    path, _, _ = traces["cnn"]
    w = read_trace(path)
    events = [e for e in json.loads(path.read_text())["traceEvents"] if e.get("cat") == "cpu_op"]
    # the placed ops of a small CNN: the first aten event of each name under its wrapper, in time order
    wanted = {"aten::" + w.strings("name", i) for i in range(len(w))}
    placed = sorted((e for e in events if e["name"] in wanted), key=lambda e: e["ts"])
    # nested same-name events do not occur in this model, so the kept events are exactly the placed ones
    assert [e["name"].removeprefix("aten::") for e in placed] == [w.strings("name", i) for i in range(len(w))]
    assert np.allclose(w.columns["measured_seconds"], [e["dur"] * 1e-6 for e in placed], rtol=0, atol=1e-12)
    assert w.measured is not None and w.measured.device_type == "cpu"


def test_backward_ops_take_the_forward_group(traces):
    path, _, _ = traces["block_train"]
    w = read_trace(path)
    names = [w.strings("name", i) for i in range(len(w))]
    assert any(n.endswith(" (backward)") for n in names)
    # every backward mm sits in a Linear's group, found through its autograd sequence number
    for i, n in enumerate(names):
        if n == "mm (backward)":
            assert w.strings("module_type", i) == "Linear", w.strings("group", i)


def test_unmatched_time_listed_with_share(traces):
    path, _, _ = traces["block"]
    a = from_trace(path, "xeon-8480")
    t = a.workload.trace
    # every unplaced event's self time plus the placed ops' time is the trace's op time, exactly
    rest = sum(u.seconds for u in t.unmatched)
    assert rest + t.op_seconds == pytest.approx(t.trace_seconds, rel=1e-9)
    assert "aten::linear" in {u.name for u in t.unmatched}  # a wrapper: its addmm is placed, its overhead listed
    assert t.unmatched_share == pytest.approx(rest / t.trace_seconds)
    s = summarize(a)
    assert s.trace is t and "trace time in no op" in "\n".join(trace_lines(t))
    # the record is typed and round-trips through a saved analysis
    again = type(a).from_dict(json.loads(json.dumps(a.to_dict())))
    assert again.workload.trace == t


def test_no_shapes_says_how_to_record(traces):
    path, _, _ = traces["no_shapes"]
    with pytest.raises(RooflineError, match=r"no input shapes.*record_shapes=True"):
        read_trace(path)


# -- GPU traces written from the documented format (kineto output_json.cpp) ---------------------------------------
def _x(cat, name, ts, dur, pid=100, tid=100, **args):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        e["args"] = args
    return e


def _op(name, ts, dur, types, dims, concrete=None, **extra):
    return _x("cpu_op", name, ts, dur, **{"Input type": types, "Input Dims": dims,
                                         "Concrete Inputs": concrete or [""] * len(types), **extra})


def _gpu_trace(path: Path, events, **top) -> Path:
    doc = {"schemaVersion": 1, "deviceProperties": [], **top, "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}}, *events,
        {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 1e6}]}
    path.write_text(json.dumps(doc))
    return path


def test_gpu_kernels_join_their_op_by_correlation(tmp_path):
    """aten::mm launches one kernel, aten::relu two; a third kernel has no launch.  Each op's time is the sum
    of its own kernels (not its CPU time); the orphan kernel is listed."""
    events = [
        _op("aten::mm", 10.0, 30.0, ["float", "float"], [[64, 128], [128, 32]]),
        _x("cuda_runtime", "cudaLaunchKernel", 20.0, 5.0, correlation=7, cbid=211),
        _op("aten::relu", 50.0, 20.0, ["float"], [[64, 32]]),
        _x("cuda_runtime", "cudaLaunchKernel", 55.0, 3.0, correlation=8, cbid=211),
        _x("cuda_runtime", "cudaLaunchKernel", 60.0, 3.0, correlation=9, cbid=211),
        _x("kernel", "ampere_sgemm_64x32", 40.0, 12.5, pid=0, tid=7, correlation=7, stream=7),
        _x("kernel", "vectorized_elementwise_kernel", 70.0, 2.0, pid=0, tid=7, correlation=8, stream=7),
        _x("kernel", "vectorized_elementwise_kernel", 73.0, 1.5, pid=0, tid=7, correlation=9, stream=7),
        _x("kernel", "orphan_kernel", 80.0, 4.0, pid=0, tid=7, correlation=99, stream=7),
        # aten::index's indices (a list of optional tensors) are not in a trace: its kernel is listed, with why
        _op("aten::index", 90.0, 10.0, ["float", ""], [[64, 32], []]),
        _x("cuda_runtime", "cudaLaunchKernel", 92.0, 2.0, correlation=10),
        _x("kernel", "index_elementwise_kernel", 95.0, 1.0, pid=0, tid=7, correlation=10, stream=7),
        _x("gpu_user_annotation", "ProfilerStep#0", 0.0, 100.0, pid=0, tid=7),  # not busy time
    ]
    w = read_trace(_gpu_trace(tmp_path / "gpu.json", events))
    assert [w.strings("name", i) for i in range(len(w))] == ["mm", "relu"]
    assert w.columns["flops"].tolist() == [2 * 64 * 128 * 32, 64 * 32]  # 2MKN; one FLOP per relu output
    # kernel time: 12.5 us for mm; 2.0 + 1.5 us for relu (the CPU events were 30 and 20 us)
    assert np.allclose(w.columns["measured_seconds"], [12.5e-6, 3.5e-6])
    t = w.trace
    assert t.device_type == "cuda" and w.measured.device_type == "cuda"
    assert t.trace_seconds == pytest.approx(21e-6)  # 12.5 + 2 + 1.5 + 4 + 1 us of kernels
    assert [(u.name, u.calls) for u in t.unmatched] == [("orphan_kernel", 1), ("index_elementwise_kernel", 1)]
    assert t.unmatched[0].seconds == pytest.approx(4e-6)
    assert t.unmatched[0].reason == "no launch with its correlation id"
    assert t.unmatched[1].reason.startswith("launched by aten::index, not rebuilt")


def test_nccl_collective_under_the_interconnect_roof(tmp_path):
    """record_param_comms inside c10d::allreduce_ (NCCL): a collective op whose bytes are the nccl-tests bus
    bytes, timed by its NCCL kernel."""
    comms = {"Collective name": "allreduce", "dtype": "BFloat16", "In msg nelems": 1 << 20, "Out msg nelems": 1 << 20,
             "Group size": 8, "Process Group Name": "0", "Rank": 3}
    events = [
        _x("cpu_op", "c10d::allreduce_", 10.0, 50.0),
        _x("cpu_op", "record_param_comms", 12.0, 40.0, **comms),
        _x("cuda_runtime", "cudaLaunchKernelExC", 20.0, 4.0, correlation=11),
        _x("kernel", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 30.0, 250.0,
           pid=0, tid=20, correlation=11),
        _op("aten::add", 300.0, 5.0, ["c10::BFloat16", "c10::BFloat16", "Scalar"], [[1024], [1024], []],
            ["", "", "1"]),
        _x("cuda_runtime", "cudaLaunchKernel", 301.0, 2.0, correlation=12),
        _x("kernel", "add_kernel", 310.0, 1.0, pid=0, tid=7, correlation=12),
    ]
    w = read_trace(_gpu_trace(tmp_path / "nccl.json", events,
                              distributedInfo={"backend": "nccl", "rank": 3, "world_size": 8}))
    assert [w.strings("name", i) for i in range(len(w))] == ["allreduce", "add"]
    message = (1 << 20) * 2  # bf16 elements
    # ring all-reduce on 8 ranks: 2 * (8 - 1) / 8 = 1.75 link bytes per message byte
    assert w.bytes[0] == pytest.approx(1.75 * message)
    assert w.columns["flops"][0] == pytest.approx(7 / 8 * (1 << 20))  # the reduce-scatter half's additions
    assert w.strings("kind", 0) == "collective" and w.strings("level", 0) == "interconnect"
    assert w.strings("precision", 0) == "bf16" and w.strings("precision", 1) == "bf16"
    assert w.columns["measured_seconds"][0] == pytest.approx(250e-6) and w.trace.rank == 3
    a = from_trace(tmp_path / "nccl.json", "h100-sxm")
    assert a.bound[0] == "interconnect"


def test_collective_formula_matches_nccl_tests_factors():
    """nccl-tests' bus factors: all-reduce 2(n-1)/n, all-gather/reduce-scatter/all-to-all (n-1)/n, send 1."""
    mb = 1e6
    for n in (2, 8, 64):
        assert costs.collective("allreduce", mb, n).bytes_read == pytest.approx(2 * (n - 1) / n * mb)
        for name in ("all_gather", "reduce_scatter", "all_to_all"):
            assert costs.collective(name, mb, n).bytes_read == pytest.approx((n - 1) / n * mb)
        assert costs.collective("send", mb, n).bytes_read == mb
    assert costs.collective("allreduce", mb, 1).bytes_read == 0  # one rank: nothing crosses a link


def test_multi_rank_names_the_slowest(tmp_path):
    """Two ranks recorded for real with torch.distributed (gloo) on this machine; rank 1 runs three extra
    Linear layers (1.6 GFLOP, tests/trace_ranks.py), so rank 0 waits for it: rank 1 is the straggler, its cause
    the extra work.  The slowest rank (the one analysed) is the one with the longest step time in the per-rank
    table: both ranks' spans end together, so which one is left to the clock; its analysis is the one shown
    (four addmm on rank 1, one on rank 0)."""
    from roofline.frontends.trace import read_traces

    script = Path(__file__).with_name("trace_ranks.py")
    r = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    files = [tmp_path / "rank0.json", tmp_path / "rank1.json"]
    a = from_trace(files, "xeon-8480")
    t = a.workload.trace
    view = read_traces(files)
    assert t.slowest_rank == view.slowest_rank == max(view.totals, key=lambda b: b.seconds).key
    assert view.stragglers[0].rank == 1 and view.stragglers[0].cause == "extra work"
    assert [r.rank for r in t.ranks] == [0, 1]
    names = [a.workload.strings("name", i) for i in range(len(a.workload))]
    assert names.count("addmm") == (4 if t.slowest_rank == 1 else 1)
    assert "all_reduce" in names and "all_gather" in names
    i = names.index("all_reduce")
    # gloo's all_reduce of a 32 x 64 fp32 tensor on 2 ranks: 2 * (2 - 1) / 2 * 8192 bytes
    assert a.workload.bytes[i] == pytest.approx(8192) and a.workload.strings("level", i) == "interconnect"
    j = names.index("all_gather")
    # all-gather's message is the gathered output: 2 ranks x 8192 bytes, (2 - 1) / 2 of it crosses the link
    assert a.workload.bytes[j] == pytest.approx(8192)
    lines = "\n".join(trace_lines(summarize(a).trace))
    assert "rank 1:" in lines and "slowest" in lines
    with pytest.raises(RooflineError, match="two traces are rank 0"):
        from_trace([files[0], files[0]], "xeon-8480")


# -- bad input: one line, exit 2, nothing written -------------------------------------------------------------
def _bad(tmp_path, name, data: bytes | str) -> Path:
    p = tmp_path / name
    p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return p


@pytest.mark.parametrize("data,message", [
    ("", "empty"),
    ("not json at all", "not a Chrome trace"),
    ("[1, 2, 3]", "not a Chrome trace"),
    ('{"a": 1}', "no traceEvents"),
    ('{"schemaVersion": 2, "traceEvents": []}', "unsupported trace schemaVersion 2"),
    ('{"traceEvents": []}', "no schemaVersion"),
    ('{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur"',
     "truncated"),
    ('{"schemaVersion": 1, "traceEvents": [] } trailing', "one JSON object"),
    ('{"schemaVersion": 1, "traceEvents": []}', "no cpu_op events"),
])
def test_bad_traces_one_line(tmp_path, capsys, data, message):
    p = _bad(tmp_path, "bad.json", data)
    out = tmp_path / "out.json"
    assert main(["trace", str(p), "--device", "h100-sxm", "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("roofline: error: ")
    assert not out.exists()


def test_truncated_real_trace(traces, tmp_path, capsys):
    path, _, _ = traces["cnn"]
    data = path.read_bytes()
    p = _bad(tmp_path, "cut.json", data[: len(data) // 2])
    assert main(["trace", str(p), "--device", "h100-sxm"]) == 2
    assert "truncated" in capsys.readouterr().err


def test_unsupported_version_fails_before_reading_events(tmp_path):
    """schemaVersion comes first in kineto's files: an unsupported one is refused before the events stream."""
    p = _bad(tmp_path, "v9.json", '{"schemaVersion": 9, "traceEvents": [' + "{]" * 10)
    with pytest.raises(RooflineError, match="unsupported trace schemaVersion 9"):
        read_events(p)


def test_gzip_and_cli_outputs(traces, tmp_path, capsys):
    path, _, _ = traces["cnn"]
    gz = tmp_path / "cnn.json.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert _ops(read_trace(gz)) == _ops(read_trace(path))
    out = tmp_path / "a.json"
    assert main(["trace", str(gz), "--device", "xeon-8480", "--json", str(out), "--group-by", "type"]) == 0
    text = capsys.readouterr().out
    assert "trace:" in text and "by type" in text
    saved = json.loads(out.read_text())
    assert saved["workload"]["trace"]["file"].endswith("cnn.json.gz")


def test_streamed_memory_is_bounded(tmp_path):
    """Reading keeps a few numbers per kept event and one entry per distinct call, never the file's tree of
    dicts: doubling the events adds under 100 bytes per event to the peak (the columns hold 45), whatever
    the event's text size.  (A 1 GB trace: benchmarks/bench_trace.py.)"""
    import tracemalloc

    event = json.dumps(_op("aten::mm", 0.0, 1.0, ["float", "float"], [[64, 128], [128, 32]]))

    def peak(n: int) -> tuple[int, int]:
        p = tmp_path / f"big{n}.json"
        with open(p, "w") as f:
            f.write('{"schemaVersion": 1, "traceEvents": [\n')
            for k in range(n):
                f.write(("," if k else "") + event.replace('"ts": 0.0', f'"ts": {2.0 * k}') + "\n")
            f.write("]}\n")
        tracemalloc.start()
        ev = read_events(p)
        got = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert len(ev) == n and len(ev.calls) == 1
        return got, p.stat().st_size

    (p1, _), (p2, s2) = peak(40_000), peak(80_000)
    per_event = (p2 - p1) / 40_000
    assert per_event < 100, per_event
    assert p2 < 0.5 * s2  # and the whole peak, read buffer included, is well under the 20 MB file


def test_calibrate_from_trace(traces, tmp_path, capsys):
    path, _, _ = traces["cnn"]
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--from-trace", str(path), "--device", "xeon-8480", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "calibration of" in text
    from roofline.hardware.calibration import load_calibration

    cal = load_calibration(json.loads(out.read_text()), str(out))
    assert cal.device.startswith("Intel Xeon Platinum 8480+") and cal.curves
    # the calibration applies through --calibration like a suite one
    assert main(["trace", str(path), "--device", "xeon-8480", "--forecast", "--calibration", str(out)]) == 0
    assert "calibration: calibrated on" in capsys.readouterr().out
    # a catalog device is never written: --out is required, checked before any work
    assert main(["calibrate", "--from-trace", str(path), "--device", "xeon-8480"]) == 2
    assert "give --out" in capsys.readouterr().err


def test_held_out_ops_are_not_fitted(traces):
    from roofline.hardware.calibration import HELD_OUT, fit_measured, measured_points

    path, _, _ = traces["block_train"]
    a = from_trace(path, "xeon-8480")
    fit = fit_measured(a, device="d", machine="", date="today", source="t")
    fitted = {(p.name, p.size) for p in fit.calibration.points}
    held = {(p.name, p.size) for p in fit.held_out}
    assert fitted.isdisjoint(held) and len(fitted) + len(held) == len(measured_points(a))
    assert HELD_OUT == 4 and all(np.isfinite(p.forecast) for p in fit.held_out)



def test_profiler_steps_are_the_whole_run_time(tmp_path):
    """A scheduled profile (wait 0, warmup 1, active 2): two ProfilerStep#N spans; the ops of both are kept
    and the whole-run time is the sum of the two steps' spans, read from the JSON independently."""
    from torch.profiler import schedule

    net, x = torch.nn.Linear(32, 32), torch.randn(4, 32)
    path = tmp_path / "steps.json"
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 schedule=schedule(wait=0, warmup=1, active=2, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
        for _ in range(3):
            with torch.no_grad():
                net(x)
            prof.step()
    w = read_trace(path)
    steps = [e["dur"] for e in json.loads(path.read_text())["traceEvents"]
             if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
    assert w.trace.steps == len(steps) == 2
    assert [w.strings("name", i) for i in range(len(w))] == ["addmm", "addmm"]  # one Linear per step
    assert w.measured.timing.median == pytest.approx(sum(steps) * 1e-6)


def test_cpu_trace_on_a_gpu_device_is_flagged(traces):
    path, _, _ = traces["cnn"]
    a = from_trace(path, "h100-sxm")
    assert any("not the hardware that ran it" in w for w in a.workload.warnings)
    assert not any("not the hardware" in w for w in from_trace(path, "xeon-8480").workload.warnings)


def _stepped_trace(path: Path, steps: int) -> Path:
    """One rank, ``steps`` profiler steps: step k (from k x 2000 us) lasts 1000 + 2k us and runs one aten::mm of
    (64 x 128) @ (128 x 32) fp32 for 100 us."""
    mm = {"Input type": ["float", "float"], "Input Dims": [[64, 128], [128, 32]],
          "Input Strides": [[128, 1], [32, 1]], "Concrete Inputs": ["", ""]}
    events = []
    for k in range(steps):
        t0 = 2000.0 * k
        events += [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": t0,
                    "dur": 1000.0 + 2 * k},
                   {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t0 + 10, "dur": 100.0,
                    "args": mm}]
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def test_profiler_steps_are_not_runs(tmp_path):
    """Issue 51, defect 4: 50 profiler steps of 1000 + 2k us (k = 0..49).  The time per step: q1 at position
    0.25 x 49 = 12.25 (1024.5 us), the median at 24.5 (1049 us), q3 at 36.75 (1073.5 us), numpy.percentile's
    linear interpolation; the whole run is their sum, 50 x 1000 + 2 x (0 + ... + 49) = 52,450 us, one measurement.
    Against a device whose bound is near (10 GFLOP/s, 1 GB/s: each mm max(2 x 64 x 128 x 32 / 1e10, (64 x 128 +
    128 x 32 + 64 x 32) x 4 / 1e9) = 57.3 us, 2.87 ms for 50; 52.45 / 2.87 = 18x) there is no note; the terminal's
    headline gives the steps, never 'runs'."""
    from roofline import Device
    from roofline.frontends.trace import trace_notes
    from roofline.render.terminal import summary_lines

    path = _stepped_trace(tmp_path / "steps.json", 50)
    a = from_trace(path, Device.simple("near", "10 GFLOP/s", "1 GB/s"))
    notes = trace_notes(a)
    assert notes.steps.repeats == 50
    assert (notes.steps.low, notes.steps.median, notes.steps.high) == pytest.approx((1024.5e-6, 1049e-6, 1073.5e-6))
    assert notes.whole == pytest.approx(52450e-6) and a.total_time == pytest.approx(50 * 57344 / 1e9)
    assert notes.ratio == pytest.approx(52450e-6 / (50 * 57344 / 1e9)) and notes.far_off is None
    head = summary_lines(summarize(a))[0]
    # format_seconds: 3 significant digits of 1049, 1024.5 and 1073.5 us
    assert "50 profiler steps: median 1.05 ms per step (1.02 ms..1.07 ms)" in head
    assert "runs" not in head


def test_cpu_trace_on_a_gpu_is_noted_in_the_headline(tmp_path):
    """The same trace against an H100: the bound (fp32 vector, HBM) is well under a microsecond per mm, so the
    52.45 ms measured is thousands of times the bound: the note leads the terminal's summary, names the likely
    cause (CPU times, a GPU device) and is among the workload's warnings (JSON, HTML)."""
    from roofline.frontends.trace import trace_notes
    from roofline.frontends.trace.notes import FAR_OFF
    from roofline.render.terminal import summary_lines

    a = from_trace(_stepped_trace(tmp_path / "steps.json", 50), "h100-sxm")
    notes = trace_notes(a)
    assert notes.ratio > 1000 > FAR_OFF and notes.far_off is not None and "CPU times" in notes.far_off
    assert notes.far_off in a.workload.warnings
    lines = summary_lines(summarize(a))
    assert lines[0] == notes.far_off and "runs" not in lines[1]


def test_headline_bound_label_matches_the_table(tmp_path):
    """Issue 51, defect 2, planted: 10 mm of (64 x 128) @ (128 x 32) fp32 (524,288 FLOPs, 57,344 bytes each) and
    one add of two 64 x 128 fp32 tensors (8,192 FLOPs, 98,304 bytes), on a device of 8.738 GFLOP/s and 1 GB/s:
    each mm is compute-bound, 60 us against 57.3 us of memory; the add memory-bound, 98.3 us.  By each op's own
    bound, compute holds 600 of 698 us (86%): the headline says compute-bound.  The group's summed times, compute
    600.9 us against memory 671.3 us, would say memory: the table's one row must say what the headline says."""
    from roofline import Device
    from roofline.words.summary import binding_roof

    mm = {"Input type": ["float", "float"], "Input Dims": [[64, 128], [128, 32]],
          "Input Strides": [[128, 1], [32, 1]], "Concrete Inputs": ["", ""]}
    add = {"Input type": ["float", "float", "Scalar"], "Input Dims": [[64, 128], [64, 128], []],
           "Input Strides": [[128, 1], [128, 1], []], "Concrete Inputs": ["", "", "1"]}
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 200.0 * k, "dur": 100.0,
               "args": mm} for k in range(10)]
    events.append({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 3000.0, "dur": 100.0,
                   "args": add})
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    a = from_trace(path, Device.simple("ridge", 524288 / 60e-6, "1 GB/s"))
    assert binding_roof(a).kind == "compute" and binding_roof(a).share == pytest.approx(600 / (600 + 98.304), 1e-3)
    (row,) = a.by("group")
    assert row.bound == binding_roof(a).kind
