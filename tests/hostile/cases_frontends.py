"""Hostile input for the model frontends (issue 13): configs, ONNX graphs, shapes, bounded work, user code.

Classes: ``bad-configs`` (HF / LLM config.json), ``bad-onnx`` (malformed graphs and attributes),
``bounded-work`` (inputs that used to hang or blow memory: each must fail fast with the limit named),
``bad-shapes`` (``--input`` / ``--batch`` dimensions) and ``user-code`` (``roofline torch MODULE:CALLABLE``
whose code exits or raises).  Hostile ONNX models are built here with ``onnx.helper`` and written as bytes.
"""

from __future__ import annotations

import json
from typing import Any

from hostile.harness import Case

LLAMA: dict[str, Any] = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
                         "num_hidden_layers": 32, "intermediate_size": 11008, "vocab_size": 32000}
SMALL: dict[str, Any] = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
                         "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 128}
LLM = ("llm", "config.json", "--device", "h100", "--phase", "decode")
HF = ("hf", "config.json", "--device", "h100", "--phase", "decode", "--kv-len", "16")


def config(base: dict[str, Any], **change: Any) -> str:
    # allow_nan: NaN / Infinity are what a hostile file holds (json.loads reads them back as floats)
    return json.dumps({**base, **change}, allow_nan=True)


def llm_case(name: str, names: str, cls: str = "bad-configs", **change: Any) -> Case:
    return Case(f"frontends/llm-{name}", cls, "llm", LLM, files={"config.json": config(LLAMA, **change)}, names=names)


def hf_case(name: str, names: str, cls: str = "bad-configs", **change: Any) -> Case:
    return Case(f"frontends/hf-{name}", cls, "hf", HF, files={"config.json": config(SMALL, **change)}, names=names)


# -- ONNX models ---------------------------------------------------------------------------------
def _onnx() -> Any:
    import numpy as np
    from onnx import TensorProto as TP
    from onnx import helper as h
    from onnx import numpy_helper as nh

    def model(nodes: list[Any], inputs: list[Any], outputs: list[Any] | None = None, inits: tuple[Any, ...] = ()
              ) -> bytes:
        g = h.make_graph(nodes, "g", inputs, outputs or [h.make_tensor_value_info("y", TP.FLOAT, None)],
                         initializer=list(inits))
        m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
        m.ir_version = 8
        return m.SerializeToString()

    def x(name: str = "x", shape: Any = (4,)) -> Any:
        return h.make_tensor_value_info(name, TP.FLOAT, list(shape) if shape is not None else None)

    def y(shape: Any) -> list[Any]:
        return [h.make_tensor_value_info("y", TP.FLOAT, list(shape))]

    cond = h.make_tensor_value_info("c", TP.BOOL, [])
    const = lambda out, v: h.make_node("Constant", [], [out], value=nh.from_array(np.array(v, dtype=np.int64)))  # noqa: E731

    def loop_body() -> Any:
        return h.make_graph(
            [h.make_node("Relu", ["xi"], ["xo"]), h.make_node("Identity", ["cond"], ["co"])], "body",
            [h.make_tensor_value_info("i", TP.INT64, []), h.make_tensor_value_info("cond", TP.BOOL, []),
             h.make_tensor_value_info("xi", TP.FLOAT, None)],
            [h.make_tensor_value_info("co", TP.BOOL, []), h.make_tensor_value_info("xo", TP.FLOAT, None)])

    def loop(trips: Any, dtype: Any) -> bytes:
        return model([h.make_node("Loop", ["M", "", "x"], ["y"], body=loop_body())], [x()],
                     inits=(nh.from_array(np.array(trips, dtype=dtype), "M"),))

    def nested_if(depth: int) -> bytes:
        g = h.make_graph([h.make_node("Relu", ["x"], ["r"])], "leaf", [], [h.make_tensor_value_info("r", TP.FLOAT, None)])
        for d in range(depth):
            other = h.make_graph([h.make_node("Relu", ["x"], [f"e{d}"])], f"else{d}", [],
                                 [h.make_tensor_value_info(f"e{d}", TP.FLOAT, None)])
            node = h.make_node("If", ["c"], [f"o{d}"], then_branch=g, else_branch=other)
            g = h.make_graph([node], f"then{d}", [], [h.make_tensor_value_info(f"o{d}", TP.FLOAT, None)])
        top = g.node[0]
        top.output[0] = "y"
        return model([top], [x(), cond])

    def range_to(n: int, via_mul: bool = True) -> bytes:
        nodes = [const("z", 0), const("one", 1)]
        if via_mul:
            nodes += [const("p", n // 10000), const("q", 10000), h.make_node("Mul", ["p", "q"], ["n"])]
        else:
            nodes += [const("n", n)]
        nodes += [h.make_node("Range", ["z", "n", "one"], ["r"]), h.make_node("Cast", ["r"], ["rf"], to=TP.FLOAT),
                  h.make_node("Add", ["rf", "x"], ["y"])]
        return model(nodes, [x("x", (1,))])

    w = (nh.from_array(np.ones((4, 3, 3, 3), np.float32), "w"),)
    conv_in, conv_out = [x("x", (1, 3, 8, 8))], y((1, 4, 6, 6))
    mm = model([h.make_node("MatMul", ["a", "b"], ["y"])], [x("a", ("n", 4)), x("b", (4, 4))])
    return {
        "if-no-branches": model([h.make_node("If", ["c"], ["y"])], [cond]),
        "if-int-branch": model([h.make_node("If", ["c"], ["y"], then_branch=3, else_branch=4)], [cond]),
        "loop-no-body": model([h.make_node("Loop", ["M", "", "x"], ["y"])], [x(), h.make_tensor_value_info("M", TP.INT64, [])]),
        "scan-no-count": model([h.make_node("Scan", ["x"], ["y"], body=loop_body())], [x("x", (2, 3))]),
        "loop-nan-trips": loop(np.nan, np.float32),
        "loop-negative-trips": loop(-5, np.int64),
        "loop-1e18-trips": loop(10**18, np.int64),
        "matmul-scalars": model([h.make_node("MatMul", ["a", "b"], ["y"])], [x("a", ()), x("b", ())], y(())),
        "gemm-rank-1": model([h.make_node("Gemm", ["a", "b"], ["y"])], [x("a", (3,)), x("b", (3, 4))], y((4,))),
        "conv-group-0": model([h.make_node("Conv", ["x", "w"], ["y"], group=0)], conv_in, conv_out, w),
        "conv-strides-string": model([h.make_node("Conv", ["x", "w"], ["y"], strides="abc")], conv_in, conv_out, w),
        "conv-negative-pads": model([h.make_node("Conv", ["x", "w"], ["y"], pads=[-1, 0, 0, 0])], conv_in, conv_out, w),
        "conv-kernel-0": model([h.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[0, 3])], conv_in, conv_out, w),
        "transpose-bad-perm": model([h.make_node("Transpose", ["x"], ["y"], perm=[5, 0])], [x("x", (2, 3))], y((3, 2))),
        "nested-if-12": nested_if(12),
        "nested-if-3": nested_if(3),
        "range-3e8-computed": range_to(300_000_000),
        "range-3e8-constant": range_to(300_000_000, via_mul=False),
        "matmul": mm,
    }


ONNX = _onnx()


def onnx_case(name: str, names: str = "", cls: str = "bad-onnx", *extra: str, expect: str = "error",
              check: str = "", model: str | None = None) -> Case:
    return Case(f"frontends/onnx-{name}", cls, "onnx", ("onnx", "m.onnx", "--device", "h100", *extra),
                files={"m.onnx": ONNX[model or name]}, names=names, expect=expect, check=check)


TORCH_USER = """\
import sys
import torch

def build():
    sys.exit(7)

def build_ok():
    return torch.nn.Linear(4, 4)

class Raises(torch.nn.Module):
    def forward(self, x):
        raise ValueError("my bug")

def raises_in_forward():
    return Raises()

class Exits(torch.nn.Module):
    def forward(self, x):
        sys.exit(3)

def exits_in_forward():
    return Exits()

def raises():
    raise RuntimeError("cannot build")

def not_a_module():
    return 42
"""
EXITS_AT_IMPORT = "import sys\nsys.exit(7)\n"


def torch_case(name: str, target: str, names: str = "", *extra: str, expect: str = "error",
               files: dict[str, str | bytes] | None = None, cls: str = "user-code") -> Case:
    return Case(f"frontends/torch-{name}", cls, "torch", ("torch", target, *extra, "--device", "h100"),
                files={"usermod.py": TORCH_USER, **(files or {})}, names=names, expect=expect)


#: everything printed, wrapped lines joined (warnings go to the terminal report, wrapped at COLUMNS)
SAID = "' '.join((out + err).split())"
HUGE = "100000000000000000000"  # 20 digits: more than int64 holds

CASES = [
    # -- bad-configs: llm ------------------------------------------------------------------------
    llm_case("nan-hidden", "hidden_size", hidden_size=float("nan")),
    llm_case("inf-hidden", "hidden_size", hidden_size=float("inf")),
    llm_case("zero-heads", "num_attention_heads", num_attention_heads=0),
    llm_case("heads-do-not-divide", "num_attention_heads", num_attention_heads=33),
    llm_case("kv-heads-do-not-divide", "num_key_value_heads", num_key_value_heads=5),
    llm_case("negative-intermediate", "intermediate_size", intermediate_size=-5),
    llm_case("unknown-rope-type", "rope_type", rope_scaling={"rope_type": "bogus", "factor": 2.0}),
    llm_case("rope-not-an-object", "rope_scaling", rope_scaling="yarn"),
    llm_case("string-hidden", "hidden_size", hidden_size="4096"),
    llm_case("bool-layers", "num_hidden_layers", num_hidden_layers=True),
    llm_case("string-bool-flag", "tie_word_embeddings", tie_word_embeddings="false"),
    llm_case("list-vocab", "vocab_size", vocab_size=[32000]),
    llm_case("fractional-layers", "num_hidden_layers", num_hidden_layers=31.5),
    llm_case("top-k-over-experts", "num_experts_per_tok", num_local_experts=4, num_experts_per_tok=8),
    llm_case("model-type-number", "model_type", model_type=7),
    # -- bad-configs: hf -------------------------------------------------------------------------
    hf_case("nan-hidden", "hidden_size", hidden_size=float("nan")),
    hf_case("zero-heads", "num_attention_heads", num_attention_heads=0),
    hf_case("heads-do-not-divide", "num_attention_heads", num_attention_heads=5),
    hf_case("kv-heads-do-not-divide", "num_key_value_heads", num_key_value_heads=3),
    hf_case("negative-intermediate", "intermediate_size", intermediate_size=-1),
    hf_case("unknown-rope-type", "rope_type", rope_scaling={"rope_type": "bogus", "factor": 2.0}),
    hf_case("string-heads", "num_attention_heads", num_attention_heads="4"),
    hf_case("float-intermediate", "intermediate_size", intermediate_size=128.0),
    hf_case("bool-layers", "num_hidden_layers", num_hidden_layers=True),
    hf_case("rope-factor-nan", "factor", rope_scaling={"rope_type": "linear", "factor": float("nan")}),
    # -- bounded-work: sizes beyond any real model, refused before building ---------------------------
    llm_case("layers-1e9", "ROOFLINE_MAX_LAYERS", "bounded-work", num_hidden_layers=1e9),
    llm_case("hidden-1e30", "ROOFLINE_MAX_HIDDEN", "bounded-work", hidden_size=10**30, num_attention_heads=1),
    llm_case("vocab-1e12", "ROOFLINE_MAX_VOCAB", "bounded-work", vocab_size=10**12),
    llm_case("experts-1e9", "ROOFLINE_MAX_EXPERTS", "bounded-work", num_local_experts=10**9, num_experts_per_tok=2),
    hf_case("layers-1e9", "ROOFLINE_MAX_LAYERS", "bounded-work", num_hidden_layers=10**9),
    hf_case("vocab-1e12", "ROOFLINE_MAX_VOCAB", "bounded-work", vocab_size=10**12),
    hf_case("positions-1e12", "ROOFLINE_MAX_POSITIONS", "bounded-work", max_position_embeddings=10**12),
    Case("frontends/llm-sweep-1e7", "bounded-work", "llm",
         ("llm", "llama-2-7b", "--device", "h100", "--phase", "decode", "--sweep", "batch=1..1e7"), names=":*"),
    Case("frontends/llm-sweep-1e8", "bounded-work", "llm",
         ("llm", "llama-2-7b", "--device", "h100", "--phase", "decode", "--sweep", "batch=1..100000000"),
         names="ROOFLINE_MAX_SWEEP_POINTS"),
    Case("frontends/llm-sweep-geometric-1e7", "bounded-work", "llm",
         ("llm", "llama-2-7b", "--device", "h100", "--phase", "decode", "--sweep", "batch=1..1e7:*2"),
         expect="ok", check="'batch sweep (25 batches, 1..10000000)' in out"),
    Case("frontends/llm-sweep-1e400", "bounded-work", "llm",
         ("llm", "llama-2-7b", "--device", "h100", "--phase", "decode", "--sweep", "batch=1..1e400"), names="--sweep"),
    onnx_case("nested-if-12", "ROOFLINE_ONNX_MAX_DEPTH", "bounded-work"),
    onnx_case("loop-1e18-trips", "Loop_0", "bounded-work"),
    onnx_case("nested-if-3", cls="bounded-work", expect="ok", check=f"'condition not constant' in {SAID}"),
    onnx_case("range-3e8-computed", cls="bounded-work", expect="ok", check=f"'shapes, not data' in {SAID}"),
    onnx_case("range-3e8-constant", cls="bounded-work", expect="ok", check=f"'shapes, not data' in {SAID}"),
    # -- bad-onnx ------------------------------------------------------------------------------------
    onnx_case("if-no-branches", "then_branch"),
    onnx_case("if-int-branch", "else_branch"),
    onnx_case("loop-no-body", "body"),
    onnx_case("scan-no-count", "num_scan_inputs"),
    onnx_case("loop-nan-trips", "trip count nan"),
    onnx_case("loop-negative-trips", "trip count -5"),
    onnx_case("matmul-scalars", "MatMul_0"),
    onnx_case("gemm-rank-1", "Gemm_0"),
    onnx_case("conv-group-0", "'group'"),
    onnx_case("conv-strides-string", "'strides'"),
    onnx_case("conv-negative-pads", "'pads'"),
    onnx_case("conv-kernel-0", "'kernel_shape'"),
    onnx_case("transpose-bad-perm", "perm"),
    # -- bad-shapes ----------------------------------------------------------------------------------
    onnx_case("input-20-digit-dim", "ROOFLINE_MAX_DIM", "bad-shapes", "--input", f"a=1x{HUGE}", model="matmul"),
    onnx_case("input-20-digit-symbol", "ROOFLINE_MAX_DIM", "bad-shapes", "--input", f"n={HUGE}", model="matmul"),
    onnx_case("input-zero-dim", "'a'", "bad-shapes", "--input", "a=0x4", model="matmul"),
    onnx_case("input-not-a-number", "'a'", "bad-shapes", "--input", "a=1xfour", model="matmul"),
    torch_case("input-20-digit-dim", "usermod:build_ok", "ROOFLINE_MAX_DIM", "--input", f"1x{HUGE}", cls="bad-shapes"),
    torch_case("input-huge-elements", "usermod:build_ok", "int64", "--input", "1000000000000x1000000000000x100",
               cls="bad-shapes"),
    torch_case("input-negative", "usermod:build_ok", "--input", "--input", "2x-4", cls="bad-shapes"),
    Case("frontends/hf-batch-20-digits", "bad-shapes", "hf", (*HF, "--batch", HUGE),
         files={"config.json": config(SMALL)}, names="batch"),
    Case("frontends/hf-kv-len-negative", "bad-shapes", "hf", (*HF[:-1], "-5"),
         files={"config.json": config(SMALL)}, names="kv_len"),
    Case("frontends/llm-gen-20-digits", "bad-shapes", "llm",
         ("llm", "llama-2-7b", "--device", "h100", "--phase", "generate", "--gen", HUGE), names="gen"),
    Case("frontends/llm-batch-20-digits", "bad-shapes", "llm",
         ("llm", "llama-2-7b", "--device", "h100", "--phase", "decode", "--batch", HUGE), names="batch"),
    # -- user-code -----------------------------------------------------------------------------------
    torch_case("builtins-exit", "builtins:exit", "builtins:exit", "--input", "2x4"),
    torch_case("builtins-exit-no-input", "builtins:exit", "builtins:exit"),
    torch_case("sys-exit-in-callable", "usermod:build", "sys.exit(7)", "--input", "2x4"),
    torch_case("sys-exit-in-file-callable", "usermod.py:build", "sys.exit(7)", "--input", "2x4"),
    torch_case("sys-exit-at-import", "exits.py:build", "exits.py", "--input", "2x4", files={"exits.py": EXITS_AT_IMPORT}),
    torch_case("sys-exit-at-import-dotted", "exits:build", "sys.exit(7)", "--input", "2x4",
               files={"exits.py": EXITS_AT_IMPORT}),
    torch_case("sys-exit-in-forward", "usermod:exits_in_forward", "usermod:exits_in_forward", "--input", "2x4"),
    torch_case("raises-in-forward", "usermod:raises_in_forward", "my bug", "--input", "2x4"),
    torch_case("raises-in-callable", "usermod:raises", "RuntimeError: cannot build", "--input", "2x4"),
    torch_case("returns-not-a-module", "usermod:not_a_module", "usermod:not_a_module", "--input", "2x4"),
    torch_case("cwd-module-importable", "usermod:build_ok", "", "--input", "2x4", expect="ok"),
]
