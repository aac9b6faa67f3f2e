"""Advice: every figure equals the figure of the workload re-analysed with the lever applied (built independently)."""

from __future__ import annotations

import math

import pytest

from roofline import ComputeCeiling, Device, MemoryCeiling, Op, Workload, analyze, get_device
from roofline.words.advice import MIN_GAIN, advise, fusion_chains
from roofline.words.levers import NO_LEVER

CPU = Device.simple("cpu", "100 GFLOP/s", "10 GB/s")


def chain_ops():
    return [Op("gemm", kind="matmul", flops=1e6, bytes_read=1e6, bytes_written=4e6),
            Op("relu", kind="elementwise", flops=1e6, bytes_read=4e6, bytes_written=4e6),
            Op("add", kind="elementwise", flops=1e6, bytes_read=8e6, bytes_written=4e6),  # relu out + residual
            Op("norm", kind="norm", flops=5e6, bytes_read=4e6, bytes_written=4e6)]


def test_fusion_figures_equal_the_hand_fused_workload():
    a = analyze(Workload.from_ops(chain_ops()), CPU)
    assert fusion_chains(a.workload) == [(1, 4)]
    lever = [lv for lv in advise(a, devices=False).levers if lv.name == "fusion"][0]
    # fused op: reads relu's 4 MB + add's extra 8-4 = 4 MB + norm's 4-4 = 0; writes norm's 4 MB; 7 MFLOP
    fused = Workload.from_ops([chain_ops()[0], Op("fused", kind="norm", flops=7e6, bytes_read=8e6, bytes_written=4e6)])
    by_hand = analyze(fused, CPU)
    assert lever.figures["bytes_saved"] == pytest.approx(28e6 - 12e6)  # 8 + 12 + 8 MB before, 12 MB after
    assert lever.after == pytest.approx(by_hand.total_time)
    # times: gemm 5 MB / 10 GB/s = 0.5 ms; chain 28 MB -> 2.8 ms; fused 12 MB -> 1.2 ms
    assert lever.before == pytest.approx(0.5e-3 + 2.8e-3)
    assert lever.after == pytest.approx(0.5e-3 + 1.2e-3)
    assert lever.figures["time_saved"] == pytest.approx(1.6e-3)
    assert "16 MB less traffic" in lever.text and "1.6 ms saved" in lever.text


def test_fusion_lever_for_a_top_op_reports_the_chain_time():
    a = analyze(Workload.from_ops(chain_ops()), CPU)
    adv = advise(a, devices=False, top=4)
    op = [o for o in adv.ops if o.name == "add"][0]
    lever = op.levers[0]
    assert (lever.before, lever.after) == (pytest.approx(2.8e-3), pytest.approx(1.2e-3))  # the chain, then fused


def test_weight_precision_figures_equal_the_requantised_workload():
    # decode-like GEMV in bf16: 64 MB of weights, memory-bound
    op = Op("gemv", kind="matmul", flops=2 * 4096 * 8192, bytes_read=2 * 4096 * 8192 + 8192, bytes_written=2 * 4096,
            weight_bytes=2 * 4096 * 8192, precision="bf16", unit="matrix")
    dev = get_device("h100")
    a = analyze(Workload.from_ops([op]), dev)
    levers = {lv.figures["bits"]: lv for lv in advise(a, devices=False).levers if lv.name == "weight precision"}
    for bits in (8, 4):
        w = 2 * 4096 * 8192 * bits / 16
        by_hand = analyze(Workload.from_ops([Op("gemv", kind="matmul", flops=op.flops,
                                                bytes_read=w + 8192, bytes_written=2 * 4096, weight_bytes=w,
                                                precision="bf16", unit="matrix")]), dev)
        assert levers[bits].after == pytest.approx(by_hand.total_time)
        assert levers[bits].figures["bytes_saved"] == pytest.approx(2 * 4096 * 8192 - w)


def test_matrix_unit_precision_figures():
    dev = Device("box", compute=(ComputeCeiling("vector", "fp32", 10e12), ComputeCeiling("matrix", "bf16", 100e12)),
                 memory=(MemoryCeiling("HBM", 2e12),), kind="gpu")
    op = Op("gemm", kind="matmul", flops=2 * 4096**3, bytes_read=2 * 4 * 4096**2, bytes_written=4 * 4096**2)
    a = analyze(Workload.from_ops([op]), dev)
    lever = [lv for lv in advise(a, devices=False).levers if lv.name == "matrix-unit precision"][0]
    assert lever.figures["roof_x"] == pytest.approx(10.0)  # 100 / 10 TFLOP/s
    by_hand = analyze(Workload.from_ops([Op("gemm", kind="matmul", flops=op.flops, bytes_read=op.bytes_read / 2,
                                            bytes_written=op.bytes_written / 2, precision="bf16", unit="matrix")]),
                      dev)
    assert lever.after == pytest.approx(by_hand.total_time)
    # 137.4 GFLOP at 100 TFLOP/s = 1.374 ms vs at 10 TFLOP/s = 13.74 ms
    assert lever.before / lever.after == pytest.approx(10.0)


def test_device_lever_is_the_fastest_catalog_device():
    from roofline.catalog import devices

    w = Workload.from_ops(chain_ops())
    a = analyze(w, CPU)
    lever = [lv for lv in advise(a).levers if lv.name == "device"][0]
    times = sorted((analyze(w, d).total_time, d.name) for d in devices())
    assert lever.after == pytest.approx(times[0][0])
    assert times[0][1] in lever.text
    assert lever.figures["time_x"] == pytest.approx(times[0][0] / a.total_time)


def test_batching_lever_equals_from_llm_at_the_larger_batch():
    from roofline.frontends.llm import from_llm

    dev = get_device("h100")
    a = analyze(from_llm("llama-3-8b", phase="decode", batch=1, prompt=1024), dev)
    lever = [lv for lv in advise(a, devices=False).levers if lv.name == "batching"][0]
    b = int(lever.figures["batch"])
    wb = from_llm("llama-3-8b", phase="decode", batch=b, prompt=1024)
    ab = analyze(wb, dev)
    assert lever.figures["intensity_after"] == pytest.approx(wb.total_flops / wb.total_bytes)
    assert lever.figures["intensity_before"] == pytest.approx(a.total_flops / a.total_bytes)
    assert lever.figures["tokens_per_s_after"] == pytest.approx(b / ab.total_time)  # one decode step: b tokens
    assert lever.figures["tokens_per_s_before"] == pytest.approx(1 / a.total_time)
    # by hand: a decode step reads every weight but the embedding table (8.03e9 - 128256 x 4096 = 7.505e9
    # parameters, 15.01 GB in bf16) and the KV cache (32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B x 1024
    # tokens = 134 MB): 15.14 GB / 3.35 TB/s = 4.52 ms, i.e. 221 tokens/s at batch 1
    assert lever.figures["tokens_per_s_before"] == pytest.approx(3.35e12 / (7.505e9 * 2 + 134.2e6), rel=0.01)
    assert lever.figures["ridge"] == pytest.approx(989.4e12 / 3.35e12)  # bf16 matrix / HBM on the H100
    assert f"batch 1 -> {b}" in lever.text


def test_each_lever_says_what_it_improves():
    """Batching gains throughput and costs each sequence time per token; its line says both, and so does the
    headline naming it (issue 48, item 2).  A weight-precision lever shortens the step: 'faster'."""
    from roofline.core.units import format_count
    from roofline.frontends.llm import from_llm
    from roofline.words.summary import headline, summarize

    dev = get_device("h100")
    a = analyze(from_llm("llama-3-8b", phase="decode", batch=1, prompt=1024), dev)
    levers = advise(a, devices=False).levers
    batching = next(lv for lv in levers if lv.name == "batching")
    b = int(batching.figures["batch"])
    ab = analyze(from_llm("llama-3-8b", phase="decode", batch=b, prompt=1024), dev)
    # throughput: b tokens per step of ab.total_time against 1 per a.total_time; each sequence waits a step per token
    gain, slower = b * a.total_time / ab.total_time, ab.total_time / a.total_time
    assert batching.gains == "throughput" and batching.latency_x == pytest.approx(slower) and slower > 1
    effect = f"{format_count(gain)}x throughput, {format_count(slower)}x slower per token"
    assert batching.line().startswith(f"batching: {effect}; batch 1 -> {b}")
    int4 = next(lv for lv in levers if lv.name == "weight precision" and lv.figures["bits"] == 4)
    assert int4.gains == "time" and int4.line().startswith("weight precision: ") and "x faster; int4 weights" in int4.line()
    assert "x faster" not in batching.line() and "throughput" not in int4.line()
    s = summarize(a, advice=advise(a, devices=False))
    best = max(levers, key=lambda lv: lv.speedup)
    assert f"best lever here: {best.name} ({best.effect()})" in headline(s)


def test_kv_cache_lever_equals_from_llm_with_fewer_kv_bits():
    from roofline.frontends.llm import from_llm

    dev = get_device("h100")
    a = analyze(from_llm("llama-3-8b", phase="decode", batch=64, prompt=8192), dev)  # its whole context
    levers = [lv for lv in advise(a, devices=False).levers if lv.name == "KV-cache precision"]
    assert levers
    for lv in levers:
        other = analyze(from_llm("llama-3-8b", phase="decode", batch=64, prompt=8192, kvbits=int(lv.figures["bits"])),
                        dev)
        assert lv.after == pytest.approx(other.total_time)
        assert lv.figures["bytes_saved"] == pytest.approx(a.total_bytes - other.total_bytes)


def test_every_lever_is_computed_and_gains():
    from roofline.frontends.llm import from_llm

    for w, dev in ((Workload.from_ops(chain_ops()), CPU),
                   (from_llm("llama-3-8b", phase="prefill", prompt=512), get_device("a100")),
                   (from_llm("llama-3-8b", phase="decode", batch=4), get_device("l4"))):
        adv = advise(analyze(w, dev))
        for lv in adv.levers:  # whole-workload levers: 'after' is the re-analysis' total time
            assert lv.after_analysis.total_time == pytest.approx(lv.after) or lv.name == "batching"
            assert lv.before / lv.after >= MIN_GAIN
        for o in adv.ops:
            for lv in o.levers:
                assert lv.before / lv.after >= MIN_GAIN and math.isfinite(lv.after)


def test_no_lever_found():
    # one compute-bound op at the only roof; no other device considered
    a = analyze(Workload.from_ops([Op("gemm", kind="matmul", flops=2e12, bytes_read=1e9, precision="fp32",
                                      unit="matrix")]), Device.simple("x", "1 TFLOP/s", "1 TB/s"))
    adv = advise(a, devices=False)
    assert adv.levers == [] and all(o.levers == [] for o in adv.ops)
    assert adv.lines().count("  " + NO_LEVER) == 2  # the workload and its one op
    assert "compute (fp32 vector" in adv.roof  # fell back to the vector roof


def test_headroom_uses_measured_time():
    a = analyze(Workload.from_ops([Op("app", flops=0.8e9, bytes_read=4e9, measured_seconds=1.0)]), CPU)
    adv = advise(a, devices=False)
    assert "2.5x the roofline time" in adv.headroom  # measured 1 s vs roofline 4e9 / 10e9 = 0.4 s


def test_roofline_advise_is_callable_after_the_submodule_is_imported():
    import roofline
    import roofline.words.advice  # noqa: F401

    a = analyze(Workload.from_ops(chain_ops()), CPU)
    assert roofline.advise(a, devices=False).levers[0].name == "fusion"


def test_llm_weight_lever_equals_from_llm_with_fewer_weight_bits():
    from roofline.frontends.llm import from_llm

    dev = get_device("h100")
    a = analyze(from_llm("llama-3-8b", phase="decode", batch=1, prompt=1024), dev)
    levers = {lv.figures["bits"]: lv for lv in advise(a, devices=False).levers if lv.name == "weight precision"}
    assert set(levers) == {8.0, 4.0}
    # quantised: every projection and MLP weight, 32 x (4096 x (4096 + 1024 + 1024 + 4096) + 3 x 4096 x 14336)
    quantised = 32 * (4096 * 10240 + 3 * 4096 * 14336)  # = 6.979e9; embedding and lm_head stay bf16
    for bits, per_weight in ((8, 1.0), (4, 0.5 + 2 / 128)):  # int4: one fp16 scale per 128 weights
        other = analyze(from_llm("llama-3-8b", phase="decode", batch=1, prompt=1024, wbits=bits), dev)
        assert levers[bits].after == pytest.approx(other.total_time)  # an independent build at those bits
        assert levers[bits].figures["bytes_saved"] == pytest.approx(quantised * (2 - per_weight))


def test_batching_lever_states_each_sequences_latency_not_the_inverse_throughput():
    from roofline.core.units import format_seconds
    from roofline.frontends.llm import from_llm

    dev = get_device("h100")
    a = analyze(from_llm("llama-3-8b", phase="decode", batch=1, prompt=1024), dev)
    lever = [lv for lv in advise(a, devices=False).levers if lv.name == "batching"][0]
    b = int(lever.figures["batch"])
    step = analyze(from_llm("llama-3-8b", phase="decode", batch=b, prompt=1024), dev).total_time
    # one decode step gives every sequence one token: each waits the whole step (longer at batch b),
    # while the batch's throughput is b / step
    assert step > a.total_time
    assert f"time per token {format_seconds(a.total_time)} -> {format_seconds(step)}" in lever.text
    assert lever.figures["tokens_per_s_after"] == pytest.approx(b / step)


def test_llm_generate_tokens_are_output_tokens_as_in_the_llm_report():
    from roofline.frontends.llm import from_llm
    from roofline.words.advice import tokens
    from roofline.words.llm_report import report as llm_report

    a = analyze(from_llm("llama-3-8b", phase="generate", batch=8, prompt=1024, gen=256), get_device("h100"))
    assert tokens(a.workload) == 8 * 256  # output tokens, not 8 x (1024 + 256)
    assert tokens(a.workload) / a.total_time == pytest.approx(llm_report(a).tokens_per_s)
    pre = from_llm("llama-3-8b", phase="prefill", batch=2, prompt=512)
    assert tokens(pre) == 2 * 512  # prefill: prompt tokens processed


def test_matrix_precision_lever_names_the_bytes_it_saves():
    # memory-bound GEMV in bf16 on an fp8-capable device: the gain comes from halved operands
    op = Op("gemv", kind="matmul", flops=2 * 4096 * 8192, bytes_read=2 * 4096 * 8192 + 2 * 8192,
            bytes_written=2 * 4096, weight_bytes=2 * 4096 * 8192, precision="bf16", unit="matrix")
    a = analyze(Workload.from_ops([op]), get_device("h100"))
    lever = [lv for lv in advise(a, devices=False).levers if lv.name == "matrix-unit precision"][0]
    assert lever.figures["bytes_saved"] == pytest.approx(op.bytes / 2)  # fp8 operands: half of 67.1 MB
    assert "operands in fp8: 33.57 MB less traffic" in lever.text


def test_the_batching_lever_states_memory_in_gib_as_every_capacity() -> None:
    """The capacity the batching lever names is the one llm and compare print: GiB, as nvidia-smi counts (79.15 GiB
    on the H100), never the same memory in decimal GB (84.98 GB) (issue 48, item 7)."""
    from roofline.core.units import format_gib
    from roofline.frontends.llm import from_llm

    dev = get_device("h100")
    lever = next(lv for lv in advise(analyze(from_llm("llama-3-8b", phase="decode"), dev), devices=False).levers
                 if lv.name == "batching")
    assert f"of {format_gib(dev.memory_capacity)} memory" in lever.text and format_gib(dev.memory_capacity) == "79.15 GiB"
    assert " GB " not in lever.text.split("needs ")[1]
