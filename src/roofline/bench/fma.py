"""The FMA peak kernel: explicit vector FMA chains in LLVM IR, the same construction on every ISA.

A compiler asked to vectorise a loop may not (numba turned the old fp64 loop
into 48 scalar ``vfmadd213sd`` and ~120 stack spills on AVX2).  So the kernel
is written at the level where there is no choice left: ``chains`` independent
accumulators of type ``<lanes x double|float>``, each updated ``acc = fma(alpha,
beta, acc)`` per iteration with the ``llvm.fma`` intrinsic (no fast-math
flags: LLVM may not fold two steps of a chain into one).  The accumulating
form maps to one instruction on every ISA (``vfmadd231`` on x86, ``fmla`` on
Arm, which would need a register copy per FMA for ``acc * alpha + beta``).  ``alpha`` and
``beta`` are run-time arguments, so nothing is constant-folded.

The shape comes from the ISA (:func:`kernel_shape`): the widest vector
register, and as many chains as fit in the register file beside ``alpha`` and
``beta`` while covering FMA latency x pipes (>= 10 on current x86 cores):

=================  ========  =====================  =====================
ISA                register  fp64 chains x lanes    fp32 chains x lanes
=================  ========  =====================  =====================
AVX-512 (32 zmm)   512 bit   24 x 8                 24 x 16
AVX2+FMA (16 ymm)  256 bit   12 x 4                 12 x 8
NEON (32 q)        128 bit   24 x 2                 24 x 4
SSE2, no FMA       128 bit   6 x 2 (mul + add)      6 x 4 (mul + add)
=================  ========  =====================  =====================

:func:`assembly` compiles the same IR for any CPU name LLVM knows
(``haswell``, ``skylake-avx512``, ``neoverse-n1``), whatever the host is; the
tests check there that the loop holds ``chains`` packed FMAs and no stack
operand.  :func:`run_fma_peak` runs it on ``threads`` OS threads (ctypes
releases the GIL), one pinned per CPU, and returns FLOP/s.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from dataclasses import dataclass
from functools import cache
from typing import Any

from roofline.bench import host as _host

#: CPU features that decide the kernel's shape (LLVM's feature names)
X86_AVX512, X86_AVX2, X86_FMA = "avx512f", "avx2", "fma"

#: The CPUs this process may use, read at import: an OpenMP runtime started later (numba's, with
#: OMP_PROC_BIND) may pin the main thread to one CPU, and threads started from it inherit that.
ALLOWED_CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


@dataclass(frozen=True)
class KernelShape:
    """One compiled kernel: ``chains`` accumulators of ``lanes`` elements of ``precision``."""

    precision: str  # fp64 | fp32
    bits: int  # vector register width
    chains: int
    fused: bool  # llvm.fma (True) or fmul + fadd (no FMA unit)

    @property
    def lanes(self) -> int:
        return self.bits // (64 if self.precision == "fp64" else 32)

    @property
    def flops_per_iteration(self) -> int:
        """2 FLOPs per lane per chain: one multiply-add."""
        return 2 * self.chains * self.lanes


def kernel_shape(precision: str, features: dict[str, bool] | set[str], arch: str = "x86_64") -> KernelShape:
    """The kernel for a CPU with ``features`` (LLVM names, e.g. ``{"avx2", "fma"}``) on ``arch``.

    >>> kernel_shape("fp64", {"avx2", "fma"}).lanes, kernel_shape("fp64", {"avx2", "fma"}).chains
    (4, 12)
    >>> kernel_shape("fp32", {"avx512f", "avx2", "fma"}).flops_per_iteration
    768
    """
    feats = {k for k, v in features.items() if v} if isinstance(features, dict) else set(features)
    if arch in ("aarch64", "arm64"):
        return KernelShape(precision, 128, 24, True)
    if X86_AVX512 in feats:
        return KernelShape(precision, 512, 24, True)
    if X86_AVX2 in feats and X86_FMA in feats:
        return KernelShape(precision, 256, 12, True)
    if X86_FMA in feats:  # FMA on 256-bit AVX without AVX2 (never shipped, but well defined)
        return KernelShape(precision, 256, 12, True)
    return KernelShape(precision, 128, 6, False)


def kernel_ir(shape: KernelShape, name: str = "fma_peak") -> str:
    """LLVM IR of ``double name(i64 iters, double alpha, double beta)`` for ``shape``.

    Returns the sum of all lanes so the work is live.  Each chain starts from a
    different value so no two chains are the same computation (LLVM would merge them).
    """
    el = "double" if shape.precision == "fp64" else "float"
    n = shape.lanes
    vt = f"<{n} x {el}>"
    fma = f"llvm.fma.v{n}{'f64' if el == 'double' else 'f32'}"
    lines = [f"declare {vt} @{fma}({vt}, {vt}, {vt})" if shape.fused else "",
             f"define double @{name}(i64 %iters, double %alpha, double %beta) {{",
             "entry:"]
    a, b = "%alpha", "%beta"
    if el == "float":
        lines += ["  %a = fptrunc double %alpha to float", "  %b = fptrunc double %beta to float"]
        a, b = "%a", "%b"
    lines += [f"  %a0 = insertelement {vt} undef, {el} {a}, i32 0",
              f"  %av = shufflevector {vt} %a0, {vt} undef, <{n} x i32> zeroinitializer",
              f"  %b0 = insertelement {vt} undef, {el} {b}, i32 0",
              f"  %bv = shufflevector {vt} %b0, {vt} undef, <{n} x i32> zeroinitializer",
              "  %go = icmp sgt i64 %iters, 0",
              "  br i1 %go, label %loop, label %exit", "loop:",
              "  %i = phi i64 [ 0, %entry ], [ %inext, %loop ]"]

    def init(j: int) -> str:
        # exact binary fractions, all distinct: 1 + (j*n + l) / 1024
        return "<" + ", ".join(f"{el} {1.0 + (j * n + lane) / 1024.0:.17e}" for lane in range(n)) + ">"

    for j in range(shape.chains):
        lines.append(f"  %x{j} = phi {vt} [ {init(j)}, %entry ], [ %y{j}, %loop ]")
    for j in range(shape.chains):
        if shape.fused:
            # x + alpha*beta: the accumulating form every ISA has (vfmadd231, fmla) with no register copies
            lines.append(f"  %y{j} = call {vt} @{fma}({vt} %av, {vt} %bv, {vt} %x{j})")
        else:
            lines += [f"  %m{j} = fmul {vt} %x{j}, %av", f"  %y{j} = fadd {vt} %m{j}, %bv"]
    lines += ["  %inext = add i64 %i, 1", "  %more = icmp slt i64 %inext, %iters",
              "  br i1 %more, label %loop, label %exit", "exit:"]
    for j in range(shape.chains):
        lines.append(f"  %z{j} = phi {vt} [ {init(j)}, %entry ], [ %y{j}, %loop ]")
    acc = "%z0"
    for j in range(1, shape.chains):
        lines.append(f"  %s{j} = fadd {vt} {acc}, %z{j}")
        acc = f"%s{j}"
    total = "0.0"
    for lane in range(n):
        lines.append(f"  %e{lane} = extractelement {vt} {acc}, i32 {lane}")
        if el == "float":
            lines.append(f"  %d{lane} = fpext float %e{lane} to double")
        val = f"%e{lane}" if el == "double" else f"%d{lane}"
        lines.append(f"  %t{lane} = fadd double {total}, {val}")
        total = f"%t{lane}"
    lines += [f"  ret double {total}", "}"]
    return "\n".join(line for line in lines if line) + "\n"


def _llvm() -> Any:
    from llvmlite import binding as llvm

    try:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
    except RuntimeError:  # pragma: no cover - llvmlite builds without every target
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
    return llvm


def _module(llvm: Any, ir: str, tm: Any) -> Any:
    mod = llvm.parse_assembly(ir)
    mod.verify()
    mod.triple = tm.triple
    # no IR optimisation passes: the IR is already the loop we want, and the code generator
    # (register allocation, instruction selection at opt=3) is all it needs
    return mod


def assembly(precision: str, cpu: str, triple: str = "x86_64-unknown-linux-gnu",
             features: set[str] | None = None) -> tuple[KernelShape, str]:
    """(shape, assembly text) of the kernel compiled for ``cpu`` (an LLVM CPU name), on any host.

    ``features`` are the ISA features that decide the shape (default: what ``cpu`` is known to
    have, for the names the tests use).
    """
    llvm = _llvm()
    if features is None:
        features = _KNOWN_CPUS.get(cpu, set())
    arch = triple.split("-")[0]
    shape = kernel_shape(precision, features, arch)
    tm = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features="", opt=3)
    mod = _module(llvm, kernel_ir(shape), tm)
    return shape, tm.emit_assembly(mod)


#: ISA features of the CPU names the assembly tests compile for (LLVM CPU names)
_KNOWN_CPUS: dict[str, set[str]] = {
    "haswell": {"avx2", "fma"},
    "znver3": {"avx2", "fma"},
    "skylake-avx512": {"avx512f", "avx2", "fma"},
    "znver4": {"avx512f", "avx2", "fma"},
    "neoverse-n1": set(),
}


def host_shape(precision: str) -> KernelShape:
    """The kernel shape for this machine's CPU (:func:`roofline.bench.host.host_cpu`, which tests may force).

    >>> from roofline.bench import host
    >>> with host.forced(host.HostCpu("x86_64", flags=frozenset({"avx2", "fma"}))):
    ...     host_shape("fp64").bits, host_shape("fp64").chains
    (256, 12)
    """
    cpu = _host.host_cpu()
    return kernel_shape(precision, set(cpu.vector_isa()), "aarch64" if cpu.is_arm else "x86_64")


@cache
def _host_kernel(precision: str) -> tuple[KernelShape, Any, Any]:
    """JIT-compile the kernel for this CPU: (shape, ctypes function, engine kept alive)."""
    if _host.is_forced():
        raise RuntimeError("the FMA kernel runs on the real CPU only: it is not compiled while a CPU is forced "
                           "(roofline.bench.host.forced)")
    llvm = _llvm()
    feats = llvm.get_host_cpu_features()
    shape = host_shape(precision)
    missing = [f for f in _host.host_cpu().vector_isa() if not feats.get(f, False)]
    if missing:  # /proc/cpuinfo and LLVM disagree: compile only what LLVM says the silicon runs
        shape = kernel_shape(precision, dict(feats), "x86_64")
    tm = llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=feats.flatten(), opt=3, jit=True)
    mod = _module(llvm, kernel_ir(shape), tm)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    addr = engine.get_function_address("fma_peak")
    fn = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_int64, ctypes.c_double, ctypes.c_double)(addr)
    return shape, fn, (engine, mod)


def compiled_shape(precision: str) -> KernelShape:
    """The shape of the kernel compiled and run here (JIT-compiles it on first use)."""
    return _host_kernel(precision)[0]


def run_fma_peak(precision: str, iters: int, threads: int) -> float:
    """One sample: ``threads`` OS threads each run ``iters`` iterations; returns the seconds it took.

    The FLOPs are ``compiled_shape(precision).flops_per_iteration * iters * threads``.  The seconds are
    from the first thread's start to the last one's end, timed inside the threads after a barrier
    (thread creation and joining are not in it).  Thread t is pinned to the t-th CPU this process
    may use (where the OS allows pinning), so two workers never share a core while another idles.
    """
    _, fn, _ = _host_kernel(precision)
    cpus = ALLOWED_CPUS if len(ALLOWED_CPUS) >= threads else list(range(os.cpu_count() or threads))
    barrier = threading.Barrier(threads)
    spans = [(0.0, 0.0)] * threads

    def work(t: int) -> None:
        if cpus and hasattr(os, "sched_setaffinity"):
            try:
                os.sched_setaffinity(0, {cpus[t % len(cpus)]})  # this thread only (Linux)
            except OSError:
                pass
        barrier.wait()
        t0 = time.perf_counter()
        fn(iters, 0.999, 0.001)
        spans[t] = (t0, time.perf_counter())

    workers = [threading.Thread(target=work, args=(t,), daemon=True) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return max(end for _, end in spans) - min(start for start, _ in spans)
