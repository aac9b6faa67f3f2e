"""Tile and wave quantization: how much of the matrix roof a GEMM of a given shape can use, from first principles.

NVIDIA's *Matrix Multiplication Background User's Guide* (DU-09799-001, "Dimension Quantization Effects",
https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/index.html) describes
how cuBLAS runs ``C[m, n] = A[m, k] @ B[k, n]``: the output is split into thread-block tiles of ``Tm x Tn``,
one tile per SM at a time, and the tiles run in *waves* of as many tiles as the GPU has SMs.  Two losses
follow from the shape alone:

* **tile quantization**: ``ceil(m / Tm) * ceil(n / Tn)`` tiles are computed in full even where the matrix
  edge covers only part of one;
* **wave quantization**: ``ceil(tiles / SMs)`` waves run, the last one possibly part-empty.

The guide names the tile sizes cuBLAS picks from, most to least efficient: 256x128 and 128x256, 128x128,
256x64 and 64x256, 128x64 and 64x128, 64x64 (:data:`TILES`).  The fraction of the matrix roof a shape can use
is then, for the best tile (:func:`quantization`)::

    useful   = batch * m * n                                   (output elements wanted)
    computed = waves * SMs * Tm * Tn                           (tile slots the waves occupy)
    q(tile)  = useful / computed                               q = max over the guide's tiles (ties: the larger tile)

The guide says larger tiles re-use each operand element over more outputs and so run more efficiently, but gives
no figure for it; no factor for it is applied here (an earlier version scored it as ``Tm*Tn / (Tm + Tn)``
relative to 256x128, an uncited choice): what a small tile loses below the roof belongs to the cited
efficiency curves.

``q`` scales the achievable compute roof before any efficiency curve; it is 1 for a GEMM whose sides are
multiples of 256 x 128 filling whole waves.  Attention (FlashAttention-style kernels) splits the queries
of each (sequence, head) into blocks of :data:`ATTENTION_BLOCK` rows, one thread block each, over the SMs
(:func:`attention_quantization`): the same tile and wave losses along the sequence.

The guide's wave example, by hand: an A100 (108 SMs) with 256x128 tiles and a 1792 x 1792 output has
``7 * 14 = 98`` tiles, one wave of 108 slots: 98/108 of the SMs busy.

>>> import numpy as np
>>> q, tile = quantization(np.array([1792.0]), np.array([1792.0]), np.array([1.0]), 108)
>>> round(float(q[0]), 4), TILES[int(tile[0])]   # 1792^2 / (1 wave x 108 x 256 x 128)
(0.9074, (256, 128))
"""

from __future__ import annotations

import math

import numpy as np

#: The thread-block tile sizes (Tm, Tn) the guide lists for cuBLAS, most efficient first.
TILES: tuple[tuple[int, int], ...] = ((256, 128), (128, 256), (128, 128), (256, 64), (64, 256), (128, 64),
                                      (64, 128), (64, 64))
#: Query rows per thread block of a FlashAttention-style forward kernel (FlashAttention-2 and -3 use
#: 128-row query blocks for head dims up to 128: Dao, "FlashAttention-2", 2023, section 3.3; Shah et al.,
#: "FlashAttention-3", 2024, section 4).
ATTENTION_BLOCK = 128


#: Thinner products than this (the smallest tile side of :data:`TILES`) are matrix-vector or skinny products, run by
#: kernels that split K or the long side over the SMs (GEMV, split-K, flash-decoding), which the guide's tiled model
#: does not describe: :func:`op_quantization` leaves them at q = 1 (they are memory-bound anyway).
SKINNY = 64


def waves(tiles: np.ndarray, sms: int) -> np.ndarray:
    """Waves of ``sms`` tiles each that ``tiles`` tiles take (the last one possibly part-empty)."""
    return np.ceil(np.asarray(tiles, dtype=float) / sms)


def quantization(m: np.ndarray, n: np.ndarray, batch: np.ndarray, sms: int) -> tuple[np.ndarray, np.ndarray]:
    """(q, best tile index into :data:`TILES`) per GEMM of ``batch`` products of ``m x n`` outputs on ``sms`` SMs.

    ``q`` in (0, 1] is the fraction of the matrix roof the shape can use (module docs); a GEMM with a zero
    dimension does no work and gets q = 1.  K does not enter: it sets how long each tile runs, not how
    many tiles there are.
    """
    if sms < 1:
        raise ValueError(f"sms must be >= 1, got {sms!r}")
    m, n, batch = (np.maximum(np.asarray(x, dtype=float), 0.0) for x in (m, n, batch))
    useful = batch * m * n
    best = np.zeros(useful.shape)
    which = np.zeros(useful.shape, dtype=np.int64)
    for i, (tm, tn) in enumerate(TILES):
        tiles = batch * np.ceil(m / tm) * np.ceil(n / tn)
        computed = waves(tiles, sms) * sms * tm * tn
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(computed > 0, useful / computed, 0.0)
        better = q > best + 1e-12  # ties keep the earlier (larger, more efficient) tile
        best = np.where(better, q, best)
        which = np.where(better, i, which)
    return np.where(useful > 0, best, 1.0), which


def attention_quantization(queries: np.ndarray, heads_x_seqs: np.ndarray, sms: int,
                           block: int = ATTENTION_BLOCK) -> np.ndarray:
    """Fraction of the matrix roof a FlashAttention-style forward kernel can use: ``heads_x_seqs * ceil(queries /
    block)`` thread blocks in waves over ``sms`` SMs, each computing ``block`` query rows.

    >>> float(attention_quantization(np.array([128.0]), np.array([32.0]), 108)[0])  # 32 blocks, 1 wave of 108
    0.2962962962962963
    """
    q, hs = np.asarray(queries, dtype=float), np.asarray(heads_x_seqs, dtype=float)
    blocks = hs * np.ceil(q / block)
    computed = waves(blocks, sms) * sms * block
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(computed > 0, hs * q / computed, 1.0)
    return np.clip(out, 0.0, 1.0)


def matmul_dims(out_shape: tuple[int, ...], k: float) -> tuple[float, float, float, float]:
    """(m, n, k, batch) of a matmul with output ``out_shape`` (``[..., m, n]``; a vector output is ``n`` with
    m = 1) and contraction length ``k``: every leading dimension is batch.

    >>> matmul_dims((8, 128, 4096), 4096)
    (128.0, 4096.0, 4096.0, 8.0)
    """
    shape = tuple(int(x) for x in out_shape)
    if not shape:
        return 1.0, 1.0, float(k), 1.0
    if len(shape) == 1:
        return 1.0, float(shape[0]), float(k), 1.0
    return float(shape[-2]), float(shape[-1]), float(k), float(math.prod(shape[:-2]))


def dims_from_flops(flops: float, out_shape: tuple[int, ...]) -> dict[str, float] | None:
    """``{m, n, k, batch}`` of a matmul from its output shape and FLOPs (``2 x numel(out) x K``, the matmul
    formula of :mod:`roofline.work.costs`); None where K comes out fractional or below 1 (a bias counted in the
    FLOPs, a 2-D grouped matmul, a user formula): the shape is then not known.

    >>> dims_from_flops(2 * 8 * 32 * 64, (8, 32))
    {'m': 8.0, 'n': 32.0, 'k': 64.0, 'batch': 1.0}
    >>> dims_from_flops(2 * 8 * 32 * 64 + 8 * 32, (8, 32)) is None   # a bias add in the FLOPs
    True
    """
    m, n, _, batch = matmul_dims(tuple(out_shape), 0)
    if flops <= 0 or m * n * batch <= 0:
        return None
    k = flops / (2 * m * n * batch)
    if not (k >= 1 and k == round(k)):
        return None
    return {"m": m, "n": n, "k": float(k), "batch": batch}


def op_quantization(kind: np.ndarray, m: np.ndarray, n: np.ndarray, batch: np.ndarray, sms: int) -> np.ndarray:
    """q per op: :func:`quantization` for ``matmul`` ops, :func:`attention_quantization` for ``attention`` ops
    (``m`` queries, ``batch`` sequences x heads), 1 for every other op, for ops whose dimensions are not known
    (NaN) and for products thinner than :data:`SKINNY`.

    >>> op_quantization(np.array(["matmul", "matmul", "norm"]), np.array([1792.0, 1.0, 8.0]),
    ...                 np.array([1792.0, 4096.0, 8.0]), np.array([1.0, 1.0, 1.0]), 108).round(4).tolist()
    [0.9074, 1.0, 1.0]
    """
    kind = np.asarray(kind)
    m, n, batch = (np.asarray(x, dtype=float) for x in (m, n, batch))
    known = np.isfinite(m) & np.isfinite(n) & np.isfinite(batch)
    out = np.ones(len(kind))
    gemm = (kind == "matmul") & known & (np.minimum(m, n) >= SKINNY)
    if gemm.any():
        out[gemm] = quantization(m[gemm], n[gemm], batch[gemm], sms)[0]
    attn = (kind == "attention") & known & (m >= SKINNY)
    if attn.any():
        out[attn] = attention_quantization(m[attn], batch[attn], sms)
    return out
