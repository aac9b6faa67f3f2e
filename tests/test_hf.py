"""Hugging Face frontend: tiny local configs of seven families, prefill and decode, checked against parameter counts."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from roofline.cli import main  # noqa: E402
from roofline.core.errors import MissingExtraError, RooflineError  # noqa: E402
from roofline.frontends.hf import build_config, from_hf_config, load_config_dict  # noqa: E402

CONFIGS = Path(__file__).parent / "configs"
FAMILIES = ["llama", "mistral", "qwen2", "gpt2", "gemma", "phi3", "mixtral"]
FIRST_Q = {"gpt2": "transformer.h.0.attn.c_attn", "phi3": "model.layers.0.self_attn.qkv_proj"}
BATCH, SEQ, KV = 2, 16, 32


def expected_matmul_flops(family: str, tokens: int) -> float:
    """2 x tokens x (weights of every Linear / Conv1D) + 2 x tokens x top_k x (one expert's weights)."""
    from transformers import AutoModelForCausalLM

    cfg = build_config(load_config_dict(CONFIGS / f"{family}_tiny.json")[0])
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    dense = sum(m.weight.numel() for m in model.modules() if type(m).__name__ in ("Linear", "Conv1D"))
    total = 2.0 * tokens * dense
    if family == "mixtral":
        h, i = cfg.hidden_size, cfg.intermediate_size
        total += 2.0 * tokens * cfg.num_experts_per_tok * 3 * h * i * cfg.num_hidden_layers  # gate, up, down
        total += 2.0 * tokens * h * cfg.num_local_experts * cfg.num_hidden_layers  # the router (not an nn.Linear)
    return total


def attention_dims(family: str) -> tuple[int, int, int]:
    d = json.loads((CONFIGS / f"{family}_tiny.json").read_text())
    heads = d.get("num_attention_heads") or d["n_head"]
    layers = d.get("num_hidden_layers") or d["n_layer"]
    head_dim = d.get("head_dim") or (d.get("hidden_size") or d["n_embd"]) // heads
    return layers, heads, head_dim


def total_of(w, kind: str) -> float:  # type: ignore[no-untyped-def]
    k = w.column("kind")
    return float(w.columns["flops"][k == kind].sum())


@pytest.mark.parametrize("family", FAMILIES)
def test_prefill(family):
    w = from_hf_config(CONFIGS / f"{family}_tiny.json", phase="prefill", batch=BATCH, seq_len=SEQ, dtype="fp32")
    tokens = BATCH * SEQ
    assert total_of(w, "matmul") == expected_matmul_flops(family, tokens)
    layers, heads, hd = attention_dims(family)
    # causal: s(s+1)/2 = 136 (query, key) pairs per head, QK^T and PV each 2 * hd per pair
    assert total_of(w, "attention") == layers * 2 * BATCH * heads * (SEQ * (SEQ + 1) // 2) * 2 * hd
    assert FIRST_Q.get(family, "model.layers.0.self_attn.q_proj") in set(w.column("group"))
    assert w.info["phase"] == "prefill" and w.info["tokens"] == tokens
    assert not [u for u in w.unsupported if u.name != "aten.sort"]  # MoE routing sorts tokens: no formula


@pytest.mark.parametrize("family", FAMILIES)
def test_decode(family):
    w = from_hf_config(CONFIGS / f"{family}_tiny.json", phase="decode", batch=BATCH, kv_len=KV, dtype="bf16")
    assert total_of(w, "matmul") == expected_matmul_flops(family, BATCH)
    layers, heads, hd = attention_dims(family)
    # one query against the KV + 1 cached keys
    assert total_of(w, "attention") == layers * 2 * BATCH * heads * (KV + 1) * 2 * hd
    assert set(w.column("precision")) >= {"bf16"}
    # the static cache is read by attention: K and V of (KV + 1) tokens per layer are in its bytes
    k = w.column("kind")
    kv_heads = json.loads((CONFIGS / f"{family}_tiny.json").read_text()).get("num_key_value_heads", heads)
    cache = 2 * BATCH * kv_heads * (KV + 1) * hd * 2  # K and V, bf16
    assert w.bytes[k == "attention"].sum() >= layers * cache


def test_prefill_after_cached_prefix_attends_to_the_prefix():
    """Before the fix the mask code's `offset == 0` on a meta tensor was assumed True: the prefix was dropped
    (K/V cut to the SEQ new tokens, 136 causal pairs) and the numbers equalled a fresh prefill."""
    w = from_hf_config(CONFIGS / "llama_tiny.json", phase="prefill", batch=BATCH, seq_len=SEQ, kv_len=KV, dtype="fp32")
    layers, heads, hd = attention_dims("llama")  # 2 layers, 4 heads (2 KV heads), head_dim 16
    # explicit mask -> every pair of SEQ queries x (KV + SEQ) = 48 static-cache keys: 2 x 2 x 4 x 768 x 32 per layer
    assert total_of(w, "attention") == layers * 2 * BATCH * heads * (SEQ * (KV + SEQ)) * 2 * hd
    k = w.column("kind")
    cache = 2 * BATCH * 2 * (KV + SEQ) * hd * 4  # K and V of 48 tokens, 2 KV heads, fp32: 24576 bytes per layer
    assert w.bytes[k == "attention"].sum() >= layers * cache
    assert not any("assumed values" in s for s in w.warnings)
    assert any("cached prefix of 32 tokens" in a for a in w.assumptions)


def test_mixtral_reads_every_expert_once():
    w = from_hf_config(CONFIGS / "mixtral_tiny.json", phase="prefill", batch=1, seq_len=8, dtype="bf16")
    d = json.loads((CONFIGS / "mixtral_tiny.json").read_text())
    experts = d["num_local_experts"] * 3 * d["hidden_size"] * d["intermediate_size"] * 2  # bf16
    groups = w.column("group")
    moe = w.columns["weight_bytes"][[g.startswith("model.layers.0.mlp.experts") for g in groups]].sum()
    assert moe == experts


def test_item_in_transformers_mask_code():
    """An attention_mask makes transformers check `mask.all()` on a meta tensor: assumed True, recorded."""
    from transformers import AutoModelForCausalLM

    from roofline.frontends.torch import from_torch

    cfg = build_config(load_config_dict(CONFIGS / "llama_tiny.json")[0])
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    ids = torch.zeros(BATCH, SEQ, dtype=torch.long, device="meta")
    w = from_torch(model, kwargs={"input_ids": ids, "attention_mask": torch.ones_like(ids)})
    assert any("assumed values" in s for s in w.warnings)
    layers, heads, hd = attention_dims("llama")
    # 'no padding' was assumed, so transformers used is_causal: lower triangle only
    assert total_of(w, "attention") == layers * 2 * BATCH * heads * (SEQ * (SEQ + 1) // 2) * 2 * hd


def test_dict_config_and_group_names():
    d = json.loads((CONFIGS / "llama_tiny.json").read_text())
    w = from_hf_config(d, phase="decode", batch=1, kv_len=4)
    types = dict(zip(w.column("group"), w.column("module_type"), strict=False))
    assert types["model.layers.1.mlp.down_proj"] == "Linear"
    assert types["model.layers.1.self_attn"] == "LlamaAttention"


def test_llama2_7b_traces_in_under_2gb(tmp_path):
    script = textwrap.dedent(f"""
        import resource, json
        from roofline.frontends.hf import from_hf_config
        w = from_hf_config({str(CONFIGS / 'llama2_7b.json')!r}, phase="prefill", batch=1, seq_len=256)
        print(json.dumps({{"rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                          "params": w.info["parameters"], "flops": w.total_flops}}))
    """)
    src = str(Path(__file__).parent.parent / "src")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["params"] == 6_738_415_616  # Llama-2-7B
    assert r["rss"] < 2 * 2**30  # peak RSS < 2 GiB: no weights allocated (13.5 GB in fp16)
    assert r["flops"] > 2 * 6.5e9 * 256  # at least 2 x (non-embedding params) x tokens


# -- bad input -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"hidden_size": 64}', "missing field 'model_type'"),
    ('{"model_type": "llama", "num_hidden_layers": 2, "vocab_size": 10}', "missing field 'hidden_size'"),
    ('{"model_type": "llama", "hidden_size": 64, "vocab_size": 10}', "missing field 'num_hidden_layers'"),
    ('{"model_type": "llama", "hidden_size": "big", "num_hidden_layers": 2, "vocab_size": 10}',
     "'hidden_size' must be a positive integer"),
    ('{"model_type": "no_such_arch", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 10}',
     "model_type 'no_such_arch'"),
])
def test_bad_config(tmp_path, text, message):
    p = tmp_path / "config.json"
    p.write_text(text)
    with pytest.raises(RooflineError, match=message) as e:
        from_hf_config(p)
    assert str(p) in str(e.value) and "\n" not in str(e.value)


def test_bad_arguments():
    cfg = CONFIGS / "llama_tiny.json"
    with pytest.raises(RooflineError, match="phase must be"):
        from_hf_config(cfg, phase="train")
    with pytest.raises(RooflineError, match="unknown dtype 'fp7'"):
        from_hf_config(cfg, dtype="fp7")
    with pytest.raises(RooflineError, match="kv_len must be an integer >= 1"):
        from_hf_config(cfg, phase="decode", kv_len=0)


def test_cli_hf_bad_config_is_one_line(tmp_path, capsys):
    p = tmp_path / "config.json"
    p.write_text("{oops")
    assert main(["hf", str(p), "--device", "h100"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("roofline: error:") and "not valid JSON" in err and err.count("\n") == 1


def test_transformers_missing(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers -> ImportError
    with pytest.raises(MissingExtraError, match=r"roofline\[hf\]"):
        from_hf_config(CONFIGS / "llama_tiny.json")
    assert main(["hf", str(CONFIGS / "llama_tiny.json"), "--device", "h100"]) == 2
    err = capsys.readouterr().err
    assert "transformers is not installed" in err and "roofline[hf]" in err and err.count("\n") == 1


def test_cli_hf_decode(tmp_path, capsys):
    out = tmp_path / "a.json"
    rc = main(["hf", str(CONFIGS / "qwen2_tiny.json"), "--phase", "decode", "--batch", "8", "--kv-len", "64",
               "--device", "h100", "--depth", "3", "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 0 and "by module (depth 3)" in text and "model.layers.0" in text
    w = json.loads(out.read_text())["workload"]
    assert w["info"]["phase"] == "decode" and w["info"]["kv_len"] == 64 and w["info"]["tokens"] == 8


# -- issue 13: configs validated (and sizes bounded) before transformers builds anything -------------------
SMALL_LLAMA = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
               "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128}


@pytest.mark.parametrize("change, message", [
    ({"num_hidden_layers": 10**9}, "num_hidden_layers 1,000,000,000 exceeds the limit of 10,000 .*ROOFLINE_MAX_LAYERS"),
    ({"num_attention_heads": 0}, "num_attention_heads must be a positive integer, got 0"),
    ({"num_attention_heads": 5}, "hidden_size 64 is not divisible by num_attention_heads 5"),
    ({"num_key_value_heads": 3}, "num_key_value_heads 3 does not divide num_attention_heads 4"),
    ({"intermediate_size": 128.0}, "intermediate_size must be a non-negative integer, got 128.0"),
    ({"rope_scaling": {"rope_type": "bogus", "factor": 2.0}}, "rope_type 'bogus' is not one of"),
])
def test_config_is_validated_before_building(change, message):
    with pytest.raises(RooflineError, match=message) as e:
        load_config_dict({**SMALL_LLAMA, **change})
    assert "\n" not in str(e.value)


def test_token_counts_are_bounded():
    with pytest.raises(RooflineError, match="batch: dimension .* exceeds .*ROOFLINE_MAX_DIM"):
        from_hf_config(SMALL_LLAMA, batch=10**20)
