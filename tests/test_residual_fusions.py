"""A residual stream at its own precision (``rbits``) and the kernel fusions an engine runs (``fusions``), by hand.

Llama-2-70B on one of 2 devices: hidden d = 8192, 64 / 2 = 32 query heads and 8 / 2 = 4 KV heads of 128,
MLP width 28672 / 2 = 14336, 80 layers; a prefill of one prompt of n = 100 tokens.  FP8 weights, GEMM inputs and
KV cache (1 B), the residual stream in fp16 (2 B): TensorRT-LLM's FP8 recipe on a float16 model.
"""

import json

import pytest
from serving_calls import serve

import roofline
from roofline.core.errors import RooflineError
from roofline.engine.analysis import analyze
from roofline.llm.model import build_workload
from roofline.llm.spec import LLMSpec, make_spec, read_spec
from roofline.llm.table import build_table, parse_fusions

H100 = roofline.device("h100")
FP8 = dict(wbits="fp8", abits="fp8", kvbits="fp8")
ALL = ("qkv", "gate-up", "reduce-norm")


def ops(rbits=None, fusions=(), tp=2, model="llama-2-70b"):
    spec = make_spec(model, phase="prefill", batch=1, prompt=100, tp=tp, flash=True, rbits=rbits, fusions=fusions,
                     **FP8)
    w = build_workload(spec)
    names = [n.removeprefix("prefill.") for n in w.column("name")]
    cols = ("bytes_read", "bytes_written", "flops", "count")
    out = {n: {c: float(w.columns[c][i]) for c in cols} | {"precision": str(w.column("precision")[i])}
           for i, n in enumerate(names)}
    return out, w


def test_residual_stream_bytes_by_hand():
    o, w = ops(rbits="fp16")
    # residual add: reads two d-vectors, writes one, per token, at 2 B: 2 x 8192 x 100 x 2 = 3,276,800 read
    assert o["layers.attn.residual"]["bytes_read"] == 3_276_800
    assert o["layers.attn.residual"]["bytes_written"] == 1_638_400
    # the norm reads the 16-bit stream (8192 x 100 x 2 = 1,638,400 B) and its 16-bit scale (8192 x 2 = 16,384 B),
    # and writes the FP8 input of the QKV GEMMs: 8192 x 100 x 1 = 819,200 B
    assert o["layers.attn.norm"]["bytes_read"] == 1_638_400 + 16_384
    assert o["layers.attn.norm"]["bytes_written"] == 819_200
    # q_proj: FP8 weights 8192 x 4096 x 1 = 33,554,432 B and FP8 input 819,200 B; writes 100 x 4096 x 2 = 819,200 B
    assert o["layers.attn.q_proj"]["bytes_read"] == 33_554_432 + 819_200
    assert o["layers.attn.q_proj"]["bytes_written"] == 819_200
    # the tp-2 all-reduce: a ring moves 2 (t - 1) / t = 1 x the message, 100 x 8192 x 2 B = 1,638,400 B
    assert o["layers.attn.all_reduce"]["bytes_read"] == 1_638_400
    # attention: the 16-bit query 32 x 128 x 100 x 2 = 819,200 B and the FP8 cache, 100 keys x 4 KV heads x
    # (128 + 128) x 1 = 102,400 B; it writes o_proj's FP8 input, 32 x 128 x 100 x 1 = 409,600 B; and it
    # computes at the wider of its query and the cache: fp16
    assert o["layers.attn.sdpa"]["bytes_read"] == 819_200 + 102_400
    assert o["layers.attn.sdpa"]["bytes_written"] == 409_600
    assert o["layers.attn.sdpa"]["precision"] == "fp16" and o["layers.attn.q_proj"]["precision"] == "fp8"
    # SiLU reads the 16-bit gate output and writes 16-bit; the product is down_proj's FP8 input:
    # 14336 x 100 x (2 x 2 read, 1 written)
    assert o["layers.mlp.mul"]["bytes_read"] == 5_734_400 and o["layers.mlp.mul"]["bytes_written"] == 1_433_600
    assert o["layers.mlp.act"]["bytes_written"] == 2_867_200
    assert "residual stream in fp16" in w.bytes_model


def test_without_rbits_every_activation_is_one_precision():
    o, _ = ops()
    assert o["layers.attn.residual"]["bytes_read"] == 1_638_400  # 2 x 8192 x 100 x 1 B: as before
    assert o["layers.attn.norm"]["bytes_written"] == 819_200
    assert o["layers.attn.q_proj"]["bytes_written"] == 409_600  # 100 x 4096 x 1 B
    assert o["layers.attn.sdpa"]["precision"] == "fp8"
    # rbits equal to abits is the same table, byte for byte
    same, _ = ops(rbits="fp8")
    assert same == o


def test_fusions_by_hand():
    o, w = ops(rbits="fp16", fusions=ALL)
    u, wu = ops(rbits="fp16")
    # one QKV GEMM of 4096 + 4 x (128 + 128) = 5120 outputs: 2 x 100 x 8192 x 5120 FLOPs, the three GEMMs' sum,
    # reading its FP8 input once: weights 8192 x 5120 = 41,943,040 B + 819,200 B
    qkv = o["layers.attn.qkv_proj"]
    assert qkv["flops"] == 2 * 100 * 8192 * 5120
    assert qkv["flops"] == sum(u[f"layers.attn.{p}_proj"]["flops"] for p in "qkv")
    assert qkv["bytes_read"] == 41_943_040 + 819_200
    assert qkv["bytes_written"] == 100 * 5120 * 2
    # gate+up as one GEMM of 2 x 14336 outputs, then one SwiGLU kernel: reads both 16-bit halves
    # (2 x 14336 x 100 x 2 = 5,734,400 B), writes down_proj's FP8 input (1,433,600 B); SiLU 5 + mul 1 FLOPs each
    assert o["layers.mlp.gate_up_proj"]["flops"] == 2 * 100 * 8192 * 2 * 14336
    assert o["layers.mlp.act_mul"]["bytes_read"] == 5_734_400
    assert o["layers.mlp.act_mul"]["bytes_written"] == 1_433_600
    assert o["layers.mlp.act_mul"]["flops"] == 6 * 14336 * 100
    # reduce-norm (tp 2): after the attention all-reduce, residual add + MLP norm in one kernel (80 layers);
    # after the MLP all-reduce, residual add + the next layer's input norm (79), the last layer's add alone and
    # the first layer's input norm alone; each fused op reads the 16-bit residual (1,638,400 B) and the norm
    # scale (16,384 B) and writes the new residual and the normed output, 2 x 1,638,400 B
    rn = o["layers.attn.residual_norm"]
    assert (rn["bytes_read"], rn["bytes_written"], rn["count"]) == (1_638_400 + 16_384, 3_276_800, 80)
    assert o["layers.mlp.residual_norm"]["count"] == 79
    assert o["layers.mlp.residual"]["count"] == 1 and o["layers.attn.norm"]["count"] == 1
    assert "layers.mlp.norm" not in o and "layers.attn.residual" not in o
    # a fusion moves no FLOP and no weight: the totals agree with the unfused table's (a second route)
    assert w.phases["prefill"].flops == pytest.approx(wu.phases["prefill"].flops, rel=1e-12)
    assert w.phases["prefill"].weight_bytes == wu.phases["prefill"].weight_bytes
    assert w.phases["prefill"].bytes < wu.phases["prefill"].bytes
    assert "(qkv)" in w.bytes_model and "(gate-up)" in w.bytes_model and "(reduce-norm)" in w.bytes_model
    assert "not applicable" not in w.bytes_model and "other ops unfused;" not in w.bytes_model


def test_reduce_norm_needs_a_tp_group():
    # on one device there is no all-reduce to fuse into: the table is that of the other two fusions
    one = build_table(make_spec("llama-2-70b").arch, "prefill", 1, True, False, "shared", ALL)
    two = build_table(make_spec("llama-2-70b").arch, "prefill", 1, True, False, "shared", ("qkv", "gate-up"))
    assert one.names == two.names
    # the table records what it applied, not what was asked: no reduce-norm at tp 1, all three at tp 2
    assert one.fusions == ("qkv", "gate-up")
    assert build_table(make_spec("llama-2-70b").arch, "prefill", 2, True, False, "shared", ALL).fusions == ALL
    w = build_workload(make_spec("llama-2-70b", flash=True, fusions=ALL))
    assert w.bytes_model.startswith("fused kernels: attention (FlashAttention-style")
    assert "(reduce-norm)" not in w.bytes_model.split("; not applicable")[0]
    assert w.bytes_model.endswith("not applicable to this model or tp: reduce-norm")


def test_gate_up_needs_a_gated_mlp():
    # GPT-2's MLP is up -> GELU -> down, no gate: gate-up leaves the table as it is and the label says so
    plain = build_table(make_spec("gpt2").arch, "prefill", 1, True, False, "shared", ())
    asked = build_table(make_spec("gpt2").arch, "prefill", 1, True, False, "shared", ("gate-up",))
    assert asked.names == plain.names and asked.fusions == ()
    label = build_workload(make_spec("gpt2", flash=True, fusions="gate-up")).bytes_model
    assert "(gate-up)" not in label and label.endswith("not applicable to this model or tp: gate-up")


def test_serve_one_request_is_the_llm_forecast_with_rbits_and_fusions():
    # TTFT = the prefill forecast of the same spec; TPOT = the decode step at context 1001 (two routes)
    kw = dict(tp=2, flash=True, rbits="fp16", fusions=ALL, **FP8)
    prefill = analyze(build_workload(make_spec("llama-2-70b", phase="prefill", prompt=1000, **kw)), H100,
                      forecast=True).forecast.total_time
    decode = analyze(build_workload(make_spec("llama-2-70b", phase="decode", context=1001, **kw)), H100,
                     forecast=True).forecast.total_time
    r = serve("llama-2-70b", H100, isl=1000, osl=2, requests=1, concurrency=1, exact=True,
                       **{k: v for k, v in kw.items() if k != "flash"})
    assert r.figures.ttft.p50 == pytest.approx(prefill, rel=1e-12)
    assert r.figures.tpot.p50 == pytest.approx(decode, rel=1e-12)


def test_spec_files_round_trip_and_bad_input():
    spec = make_spec("llama-2-7b", rbits=16, fusions="gate-up,qkv", **FP8)
    assert spec.precisions.residual == "bf16" and spec.fusions == ("qkv", "gate-up")
    assert LLMSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    plain = make_spec("llama-2-7b")
    assert "residual" not in plain.to_dict()["precisions"] and "fusions" not in plain.to_dict()
    with pytest.raises(RooflineError, match="fusion 'qkvo' is not one of qkv, gate-up, reduce-norm"):
        parse_fusions("qkv,qkvo")
    with pytest.raises(RooflineError, match="rbits"):
        make_spec("llama-2-7b", rbits=12)
    raw = spec.to_dict()
    with pytest.raises(RooflineError, match="llm.fusions 'fused' is not one of"):
        read_spec({**raw, "fusions": ["fused"]}, "w.json")
    with pytest.raises(RooflineError, match="llm.precisions.residual 'fp6' is not one of"):
        read_spec({**raw, "precisions": {**raw["precisions"], "residual": "fp6"}}, "w.json")


def test_cli_rbits_and_fusions(tmp_path, capsys):
    from roofline.cli import main

    out = tmp_path / "s.json"
    code = main(["serve", "llama-2-7b", "--device", "h100", "--wbits", "fp8", "--abits", "fp8", "--kvbits", "fp8",
                 "--rbits", "fp16", "--fusions", "qkv,gate-up", "--concurrency", "4", "--requests", "4", "--isl", "200",
                 "--osl", "8", "--json", str(out)])
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["requests"] == 4
    # the CLI's run is the API's with the same knobs (two routes to one simulation)
    kw = dict(concurrency=4, requests=4, isl=200, osl=8, **FP8)
    api = serve("llama-2-7b", H100, rbits="fp16", fusions=("qkv", "gate-up"), **kw).figures.to_dict()
    for key in ("ttft_p50_s", "tpot_p50_s", "ttft_p99_s", "tpot_p99_s"):
        assert doc[key] == pytest.approx(api[key], rel=1e-12)
    plain = serve("llama-2-7b", H100, **kw).figures.to_dict()
    wide = serve("llama-2-7b", H100, rbits="fp16", **kw).figures.to_dict()
    for key in ("ttft_p50_s", "tpot_p50_s"):
        # a 2-byte residual stream instead of 1 byte: every norm, residual add and GEMM output moves more bytes,
        # weights unchanged, so each iteration is slower
        assert wide[key] > plain[key]
        # the fusions on top: the layer input is read once for Q, K, V (not three times) and once for gate and
        # up (not twice), in 3 fewer kernels a layer; no FLOP or weight moves, so each iteration is faster
        assert doc[key] < wide[key] and doc[key] != plain[key]
    capsys.readouterr()
    code = main(["serve", "llama-2-7b", "--device", "h100", "--fusions", "qkv,everything", "--rate", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "fusion 'everything' is not one of" in err[0]


def test_mlperf_engine_profiles_fuse_what_their_builds_fuse():
    from dataclasses import replace

    from roofline.serving.engines import engine_config

    # v4.0's builder.py: the fused QKV projection only; v4.1's adds --use_fused_mlp and, at tp > 1, --reduce_fusion
    v4, v41 = engine_config("trtllm-mlperf-v4"), engine_config("trtllm-mlperf-v4.1")
    assert v4.kernels.fusions == ("qkv",)
    assert v41.kernels.fusions == ALL
    assert v4 == replace(v41, kernels=replace(v41.kernels, fusions=("qkv",)))  # the same harness otherwise


def test_rbits_takes_float_formats_no_narrower_than_abits():
    # a bare 8 (or 4) is an integer format, as for --abits; the residual stream is float
    for bad, hint in ((8, "give fp8"), ("4", "integer format"), ("int8", "give fp8")):
        with pytest.raises(RooflineError, match=hint) as e:
            make_spec("llama-2-7b", rbits=bad, **FP8)
        assert "\n" not in str(e.value)
    # fp32 activations with a 16-bit stream (bare 16 = bf16): narrower, refused; fp8 on fp8 and 32 on 16: fine
    with pytest.raises(RooflineError, match="narrower than the activations' fp32"):
        make_spec("llama-2-7b", abits=32, rbits=16)
    assert make_spec("llama-2-7b", rbits="fp8", **FP8).precisions.residual == "fp8"
    assert make_spec("llama-2-7b", rbits=32).precisions.residual == "fp32"


def test_fusions_empty_names_and_case_in_files():
    assert parse_fusions("") == parse_fusions("  ") == ()  # '' clears
    for bad in (",,,", "qkv,,gate-up", "qkv,"):
        with pytest.raises(RooflineError, match="empty name"):
            parse_fusions(bad)
    spec = make_spec("llama-2-7b", fusions="qkv")
    raw = spec.to_dict()
    # a file written by hand in capitals reads as the CLI's --fusions QKV does
    assert read_spec({**raw, "fusions": ["QKV", " Gate-Up"]}, "w.json").fusions == ("qkv", "gate-up")
    assert make_spec("llama-2-7b", fusions="QKV,Gate-Up").fusions == ("qkv", "gate-up")


MLPERF_CLI = ["llama-2-70b", "--device", "h100", "--tp", "2", "--wbits", "fp8", "--abits", "fp8", "--kvbits", "fp8",
              "--rbits", "fp16", "--fusions", "qkv,gate-up,reduce-norm", "--flash", "--forecast"]


def _llm_cli_forecast(tmp_path, *extra):
    from roofline.cli import main

    out = tmp_path / "llm.json"
    assert main(["llm", *MLPERF_CLI, *extra, "--json", str(out)]) == 0
    return json.loads(out.read_text())["forecast"]["total_time"]


def test_llm_cli_rbits_fusions_kv_reads_reproduce_one_serve_request(tmp_path, capsys):
    # issue 30's acceptance check at the command line: one request of 512 tokens (2 output tokens, so one decode
    # step, at context 513) is timed by serve as `roofline llm --phase prefill --prompt 512` (TTFT) and
    # `--phase decode --context 513` (TPOT) with the same precisions and fusions: two routes to one forecast
    prefill = _llm_cli_forecast(tmp_path, "--phase", "prefill", "--prompt", "512")
    decode = _llm_cli_forecast(tmp_path, "--phase", "decode", "--context", "513")
    r = serve("llama-2-70b", H100, isl=512, osl=2, requests=1, concurrency=1, exact=True, tp=2,
                       rbits="fp16", fusions=ALL, **FP8)
    assert r.figures.ttft.p50 == pytest.approx(prefill, rel=1e-9)
    assert r.figures.tpot.p50 == pytest.approx(decode, rel=1e-9)
    # --kv-reads reaches the spec: per-query-head decode reads each of the 4 KV heads per device once per query
    # head (8 times), so the step is slower, and equals serve's with kv_reads="per-query-head"
    per_head = _llm_cli_forecast(tmp_path, "--phase", "decode", "--context", "513", "--kv-reads", "per-query-head")
    r = serve("llama-2-70b", H100, isl=512, osl=2, requests=1, concurrency=1, exact=True, tp=2,
                       rbits="fp16", fusions=ALL, kv_reads="per-query-head", **FP8)
    assert per_head > decode and r.figures.tpot.p50 == pytest.approx(per_head, rel=1e-9)
    capsys.readouterr()


@pytest.mark.parametrize("flag, value, message", [
    ("--rbits", "8", "rbits: '8' reads as int8, an integer format"),
    ("--fusions", "nope", "fusion 'nope' is not one of qkv, gate-up, reduce-norm"),
    ("--kv-reads", "x", "kv_reads 'x' is not one of shared, per-query-head"),
])
def test_llm_cli_bad_rbits_fusions_kv_reads_are_one_line(flag, value, message, capsys):
    from roofline.cli import main

    code = main(["llm", "llama-2-7b", "--device", "h100", flag, value])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("roofline: error: ") and message in err[0]


def test_llm_cli_train_refuses_the_inference_kernel_options(capsys):
    from roofline.cli import main

    code = main(["llm", "llama-2-7b", "--device", "h100", "--train", "--fusions", "qkv"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "drop them with --train" in err[0]
