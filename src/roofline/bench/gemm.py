"""The CPU bench's GEMMs: which are timed on a CPU with given native precisions, and timing them.

numpy's BLAS fp64/fp32 as ``A @ B`` and ``x @ W.T`` (the nn.Linear layout), torch fp32 ``linear``, and
torch bf16/fp16 in both layouts only where the CPU computes them natively (:func:`gemm_plan`), over
growing sizes; each GEMM's best is a method of its precision's roofs (:mod:`roofline.bench.cpu`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from roofline.bench import machine
from roofline.bench.sampling import BenchConfig, Progress, Stat, measure_rate, timeit


def gemm_plan(native: tuple[str, ...], torch_gemm: bool, torch_available: bool) -> tuple[tuple[str, str, str], ...]:
    """(precision, library, layout) of every GEMM the bench times on a CPU with ``native`` precisions.

    numpy's BLAS fp64/fp32 in both layouts always; with torch GEMMs on (``torch_gemm``) and torch
    importable, torch fp32 ``linear`` and torch bf16/fp16 in both layouts for the native ones.  A
    precision roof exists only where one of its GEMMs is timed.

    >>> [p for p, lib, _ in gemm_plan(("fp64", "fp32", "bf16"), True, True) if lib == "torch"]
    ['fp32', 'bf16', 'bf16']
    >>> sorted({p for p, _, _ in gemm_plan(("fp64", "fp32", "bf16"), False, True)})  # torch GEMMs off: no bf16 roof
    ['fp32', 'fp64']
    """
    jobs = [(p, "numpy", layout) for p in ("fp64", "fp32") for layout in ("A@B", "x@W.T")]
    if torch_gemm and torch_available:
        jobs.append(("fp32", "torch", "x@W.T"))
        jobs += [(p, "torch", layout) for p in ("bf16", "fp16") if p in native for layout in ("A@B", "x@W.T")]
    return tuple(jobs)


def unmeasured_native_warnings(native: tuple[str, ...], jobs: tuple[tuple[str, str, str], ...],
                               torch_gemm: bool) -> list[str]:
    """A warning for each native 16-bit precision that ``jobs`` times no GEMM of (so it gets no roof)."""
    timed = {p for p, _, _ in jobs}
    missing = [p for p in ("bf16", "fp16") if p in native and p not in timed]
    if not missing:
        return []
    why = "torch GEMMs are off" if not torch_gemm else "torch is not installed (pip install 'roofline[torch]')"
    return [f"{'/'.join(missing)} is native on this CPU but no {'/'.join(missing)} GEMM was measured ({why}): "
            "no such roof is published, so those ops fall back to the fp32 roofs (recorded on each op)"]


def time_gemms(cfg: BenchConfig, threads: int, native: tuple[str, ...], warnings: list[str],
           report: Progress) -> dict[tuple[str, str], tuple[Stat, dict[str, Any], str]]:
    """The best GEMM per (precision, library and layout) over growing sizes.

    numpy's BLAS fp64/fp32 as ``A @ B`` and ``x @ W.T``; torch fp32 ``linear``; torch bf16/fp16
    (``matmul`` and ``linear``) only in ``native`` precisions.
    """
    out: dict[tuple[str, str], tuple[Stat, dict[str, Any], str]] = {}
    rng = np.random.default_rng(7)
    limiter, blas_threads = blas_limiter(threads)
    if blas_threads is None:
        warnings.append("BLAS thread count not controlled (install threadpoolctl); GEMM used the library default")
    blas = machine.blas_info()
    torch: ModuleType | None = None
    if cfg.torch_gemm:
        try:
            import torch as _torch
        except ImportError:
            pass
        else:
            torch = _torch
    jobs = gemm_plan(native, cfg.torch_gemm, torch is not None)
    warnings += unmeasured_native_warnings(native, jobs, cfg.torch_gemm)
    for j, (prec, lib, layout) in enumerate(jobs):
        report(j / len(jobs), f"GEMM {prec} {lib} {layout}")
        per_size: list[dict[str, Any]] = []
        best: Stat | None = None
        best_n = 0
        walk = sorted({n for n in (256, 512, *cfg.gemm_sizes) if n <= max(cfg.gemm_sizes)})
        for idx, n in enumerate(walk):
            call = gemm_call(lib, prec, layout, n, rng, limiter, threads)
            call(1)  # warm-up (thread pools, JIT kernels)
            t_one = min(timeit(functools.partial(call, 1)) for _ in range(3))
            stat, _ = measure_rate(call, 2.0 * n**3, max(3, cfg.repeats // 2 + 1), cfg.min_sample_seconds)
            per_size.append({"n": n, "flops": stat.median, "best": stat.best})
            if best is None or stat.best > best.best:
                best, best_n = stat, n
            # grow while the next size's call stays under the limit: some precisions have no fast path
            # on some CPUs (torch fp16 GEMM without AVX512-FP16 runs at ~1 GFLOP/s)
            if idx + 1 < len(walk) and t_one * (walk[idx + 1] / n) ** 3 > cfg.gemm_call_limit_seconds:
                break
        assert best is not None
        size = {"fp64": 8, "fp32": 4}.get(prec, 2)
        details: dict[str, Any] = {"threads": threads if lib == "torch" or blas_threads else "library default",
                                   "layout": layout, "sizes": [r["n"] for r in per_size], "per_size": per_size,
                                   "best_n": best_n, "working_set_bytes": 3 * best_n * best_n * size}
        if lib == "numpy":
            details["blas"] = blas
            method = f"numpy.matmul {layout} ({blas.get('name', 'BLAS')} {blas.get('version', '')})".replace(" )", ")")
        else:
            details["torch"] = getattr(torch, "__version__", "")
            method = f"torch {'linear' if layout == 'x@W.T' else 'matmul'} {prec} on CPU"
        out[(prec, f"{lib} {layout}")] = (best, details, f"{method}, n={best_n}")
    report(1.0, "GEMM done")
    return out


def gemm_call(lib: str, prec: str, layout: str, n: int, rng: np.random.Generator, limiter: Callable[[], Any],
               threads: int) -> Callable[[int], None]:
    """``call(reps)`` running an n x n x n GEMM ``reps`` times in ``layout``."""
    if lib == "numpy":
        dtype = np.float64 if prec == "fp64" else np.float32
        a = rng.standard_normal((n, n)).astype(dtype)
        b = rng.standard_normal((n, n)).astype(dtype)
        c = np.empty((n, n), dtype=dtype)
        bb = b.T if layout == "x@W.T" else b

        def call(reps: int) -> None:
            with limiter():
                for _ in range(reps):
                    np.matmul(a, bb, out=c)
        return call
    import torch

    tdtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[prec]
    ta = torch.randn(n, n).to(tdtype)
    tb = torch.randn(n, n).to(tdtype)
    op = torch.nn.functional.linear if layout == "x@W.T" else torch.matmul

    def tcall(reps: int) -> None:
        with torch_threads(threads):
            for _ in range(reps):
                op(ta, tb)
    return tcall


class torch_threads:
    """torch's intra-op threads set to ``threads`` for a block, then restored (a no-op without torch)."""

    def __init__(self, threads: int) -> None:
        self.threads, self.old = threads, None

    def __enter__(self) -> None:
        import sys

        torch = sys.modules.get("torch")
        if torch is not None:
            self.old = torch.get_num_threads()
            torch.set_num_threads(self.threads)

    def __exit__(self, *exc: object) -> None:
        import sys

        torch = sys.modules.get("torch")
        if torch is not None and self.old is not None:
            torch.set_num_threads(self.old)


def blas_limiter(threads: int) -> tuple[Callable[[], Any], int | None]:
    """A context-manager factory limiting BLAS threads (threadpoolctl), or a no-op."""
    import contextlib

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext, None
    return (lambda: threadpool_limits(limits=threads, user_api="blas")), threads
