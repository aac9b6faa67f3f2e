"""The numba kernels behind ``roofline bench`` (imported only when numba is installed).

Every parallel driver splits its array into one contiguous chunk per thread
and repeats the kernel ``reps`` times *inside* the parallel region, as ERT
does: each core keeps its own chunk in its own caches, and the cost of
starting a parallel region is paid once per sample, not once per pass.

The inner loops are separate serial functions over 1-D slices, so LLVM sees
unit-stride loops starting at 0 (no negative-index wraparound) and
vectorises them; ``fastmath`` lets it split the read reduction into several
vector accumulators.  ``cache=True`` keeps the compiled code for reruns.
"""

from __future__ import annotations

import numpy as np
from llvmlite import binding as _llvm
from numba import njit, prange
from numpy.typing import NDArray

#: Block of elements the ERT kernel updates m times while it sits in registers: 16 vector
#: registers' worth of fp64 with AVX-512 (32 registers), 12 with AVX2 (16 registers).
#: (The FMA peak itself is measured by :mod:`roofline.bench.fma`, written in explicit vector IR.)
_AVX512 = bool(_llvm.get_host_cpu_features().get("avx512f", False))
ERT_BLOCK = 128 if _AVX512 else 48

#: FMA chains may only be contracted, never reassociated: with reassociation LLVM
#: folds two steps x*a+b of a chain into one and the FLOP count becomes a lie.
_CONTRACT = {"contract"}

READ, WRITE, COPY, TRIAD = 0, 1, 2, 3
ERT_ADD = 4  # 1 FLOP per element: x = x + beta
ERT_FMA = 5  # 2*m FLOPs per element: m chained FMAs


@njit(fastmath=True, cache=True, inline="never")
def _read(a: NDArray[np.float64], acc: float) -> float:
    # start from the previous result so the pass cannot be hoisted out of the repeat loop
    s = acc
    for i in range(a.size):
        s += a[i]
    return s


@njit(fastmath=True, cache=True, inline="never")
def _write(a: NDArray[np.float64], value: float) -> None:
    for i in range(a.size):
        a[i] = value


@njit(fastmath=True, cache=True, inline="never")
def _copy(a: NDArray[np.float64], b: NDArray[np.float64]) -> None:
    for i in range(a.size):
        a[i] = b[i]


@njit(fastmath=True, cache=True, inline="never")
def _triad(a: NDArray[np.float64], b: NDArray[np.float64], c: NDArray[np.float64], s: float) -> None:
    for i in range(a.size):
        a[i] = b[i] + s * c[i]


@njit(fastmath=True, cache=True, inline="never")
def _ert_add(x: NDArray[np.float64], beta: float) -> None:
    for i in range(x.size):
        x[i] = x[i] + beta


@njit(fastmath=_CONTRACT, cache=True, inline="never")
def _ert_fma(x: NDArray[np.float64], m: int, alpha: float, beta: float) -> None:
    # a block of ERT_BLOCK elements stays in registers for its m FMAs (the fixed
    # inner trip count lets LLVM unroll it and promote the block to registers)
    nblocks = x.size // ERT_BLOCK
    for blk in range(nblocks):
        xb = x[blk * ERT_BLOCK:(blk + 1) * ERT_BLOCK]
        for _ in range(m):
            for j in range(ERT_BLOCK):
                xb[j] = xb[j] * alpha + beta
    tail = x[nblocks * ERT_BLOCK:]
    for j in range(tail.size):
        v = tail[j]
        for _ in range(m):
            v = v * alpha + beta
        tail[j] = v


@njit(parallel=True, fastmath=True, cache=True)
def stream(
    kind: int,
    a: NDArray[np.float64],
    b: NDArray[np.float64],
    c: NDArray[np.float64],
    s: float,
    m: int,
    reps: int,
    nthreads: int,
    out: NDArray[np.float64],
) -> float:
    """Run kernel ``kind`` ``reps`` times over ``a`` (``b``, ``c``), one chunk per thread.

    ``out[t]`` receives thread t's read sum (so the reads are not dead code).
    """
    n = a.size
    chunk = (n + nthreads - 1) // nthreads
    chunk = (chunk + ERT_BLOCK - 1) // ERT_BLOCK * ERT_BLOCK  # whole cache lines per thread
    for t in prange(nthreads):
        lo = min(n, t * chunk)
        hi = min(n, lo + chunk)
        aa = a[lo:hi]
        bb = b[lo:hi]
        cc = c[lo:hi]
        acc = 0.0
        for r in range(reps):
            if kind == READ:
                acc = _read(aa, acc)
            elif kind == WRITE:
                _write(aa, s + r)
            elif kind == COPY:
                _copy(aa, bb)
            elif kind == TRIAD:
                _triad(aa, bb, cc, s)
            elif kind == ERT_ADD:
                _ert_add(aa, s)
            else:
                _ert_fma(aa, m, s, s)
        out[t] = acc
    return out.sum()
