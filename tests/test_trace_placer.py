"""The placer (a nesting level at a time over numpy columns) against the per-event walk it replaced
(tests/trace_placer_reference.py): the same Workload, field by field, on recorded CPU traces (inference and
training), GPU traces in kineto's format, HTA's sampled trace, and random nested traces built to hit every rule
(modules and record_function scopes, views and composites, wrappers, backward scopes nested and with sequence
numbers seen before and after, gloo annotations, collectives, ProfilerSteps, partial overlaps, several threads)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import models  # noqa: E402
from test_trace import record  # noqa: E402
from test_trace_gpu_ranks import gpu_rank  # noqa: E402
from trace_placer_reference import ReferencePlacer  # noqa: E402

from roofline.core.errors import RooflineError  # noqa: E402
from roofline.frontends.trace.events import read_events  # noqa: E402
from roofline.frontends.trace.placer import Placer, _depths  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "gpu"


def _same(a, b) -> None:
    assert json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)
    assert a.tables == b.tables
    for c in a.columns:
        assert a.columns[c].dtype == b.columns[c].dtype, c
        assert np.array_equal(a.columns[c], b.columns[c], equal_nan=True), c
    assert a.trace == b.trace and a.measured == b.measured
    assert a.warnings == b.warnings and a.unsupported == b.unsupported and a.assumptions == b.assumptions


def _both(path: Path) -> None:
    ev = read_events(path)
    try:
        want = ReferencePlacer(ev).workload(None)
    except RooflineError as exc:
        with pytest.raises(RooflineError) as got:
            Placer(ev).workload(None)
        assert str(got.value) == str(exc)
        return
    _same(Placer(ev).workload(None), want)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    d = tmp_path_factory.mktemp("placer")
    torch.manual_seed(0)
    cnn, (xc,) = models.small_cnn(batch=2, device="cpu")
    block, (xb,) = models.transformer_block(device="cpu")
    return [record(d / "cnn.json", cnn, xc), record(d / "block_train.json", block, xb, training=True),
            record(d / "block_nostack.json", block, xb, training=True, stack=False)]


def test_recorded_cpu_traces(recorded):
    for path in recorded:
        _both(path)


def test_gpu_traces(tmp_path):
    for r in range(2):
        _both(gpu_rank(tmp_path / f"rank{r}.json", r, 2, 200.0 + 60 * r, steps=3))
    _both(FIXTURES / "hta_sampled_rank-0.json.gz")


MM = {"Input type": ["float", "float"], "Input Dims": [[8, 16], [16, 4]], "Input Strides": [[16, 1], [4, 1]],
      "Concrete Inputs": ["", ""]}
ADD = {"Input type": ["float", "float", "Scalar"], "Input Dims": [[8, 4], [8, 4], []],
       "Input Strides": [[4, 1], [4, 1], []], "Concrete Inputs": ["", "", "1"]}
VIEW = {"Input type": ["float", "ScalarList"], "Input Dims": [[8, 4], [2]], "Input Strides": [[4, 1], []],
        "Concrete Inputs": ["", "[32]"]}
LINEAR = {"Input type": ["float", "float", "float"], "Input Dims": [[8, 16], [4, 16], [4]],
          "Input Strides": [[16, 1], [16, 1], [1]], "Concrete Inputs": ["", "", ""]}
BAD = {"Input type": ["float"], "Input Dims": [[8, 4]], "Input Strides": [[4, 1]], "Concrete Inputs": [""]}
GLOO = {"Input type": ["TensorList"], "Input Dims": [[[8, 4]]]}
COMMS = {"Collective name": "allreduce", "dtype": "Float", "In msg nelems": 32, "Out msg nelems": 32,
         "Group size": 2}
#: (cat, name, args): what the random traces draw from
KINDS = [("cpu_op", "aten::mm", MM), ("cpu_op", "aten::add", ADD), ("cpu_op", "aten::view", VIEW),
         ("cpu_op", "aten::linear", LINEAR), ("cpu_op", "aten::nonexistent_op", BAD), ("cpu_op", "aten::mm", {}),
         ("cpu_op", "autograd::engine::evaluate_function: MmBackward0", {}),
         ("cpu_op", "c10d::allreduce_", {}), ("cpu_op", "record_param_comms", COMMS),
         ("cpu_op", "record_param_comms", {}), ("cpu_op", "aten::empty", BAD),
         ("user_annotation", "gloo:all_reduce", GLOO), ("user_annotation", "my_scope", {}),
         ("user_annotation", "ProfilerStep#3", {}), ("python_function", "nn.Module: Linear_0", {}),
         ("python_function", "nn.Module: Block_1", {}), ("python_function", "helper.py(12): f", {}),
         ("cuda_runtime", "cudaLaunchKernel", {})]


def _random_trace(path: Path, rng: np.random.Generator, n: int) -> Path:
    """``n`` events on two threads, nested by construction (children inside their parent), some overlapping their
    neighbours, with sequence numbers drawn from a few (so backward scopes see them before and after)."""
    events: list[dict] = []

    def fill(tid: int, t0: float, t1: float, depth: int) -> None:
        t = t0
        while t < t1 and len(events) < n:
            dur = float(np.round(rng.uniform(0.5, max(0.6, (t1 - t) * 0.9)), 1))
            if t + dur > t1:
                dur = float(np.round(t1 - t, 1))
            if dur <= 0:
                return
            cat, name, args = KINDS[int(rng.integers(len(KINDS)))]
            a = dict(args)
            if cat == "cpu_op" and rng.random() < 0.6:
                a["Sequence number"] = int(rng.integers(0, 6))
            events.append({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": t, "dur": dur, "args": a})
            if depth < 6 and dur > 2:
                fill(tid, t + 0.1, t + dur - 0.1, depth + 1)
            t += dur + float(np.round(rng.uniform(-0.3, 1.0), 1))  # sometimes overlapping the next
    for tid in (1, 2):
        fill(tid, 0.0, 400.0, 0)
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def test_random_nested_traces(tmp_path):
    rng = np.random.default_rng(34)
    for k in range(40):
        _both(_random_trace(tmp_path / f"r{k}.json", rng, int(rng.integers(5, 300))))


def test_depths_by_hand():
    # 0 and 4 roots; 1 in 0; 2 and 3 in 1; 5 in 4; 6 in 3
    parent = np.array([-1, 0, 1, 1, -1, 4, 3])
    assert _depths(parent).tolist() == [0, 1, 2, 2, 0, 1, 3]
    assert _depths(np.zeros(0, dtype=np.int64)).tolist() == []
    chain = np.arange(-1, 999)  # each node in the one before: depth = index
    assert _depths(chain).tolist() == list(range(1000))


def test_nesting_deeper_than_the_limit_is_one_line(tmp_path, monkeypatch):
    """A chain of 50 nested scopes with an op at the bottom: placed as the walk places it under a limit of 60
    levels (51 levels: the scopes and the op), one line naming the depth under a limit of 40."""
    n = 50
    events = [{"ph": "X", "cat": "user_annotation", "name": f"s{i}", "pid": 1, "tid": 1, "ts": float(i),
               "dur": float(4 * n - 2 * i), "args": {}} for i in range(n)]  # each inside the one before
    events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": float(n), "dur": 1.0,
                   "args": MM})
    path = tmp_path / "chain.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    monkeypatch.setenv("ROOFLINE_MAX_TRACE_DEPTH", "60")
    _both(path)
    w = Placer(read_events(path)).workload(None)
    assert w.strings("group", 0) == ".".join(f"s{i}" for i in range(n))  # every scope on the path
    monkeypatch.setenv("ROOFLINE_MAX_TRACE_DEPTH", "40")
    with pytest.raises(RooflineError, match=r"chain\.json: events nested 51 deep, more than the limit of 40 .*"
                                            r"ROOFLINE_MAX_TRACE_DEPTH"):
        Placer(read_events(path)).workload(None)


def test_time_order_is_lexsort():
    """time_order against np.lexsort((-dur, ts)) on random events with many equal starts and equal lengths."""
    from roofline.frontends.trace.placer import time_order

    rng = np.random.default_rng(7)
    for n in (0, 1, 2, 17, 500):
        for _ in range(20):
            ts = rng.integers(0, max(1, n // 4), n).astype(float)  # about four events per start
            dur = rng.integers(0, 3, n).astype(float)
            if n:
                ts[rng.random(n) < 0.1] = -0.0  # -0.0 and 0.0 are one start, as lexsort takes them
            assert time_order(ts, dur).tolist() == np.lexsort((-dur, ts)).tolist()
