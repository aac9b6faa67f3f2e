"""FP8 training's mechanisms, each by hand: the GEMMs' efficiency looked up by the recipe's kernel family (per-tensor
FP8 is not DeepGEMM's block-scaled kernel), and the quantize passes as ops of their own (input and output gradient,
both axes, the amax's second read under current scaling, one cast for GEMMs sharing an input)."""

from __future__ import annotations

import numpy as np
import pytest

from roofline.catalog import get_device
from roofline.catalog.kernels import kernel_table
from roofline.core import formats
from roofline.llm.training import TrainingRun, cast_dims, cast_ops, forward_ops, training_workload


def _run(precision: str) -> TrainingRun:
    return TrainingRun.of("llama-3-8b", seq=1024, global_batch=1, precision=precision)


def _casts(precision: str) -> dict[str, dict[str, float]]:
    run = _run(precision)
    table, _ = forward_ops(run, 1, 1, 1, 1)
    out = {}
    for suffix, rows, _, c in cast_ops(run, table, cast_dims(run, table, 1)):
        for j, i in enumerate(rows):
            out[table.names[i] + suffix] = {k: float(v[j]) for k, v in c.items()}
    return out


def test_a_16_bit_step_casts_nothing() -> None:
    assert _casts("bf16") == {}


def test_current_scaling_reads_twice_and_writes_both_axes_once_per_shared_input() -> None:
    """Llama 3 8B, 1,024 tokens: q_proj's input X is 1,024 x 4,096 = 4,194,304 elements of bf16.  Current scaling
    reads it twice (amax, then cast): 2 x 2 B = 16,777,216 B; writes the row-wise and the transposed copy, 1 B each
    plus a 4-byte fp32 tensor scale each: 2 x (4,194,304 + 4) = 8,388,616 B.  k_proj and v_proj read the same X
    (one fused QKV projection): no cast of their own; up_proj shares gate_proj's.  The output gradient of k_proj,
    1,024 x 1,024 (8 KV heads of 128): read 2 x 2 x 1,048,576, written 2 x (1,048,576 + 4)."""
    c = _casts("fp8-current")
    q = next(v for k, v in c.items() if k.endswith("attn.q_proj (quantize input)"))
    assert q["bytes_read"] == 16_777_216 and q["bytes_written"] == 8_388_616
    assert not any(k.endswith(("k_proj (quantize input)", "v_proj (quantize input)", "up_proj (quantize input)"))
                   for k in c)
    dk = next(v for k, v in c.items() if k.endswith("attn.k_proj (quantize grad)"))
    assert dk["bytes_read"] == 4 * 1_048_576 and dk["bytes_written"] == 2 * (1_048_576 + 4)
    # delayed scaling takes the amax in the same pass: one read
    assert next(v for k, v in _casts("fp8").items() if k.endswith("q_proj (quantize input)"))["bytes_read"] == 8_388_608


def test_mxfp8_scales_and_nvfp4_hadamard_are_counted() -> None:
    """MXFP8: one E8M0 byte per 32 elements on each copy: q_proj's X written 2 x (4,194,304 + 131,072).  NVFP4:
    4-bit elements, one E4M3 byte per 16, a 4-byte tensor scale: 2 x (2,097,152 + 262,144 + 4); and the Hadamard
    pass over X and dY (q_proj's output 1,024 x 4,096), 16-bit in and out: (4,194,304 + 4,194,304) x 2 B each way,
    2 x 16 FLOPs per element."""
    mx = next(v for k, v in _casts("mxfp8").items() if k.endswith("q_proj (quantize input)"))
    assert mx["bytes_written"] == 2 * (4_194_304 + 131_072)
    nv = _casts("nvfp4")
    assert next(v for k, v in nv.items() if k.endswith("q_proj (quantize input)"))["bytes_written"] == 2 * (
        2_097_152 + 262_144 + 4)
    h = next(v for k, v in nv.items() if k.endswith("q_proj (hadamard)"))
    assert h["bytes_read"] == h["bytes_written"] == 2 * 8_388_608 and h["flops"] == 32 * 8_388_608


def test_the_training_workload_shows_the_casts_per_op() -> None:
    w = training_workload(_run("fp8-current"))
    names = [str(n) for n in w.column("name")]
    assert any(n.endswith("q_proj (quantize input)") for n in names)
    assert set(np.asarray(w.column("module_type"))[[n.endswith("(quantize grad)") for n in names]]) == {"quantize"}


def test_per_tensor_fp8_gemms_take_the_per_tensor_kernel_curve_and_block_scaled_deepgemm() -> None:
    """On the H100 a per-tensor FP8 GEMM (fp8, fp8-current) takes the cited fp8-tensor curve: 0.6836 of the FP8
    peak (TE's pre-quantized H200 NVL figure), i.e. 0.6836 x 1978.9 / 1402.6 = 0.9645 of the achievable (MAMF)
    roof; an fp8-block GEMM takes DeepGEMM's block-scaled curve (at most 0.784 of it)."""
    from roofline.engine.analysis import analyze

    dev = get_device("h100")
    eff = {}
    for p in ("fp8", "fp8-current", "fp8-block"):
        w = training_workload(_run(p))
        a = analyze(w, dev, forecast=True)
        assert a.forecast is not None
        sel = (np.asarray(w.column("kind")) == "matmul") & (a.forecast.term == "compute")
        eff[p] = float(np.median(a.forecast.efficiency[sel]))
    assert eff["fp8"] == pytest.approx(0.6836 * 1978.9 / 1402.6, rel=1e-3)
    assert eff["fp8-current"] == eff["fp8"]
    assert eff["fp8-block"] <= 0.784


def test_quantize_cost_accounts_for_transformer_engines_autocast_overhead() -> None:
    """Two routes to TE's quantization cost on the H200 NVL (catalog/kernels/te-gemm-profiling.json): measured,
    FP8 CurrentScaling Fprop autocast minus pre-quantized (6.503 - 5.577 = 0.926 ms per layer: the benchmark casts
    every operand of each GEMM call, inputs and weights); modelled, :func:`quantize_cost` of those operands (inputs
    15,872 x (3 x 4,096 + 16,384), weights 4,096 x 49,152) at the H200's 4.8 TB/s: a streaming lower bound, at or
    below the measurement and within 25% of it."""
    rows = kernel_table("te-gemm-profiling").records()

    def ms(mode: str) -> float:
        return next(r["ms"] for r in rows if r["gpu"] == "H200 NVL" and r["mode"] == mode and r["pass"] == "Fprop"
                    and r["recipe"] == "FP8Current")

    measured = (ms("autocast") - ms("pre-quantized")) * 1e-3
    x, w = 15872 * (3 * 4096 + 16384), 4096 * 49152
    cost = [formats.quantize_cost("fp8-current", n, role, both_axes=True) for n, role in ((x, "activation"),
                                                                                           (w, "weight"))]
    modelled = sum(c.bytes_read + c.bytes_written for c in cost) / 4.8e12
    assert 0.75 * measured <= modelled <= measured
