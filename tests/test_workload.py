import json
import math

import numpy as np
import pytest

from roofline.core.errors import RooflineError
from roofline.work.workload import Op, Workload, WorkloadBuilder


def sample():
    b = WorkloadBuilder()
    b.add("q_proj", kind="matmul", flops=2 * 8 * 4096 * 4096, bytes_read=2 * (8 * 4096 + 4096 * 4096),
          bytes_written=2 * 8 * 4096, precision="bf16", unit="matrix", count=32, group="model.layers.0.attn",
          module_type="Linear", weight_bytes=2 * 4096 * 4096)
    b.add("add", kind="elementwise", flops=8 * 4096, bytes_read=2 * 2 * 8 * 4096, bytes_written=2 * 8 * 4096,
          precision="bf16", group="model.layers.0", measured_seconds=1e-5)
    b.add_unsupported("aten.weird", 1024)
    b.warn("something to know")
    return b.build(title="t", source="test")


def test_totals_use_count():
    w = sample()
    # q_proj runs 32 times: 32 * 2*8*4096*4096 FLOPs, plus the add's 8*4096
    assert w.total_flops == 32 * 2 * 8 * 4096 * 4096 + 8 * 4096
    assert len(w) == 2 and w.op(0).count == 32


def test_json_and_csv_round_trip(tmp_path):
    w = sample()
    p = tmp_path / "w.json"
    w.save(p)
    w2 = Workload.load(p)
    assert w2.to_dict() == w.to_dict()
    c = tmp_path / "w.csv"
    w.save_csv(c)
    w3 = Workload.load(c)
    assert w3.to_dict() == w.to_dict()
    assert math.isnan(w3.op(0).measured_seconds) and w3.op(1).measured_seconds == 1e-5
    assert w3.unsupported[0].name == "aten.weird"


def test_list_of_objects_form():
    w = Workload.from_dict({"schema": "roofline.workload/1",
                            "ops": [{"name": "a", "flops": 1, "bytes_read": 2, "bytes_written": 3}]})
    assert w.op(0).bytes == 5


def _doc(**op):
    base = {"name": "a", "flops": 1.0, "bytes_read": 2.0, "bytes_written": 3.0}
    base.update(op)
    return {"schema": "roofline.workload/1", "ops": [base]}


@pytest.mark.parametrize("doc, message", [
    (_doc(flops=-1), "flops must be a finite number >= 0"),
    (_doc(bytes_read=float("nan")), "bytes_read must be a finite number >= 0"),
    (_doc(bytes_written=float("inf")), "bytes_written must be a finite number >= 0"),
    (_doc(measured_seconds=-2), "measured_seconds must be a finite number > 0"),
    (_doc(measured_seconds=float("inf")), "measured_seconds must be a finite number > 0"),
    (_doc(kind="matmull"), "kind 'matmull' is not one of"),
    ({"schema": "roofline.workload/1", "ops": []}, "the op list is empty"),
    ({"schema": "roofline.workload/1", "ops": {"name": [], "flops": [], "bytes_read": [], "bytes_written": []}},
     "the op list is empty"),
    ({"schema": "roofline.workload/1", "ops": {"name": ["a"], "flops": [1]}}, "missing column(s) bytes_read, bytes_written"),
    ({"schema": "roofline.workload/0", "ops": []}, "schema"),
    ({"schema": "roofline.workload/1", "ops": [{"name": "a", "flops": 1}]}, "missing column(s)"),
    (_doc(flops="lots"), "flops must be a number, got 'lots'"),
])
def test_bad_workloads(doc, message):
    with pytest.raises(RooflineError) as e:
        Workload.from_dict(doc, where="w.json")
    assert message in str(e.value) and "w.json" in str(e.value)


def test_select_and_replace_keep_metadata():
    w = sample()
    sub = w.select(np.array([False, True]))
    assert len(sub) == 1 and sub.strings("name", 0) == "add" and sub.warnings == ["something to know"]
    w2 = w.replace(precision=["fp8", "fp8"])
    assert w2.strings("precision", 0) == "fp8"


def test_op_bytes_property():
    assert Op("x", bytes_read=3, bytes_written=4).bytes == 7


def _ops(*ops, **top):
    return {"schema": "roofline.workload/1", "ops": [{"name": f"op{i}", "flops": 1.0, "bytes_read": 2.0,
                                                      "bytes_written": 3.0, **o} for i, o in enumerate(ops)], **top}


def test_optional_fields_on_some_ops_take_their_defaults():
    w = Workload.from_dict(_ops({"count": 3}, {}, {"weight_bytes": 2.0, "measured_seconds": 1e-3},
                                {"bytes_l2": 5.0, "count": None, "kind": None}))
    assert w.columns["count"].tolist() == [3.0, 1.0, 1.0, 1.0]
    assert w.columns["weight_bytes"].tolist() == [0.0, 0.0, 2.0, 0.0]
    assert np.isnan(w.columns["measured_seconds"][[0, 1, 3]]).all() and w.columns["measured_seconds"][2] == 1e-3
    assert w.columns["bytes_l2"].tolist() == [0.0, 0.0, 0.0, 5.0] and w.strings("kind", 3) == "other"


def test_null_metadata_is_the_default():
    w = Workload.from_dict(_ops({}, title=None, info=None, unsupported=None, assumptions=None))
    assert w.title == "workload" and w.info == {} and w.unsupported == []


@pytest.mark.parametrize("doc, message", [
    (_ops({}, {"flops": True}), "ops[1].flops must be a number, got true"),
    (_ops({"name": 5}), "ops[0].name must be a string, got 5"),
    (_ops({"count": "2"}), "ops[0].count must be a number, got '2'"),
    (_ops({"kind": 5}), "ops[0].kind must be a string"),
    (_ops({"flops": 10**400}), "ops[0].flops must be a finite number, got an integer of 401 digits"),
    (_ops({"flops": 1e31}), "ops[0].flops must be a finite number >= 0 and <= 1e+30"),
    (_ops({"count": 1e16}), "ops[0].count must be a finite number > 0 and <= 1e+15"),
    (_ops({"measured_seconds": 5e-324}), "ops[0].measured_seconds must be"),
    (_ops({"flops": None}), "ops[0].flops: missing"),
    (_ops({"flop": 3}), "ops[0].flop: unknown field 'flop'"),
    ({"schema": "roofline.workload/1", "ops": [{"name": "a", "flops": 1, "bytes_read": 1, "bytes_written": 1}, [1]]},
     "ops[1] must be an op object, got a list [1]"),
    ({"schema": "roofline.workload/1", "ops": "abc"}, "ops must be a list of op objects or an object of columns"),
    ({"schema": "roofline.workload/1", "ops": {"name": "ab", "flops": [1, 2], "bytes_read": [1, 2],
                                               "bytes_written": [1, 2]}}, "ops.name must be a list"),
    ({"schema": "roofline.workload/1", "ops": {"name": ["a"], "flops": [1], "bytes_read": [1], "bytes_written": [1],
                                               "count": [False]}}, "ops.count[0] must be a number"),
    (_ops({}, info=[1, 2]), "info must be an object, got a list [1, 2]"),
    (_ops({}, assumptions=7), "assumptions must be a list"),
    (_ops({}, warnings=["x", 3]), "warnings[1] must be a string"),
    (_ops({}, title={"a": 1}), "title must be a string"),
    (_ops({}, unsupported="abc"), "unsupported must be a list"),
    (_ops({}, unsupported=[{"name": "x", "count": 1.5}]), "unsupported[0].count must be a whole number"),
    (_ops({}, unsupported=[{"count": 1}]), "unsupported[0]: missing field 'name'"),
    (_ops({}, info={"llm": "abc"}), "info.llm must be an object"),
    ([1, 2], "expected a JSON object, got a list"),
])
def test_workload_fields_are_checked_one_by_one(doc, message):
    with pytest.raises(RooflineError) as e:
        Workload.from_dict(doc, where="w.json")
    assert message in str(e.value) and str(e.value).startswith("w.json: ") and "\n" not in str(e.value)


def test_llm_run_is_typed_and_checked_where_it_is_read_back():
    from roofline.frontends.llm import from_llm

    w = from_llm("llama-2-7b", phase="decode", batch=1, context=128)
    d = w.to_dict()
    assert d["schema"] == "roofline.workload/3" and "llm" not in d["info"]
    back = Workload.from_dict(d)
    assert back.llm == w.llm and back.phases == w.phases
    assert back.phases["decode"].tokens == 1  # one decode step of batch 1 makes one token
    d["llm"]["precisions"]["weights"] = "fp7"
    with pytest.raises(RooflineError, match="llm.precisions.weights 'fp7'"):
        Workload.from_dict(d, where="w.json")
    d["llm"]["precisions"]["weights"] = "bf16"
    d["llm"]["arch"]["heads"] = 0
    with pytest.raises(RooflineError, match="llm.arch.heads must be a whole number from 1"):
        Workload.from_dict(d, where="w.json")
    d["llm"]["arch"]["heads"] = 32
    d["phases"]["decode"]["tokens"] = "many"
    with pytest.raises(RooflineError, match="phases.decode.tokens"):
        Workload.from_dict(d, where="w.json")


def _as_version_1(d: dict) -> dict:
    """A /2 workload object written the way /1 wrote it: the typed facts inside ``info``, p10/p90 spreads."""
    v1 = {k: v for k, v in d.items() if k not in ("llm", "phases", "measured")}
    v1["schema"] = "roofline.workload/1"
    v1["info"] = dict(d["info"])
    if d.get("llm") is not None:
        v1["info"]["llm"], v1["info"]["phases"] = d["llm"], d["phases"]
        v1["info"]["memory_bytes"] = 1.0
    m = d.get("measured")
    if m is not None:
        ops = m["ops"]
        v1["info"]["measured"] = {"median": m["median"], "p10": m["q1"], "p90": m["q3"], "repeats": m["repeats"],
                                  "noise": 0.0, "device_type": m["device_type"], "method": m["method"],
                                  "profiled_runs": m["profiled_runs"], "sum_of_op_times": m["sum_of_op_times"],
                                  "ops": None if ops is None else {"p10": ops["q1"], "median": ops["median"],
                                                                   "p90": ops["q3"], "samples": ops["samples"]}}
    return v1


def test_version_1_files_load_migrated():
    from roofline.core.stats import OpTimings, Timing
    from roofline.frontends.llm import from_llm
    from roofline.work.workload import MeasuredRun

    w = from_llm("llama-2-7b", phase="generate", batch=2, prompt=64, gen=8)
    v1 = _as_version_1(w.to_dict())
    back = Workload.from_dict(v1, where="old.json")
    assert back.llm == w.llm and back.phases == w.phases and "llm" not in back.info and "memory_bytes" not in back.info
    np.testing.assert_array_equal(back.columns["flops"], w.columns["flops"])
    # a /1 file's field names stay in its messages
    v1["info"]["llm"]["precisions"]["weights"] = "fp7"
    with pytest.raises(RooflineError, match="old.json: info.llm.precisions.weights 'fp7'"):
        Workload.from_dict(v1, where="old.json")
    # a measured run: /1 kept 10th/90th percentiles, /2 loads them as its spread
    ops = OpTimings(np.array([0.9, np.nan]), np.array([1.0, np.nan]), np.array([1.2, np.nan]), np.array([3, 0]))
    m = Workload.from_ops([Op("a", flops=1, bytes_read=1, measured_seconds=1.0), Op("b", flops=1, bytes_read=1)],
                          measured=MeasuredRun(Timing(2.0, 1.9, 2.3, 5), "cpu", "perf_counter", 3, 1.0, ops))
    back = Workload.from_dict(_as_version_1(m.to_dict()))
    assert back.measured is not None and back.measured.timing == Timing(2.0, 1.9, 2.3, 5)
    assert back.measured.ops is not None and back.measured.ops.low[0] == 0.9 and np.isnan(back.measured.ops.low[1])
    assert Workload.from_dict(m.to_dict()).measured.sum_of_op_times == 1.0  # and /2 round-trips
    with pytest.raises(RooflineError, match="schema: expected 'roofline.workload/3'"):
        Workload.from_dict({**m.to_dict(), "schema": "roofline.workload/4"})


def test_csv_empty_cells_are_defaults_and_errors_name_the_line(tmp_path):
    p = tmp_path / "w.csv"
    p.write_text("name,flops,bytes_read,bytes_written,count,measured_seconds,kind\n"
                 "a,1,2,3,1,,\nb,1,2,3,4,1e-3,matmul\n", encoding="utf-8")
    w = Workload.load(p)
    assert w.columns["count"].tolist() == [1.0, 4.0] and w.strings("kind", 0) == "other"
    # an empty count cell is a fault (issue 33), not a count of 1: a count column must give every op's count
    for body, message in [("a,1,2,3,,,other\n", "line 2: count is empty"),
                          ("a,x,2,3,1,,other\n", "line 2: flops must be a number, got 'x'"),
                          ("a,1,2,3,1,,other\nb,1,2,3,1,,other,extra\n", "line 3: 8 cells, the header has 7"),
                          ("a,1,2,3,1e400,,other\n", "line 2: count must be a finite number"),
                          ('"' + "x" * 200_000 + '",1,2,3,1,,other\n', "line 2: not valid CSV")]:
        p.write_text("name,flops,bytes_read,bytes_written,count,measured_seconds,kind\n" + body, encoding="utf-8")
        with pytest.raises(RooflineError) as e:
            Workload.load(p)
        assert message in str(e.value) and str(p) in str(e.value)
    p.write_bytes(b"name,flops,bytes_read,bytes_written\ncaf\xe9,1,2,3\n")
    with pytest.raises(RooflineError, match=r"not valid UTF-8: byte b'\\xe9' at offset \d+ \(line 2\)"):
        Workload.load(p)
    p.write_bytes(b"\xef\xbb\xbfname,flops,bytes_read,bytes_written\na,1,2,3\n")  # a byte-order mark is fine
    assert Workload.load(p).strings("name", 0) == "a"


@pytest.mark.parametrize("text, message", [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"schema": "roofline.workload/1", "x": ' + "7" * 5001 + "}", "a number is too long"),
    ("", "not valid JSON"),
])
def test_json_parse_faults_are_one_line(tmp_path, text, message):
    p = tmp_path / "w.json"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(RooflineError, match=message) as e:
        Workload.load(p)
    assert str(p) in str(e.value)


def test_unreadable_paths_are_one_line_with_the_path_shortened(tmp_path):
    with pytest.raises(RooflineError, match="File name too long") as e:
        Workload.load(tmp_path / ("w" * 5000 + ".json"))
    assert len(str(e.value)) < 400 and "characters" in str(e.value)
    with pytest.raises(RooflineError, match="cannot read: a directory, not a regular file"):
        Workload.load(tmp_path)
    with pytest.raises(RooflineError, match="no such file"):
        Workload.load(tmp_path / "missing.csv")


def test_devices_and_oversized_files_are_not_read(tmp_path, monkeypatch):
    with pytest.raises(RooflineError, match="not a regular file"):
        Workload.load("/dev/zero")
    p = tmp_path / "w.json"
    p.write_text(json.dumps(_ops({})), encoding="utf-8")
    monkeypatch.setenv("ROOFLINE_MAX_INPUT_BYTES", "10")
    with pytest.raises(RooflineError, match="more than the 10-byte limit"):
        Workload.load(p)


def test_version_1_analysis_files_load_migrated():
    """A saved /1 analysis: its /1 device and /1 workload are migrated, and it re-analyses to the same figures."""
    from roofline import Device, analyze
    from roofline.engine.analysis import Analysis

    dev = Device.simple("seed", "100 GFLOP/s", "10 GB/s")
    a = analyze(Workload.from_ops([Op("app", flops=0.8e9, bytes_read=4e9, measured_seconds=1.0)]), dev)
    d = a.to_dict()
    assert d["schema"] == "roofline.analysis/2"
    v1 = {**d, "schema": "roofline.analysis/1", "device": {**d["device"], "schema": "roofline.device/1"},
          "workload": _as_version_1(d["workload"])}
    back = Analysis.from_dict(v1, where="old.json")
    # 4e9 B / 10 GB/s = 0.4 s, measured 1 s: efficiency 0.4, as before saving
    assert back.total_time == pytest.approx(0.4) and back.efficiency[0] == pytest.approx(0.4)
