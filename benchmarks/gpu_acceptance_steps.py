"""What the GPU acceptance script's steps share: results and checks, the catalog entry, the Llama-style model.

(``benchmarks/gpu_acceptance.py`` runs the steps; this module holds no step of its own but the model and
the measure, trace, calibrate and Nsight Compute steps, so each file stays readable.)
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
LLAMA_CONFIG = HERE / "gpu_acceptance_llama.json"  # the model measured and traced (random weights)


@dataclass
class Check:
    """One figure against its target; ``ok`` False fails the run, and the check is named in the exit message."""

    name: str
    value: str
    target: str
    ok: bool


@dataclass
class Result:
    step: str
    status: str = "PASS"  # PASS | FAIL | SKIP
    note: str = ""
    seconds: float = 0.0
    checks: list[Check] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)

    def check(self, name: str, value: str, target: str, ok: bool) -> None:
        self.checks.append(Check(name, value, target, bool(ok)))
        if not ok:
            self.status = "FAIL"

    def skip(self, why: str) -> Result:
        self.status, self.note = "SKIP", why
        return self

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Context:
    """What steps hand on: the measured device (bench), the model and its inputs, scratch space."""

    tmp: Path
    fake: str | None
    device: Any = None  # the measured GPU Device
    catalog: Any = None  # its catalog entry (None: the GPU is not in the catalog)
    models: dict[str, Any] = field(default_factory=dict)


def catalog_entry(gpu_name: str) -> Any:
    """The catalog device of the GPU torch names (``NVIDIA H200`` -> h200); None when none matches."""
    from roofline.catalog import resolve_device
    from roofline.core.errors import RooflineError

    short = re.sub(r"^nvidia\s+", "", gpu_name.strip(), flags=re.I)
    tokens = short.lower().split()
    for cand in (gpu_name, short, "-".join(tokens), tokens[0] if tokens else ""):
        if not cand:
            continue
        try:
            return resolve_device(cand)
        except RooflineError:
            continue
    return None


# ----------------------------------------------------------------------------- the Llama-style model
def build_llama(torch: Any, cfg: dict[str, Any]) -> Any:
    """A Llama-style decoder (RMSNorm, rotary GQA attention with SDPA, SwiGLU MLP, LM head) in bf16 on cuda,
    random weights, built from ``cfg`` (the Hugging Face config field names)."""
    nn, F = torch.nn, torch.nn.functional
    dev, dt = torch.device("cuda"), torch.bfloat16
    d, heads, kv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = d // heads

    def lin(i: int, o: int) -> Any:
        return nn.Linear(i, o, bias=False, device=dev, dtype=dt)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v, self.o = lin(d, heads * hd), lin(d, kv * hd), lin(d, kv * hd), lin(heads * hd, d)
            self.gate, self.up, self.down = lin(d, cfg["intermediate_size"]), lin(d, cfg["intermediate_size"]), \
                lin(cfg["intermediate_size"], d)
            self.n1 = nn.Parameter(torch.ones(d, device=dev, dtype=dt))
            self.n2 = nn.Parameter(torch.ones(d, device=dev, dtype=dt))

        def forward(self, x: Any, cos: Any, sin: Any, past_k: Any, past_v: Any) -> Any:
            b, s, _ = x.shape
            h = F.rms_norm(x, (d,), self.n1, 1e-5)
            q = self.q(h).view(b, s, heads, hd).transpose(1, 2)
            k = self.k(h).view(b, s, kv, hd).transpose(1, 2)
            v = self.v(h).view(b, s, kv, hd).transpose(1, 2)
            q, k = q * cos + _rotate(q) * sin, k * cos + _rotate(k) * sin
            if past_k is not None:
                k, v = torch.cat([past_k, k], 2), torch.cat([past_v, v], 2)
            k, v = k.repeat_interleave(heads // kv, 1), v.repeat_interleave(heads // kv, 1)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=past_k is None)
            x = x + self.o(a.transpose(1, 2).reshape(b, s, heads * hd))
            h = F.rms_norm(x, (d,), self.n2, 1e-5)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    def _rotate(t: Any) -> Any:
        half = t.shape[-1] // 2
        return torch.cat([-t[..., half:], t[..., :half]], -1)

    class Llama(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(cfg["vocab_size"], d, device=dev, dtype=dt)
            self.layers = nn.ModuleList(Block() for _ in range(cfg["num_hidden_layers"]))
            self.norm = nn.Parameter(torch.ones(d, device=dev, dtype=dt))
            self.head = lin(d, cfg["vocab_size"])

        def forward(self, ids: Any, cos: Any, sin: Any, past_k: Any = None, past_v: Any = None) -> Any:
            x = self.embed(ids)
            for i, layer in enumerate(self.layers):
                x = layer(x, cos, sin, None if past_k is None else past_k[i], None if past_v is None else past_v[i])
            return self.head(F.rms_norm(x, (d,), self.norm, 1e-5))

    return Llama().eval()


def llama_inputs(torch: Any, cfg: dict[str, Any], phase: str) -> tuple[Any, ...]:
    """(ids, cos, sin[, past k, past v]) for prefill (batch x seq tokens) or decode (one token per sequence)."""
    dev, dt = torch.device("cuda"), torch.bfloat16
    b, hd = cfg["batch"], cfg["hidden_size"] // cfg["num_attention_heads"]
    s = cfg["seq_len"] if phase == "prefill" else 1
    ids = torch.randint(0, cfg["vocab_size"], (b, s), device=dev)
    cos = torch.randn(1, 1, s, hd, device=dev, dtype=dt)
    sin = torch.randn(1, 1, s, hd, device=dev, dtype=dt)
    if phase == "prefill":
        return ids, cos, sin
    past = (cfg["num_hidden_layers"], b, cfg["num_key_value_heads"], cfg["kv_len"], hd)
    return ids, cos, sin, torch.randn(past, device=dev, dtype=dt), torch.randn(past, device=dev, dtype=dt)


def load_llama(ctx: Context, torch: Any) -> tuple[Any, dict[str, Any]]:
    if "llama" not in ctx.models:
        cfg = json.loads(LLAMA_CONFIG.read_text())
        torch.manual_seed(0)
        ctx.models["llama"] = (build_llama(torch, cfg), cfg)
    return ctx.models["llama"]


# ----------------------------------------------------------------------------- measure, trace, calibrate, ncu
def measure_phase(r: Result, ctx: Context, torch: Any, phase: str) -> Any:
    """roofline.measure of the model in one phase: bound <= measured on every op, forecast / measured."""
    from roofline.measurement import measure

    model, cfg = load_llama(ctx, torch)
    a = measure(model, *llama_inputs(torch, cfg, phase), device=ctx.device, repeats=5, warmup=2, profile_runs=3,
                title=f"llama {phase}")
    w = a.workload
    meas = w.columns["measured_seconds"]
    seen = np.isfinite(meas)
    names = [w.strings("name", i) for i in range(len(w))]
    above = [f"{names[i]} #{i} ({a.efficiency[i]:.2f}x)" for i in np.flatnonzero(a.above_roof)]
    r.check(f"{phase}: bound <= measured on every op", f"{len(above)} of {int(seen.sum())} above"
            + (f": {', '.join(above[:4])}" if above else ""), "0 above", not above)
    r.check(f"{phase}: ops with a measured time", f"{int(seen.sum())} of {len(w)}", ">= 90%", seen.mean() >= 0.9)
    f = a.forecast
    assert f is not None and w.measured is not None
    ratio = f.time[seen] / meas[seen]
    whole = float(w.measured.timing.median)
    r.figures[phase] = {
        "ops": len(w), "measured_ops": int(seen.sum()), "whole_model_measured_s": whole,
        "whole_model_forecast_s": float(f.total_time), "whole_model_bound_s": float(a.time.sum()),
        "forecast_over_measured_median": float(np.median(ratio)) if ratio.size else math.nan,
        "forecast_over_measured_worst": float(ratio[np.argmax(np.abs(np.log(ratio)))]) if ratio.size else math.nan,
        "per_op": [{"op": names[i], "bound_s": float(a.judged_time[i]), "forecast_s": float(f.time[i]),
                    "measured_s": float(meas[i])} for i in range(len(w))]}
    r.check(f"{phase}: whole-model bound <= measured", f"{float(a.time.sum()):.3g} s vs {whole:.3g} s",
            "bound <= measured", float(a.time.sum()) <= whole * 1.02)
    return a


def trace_run(r: Result, ctx: Context, torch: Any) -> None:
    """A torch.profiler CUDA trace of the prefill through roofline's trace reader, against from_torch."""
    from torch.profiler import ProfilerActivity, profile

    from roofline.frontends.torch import from_torch
    from roofline.frontends.trace import from_trace

    model, cfg = load_llama(ctx, torch)
    inputs = llama_inputs(torch, cfg, "prefill")
    with torch.inference_mode():
        for _ in range(2):
            model(*inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
            model(*inputs)
            torch.cuda.synchronize()
    path = ctx.tmp / "llama_prefill_trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    total = sum(float(e.get("dur", 0)) for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")) * 1e-6
    a = from_trace(str(path), ctx.device)
    t = a.workload.trace
    assert t is not None
    unmatched = sum(u.seconds for u in t.unmatched)
    outside = sum(u.seconds for u in t.unmatched if "outside any op" in u.reason)
    r.check("kernels joined to ops", f"{t.op_seconds / total:.1%} of kernel time in ops" if total else "no kernels",
            ">= 90%", total > 0 and t.op_seconds >= 0.9 * total)
    r.check("kernel time launched outside any op", f"{outside:.3g} s", "0", outside <= 0.01 * max(total, 1e-12))
    r.check("placed + unmatched = profiler total", f"{t.op_seconds + unmatched:.4g} s vs {total:.4g} s", "within 1%",
            total > 0 and abs(t.op_seconds + unmatched - total) <= 0.01 * total)
    traced = float(from_torch(model, *inputs).columns["flops"].sum())
    got = float(a.workload.columns["flops"].sum())
    r.check("trace FLOPs = from_torch FLOPs", f"{got:.6g} vs {traced:.6g}", "equal (1e-6)",
            traced > 0 and abs(got - traced) <= 1e-6 * traced)
    r.figures.update(kernel_seconds=total, op_seconds=t.op_seconds, unmatched_seconds=unmatched, trace_flops=got,
                     from_torch_flops=traced, trace_ops=len(a.workload), trace_file=str(path))


def calibrate_run(r: Result, ctx: Context, torch: Any) -> None:
    """calibrate --gpu --quick on the cached bench device, then the forecast of a model not in the suite."""
    from roofline import bench, cli
    from roofline.measurement import measure

    bench.save_local_device(ctx.device)
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        rc = cli.main(["calibrate", "--gpu", "--quick", "--out", str(ctx.tmp / "gpu.cal.json")])
    r.figures["printed"] = printed.getvalue()
    r.check("calibrate --gpu --quick exits 0", str(rc), "0", rc == 0)
    if rc:
        return
    calibrated = bench.load_local_device()
    cal = calibrated.calibration
    r.figures.update(points=len(cal.points), failed=list(cal.failed), fit_error=cal.error)
    r.check("suite ops that ran", f"{len(cal.points)} of {len(cal.points) + len(cal.failed)}", ">= 90%",
            len(cal.points) >= 0.9 * (len(cal.points) + len(cal.failed)))
    model, cfg = load_llama(ctx, torch)
    a = measure(model, *llama_inputs(torch, cfg, "prefill"), device=calibrated, repeats=3, warmup=1, profile_runs=3)
    meas = a.workload.columns["measured_seconds"]
    seen = np.isfinite(meas)
    assert a.forecast is not None
    err = np.abs(a.forecast.time[seen] / meas[seen] - 1)
    r.figures.update(held_out_median_error=float(np.median(err)), held_out_worst_error=float(err.max()))
    r.check("held-out forecast error (llama prefill, bf16)", f"median {np.median(err):.0%}, worst {err.max():.0%}",
            "reported", bool(np.isfinite(err).all()))


NCU_PROGRAM = """\
import torch
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
x = torch.randn(1 << 26, device="cuda"); y = torch.randn_like(x); z = torch.empty_like(x)
q, k, v = (torch.randn(4, 32, 2048, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
for _ in range(2):
    torch.matmul(a, b); torch.add(x, y, out=z); torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
torch.cuda.synchronize()
torch.cuda.profiler.start()
torch.matmul(a, b); torch.add(x, y, out=z); torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
torch.cuda.synchronize()
torch.cuda.profiler.stop()
"""
NCU_METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
               "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
               "sm__ops_path_tensor_src_bf16_dst_fp32.sum")
#: roofline's counts for NCU_PROGRAM's three ops: (label, FLOPs, compulsory bytes)
NCU_OPS = (("bf16 GEMM 4096^3", 2.0 * 4096**3, 3 * 2.0 * 4096 * 4096),
           ("fp32 add 2^26", float(1 << 26), 12.0 * (1 << 26)),
           ("SDPA bf16 causal 4x32x2048x128", 2.0 * 4 * 32 * 2048 * 2048 * 128, 4 * 2.0 * 4 * 32 * 2048 * 128))


def ncu_run(r: Result, ncu: str, timeout: float) -> None:
    """Nsight Compute's DRAM bytes and FLOPs of a GEMM, an elementwise op and attention vs roofline's counts."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(NCU_PROGRAM)
    cmd = [ncu, "--profile-from-start", "off", "--csv", "--page", "raw", "--metrics", ",".join(NCU_METRICS),
           sys.executable, f.name]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    os.unlink(f.name)
    text = p.stdout + p.stderr
    if "ERR_NVGPUCTRPERM" in text or "permission" in text.lower():
        line = next((ln for ln in text.splitlines() if "ERR_NVGPUCTRPERM" in ln or "ermission" in ln), text[-300:])
        r.skip(f"ncu cannot read the counters here: {line.strip()}")
        return
    rows = _ncu_rows(p.stdout)
    if p.returncode or not rows:
        r.check("ncu ran", f"exit {p.returncode}: {text.strip().splitlines()[-1] if text.strip() else ''}", "exit 0",
                False)
        return
    groups = _ncu_groups(rows)
    r.figures["kernels"] = [{"kernel": k, **m} for k, m in rows]
    for (label, flops, nbytes), kernels in zip(NCU_OPS, groups, strict=False):
        dram = sum(m.get("dram__bytes_read.sum", 0) + m.get("dram__bytes_write.sum", 0) for _, m in kernels)
        fl = sum(m.get("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 0)
                 + m.get("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", 0)
                 + 2 * m.get("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 0)
                 + m.get("sm__ops_path_tensor_src_bf16_dst_fp32.sum", 0) for _, m in kernels)
        lo, hi = (0.9, 1.2) if "add" in label else (0.5, 4.0)
        r.check(f"{label}: ncu DRAM bytes / compulsory bytes", f"{dram / nbytes:.2f}", f"{lo} .. {hi}",
                lo <= dram / nbytes <= hi)
        r.figures[label] = {"ncu_dram_bytes": dram, "roofline_bytes": nbytes, "ncu_flops": fl, "roofline_flops": flops,
                            "kernels": [k for k, _ in kernels]}
        if "add" in label:
            r.check(f"{label}: ncu FP32 FLOPs / roofline FLOPs", f"{fl / flops:.3f}", "1 (1%)", abs(fl / flops - 1) <= 0.01)


def _ncu_rows(csv_text: str) -> list[tuple[str, dict[str, float]]]:
    """ncu --csv --page raw: a header row, a units row, then one row per kernel."""
    import csv

    lines = [ln for ln in csv_text.splitlines() if ln.startswith('"')]
    if len(lines) < 3:
        return []
    table = list(csv.reader(lines))
    head, out = table[0], []
    for row in table[2:]:
        rec = dict(zip(head, row, strict=False))
        vals = {m: _number(rec.get(m, "")) for m in NCU_METRICS if m in rec}
        out.append((rec.get("Kernel Name", "?"), vals))
    return out


def _number(s: str) -> float:
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return 0.0


def _ncu_groups(rows: list[tuple[str, dict[str, float]]]) -> list[list[tuple[str, dict[str, float]]]]:
    """The profiled kernels split into the program's three ops: GEMM kernels, then the add, then attention."""
    gemm = [x for x in rows if re.search(r"gemm|sm90|cutlass|nvjet", x[0], re.I) and "flash" not in x[0].lower()]
    add = [x for x in rows if "elementwise" in x[0].lower() or "add" in x[0].lower()]
    attn = [x for x in rows if re.search(r"flash|fmha|attention", x[0], re.I)]
    return [gemm, [x for x in add if x not in gemm][:1], attn]


def which(name: str) -> str | None:
    return shutil.which(name) or next((p for p in (f"/usr/local/cuda/bin/{name}",) if os.path.exists(p)), None)
