"""MoE as ops (issue 50, item 2) and the MTP modules (item 1): the router, permute, grouped expert GEMMs sized by
the tokens each expert receives (``--moe-load``), shared experts, unpermute+combine; the grouped GEMM's efficiency
from DeepGEMM's cited tables; ``--mtp``.  Expected values are derived by hand in the comments or from a second,
independent route (a Monte-Carlo simulation, the parameter counts, the cited JSON rows read here)."""

from __future__ import annotations

import dataclasses
import json
import math
from importlib import resources

import numpy as np
import pytest

from roofline import from_llm
from roofline.catalog import get_device
from roofline.cli import main
from roofline.core.errors import RooflineError
from roofline.engine.analysis import analyze
from roofline.engine.grouped_gemm import GROUPED_GEMM
from roofline.llm.basis import basis, experts_touched
from roofline.llm.config import load_arch
from roofline.llm.model import gemm_dims
from roofline.llm.moe_load import expected_max_load, tokens_per_expert
from roofline.llm.sizes import param_counts
from roofline.llm.table import EXP, GEMM, ONE, TOK, build_table
from roofline.llm.training import table_masks

H100 = "NVIDIA H100 SXM5 80GB"


def _cited(name: str) -> dict:
    return json.loads(resources.files("roofline.catalog.kernels").joinpath(f"{name}.json").read_text())


def _monte_carlo_max(n: int, k: int, E: int, trials: int, seed: int) -> float:
    """Mean over ``trials`` of the most loaded expert's tokens, each of ``n`` tokens routed to ``k`` distinct
    experts of ``E`` uniformly at random (the top-k of i.i.d. uniform scores)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(trials):
        chosen = np.argpartition(rng.random((n, E)), k - 1, axis=1)[:, :k]
        out.append(np.bincount(chosen.ravel(), minlength=E).max())
    return float(np.mean(out))


@pytest.mark.parametrize(("n", "k", "E"), [(1, 2, 8), (4, 8, 256), (64, 2, 8), (512, 8, 256), (4096, 8, 256),
                                           (2048, 2, 8)])
def test_expected_max_load_matches_a_monte_carlo_simulation(n: int, k: int, E: int) -> None:
    simulated = _monte_carlo_max(n, k, E, trials=300, seed=50)
    # the independence of the loads is the formula's one approximation: within 3% (+0.1 token for tiny loads)
    assert expected_max_load(n, k, E) == pytest.approx(simulated, rel=0.03, abs=0.1)


def test_expected_max_load_is_at_least_the_balanced_load_and_at_most_the_tokens() -> None:
    n = np.array([0, 1, 3, 100, 10_000])
    got = expected_max_load(n, 8, 256)
    assert got[0] == 0 and got[1] == 1  # one token: one row on each of its 8 experts
    assert np.all(got[1:] >= n[1:] * 8 / 256) and np.all(got <= n)
    # balanced: n k / touched; 10,000 tokens touch all 256 experts: 10,000 x 8 / 256 = 312.5
    assert float(tokens_per_expert(10_000, 8, 256, 256.0)) == 312.5


def _moe_ops(table, tag: str = "layers.moe.") -> list[str]:
    return [n.split(".", 1)[1] for n in table.names if tag in n and ".mtp." not in n]


def test_moe_layer_runs_as_its_kernels_in_order() -> None:
    t = build_table(load_arch("deepseek-v3"), "prefill")
    assert _moe_ops(t) == [f"layers.moe.{x}" for x in (
        "router", "topk", "permute", "experts.gate_proj", "experts.up_proj", "experts.act", "experts.mul",
        "experts.down_proj", "shared.gate_proj", "shared.up_proj", "shared.act", "shared.mul", "shared.down_proj",
        "combine", "shared_add")]
    grouped = [n for n, m in zip(t.names, t.module_types, strict=True) if m == GROUPED_GEMM]
    assert grouped == [f"prefill.layers.moe.experts.{p}" for p in ("gate_proj", "up_proj", "down_proj")]


def test_permute_and_combine_bytes() -> None:
    a = load_arch("mixtral-8x7b")  # d 4096, top-2
    w = from_llm(a, phase="prefill", batch=1, prompt=100)
    names = list(w.column("name"))
    perm = w.op(names.index("prefill.layers.moe.permute"))
    # 100 tokens x 2 copies x 4096 x 2 B read and written, + 100 x 2 int64 indices read
    assert perm.bytes_written == 100 * 2 * 4096 * 2
    assert perm.bytes_read == 100 * 2 * 4096 * 2 + 100 * 2 * 8
    comb = w.op(names.index("prefill.layers.moe.combine"))
    # reads the 2 outputs (2 x 4096) and 2 weights per token (2 B each), 2 indices; writes 4096 per token;
    # FLOPs: 2 fused multiply-adds (2 FLOPs each) per output element
    assert comb.bytes_read == 100 * (2 * 4096 + 2) * 2 + 100 * 2 * 8
    assert comb.bytes_written == 100 * 4096 * 2
    assert comb.flops == 100 * 4096 * 2 * 2


@pytest.mark.parametrize("model", ["mixtral-8x7b", "qwen3-30b-a3b", "llama-4-maverick"])
def test_gemm_flops_per_token_are_twice_the_active_parameters(model: str) -> None:
    """Second route: every weight of the active path is read by one GEMM once per token (lm_head on every token),
    so GEMM FLOPs per token = 2 x (active parameters - the input embedding - norm scales - biases)."""
    a = load_arch(model)
    t = build_table(a, "prefill", all_logits=True)
    gemm = t.roles == GEMM
    per_token = float((t.coef["flops"][gemm, TOK] * t.counts[gemm]).sum())
    _, active = param_counts(a)
    # the weights no GEMM reads per token: norm scales (ONE coefficients of non-GEMM ops) and the input embedding
    # table (V x d, counted whole in the active parameters, gathered row by row)
    other = float(((t.coef["wq"] + t.coef["wu"])[~gemm, ONE] * t.counts[~gemm]).sum())
    embedding = 0 if a.tie_embeddings else a.vocab * a.hidden
    assert not a.mlp_bias and not a.qkv_bias and not a.expert_bias  # biases: parameters without GEMM FLOPs
    assert per_token == pytest.approx(2 * (active - other - embedding), rel=1e-12)


def test_expected_max_load_raises_the_slowest_group_not_the_flops() -> None:
    a = load_arch("deepseek-v3")
    bal = from_llm(a, phase="prefill", batch=1, prompt=4096)
    top = from_llm(a, phase="prefill", batch=1, prompt=4096, moe_load="expected-max")
    assert np.array_equal(bal.column("flops"), top.column("flops"))
    names = list(bal.column("name"))
    i = names.index("prefill.layers.moe.experts.gate_proj")
    # 4,096 tokens x 8 / 256 experts (all touched: 256 (1 - (1 - 1/32)^4096) = 256.0) = 128 rows per expert
    assert bal.op(i).m == 128 and bal.op(i).batch == 256
    assert top.op(i).m == math.ceil(float(expected_max_load(4096, 8, 256)))  # 161: the expected most loaded
    assert top.op(i).m > 150


def test_grouped_dims_follow_the_experts_touched() -> None:
    a = load_arch("mixtral-8x7b")
    t = build_table(a, "decode")
    B = basis(a, 1, 1, 100)
    d = gemm_dims(t, B[0])
    i = t.names.index("decode.layers.moe.experts.down_proj")
    # one token: its 2 experts, one row each; down_proj: k = 14336, n = 4096
    assert (d["m"][i], d["batch"][i], d["k"][i], d["n"][i]) == (1.0, 2.0, 14336.0, 4096.0)
    assert B[0, EXP] == experts_touched(8, 2, 1) == 2


def _rule(m: float, n: float, k: float) -> float:
    """The cited TFLOPS at (m, n, k), read from the JSON rows by the documented rule: nearest (N, K) in log
    distance, then linear in log M among that shape's grouped rows (normal rows below their smallest M)."""
    g, nrm = _cited("deepgemm-grouped"), _cited("deepgemm-normal")
    shapes = {(r[3], r[4]) for r in g["rows"]}
    s = min(shapes, key=lambda x: math.hypot(math.log(n / x[0]), math.log(k / x[1])))
    pts: dict[float, list[float]] = {}
    for r in g["rows"]:
        if (r[3], r[4]) == s:
            pts.setdefault(r[2], []).append(r[5])
    lo = min(pts)
    for r in nrm["rows"]:
        if (r[1], r[2]) == s and r[0] < lo:
            pts.setdefault(r[0], []).append(r[3])
    ms = sorted(pts)
    return float(np.interp(math.log(m), np.log(ms), [np.mean(pts[x]) for x in ms]))


def _grouped_forecast(model, device: str, batch: int, **kw):
    w = from_llm(model, phase="prefill", batch=batch, prompt=4096, wbits="fp8", abits="fp8", flash=True, **kw)
    a = analyze(w, get_device(device), forecast=True)
    sel = np.asarray(w.column("module_type")) == GROUPED_GEMM
    return w, a.forecast, sel


def test_grouped_gemm_efficiency_comes_from_the_cited_rows_only() -> None:
    """Fails if any efficiency used for a grouped expert GEMM is not the cited data's: the forecast's compute
    throughput of every grouped op is the rule's value from the JSON rows (x the load balance)."""
    for batch, load in ((8, "balanced"), (3, "balanced"), (8, "expected-max")):
        w, f, sel = _grouped_forecast("deepseek-v3", "h100", batch, moe_load=load)
        assert sel.sum() == 3
        c = w.columns
        for i in np.flatnonzero(sel):
            if f.term[i] != "compute":
                continue
            mean = c["flops"][i] / (2 * c["n"][i] * c["k"][i] * c["batch"][i])
            tflops = c["flops"][i] / (f.work[i]) / 1e12 * (c["m"][i] / mean)
            assert tflops == pytest.approx(_rule(c["m"][i], c["n"][i], c["k"][i]), rel=1e-9)
    # batch 8: 32,768 tokens x 8 / 256 = 1,024 rows per expert; gate (n 2048, k 7168) is nearest the (4096, 7168)
    # shape, whose masked row at M 1,024 reads 1,233 TFLOPS; down (7168, 2048): 925 TFLOPS
    w, f, sel = _grouped_forecast("deepseek-v3", "h100", 8)
    names = list(w.column("name"))
    gate, down = names.index("prefill.layers.moe.experts.gate_proj"), names.index("prefill.layers.moe.experts.down_proj")
    assert w.op(gate).flops / f.work[gate] == pytest.approx(1233e12)
    assert w.op(down).flops / f.work[down] == pytest.approx(925e12)
    assert any("DeepGEMM" in n for n in f.notes)


def test_a_device_without_a_grouped_table_says_so() -> None:
    _, f, _ = _grouped_forecast("deepseek-v3", "a100", 8)
    assert any("no cited grouped-GEMM kernel table for" in n for n in f.notes)
    _, f, _ = _grouped_forecast("deepseek-v3", "h100", 8, **{})
    assert not any("no cited grouped-GEMM kernel table" in n for n in f.notes)


def test_identical_expert_shapes_get_identical_per_op_forecasts() -> None:
    a = load_arch("deepseek-v3")
    # another model: other attention, other depth and vocabulary, the same experts (256 x top-8, 7168 -> 2048)
    b = dataclasses.replace(a, name="other-moe", layers=20, dense_layers=1, vocab=32000, heads=64, q_lora_rank=768)
    wa, fa, sa = _grouped_forecast(a, "h100", 8)
    wb, fb, sb = _grouped_forecast(b, "h100", 8)
    na, nb = list(wa.column("name")), list(wb.column("name"))
    for name in ("router", "topk", "permute", "experts.gate_proj", "experts.up_proj", "experts.act",
                 "experts.mul", "experts.down_proj", "combine"):
        i, j = na.index(f"prefill.layers.moe.{name}"), nb.index(f"prefill.layers.moe.{name}")
        assert fa.time[i] == fb.time[j], name
        assert fa.efficiency[i] == fb.efficiency[j], name


def test_cited_rows_carry_their_source() -> None:
    for name in ("deepgemm-grouped", "deepgemm-normal"):
        d = _cited(name)
        assert d["source"]["commit"] == "327ec92f6977e7fee022cb76a8f273b75483c3d8"
        assert d["device"] == H100 and "H800" in d["notes"]
    # the first contiguous row of the README: 4 groups x 8,192 rows, N 4,096, K 7,168: 1,346 TFLOPS
    assert _cited("deepgemm-grouped")["rows"][0] == ["contiguous", 4, 8192, 4096, 7168, 1346, 434, 1.3]


# -- MTP -------------------------------------------------------------------------------------------------------
def test_mtp_adds_one_block_and_its_projection() -> None:
    a = load_arch("deepseek-v3")
    t0, t1 = build_table(a, "prefill", all_logits=True), build_table(a, "prefill", all_logits=True, mtp=1)
    assert not any(".mtp." in n for n in t0.names)
    mtp = np.array([".mtp." in n for n in t1.names])
    assert "prefill.mtp.eh_proj" in t1.names and "prefill.mtp.layers.moe.experts.gate_proj" in t1.names
    w = t1.coef["wq"] + t1.coef["wu"]
    head = np.array([n in ("prefill.mtp.head.lm_head", "prefill.mtp.embed.tokens") for n in t1.names])
    unique = float((w[mtp & ~head, ONE] + w[mtp & ~head, EXP] * a.experts).sum())
    # DeepSeek-V3 README_WEIGHTS.md: the MTP module has 11.5B unique parameters (excluding the shared
    # 0.9B embedding and 0.9B output head)
    assert unique == pytest.approx(11.5e9, rel=0.02)
    # the MTP block is the model's last (MoE) layer: its FLOPs per token equal one MoE layer's
    layer = np.array([n.startswith("prefill.layers.") for n in t1.names])
    blk = np.array([n.startswith("prefill.mtp.layers.") for n in t1.names])
    moe_layer_flops = float((t0.coef["flops"][:, TOK] * np.where(
        [".moe." in n for n in t0.names], 1.0, 0.0)).sum())
    assert float((t1.coef["flops"][blk & np.array([".moe." in n for n in t1.names]), TOK]).sum()) == \
        pytest.approx(moe_layer_flops)
    assert layer.any()
    # the parameter count stays the 671B without MTP
    assert param_counts(a) == param_counts(dataclasses.replace(a))
    # in training, the MTP ops are the last stage's
    layer_m, first_m, last_m, _ = table_masks(t1)
    assert np.all(last_m[mtp & (t1.roles != 3)]) and not np.any(layer_m[mtp]) and not np.any(first_m[mtp])


def test_mtp_counts_in_training_when_enabled() -> None:
    a = load_arch("deepseek-v3")
    base = from_llm(a, phase="train", batch=1, prompt=1024)
    more = from_llm(a, phase="train", batch=1, prompt=1024, mtp=1)
    assert more.total_flops > base.total_flops
    assert any(".mtp." in n for n in more.column("name")) and not any(".mtp." in n for n in base.column("name"))


# -- flags -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["llm", "llama-2-7b", "--device", "h100", "--moe-load", "expected-max"],
    ["serve", "llama-2-7b", "--device", "h100", "--moe-load", "expected-max"],
    ["compare", "llama-2-7b", "--devices", "h100", "--moe-load", "expected-max"],
    ["plan", "llama-2-7b", "--system", "dgx-h100", "--train", "--moe-load", "expected-max"],
    ["llm", "mixtral-8x7b", "--device", "h100", "--mtp", "-1"],
])
def test_meaningless_flags_are_one_line_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("roofline: error:")


def test_python_api_refuses_moe_load_on_a_dense_model() -> None:
    with pytest.raises(RooflineError, match="dense model"):
        from_llm("llama-2-7b", moe_load="expected-max")
    with pytest.raises(RooflineError, match="moe_load"):
        from_llm("mixtral-8x7b", moe_load="skewed")


def test_llm_command_takes_the_flags(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    csv = tmp_path / "ops.csv"
    assert main(["llm", "mixtral-8x7b", "--device", "h100", "--phase", "prefill", "--prompt", "2048",
                 "--moe-load", "expected-max", "--mtp", "1", "--csv", str(csv)]) == 0
    text = csv.read_text()
    assert "prefill.layers.moe.permute" in text and "prefill.mtp.eh_proj" in text


def test_mtp_weights_are_resident_once() -> None:
    from roofline.llm.sizes import weight_bytes_resident
    from roofline.llm.spec import make_spec

    base = weight_bytes_resident(make_spec("deepseek-v3", wbits="fp8", abits="fp8"))
    more = weight_bytes_resident(make_spec("deepseek-v3", wbits="fp8", abits="fp8", mtp=1))
    # 11.5B unique MTP parameters (README_WEIGHTS.md), about 1 byte each in fp8 (router and norms 16-bit: a few
    # MB more); the shared embedding and head (0.9B each) not again: far below 11.5 + 1.8 GB
    assert 11.3e9 < more - base < 11.8e9
