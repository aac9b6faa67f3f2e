"""GEMM dimensions in the workload (m, n, k, batch): frontends fill them, files keep them, bad ones are refused;
tile and wave quantization (NVIDIA's Matrix Multiplication Background User's Guide) reproduced by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import roofline
from roofline import Op, Workload
from roofline.core.errors import RooflineError
from roofline.engine.gemm_shape import TILES, attention_quantization, dims_from_flops, quantization


def _dims(w: Workload, name: str) -> tuple[float, float, float, float]:
    i = [j for j in range(len(w)) if w.strings("name", j) == name][0]
    return tuple(float(w.columns[c][i]) for c in ("m", "n", "k", "batch"))  # type: ignore[return-value]


def test_llm_prefill_and_decode_dims():
    # Llama-2-7B: hidden 4096, MLP 11008, 32 heads of 128, vocabulary 32000
    # unfused attention: the qk and pv GEMMs are ops of their own (fused, one sdpa op)
    pre = roofline.from_llm("llama-2-7b", phase="prefill", prompt=128, batch=2, flash=False)
    assert _dims(pre, "prefill.layers.attn.q_proj") == (256, 4096, 4096, 1)  # m = batch x prompt tokens
    assert _dims(pre, "prefill.layers.mlp.down_proj") == (256, 4096, 11008, 1)
    assert _dims(pre, "prefill.lm_head") == (2, 32000, 4096, 1)  # last token of each sequence
    assert _dims(pre, "prefill.layers.attn.qk") == (128, 128, 128, 64)  # 128 queries x 128 keys, 2 seqs x 32 heads
    dec = roofline.from_llm("llama-2-7b", phase="decode", context=512, tp=2, flash=False)
    assert _dims(dec, "decode.layers.attn.q_proj") == (1, 2048, 4096, 1)  # tp 2: 16 heads x 128
    assert _dims(dec, "decode.layers.mlp.gate_proj") == (1, 5504, 4096, 1)  # 11008 / 2
    assert _dims(dec, "decode.layers.attn.qk") == (1, 512, 128, 16)
    # every GEMM's FLOPs are 2 m n k batch (the dims and the FLOPs come from one table)
    for w in (pre, dec):
        mm = w.column("kind") == "matmul"
        c = w.columns
        assert np.allclose(c["flops"][mm], 2 * c["m"][mm] * c["n"][mm] * c["k"][mm] * c["batch"][mm])
        assert np.isnan(c["m"][w.column("kind") == "norm"]).all()


def test_torch_dims_linear_bmm_and_sdpa():
    torch = pytest.importorskip("torch")
    from torch import nn

    w = roofline.from_torch(nn.Sequential(nn.Linear(64, 32), nn.ReLU()), torch.randn(8, 64))
    assert [(o.kind, o.m, o.n, o.k, o.batch) for o in w][0] == ("matmul", 8, 32, 64, 1)  # (8x64) @ (64x32)

    class Bmm(nn.Module):
        def forward(self, a, b):
            return torch.bmm(a, b)

    o = next(iter(roofline.from_torch(Bmm(), torch.randn(3, 5, 7), torch.randn(3, 7, 2))))
    assert (o.m, o.n, o.k, o.batch) == (5, 2, 7, 3)

    class Sdpa(nn.Module):
        def forward(self, q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)

    q, kv = torch.randn(2, 4, 16, 8), torch.randn(2, 4, 32, 8)
    o = next(o for o in roofline.from_torch(Sdpa(), q, kv, kv) if o.kind == "attention")
    assert (o.m, o.n, o.k, o.batch) == (16, 32, 8, 8)  # 16 queries, 32 keys, head dim 8, 2 x 4 (seq x heads)


def test_onnx_matmul_dims():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["c"])], "g",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [4, 6, 10]),
                           helper.make_tensor_value_info("b", TensorProto.FLOAT, [4, 10, 3])],
                          [helper.make_tensor_value_info("c", TensorProto.FLOAT, [4, 6, 3])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    o = next(iter(roofline.from_onnx(model)))
    assert o.kind == "matmul" and (o.m, o.n, o.k, o.batch) == (6, 3, 10, 4)
    del onnx


def test_dims_from_flops_refuses_a_fractional_k():
    assert dims_from_flops(2 * 8 * 32 * 64, (8, 32)) == {"m": 8, "n": 32, "k": 64, "batch": 1}
    assert dims_from_flops(2 * 8 * 32 * 64 + 8 * 32, (8, 32)) is None  # bias in the FLOPs: K not whole


def test_dims_round_trip_json_csv_and_old_files_migrate(tmp_path):
    w = Workload.from_ops([Op("g", kind="matmul", flops=2 * 3 * 4 * 5, bytes_read=1, m=3, n=4, k=5, batch=1),
                           Op("e", kind="elementwise", flops=1, bytes_read=1)])
    d = w.to_dict()
    assert d["schema"] == "roofline.workload/3" and d["ops"]["m"] == [3.0, None]
    back = Workload.from_dict(json.loads(json.dumps(d)))
    assert back.columns["k"][0] == 5 and math.isnan(back.columns["k"][1])
    w.save_csv(tmp_path / "w.csv")
    assert Workload.load(tmp_path / "w.csv").columns["n"][0] == 4
    # a file without matmul shapes writes no dims columns, and a /2 file loads with none known
    plain = Workload.from_ops([Op("e", flops=1, bytes_read=1)]).to_dict()
    assert "m" not in plain["ops"]
    old = Workload.from_dict({**plain, "schema": "roofline.workload/2"})
    assert np.isnan(old.columns["batch"]).all()


@pytest.mark.parametrize("value, why", [(-1, "-1.0"), (2.5, "2.5"), (float("inf"), "inf")])
def test_bad_dims_are_one_line(value, why):
    doc = {"schema": "roofline.workload/3", "ops": [{"name": "g", "kind": "matmul", "flops": 1, "bytes_read": 1,
                                                     "bytes_written": 0, "k": value}]}
    with pytest.raises(RooflineError, match=rf"ops\[0\]\.k must be a whole number >= 0 .*got {why}") as e:
        Workload.from_dict(json.loads(json.dumps(doc, allow_nan=True)) if math.isfinite(value) else doc, where="w.json")
    assert "\n" not in str(e.value)


def test_bad_dims_cli_exit_2(tmp_path, capsys):
    from roofline.cli import main

    p = tmp_path / "w.json"
    p.write_text(json.dumps({"schema": "roofline.workload/3", "ops": [
        {"name": "g", "kind": "matmul", "flops": 1, "bytes_read": 1, "bytes_written": 0, "m": -4}]}))
    assert main(["analyze", str(p), "--device", "h100"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("roofline: error:") and "ops[0].m" in err and "-4" in err and "\n" not in err


# -- tile and wave quantization ---------------------------------------------------------------------------
def test_guide_wave_example_by_hand():
    # the guide's wave quantization: an A100 has 108 SMs; with 256x128 tiles a 1792 x 1792 output is
    # 7 x 14 = 98 tiles, one wave: 98 of 108 SMs busy; the useful fraction 1792^2 / (108 x 256 x 128) = 0.9074
    q, tile = quantization(np.array([1792.0]), np.array([1792.0]), np.array([1.0]), 108)
    assert TILES[int(tile[0])] == (256, 128)
    assert q[0] == pytest.approx(1792 ** 2 / (108 * 256 * 128))
    # one more row: ceil(1793/256) = 8 x 14 = 112 tiles > 108, two waves with 256x128 (q = 1793*1792 /
    # (2*108*256*128) = 0.454); 128x256 is 15 x 7 = 105 tiles, one wave: 1793*1792/(108*32768) = 0.908 wins
    q, tile = quantization(np.array([1793.0]), np.array([1792.0]), np.array([1.0]), 108)
    assert TILES[int(tile[0])] == (128, 256) and q[0] == pytest.approx(1793 * 1792 / (108 * 32768))


def test_guide_tile_quantization_by_hand():
    # tile quantization: n = 257 with 128-wide tiles needs 3 tiles where 2 would cover 256; a 1-wave problem
    # (m = 128, batch 1, 108 SMs) computes whole tiles for 128 x 257 outputs. Best tile by hand (no reuse factor):
    # 128x128: 3 tiles, q = 128*257/(108*16384) = 0.01859; 128x64: 5 tiles, 128*257/(108*8192) = 0.03718;
    # 64x64: 2 x 5 = 10 tiles, 128*257/(108*4096) = 0.07437; 64x128: 2 x 3 = 6, 0.03718; 64x256: 2 x 2 = 4,
    # 128*257/(108*16384) = 0.01859. In one wave the smallest tile wastes least: 64x64 wins.
    q, tile = quantization(np.array([128.0]), np.array([257.0]), np.array([1.0]), 108)
    assert TILES[int(tile[0])] == (64, 64) and q[0] == pytest.approx(128 * 257 / (108 * 4096))


def test_ties_keep_the_larger_tile():
    # 2048 x 2048 on 128 SMs: 256x128 -> 8 x 16 = 128 tiles, one full wave, q = 1; 64x64 -> 1024 tiles, 8 full
    # waves, q = 1 too: the tie keeps the guide's most efficient (first) tile
    q, tile = quantization(np.array([2048.0]), np.array([2048.0]), np.array([1.0]), 128)
    assert q[0] == pytest.approx(1.0) and TILES[int(tile[0])] == (256, 128)


def test_quantization_is_one_for_whole_waves_and_bounded():
    # 108 SMs x (256 x 128): m = 256 * 9, n = 128 * 12 -> 108 tiles, exactly one full wave
    q, _ = quantization(np.array([256.0 * 9]), np.array([128.0 * 12]), np.array([1.0]), 108)
    assert q[0] == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    m, n, b = rng.integers(1, 9000, 500), rng.integers(1, 9000, 500), rng.integers(1, 64, 500)
    q, _ = quantization(m, n, b, 132)
    assert ((q > 0) & (q <= 1)).all()


def test_attention_blocks_over_sms_by_hand():
    # 1 sequence x 32 heads, 128 queries: 32 blocks of 128 rows, one wave of 108 -> 32/108
    assert attention_quantization(np.array([128.0]), np.array([32.0]), 108)[0] == pytest.approx(32 / 108)
    # 2048 queries x 32 heads = 512 blocks: ceil(512/108) = 5 waves of 108 -> 512/540
    assert attention_quantization(np.array([2048.0]), np.array([32.0]), 108)[0] == pytest.approx(512 / 540)


def test_trace_dims_match_the_traced_model(tmp_path):
    torch = pytest.importorskip("torch")
    from torch import nn
    from torch.profiler import ProfilerActivity, profile

    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 16)).eval()
    x = torch.randn(8, 64)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof, torch.no_grad():
        model(x)
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path))
    w = roofline.from_trace(path, "xeon-8480").workload
    mm = [o for o in w if o.kind == "matmul"]
    # addmm (8 x 64) @ (64 x 32), then (8 x 32) @ (32 x 16): the same as from_torch on the same model
    assert sorted((o.m, o.n, o.k, o.batch) for o in mm) == [(8, 16, 32, 1), (8, 32, 64, 1)]
    traced = sorted((o.m, o.n, o.k, o.batch) for o in roofline.from_torch(model, x) if o.kind == "matmul")
    assert traced == sorted((o.m, o.n, o.k, o.batch) for o in mm)
