"""Advice from the numbers: the limiting roof, the headroom, and levers whose effect was computed.

Every lever is a modified workload (or device) that was re-analysed with
:func:`roofline.engine.analysis.analyze`; the figures quoted are read off that
re-analysis (kept on the lever as ``after``).  A lever that cannot be computed
for this workload is not offered; when none applies the advice says
"no lever found".

Levers:

* **batching** (LLM decode: the LLM model rebuilt at a larger batch, as :func:`roofline.from_llm` does):
  intensity a -> b, the ridge, tokens/s before and after;
* **fusion** of chains of consecutive elementwise/norm/softmax ops into one
  (the intermediate tensors are neither written nor read back): bytes and time saved;
* **lower-precision weights** (int8, int4: weight bytes scaled by the bit
  ratio; compute unchanged) and, for LLMs, a **lower-precision KV cache**;
* a **matrix-unit precision** (tf32/bf16/fp8 on the matrix unit; operand
  bytes scaled by the bit ratio except for tf32): compute roof x, time x;
* a **different catalog device**: time x;
* with a forecast (``analyze(..., forecast=True)``), the levers that attack the per-op overhead
  floor, their effect read off the re-forecast: **fewer launches** (the fusion chains above, each
  one op paying the floor once), **CUDA graphs** (GPU: the ``cuda-graph`` floor in place of the
  ``cuda-launch`` one), and for LLMs a **larger batch** (the floor paid once per op for twice the
  tokens).  Their ``before``/``after`` are forecast seconds (per token for the batch lever).

>>> from roofline import Device, Op, Workload, analyze
>>> from roofline.words.advice import advise
>>> ops = [Op("mul", kind="elementwise", flops=1e6, bytes_read=8e6, bytes_written=4e6),
...        Op("add", kind="elementwise", flops=1e6, bytes_read=8e6, bytes_written=4e6)]
>>> adv = advise(analyze(Workload.from_ops(ops), Device.simple("cpu", "100 GFLOP/s", "10 GB/s")), devices=False)
>>> lever = adv.levers[0]
>>> lever.name, lever.figures["bytes_saved"]   # the 4 MB intermediate is not written, nor read back
('fusion', 8000000.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from roofline.core.precision import BITS
from roofline.core.units import format_bytes, format_count, format_flops, format_gib, format_seconds, format_speedup
from roofline.engine.analysis import Analysis, analyze
from roofline.hardware.device import Device
from roofline.llm.spec import as_spec
from roofline.words.levers import Advice, Lever, OpAdvice  # the records, below summary which carries them
from roofline.work.workload import COLUMNS, Workload

FUSIBLE = ("elementwise", "norm", "softmax")
MATRIX_KINDS = ("matmul", "conv", "attention")
MIN_GAIN = 1.02  # a lever must make the roofline time at least 2% shorter to be offered

# ----------------------------------------------------------------------------- helpers
def _cols(w: Workload) -> dict[str, Any]:
    return {c: w.column(c) for c in COLUMNS}


def _rebuild(w: Workload, cols: dict[str, Any], note: str) -> Workload:
    meta = w.meta()
    meta["assumptions"] = [*w.assumptions, note]
    return Workload.from_columns(**cols, **meta)


def _predicted(w: Workload) -> Workload:
    """The workload without measured times: a lever changes the prediction, not the past."""
    if not w.has_measurements:
        return w
    return w.replace(measured_seconds=np.full(len(w), np.nan))


def _main_roof(a: Analysis) -> tuple[Any, float]:
    """The dominant compute ceiling (:func:`roofline.words.summary.dominant_ceiling`) and its ridge on main memory."""
    from roofline.words.summary import dominant_ceiling

    c = dominant_ceiling(a)
    return c, c.flops / a.device.main_memory.bandwidth


def _ratio(num: float, den: float) -> float:
    """``num / den`` that never raises: a zero (or underflowed) denominator gives inf, 0/0 gives 1 (no change)."""
    if den > 0:
        return num / den
    return math.inf if num > 0 else 1.0


# ----------------------------------------------------------------------------- fusion
def fusion_chains(w: Workload) -> list[tuple[int, int]]:
    """Maximal runs [start, end) of >= 2 consecutive elementwise/norm/softmax ops with equal count and level."""
    kinds = w.column("kind")
    fusible = np.isin(kinds, FUSIBLE)
    count, level = w.columns["count"], w.columns["level"]
    chains = []
    i, n = 0, len(w)
    while i < n:
        if not fusible[i] or w.strings("level", i) != "":
            i += 1
            continue
        j = i + 1
        while j < n and fusible[j] and count[j] == count[i] and level[j] == level[i]:
            j += 1
        if j - i >= 2:
            chains.append((i, j))
        i = j
    return chains


def fuse(w: Workload, chains: Sequence[tuple[int, int]]) -> Workload:
    """``w`` with each chain replaced by one op at its place.

    The fused op reads the first op's inputs plus whatever each later op reads
    beyond its predecessor's output (``max(read - previous write, 0)``), writes
    the last op's output, and does the FLOPs of all.  Assumes each intermediate
    is used only by the next op of the chain.
    """
    cols = _cols(w)
    n = len(w)
    keep = np.ones(n, dtype=bool)
    position = np.arange(n, dtype=float)
    new: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    new_pos: list[float] = []
    rd, wr = w.columns["bytes_read"], w.columns["bytes_written"]
    for s, e in chains:
        keep[s:e] = False
        reads = rd[s] + float(np.maximum(rd[s + 1:e] - wr[s:e - 1], 0.0).sum())
        names = [w.strings("name", i) for i in range(s, e)]
        groups = [w.strings("group", i) for i in range(s, e)]
        common = groups[0]
        for g in groups[1:]:
            while common and not (g == common or g.startswith(common + ".")):
                common = common.rpartition(".")[0]
        kinds = [w.strings("kind", i) for i in range(s, e)]
        row = {c: cols[c][s] for c in COLUMNS}
        row.update(name="fused(" + "+".join(names) + ")", kind="norm" if "norm" in kinds else
                   "softmax" if "softmax" in kinds else "elementwise", flops=float(w.columns["flops"][s:e].sum()),
                   bytes_read=reads, bytes_written=float(wr[e - 1]), group=common, module_type="",
                   weight_bytes=float(w.columns["weight_bytes"][s:e].sum()), measured_seconds=math.nan)
        for c in COLUMNS:
            new[c].append(row[c])
        new_pos.append(s)
    order = np.argsort(np.concatenate([position[keep], np.asarray(new_pos, dtype=float)]), kind="stable")
    out = {}
    for c in COLUMNS:
        merged = np.concatenate([np.asarray(cols[c])[keep], np.asarray(new[c], dtype=np.asarray(cols[c]).dtype)])
        out[c] = merged[order]
    return _rebuild(w, out, f"advice: {len(chains)} chain(s) of elementwise/norm/softmax ops fused into one op each "
                            "(intermediates neither written nor read back)")


def _fusion_lever(a: Analysis, w: Workload, chains: Sequence[tuple[int, int]], scope: str) -> Lever | None:
    if not chains:
        return None
    after = analyze(fuse(w, chains), a.device)
    ops_before = sum(e - s for s, e in chains)
    idx = np.concatenate([np.arange(s, e) for s, e in chains])
    if scope == "workload":
        before_t, after_t = a.total_time, after.total_time
    else:  # the chain's own time: its ops before, the fused op after
        before_t = float(a.total_op_time[idx].sum())
        fused_name = "fused(" + "+".join(w.strings("name", i) for i in range(chains[0][0], chains[0][1])) + ")"
        j = int(np.flatnonzero(after.workload.column("name") == fused_name)[0])
        after_t = float(after.total_op_time[j])
    saved_bytes = a.total_bytes - after.total_bytes
    saved_time = a.total_time - after.total_time
    if saved_bytes <= 0 or _ratio(before_t, after_t) < MIN_GAIN:
        return None
    what = (f"fuse {len(chains)} chain(s) of elementwise/norm ops ({ops_before} ops)" if scope == "workload"
            else f"fuse the chain {' + '.join(w.strings('name', i) for i in range(chains[0][0], chains[0][1]))}")
    text = (f"{what}: {format_bytes(saved_bytes)} less traffic, {format_seconds(saved_time)} saved "
            f"({format_seconds(before_t)} -> {format_seconds(after_t)})")
    return Lever("fusion", text, before_t, after_t, after,
                 {"bytes_saved": saved_bytes, "time_saved": saved_time, "ops_fused": float(ops_before)})


# ----------------------------------------------------------------------------- precision
def with_weight_bits(w: Workload, bits: int, mask: np.ndarray | None = None) -> Workload:
    """Weights stored in ``bits`` bits (dequantised on the fly): weight bytes x bits / the op's bits."""
    cols = _cols(w)
    old = np.asarray([BITS[p] for p in w.tables["precision"]], dtype=float)[w.columns["precision"]]
    scale = np.where(old > bits, bits / old, 1.0)
    if mask is not None:
        scale = np.where(mask, scale, 1.0)
    wb = w.columns["weight_bytes"]
    cols["bytes_read"] = w.columns["bytes_read"] - wb + wb * scale
    cols["weight_bytes"] = wb * scale
    return _rebuild(w, cols, f"advice: weights stored in {bits} bits, dequantised on the fly (compute unchanged)")


def with_matrix_precision(w: Workload, precision: str, mask: np.ndarray) -> Workload:
    """Ops in ``mask`` on the matrix unit at ``precision``; operand bytes scaled by the bit ratio (not for tf32)."""
    cols = _cols(w)
    old = np.asarray([BITS[p] for p in w.tables["precision"]], dtype=float)[w.columns["precision"]]
    scale = np.ones(len(w)) if precision == "tf32" else np.where(old > BITS[precision], BITS[precision] / old, 1.0)
    scale = np.where(mask, scale, 1.0)
    for c in ("bytes_read", "bytes_written", "weight_bytes"):
        cols[c] = w.columns[c] * scale
    cols["precision"] = np.where(mask, precision, cols["precision"])
    cols["unit"] = np.where(mask, "matrix", cols["unit"])
    return _rebuild(w, cols, f"advice: matrix-shaped ops on the matrix unit at {precision}"
                             + ("" if precision == "tf32" else f", operands stored in {precision}"))


def _weight_levers(a: Analysis, w: Workload, mask: np.ndarray | None, scope_idx: np.ndarray | None) -> list[Lever]:
    wb = w.columns["weight_bytes"] if mask is None else np.where(mask, w.columns["weight_bytes"], 0.0)
    if not (wb > 0).any():
        return []
    levers: list[Lever] = []
    widest = max(BITS[w.strings("precision", int(i))] for i in np.flatnonzero(wb > 0))
    for bits, label in ((8, "int8"), (4, "int4")):
        if bits >= widest:
            continue
        after = analyze(with_weight_bits(w, bits, mask), a.device)
        before_t, after_t = _scope_times(a, after, scope_idx)
        if _ratio(before_t, after_t) < MIN_GAIN or (levers and _ratio(levers[-1].after, after_t) < MIN_GAIN):
            continue  # no gain, or none beyond the wider format's
        saved = a.total_bytes - after.total_bytes
        levers.append(Lever("weight precision", f"{label} weights: {format_bytes(saved)} less traffic, "
                            f"{format_seconds(before_t)} -> {format_seconds(after_t)}",
                            before_t, after_t, after, {"bytes_saved": saved, "bits": float(bits)}))
    return levers


def _matrix_levers(a: Analysis, w: Workload, mask: np.ndarray, scope_idx: np.ndarray | None) -> list[Lever]:
    if not mask.any():
        return []
    dev = a.device
    # the roof these ops use now: the slowest ceiling among them (the one that binds)
    idx = np.flatnonzero(mask)
    current = float(np.min(a.peak_flops[idx]))
    candidates = []
    seen_roofs: set[float] = set()
    for p in ("tf32", "bf16", "fp16", "fp8"):
        c = dev.ceiling("matrix", p)
        if c is None or c.flops < 1.5 * current or c.flops in seen_roofs:
            continue
        if p != "tf32" and BITS[p] >= min(BITS[w.strings("precision", int(i))] for i in idx):
            continue  # not lower than what the ops already use
        seen_roofs.add(c.flops)
        after = analyze(with_matrix_precision(w, p, mask), dev)
        before_t, after_t = _scope_times(a, after, scope_idx)
        if _ratio(before_t, after_t) < MIN_GAIN:
            continue
        roof_x = _ratio(float(np.min(after.peak_flops[idx])), current)
        # operands shrink with the precision: for memory-bound ops that, not the roof, is the gain
        saved = a.total_bytes - after.total_bytes
        traffic = f", operands in {p}: {format_bytes(saved)} less traffic" if saved > 0 else ""
        candidates.append(Lever("matrix-unit precision",
                                f"{p} on the matrix unit: compute roof {format_count(roof_x)}x ({format_flops(current)} -> "
                                f"{format_flops(c.flops)}){traffic}, {format_seconds(before_t)} -> "
                                f"{format_seconds(after_t)}", before_t, after_t, after,
                                {"roof_x": roof_x, "bytes_saved": saved}))
    candidates.sort(key=lambda lv: -lv.speedup)
    return candidates[:2]


def _scope_times(a: Analysis, after: Analysis, scope_idx: np.ndarray | None) -> tuple[float, float]:
    """Roofline seconds of the scope before and after (ops keep their index in these levers)."""
    if scope_idx is None:
        return a.total_time, after.total_time
    return float(a.total_op_time[scope_idx].sum()), float(after.total_op_time[scope_idx].sum())


# ----------------------------------------------------------------------------- devices
def _device_levers(a: Analysis, w: Workload, candidates: Sequence[Device] | None, n: int = 2) -> list[Lever]:
    if candidates is None:
        from roofline.catalog import devices

        candidates = devices()
    results = []
    for d in candidates:
        if d.name == a.device.name:
            continue
        after = analyze(w, d, forecast=a.forecast is not None)
        results.append((after.total_time, d, after))
    # ranked by the forecast where the analysis has one (the lever's before/after stay roofline seconds)
    results.sort(key=lambda r: r[2].forecast.total_time if r[2].forecast is not None else r[0])
    levers = []
    for t, d, after in results[:n]:
        if _ratio(a.total_time, t) < MIN_GAIN:
            continue
        levers.append(Lever("device", f"on {d.name}: {format_seconds(a.total_time)} -> {format_seconds(t)} "
                            f"(roofline time; devices ranked by "
                            f"{'forecast' if after.forecast is not None else 'roofline time'})",
                            a.total_time, t, after, {"time_x": _ratio(t, a.total_time)}))
    return levers


# ----------------------------------------------------------------------------- overhead levers
def _overhead_levers(a: Analysis, w: Workload, chains: Sequence[tuple[int, int]]) -> list[Lever]:
    """Levers on the forecast's overhead floor (module docs), each re-forecast."""
    from roofline.engine.forecast import compute_forecast

    f = a.forecast
    assert f is not None
    before = f.total_time
    if not (f.overhead > 0 and before > 0):
        return []
    over = f.parts()["overhead"]
    levers: list[Lever] = []
    if chains:
        after = analyze(fuse(w, chains), a.device, forecast=True)
        assert after.forecast is not None
        t = after.forecast.total_time
        if _ratio(before, t) >= MIN_GAIN:
            launches = float(f.counts.sum() - after.forecast.counts.sum())
            levers.append(Lever("fewer launches", f"fuse {len(chains)} chain(s) of elementwise/norm ops: "
                                f"{launches:.0f} fewer ops paying the {format_seconds(f.overhead)} {f.framework} "
                                f"floor; forecast {format_seconds(before)} -> {format_seconds(t)}", before, t, after,
                                {"ops_saved": launches, "overhead_before": over}))
    graph = a.device.overhead_floor("cuda-graph")
    if f.framework == "cuda-launch" and graph is not None and graph.seconds < f.overhead:
        fg = compute_forecast(a, framework="cuda-graph")
        if _ratio(before, fg.total_time) >= MIN_GAIN:
            from dataclasses import replace

            levers.append(Lever("CUDA graphs", f"replay the ops from a CUDA graph: floor {format_seconds(f.overhead)} "
                                f"-> {format_seconds(graph.seconds)} per op; forecast {format_seconds(before)} -> "
                                f"{format_seconds(fg.total_time)}",
                                before, fg.total_time, replace(a, forecast=fg),
                                {"floor_before": f.overhead, "floor_after": graph.seconds}))
    spec = as_spec(w.llm)
    if spec is not None and f.parts()["overhead"] / before >= 0.05:
        wb = llm_workload(spec, batch=spec.batch * 2)
        cap = a.device.memory_capacity
        from roofline.llm.sizes import memory_bytes

        if not (cap and memory_bytes(as_spec(wb.llm)) > cap):
            ab = analyze(wb, a.device, forecast=True)
            assert ab.forecast is not None
            per0, per1 = before / tokens(w), ab.forecast.total_time / tokens(ab.workload)
            if _ratio(per0, per1) >= MIN_GAIN:
                # each sequence waits the whole step (decode) or run (generate): after / before, forecast
                levers.append(Lever("larger batch", f"batch {spec.batch} -> {spec.batch * 2}: the per-op floor "
                                    f"is paid once for twice the tokens; forecast per token over the batch "
                                    f"{format_seconds(per0)} -> {format_seconds(per1)}",
                                    per0, per1, ab, {"batch": float(spec.batch * 2)}, gains="throughput",
                                    latency_x=_ratio(ab.forecast.total_time, before)))
    return levers


# ----------------------------------------------------------------------------- LLM levers
def llm_workload(spec: Any, **changes: Any) -> Workload:
    """The LLM workload of ``spec`` with fields replaced (batch=..., precisions=...): what from_llm builds."""
    from dataclasses import replace

    from roofline.llm.model import build_workload

    return build_workload(replace(spec, **changes))


def tokens(w: Workload) -> float:
    """Tokens one run of an LLM workload produces: output tokens when it decodes (decode: batch;
    generate: batch x gen), else the prompt tokens it processes (prefill) -- as LLMReport.tokens_per_s.
    Prompt and output tokens are never added up: a generate run's tokens/s is output tokens/s."""
    step = w.phases.get("decode") or w.phases.get("prefill")
    return (step.tokens if step is not None else 0.0) or 1.0


def _llm_levers(a: Analysis, spec: Any) -> list[Lever]:
    from dataclasses import replace

    from roofline.llm.sizes import memory_bytes

    levers: list[Lever] = []
    dev = a.device
    roof, ridge = _main_roof(a)
    if not a.total_time > 0:
        return levers
    tok0 = tokens(a.workload) / a.total_time
    if spec.phase in ("decode", "generate"):
        ai0 = _ratio(a.total_flops, a.total_bytes)
        best = None
        b = spec.batch
        cap = dev.memory_capacity
        while b < 256:  # double until the step reaches the ridge, 256 sequences, or memory is full
            wb = llm_workload(spec, batch=b * 2)
            if cap and memory_bytes(as_spec(wb.llm)) > cap:
                break
            b *= 2
            ab = analyze(wb, dev)
            best = (b, ab)
            if _ratio(ab.total_flops, ab.total_bytes) >= ridge:
                break
        if best is not None:
            b, ab = best
            ai1 = _ratio(ab.total_flops, ab.total_bytes)
            tok1 = _ratio(tokens(ab.workload), ab.total_time)
            kv = memory_bytes(as_spec(ab.workload.llm))
            fits = f"; needs {format_gib(kv)} of {format_gib(cap)} memory" if kv and cap else ""  # GiB, as every capacity
            if tok1 > 0 and _ratio(tok1, tok0) >= MIN_GAIN:
                # what each sequence waits per token grows with the batch: say so next to the throughput
                levers.append(Lever(
                    "batching", f"batch {spec.batch} -> {b}: {spec.phase} intensity {ai0:.3g} -> {ai1:.3g} FLOP/B "
                                f"(ridge at {ridge:.3g}); {format_count(tok0)} -> {format_count(tok1)} tokens/s, "
                                f"each sequence's time per token {format_seconds(spec.batch / tok0)} -> "
                                f"{format_seconds(b / tok1)}{fits}",
                    1 / tok0, 1 / tok1, ab,
                    {"batch": float(b), "intensity_before": ai0, "intensity_after": ai1, "ridge": ridge,
                     "tokens_per_s_before": tok0, "tokens_per_s_after": tok1},
                    gains="throughput", latency_x=_ratio(b / tok1, spec.batch / tok0)))
    p = spec.precisions
    for field_name, label, what in (("weights", "weight precision", "weights"), ("kv_cache", "KV-cache precision",
                                                                                  "KV cache")):
        last = None
        for bits, name in ((8, "int8"), (4, "int4")):
            if bits >= BITS[getattr(p, field_name)]:
                continue
            ak = analyze(llm_workload(spec, precisions=replace(p, **{field_name: name})), dev)
            gain = _ratio(a.total_time, ak.total_time)
            if gain < MIN_GAIN or (last is not None and _ratio(last, ak.total_time) < MIN_GAIN):
                continue
            last = ak.total_time
            saved = a.total_bytes - ak.total_bytes
            levers.append(Lever(label, f"{name} {what}: {format_bytes(saved)} less traffic, "
                                f"{format_seconds(a.total_time)} -> {format_seconds(ak.total_time)}",
                                a.total_time, ak.total_time, ak, {"bytes_saved": saved, "bits": float(bits)}))
    return levers


# ----------------------------------------------------------------------------- verdicts
def _roof_text(a: Analysis, idx: np.ndarray) -> str:
    """The roof that binds the most time among ``idx``, and the share of time spent under it."""
    t = a.total_op_time[idx]
    total = float(t.sum()) or 1.0
    compute_share = float(t[a.bound[idx] == "compute"].sum()) / total
    j = int(idx[np.argmax(t)])
    if compute_share > 0.5:
        c = a.ceilings[int(a.ceiling_index[j])]
        return f"compute ({c.label}, {format_flops(c.flops)}); {compute_share:.0%} of the time is in compute-bound ops"
    return (f"memory ({a.level_label(j)}, {format_bytes(a.bandwidth[j])}/s); "
            f"{1 - compute_share:.0%} of the time is in memory-bound ops")


def _headroom(a: Analysis, idx: np.ndarray) -> str:
    """x to the roof when measured; else how far the compute roof is above the attainable rate."""
    w = a.workload
    sec = w.columns["measured_seconds"][idx] * w.columns["count"][idx]
    t = float(a.total_op_time[idx].sum())
    parts = []
    if np.isfinite(sec).all() and sec.sum() > 0:
        x = _ratio(float(sec.sum()), t)
        gap = (f"{format_count(x)}x the roofline time" if x >= 1 else
               f"{format_speedup(_ratio(1.0, x))} than the roof allows: data in cache, a wrong FLOP/byte count or "
               "the wrong ceiling")
        parts.append(f"measured {format_seconds(float(sec.sum()))} vs roofline {format_seconds(t)}: {gap}")
    flops = float((w.columns["flops"][idx] * w.columns["count"][idx]).sum())
    if t > 0 and flops > 0:
        peak = float(np.max(a.peak_flops[idx]))
        attainable = flops / t
        if _ratio(peak, attainable) <= 1.05:
            parts.append("at the compute roof: only fewer FLOPs or a faster ceiling help")
        elif float(a.memory_time[idx] @ w.columns["count"][idx]) >= float(a.compute_time[idx] @ w.columns["count"][idx]):
            # memory-bound: the compute roof is not headroom a compute lever can reach
            parts.append(f"memory-bound: attainable {format_flops(attainable)}, the compute roof {format_flops(peak)} "
                         f"is {format_count(_ratio(peak, attainable))}x higher; only moving fewer bytes helps")
        else:
            parts.append(f"attainable {format_flops(attainable)} is {format_count(_ratio(peak, attainable))}x below "
                         f"the fastest roof its ops use, {format_flops(peak)}: some run on slower ceilings")
    elif flops == 0:
        parts.append("data movement only: the only gain is moving fewer bytes")
    return "; ".join(parts) or "-"


def advise(analysis: Analysis, *, top: int = 3, devices: bool | Sequence[Device] = True) -> Advice:
    """Levers for the whole workload and for its ``top`` ops by time, each with its computed effect.

    ``devices``: False skips the catalog-device lever; a list of devices limits it to those.

    >>> from roofline import Device, Op, Workload, analyze
    >>> a = analyze(Workload.from_ops([Op("gemm", kind="matmul", flops=2e12, bytes_read=1e9,
    ...                                   precision="fp32", unit="matrix")]), Device.simple("x", "1 TFLOP/s", "1 TB/s"))
    >>> advise(a, devices=False).levers
    []
    """
    from roofline.core import arguments as arg

    a = arg.need(analysis, Analysis, "advise", "analysis", "an Analysis")
    arg.positive_int(top, "advise", "top")
    if not isinstance(devices, bool):
        if isinstance(devices, (str, bytes)) or not isinstance(devices, Sequence):
            raise arg.type_error("advise", "devices", "True, False or a list of Devices", devices)
        for i, d in enumerate(devices):
            arg.need(d, Device, "advise", f"devices[{i}]", "a Device")
    w = _predicted(a.workload)
    n = len(w)
    everything = np.arange(n)
    notes: list[str] = _fit_notes(a)
    zero = int(np.sum(~(a.total_op_time > 0)))
    if zero:  # no FLOPs and no bytes (or a time that underflowed to 0): nothing to speed up, no ratio to quote
        notes.append(f"{zero} op(s) with zero roofline time skipped" if zero < n else
                     "every op has zero roofline time (no FLOPs, no bytes): no lever to compute")
    if not a.total_time > 0:
        return Advice(a, _roof_text(a, everything), _headroom(a, everything), [], [], notes)
    chains = fusion_chains(w)
    levers = _workload_levers(a, w, chains, devices)
    return Advice(a, _roof_text(a, everything), _headroom(a, everything), levers, _op_advice(a, w, chains, top), notes)


def _fit_notes(a: Analysis) -> list[str]:
    """An LLM run past the device's memory: the note that says so, with the single changes that make it fit
    (:func:`roofline.llm.metrics.fit_options`, the ones the headline names)."""
    from roofline.core.units import format_gib
    from roofline.llm.metrics import fit_options, footprint

    spec = as_spec(a.workload.llm)
    fp = footprint(spec, a.device) if spec is not None else None
    if spec is None or fp is None or fp.fits is not False or fp.capacity is None:
        return []
    ways = fit_options(spec, fp.capacity)
    return [f"does not fit: {format_gib(fp.total)} needed, {format_gib(fp.capacity)} on the device; "
            + ("fits with " + " / ".join(o.describe() for o in ways) if ways else "no single change makes it fit")]


def _workload_levers(a: Analysis, w: Workload, chains: list[tuple[int, int]],
                     devices: bool | Sequence[Device]) -> list[Lever]:
    """The levers for the whole workload: the LLM's own, fusion, weight precision, matrix units, another
    device, and the overhead floor (with a forecast)."""
    levers: list[Lever] = []
    spec = as_spec(w.llm)
    if spec is not None:
        levers += _llm_levers(a, spec)
    lv = _fusion_lever(a, w, chains, "workload")
    if lv:
        levers.append(lv)
    if spec is None or not any(x.name == "weight precision" for x in levers):
        levers += _weight_levers(a, w, None, None)
    matrix_mask = np.isin(w.column("kind"), MATRIX_KINDS)
    levers += _matrix_levers(a, w, matrix_mask, None)
    if devices is not False:
        levers += _device_levers(a, w, None if devices is True else list(devices))
    if a.forecast is not None:
        levers += _overhead_levers(a, w, chains)
    return levers


def _op_advice(a: Analysis, w: Workload, chains: list[tuple[int, int]], top: int) -> list[OpAdvice]:
    """The ``top`` ops by time (each at least 1 % of it), each with its own levers."""
    n = len(w)
    ops: list[OpAdvice] = []
    chain_of = {}
    for s, e in chains:
        for i in range(s, e):
            chain_of[i] = (s, e)
    for i in a.order()[:top]:
        i = int(i)
        if not a.share[i] >= 0.01 or not a.total_op_time[i] > 0:
            break
        idx = np.asarray([i])
        op_levers: list[Lever] = []
        if i in chain_of:
            lv = _fusion_lever(a, w, [chain_of[i]], "op")
            if lv:
                op_levers.append(lv)
        mask = np.zeros(n, dtype=bool)
        mask[i] = True
        if w.columns["weight_bytes"][i] > 0:
            op_levers += _weight_levers(a, w, mask, idx)
        if w.strings("kind", i) in MATRIX_KINDS:
            op_levers += _matrix_levers(a, w, mask, idx)
        g = w.strings("group", i)
        ops.append(OpAdvice(i, w.strings("name", i) + (f" in {g}" if g and g != w.strings("name", i) else ""),
                            float(a.share[i]), _roof_text(a, idx), _headroom(a, idx), op_levers))
    return ops
