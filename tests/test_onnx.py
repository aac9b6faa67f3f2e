"""ONNX frontend: single-node graphs with hand-derived costs, the shipped light model zoo, bad input.

Every expected value is derived in the comment beside its assert.  The PyTorch
cross-checks skip when torch or the PyTorch frontend is not importable.
"""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402

from roofline import Device, RooflineError  # noqa: E402
from roofline.cli import main  # noqa: E402
from roofline.frontends.onnx import from_onnx  # noqa: E402

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
LIGHT_MODELS = sorted(glob.glob(os.path.join(LIGHT, "*.onnx")))


def vi(name, shape, elem=TP.FLOAT):
    return h.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, inits=(), opset=17, domains=()):
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset), *[h.make_opsetid(d, 1) for d in domains]])
    m.ir_version = min(m.ir_version, onnx.IR_VERSION)
    return m


def init(name, shape, dtype=np.float32):
    return nh.from_array(np.zeros(shape, dtype=dtype), name)


def one(w, name=None):
    """The only op (or the op called ``name``) of a workload."""
    ops = list(w)
    if name is None:
        assert len(ops) == 1, [o.name for o in ops]
        return ops[0]
    return next(o for o in ops if o.name == name)


# -- convolutions and matrix multiplies ----------------------------------------------------------
def test_conv_groups_strides_pads():
    m = model([h.make_node("Conv", ["x", "w"], ["y"], name="c", group=2, strides=[2, 2], pads=[1, 1, 1, 1])],
              [vi("x", [1, 4, 10, 10])], [vi("y", None)], [init("w", (8, 2, 3, 3))])
    op = one(from_onnx(m))
    # out H = (10 + 2 - 3) // 2 + 1 = 5: y (1, 8, 5, 5); FLOPs 2 * N 1 * 25 * prod(w) 144 = 7200
    assert (op.kind, op.flops, op.unit) == ("conv", 7200, "matrix")
    # reads x 400 * 4 + w 144 * 4 = 2176, writes 200 * 4 = 800; the weight is the initializer
    assert (op.bytes_read, op.bytes_written, op.weight_bytes) == (2176, 800, 576)


def test_conv_dilation_and_auto_pad():
    m = model([h.make_node("Conv", ["x", "w"], ["y"], name="dil", dilations=[2, 2]),
               h.make_node("Conv", ["x", "w2"], ["z"], name="same", strides=[2, 2], auto_pad="SAME_UPPER")],
              [vi("x", [1, 1, 7, 7])], [vi("y", None), vi("z", None)],
              [init("w", (1, 1, 3, 3)), init("w2", (2, 1, 3, 3))])
    w = from_onnx(m)
    # dilation 2: effective kernel 5, out 7 - 5 + 1 = 3: 2 * 9 * prod(w) 9 = 162
    assert one(w, "dil").flops == 162
    # SAME_UPPER stride 2: out ceil(7 / 2) = 4: 2 * 16 * prod(w2) 18 = 576
    assert one(w, "same").flops == 576


def test_conv_transpose():
    m = model([h.make_node("ConvTranspose", ["x", "w"], ["y"], name="ct", strides=[2, 2])],
              [vi("x", [1, 4, 5, 5])], [vi("y", None)], [init("w", (4, 3, 3, 3))])
    op = one(from_onnx(m))
    # y (1, 3, 11, 11); transposed conv uses the input's spatial size: 2 * 1 * 25 * prod(w) 108 = 5400
    assert op.flops == 5400 and op.bytes_written == 3 * 121 * 4


def test_gemm_trans_a_with_bias():
    m = model([h.make_node("Gemm", ["a", "b", "c"], ["y"], name="g", transA=1)],
              [vi("a", [64, 32])], [vi("y", None)], [init("b", (64, 16)), init("c", (16,))])
    op = one(from_onnx(m))
    # A^T is (32, 64): M 32, K 64, N 16: 2 * 32 * 16 * 64 = 65536 (the bias add is an epilogue)
    assert (op.kind, op.flops) == ("matmul", 65536)
    # reads (2048 + 1024 + 16) * 4 = 12352, writes 512 * 4 = 2048; weights b + c = 4160
    assert (op.bytes_read, op.bytes_written, op.weight_bytes) == (12352, 2048, 4160)


def test_matmul_batched_broadcasting():
    m = model([h.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
              [vi("a", [2, 1, 8, 16]), vi("b", [3, 16, 4])], [vi("y", None)])
    op = one(from_onnx(m))
    # y broadcasts to (2, 3, 8, 4) = 192 elements, K 16: 2 * 192 * 16 = 6144
    assert op.flops == 6144 and op.weight_bytes == 0
    # reads 256 * 4 + 192 * 4 = 1792, writes 192 * 4 = 768
    assert (op.bytes_read, op.bytes_written) == (1792, 768)


def test_quantized_matmul_and_conv_are_int8():
    m = model([h.make_node("MatMulInteger", ["a", "b"], ["y"], name="mmi"),
               h.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["z"], name="qc")],
              [vi("a", [4, 8], TP.UINT8), vi("x", [1, 2, 4, 4], TP.UINT8)], [vi("y", None, TP.INT32), vi("z", None, TP.UINT8)],
              [init("b", (8, 2), np.int8), init("w", (3, 2, 1, 1), np.int8), nh.from_array(np.float32(1), "xs"),
               nh.from_array(np.uint8(0), "xz"), nh.from_array(np.float32(1), "ws"), nh.from_array(np.int8(0), "wz"),
               nh.from_array(np.float32(1), "ys"), nh.from_array(np.uint8(0), "yz")], opset=13)
    w = from_onnx(m)
    mmi, qc = one(w, "mmi"), one(w, "qc")
    # 2 * (4 * 2) * K 8 = 128; reads a 32 + b 16 bytes, writes int32 (4, 2) = 32
    assert (mmi.flops, mmi.precision, mmi.bytes_read, mmi.bytes_written) == (128, "int8", 48, 32)
    # z (1, 3, 4, 4): 2 * 16 * prod(w) 6 = 192
    assert (qc.flops, qc.precision, qc.kind) == (192, "int8", "conv")


def test_einsum_contraction():
    m = model([h.make_node("Einsum", ["a", "b"], ["y"], name="e", equation="bij,bjk->bik")],
              [vi("a", [2, 3, 5]), vi("b", [2, 5, 7])], [vi("y", None)], opset=12)
    # y (2, 3, 7) = 42 elements, contracted j = 5: 2 * 42 * 5 = 420
    assert one(from_onnx(m)).flops == 420


# -- attention -------------------------------------------------------------------------------------
def test_attention_op_causal_gqa():
    m = model([h.make_node("Attention", ["q", "k", "v"], ["y"], name="att", is_causal=1)],
              [vi("q", [2, 8, 16, 64]), vi("k", [2, 2, 16, 64]), vi("v", [2, 2, 16, 64])], [vi("y", None)], opset=23)
    op = one(from_onnx(m))
    # batch x heads = 16; causal pairs of 16 x 16 = 16 * 17 / 2 = 136; 2 * 16 * 136 * (64 + 64) = 557056
    assert (op.kind, op.flops) == ("attention", 557056)
    # fused: reads q 65536 + k 16384 + v 16384 bytes, writes y 65536; no 16 x 16 score tensor
    assert (op.bytes_read, op.bytes_written) == (98304, 65536)


@pytest.mark.parametrize("past, pairs", [
    (0, 1 + 2 + 3 + 4),  # no cache: top-left, query i sees keys 0..i even though K (10) is longer than Q (4); was 34
    (6, 7 + 8 + 9 + 10),  # 6 cached + 4 new keys: query i sees keys 0..i + 6
])
def test_attention_op_causal_alignment(past, pairs):
    ins = [vi("q", [1, 1, 4, 8]), vi("k", [1, 1, 10 - past, 8]), vi("v", [1, 1, 10 - past, 8])]
    names = ["q", "k", "v"]
    if past:
        ins += [vi("pk", [1, 1, past, 8]), vi("pv", [1, 1, past, 8])]
        names += ["", "pk", "pv"]
    outs = [vi("y", None)] + ([vi("pko", None), vi("pvo", None)] if past else [])
    m = model([h.make_node("Attention", names, [o.name for o in outs], name="att", is_causal=1)], ins, outs,
              opset=23)
    assert one(from_onnx(m)).flops == 2 * pairs * (8 + 8)  # one batch x head; QK^T and PV per pair


def test_attention_op_3d_heads():
    m = model([h.make_node("Attention", ["q", "k", "v"], ["y"], name="att", q_num_heads=8, kv_num_heads=2)],
              [vi("q", [2, 16, 512]), vi("k", [2, 16, 128]), vi("v", [2, 16, 128])], [vi("y", None)], opset=23)
    # (2, 16, 512) -> 2 x 8 heads of 64; full 16 x 16 pairs: 2 * 16 * 256 * (64 + 64) = 1048576
    assert one(from_onnx(m)).flops == 1048576


# -- elementwise, norms, softmax, pooling, reductions, resize --------------------------------------------
def test_elementwise_broadcast_and_variadic():
    m = model([h.make_node("Add", ["a", "b"], ["y"], name="add"),
               h.make_node("Sum", ["c", "c", "c"], ["s"], name="sum"),
               h.make_node("Sigmoid", ["c"], ["g"], name="sig")],
              [vi("a", [4, 1]), vi("b", [1, 5]), vi("c", [2, 3])], [vi("y", None), vi("s", None), vi("g", None)])
    w = from_onnx(m)
    add = one(w, "add")
    # (4, 1) + (1, 5) -> (4, 5): 20 FLOPs; reads (4 + 5) * 4 = 36, writes 80
    assert (add.flops, add.bytes_read, add.bytes_written, add.kind) == (20, 36, 80, "elementwise")
    assert one(w, "sum").flops == 12  # 3 inputs: 2 adds per element x 6
    assert one(w, "sig").flops == 24  # sigmoid 4 per element x 6


def test_gelu_tanh_opset20():
    m = model([h.make_node("Gelu", ["x"], ["y"], name="gelu", approximate="tanh")], [vi("x", [10])],
              [vi("y", None)], opset=20)
    assert one(from_onnx(m)).flops == 90  # gelu_tanh 9 per element x 10


def test_batchnorm_layernorm_softmax():
    bn_inits = [init(n, (3,)) for n in ("s", "b", "mean", "var")]
    m = model([h.make_node("BatchNormalization", ["x", "s", "b", "mean", "var"], ["y"], name="bn"),
               h.make_node("LayerNormalization", ["z", "g", "beta"], ["zn"], name="ln"),
               h.make_node("Softmax", ["p"], ["q"], name="sm")],
              [vi("x", [1, 3, 4, 4]), vi("z", [2, 8]), vi("p", [4, 10])], [vi("y", None), vi("zn", None), vi("q", None)],
              [*bn_inits, init("g", (8,)), init("beta", (8,))])
    w = from_onnx(m)
    bn = one(w, "bn")
    # inference BN: centre + scale (2) + affine scale/shift (2) = 4 per element x 48 = 192
    # reads x 192 + 4 vectors 48 bytes = 240 (the vectors are weights), writes 192
    assert (bn.kind, bn.flops, bn.bytes_read, bn.bytes_written, bn.weight_bytes) == ("norm", 192, 240, 192, 48)
    assert one(w, "ln").flops == 112  # layer norm 5 + scale/shift 2 = 7 per element x 16
    assert one(w, "sm").flops == 200  # softmax 5 per element x 40


def test_lrn():
    m = model([h.make_node("LRN", ["x"], ["y"], name="lrn", size=5)], [vi("x", [1, 8, 2, 2])], [vi("y", None)])
    assert one(from_onnx(m)).flops == 320  # (size 5 + 5) per element x 32


def test_pooling_and_reductions():
    m = model([h.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[2, 2], strides=[2, 2]),
               h.make_node("GlobalAveragePool", ["g"], ["gy"], name="gap"),
               h.make_node("ReduceMean", ["r", "axes"], ["ry"], name="rm")],
              [vi("x", [1, 1, 4, 4]), vi("g", [1, 2, 3, 3]), vi("r", [2, 5])],
              [vi("y", None), vi("gy", None), vi("ry", None)], [nh.from_array(np.array([1], np.int64), "axes")],
              opset=18)
    w = from_onnx(m)
    assert one(w, "mp").flops == 16  # out (1, 1, 2, 2): kernel 4 per output x 4
    assert one(w, "gap").flops == 18  # one per input element: 18
    rm = one(w, "rm")
    # one FLOP per input element (10); the axes input is metadata: reads 40, writes (2, 1) 8
    assert (rm.flops, rm.bytes_read, rm.bytes_written, rm.weight_bytes) == (10, 40, 8, 0)


def test_resize_linear_is_bilinear():
    m = model([h.make_node("Resize", ["x", "", "scales"], ["y"], name="rs", mode="linear")],
              [vi("x", [1, 1, 2, 2])], [vi("y", None)],
              [nh.from_array(np.array([1, 1, 2, 2], np.float32), "scales")], opset=13)
    op = one(from_onnx(m))
    # two spatial dims scaled: bilinear 7 per output element x 16 = 112; reads x 16 bytes only
    assert (op.flops, op.bytes_read, op.bytes_written) == (112, 16, 64)


# -- data movement and views --------------------------------------------------------------------------
def test_memory_ops_and_views():
    m = model([h.make_node("Reshape", ["x", "shape"], ["xr"], name="view"),
               h.make_node("Transpose", ["xr"], ["t"], name="tr", perm=[1, 0]),
               h.make_node("Concat", ["a", "b"], ["c"], name="cat", axis=1),
               h.make_node("Slice", ["s", "st", "en", "ax"], ["sl"], name="slice"),
               h.make_node("Cast", ["a"], ["ac"], name="cast", to=TP.FLOAT16),
               h.make_node("Flatten", ["a"], ["af"], name="flat"),
               h.make_node("Identity", ["a"], ["ai"], name="id")],
              [vi("x", [15]), vi("a", [2, 3]), vi("b", [2, 5]), vi("s", [10, 4])],
              [vi("t", None), vi("c", None), vi("sl", None), vi("ac", None, TP.FLOAT16), vi("af", None), vi("ai", None)],
              [nh.from_array(np.array([3, 5], np.int64), "shape"), nh.from_array(np.array([2], np.int64), "st"),
               nh.from_array(np.array([7], np.int64), "en"), nh.from_array(np.array([0], np.int64), "ax")])
    w = from_onnx(m)
    assert sorted(o.name for o in w) == ["cast", "cat", "slice", "tr"]  # views are not ops
    assert all(o.kind == "memory" and o.flops == 0 for o in w)
    assert (one(w, "tr").bytes_read, one(w, "tr").bytes_written) == (60, 60)  # (3, 5) fp32 both ways
    assert (one(w, "cat").bytes_read, one(w, "cat").bytes_written) == (64, 64)  # 6 + 10 in, 16 out
    # rows 2..6 of (10, 4): reads only the 20 kept elements (80 bytes), writes 80
    assert (one(w, "slice").bytes_read, one(w, "slice").bytes_written) == (80, 80)
    assert (one(w, "cast").bytes_read, one(w, "cast").bytes_written) == (24, 12)  # fp32 -> fp16


def test_gather_embedding_reads_only_gathered_rows():
    m = model([h.make_node("Gather", ["table", "ids"], ["e"], name="emb"),
               h.make_node("Gather", ["x", "pick"], ["g"], name="pick", axis=1)],
              [vi("ids", [2, 3], TP.INT64), vi("x", [4, 10, 3])], [vi("e", None), vi("g", None)],
              [init("table", (100, 16)), nh.from_array(np.array([0, 2], np.int64), "pick")])
    w = from_onnx(m)
    emb = one(w, "emb")
    # 6 rows of 16 fp32 = 384 bytes + 6 int64 ids 48 = 432 read; 384 written; the rows are weights
    assert (emb.kind, emb.bytes_read, emb.bytes_written, emb.weight_bytes) == ("embedding", 432, 384, 384)
    pick = one(w, "pick")
    # axis 1 of an activation: gathers 4 x 2 x 3 = 24 floats (96 bytes) + 2 ids (16) = 112 read, 96 written
    assert (pick.kind, pick.bytes_read, pick.bytes_written, pick.weight_bytes) == ("memory", 112, 96, 0)


def test_gather_elements_and_nd_read_only_what_they_pick():
    m = model([h.make_node("GatherElements", ["x", "i"], ["ge"], name="ge", axis=1),
               h.make_node("GatherND", ["x", "j"], ["gn"], name="gn")],
              [vi("x", [4, 1000]), vi("i", [4, 3], TP.INT64), vi("j", [2, 1], TP.INT64)],
              [vi("ge", None), vi("gn", None)])
    w = from_onnx(m)
    # 12 fp32 picked (48) + 12 int64 indices (96) = 144 read, not the whole 16,000-byte x; 48 written
    assert (one(w, "ge").bytes_read, one(w, "ge").bytes_written) == (144, 48)
    # 2 rows of 1000 fp32 (8000) + 2 int64 indices (16) = 8016 read; 8000 written
    assert (one(w, "gn").bytes_read, one(w, "gn").bytes_written) == (8016, 8000)


def test_constant_subgraphs_fold_and_count_as_weights():
    # weights made by ConstantOfShape (as the light model zoo does): folded, then read as weights
    fill = h.make_tensor("v", TP.FLOAT, [1], [0.5])
    m = model([h.make_node("ConstantOfShape", ["wshape"], ["w"], value=fill),
               h.make_node("Constant", [], ["bias"], value=nh.from_array(np.zeros(4, np.float32))),
               h.make_node("MatMul", ["x", "w"], ["y"], name="mm"), h.make_node("Add", ["y", "bias"], ["z"], name="add")],
              [vi("x", [2, 8])], [vi("z", None)], [nh.from_array(np.array([8, 4], np.int64), "wshape")])
    w = from_onnx(m, fuse=False)  # fused, the bias add would be the matmul's epilogue
    assert [o.name for o in w] == ["mm", "add"]
    assert one(w, "mm").weight_bytes == 128  # the folded (8, 4) fp32 weight
    assert one(w, "add").weight_bytes == 16  # the Constant (4,) bias
    assert w.info["folded_constant_nodes"] == 2


def test_precision_and_weight_dtype_from_elem_types():
    bf16_w = h.make_tensor("wb", TP.BFLOAT16, [8, 2], vals=b"\0" * 32, raw=True)
    m = model([h.make_node("MatMul", ["x16", "w16"], ["y16"], name="fp16"),
               h.make_node("MatMul", ["xb", "wb"], ["yb"], name="bf16"),
               h.make_node("Add", ["d", "d"], ["dd"], name="fp64"),
               h.make_node("Relu", ["f"], ["fr"], name="fp32")],
              [vi("x16", [4, 8], TP.FLOAT16), vi("xb", [4, 8], TP.BFLOAT16), vi("d", [3], TP.DOUBLE), vi("f", [3])],
              [vi("y16", None, TP.FLOAT16), vi("yb", None, TP.BFLOAT16), vi("dd", None, TP.DOUBLE), vi("fr", None)],
              [init("w16", (8, 2), np.float16), bf16_w])
    w = from_onnx(m)
    assert {o.name: o.precision for o in w} == {"fp16": "fp16", "bf16": "bf16", "fp64": "fp64", "fp32": "fp32"}
    assert one(w, "fp16").weight_bytes == 32 and one(w, "bf16").weight_bytes == 32  # 16 values x 2 bytes


# -- unknown op types and shapes --------------------------------------------------------------------
def test_unknown_op_type_is_kept_as_data():
    m = model([h.make_node("Frobnicate", ["x"], ["y"], name="frob", domain="my.ops"),
               h.make_node("Relu", ["y"], ["z"], name="relu")],
              [vi("x", [4, 4])], [vi("z", None)], domains=["my.ops"])
    m.graph.value_info.append(vi("y", [4, 8]))  # the custom op's output shape is declared
    w = from_onnx(m)
    frob = one(w, "frob")
    # no formula: kind other, 0 FLOPs, its bytes still count (reads 64, writes 128)
    assert (frob.kind, frob.flops, frob.bytes_read, frob.bytes_written) == ("other", 0, 64, 128)
    assert [(u.name, u.count, u.bytes) for u in w.unsupported] == [("my.ops.Frobnicate", 1, 192)]
    assert one(w, "relu").flops == 32 and any("Frobnicate" in x for x in w.warnings)


def test_nodes_with_unknown_shapes_are_listed_and_the_rest_counted():
    m = model([h.make_node("Mystery", ["x"], ["y"], name="mystery", domain="my.ops"),
               h.make_node("Relu", ["y"], ["y2"], name="after"),
               h.make_node("Relu", ["x"], ["x2"], name="fine")],
              [vi("x", [4, 4])], [vi("y2", None), vi("x2", None)], domains=["my.ops"])
    w = from_onnx(m)
    assert [o.name for o in w] == ["fine"] and one(w).flops == 16
    assert w.info["unknown_shape_nodes"] == ["mystery", "after"]
    assert {u.name for u in w.unsupported} == {"my.ops.Mystery (shape unknown)", "Relu (shape unknown)"}
    assert any("mystery" in x and "not counted" in x for x in w.warnings)


# -- symbolic dimensions -----------------------------------------------------------------------------
def _relu_batch():
    return model([h.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", ["batch", 8])], [vi("y", None)])


def test_symbolic_dim_default_warns():
    w = from_onnx(_relu_batch())
    assert one(w).flops == 8  # batch bound to the default 1: 1 x 8
    assert any("'batch'" in x and "assumed 1" in x for x in w.warnings)


def test_symbolic_dim_bound_by_input_or_symbol():
    assert one(from_onnx(_relu_batch(), {"x": (4, 8)})).flops == 32  # 4 x 8
    assert one(from_onnx(_relu_batch(), {"x": "3x8"})).flops == 24  # 3 x 8
    w = from_onnx(_relu_batch(), {"batch": 5})
    assert one(w).flops == 40 and not w.warnings  # 5 x 8, nothing assumed


# -- control flow ------------------------------------------------------------------------------------
def _loop_model(trip_input: bool):
    body = h.make_graph([h.make_node("MatMul", ["x_in", "W"], ["y"], name="mm"),
                         h.make_node("Identity", ["c_in"], ["c_out"], name="id")], "body",
                        [vi("i", [], TP.INT64), vi("c_in", [], TP.BOOL), vi("x_in", None)],
                        [vi("c_out", [], TP.BOOL), vi("y", None)])
    inits = [init("W", (8, 8))]
    inputs = [vi("x", [4, 8])]
    if trip_input:
        inputs.append(vi("M", [], TP.INT64))
    else:
        inits.append(nh.from_array(np.array(5, np.int64), "M"))
    return model([h.make_node("Loop", ["M", "", "x"], ["xo"], name="loop", body=body)], inputs, [vi("xo", None)], inits)


def test_loop_counted_per_static_trip_count():
    w = from_onnx(_loop_model(trip_input=False))
    op = one(w)
    # body MatMul (4, 8) @ (8, 8): 2 * 32 * 8 = 512 FLOPs per iteration, M = 5 iterations
    assert (op.name, op.flops, op.count, w.total_flops) == ("loop/mm", 512, 5, 2560)


def test_loop_with_dynamic_trip_count_counted_once_with_warning():
    w = from_onnx(_loop_model(trip_input=True))
    assert one(w).count == 1 and any("trip count not static" in x for x in w.warnings)


def test_scan_counted_per_sequence_length():
    body = h.make_graph([h.make_node("Add", ["s_in", "x_t"], ["s_out"], name="acc")], "body",
                        [vi("s_in", [4]), vi("x_t", [4])], [vi("s_out", [4])])
    m = model([h.make_node("Scan", ["s0", "xs"], ["s_final"], name="scan", body=body, num_scan_inputs=1)],
              [vi("s0", [4]), vi("xs", [6, 4])], [vi("s_final", None)])
    op = one(from_onnx(m))
    assert (op.name, op.flops, op.count) == ("scan/acc", 4, 6)  # 4 adds per step, 6 steps along axis 0


def test_if_constant_condition_takes_its_branch_else_the_costlier():
    then_g = h.make_graph([h.make_node("Relu", ["x"], ["r"], name="relu")], "then", [], [vi("r", [10])])
    else_g = h.make_graph([h.make_node("Sigmoid", ["x"], ["s"], name="sig")], "else", [], [vi("s", [10])])

    def build(cond_const: bool):
        inputs, inits = [vi("x", [10])], []
        if cond_const:
            inits.append(nh.from_array(np.array(True), "c"))
        else:
            inputs.append(vi("c", [], TP.BOOL))
        node = h.make_node("If", ["c"], ["o"], name="if", then_branch=then_g, else_branch=else_g)
        return model([node], inputs, [vi("o", None)], inits)

    w = from_onnx(build(True))
    assert (one(w).name, one(w).flops) == ("if/then_branch/relu", 10)  # relu 1 x 10
    w = from_onnx(build(False))
    assert (one(w).name, one(w).flops) == ("if/else_branch/sig", 40)  # sigmoid 4 x 10 > relu 10
    assert any("costlier branch" in x for x in w.warnings)


# -- the light model zoo shipped with onnx --------------------------------------------------------------
@pytest.mark.skipif(len(LIGHT_MODELS) != 9, reason="onnx light model zoo not shipped with this onnx")
@pytest.mark.parametrize("path", LIGHT_MODELS, ids=lambda p: os.path.basename(p)[6:-5])
def test_light_models_have_no_unknown_ops(path):
    w = from_onnx(path)
    assert w.unsupported == [] and w.info["unknown_shape_nodes"] == []
    assert len(w) > 10 and w.total_flops > 1e8  # every model is at least ~0.27 GFLOP (ShuffleNet)


@pytest.mark.skipif(not os.path.exists(os.path.join(LIGHT, "light_resnet50.onnx")), reason="no light ResNet-50")
def test_light_resnet50_conv_gemm_flops():
    w = from_onnx(os.path.join(LIGHT, "light_resnet50.onnx"))
    kinds = w.column("module_type")
    conv_gemm = float(w.columns["flops"][(kinds == "Conv") | (kinds == "Gemm")].sum())
    # ResNet-50 at 224 x 224: ~4.1 G multiply-adds in convs + fc = ~8.2 GFLOPs
    assert conv_gemm == pytest.approx(8.2e9, rel=0.02)
    assert w.columns["weight_bytes"].sum() == pytest.approx(25.6e6 * 4, rel=0.01)  # ~25.6 M fp32 parameters


# -- bad input ---------------------------------------------------------------------------------------
def test_not_an_onnx_file(tmp_path):
    p = tmp_path / "notes.onnx"
    p.write_text("hello, this is not a model\n")
    with pytest.raises(RooflineError, match=r"notes\.onnx: not an ONNX file"):
        from_onnx(p)


def test_truncated_file(tmp_path):
    p = tmp_path / "cut.onnx"
    data = Path(LIGHT, "light_squeezenet.onnx").read_bytes() if LIGHT_MODELS else \
        _relu_batch().SerializeToString()
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(RooflineError, match=r"cut\.onnx: truncated"):
        from_onnx(p)


def test_opset_newer_than_installed(tmp_path):
    p = tmp_path / "future.onnx"
    onnx.save(model([h.make_node("Relu", ["x"], ["y"])], [vi("x", [2])], [vi("y", None)], opset=99), p)
    with pytest.raises(RooflineError, match=r"opset 99 is newer than the installed onnx .* upgrade onnx"):
        from_onnx(p)


def test_unknown_input_name_lists_the_real_ones():
    with pytest.raises(RooflineError, match=r"input 'image' is not an input of the model; its inputs: x;"
                                            r" symbolic dims: batch"):
        from_onnx(_relu_batch(), {"image": (1, 8)})


def test_wrong_rank_shape():
    with pytest.raises(RooflineError, match=r"input 'x': shape 1x3x8 has rank 3, the model declares rank 2 "
                                            r"\(batchx8\)"):
        from_onnx(_relu_batch(), {"x": (1, 3, 8)})
    with pytest.raises(RooflineError, match=r"dimension 1 is fixed to 8 in the model, got 9"):
        from_onnx(_relu_batch(), {"x": (1, 9)})


def test_missing_external_data_still_analyses(tmp_path):
    from onnx.external_data_helper import convert_model_to_external_data

    m = model([h.make_node("MatMul", ["x", "W"], ["y"], name="mm")], [vi("x", [2, 64])], [vi("y", None)],
              [nh.from_array(np.ones((64, 32), np.float32), "W")])
    convert_model_to_external_data(m, all_tensors_to_one_file=True, location="weights.bin", size_threshold=16)
    p = tmp_path / "ext.onnx"
    onnx.save(m, p)
    (tmp_path / "weights.bin").unlink()
    w = from_onnx(p)
    op = one(w)
    # 2 * (2 * 32) * 64 = 8192 FLOPs; the weight's 64 x 32 x 4 = 8192 bytes come from its dims alone
    assert (op.flops, op.weight_bytes) == (8192, 8192)
    assert any("'weights.bin'" in x and "not found" in x and "continues from their shapes" in x for x in w.warnings)


def test_model_argument_type_and_missing_file(tmp_path):
    with pytest.raises(RooflineError, match="no such file"):
        from_onnx(tmp_path / "absent.onnx")
    # the API boundary rule: a TypeError that is also a RooflineError, naming the function and the parameter
    with pytest.raises(TypeError, match="from_onnx: model must be a path to an .onnx file or an onnx.ModelProto"):
        from_onnx(42)


# -- CLI ---------------------------------------------------------------------------------------------
def test_cli_onnx(tmp_path, capsys):
    path, dev, out = tmp_path / "m.onnx", tmp_path / "dev.json", tmp_path / "a.json"
    onnx.save(_relu_batch(), path)
    Device.simple("toy", "100 GFLOP/s", "10 GB/s").save(dev)
    code = main(["onnx", str(path), "--input", "x=4x8", "--device", str(dev), "--group-by", "op", "--json", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    d = json.loads(out.read_text())
    assert d["workload"]["ops"]["flops"] == [32.0]  # relu on 4 x 8
    assert d["workload"]["ops"]["module_type"] == ["Relu"]
    code = main(["onnx", str(path), "--input", "nope=1x8", "--device", str(dev)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("roofline: error:") and "its inputs: x" in err
    code = main(["onnx", str(path), "--input", "x", "--device", str(dev)])
    assert code == 2 and "expected NAME=SHAPE" in capsys.readouterr().err


# -- runtime fusions -----------------------------------------------------------------------------------
def _decomposed_attention():
    """softmax(q @ k^T / sqrt(8)) @ v as an exporter writes it: Transpose, MatMul, Div, Softmax, MatMul."""
    return model([h.make_node("Transpose", ["k"], ["kt"], name="/Transpose", perm=[0, 1, 3, 2]),
                  h.make_node("MatMul", ["q", "kt"], ["s"], name="/MatMul"),
                  h.make_node("Div", ["s", "scale"], ["ss"], name="/Div"),
                  h.make_node("Softmax", ["ss"], ["p"], name="/Softmax", axis=-1),
                  h.make_node("MatMul", ["p", "v"], ["y"], name="/MatMul_1")],
                 [vi("q", [1, 2, 4, 8]), vi("k", [1, 2, 4, 8]), vi("v", [1, 2, 4, 8])], [vi("y", None)],
                 [nh.from_array(np.array(8 ** 0.5, np.float32), "scale")])


def test_decomposed_attention_fuses_to_one_op():
    w = from_onnx(_decomposed_attention())
    op = one(w)
    # batch x heads 2, 4 x 4 pairs, E = Ev = 8: 2 * 2 * 16 * (8 + 8) = 1024 (scale and softmax are inside)
    assert (op.name, op.kind, op.module_type, op.flops) == ("/Attention", "attention", "Attention", 1024)
    # reads q, k, v 3 x 64 x 4 = 768 bytes once, writes y 256: no 4 x 4 score tensor
    assert (op.bytes_read, op.bytes_written) == (768, 256)
    assert any("1 attention" in a for a in w.assumptions)
    unfused = from_onnx(_decomposed_attention(), fuse=False)
    assert [o.module_type for o in unfused] == ["Transpose", "MatMul", "Div", "Softmax", "MatMul"]
    # 2 matmuls 2 * 32 * 8 = 512 each; div 32; softmax 5 x 32 = 160
    assert unfused.total_flops == 512 + 32 + 160 + 512


def test_matmul_bias_and_erf_gelu_fuse():
    m = model([h.make_node("MatMul", ["x", "w"], ["mm"], name="/fc/MatMul"),
               h.make_node("Add", ["b", "mm"], ["y"], name="/fc/Add"),
               h.make_node("Div", ["y", "sqrt2"], ["d"], name="/act/Div"),
               h.make_node("Erf", ["d"], ["e"], name="/act/Erf"),
               h.make_node("Add", ["e", "one"], ["e1"], name="/act/Add"),
               h.make_node("Mul", ["y", "e1"], ["g"], name="/act/Mul"),
               h.make_node("Mul", ["g", "half"], ["out"], name="/act/Mul_1")],
              [vi("x", [4, 8])], [vi("out", None)],
              [init("w", (8, 16)), init("b", (16,)), nh.from_array(np.float32(2 ** 0.5), "sqrt2"),
               nh.from_array(np.float32(1), "one"), nh.from_array(np.float32(0.5), "half")])
    w = from_onnx(m)
    assert [(o.name, o.module_type) for o in w] == [("/fc/MatMul", "MatMul"), ("/act/Gelu", "Gelu")]
    mm, gelu = one(w, "/fc/MatMul"), one(w, "/act/Gelu")
    # 2 * 64 * 8 = 1024, the bias add is an epilogue; reads x 128 + w 512 + b 64 bytes, writes 256
    assert (mm.flops, mm.bytes_read, mm.bytes_written, mm.weight_bytes) == (1024, 704, 256, 576)
    assert (gelu.flops, gelu.bytes_read, gelu.bytes_written) == (320, 256, 256)  # gelu 5 x 64; one read, one write
    assert from_onnx(m, fuse=False).total_flops == 1024 + 64 + 5 * 64  # bias add 64 + five 1-FLOP steps x 64


# -- cross-checks with the PyTorch frontend ------------------------------------------------------------
def _torch_frontend():
    pytest.importorskip("torch")
    try:
        from roofline.frontends.torch import from_torch
    except ImportError as exc:
        pytest.skip(f"PyTorch frontend not importable: {exc}")
    models = pytest.importorskip("models")  # tests/models.py
    return from_torch, models


def _export(model, inputs, path, **kwargs):
    import warnings

    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, inputs, str(path), dynamo=False, opset_version=17, **kwargs)
    except Exception as exc:  # e.g. a torch without the TorchScript exporter (dynamo needs onnxscript)
        pytest.skip(f"torch.onnx.export unavailable: {exc.__class__.__name__}: {exc}")
    return path


@pytest.mark.skipif(not os.path.exists(os.path.join(LIGHT, "light_resnet50.onnx")), reason="no light ResNet-50")
def test_resnet50_conv_gemm_matches_torch_frontend():
    from_torch, models = _torch_frontend()
    wt = from_torch(*_flat(models.resnet50()))
    kind = wt.column("kind")
    torch_mm = float(wt.columns["flops"][(kind == "conv") | (kind == "matmul")].sum())
    wo = from_onnx(os.path.join(LIGHT, "light_resnet50.onnx"))
    mt = wo.column("module_type")
    onnx_mm = float(wo.columns["flops"][(mt == "Conv") | (mt == "Gemm")].sum())
    # two independent routes (aten trace of tests/models.py vs the zoo graph) over the same formulas
    assert onnx_mm == pytest.approx(torch_mm, rel=0.02)
    assert torch_mm == pytest.approx(8.2e9, rel=0.02)


def _flat(made):
    model, inputs = made
    return (model, *inputs)


def test_small_cnn_export_agrees_with_torch_frontend(tmp_path):
    import torch

    from_torch, models = _torch_frontend()
    model, inputs = models.small_cnn(device="cpu")
    wt = from_torch(model, *inputs)
    # PRESERVE keeps BatchNormalization (eval export would fold it into the conv weights)
    wo = from_onnx(_export(model, inputs, tmp_path / "cnn.onnx", training=torch.onnx.TrainingMode.PRESERVE))
    assert wo.total_flops == pytest.approx(wt.total_flops, rel=0.01)
    # documented difference: aten max_pool2d_with_indices also writes int64 indices
    # ((1, 16, 8, 8) = 1024 x 8 = 8192 bytes, 2.4%); ONNX MaxPool writes values only
    assert wo.total_bytes == pytest.approx(wt.total_bytes, rel=0.05)


def test_transformer_block_export_agrees_with_torch_frontend(tmp_path):
    from_torch, models = _torch_frontend()
    model, inputs = models.transformer_block(device="cpu")
    wt = from_torch(model, *inputs)
    wo = from_onnx(_export(model, inputs, tmp_path / "block.onnx"))
    # the exporter decomposes SDPA, Linear bias and GELU; the fusions put them back together
    assert wo.info["fusions"] == {"MatMul+bias": 4, "GELU": 1, "attention": 1}
    assert wo.total_flops == pytest.approx(wt.total_flops, rel=0.01)
    # documented difference: aten native_layer_norm also writes mean and rstd (2 x 32 fp32 per norm)
    assert wo.total_bytes == pytest.approx(wt.total_bytes, rel=0.05)
    assert not wo.unsupported and not wo.info["unknown_shape_nodes"]
    # exported with dynamic batch and sequence axes, then bound: the same figures as the static export
    dyn = _export(model, inputs, tmp_path / "dyn.onnx", input_names=["x"],
                  dynamic_axes={"x": {0: "batch", 1: "seq"}})
    wd = from_onnx(dyn, {"batch": 2, "seq": 16})
    assert (wd.total_flops, wd.total_bytes) == (wo.total_flops, wo.total_bytes)


def _dynamic_reshape():
    """Reshape x (n, 6) to (-1, 6 / 2), the target computed at run time: Shape -> Gather -> Cast -> Div -> Cast."""
    return model([h.make_node("Shape", ["x"], ["s"]), h.make_node("Gather", ["s", "one"], ["d"], axis=0),
                  h.make_node("Cast", ["d"], ["df"], to=TP.FLOAT), h.make_node("Div", ["df", "two"], ["half"]),
                  h.make_node("Cast", ["half"], ["hi"], to=TP.INT64),
                  h.make_node("Unsqueeze", ["hi", "axes"], ["hu"]),
                  h.make_node("Concat", ["minus1", "hu"], ["target"], axis=0),
                  h.make_node("Reshape", ["x", "target"], ["r"]),
                  h.make_node("Relu", ["r"], ["y"], name="relu")],
                 [vi("x", ["n", 6])], [vi("y", None)],
                 [nh.from_array(np.array(1, np.int64), "one"), nh.from_array(np.float32(2), "two"),
                  nh.from_array(np.array([0], np.int64), "axes"), nh.from_array(np.array([-1], np.int64), "minus1")])


def test_static_shape_arithmetic_resolves_dynamic_reshape():
    w = from_onnx(_dynamic_reshape(), {"n": 4})
    # 6 / 2 = 3 columns: r is (8, 3); relu 24 FLOPs; the shape arithmetic itself is folded away
    assert [(o.name, o.flops) for o in w] == [("relu", 24)]
    assert w.info["unknown_shape_nodes"] == [] and not w.warnings


def test_dequantized_weights_are_read_at_their_stored_dtype():
    m = model([h.make_node("DequantizeLinear", ["wq", "scale", "zp"], ["w"]),
               h.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
              [vi("x", [2, 8])], [vi("y", None)],
              [init("wq", (8, 4), np.int8), nh.from_array(np.float32(0.1), "scale"), nh.from_array(np.int8(0), "zp")])
    op = one(from_onnx(m))
    # QDQ: the int8 (8, 4) weight is 32 bytes in memory (not 128 as fp32); reads x 64 + 32, writes 32
    assert (op.flops, op.weight_bytes, op.bytes_read, op.bytes_written) == (128, 32, 96, 32)


def test_onnxruntime_contrib_ops_get_shapes_and_formulas():
    m = model([h.make_node("SkipLayerNormalization", ["x", "skip", "g", "b"], ["y"], name="sln",
                           domain="com.microsoft"),
               h.make_node("FastGelu", ["y"], ["z"], name="fg", domain="com.microsoft"),
               h.make_node("Relu", ["z"], ["r"], name="relu")],
              [vi("x", [2, 4, 8]), vi("skip", [2, 4, 8])], [vi("r", None)], [init("g", (8,)), init("b", (8,))],
              domains=["com.microsoft"])
    w = from_onnx(m)
    # 64 elements: residual add 1 + layer norm 5 + scale/shift 2 = 8 per element = 512
    assert one(w, "sln").flops == 512
    assert one(w, "fg").flops == 9 * 64  # tanh-approximated GELU 9 per element
    assert one(w, "relu").flops == 64 and not w.unsupported


# -- issue 13: malformed graphs, bounded work --------------------------------------------------------
def _nested_if(depth):
    g = h.make_graph([h.make_node("Relu", ["x"], ["r"])], "leaf", [], [vi("r", None)])
    for d in range(depth):
        other = h.make_graph([h.make_node("Relu", ["x"], [f"e{d}"])], f"else{d}", [], [vi(f"e{d}", None)])
        g = h.make_graph([h.make_node("If", ["c"], [f"o{d}"], then_branch=g, else_branch=other)], f"then{d}", [],
                         [vi(f"o{d}", None)])
    top = g.node[0]
    top.output[0] = "y"
    return model([top], [vi("x", [4]), vi("c", [], TP.BOOL)], [vi("y", None)])


def test_nested_subgraphs_are_limited_in_depth_and_walked_once(monkeypatch):
    w = from_onnx(_nested_if(3))
    # one Relu per level's taken (costlier: equal, so the first) branch chain: the leaf Relu, 4 elements
    assert w.total_flops == 4 and w.info["nodes"] == 4  # 3 If nodes + the leaf Relu, each walked once
    with pytest.raises(RooflineError, match="nested more than 8 deep .*ROOFLINE_ONNX_MAX_DEPTH"):
        from_onnx(_nested_if(12))
    monkeypatch.setenv("ROOFLINE_ONNX_MAX_DEPTH", "2")
    with pytest.raises(RooflineError, match="nested more than 2 deep"):
        from_onnx(_nested_if(3))
    monkeypatch.setenv("ROOFLINE_ONNX_MAX_DEPTH", "20")
    monkeypatch.setenv("ROOFLINE_ONNX_MAX_NODES", "5")
    with pytest.raises(RooflineError, match="more than 5 nodes .*ROOFLINE_ONNX_MAX_NODES"):
        from_onnx(_nested_if(12))


def test_a_huge_computed_range_is_sized_not_materialised():
    const = [h.make_node("Constant", [], [n], value=nh.from_array(np.array(v, dtype=np.int64)))
             for n, v in (("z", 0), ("one", 1), ("p", 30000), ("q", 10000))]
    m = model([*const, h.make_node("Mul", ["p", "q"], ["n"]), h.make_node("Range", ["z", "n", "one"], ["r"]),
               h.make_node("Cast", ["r"], ["rf"], to=TP.FLOAT), h.make_node("Add", ["rf", "x"], ["y"])],
              [vi("x", [1])], [vi("y", None)])
    w = from_onnx(m)
    assert w.total_flops == 3e8  # the Add over the 3e8-element range: its shape is known, its data never made
    assert any("shapes, not data" in x for x in w.warnings)


@pytest.mark.parametrize("node, inputs, message", [
    (h.make_node("Conv", ["x", "w"], ["y"], group=0), [vi("x", [1, 3, 8, 8])], "attribute 'group' must be >= 1"),
    (h.make_node("Conv", ["x", "w"], ["y"], strides="ab"), [vi("x", [1, 3, 8, 8])],
     "attribute 'strides' must be INTS, got STRING"),
    (h.make_node("Transpose", ["x"], ["y"], perm=[3, 0]), [vi("x", [2, 3])], r"perm \[3, 0\] is not a permutation"),
    (h.make_node("MatMul", ["x", "x"], ["y"]), [vi("x", [])], "input 'x' has rank 0 .*MatMul needs rank >= 1"),
    (h.make_node("If", ["c"], ["y"]), [vi("c", [], TP.BOOL)], "If node 'If_0': missing attribute 'then_branch'"),
    (h.make_node("Loop", ["", "", "x"], ["y"]), [vi("x", [2])], "Loop node 'Loop_0': missing attribute 'body'"),
])
def test_malformed_nodes_are_one_line_errors_naming_them(node, inputs, message):
    out = [vi("y", [1, 4, 6, 6] if node.op_type == "Conv" else [] if node.op_type == "MatMul" else None)]
    m = model([node], inputs, out, inits=[init("w", (4, 3, 3, 3))] if node.op_type == "Conv" else ())
    with pytest.raises(RooflineError, match=message) as e:
        from_onnx(m)
    assert "\n" not in str(e.value)


def test_input_dimensions_are_bounded():
    m = model([h.make_node("MatMul", ["a", "b"], ["y"])], [vi("a", ["n", 4]), vi("b", [4, 4])], [vi("y", None)])
    with pytest.raises(RooflineError, match="dimension 100000000000000000000 exceeds .*ROOFLINE_MAX_DIM"):
        from_onnx(m, {"a": "1x100000000000000000000"})
    with pytest.raises(RooflineError, match="ROOFLINE_MAX_DIM"):
        from_onnx(m, {"n": 10**20})


# -- the op table, formulas moved to roofline.work.costs, user formulas ----------------------------------
def test_op_table_and_dispatch_list_the_same_op_types():
    from roofline.frontends.onnx import ENTRIES, OPS
    from roofline.work import costs

    assert set(OPS) == set(ENTRIES)
    assert costs.builtin_ops("onnx") is OPS
    for op, rule in OPS.items():
        assert rule.op == op and rule.formula in costs.FORMULAS and rule.description, op


def test_lstm_counts_every_gate_step_and_direction():
    m = model([h.make_node("LSTM", ["x", "w", "r"], ["y"], name="lstm", hidden_size=4)],
              [vi("x", [5, 2, 3])], [vi("y", None)], [init("w", (1, 16, 3)), init("r", (1, 16, 4))])
    op = one(from_onnx(m))
    # seq 5, batch 2, 1 direction, 4 gates x hidden 4, inputs 3 + hidden 4: 2 * 5 * 2 * 1 * 16 * 7 = 2240
    assert (op.kind, op.flops) == ("matmul", 2240)
    # reads x 30 * 4 + w 48 * 4 + r 64 * 4 = 568 (weights w + r = 448); writes y (5, 1, 2, 4) 40 * 4 = 160
    assert (op.bytes_read, op.weight_bytes, op.bytes_written) == (568, 448, 160)


def test_quantize_dequantize_and_mean_per_element():
    m = model([h.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], name="q"),
               h.make_node("DequantizeLinear", ["q", "s", "zp"], ["d"], name="dq"),
               h.make_node("Mean", ["x", "d", "x"], ["y"], name="mean")],
              [vi("x", [2, 8])], [vi("y", None)], [nh.from_array(np.float32(0.5), "s"), nh.from_array(np.uint8(0), "zp")])
    w = from_onnx(m)
    assert one(w, "q").flops == 80  # 16 elements x 5 (divide, round, add zero point, saturate 2)
    assert one(w, "dq").flops == 32  # 16 elements x 2 (subtract zero point, multiply by scale)
    assert one(w, "mean").flops == 48  # 3 inputs: 2 adds + 1 divide = 3 per element x 16


def test_onnxruntime_attention_counts_its_qkv_projection():
    m = model([h.make_node("Attention", ["x", "w", "b"], ["y"], name="att", num_heads=2, domain="com.microsoft")],
              [vi("x", [1, 4, 8])], [vi("y", None)], [init("w", (8, 24)), init("b", (24,))], domains=["com.microsoft"])
    op = one(from_onnx(m))
    # projection (1 x 4 x 8) @ (8 x 24): 2 * 4 * 8 * 24 = 1536; attention on 2 heads of 24 / 3 / 2 = 4:
    # 2 * heads 2 * pairs 4 * 4 * (4 + 4) = 512; total 2048
    assert (op.kind, op.flops) == ("attention", 2048)
    # reads x 32 * 4 + w 192 * 4 + b 24 * 4 = 992, writes y (1, 4, 8) = 128
    assert (op.bytes_read, op.bytes_written, op.weight_bytes) == (992, 128, 864)


def _relu_model():
    return model([h.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [2, 5])], [vi("y", None)])


def test_user_formula_counts_a_custom_domain_op():
    from roofline.work import costs

    m = model([h.make_node("FusedMLP", ["x", "w"], ["y"], name="mlp", domain="com.me")],
              [vi("x", [4, 8])], [vi("y", [4, 16])], [init("w", (8, 16))], domains=["com.me"])
    assert [u.name for u in from_onnx(m).unsupported] == ["com.me.FusedMLP"]  # no formula yet: bytes only
    costs.register_op("onnx", "com.me.FusedMLP", lambda ins, outs: costs.cost("matmul", ins, outs))
    try:
        w = from_onnx(m)
    finally:
        costs.unregister_op("onnx", "com.me.FusedMLP")
    op = one(w)
    # y (4, 16) = 64 elements, K = x's last dim 8: 2 * 64 * 8 = 1024
    assert (op.kind, op.flops) == ("matmul", 1024) and not w.unsupported
    # reads x 32 * 4 + w 128 * 4 = 640, the initializer w (512) a weight; writes 64 * 4 = 256
    assert (op.bytes_read, op.weight_bytes, op.bytes_written) == (640, 512, 256)


def test_user_formula_overrides_a_builtin_and_unregister_restores_it():
    from roofline.work import costs

    def three_per_element(ins, outs):
        r, w = costs.traffic(ins, outs)
        return costs.Cost("elementwise", 3.0 * outs[0].numel, r, w)

    assert one(from_onnx(_relu_model())).flops == 10  # built-in: 1 per element x (2 x 5)
    with pytest.raises(ValueError, match="override=True"):
        costs.register_op("onnx", "Relu", three_per_element)  # Relu has a built-in formula
    costs.register_op("onnx", "Relu", three_per_element, override=True)
    try:
        assert one(from_onnx(_relu_model())).flops == 30  # the user's 3 per element x 10
    finally:
        costs.unregister_op("onnx", "Relu")
    assert one(from_onnx(_relu_model())).flops == 10  # the built-in again: 1 per element x 10


def test_user_formula_returning_no_cost_is_one_line():
    from roofline.work import costs

    costs.register_op("onnx", "Relu", lambda ins, outs: 42, override=True)
    try:
        with pytest.raises(RooflineError, match="registered for onnx op Relu returned int, not a roofline.work.costs.Cost"):
            from_onnx(_relu_model())
    finally:
        costs.unregister_op("onnx", "Relu")
