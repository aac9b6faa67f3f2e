import math

import numpy as np
import pytest

from roofline.errors import RooflineError
from roofline.workload import Op, Workload, WorkloadBuilder


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
