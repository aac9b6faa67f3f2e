"""The shape-aware forecast: quantization on the compute term, cited calibrations (roofline.calibration/2) per catalog
device, a user's calibration over them kind by kind, /1 files, bad calibrations."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

import roofline
from roofline import Op, Workload, analyze, get_device
from roofline.catalog import devices
from roofline.catalog.calibrations import cited_calibration, devices_with_cited_calibration
from roofline.core.errors import RooflineError
from roofline.engine.gemm_shape import TILES, quantization
from roofline.hardware.calibration import Calibration, EfficiencyCurve, load_calibration

H100 = "NVIDIA H100 SXM5 80GB"
GEMM = 2 * 128 * 4096 * 4096  # FLOPs of a 128 x 4096 x 4096 product
GEMM_BYTES = 2 * (128 * 4096 + 4096 * 4096 + 128 * 4096)  # bf16 A, B, C once each


def _gemm(name: str = "g", **kw: float) -> Op:
    return Op(name, kind="matmul", flops=GEMM, bytes_read=2 * (128 * 4096 + 4096 * 4096), bytes_written=2 * 128 * 4096,
              precision="bf16", unit="matrix", **kw)


def test_quantized_gemm_forecast_by_hand():
    # H100 SXM5, 132 SMs (cited file). m = 1024, n = 4096: q per tile of the guide's set (one tile per SM per wave):
    #   256x128: 4 x 32 = 128 tiles, 1 wave -> 1024*4096 / (132*32768) = 0.9697 (128x256 and 128x128, 2 waves, tie;
    #   the tie keeps 256x128);  64x64: 16 x 64 = 1024 tiles, 8 waves -> 1024*4096 / (8*132*4096) = 0.9697 too
    m = 1024
    flops = 2 * m * 4096 * 4096
    q = m * 4096 / (132 * 32768)
    compute = flops / (q * 794.5e12)  # the MAMF bf16 sustained figure (catalog achievable): 44.6 us
    memory = 2 * (2 * m * 4096 + 4096 * 4096) / 2.903e12  # the catalog's sustained HBM copy figure: 17.3 us
    assert compute > memory
    op = Op("g", kind="matmul", flops=flops, bytes_read=2 * (m * 4096 + 4096 * 4096), bytes_written=2 * m * 4096,
            precision="bf16", unit="matrix", m=m, n=4096, k=4096, batch=1)
    f = analyze(Workload.from_ops([op]), get_device("h100"), forecast=True).forecast
    assert f.roof_time[0] == pytest.approx(compute, rel=1e-9)
    # the cited bf16 compute curve (XLA's sm_90 table) at 2*1024*4096*4096 = 3.436e10 FLOPs: the mean of its six rows of
    # that size, every one at q = 128/132: (751.9 + 725.5 + 752.2 + 685.2 + 727.5 + 751.7) / 6 = 732.33 TFLOP/s
    # -> 732.33 / (794.5 x 0.9697) = 0.9505; forecast = roof / 0.9505 + launch 3 us
    e = (751.9 + 725.5 + 752.2 + 685.2 + 727.5 + 751.7) / 6 / (794.5 * 128 / 132)
    assert e == pytest.approx(0.9505, abs=2e-4) and f.efficiency[0] == pytest.approx(e, abs=2e-4)
    assert f.time[0] == pytest.approx(compute / e + 3e-6, rel=3e-4)
    assert str(f.term[0]) == "compute"
    # without the dimensions the op is not quantized: the same op forecasts at its plain achievable roofs
    plain = analyze(Workload.from_ops([replace(op, m=math.nan, n=math.nan, k=math.nan, batch=math.nan)]),
                    get_device("h100"), forecast=True).forecast
    assert plain.roof_time[0] == pytest.approx(flops / 794.5e12)
    assert any("tile and wave quantization over 132 SMs" in n for n in f.notes)


def test_small_tiles_lose_nothing_beyond_quantization():
    # m = 128, n = 4096 on 132 SMs: 64x64 gives 2 x 64 = 128 tiles in one wave, q = 128*4096/(132*4096) = 0.9697
    # (no operand-reuse factor: the guide gives none); 256x128 would give 32 tiles, q = 0.1212
    got, tile = quantization(np.array([128.0]), np.array([4096.0]), np.array([1.0]), 132)
    assert got[0] == pytest.approx(128 / 132) and TILES[int(tile[0])] == (64, 64)


def test_skinny_products_are_not_quantized():
    # decode: m = 1 (a matrix-vector product) runs in GEMV / split-K kernels, outside the guide's model: q = 1
    op = Op("gemv", kind="matmul", flops=2 * 4096 * 4096, bytes_read=2 * 4096 * 4097, precision="bf16", unit="matrix",
            m=1, n=4096, k=4096, batch=1)
    f = analyze(Workload.from_ops([op]), get_device("h100"), forecast=True).forecast
    assert f.roof_time[0] == pytest.approx(2 * 4096 * 4097 / 2.903e12)  # memory: 33.6 MB / 2.903 TB/s


def test_two_models_with_the_same_gemm_shapes_get_the_same_per_gemm_forecast():
    # Llama-2-7B and a 4-layer, 1000-word variant of it: every projection has the same (m, n, k) at the same prompt
    from roofline.llm.config import find_config

    small = {**find_config("llama-2-7b")[0], "num_hidden_layers": 4, "vocab_size": 1000, "_name": "small"}
    dev = get_device("h100")
    per_op = []
    for model in ("llama-2-7b", small):
        a = analyze(roofline.from_llm(model, phase="prefill", prompt=512, flash=True), dev, forecast=True)
        names = a.workload.column("name").tolist()
        per_op.append({n: float(a.forecast.time[i]) for i, n in enumerate(names) if ".layers." in n})
    assert per_op[0].keys() == per_op[1].keys()
    for name, t in per_op[0].items():
        assert per_op[1][name] == pytest.approx(t, rel=1e-12), name
    # and a hand-built op of the same shape, FLOPs and bytes gets the same forecast (a second route)
    a = analyze(roofline.from_llm("llama-2-7b", phase="prefill", prompt=512, flash=True), dev, forecast=True)
    i = a.workload.column("name").tolist().index("prefill.layers.attn.q_proj")
    o = a.workload.op(i)
    one = analyze(Workload.from_ops([replace(o, count=1)]), dev, forecast=True).forecast
    assert one.time[0] == pytest.approx(float(a.forecast.time[i]), rel=1e-12)


def test_analyze_from_llm_tp_uses_the_cited_calibration_with_no_other_argument():
    a = analyze(roofline.from_llm("llama-2-7b", phase="prefill", prompt=2048, tp=2, flash=True), get_device("h100"),
                forecast=True)
    f = a.forecast
    assert f.calibration is not None and f.calibration.quantization.sms == 132
    attn = a.workload.column("kind") == "attention"
    # the FA3 paper's Figure 5(d) cuDNN bar at 2k keys, head dim 128 (causal): 484 TFLOP/s of the 989.4 peak, as a
    # fraction of the achievable roof: (484 / 989.4 = 0.4892) x 989.4 / 794.5 = 0.6092
    assert np.allclose(f.efficiency[attn], 0.4892 * 989.4 / 794.5)
    assert any("efficiency curve of attention (compute): cited: fa3-paper (https://arxiv.org/abs/2407.08608)" in n
               for n in f.notes)
    assert f.total_time >= a.forecast.parts()["roof"]  # never below the bound


def test_every_catalog_device_gets_a_numeric_forecast_and_says_which_kind():
    w = Workload.from_ops([_gemm(m=128, n=4096, k=4096, batch=1), Op("e", kind="elementwise", flops=1e6,
                                                                      bytes_read=4e6, bytes_written=4e6)])
    cited = set(devices_with_cited_calibration())
    assert {"NVIDIA A100 SXM4 80GB", H100, "NVIDIA H200 SXM 141GB"} <= cited
    for d in devices():
        f = analyze(w, d, forecast=True).forecast
        assert np.isfinite(f.total_time) and f.total_time > 0, d.name
        if d.name not in cited:
            assert any("first principles only" in n for n in f.notes), d.name


def test_user_calibration_replaces_the_cited_curve_of_one_kind():
    dev = get_device("h100")
    # the user's fitted attention curve: e = 0.4 / (1 + 1e3 / size) ~ 0.4 for a GFLOP-sized op
    user = Calibration(H100, "", "cuda-launch", "2026-12-01", "my runs", 0.0,
                       (EfficiencyCurve("attention", "compute", 0.4, 1e3, 1.0, (1e6, 1e13)),))
    w = roofline.from_llm("llama-2-7b", phase="prefill", prompt=2048, flash=True)
    a = analyze(w, replace(dev, calibration=user), forecast=True)
    f = a.forecast
    attn = np.flatnonzero(a.workload.column("kind") == "attention")
    flops = a.workload.columns["flops"][attn]
    assert np.allclose(f.efficiency[attn], 0.4 / (1 + 1e3 / flops))
    assert any(n.startswith("efficiency curve of attention (compute): fitted to measured runs") for n in f.notes)
    assert f.calibration.quantization.sms == 132  # the cited quantization term stays
    # the cited fp8 attention curve, of another precision, stays for fp8 ops: the user's curve is for every precision
    # of its kind (a fitted curve of a kind replaces the cited ones of that kind)
    assert f.calibration.curve("attention", "compute", "fp8") is user.curves[0]


def test_version_1_calibration_migrates(tmp_path):
    v1 = {"schema": "roofline.calibration/1", "device": "seed", "machine": "", "framework": "torch-eager",
          "date": "2026-11-30", "suite": "s", "overhead": 2e-6,
          "curves": [{"kind": "*", "term": "memory", "e_max": 0.5, "half": 1e3, "slope": 1.0,
                      "size_range": [1e3, 1e9], "points": 3, "error": 0.1}], "points": [], "failed": []}
    c = load_calibration(v1, "cal.json")
    assert c.curves[0].e_max == 0.5 and c.tables == () and c.quantization is None
    d = c.to_dict()
    assert d["schema"] == "roofline.calibration/2" and Calibration.from_dict(d, "x") == c


def _cited(points, **over):
    base = cited_calibration(H100).to_dict()
    base["tables"] = [{"kind": "matmul", "term": "compute", "axis": "flops", "points": points, **over}]
    return base


@pytest.mark.parametrize("points, words", [
    ([{"x": 1e9, "efficiency": math.nan, "source": "fa3-paper"}], "tables[0].points[0].efficiency must be a finite"),
    ([{"x": math.inf, "efficiency": 0.5, "source": "fa3-paper"}], "tables[0].points[0].x must be a finite"),
    ([{"x": 1e9, "efficiency": 0.6, "source": "fa3-paper"}, {"x": 1e10, "efficiency": 0.5, "source": "fa3-paper"}],
     "tables[0].points[1].efficiency: 0.5 falls below the previous point's 0.6"),
    ([{"x": 1e9, "efficiency": 0.5, "source": "fa3-paper"}, {"x": 1e9, "efficiency": 0.6, "source": "fa3-paper"}],
     "tables[0].points[1].x: 1e+09 is not above"),
    ([{"x": 1e9, "efficiency": 0.5, "source": "nowhere"}], "tables[0].points[0].source: 'nowhere' is not a key"),
])
def test_bad_cited_curves_are_one_line(points, words):
    with pytest.raises(RooflineError) as e:
        Calibration.from_dict(_cited(points), "cal.json")
    assert words in str(e.value) and "\n" not in str(e.value)


def test_bad_calibration_file_cli_is_one_line_exit_2(tmp_path, capsys):
    from roofline.cli import main

    p = tmp_path / "cal.json"
    p.write_text(json.dumps(_cited([{"x": 1e9, "efficiency": 0.6, "source": "fa3-paper"},
                                    {"x": 1e10, "efficiency": 0.5, "source": "fa3-paper"}])))
    w = tmp_path / "w.json"
    Workload.from_ops([_gemm(m=128, n=4096, k=4096, batch=1)]).save(w)
    out = tmp_path / "a.json"
    code = main(["analyze", str(w), "--device", "h100", "--forecast", "--calibration", str(p), "--json", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("roofline: error:") and "falls below" in err and "\n" not in err
    assert not out.exists()


def test_cited_interconnect_curve_on_collectives_by_hand():
    # H100: NCCL ring bus bandwidth 370 of the 450 GB/s line rate (nccl-tests #212, maintainer): efficiency 0.822
    a = analyze(roofline.from_llm("llama-2-7b", phase="decode", context=100, tp=8), get_device("h100"), forecast=True)
    f = a.forecast
    coll = a.workload.column("kind") == "collective"
    assert coll.any() and np.allclose(f.efficiency[coll], 0.822) and (f.term[coll] == "interconnect").all()
    # the op's work is its link time / 0.822 (or the bound, whichever is larger)
    assert np.allclose(f.work[coll], np.maximum(f.roof_time[coll] / 0.822, f.bound[coll]))
