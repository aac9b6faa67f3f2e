"""The forecast of one device's shard of a training step, op by op, from the forecast machinery.

A shard (heads and widths / tp, tokens / cp, experts / ep, one micro-batch) is a :class:`~roofline.Workload`
of its forward ops with their GEMM shapes (``m, n, k, batch``: :func:`roofline.llm.model.gemm_dims`) and of
their backward ops, analysed on the device with ``forecast=True`` (:mod:`roofline.engine.forecast`: achievable roofs,
tile and wave quantization over the device's SMs, the cited efficiency curves, the launch floor per kernel).
So a GEMM cut 1/8 wide pays the quantization of its own shape, and every kernel its launch.

Backward, per forward GEMM ``Y[m, n] = X[m, k] W[k, n]``: two GEMMs of its FLOPs each, the input gradient
``dX[m, k] = dY[m, n] W^T`` (an ``m x k`` output over ``n``) and the weight gradient ``dW[k, n] = X^T dY``
(a ``k x n`` output over ``m``); every other op (attention, norms, activations) runs backward as one op of
twice its forward FLOPs and bytes at the forward's shape (FlashAttention's backward recomputes the scores
and writes dQ, dK, dV).  This is the LLM model's ``backward = 2 x forward`` (:data:`~roofline.llm.training.BACKWARD`)
with each GEMM's two backward shapes made explicit (a grouped expert GEMM's two at its forward's groups and rows).  A fused attention's backward runs at
:func:`flash_backward_rate` of its forward's FLOP rate: the device's cited ``attention-backward`` curve by keys and
head dim (the FlashAttention papers' figures), else :data:`FLASH_BACKWARD_RATE`.

What the framework adds to a micro-batch (:class:`~roofline.llm.training.TrainingRun`): each weight gradient
accumulated into the gradient buffer (a pass of its own, or inside the weight-gradient GEMM when fused:
:func:`~roofline.llm.training.grad_accumulation_bytes`), and the loss's cross-entropy passes over the logits
(:data:`~roofline.llm.training.CROSS_ENTROPY_BYTES`), forward and backward.

Sustained clocks: a training step keeps the GPU at its power limit, where the SM clock settles below the boost clock
that short kernel benchmarks run at (the catalog's achievable roofs, its cited GEMM and attention tables), so every
compute-bound tensor-core op of the shard (GEMMs, attention) runs at :func:`sustained_rate` of its benchmarked rate:
the device's cited ``training-sustained`` table (sustained / burst matmul FLOP/s, Stas Bekman's MSMF / MAMF), 1
without one.  Memory-bound ops keep their rate: the HBM clock is not the SM clock.

Collectives: each call's node-tier (NVLink) bound time over the NCCL efficiency curve of the device's calibration
at its message bytes (``collective``, ``interconnect``), where the device has one; the cluster tier's parts and
point-to-point sends at their bound (the curves are NVLink collective measurements;
:meth:`~roofline.planner.cache.Cache.collective_forecast`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.hardware.calibration_curves import TabulatedCurve, by_head_dim
from roofline.llm.basis import basis
from roofline.llm.model import gemm_dims
from roofline.llm.recompute import module_masks
from roofline.llm.table import EXP, GEMM_DIMS, GROUPED_DIMS, LINK, VEC
from roofline.llm.training import (
    BACKWARD,
    CROSS_ENTROPY_BYTES,
    TrainingRun,
    cast_ops,
    forward_ops,
    grad_accumulation_bytes,
    row_params,
    split_queries,
    step_role_columns,
    table_masks,
)
from roofline.planner.overlap import CONTENTION_SMS
from roofline.work.workload import WorkloadBuilder

#: The planner's stated forecast error (relative, either way): the band of forecast / measured step time its
#: training benchmark holds the median to (``benchmarks/bench_published.py``, training part: [0.9, 1.1]).
#: Layouts whose forecasts differ by less than it are ties: the model cannot tell them apart.
STATED_ERROR = 0.10


#: A fused attention's backward runs at this share of its forward's FLOP rate on a device whose calibration has no
#: ``attention-backward`` curve (:func:`flash_backward_rate`; a user's calibration, a device without cited figures).  Shah et al. 2024, FlashAttention-3 (arXiv 2407.08608), the H100 SXM5 head-dim-128
#: forward and backward speed figures, backward / forward TFLOP/s of FlashAttention-2, cuDNN and FlashAttention-3
#: at 2k, 4k and 16k tokens: 291/362, 465/617, 501/625; 310/368, 499/609, 542/638; 322/370, 516/595, 561/648 =
#: 0.80, 0.75, 0.80; 0.84, 0.82, 0.85; 0.87, 0.87, 0.87: the median, 0.84 (values as labelled on the figures'
#: bars).  The backward's extra work (recomputing the scores, five GEMM-like products against the forward's two,
#: dQ accumulated across key blocks) is why; its FLOPs are counted as 2x the forward's.
FLASH_BACKWARD_RATE = 0.84
#: The FLOPs the published fused-attention benchmarks count for a backward, as a multiple of the forward's: 2.5
#: (Dao-AILab/flash-attention ``benchmarks/benchmark_flash_attention.py`` at c082294e: ``flops(..., mode="bwd")``
#: returns ``2.5 * f``; NVIDIA/cudnn-frontend ``benchmark/sdpa_benchmark_training/benchmark_single_sdpa.py`` at
#: 3929da2e: "Forward: 2 BMMs", "Backward: 5 BMMs").  The planner counts the backward at ``BACKWARD`` (2) x the
#: forward's FLOPs, so a published backward / forward rate ratio ``r`` (:data:`FLASH_BACKWARD_RATE` and the cited
#: ``attention-backward`` curves) times the planner's backward FLOPs at ``r x 2 / 2.5``: the backward's measured
#: seconds, not 0.8 of them (0.84 -> 0.672).
PUBLISHED_BACKWARD_FLOPS = 2.5


def flash_backward_rate(device: Any, keys: np.ndarray, head_dim: np.ndarray, precision: str) -> np.ndarray:
    """The share of its forward's FLOP rate a fused attention's backward runs at, per op of ``keys`` keys per query
    and head dim ``head_dim``: the device's cited ``attention-backward`` curve (``relative_to`` ``forward``: the
    published backward / forward TFLOP/s of the kernel its framework uses, by keys and head dim; the catalog
    calibrations cite each point), else :data:`FLASH_BACKWARD_RATE`; either x ``BACKWARD / PUBLISHED_BACKWARD_FLOPS``
    (the benchmarks count the backward's FLOPs at 2.5 x the forward's, the planner at 2 x)."""
    from roofline.engine.forecast import effective_calibration

    counted = float(BACKWARD) / PUBLISHED_BACKWARD_FLOPS
    cal = effective_calibration(device)
    curve = None if cal is None else cal.curve("attention-backward", "compute", precision)
    if cal is None or not isinstance(curve, TabulatedCurve) or curve.relative_to != "forward":
        return np.full(len(keys), FLASH_BACKWARD_RATE * counted)
    return by_head_dim(cal.head_dim_variants(curve), keys, head_dim) * counted


def sustained_rate(device: Any, precision: str) -> float:
    """The share of its short-burst FLOP rate a compute-bound tensor-core kernel holds through a sustained training
    step on ``device`` at ``precision``: the device's cited ``training-sustained`` table (one flat point: the
    power-saturated sustained matmul rate over the boost-clock burst one, e.g. the H200's MSMF 708.5 / MAMF 841.9
    TFLOP/s bf16 = 0.8415), else 1 (no published sustained figure: the burst rate stands).  Also 1 where the
    user's own calibration (``roofline calibrate``) fitted the matmul or attention compute curves: those rates are
    the user's measurements, perhaps from a training trace already at the sustained clock, and are not scaled
    again."""
    from roofline.engine.forecast import effective_calibration

    user = getattr(device, "calibration", None)
    if user is not None and {(c.kind, c.term) for c in user.curves} & {("matmul", "compute"), ("attention", "compute")}:
        return 1.0
    cal = effective_calibration(device)
    curve = None if cal is None else cal.curve("training-sustained", "compute", precision)
    if not isinstance(curve, TabulatedCurve):
        return 1.0
    return _efficiency_at(curve, curve.points[0].x)


def _efficiency_at(curve: Any, x: float) -> float:
    """A calibration curve's efficiency at one size, kept within [0.001, 1]."""
    return float(min(max(float(np.asarray(curve.efficiency(np.array([x])))[0]), 1e-3), 1.0))


def contention_factor(kinds: np.ndarray, m: np.ndarray, n: np.ndarray, batch: np.ndarray, sms: int, held: int
                      ) -> np.ndarray:
    """How much longer each op runs on ``sms - held`` SMs than on ``sms`` (tile and wave quantization,
    :func:`roofline.engine.gemm_shape.op_quantization`): ``sms q(sms) / ((sms - held) q(sms - held))`` for GEMMs and
    attention of known shape, 1 for every other op.

    >>> # 12 x 11 = 132 tiles of 128x128: one full wave on 132 SMs (q 1); on 108, 64x64 tiles fill 5 waves best,
    >>> # 24 x 22 = 528 of 540 slots (q 0.9778): 132 x 1 / (108 x 0.9778) = 1.25
    >>> round(float(contention_factor(np.array(["matmul"]), np.array([1536.0]), np.array([1408.0]),
    ...                               np.array([1.0]), 132, 24)[0]), 4)
    1.25
    """
    from roofline.engine.gemm_shape import op_quantization

    if held <= 0 or held >= sms:
        return np.ones(len(kinds))
    full = op_quantization(kinds, m, n, batch, sms)
    fewer = op_quantization(kinds, m, n, batch, sms - held)
    return np.asarray(sms * full / ((sms - held) * fewer), dtype=float)


def tied(forecast: float, best: float) -> bool:
    """Whether a layout's forecast step time lies within :data:`STATED_ERROR` of the best one's."""
    return forecast - best < STATED_ERROR * best


@dataclass(frozen=True)
class ShardForecast:
    """Forecast seconds of one micro-batch on one device's shard: forward and backward of every layer's ops
    (all layers), of the attention core (forward; what selective recomputation repeats), and of the first
    and last stage's extra ops."""

    layers_forward: float
    layers_backward: float
    attention_forward: float
    first_forward: float
    first_backward: float
    last_forward: float
    last_backward: float
    notes: tuple[str, ...] = ()
    #: per SM count ``c`` of :data:`~roofline.planner.overlap.CONTENTION_SMS`: (c, forward share, backward share),
    #: the seconds the forward's (backward's) compute-bound tensor-core ops lose per second they run beside a
    #: collective holding ``c`` SMs (:func:`contention_shares`); () on a device without an SM count
    contention: tuple[tuple[int, float, float], ...] = ()
    #: per recompute module (:mod:`roofline.llm.recompute`), its rows' forward forecast seconds over every layer
    modules: tuple[tuple[str, float], ...] = ()

    def module_forward(self) -> dict[str, float]:
        return dict(self.modules)

    def contention_share(self, sms: int, phase: str) -> float:
        """Seconds lost per second of ``phase`` (``forward``, ``backward``, ``both``: weighted by their time) run
        beside a collective holding ``sms`` SMs; 0 for an SM count not prepared."""
        for c, fwd, bwd in self.contention:
            if c == sms:
                if phase == "forward":
                    return fwd
                if phase == "backward":
                    return bwd
                F = self.layers_forward + self.first_forward + self.last_forward
                B = self.layers_backward + self.first_backward + self.last_backward
                return (F * fwd + B * bwd) / (F + B) if F + B > 0 else 0.0
        return 0.0


def _dims(table: Any, run: TrainingRun, cp: int, ep: int, micro_batch: int) -> dict[str, np.ndarray]:
    B = split_queries(basis(run.arch, micro_batch, run.seq, run.seq), cp)
    B[:, EXP] /= ep
    return {k: np.asarray(v, dtype=float) for k, v in gemm_dims(table, B[0], run.moe_load).items()}


def shard_forecast(run: TrainingRun, tp: int, cp: int, ep: int, micro_batch: int, device: Any) -> ShardForecast:
    """The forecast of one micro-batch's forward and backward on one device's shard (module docs)."""
    return shard_forecasts(run, [(tp, cp, ep, micro_batch)], device)[(tp, cp, ep, micro_batch)]


def _moved(table: Any, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(``rows`` whose backward is 2x their forward, the data-movement ones whose backward is one pass the other way:
    the MoE permute's gradient unpermuted -- Megatron-Core ``moe_utils.permute`` with ``--moe-permute-fusion``,
    Transformer Engine's ``moe_permute``, whose backward is one ``moe_unpermute`` of the gradient)."""
    moved = np.array([table.kinds[i] == "memory" for i in rows], dtype=bool)
    return rows[~moved], rows[moved]


def _rows(ops: WorkloadBuilder, run: TrainingRun, shard: tuple[int, int, int, int]) -> tuple[Any, np.ndarray, np.ndarray]:
    """One shard's forward and backward rows into ``ops``; (its table, each row's forward op, backward or not)."""
    tp, cp, ep, mb = shard
    table, v = forward_ops(run, tp, cp, ep, mb)
    idx = np.flatnonzero(table.roles != LINK)
    d = _dims(table, run, cp, ep, mb)
    gemm = np.zeros(len(table), dtype=bool) if table.dims is None else table.dims[:, 0] == GEMM_DIMS
    grouped = np.zeros(len(table), dtype=bool) if table.dims is None else table.dims[:, 0] == GROUPED_DIMS
    m, n, k = d["m"], d["n"], d["k"]
    g, gg = idx[gemm[idx]], idx[grouped[idx]]
    other, one_pass = _moved(table, idx[~gemm[idx] & ~grouped[idx]])
    # the weight gradients accumulated into the gradient buffer (:func:`grad_accumulation_bytes`): inside the
    # weight-gradient GEMMs when fused, else (and for every weight outside a shaped GEMM) one pass of its own
    params = row_params(run, table, tp, ep)
    sep_read, sep_written, fused = grad_accumulation_bytes(run)
    into_dw = params * fused if run.grad_accumulation_fusion else np.zeros(len(table))
    acc = idx[(params[idx] > 0) & ~((gemm[idx] | grouped[idx]) & run.grad_accumulation_fusion)]
    zero = np.zeros(len(table))
    # forward; dX = dY W^T (m x k outputs, reduced over n); dW = X^T dY (k x n, over m); the rest 2x at its shape.
    # The weight-gradient GEMM reads no weight (X and dY in, dW out): no weight bytes, so the forecast looks its
    # efficiency up as the bf16 GEMM it is, not as a weight-only quantized one (8 x W bytes / (n x m) bits)
    # A grouped expert GEMM's dX and dW: two grouped GEMMs of its FLOPs at its own groups and rows (the slowest
    # group sets each, engine.grouped_gemm), dW reading no weight
    parts = ((idx, 1.0, m, n, k, zero, 1.0), (g, 1.0, m, k, n, zero, 1.0), (g, 1.0, k, n, m, into_dw, 0.0),
             (gg, 1.0, m, n, k, zero, 1.0), (gg, 1.0, m, n, k, into_dw, 0.0),
             (other, float(BACKWARD), m, n, k, zero, float(BACKWARD)), (one_pass, 1.0, m, n, k, zero, 1.0))
    for sel, scale, mm, nn, kk, extra, weights in parts:
        ops.extend(name=[table.names[i] for i in sel], group=[table.names[i] for i in sel],
                   kind=[table.kinds[i] for i in sel], module_type=[table.module_types[i] for i in sel],
                   **step_role_columns(table.roles[sel].tolist(), run), flops=(scale * v["flops"][sel]).tolist(),
                   bytes_read=(scale * v["bytes_read"][sel] + extra[sel] / 2).tolist(),
                   bytes_written=(scale * v["bytes_written"][sel] + extra[sel] / 2).tolist(),
                   weight_bytes=(weights * v["weight_bytes"][sel]).tolist(), count=table.counts[sel].tolist(),
                   m=mm[sel].tolist(), n=nn[sel].tolist(), k=kk[sel].tolist(), batch=d["batch"][sel].tolist())
    nan = [float("nan")] * len(acc)
    ops.extend(name=[table.names[i] + " (grad accumulate)" for i in acc], group=[table.names[i] for i in acc],
               kind=["elementwise"] * len(acc), module_type=["grad_accumulate"] * len(acc),
               **step_role_columns([VEC] * len(acc), run), flops=params[acc].tolist(),
               bytes_read=(sep_read * params[acc]).tolist(), bytes_written=(sep_written * params[acc]).tolist(),
               weight_bytes=[0.0] * len(acc), count=table.counts[acc].tolist(), m=nan, n=nan, k=nan, batch=nan)
    # the loss over the logits lm_head writes (16-bit, one per token and vocabulary entry of the shard)
    head = np.array([i for i in idx if table.names[i].endswith("lm_head")], dtype=int)
    logits = v["bytes_written"][head] / run.precisions.bytes()["a"]
    fr, fw, br, bw = CROSS_ENTROPY_BYTES
    for suffix, rd, wr in ((" (cross-entropy)", fr, fw), (" (cross-entropy backward)", br, bw)):
        ops.extend(name=[table.names[i] + suffix for i in head], group=[table.names[i] for i in head],
                   kind=["elementwise"] * len(head), module_type=["cross_entropy"] * len(head),
                   **step_role_columns([VEC] * len(head), run), flops=(4 * logits).tolist(),
                   bytes_read=(rd * logits).tolist(), bytes_written=(wr * logits).tolist(),
                   weight_bytes=[0.0] * len(head), count=table.counts[head].tolist(), m=[float("nan")] * len(head),
                   n=[float("nan")] * len(head), k=[float("nan")] * len(head), batch=[float("nan")] * len(head))
    cast_owner, cast_bwd = _cast_rows(ops, run, table, d)
    owner = np.concatenate([p[0] for p in parts] + [acc, head, head, cast_owner])
    bwd = np.arange(len(owner)) >= len(idx)
    bwd[len(owner) - len(cast_owner) - 2 * len(head):len(owner) - len(cast_owner) - len(head)] = False  # loss forward
    bwd[len(owner) - len(cast_owner):] = cast_bwd
    return table, owner, bwd


def _cast_rows(ops: WorkloadBuilder, run: TrainingRun, table: Any, d: dict[str, np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray]:
    """A low-precision step's quantize passes (:func:`~roofline.llm.training.cast_ops`) into ``ops``, each owned by
    its GEMM's row; (owners, backward or not)."""
    owner, bwd = [], []
    for suffix, sel, backward, c in cast_ops(run, table, d):
        nan = [float("nan")] * len(sel)
        ops.extend(name=[table.names[i] + suffix for i in sel], group=[table.names[i] for i in sel],
                   kind=["elementwise"] * len(sel), module_type=["quantize"] * len(sel),
                   **step_role_columns([VEC] * len(sel), run), flops=c["flops"].tolist(),
                   bytes_read=c["bytes_read"].tolist(), bytes_written=c["bytes_written"].tolist(),
                   weight_bytes=[0.0] * len(sel), count=table.counts[sel].tolist(), m=nan, n=nan, k=nan, batch=nan)
        owner.append(sel)
        bwd.append(np.full(len(sel), backward))
    return (np.concatenate(owner).astype(int) if owner else np.zeros(0, dtype=int),
            np.concatenate(bwd) if bwd else np.zeros(0, dtype=bool))


def _op_seconds(run: TrainingRun, shards: list[tuple[int, int, int, int]], device: Any
                ) -> tuple[Any, np.ndarray, list[tuple[Any, np.ndarray, np.ndarray]], np.ndarray]:
    """(the analysis of every shard's rows, each row's forecast seconds x count with the training step's own
    rates -- sustained clock, fused attention's backward --, each shard's (table, owner, backward), which rows are
    compute-bound tensor-core ops)."""
    from roofline.engine.analysis import analyze

    ops = WorkloadBuilder()
    made = [_rows(ops, run, sh) for sh in shards]
    a = analyze(ops.build(title="planner shards", source="roofline.planner", info={"gemm_format": run.precision}),
                device, forecast=True)
    assert a.forecast is not None
    t = a.forecast.time * a.forecast.counts
    w = a.workload
    precision = np.asarray(w.column("precision")).astype(str)
    kinds = np.asarray(w.column("kind")).astype(str)
    # compute-bound tensor-core ops at the sustained clock (sustained_rate); the launch overhead unchanged
    tensor = (a.forecast.term == "compute") & np.isin(kinds, ("matmul", "attention"))
    for prec in sorted(set(precision[tensor].tolist())):
        sel = tensor & (precision == prec)
        t[sel] = (a.forecast.overhead + a.forecast.work[sel] / sustained_rate(device, prec)) * a.forecast.counts[sel]
    if run.flash:  # the fused attention's backward below (or above) its forward's rate (flash_backward_rate)
        slow = np.concatenate([bwd & (np.asarray(table.kinds, dtype=object)[owner] == "attention")
                               for table, owner, bwd in made])
        rate = np.ones(len(t))
        for prec in sorted(set(np.asarray(w.column("precision"))[slow].tolist())):
            sel = slow & (np.asarray(w.column("precision")) == prec)
            rate[sel] = flash_backward_rate(device, np.asarray(w.columns["n"], dtype=float)[sel],
                                            np.asarray(w.columns["k"], dtype=float)[sel], str(prec))
        t = t / rate
    return a, t, made, tensor


#: The op categories :func:`shard_parts` splits a micro-batch's forecast into, by the op's kind and module type.
PART_OF_KIND = {"matmul": "GEMM", "attention": "attention", "softmax": "attention", "norm": "elementwise/norm",
                "elementwise": "elementwise/norm", "memory": "elementwise/norm", "embedding": "elementwise/norm"}


def shard_parts(run: TrainingRun, tp: int, cp: int, ep: int, micro_batch: int, device: Any) -> dict[str, float]:
    """One micro-batch's forecast seconds on one device's shard (every layer, the first and last stage's extra ops
    included), by ``forward``/``backward`` and op category (:data:`PART_OF_KIND`; the loss's passes as
    ``cross-entropy``, the weight gradients' accumulation passes as ``grad accumulate``): the times
    :func:`shard_forecasts` sums, split for reading."""
    a, t, made, _ = _op_seconds(run, [(tp, cp, ep, micro_batch)], device)
    _, _, bwd = made[0]
    w = a.workload
    out: dict[str, float] = {}
    for i, (kind, module) in enumerate(zip(w.column("kind"), w.column("module_type"), strict=True)):
        part = {"cross_entropy": "cross-entropy", "grad_accumulate": "grad accumulate", "quantize": "quantize"}.get(
            str(module), PART_OF_KIND.get(str(kind), str(kind)))
        key = f"{'backward' if bwd[i] else 'forward'} {part}"
        out[key] = out.get(key, 0.0) + float(t[i])
    return out


def shard_forecasts(run: TrainingRun, shards: list[tuple[int, int, int, int]], device: Any
                    ) -> dict[tuple[int, int, int, int], ShardForecast]:
    """The forecast of each shard ``(tp, cp, ep, micro_batch)``, every shard's ops analysed in one call (the
    forecast is per op, so batching them changes nothing but the cost)."""
    a, t, made, tensor = _op_seconds(run, shards, device)
    w = a.workload
    kinds = np.asarray(w.column("kind")).astype(str)
    # what each op loses beside a collective holding c SMs (compute-bound tensor-core ops only), per prepared c
    from roofline.engine.forecast import effective_calibration

    cal = effective_calibration(device)
    sms = cal.quantization.sms if cal is not None and cal.quantization is not None else 0
    cols = w.columns
    lost = {c: np.where(tensor, t * (contention_factor(kinds, cols["m"], cols["n"], cols["batch"], sms, c) - 1), 0.0)
            for c in (CONTENTION_SMS if sms else ())}
    out, at = {}, 0
    for sh, (table, owner, bwd) in zip(shards, made, strict=True):
        here = t[at:at + len(owner)]
        fwd_s, bwd_s = float(here[~bwd].sum()), float(here[bwd].sum())
        shares = tuple((c, float(x[at:at + len(owner)][~bwd].sum()) / fwd_s if fwd_s > 0 else 0.0,
                        float(x[at:at + len(owner)][bwd].sum()) / bwd_s if bwd_s > 0 else 0.0)
                       for c, x in lost.items())
        at += len(owner)
        fwd_t, bwd_t = np.zeros(len(table)), np.zeros(len(table))
        np.add.at(fwd_t, owner[~bwd], here[~bwd])
        np.add.at(bwd_t, owner[bwd], here[bwd])
        layer, first, last, core = table_masks(table)
        mods = tuple((name, float(fwd_t[rows].sum())) for name, rows in module_masks(table, core).items())
        out[sh] = ShardForecast(float(fwd_t[layer].sum()), float(bwd_t[layer].sum()), float(fwd_t[core].sum()),
                                float(fwd_t[first].sum()), float(bwd_t[first].sum()), float(fwd_t[last].sum()),
                                float(bwd_t[last].sum()), a.forecast.notes, shares, mods)
    return out


def collective_efficiency(device: Any, message_bytes: float) -> float:
    """The share of the interconnect's rate a collective of ``message_bytes`` per device reaches: the device's
    cited (or the user's) curve of ``collective`` ops bound by the interconnect, 1 without one."""
    from roofline.engine.forecast import effective_calibration

    cal = effective_calibration(device)
    curve = None if cal is None else cal.curve("collective", "interconnect", "bf16")
    if curve is None or message_bytes <= 0:
        return 1.0
    return _efficiency_at(curve, message_bytes)
