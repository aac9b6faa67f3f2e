"""The GPU roof audit: CUDA kernels users' code really runs, timed against the measured GPU roofs.

The kernels (:func:`gpu_audit_kernels`): cuBLAS GEMMs in bf16, fp16, tf32 and fp32 (TF32 off), square and
in the shapes of tensor-parallel shards (a column-parallel ``x @ W.T`` with W split 8 ways, and the
row-parallel one after it), fp8 ``torch._scaled_mm`` on compute capability >= 8.9, a bf16 GEMV (decode),
``a + b`` in fp32 at an L2-resident and an HBM working set, and causal SDPA (flash attention in bf16).
Each is timed with :func:`roofline.bench.gpu.time_cuda` (CUDA events) and judged by
:func:`roofline.bench.audit.run_audit`, the CPU audit's rule: one above its roof beyond its own spread
names a wrong ceiling, which is raised.

FLOPs: 2*m*k*n per GEMM; SDPA ``4*b*h*s^2*d`` (QK^T and PV), halved when causal.  Bytes: compulsory
(every operand read once, the result written once).

>>> from roofline.bench.gpu_audit import audit_gpu      # doctest: +SKIP
>>> device, messages = audit_gpu(run_gpu_bench())      # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from roofline.bench.audit import AuditKernel, Call, run_audit
from roofline.core.errors import require
from roofline.core.units import format_bytes
from roofline.hardware.device import Device

SIZES = {"fp64": 8, "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1}


def _gemm(torch: Any, prec: str, m: int, k: int, n: int, linear: bool, what: str = "") -> AuditKernel:
    """C[m,n] = A[m,k] @ B[k,n] (``linear``: x[m,k] @ W[n,k].T) on the GPU; tf32: fp32 data, TF32 on."""
    dtype = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[prec]
    shape = f"x@W.T {m}x{k}x{n}" if linear else (f"A@B n={n}" if m == k == n else f"A@B {m}x{k}x{n}")
    kind = "GEMV" if m == 1 else "GEMM"

    def make() -> Call:
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        b = torch.randn(n, k, device="cuda", dtype=dtype) if linear else torch.randn(k, n, device="cuda", dtype=dtype)
        tf32 = prec == "tf32"

        def call() -> Any:
            torch.backends.cuda.matmul.allow_tf32 = tf32
            return torch.nn.functional.linear(a, b) if linear else torch.matmul(a, b)

        return call

    return AuditKernel(f"cuBLAS {prec} {kind} {shape}{what}", "matrix", prec, 2.0 * m * k * n,
                       float(SIZES[prec] * (m * k + k * n + m * n)), make)


def _fp8(torch: Any, n: int) -> AuditKernel:
    def make() -> Call:
        a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()  # column-major second operand
        one = torch.tensor(1.0, device="cuda")
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    return AuditKernel(f"torch._scaled_mm fp8 e4m3 A@B n={n}", "matrix", "fp8", 2.0 * n**3,
                       float(2 * n * n + 2 * n * n), make)


def _add(torch: Any, elements: int, level: str) -> AuditKernel:
    """c = a + b in fp32: 1 FLOP and 12 B per element."""

    def make() -> Call:
        a = torch.randn(elements, device="cuda")
        b, c = torch.randn(elements, device="cuda"), torch.empty(elements, device="cuda")
        return lambda: torch.add(a, b, out=c)

    return AuditKernel(f"fp32 add {format_bytes(12 * elements)} ({level})", "vector", "fp32", float(elements),
                       12.0 * elements, make)


def _sdpa(torch: Any, b: int, h: int, s: int, d: int) -> AuditKernel:
    """Causal attention in bf16 (flash attention on Ampere and later): 2*b*h*s^2*d FLOPs (half of 4*b*h*s^2*d)."""

    def make() -> Call:
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        return lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    return AuditKernel(f"SDPA bf16 causal {b}x{h}x{s}x{d}", "matrix", "bf16", 2.0 * b * h * s * s * d,
                       float(2 * 4 * b * h * s * d), make)


def gpu_audit_kernels(device: Device, torch: Any, capability: tuple[int, int]) -> list[AuditKernel]:
    """The fixed GPU audit set (the elementwise sizes follow ``device``'s L2 and HBM)."""
    out = [_gemm(torch, "bf16", 4096, 4096, 4096, False), _gemm(torch, "fp16", 4096, 4096, 4096, False),
           _gemm(torch, "bf16", 4096, 8192, 1024, True, " (column-parallel shard, TP 8)"),
           _gemm(torch, "bf16", 4096, 1024, 8192, True, " (row-parallel shard, TP 8)"),
           _gemm(torch, "tf32", 4096, 4096, 4096, False), _gemm(torch, "fp32", 2048, 2048, 2048, False),
           _gemm(torch, "bf16", 1, 8192, 8192, True, " (decode)")]
    if capability >= (8, 9) and hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn"):
        out.append(_fp8(torch, 4096))
    l2 = device.find_level("L2")
    if l2 is not None and l2.capacity:
        out.append(_add(torch, int(l2.capacity / 4 / 12), "L2"))
    out.append(_add(torch, (1 << 30) // 12, device.main_memory.level))
    out.append(_sdpa(torch, 4, 32, 2048, 128))
    return out


def audit_gpu(device: Device, *, repeats: int = 7, kernels: list[AuditKernel] | None = None,
              progress: Callable[[float, str], None] | None = None) -> tuple[Device, list[str]]:
    """:func:`roofline.bench.audit.run_audit` on the CUDA GPU, each kernel timed with CUDA events."""
    torch = require("torch", "torch")
    from roofline.bench.gpu import time_cuda
    from roofline.core.stats import quartiles

    def time_call(call: Call) -> tuple[float, float, float, float, int]:
        secs = time_cuda(torch, call, inner=5, repeats=repeats)
        q1, med, q3 = quartiles(secs)
        return med, q1, q3, min(secs), len(secs)

    old = torch.backends.cuda.matmul.allow_tf32
    try:
        chosen = kernels if kernels is not None else gpu_audit_kernels(
            device, torch, tuple(torch.cuda.get_device_capability()))
        return run_audit(device, time_call, kernels=chosen, progress=progress)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


__all__ = ["audit_gpu", "gpu_audit_kernels"]
