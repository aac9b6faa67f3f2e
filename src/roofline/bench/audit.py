"""The roof audit: real kernels timed against the roofs; a kernel faster than its roof raises it.

A roof must be a true upper bound.  The audit runs a fixed set of kernels that
users' code really calls (numpy/torch GEMM in both layouts, GEMV, elementwise
at L1/L2/L3/DRAM working sets), and judges each against

- the compute roof of its unit and precision (the device's documented fallback
  when that roof is absent, e.g. bf16 -> fp32 on a CPU without native bf16), and
- the memory level its working set fits (:meth:`Device.judging_level`, the
  same rule as measured ops in :mod:`roofline.engine.analysis`; main memory when none does),

as ``efficiency = roofline time / measured median time``, where roofline time =
max(FLOPs / peak, bytes / bandwidth).  Efficiencies are computed against the
roofs as they were *before* the audit.  One above 1 beyond the kernel's own
spread (interquartile range over median) means a wrong ceiling: it is reported
by name, and the roof that bound it (compute or memory) is raised to the
kernel's best sample, the new figure and its method recorded.  A correct bench
raises nothing.

>>> from roofline.bench.audit import audit_kernels     # doctest: +SKIP
>>> [k.name for k in audit_kernels(caches)][:2]        # doctest: +SKIP
['numpy fp64 GEMM A@B n=1536', 'numpy fp64 GEMM x@W.T 256x2048x2048']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from roofline.core.units import format_bandwidth, format_bytes, format_flops
from roofline.hardware.bench_facts import AuditResult
from roofline.hardware.ceilings import MethodFigure
from roofline.hardware.device import ComputeCeiling, Device, MemoryCeiling, Provenance

Call = Callable[[], Any]


@dataclass(frozen=True)
class AuditKernel:
    """One audit kernel: per-call FLOPs and compulsory bytes, its working set, and a factory for the call."""

    name: str
    unit: str
    precision: str
    flops: float
    bytes: float
    make: Callable[[], Call]  # allocates the data, returns a zero-argument call

    @property
    def working_set(self) -> float:
        return self.bytes


def _gemm(lib: str, prec: str, m: int, k: int, n: int, linear: bool) -> AuditKernel:
    """C[m,n] = A[m,k] @ B[k,n] (``linear``: x[m,k] @ W[n,k].T, the nn.Linear layout)."""
    size = {"fp64": 8, "fp32": 4, "bf16": 2, "fp16": 2}[prec]
    shape = f"x@W.T {m}x{k}x{n}" if linear else (f"A@B n={n}" if m == k == n else f"A@B {m}x{k}x{n}")
    kind = "GEMV" if m == 1 else "GEMM"

    def make() -> Call:
        if lib == "numpy":
            rng = np.random.default_rng(3)
            dt = np.float64 if prec == "fp64" else np.float32
            a = rng.standard_normal((m, k)).astype(dt)
            b = rng.standard_normal((n, k) if linear else (k, n)).astype(dt)
            bb = b.T if linear else b
            return lambda: np.matmul(a, bb)
        import torch

        tdt = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16, "fp64": torch.float64}[prec]
        g = torch.Generator().manual_seed(3)
        ta = torch.randn(m, k, generator=g).to(tdt)
        if linear:
            tw = torch.randn(n, k, generator=g).to(tdt)
            return lambda: torch.nn.functional.linear(ta, tw)
        tb = torch.randn(k, n, generator=g).to(tdt)
        return lambda: torch.matmul(ta, tb)

    return AuditKernel(f"{lib} {prec} {kind} {shape}", "matrix", prec, 2.0 * m * k * n,
                       float(size * (m * k + k * n + m * n)), make)


def _add(lib: str, elements: int, level: str) -> AuditKernel:
    """c = a + b in fp32: 1 FLOP and 12 B (two 4-B reads, one 4-B write) per element."""

    def make() -> Call:
        if lib == "numpy":
            a = np.full(elements, 1.5, dtype=np.float32)
            b, c = a.copy(), np.empty_like(a)
            return lambda: np.add(a, b, out=c)
        import torch

        ta = torch.full((elements,), 1.5)
        tb, tc = ta.clone(), torch.empty_like(ta)
        return lambda: torch.add(ta, tb, out=tc)

    return AuditKernel(f"{lib} fp32 add {format_bytes(12 * elements)} ({level})", "vector", "fp32",
                       float(elements), 12.0 * elements, make)


def audit_kernels(device: Device, *, torch_kernels: bool = True, full: bool = False) -> list[AuditKernel]:
    """The fixed audit set for ``device`` (elementwise sizes follow its memory levels)."""
    out = [_gemm("numpy", "fp64", 1536, 1536, 1536, False), _gemm("numpy", "fp64", 256, 2048, 2048, True),
           _gemm("numpy", "fp32", 1536, 1536, 1536, False), _gemm("numpy", "fp32", 256, 2048, 2048, True),
           _gemm("numpy", "fp32", 1, 4096, 4096, True)]
    have_torch = False
    if torch_kernels:
        try:
            import torch  # noqa: F401

            have_torch = True
        except ImportError:
            pass
    if have_torch:
        out += [_gemm("torch", "fp32", 256, 2048, 2048, True), _gemm("torch", "bf16", 64, 2048, 2048, True),
                _gemm("torch", "bf16", 512, 512, 512, False), _gemm("torch", "bf16", 1, 4096, 4096, True)]
        if full:
            out += [_gemm("torch", "fp16", 64, 2048, 2048, True), _gemm("torch", "fp32", 1536, 1536, 1536, False)]
    # elementwise at half of each cache level's capacity, and at 4x the largest cache (main memory)
    main = device.main_memory
    caches = sorted((m for m in device.memory if m is not main and m.capacity), key=lambda m: m.capacity or 0)
    sizes = [(m.level, int((m.capacity or 0) * 0.5)) for m in caches]
    largest = max((m.capacity or 0 for m in caches), default=16 * 2**20)
    sizes.append((main.level, int(max(4 * largest, 64 * 2**20))))
    for level, ws in sizes:
        out.append(_add("torch" if have_torch else "numpy", max(1024, ws // 12), level))
    return out


def judge(device: Device, kernel: AuditKernel, seconds: float, spread: tuple[float, float]) -> AuditResult:
    """Efficiency of one timed kernel against ``device``'s roofs (roofline time / median time)."""
    roof = device.choose_compute(kernel.unit, kernel.precision).ceiling
    level = device.judging_level(kernel.working_set)
    t_compute = kernel.flops / roof.flops
    t_memory = kernel.bytes / level.bandwidth
    return AuditResult(kernel.name, kernel.unit, kernel.precision, roof.label, level.level, kernel.flops,
                       kernel.bytes, seconds, spread, max(t_compute, t_memory) / seconds,
                       "compute" if t_compute >= t_memory else "memory")


def run_audit(device: Device, time_call: Callable[[Call], tuple[float, float, float, float, int]],
              *, torch_kernels: bool = True, full: bool = False,
              kernels: list[AuditKernel] | None = None,
              progress: Callable[[float, str], None] | None = None) -> tuple[Device, list[str]]:
    """Time every kernel, judge it against ``device`` as it is, raise what was beaten; (device, messages).

    ``time_call(call) -> (median, fast quartile, slow quartile, best seconds, samples)``.
    The returned device carries the results in ``bench.audit`` (if it has bench facts).
    """
    kernels = audit_kernels(device, torch_kernels=torch_kernels, full=full) if kernels is None else kernels
    results: list[AuditResult] = []
    best: dict[str, tuple[float, int]] = {}
    messages: list[str] = []
    for i, kern in enumerate(kernels):
        if progress:
            progress(i / len(kernels), f"audit: {kern.name}")
        try:
            call = kern.make()
        except (MemoryError, RuntimeError) as exc:  # a kernel this machine cannot run is skipped, said
            messages.append(f"audit: {kern.name} skipped ({type(exc).__name__}: {str(exc).splitlines()[0][:80]})")
            continue
        med, fast, slow, fastest, n = time_call(call)
        del call
        results.append(judge(device, kern, med, (fast, slow)))
        best[kern.name] = (fastest, n)
    raised = device
    final: list[AuditResult] = []
    for r in results:
        if not r.above_roof:
            final.append(r)
            continue
        fastest, n = best[r.kernel]
        method = f"audit: {r.kernel} (best of {n} calls)"
        compute = r.binding == "compute"
        roof: Any = raised.choose_compute(r.unit, r.precision).ceiling if compute else raised.memory_level(r.level)
        field, fmt = ("flops", format_flops) if compute else ("bandwidth", format_bandwidth)
        name, value = (roof.label if compute else roof.level), getattr(roof, field)
        new = (r.flops if compute else r.bytes) / fastest
        if new > value:
            prov = _with_method(roof.provenance, new, method, "best call of the audit kernel")
            raised = _replace_roof(raised, roof, **{field: new, "provenance": prov})
            what = f"{name} {fmt(value)} -> {fmt(new)}"
        else:
            what = f"{name} (already raised to {fmt(value)})"
        messages.append(f"wrong ceiling: {r.kernel} ran at {r.efficiency:.2f}x its roof ({r.roof}, {r.level}; "
                        f"own spread {r.noise:.0%}); raised {what}")
        final.append(replace(r, raised=what))
    raised = enforce_vector_at_least_gemm(raised)
    if raised.bench is not None:
        raised = replace(raised, bench=replace(raised.bench, audit=tuple(final)))
    return raised, messages


def _with_method(prov: Provenance, value: float, method: str, statistic: str) -> Provenance:
    return replace(prov, method=method,
                   methods=(*prov.methods, MethodFigure(method, value, None, statistic)))


def _replace_roof(device: Device, old: ComputeCeiling | MemoryCeiling, **changes: Any) -> Device:
    """``device`` with the compute or memory ceiling ``old`` replaced by a copy with ``changes``."""
    return replace(device, compute=tuple(replace(c, **changes) if c is old else c for c in device.compute),
                   memory=tuple(replace(m, **changes) if m is old else m for m in device.memory))


def enforce_vector_at_least_gemm(device: Device) -> Device:
    """On a CPU without a matrix unit the vector roof of a precision is at least its best GEMM.

    (A CPU's "matrix" roof is what its best GEMM reaches on the vector units; no CPU this bench
    measures has AMX/SME roofs of its own.)
    """
    if device.kind != "cpu":
        return device
    compute = list(device.compute)
    for i, c in enumerate(compute):
        m = device.ceiling("matrix", c.precision)
        if c.unit == "vector" and m is not None and m.flops > c.flops:
            compute[i] = replace(c, flops=m.flops, provenance=_with_method(
                c.provenance, m.flops, f"best GEMM ({m.provenance.method})", "the matrix roof of this precision"))
    return replace(device, compute=tuple(compute))


def format_audit(results: tuple[AuditResult, ...] | list[AuditResult]) -> str:
    """The audit as a table: kernel, judged by, efficiency (before raising), own spread, verdict."""
    if not results:
        return ""
    from roofline.core.text import display  # kernel, roof and level names come from a cache file: data

    rows = [(display(r.kernel), display(f"{r.roof}, {r.level}"), display(r.binding), f"{r.efficiency:.2f}",
             f"{r.noise:.0%}", f"raised {display(r.raised)}" if r.raised else ("above roof" if r.above_roof else "ok"))
            for r in results]
    head = ("audit kernel", "judged by", "bound", "efficiency", "spread", "verdict")
    widths = [max(len(x[i]) for x in [head, *rows]) for i in range(len(head))]
    fmt = "  " + "  ".join(f"{{:{'>' if i in (3, 4) else '<'}{w}}}" for i, w in enumerate(widths))
    return "\n".join([fmt.format(*head), *(fmt.format(*r) for r in rows)]) + "\n"
