"""PyTorch frontend: hand-computed single ops, cross-checks against FlopCounterMode, training, attribution, CLI."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import models  # noqa: E402  (tests/models.py)
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from roofline.cli import main  # noqa: E402
from roofline.core.errors import RooflineError  # noqa: E402
from roofline.core.precision import of_dtype as precision_of  # noqa: E402
from roofline.frontends.torch import from_torch  # noqa: E402
from roofline.work.costs import ELEMENTWISE_FLOPS, FORMULAS, T  # noqa: E402

META = "meta"


def meta(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.empty(*shape, dtype=dtype, device=META)


class Fn(nn.Module):
    """Wrap a function as a module so from_torch can trace it."""

    def __init__(self, fn, *params: nn.Module) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self.fn = fn
        self.sub = nn.ModuleList(params)

    def forward(self, *xs):  # type: ignore[no-untyped-def]
        return self.fn(*xs)


def only_op(w):  # type: ignore[no-untyped-def]
    assert len(w) == 1, list(w.column("name"))
    return w.op(0)


def fcm_total(model: nn.Module, *inputs: torch.Tensor) -> int:
    with FlopCounterMode(display=False) as fc, torch.no_grad():
        model(*inputs)
    return fc.get_total_flops()


# -- single ops, by hand ------------------------------------------------------------------------------------------

def test_linear_flops_bytes_and_weights():
    with torch.device(META):
        lin = nn.Linear(64, 32)
    op = only_op(from_torch(nn.Sequential(lin), meta(8, 64)))
    assert op.name == "addmm" and op.kind == "matmul" and op.unit == "matrix" and op.precision == "fp32"
    assert op.flops == 2 * 8 * 64 * 32  # 2 * M * K * N = 32768; the bias add is an epilogue
    assert op.bytes_read == (8 * 64 + 64 * 32 + 32) * 4  # x + W + b = 10368
    assert op.bytes_written == 8 * 32 * 4  # 1024
    assert op.weight_bytes == (64 * 32 + 32) * 4  # W and b are parameters: 8320
    assert (op.group, op.module_type) == ("0", "Linear")


def test_conv2d_stride_padding_groups_dilation():
    with torch.device(META):
        conv = nn.Conv2d(8, 16, 3, stride=2, padding=2, dilation=2, groups=4, bias=False)
    op = only_op(from_torch(conv, meta(2, 8, 16, 16)))
    # out side = floor((16 + 2*2 - 2*(3-1) - 1) / 2) + 1 = 8 -> (2, 16, 8, 8)
    # FLOPs = 2 * N * out_spatial * C_out * (C_in / groups) * kh * kw = 2 * 2 * 64 * 16 * 2 * 9
    assert op.kind == "conv" and op.flops == 73728
    assert op.bytes_read == (2 * 8 * 16 * 16 + 16 * 2 * 3 * 3) * 4  # x + W = 16384 + 1152
    assert op.bytes_written == 2 * 16 * 8 * 8 * 4  # 8192
    assert op.group == "" and op.module_type == "Conv2d"  # the root module itself


def test_bmm():
    op = only_op(from_torch(Fn(torch.bmm), meta(4, 8, 16), meta(4, 16, 32)))
    assert op.flops == 2 * 4 * 8 * 16 * 32  # 32768
    assert (op.bytes_read, op.bytes_written) == ((4 * 8 * 16 + 4 * 16 * 32) * 4, 4 * 8 * 32 * 4)  # 10240, 4096


@pytest.mark.parametrize("causal, pairs", [(False, 8 * 8), (True, 8 * 9 // 2)])
def test_sdpa_causal_counts_lower_triangle(causal, pairs):
    q = meta(1, 2, 8, 16)
    op = only_op(from_torch(Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal)), q, q, q))
    # QK^T and PV: 2 * heads * pairs * (E + Ev); causal keeps 36 of the 64 (query, key) pairs
    assert op.kind == "attention" and op.flops == 2 * 2 * pairs * (16 + 16)
    assert (op.bytes_read, op.bytes_written) == (3 * 2 * 8 * 16 * 4, 2 * 8 * 16 * 4)  # q, k, v read; out written


def test_sdpa_non_causal_equals_flop_counter_mode():
    q = meta(2, 4, 32, 16)
    m = Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v))
    assert from_torch(m, q, q, q).total_flops == fcm_total(m, q, q, q)  # 2 * 2*4 * 32*32 * 32 = 524288


def test_layer_norm():
    with torch.device(META):
        ln = nn.LayerNorm(16)
    op = only_op(from_torch(ln, meta(4, 16)))
    assert op.kind == "norm" and op.flops == (5 + 2) * 64  # 5 per element + scale and shift
    assert op.bytes_read == (64 + 16 + 16) * 4  # x, weight, bias
    assert op.bytes_written == (64 + 4 + 4) * 4  # y, plus the saved mean and rstd (4 x 1 each)


def test_rms_norm_is_one_fused_op():
    with torch.device(META):
        rms = nn.RMSNorm(16)
    w = from_torch(rms, meta(4, 16))
    op = only_op(w)
    assert op.name == "rms_norm" and op.kind == "norm" and op.flops == (3 + 1) * 64  # 3 per element + scale
    assert (op.bytes_read, op.bytes_written) == ((64 + 16) * 4, 64 * 4)
    assert any("rms_norm" in a for a in w.assumptions)


def test_softmax():
    op = only_op(from_torch(Fn(lambda x: torch.softmax(x, -1)), meta(4, 16)))
    assert op.kind == "softmax" and op.flops == 5 * 64  # max, sub, exp, sum, div
    assert (op.bytes_read, op.bytes_written) == (256, 256)


def test_broadcasting_add():
    op = only_op(from_torch(Fn(torch.add), meta(4, 1, 16), meta(1, 8, 16)))
    assert op.kind == "elementwise" and op.flops == 4 * 8 * 16  # one per output element
    assert op.bytes_read == (4 * 16 + 8 * 16) * 4  # each input once: 768
    assert op.bytes_written == 4 * 8 * 16 * 4  # 2048


def test_embedding_reads_only_gathered_rows():
    with torch.device(META):
        emb = nn.Embedding(1000, 32)
    op = only_op(from_torch(emb, meta(2, 5, dtype=torch.long)))
    assert op.kind == "embedding" and op.flops == 0
    assert op.bytes_read == 10 * 32 * 4 + 10 * 8  # 10 rows of 32 fp32 + the int64 indices
    assert op.bytes_written == 10 * 32 * 4
    assert op.weight_bytes == 10 * 32 * 4  # the table is a parameter: only its gathered rows


def test_index_and_gather_read_only_what_they_pick():
    class Table(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.empty(100, 8))

        def forward(self, i):  # type: ignore[no-untyped-def]
            return self.w[i]

    with torch.device(META):
        table = Table()
    op = only_op(from_torch(table, meta(5, dtype=torch.long)))
    # was 3240 (the whole 100 x 8 fp32 table + indices): 5 rows x 8 x 4 B + 5 int64 indices = 160 + 40 = 200
    assert (op.name, op.kind, op.bytes_read, op.bytes_written) == ("index", "memory", 200, 160)
    assert op.weight_bytes == 160  # only the gathered rows are weight reads
    op = only_op(from_torch(Fn(lambda x, i: torch.gather(x, 1, i)), meta(4, 1000), meta(4, 3, dtype=torch.long)))
    assert op.bytes_read == 4 * 3 * 4 + 4 * 3 * 8  # 12 fp32 picked + 12 int64 indices = 144 (was 16096)
    op = only_op(from_torch(Fn(lambda x, i: x.index_select(0, i)), meta(10, 4), meta(30, dtype=torch.long)))
    assert op.bytes_read == 10 * 4 * 4 + 30 * 8  # 30 picks of 4 exceed the table: the table once (160) + 240


def test_addbmm_and_grouped_mm_count_every_product():
    op = only_op(from_torch(Fn(torch.addbmm), meta(3, 5), meta(4, 3, 7), meta(4, 7, 5)))
    # out (3, 5) sums 4 products (3, 7) @ (7, 5): 2 * 4 * 3 * 7 * 5 = 840 (was 210: the batch was left out of K)
    assert (op.kind, op.flops) == ("matmul", 840)
    bf16 = torch.bfloat16
    offs = meta(4, dtype=torch.int32)
    # MoE experts: 64 tokens (K 16) routed to 4 experts (16, 8): each token meets one expert, 2 * 64 * 16 * 8 = 16384
    op = only_op(from_torch(Fn(torch._grouped_mm), meta(64, 16, dtype=bf16), meta(4, 16, 8, dtype=bf16), offs))
    assert op.flops == 2 * 64 * 16 * 8
    # weight gradient: (16, 64) @ (64, 8) with the 64 tokens split among 4 groups -> (4, 16, 8): 2 * 16 * 8 * 64 = 16384
    # (was 65536: every group was charged all 64 tokens)
    op = only_op(from_torch(Fn(torch._grouped_mm), meta(16, 64, dtype=bf16), meta(64, 8, dtype=bf16), offs))
    assert op.flops == 2 * 16 * 8 * 64


@pytest.mark.parametrize("call, causal", [
    # efficient/cudnn take compute_log_sumexp (a bool) before is_causal: it used to be read as the causal flag
    (lambda q, k, v: torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, None, True, 0.0, False)[0], False),
    (lambda q, k, v: torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, None, False, 0.0, True)[0], True),
    (lambda q, k, v: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, True)[0], True),
])
def test_attention_aten_ops_read_their_own_causal_flag(call, causal):
    op = only_op(from_torch(Fn(call), meta(1, 2, 4, 8), meta(1, 2, 10, 8), meta(1, 2, 10, 8)))
    # L=4 queries, S=10 keys, 2 heads, E=Ev=8: causal (top-left) pairs 1+2+3+4 = 10, else 40; 2 * 2 * pairs * 16
    assert op.flops == 2 * 2 * (10 if causal else 40) * 16


def test_attention_cost_seq_first_layout():
    # flash/efficient forward kernels take (batch, seq, heads, dim): same count as the (batch, heads, seq, dim) layout
    q, k = T((2, 4, 3, 8), 2), T((2, 10, 3, 8), 2)
    assert FORMULAS["attention"]([q, k, k], [q], seq_first=True).flops == 2 * (2 * 3) * (4 * 10) * (8 + 8)


def test_views_move_nothing_and_copies_count():
    def f(x):  # type: ignore[no-untyped-def]
        y = x.view(8, 8).t().transpose(0, 1).permute(1, 0).unsqueeze(0).expand(3, 8, 8)[:, 1:].detach()
        return y.contiguous()

    op = only_op(from_torch(Fn(f), meta(64)))
    assert op.name == "clone" and op.kind == "memory" and op.flops == 0
    # the expanded (stride-0) source holds 7 x 8 distinct elements; the copy writes all 3 x 7 x 8
    assert (op.bytes_read, op.bytes_written) == (7 * 8 * 4, 3 * 7 * 8 * 4)


def test_in_place_reads_and_writes_target():
    op = only_op(from_torch(nn.ReLU(inplace=True), meta(4, 16)))
    assert op.name == "relu_" and (op.bytes_read, op.bytes_written) == (256, 256) and op.flops == 64


def test_copy_into_writes_only():
    op = only_op(from_torch(Fn(lambda a, b: a.copy_(b)), meta(4, 16), meta(4, 16)))
    assert (op.bytes_read, op.bytes_written) == (256, 256)  # reads the source only, writes the target


def test_unsupported_op_is_kept_with_its_bytes():
    w = from_torch(Fn(lambda x: torch.sort(x, -1).values * 2), meta(4, 16))
    kinds = dict(zip(w.column("name"), w.column("kind"), strict=False))
    assert kinds == {"sort": "other", "mul": "elementwise"}
    (u,) = w.unsupported
    # sort reads 64 floats and writes 64 values + 64 int64 indices
    assert (u.name, u.count, u.bytes) == ("aten.sort", 1, 256 + 256 + 512)
    assert any("aten.sort" in x for x in w.warnings)


def test_precision_labels():
    assert [precision_of(getattr(torch, d)) for d in ("float32", "bfloat16", "float16", "float8_e4m3fn",
                                                      "int8", "float64")] == ["fp32", "bf16", "fp16", "fp8", "int8",
                                                                              "fp64"]
    with torch.device(META):
        lin = nn.Linear(16, 16, dtype=torch.bfloat16)
    assert only_op(from_torch(lin, meta(2, 16, dtype=torch.bfloat16))).precision == "bf16"


def test_cost_formulas_equal_flop_counter_registry():
    # costs.matmul and costs.conv are written to equal torch.utils.flop_counter's formulas
    from torch.utils.flop_counter import conv_flop_count, mm_flop

    assert FORMULAS["matmul"]([T((64, 32), 4), T((32, 16), 4)], [T((64, 16), 4)]).flops == mm_flop((64, 32), (32, 16))
    c = FORMULAS["conv"]([T((2, 4, 9, 9), 4), T((8, 2, 3, 3), 4)], [T((2, 8, 4, 4), 4)])
    assert c.flops == conv_flop_count([2, 4, 9, 9], [8, 2, 3, 3], [2, 8, 4, 4])
    assert ELEMENTWISE_FLOPS["relu_backward"] == 1


# -- whole models --------------------------------------------------------------------------------------------------

def test_resnet50_conv_and_linear_flops():
    model, x = models.resnet50()
    w = from_torch(model, *x)
    kind = w.column("kind")
    matmul_conv = float(w.columns["flops"][np.isin(kind, ["conv", "matmul"])].sum())
    assert matmul_conv == pytest.approx(8.2e9, rel=0.02)  # published: 4.1 G multiply-adds = 8.2 GFLOPs
    assert matmul_conv == fcm_total(model, *x)  # FlopCounterMode counts exactly the convs and the fc
    assert not w.unsupported
    assert set(w.column("module_type")) >= {"Conv2d", "BatchNorm2d", "ReLU", "MaxPool2d", "Linear"}
    assert "layer3.5.conv2" in set(w.column("group"))
    params = sum(p.numel() for p in model.parameters()) * 4
    buffers = sum(b.numel() * b.element_size() for b in model.buffers() if b.dtype.is_floating_point)
    # every parameter and running statistic is read once
    assert w.columns["weight_bytes"].sum() == params + buffers


@pytest.mark.parametrize("make", [models.small_cnn, models.transformer_block, models.linear_stack])
def test_matmul_and_conv_totals_equal_flop_counter_mode(make):
    model, x = make()
    w = from_torch(model, *x)
    kind = w.column("kind")
    ours = float(w.columns["flops"][np.isin(kind, ["conv", "matmul"])].sum())
    fcm = fcm_total(model, *x)
    if make is models.transformer_block:
        # FlopCounterMode sees SDPA's two bmms with no causal mask: add the full s x s attention
        b, s, d = x[0].shape
        ours += 2 * b * s * s * 2 * d
    assert ours == fcm


def test_training_is_three_times_inference():
    model, (x,) = models.linear_stack(width=256, depth=4, batch=64)
    x.requires_grad_(True)  # so the first layer also computes dX, as every layer of a deep net does
    fwd = from_torch(model, x).total_flops
    train = from_torch(model, x, mode="training")
    # forward 2BKN per layer; backward dX and dW, 4BKN; the rest (ReLU, bias sums) is < 1%
    assert train.total_flops == pytest.approx(3 * fwd, rel=0.02)
    names = set(train.column("name"))
    assert "mm (backward)" in names and "addmm" in names
    groups = dict(zip(train.column("name"), train.column("group"), strict=False))
    assert groups["threshold_backward (backward)"] in {"1", "3", "5"}  # the ReLU modules' paths
    assert all(p.grad is None for p in model.parameters())  # gradients restored


def test_training_with_batch_norm_and_conv():
    model, x = models.small_cnn()
    w = from_torch(model, *x, mode="training")
    assert "convolution_backward (backward)" in set(w.column("name"))
    assert not model.training or model.training is False  # mode restored (eval)


def test_item_on_meta_does_not_abort():
    class DataDependent(nn.Module):
        def forward(self, x):  # type: ignore[no-untyped-def]
            if (x > 0).all():  # bool(tensor): a data-dependent read
                x = x * 2
            n = int(x.sum().item())
            idx = torch.nonzero(x)
            return x + n + idx.shape[0]

    w = from_torch(DataDependent(), meta(4, 4))
    # assumed True -> the mul ran; nonzero assumed all 16 elements non-zero
    assert "mul" in set(w.column("name"))
    assert any("assumed values" in s for s in w.warnings)
    assert any(".item()" in a for a in w.assumptions)


def test_fake_tensors():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 8))
        x = torch.empty(4, 32)
        w = from_torch(model, x)
    assert w.total_flops == 2 * 4 * 32 * 64 + 4 * 64 * ELEMENTWISE_FLOPS["gelu"] + 2 * 4 * 64 * 8
    assert w.columns["weight_bytes"].sum() == (32 * 64 + 64 + 64 * 8 + 8) * 4


def test_group_by_module_depth():
    from roofline import Device, analyze

    model, x = models.resnet50()
    a = analyze(from_torch(model, *x), Device.simple("d", "100 TFLOP/s", "2 TB/s"))
    names = {r.name for r in a.by("group", depth=1)}
    assert names == {"conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4", "avgpool", "fc"}
    assert sum(r.flops for r in a.by("module_type")) == pytest.approx(a.total_flops)


# -- bad input -----------------------------------------------------------------------------------------------------

def test_shape_mismatch_names_op_and_module():
    model, _ = models.small_cnn()
    with pytest.raises(RooflineError) as e:
        from_torch(model, meta(1, 5, 32, 32))  # 5 channels into a 3-channel conv
    msg = str(e.value)
    assert "\n" not in msg and "aten.convolution" in msg and "conv1 (Conv2d)" in msg


def test_not_a_module():
    with pytest.raises(RooflineError, match="must be a torch.nn.Module"):
        from_torch(lambda x: x, meta(2))
    with pytest.raises(RooflineError, match="mode must be"):
        from_torch(nn.ReLU(), meta(2), mode="train")


# -- CLI ------------------------------------------------------------------------------------------------------------

@pytest.fixture
def user_file(tmp_path):  # type: ignore[no-untyped-def]
    p = tmp_path / "user_models.py"
    p.write_text(textwrap.dedent("""
        import torch
        from torch import nn

        def mlp():
            return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))

        def with_inputs():
            return mlp(), (torch.empty(2, 32),)

        def not_a_module():
            return 42

        class Sorter(nn.Module):
            def forward(self, x):
                return torch.sort(x, -1).values

        def sorter():
            return Sorter()

        NUMBER = 3
    """))
    return p


def test_cli_torch_runs_and_writes_json(user_file, tmp_path, capsys):
    out = tmp_path / "a.json"
    rc = main(["torch", f"{user_file}:mlp", "--input", "8x32", "--device", "h100", "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 0 and "by module" in text
    w = json.loads(out.read_text())["workload"]
    assert sum(w["ops"]["flops"]) == 2 * 8 * 32 * 64 + 8 * 64 + 2 * 8 * 64 * 10
    rc = main(["torch", f"{user_file}:with_inputs", "--device", "h100", "--group-by", "kind", "--training"])
    assert rc == 0 and "by kind" in capsys.readouterr().out


def test_cli_torch_dotted_module(capsys):
    assert main(["torch", "models:make_small_cnn", "--input", "1x3x32x32", "--device", "h100",
                 "--group-by", "type"]) == 0
    assert "Conv2d" in capsys.readouterr().out


@pytest.mark.parametrize("target, message", [
    ("missing_file.py:mlp", "no such file"),
    ("no_such_module_xyz:mlp", "cannot import module 'no_such_module_xyz'"),
    ("{f}:nope", "has no attribute 'nope'"),
    ("{f}:NUMBER", "not a callable"),
    ("{f}:not_a_module", "returned a int; expected an nn.Module"),
    ("{f}", "expected MODULE:CALLABLE"),
])
def test_cli_torch_bad_target(user_file, capsys, target, message):
    rc = main(["torch", target.format(f=user_file), "--input", "2x32", "--device", "h100"])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and err.count("\n") == 1


def test_cli_torch_import_error(tmp_path, capsys):
    p = tmp_path / "broken.py"
    p.write_text("import not_a_real_package_xyz\n")
    assert main(["torch", f"{p}:f", "--input", "2x3", "--device", "h100"]) == 2
    err = capsys.readouterr().err
    assert "import failed: ModuleNotFoundError" in err and err.count("\n") == 1


def test_cli_torch_unknown_dtype_and_bad_shape(user_file, capsys):
    assert main(["torch", f"{user_file}:mlp", "--input", "2x32:float7", "--device", "h100"]) == 2
    assert "unknown dtype 'float7'" in capsys.readouterr().err
    assert main(["torch", f"{user_file}:mlp", "--input", "2xabc", "--device", "h100"]) == 2
    assert "expected a shape like" in capsys.readouterr().err


def test_cli_torch_shape_mismatch_is_one_line(user_file, capsys):
    assert main(["torch", f"{user_file}:mlp", "--input", "2x31", "--device", "h100"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "aten.addmm" in err and "module 0 (Linear)" in err


def test_cli_torch_lists_unsupported_ops(user_file, capsys):
    assert main(["torch", f"{user_file}:sorter", "--input", "4x16", "--device", "h100"]) == 0
    out = capsys.readouterr().out
    assert "unsupported ops" in out and "aten.sort x1" in out


# -- issue 13: user code that exits or raises ------------------------------------------------------------
def test_user_code_exits_and_errors_are_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "usermod13.py").write_text(textwrap.dedent("""\
        import sys
        import torch

        def exits():
            sys.exit(7)

        def ok():
            return torch.nn.Linear(4, 4)
    """))
    monkeypatch.chdir(tmp_path)  # a dotted MODULE is found in the current directory, as with python -m
    assert main(["torch", "usermod13:ok", "--input", "2x4", "--device", "h100"]) == 0
    for target, said in (("usermod13:exits", "usermod13:exits called sys.exit(7)"),
                         ("builtins:exit", "builtins:exit called sys.exit(None)")):
        capsys.readouterr()
        assert main(["torch", target, "--input", "2x4", "--device", "h100"]) == 2
        err = capsys.readouterr().err
        assert said in err and err.count("\n") == 1


def test_roofline_bugs_inside_user_code_keep_their_traceback():
    from roofline.frontends.target import parse_input, user_code

    with pytest.raises(RooflineError, match="t raised ValueError: mine"), user_code("t"):
        raise ValueError("mine")
    with pytest.raises(AttributeError), user_code("t"):
        parse_input(None)  # type: ignore[arg-type]  # raised in roofline's own code: a bug, not the user's
    with pytest.raises(KeyboardInterrupt), user_code("t"):
        raise KeyboardInterrupt


def test_ops_table_is_the_dispatch():
    """Every aten op the recorder costs is a row of OPS, and every row of OPS is costed with its formula."""
    from roofline.frontends.torch import ATTRS, FIXED, OPS, Recorder
    from roofline.work.costs import ELEMENTWISE_FLOPS, builtin_ops

    assert builtin_ops("torch") is OPS
    assert all(k == r.op and r.formula in FORMULAS and r.description for k, r in OPS.items())
    assert set(ATTRS) <= set(OPS) and set(FIXED) <= set(OPS) and not set(ATTRS) & set(FIXED)
    assert all(f["op"] in ELEMENTWISE_FLOPS for k, f in FIXED.items() if OPS[k].formula == "elementwise")
    rec = Recorder(torch, set(), {})
    names = {n.split("::")[1].split(".")[0] for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")}
    resolved: dict[str, str] = {}
    for name in sorted(names):
        packet = getattr(torch.ops.aten, name, None)
        if packet is None:
            continue
        for overload in packet.overloads():
            r = rec.resolve(getattr(packet, overload))
            if r is not None and r.formula is not None:
                assert resolved.setdefault(str(packet), r.formula) == r.formula
    assert resolved == {k: r.formula for k, r in OPS.items()}
