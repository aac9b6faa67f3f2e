"""User cost formulas (roofline.work.costs.register_op) through the PyTorch frontend, and `roofline ops`."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from roofline import from_torch  # noqa: E402
from roofline.cli import main  # noqa: E402
from roofline.core.errors import RooflineError  # noqa: E402
from roofline.work import costs  # noqa: E402
from roofline.work.costs import Cost, T  # noqa: E402


@torch.library.custom_op("roofline_test::fused_mlp", mutates_args=())
def fused_mlp(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    return torch.relu(x @ w1) @ w2


@fused_mlp.register_fake
def _fused_mlp_fake(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    return x.new_empty(x.shape[0], w2.shape[1])


class MLP(nn.Module):
    """x (2, 8) -> relu(x @ w1 (8, 16)) @ w2 (16, 4), all in one custom op."""

    def __init__(self) -> None:
        super().__init__()
        self.w1 = nn.Parameter(torch.empty(8, 16))
        self.w2 = nn.Parameter(torch.empty(16, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return fused_mlp(x, self.w1, self.w2)


def fused_mlp_cost(inputs: list[T], outputs: list[T]) -> Cost:
    """two matmuls and a relu; the hidden activation stays on chip"""
    x, w1, w2 = inputs
    m, k = x.shape
    h, n = w1.shape[1], w2.shape[1]
    return Cost("matmul", 2 * m * k * h + m * h + 2 * m * h * n, *costs.traffic(inputs, outputs))


@pytest.fixture(autouse=True)
def _no_user_formulas():
    """Every test starts and ends with the registrations it found."""
    saved = dict(costs.USER_FORMULAS)
    yield
    costs.USER_FORMULAS.clear()
    costs.USER_FORMULAS.update(saved)


def mlp_workload():
    with torch.device("meta"):
        model, x = MLP(), torch.empty(2, 8)
    return from_torch(model, x)


def test_custom_op_formula_counts_flops_bytes_and_weights():
    assert str(torch.ops.roofline_test.fused_mlp) == "roofline_test.fused_mlp"
    # without a formula: kept as 'other', 0 FLOPs, listed unsupported
    # bytes: x 2*8*4 = 64 + w1 8*16*4 = 512 + w2 16*4*4 = 256 read = 832; out 2*4*4 = 32 written -> 864
    w = mlp_workload()
    assert [(u.name, u.count, u.bytes) for u in w.unsupported] == [("roofline_test.fused_mlp", 1, 864.0)]
    assert w.strings("kind", 0) == "other" and w.total_flops == 0

    # registered after that trace: the next trace sees it
    costs.register_op("torch", "roofline_test.fused_mlp", fused_mlp_cost)
    w = mlp_workload()
    assert len(w) == 1 and not w.unsupported
    op = w.op(0)
    assert str(op.name) == "roofline_test.fused_mlp" and op.kind == "matmul" and op.unit == "matrix"
    # x @ w1: 2*2*8*16 = 512; relu on (2, 16): 32; h @ w2: 2*2*16*4 = 256 -> 800
    assert op.flops == 800
    assert op.bytes_read == 832 and op.bytes_written == 32
    # w1 and w2 are parameters: 512 + 256 = 768 weight bytes (added by the frontend, not the formula)
    assert op.weight_bytes == 768
    assert any("roofline_test.fused_mlp" in a for a in w.assumptions)


def test_user_formula_must_return_a_cost():
    costs.register_op("torch", "roofline_test.fused_mlp", lambda ins, outs: 42)
    with pytest.raises(RooflineError, match="returned int"):
        mlp_workload()


def relu_workload():
    with torch.device("meta"):
        model, x = nn.ReLU(), torch.empty(4, 8)
    return from_torch(model, x)


def ten_per_element(inputs: list[T], outputs: list[T]) -> Cost:
    return Cost("elementwise", 10 * outputs[0].numel, *costs.traffic(inputs, outputs))


def test_a_builtin_formula_registered_again_before_its_frontend_is_imported_is_still_an_error():
    """costs imports no frontend (the layers contract), so the torch table is registered when the frontend is
    imported; a user formula for a built-in op given earlier without override=True is the same error then,
    and it is removed, so the frontend still imports (a fresh interpreter: here the frontend is imported)."""
    import subprocess
    import sys

    code = (
        "from roofline import costs\n"
        "f = lambda i, o: costs.Cost('other', 0.0, 0.0, 0.0)\n"
        "costs.register_op('torch', 'aten.relu', f)\n"
        "costs.register_op('torch', 'mylib.fused_mlp', f)\n"  # not built in: fine either way
        "try:\n"
        "    import roofline.frontends.torch_ops\n"
        "except ValueError as e:\n"
        "    print('ValueError:', e)\n"
        "import roofline.frontends.torch_ops\n"
        "print(('torch', 'aten.relu') in costs.USER_FORMULAS, ('torch', 'mylib.fused_mlp') in costs.USER_FORMULAS)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert "ValueError: torch op 'aten.relu' already has a cost formula; pass override=True" in out
    assert out.strip().endswith("False True")


def test_override_a_builtin_aten_op_and_unregister():
    key = str(torch.ops.aten.relu)
    assert key == "aten.relu" and key in costs.builtin_ops("torch")
    # built-in: 1 FLOP per element of (4, 8) = 32; reads and writes 32 * 4 = 128 bytes
    w = relu_workload()
    assert (w.total_flops, w.op(0).bytes_read, w.op(0).bytes_written) == (32, 128, 128)
    with pytest.raises(ValueError, match="override=True"):
        costs.register_op("torch", "aten.relu", ten_per_element)
    costs.register_op("torch", "aten.relu", ten_per_element, override=True)
    # 10 FLOPs per element: 10 * 32 = 320; bytes from costs.traffic, as before
    w = relu_workload()
    assert (w.total_flops, w.op(0).bytes_read, w.op(0).bytes_written, str(w.op(0).name)) == (320, 128, 128, "relu")
    costs.unregister_op("torch", "aten.relu")
    assert relu_workload().total_flops == 32


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ops_command_lists_torch_table(capsys):
    code, out, _ = run(capsys, "ops", "--frontend", "torch")
    assert code == 0
    mm = next(line for line in out.splitlines() if " aten.mm " in line)
    assert " matmul " in mm
    code, out, _ = run(capsys, "ops", "--frontend", "torch", "--json")
    assert code == 0
    rows = json.loads(out)
    # one row per op of the table, no user rows
    assert len(rows) == len(costs.builtin_ops("torch")) and not any(r["user"] for r in rows)
    mm_row = next(r for r in rows if r["op"] == "aten.mm")
    assert mm_row == {"frontend": "torch", "op": "aten.mm", "formula": "matmul",
                      "counts": costs.builtin_ops("torch")["aten.mm"].description, "user": False}


def test_ops_command_marks_user_formulas(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # the content of a row, whole (tests/test_widths.py checks narrow terminals)
    costs.register_op("torch", "roofline_test.fused_mlp", fused_mlp_cost)
    costs.register_op("torch", "aten.relu", ten_per_element, override=True)
    code, out, _ = run(capsys, "ops", "--frontend", "torch", "--json")
    rows = {r["op"]: r for r in json.loads(out)}
    # the custom op is added; aten.relu's row is replaced in place (same count: table + 1)
    assert len(rows) == len(costs.builtin_ops("torch")) + 1
    assert rows["roofline_test.fused_mlp"] == {"frontend": "torch", "op": "roofline_test.fused_mlp",
                                               "formula": "fused_mlp_cost", "user": True,
                                               "counts": "two matmuls and a relu; the hidden activation stays on chip"}
    assert rows["aten.relu"]["user"] and rows["aten.relu"]["counts"] == "replaces elementwise"
    code, out, _ = run(capsys, "ops", "--frontend", "torch")
    assert code == 0
    line = next(line for line in out.splitlines() if "roofline_test.fused_mlp" in line)
    assert "fused_mlp_cost (user)" in line


def test_ops_command_unknown_frontend_is_one_line_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["ops", "--frontend", "tensorflow"])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("roofline: error: ") and "tensorflow" in lines[0]


def test_ops_command_every_frontend(capsys):
    # no --frontend: the torch table then the onnx table (costs.builtin_ops imports each lazily)
    code, out, _ = run(capsys, "ops", "--json")
    assert code == 0
    rows = json.loads(out)
    n_torch = len(costs.builtin_ops("torch"))
    assert [r["frontend"] for r in rows] == ["torch"] * n_torch + ["onnx"] * len(costs.builtin_ops("onnx"))
    assert any(r["op"] == "Gemm" and r["formula"] == "matmul" for r in rows[n_torch:])
