"""The grouped expert GEMM's efficiency, from cited kernel tables (:mod:`roofline.catalog.kernels`).

An op whose ``module_type`` is :data:`GROUPED_GEMM` is one grouped GEMM of a MoE layer: ``batch`` groups (experts),
``m`` rows in its slowest group, ``n`` x ``k`` weights per group; its FLOPs count every group's rows.  Its time is

    work = max(FLOPs / (peak x e x balance), memory time)

* ``e``: the measured throughput of the same kernel at the nearest shape over the device's peak roof at the
  table's precision, from ``deepgemm-grouped`` (DeepGEMM's grouped FP8 GEMMs, contiguous and masked layouts) and,
  below its smallest M per group, the ``deepgemm-normal`` rows of the same N and K (one group).  The rule:

  1. the table's (N, K) nearest to the op's in log distance ``hypot(ln(N/N'), ln(K/K'))``;
  2. at that shape, linear interpolation of ``e`` in ``ln M`` between the measured M per group, grouped rows
     before normal ones at the same M, the mean where several rows share an M; held constant beyond the
     smallest and largest M (the op is flagged outside when more than 2x beyond);
  3. the number of groups is not an axis: the data hold ``groups x M`` fixed per layout and show no effect of the
     split (contiguous 4 x 8,192 and 8 x 4,096 rows give the same TFLOPS at both shapes).

  It applies only on the device the table was measured for (or declared equal to) and at its precision; other
  ops keep the forecast's own matmul curve, and the forecast says so.
* ``balance``: mean rows per group over the slowest group's, ``FLOPs / (2 n k batch m)``: 1 under a balanced
  load, below it under ``--moe-load expected-max`` (more time, the same FLOPs).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from roofline.catalog.kernels import kernel_table

GROUPED_GEMM = "grouped_gemm"
GROUPED_TABLE, NORMAL_TABLE = "deepgemm-grouped", "deepgemm-normal"
#: the precision the DeepGEMM tables measure (FP8 e4m3 with fine-grained scaling)
TABLE_PRECISION = "fp8"


@lru_cache(maxsize=4)
def shape_points(table: str = GROUPED_TABLE, normal: str = NORMAL_TABLE) -> dict[tuple[float, float], tuple[
        tuple[float, ...], tuple[float, ...]]]:
    """(N, K) -> (M per group, TFLOPS) of the cited rows, rule 2 of the module docs (M ascending)."""
    grouped: dict[tuple[float, float], dict[float, list[float]]] = {}
    for r in kernel_table(table).records():
        grouped.setdefault((float(r["n"]), float(r["k"])), {}).setdefault(float(r["m_per_group"]), []).append(
            float(r["tflops"]))
    for r in kernel_table(normal).records():
        shape = (float(r["n"]), float(r["k"]))
        if shape in grouped and float(r["m"]) < min(grouped[shape]):
            grouped[shape].setdefault(float(r["m"]), []).append(float(r["tflops"]))
    return {s: (tuple(sorted(ms)), tuple(float(np.mean(ms[m])) for m in sorted(ms))) for s, ms in grouped.items()}


def nearest_shape(n: float, k: float, shapes: Any) -> tuple[float, float]:
    """The (N, K) of ``shapes`` nearest to ``(n, k)`` in log distance (rule 1)."""
    return min(shapes, key=lambda s: (math.hypot(math.log(n / s[0]), math.log(k / s[1])), s))


def table_device() -> str:
    """The catalog device the grouped table applies to."""
    return kernel_table(GROUPED_TABLE).device


def grouped_efficiency(m: np.ndarray, n: np.ndarray, k: np.ndarray, peak_flops: float
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(e, outside) per op: the cited throughput at the op's shape (rules 1-2) over ``peak_flops``.

    >>> e, out = grouped_efficiency(np.array([4096.0]), np.array([4096.0]), np.array([7168.0]), 1978.9e12)
    >>> round(float(e[0]) * 1978.9, 1), bool(out[0])  # the contiguous row: 1,346 TFLOPS
    (1346.0, False)
    """
    points = shape_points()
    e, outside = np.ones(len(m)), np.zeros(len(m), dtype=bool)
    for i, (mi, ni, ki) in enumerate(zip(m, n, k, strict=True)):
        ms, tf = points[nearest_shape(float(ni), float(ki), points)]
        x = math.log(max(float(mi), 1.0))
        e[i] = float(np.interp(x, np.log(ms), tf)) * 1e12 / peak_flops
        outside[i] = mi < ms[0] / 2 or mi > 2 * ms[-1]
    return e, outside


def citation() -> str:
    """Where the grouped efficiencies come from."""
    return kernel_table(GROUPED_TABLE).citation


def apply_grouped(w: Any, dev: Any, compute_time: np.ndarray, memory_time: np.ndarray, roof: np.ndarray,
                  term: np.ndarray, efficiency: np.ndarray, outside: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The forecast's efficiencies with the grouped expert GEMMs' replaced (module docs): ``compute_time`` on the
    peak roof, ``memory_time`` on the achievable one, ``efficiency`` the forecast's own (its memory curve kept for
    memory-bound groups); the efficiency returned makes ``roof / efficiency`` the grouped work."""
    c = w.columns
    shaped = np.isfinite(np.asarray(c["m"], dtype=float)) & np.isfinite(np.asarray(c["batch"], dtype=float))
    sel = (np.asarray(w.column("module_type")) == GROUPED_GEMM) & (roof > 0) & shaped  # no shape: the matmul's
    if not sel.any():
        return efficiency, outside, []
    m, n, k, g = (np.asarray(c[x], dtype=float)[sel] for x in ("m", "n", "k", "batch"))
    with np.errstate(divide="ignore", invalid="ignore"):
        balance = np.where(m * g > 0, np.asarray(c["flops"], dtype=float)[sel] / (2 * n * k * g * m), 1.0)
    balance = np.clip(np.nan_to_num(balance, nan=1.0), 0.0, 1.0)
    prec = np.asarray(w.column("precision"))[sel]
    ceiling = dev.ceiling("matrix", TABLE_PRECISION)
    cited = (dev.name == table_device()) & (prec == TABLE_PRECISION) & (ceiling is not None)
    e_cur = efficiency[sel]
    e = np.where(cited, 1.0, e_cur)  # where no table: the forecast's own matmul efficiency
    out = outside[sel].copy()
    if cited.any() and ceiling is not None:
        e_tab, o_tab = grouped_efficiency(m[cited], n[cited], k[cited], ceiling.flops)
        e[cited], out[cited] = e_tab, o_tab
    t_comp = np.where(cited, compute_time[sel] / (e * balance),
                      np.where(term[sel] == "compute", roof[sel] / (e_cur * balance), 0.0))
    t_mem = np.where(term[sel] == "memory", roof[sel] / e_cur, memory_time[sel])
    work = np.maximum(t_comp, t_mem)
    eff, outs = efficiency.copy(), outside.copy()
    eff[sel] = np.where(work > 0, roof[sel] / np.where(work > 0, work, 1.0), e_cur)
    outs[sel] = out
    notes = []
    if cited.any():
        notes.append(f"grouped expert GEMMs ({int(cited.sum())} op(s)): efficiency of the grouped kernel at their "
                     f"M per group, N, K from {citation()} (nearest N, K; log-interpolated in M)")
    if (~cited).any():
        where = sorted({str(p) for p in prec[~cited]})
        notes.append(f"no cited grouped-GEMM kernel table for {dev.name} at {', '.join(where)} (DeepGEMM's is "
                     f"{TABLE_PRECISION} on {table_device()}): {int((~cited).sum())} grouped expert GEMM(s) take "
                     "the matmul efficiency of the forecast")
    if (balance < 1 - 1e-9).any():
        notes.append("grouped expert GEMMs run at their slowest group's rows (whole rows; under moe-load "
                     "expected-max the expected most loaded expert's): compute time up to x"
                     f"{1 / float(balance.min()):.2f} over the mean rows, the same FLOPs")
    return eff, outs, notes
