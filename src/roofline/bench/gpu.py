"""Measure the CUDA GPU's roofline with torch: HBM and L2 bandwidth, GEMM per dtype, vector FMA peak.

Timing uses CUDA events around ``inner`` back-to-back launches after a
warm-up; each figure is the median of ``repeats`` samples with its
interquartile range.  Data is random (``torch.randn``, never zeros: some
GPUs draw less power and clock higher on zeros).

- HBM: ``dst.copy_(src)`` on buffers far larger than L2; bytes = read + written.
- L2: the same copy on buffer pairs taking 1/2, 1/4 and 1/8 of L2 (the fastest
  counts), replayed from a CUDA graph so launch overhead does not hide the bandwidth.
- GEMM: ``torch.matmul`` (fp64, fp32 with TF32 off, tf32, bf16, fp16) and
  ``torch._scaled_mm`` (fp8 e4m3, on compute capability >= 8.9); 2*n^3 FLOPs.
- Vector FMA peak: a Triton kernel with independent FMA chains in registers
  (fp32, fp64) when Triton is installed (:mod:`roofline.bench._triton_fma`).
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from roofline.bench import machine
from roofline.core.errors import RooflineError, require
from roofline.core.stats import SPREAD_WARN, quartiles, relative_spread
from roofline.hardware.device import ComputeCeiling, Device, MemoryCeiling, Provenance

Progress = Callable[[float, str], None]


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _stats(samples: list[float]) -> tuple[float, float, float]:
    """Median and quartiles (roofline.core.stats: the one spread definition)."""
    q1, med, q3 = quartiles(samples)
    return med, q1, q3


def time_cuda(torch: Any, fn: Callable[[], Any], *, inner: int = 10, repeats: int = 7, warmup: int = 3,
              graph: bool = False, strict: bool = False) -> list[float]:
    """Seconds per ``fn()`` call, one sample per repeat (CUDA events around ``inner`` calls).

    ``graph=True`` captures the ``inner`` calls in a CUDA graph and times its replay
    (no launch overhead between them); falls back to plain launches when capture fails.
    """
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    run: Callable[[], Any]
    if graph:
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                fn()
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(inner):
                    fn()
            run = g.replay
            run()
        except Exception:  # capture unsupported for this op/driver: plain launches (``strict``: the error)
            if strict:
                raise
            graph = False
    if not graph:
        def run() -> None:
            for _ in range(inner):
                fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        out.append(start.elapsed_time(end) / 1e3 / inner)
    return out


def _prov(date: str, method: str, rates: list[float], details: dict[str, Any], note: str = "") -> tuple[float, Provenance]:
    med, q1, q3 = _stats(rates)
    return med, Provenance(kind="measured", source="roofline bench --gpu", method=method, date=date,
                           repeats=len(rates), spread=(q1, q3), note=note,
                           details={"threads": "every SM", **details, "spread_kind": "interquartile range"})


def run_gpu_bench(*, quick: bool = True, progress: Progress | None = None, device_index: int = 0,
                  copy_bytes: int | None = None, gemm_n: int | None = None, repeats: int | None = None) -> Device:
    """Measure CUDA device ``device_index`` and return a Device (kind ``gpu``).

    >>> from roofline.bench.gpu import run_gpu_bench      # doctest: +SKIP
    >>> run_gpu_bench().memory[0].level                   # doctest: +SKIP
    'HBM'
    """
    torch = require("torch", "torch")
    if not torch.cuda.is_available():
        raise RooflineError("no CUDA device: torch.cuda.is_available() is False; measure the CPU with 'roofline bench'")
    report = progress or (lambda f, w: None)
    dev = torch.device("cuda", device_index)
    with torch.cuda.device(dev):  # the caller's current CUDA device is left as it was
        props = torch.cuda.get_device_properties(dev)
        name = torch.cuda.get_device_name(dev)
        run = _Run(torch, dev, machine.now(), repeats or (7 if quick else 21), quick)
        free, total = torch.cuda.mem_get_info(dev)
        report(0.02, "GPU copy bandwidth")
        memory = [_hbm(run, copy_bytes or int(min(2 * 1024**3, free // 8)), float(total))]
        report(0.15, "GPU L2 bandwidth")
        l2 = int(getattr(props, "L2_cache_size", 0) or 0)
        if l2 > 0:
            memory.append(_l2(run, l2))
        else:
            run.warnings.append("L2 size not reported by torch; L2 bandwidth not measured")
        size = gemm_n or (8192 if quick else 16384)
        cap = torch.cuda.get_device_capability(dev)
        compute = _gemms(run, size, report)
        if cap >= (8, 9) and hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn"):
            report(0.78, "GPU GEMM fp8")
            compute += _fp8_gemm(run, size)
        report(0.85, "GPU vector FMA peak")
        compute += _vector_peaks(run, props)

    warnings = run.warnings
    if not compute:
        raise RooflineError(f"no compute ceiling could be measured on {name}: {'; '.join(warnings)}")
    for c in compute:
        _flag(c.label, c.flops, c.provenance, warnings)
    for m in memory:
        _flag(m.level, m.bandwidth, m.provenance, warnings)
    meta = {"gpu_model": name, "compute_capability": f"{cap[0]}.{cap[1]}", "sm_count": props.multi_processor_count,
            "memory_bytes": total, "l2_bytes": l2, "date": run.date, "mode": "quick" if quick else "full",
            "versions": machine.versions(), "cuda": torch.version.cuda, "host_cpu": machine.cpu_model(),
            "warnings": warnings}
    report(1.0, "done")
    from roofline.hardware.bench_facts import BENCH_VERSION, BenchFacts

    facts = BenchFacts(version=BENCH_VERSION, machine=machine.fingerprint(f"gpu {name}"))
    return Device(name=f"local: {name}", vendor="NVIDIA" if "nvidia" in name.lower() else "", kind="gpu",
                  aliases=("local",), compute=tuple(compute), memory=tuple(memory), metadata=meta, bench=facts)


@dataclass
class _Run:
    """What every GPU measurement shares: torch, the device, the date, samples per figure, the mode, warnings."""

    torch: Any
    dev: Any
    date: str
    reps: int
    quick: bool
    warnings: list[str] = field(default_factory=list)


def _hbm(run: _Run, nbytes: int, capacity: float) -> MemoryCeiling:
    """HBM: device-to-device copy of ``nbytes``, bytes read + written."""
    torch = run.torch
    n = nbytes // 4
    src = torch.randn(n, device=run.dev)
    dst = torch.empty_like(src)
    secs = time_cuda(torch, lambda: dst.copy_(src), inner=5 if run.quick else 20, repeats=run.reps)
    bw, prov = _prov(run.date, "torch copy_ (device to device)", [2 * n * 4 / s for s in secs],
                     {"buffer_bytes": n * 4, "working_set_bytes": 2 * n * 4, "bytes_counted": "read + written"})
    return MemoryCeiling("HBM", bw, capacity, prov)


def _l2(run: _Run, l2: int) -> MemoryCeiling:
    """L2: copy on an L2-resident pair of buffers, replayed from a CUDA graph.

    Ampere/Hopper split L2 into two partitions and may keep a line in both, so less than the nominal
    size stays resident; smaller copies lose more to launch gaps.  Pairs of fp32 buffers together
    1/2, 1/4, 1/8 of L2: the fastest counts.
    """
    torch = run.torch
    runs: list[tuple[float, int, list[float]]] = []  # (median rate, elements per buffer, rates)
    for frac in (2, 4, 8):
        n = max(1024, l2 // frac // 8)  # two buffers of n fp32: l2/frac bytes together
        src = torch.randn(n, device=run.dev)
        dst = torch.empty_like(src)
        secs = time_cuda(torch, functools.partial(dst.copy_, src), inner=200, repeats=run.reps, graph=True)
        del src, dst
        rates = [2 * n * 4 / s for s in secs]
        runs.append((statistics.median(rates), n, rates))
    _, n, rates = max(runs)
    bw, prov = _prov(run.date, "torch copy_ on an L2-resident pair, CUDA graph replay", rates,
                     {"buffer_bytes": n * 4, "working_set_bytes": 2 * n * 4, "l2_bytes": l2,
                      "bytes_counted": "read + written",
                      "per_size": [{"working_set_bytes": 2 * m * 4, "bandwidth": r} for r, m, _ in runs]})
    return MemoryCeiling("L2", bw, float(l2), prov)


def _gemms(run: _Run, size: int, report: Progress) -> list[ComputeCeiling]:
    """``torch.matmul`` per dtype (fp64 at half the size; fp32 with TF32 off, then tf32), 2*n^3 FLOPs."""
    torch = run.torch
    jobs = [("fp64", torch.float64, False), ("fp32", torch.float32, False), ("tf32", torch.float32, True),
            ("bf16", torch.bfloat16, False), ("fp16", torch.float16, False)]
    compute: list[ComputeCeiling] = []
    old_tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        for i, (prec, dtype, tf32) in enumerate(jobs):
            report(0.25 + 0.5 * i / (len(jobs) + 1), f"GPU GEMM {prec}")
            torch.backends.cuda.matmul.allow_tf32 = tf32
            nn = size // 2 if prec == "fp64" else size
            a = torch.randn(nn, nn, device=run.dev, dtype=torch.float32).to(dtype)
            b = torch.randn(nn, nn, device=run.dev, dtype=torch.float32).to(dtype)
            try:
                secs = time_cuda(torch, functools.partial(torch.matmul, a, b), inner=3 if run.quick else 10,
                                 repeats=run.reps)
            except RuntimeError as exc:  # e.g. a dtype without a kernel on this GPU
                run.warnings.append(f"{prec} GEMM not measured: {str(exc).splitlines()[0]}")
                continue
            finally:
                del a, b
            flops, prov = _prov(run.date, f"torch.matmul {prec}", [2.0 * nn**3 / s for s in secs],
                                {"n": nn, "sizes": [nn],
                                 "working_set_bytes": 3 * nn * nn * torch.tensor([], dtype=dtype).element_size()},
                                note="dense GEMM on random data; 2*n^3 FLOPs")
            compute.append(ComputeCeiling("matrix", prec, flops, prov))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old_tf32
    return compute


def _fp8_gemm(run: _Run, size: int) -> list[ComputeCeiling]:
    """``torch._scaled_mm`` fp8 e4m3 -> bf16 (compute capability >= 8.9); none, with a warning, if it fails."""
    torch = run.torch
    try:
        a = torch.randn(size, size, device=run.dev).to(torch.float8_e4m3fn)
        b = torch.randn(size, size, device=run.dev).to(torch.float8_e4m3fn).t()  # column-major second operand
        one = torch.tensor(1.0, device=run.dev)
        secs = time_cuda(torch, lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                         inner=3 if run.quick else 10, repeats=run.reps)
        flops, prov = _prov(run.date, "torch._scaled_mm fp8 e4m3 -> bf16", [2.0 * size**3 / s for s in secs],
                            {"n": size, "sizes": [size], "working_set_bytes": 2 * size * size + 2 * size * size},
                            note="dense GEMM on random data; 2*n^3 FLOPs")
        return [ComputeCeiling("matrix", "fp8", flops, prov)]  # a and b are freed on return
    except Exception as exc:  # private API: its signature has changed between torch releases
        run.warnings.append(f"fp8 GEMM not measured: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
        return []


def _vector_peaks(run: _Run, props: Any) -> list[ComputeCeiling]:
    """The Triton FMA kernel in fp32 and fp64; none, with a warning, without Triton or when it fails."""
    torch = run.torch
    compute: list[ComputeCeiling] = []
    try:
        for prec, dtype in (("fp32", torch.float32), ("fp64", torch.float64)):
            flops, prov = _fma_peak(torch, run.dev, dtype, props, run.date, run.reps, run.quick)
            compute.append(ComputeCeiling("vector", prec, flops, prov))
    except ImportError:
        run.warnings.append("vector FMA peak not measured: install triton")
    except Exception as exc:
        run.warnings.append(f"vector FMA peak not measured: {type(exc).__name__}: "
                            f"{str(exc).splitlines()[0] if str(exc) else ''}")
    return compute


def _flag(what: str, value: float, prov: Provenance, warnings: list[str]) -> None:
    if prov.spread and relative_spread(*prov.spread, value) > SPREAD_WARN:
        warnings.append(f"{what}: spread {relative_spread(*prov.spread, value):.0%} of the median "
                        f"(> {SPREAD_WARN:.0%})")


def _fma_peak(torch: Any, dev: Any, dtype: Any, props: Any, date: str, reps: int, quick: bool) -> tuple[float, Provenance]:
    """Triton: each element runs 4 independent chains of ``iters`` FMAs in registers (ImportError without Triton)."""
    from roofline.bench._triton_fma import CHAINS, fma_kernel

    block = 1024
    nblocks = props.multi_processor_count * 16
    x = torch.rand(nblocks * block, device=dev, dtype=dtype) + 0.5
    iters = 4096 if quick else 16384
    secs = time_cuda(torch, lambda: fma_kernel[(nblocks,)](x, iters, BLOCK=block), inner=3, repeats=reps)
    flops_per_call = 2.0 * CHAINS * iters * nblocks * block
    prec = "fp32" if dtype == torch.float32 else "fp64"
    return _prov(date, f"Triton FMA chains ({prec})", [flops_per_call / s for s in secs],
                 {"chains_per_element": CHAINS, "iters": iters, "elements": nblocks * block,
                  "threads": f"{nblocks} blocks of {block} elements",
                  "working_set_bytes": nblocks * block * x.element_size()},
                 note="4 independent FMA chains per element in registers; 1 FMA = 2 FLOPs")
