"""One decorator gives a new op its cost in both frontends: ``@costs.formula(name, torch=[...], onnx=[...])``."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402

from roofline import from_torch  # noqa: E402
from roofline.frontends import torch_ops  # noqa: E402
from roofline.frontends.onnx import from_onnx  # noqa: E402
from roofline.frontends.onnx import ops as onnx_ops  # noqa: E402
from roofline.work import costs  # noqa: E402
from roofline.work.costs import Cost, T  # noqa: E402

NAME = "roofline_test.triple_add"
TORCH_OP = "roofline_test.triple_add"
ONNX_OP = "com.roofline_test.TripleAdd"


@torch.library.custom_op("roofline_test::triple_add", mutates_args=())
def triple_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x + y + y + y


@triple_add.register_fake
def _triple_add_fake(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x.new_empty(x.shape)


class Triple(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return triple_add(x, y)


def triple_cost(inputs: list[T], outputs: list[T]) -> Cost:
    """3 FLOPs per output element (three adds)"""
    return Cost("elementwise", 3.0 * outputs[0].numel, *costs.traffic(inputs, outputs))


def torch_workload():
    with torch.device("meta"):
        x, y = torch.empty(4, 8), torch.empty(4, 8)
    return from_torch(Triple(), x, y)


def onnx_model():
    g = h.make_graph([h.make_node("TripleAdd", ["x", "y"], ["z"], name="triple", domain="com.roofline_test")], "g",
                     [h.make_tensor_value_info("x", TP.FLOAT, [4, 8]), h.make_tensor_value_info("y", TP.FLOAT, [4, 8])],
                     [h.make_tensor_value_info("z", TP.FLOAT, [4, 8])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.roofline_test", 1)])
    m.ir_version = min(m.ir_version, onnx.IR_VERSION)
    return m


@pytest.fixture
def registered():
    """The formula and its two targets, registered by one decorator call (after both frontends were imported),
    and removed afterwards whatever the test did."""
    costs.formula(NAME, torch=[TORCH_OP], onnx=[ONNX_OP])(triple_cost)
    yield
    costs.unregister_formula(NAME)


def test_one_decorator_gives_both_frontends_the_op(registered):
    # both frontends' tables (what they look ops up in, and what `roofline ops` lists) have the row
    assert costs.builtin_ops("torch") is torch_ops.OPS and costs.builtin_ops("onnx") is onnx_ops.OPS
    assert torch_ops.OPS[TORCH_OP].formula == NAME and onnx_ops.OPS[ONNX_OP].formula == NAME
    assert onnx_ops.entry_for(ONNX_OP) is not None
    assert torch_ops.OPS[TORCH_OP].description == "3 FLOPs per output element (three adds)"
    # traced: (4, 8) = 32 elements x 3 = 96 FLOPs; reads x and y 2 * 32 * 4 = 256 bytes, writes z 32 * 4 = 128
    w = torch_workload()
    assert not w.unsupported and len(w) == 1
    op = next(iter(w))
    assert (op.kind, op.flops, op.bytes_read, op.bytes_written) == ("elementwise", 96, 256, 128)
    # the same op as an ONNX node: the same formula over the node's data inputs, the same numbers
    w = from_onnx(onnx_model())
    assert not w.unsupported and len(w) == 1
    op = next(iter(w))
    assert (op.kind, op.flops, op.bytes_read, op.bytes_written) == ("elementwise", 96, 256, 128)


def test_roofline_ops_lists_the_declared_ops(registered, capsys):
    import json

    from roofline.cli import main

    assert main(["ops", "--json"]) == 0
    rows = {(r["frontend"], r["op"]): r for r in json.loads(capsys.readouterr().out)}
    assert rows[("torch", TORCH_OP)]["formula"] == NAME and rows[("onnx", ONNX_OP)]["formula"] == NAME
    assert not rows[("torch", TORCH_OP)]["user"]


def test_unregister_removes_the_formula_and_its_ops(registered):
    costs.unregister_formula(NAME)
    assert NAME not in costs.FORMULAS and TORCH_OP not in torch_ops.OPS and ONNX_OP not in onnx_ops.OPS
    assert onnx_ops.entry_for(ONNX_OP) is None
    # costed no more: bytes only, listed unsupported (x, y read 256 + z written 128 = 384)
    assert [(u.name, u.bytes) for u in torch_workload().unsupported] == [(TORCH_OP, 384.0)]
    assert [u.name for u in from_onnx(onnx_model()).unsupported] == [ONNX_OP]
    costs.formula(NAME, torch=[TORCH_OP], onnx=[ONNX_OP])(triple_cost)  # the fixture removes it again


def test_a_second_registration_is_an_error_and_registers_nothing(registered):
    with pytest.raises(ValueError, match="already registered"):
        costs.formula(NAME)(triple_cost)
    # an op some formula has already: in a frontend's own table, declared by another formula, or named twice
    for kw in ({"torch": ["aten.mm"]}, {"onnx": ["MatMul"]}, {"onnx": ["Slice"]}, {"torch": [TORCH_OP]},
               {"onnx": ["com.roofline_test.Other", "com.roofline_test.Other"]}):
        with pytest.raises(ValueError, match="already has a cost formula"):
            costs.formula("roofline_test.other", **kw)(triple_cost)
        assert "roofline_test.other" not in costs.FORMULAS
    assert "com.roofline_test.Other" not in onnx_ops.OPS and torch_ops.OPS["aten.mm"].formula == "matmul"
    # a user formula for a declared op needs override=True, as for any built-in one
    with pytest.raises(ValueError, match="override=True"):
        costs.register_op("onnx", "Slice", triple_cost)


def test_the_moved_ops_are_declared_by_their_formulas():
    """The data-movement ops (no attribute read) are declared with their formulas, and the tables have them."""
    assert costs.TARGETS["onnx"]["Slice"].formula == "slice"
    assert costs.TARGETS["torch"]["aten.index_select"].formula == "gather"
    assert all(torch_ops.OPS[op] is rule for op, rule in costs.TARGETS["torch"].items())
    assert all(onnx_ops.OPS[op] is rule and op in onnx_ops.ENTRIES for op, rule in costs.TARGETS["onnx"].items())
