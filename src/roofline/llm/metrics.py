"""What the LLM numbers mean on a device: memory fit, the largest batch that fits, the ridge batch, and
vectorised sweeps of the phase times.  Pure functions returning data.  The facts of one analysed run
(TTFT, time per token, tokens/s) are read by :func:`roofline.words.llm_report.report`.

>>> from roofline.frontends.llm import make_spec
>>> fp = footprint(make_spec("llama-2-7b", phase="decode", context=1024))
>>> round(fp.weights / 1e9, 2), round(fp.kv_cache / 1e9, 3)  # 6.738e9 params x 2 B; 2 x 32 layers x 4096 x 1024 x 2 B
(13.48, 0.537)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError
from roofline.core.formula import scenario_times
from roofline.core.precision import BITS
from roofline.hardware.device import Device
from roofline.llm.basis import activation_element_bytes, basis
from roofline.llm.expert_parallel import attention_tp, step_rows
from roofline.llm.sizes import activation_bytes, kv_cache_bytes, weight_bytes_resident
from roofline.llm.spec import LLMSpec, Precisions, parse_precision
from roofline.llm.table import ATTN, EXP, GEMM, LINK, VEC, OpTable, build_table, check_tp

#: Largest batch the ridge-batch and max-batch searches consider.
MAX_BATCH = 1 << 16


# -- device ceilings as arrays -------------------------------------------------------
def device_ceilings(device: Device, precisions: Precisions) -> dict[str, float]:
    """Peaks and bandwidths the LLM ops use on ``device``: GEMM / attention matrix roofs at their
    compute precisions (with the device's documented fallback), the fp32 vector roof, main memory
    and the interconnect (inf when absent: no tensor-parallel traffic to time)."""
    return {
        "peak_gemm": device.choose_compute("matrix", precisions.gemm).ceiling.flops,
        "peak_attn": device.choose_compute("matrix", precisions.attention).ceiling.flops,
        "peak_vector": device.choose_compute("vector", "fp32").ceiling.flops,
        "bandwidth": device.main_memory.bandwidth,
        "link_bandwidth": device.interconnect.bandwidth if device.interconnect else device.main_memory.bandwidth,
    }


def collective_latency(spec: LLMSpec, device: Device, phase: str) -> float:
    """Seconds of per-hop latency in one ``phase`` step's collectives over the tp group: per collective op, steps x the
    link's latency (:func:`roofline.engine.collectives.on_link`, the formula the per-op bound adds to bus bytes / bandwidth),
    times its count; 0 without a link latency or at tp 1.  A sweep adds it, so it agrees with ``llm --tp`` at its point.

    >>> from roofline.catalog import get_device
    >>> from roofline.frontends.llm import make_spec
    >>> spec = make_spec("llama-2-7b", phase="decode", tp=8)
    >>> round(collective_latency(spec, get_device("a100"), "decode") * 1e6, 1)  # (1 + 2 x 32) x 14 x 0.6 + 7 x 0.6 us
    550.2
    """
    link = device.interconnect
    if link is None or link.latency <= 0 or spec.tp <= 1:
        return 0.0
    from roofline.engine.collectives import canonical, on_link

    table = build_table(spec.arch, phase, spec.tp, spec.flash, spec.all_logits, spec.kv_reads, spec.fusions, spec.mtp)
    return float(sum(on_link(canonical(name), 1.0, spec.tp, link).latency * float(count)
                     for name, role, count in zip(table.names, table.roles, table.counts, strict=True) if role == LINK))


def _roofs(c: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(peaks (N, roles), bandwidths (N, 2)) from broadcastable ceiling arrays."""
    arrs = np.broadcast_arrays(*(np.atleast_1d(np.asarray(c[k], dtype=float)) for k in
                                 ("peak_gemm", "peak_attn", "peak_vector", "bandwidth", "link_bandwidth")))
    gemm, attn, vec, bw, link = (a.reshape(-1) for a in arrs)
    peaks = np.empty((len(gemm), 4))
    peaks[:, GEMM], peaks[:, ATTN], peaks[:, VEC], peaks[:, LINK] = gemm, attn, vec, vec
    return peaks, np.stack([bw, link], axis=1)


def step_time(table: OpTable, B: np.ndarray, eb: Mapping[str, Any], peaks: np.ndarray, bws: np.ndarray,
              *, mask: np.ndarray | None = None, split: bool = False) -> Any:
    """Roofline time of one step, per configuration: sum over ops of count x max(FLOPs/peak, bytes/bw).

    ``B`` (N, terms), ``peaks`` (N or 1, roles), ``bws`` (N or 1, 2), ``eb`` bytes per element
    (scalars or length-N arrays).  ``split``: return (compute time, memory time) summed per
    configuration instead.  The element sizes are folded into the bytes coefficients, one row
    per distinct precision combination; :func:`roofline.core.formula.scenario_times` does the rest.
    """
    c = table.coef
    keep = np.ones(len(table), dtype=bool) if mask is None else mask
    n = len(B)
    # the residual stream: the activations' precision unless stated; the routed experts' weights (the EXP
    # column of wq): the weights' unless their format is stated
    eb = {**eb, "r": eb.get("r", eb["a"]), "we": eb.get("we", eb["wq"])}
    sizes = np.stack([np.broadcast_to(np.asarray(eb[k], dtype=float), (n,))
                      for k in ("wq", "wu", "a", "kv", "r", "we")], axis=1)
    if (sizes == sizes[0]).all():  # one precision combination (the common case): no grouping
        combos, which = sizes[:1], None
    else:
        combos, which = np.unique(sizes, axis=0, return_inverse=True)
        which = which.reshape(-1)

    def activations(a: float, r: float) -> np.ndarray:  # the kept ops' activation bytes coefficients
        rd, wr = (np.broadcast_to(x, (len(table),))[keep][:, None]
                  for x in activation_element_bytes(table, {"a": a, "r": r}))
        return np.asarray(c["ar"][keep] * rd + c["aw"][keep] * wr)

    exp = np.arange(c["wq"].shape[1]) == EXP

    def weights(wq: float, we: float) -> np.ndarray:
        return np.asarray(c["wq"][keep] * np.where(exp, we, wq))

    bytes_coef = np.stack([weights(wq, we) + c["wu"][keep] * wu + activations(a, r)
                           + (c["kr"][keep] + c["kw"][keep]) * kv + c["xr"][keep] for wq, wu, a, kv, r, we in combos])
    roles = table.roles[keep]
    return scenario_times(B, c["flops"][keep], bytes_coef[0] if which is None else bytes_coef,
                          np.broadcast_to(peaks, (n, peaks.shape[1])), np.broadcast_to(bws, (n, bws.shape[1])),
                          roles, (roles == LINK).astype(int), table.counts[keep], bytes_group=which, split=split)


# -- vectorised sweeps ---------------------------------------------------------------
def sweep_times(spec: LLMSpec, *, batch: Any = None, context: Any = None, prompt: Any = None, gen: Any = None,
                ceilings: Mapping[str, Any], element_bytes: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
    """Phase times of ``spec`` for arrays of configurations at once (numpy broadcasting).

    ``batch``, ``context`` (decode), ``prompt`` and ``gen`` (prefill/generate) default to the
    spec's; ``ceilings`` holds ``peak_gemm``, ``peak_attn``, ``peak_vector``, ``bandwidth``,
    ``link_bandwidth`` (scalars or arrays, see :func:`device_ceilings`); ``element_bytes`` holds
    ``wq``, ``wu``, ``a``, ``kv`` bytes per element (arrays allowed; default: the spec's precisions).
    Returns {'prefill': s, 'decode': s per step, 'total': s}; the phase's missing part is 0.

    >>> import numpy as np
    >>> from roofline.frontends.llm import make_spec
    >>> spec = make_spec("llama-2-7b", phase="decode")
    >>> c = {"peak_gemm": 312e12, "peak_attn": 312e12, "peak_vector": 19.5e12, "bandwidth": 2.039e12,
    ...      "link_bandwidth": 300e9}
    >>> t = sweep_times(spec, batch=np.array([1, 64]), context=1024, ceilings=c)["decode"]
    >>> bool(t[1] < 64 * t[0])  # batching amortises the weight reads
    True
    """
    a, r = spec.arch, spec.moe_routing
    b = np.asarray(spec.batch if batch is None else batch, dtype=float)
    P = np.asarray(spec.prompt if prompt is None else prompt, dtype=float)
    S = np.asarray(spec.context if context is None else context, dtype=float)
    N = np.asarray(spec.gen if gen is None else gen, dtype=float)
    eb = dict(spec.precisions.bytes() if element_bytes is None else element_bytes)
    shape = np.broadcast_shapes(b.shape, P.shape, S.shape, N.shape, *(np.shape(v) for v in ceilings.values()),
                                *(np.shape(v) for v in eb.values()))
    b, P, S, N = (np.broadcast_to(x, shape).reshape(-1) for x in (b, P, S, N))
    peaks, bws = _roofs({k: np.broadcast_to(np.asarray(ceilings[k], dtype=float), shape) for k in
                         ("peak_gemm", "peak_attn", "peak_vector", "bandwidth", "link_bandwidth")})
    eb = {k: np.broadcast_to(np.asarray(v, dtype=float), shape).reshape(-1) for k, v in eb.items()}
    zero = np.zeros(b.shape)
    prefill = decode = zero
    if spec.phase in ("prefill", "generate"):
        table = build_table(a, "prefill", attention_tp(spec.tp, spec.layout), spec.flash, spec.all_logits,
                            spec.kv_reads, spec.fusions, spec.mtp)
        prefill = step_time(table, step_rows(a, basis(a, b, P, P, moe_routing=r), r, spec.layout), eb, peaks, bws)
    if spec.phase == "decode":
        table = build_table(a, "decode", attention_tp(spec.tp, spec.layout), spec.flash, spec.all_logits,
                            spec.kv_reads, spec.fusions, spec.mtp)
        decode = step_time(table, step_rows(a, basis(a, b, 1, S, moe_routing=r), r, spec.layout), eb, peaks, bws)
    if spec.phase == "generate":
        table = build_table(a, "decode", attention_tp(spec.tp, spec.layout), spec.flash, spec.all_logits,
                            spec.kv_reads, spec.fusions, spec.mtp)
        decode = step_time(table, step_rows(a, basis(a, b, 1, P + 1, P + N, moe_routing=r), r, spec.layout), eb, peaks, bws)  # mean over the steps
    total = prefill + decode * (N if spec.phase == "generate" else 1.0)
    return {"prefill": prefill.reshape(shape), "decode": decode.reshape(shape), "total": total.reshape(shape)}


@dataclass(frozen=True)
class GridSweep:
    """Times over a grid: axes (batch, context, device, precision); ``time`` is the phase total."""

    batch: np.ndarray
    context: np.ndarray
    devices: list[str]
    precisions: list[Precisions]
    prefill: np.ndarray
    decode: np.ndarray
    time: np.ndarray


def grid_sweep(spec: LLMSpec, *, batches: Sequence[int], contexts: Sequence[int], devices: Sequence[Device],
               precisions: Sequence[Precisions | tuple[Any, Any, Any]]) -> GridSweep:
    """Every (batch, context, device, precision) combination in one vectorised evaluation.

    ``contexts`` is the decode context (decode) or the prompt length (prefill, generate).
    ``precisions``: :class:`Precisions` or (wbits, abits, kvbits) tuples.
    """
    precs = [p if isinstance(p, Precisions) else
             Precisions(parse_precision(p[0], "wbits"), parse_precision(p[1], "abits"),
                        parse_precision(p[2], "kvbits"), spec.precisions.group_size) for p in precisions]
    b = np.asarray(batches, dtype=float)[:, None, None]
    c = np.asarray(contexts, dtype=float)[None, :, None]
    shape = (len(batches), len(contexts), len(devices), len(precs))
    out = {k: np.empty(shape) for k in ("prefill", "decode", "total")}
    for j, p in enumerate(precs):
        ceil = [device_ceilings(dev, p) for dev in devices]
        arrays = {k: np.asarray([x[k] for x in ceil])[None, None, :] for k in ceil[0]}
        is_decode = spec.phase == "decode"
        t = sweep_times(spec.replace(precisions=p), batch=b, context=c if is_decode else None,
                        prompt=None if is_decode else c, ceilings=arrays)
        for k in out:
            out[k][..., j] = t[k]
        _add_latency(out, spec, devices, j)
    return GridSweep(np.asarray(batches), np.asarray(contexts), [d.name for d in devices], precs,
                     out["prefill"], out["decode"], out["total"])


def _add_latency(out: dict[str, np.ndarray], spec: LLMSpec, devices: Sequence[Device], j: int) -> None:
    """Each device's collective latency (:func:`collective_latency`) on the grid's phase times of precision ``j``."""
    for d, dev in enumerate(devices):
        pre = collective_latency(spec, dev, "prefill") if spec.phase in ("prefill", "generate") else 0.0
        dec = collective_latency(spec, dev, "decode") if spec.phase in ("decode", "generate") else 0.0
        steps = float(spec.gen) if spec.phase == "generate" else 1.0
        out["prefill"][:, :, d, j] += pre
        out["decode"][:, :, d, j] += dec
        out["total"][:, :, d, j] += pre + dec * steps


# -- memory ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Footprint:
    """Bytes per device: weights (all experts), KV cache, transient activations; and the device capacity."""

    weights: float
    kv_cache: float
    activations: float
    capacity: float | None

    @property
    def total(self) -> float:
        return self.weights + self.kv_cache + self.activations

    @property
    def fits(self) -> bool | None:
        return None if self.capacity is None else self.total <= self.capacity


def footprint(spec: LLMSpec, device: Device | None = None) -> Footprint:
    cap = device.memory_capacity if device is not None else None
    return Footprint(weight_bytes_resident(spec), float(kv_cache_bytes(spec)), float(activation_bytes(spec)), cap)


def max_batch(spec: LLMSpec, capacity: float) -> int:
    """The largest batch whose footprint fits ``capacity`` bytes (0 when not even batch 1 fits).

    KV cache and activations are both proportional to the batch, so
    footprint(b) = weights + b x (footprint(1) - weights) and the answer is a division.
    """
    weights = weight_bytes_resident(spec)
    per_seq = float(kv_cache_bytes(spec, batch=1)) + float(activation_bytes(spec, batch=1))
    if capacity < weights + per_seq:
        return 0
    return int(min(MAX_BATCH * 16, math.floor((capacity - weights) / per_seq)))


#: the tensor-parallel degrees :func:`fit_options` tries: one node of up to 8 devices (an HGX/DGX board)
FIT_TP = (2, 4, 8)
#: the lower precisions it tries for the weights and the KV cache, widest first
FIT_BITS = ("int8", "int4")


@dataclass(frozen=True)
class FitOption:
    """One change that makes a run that does not fit the device's memory fit: ``lever`` tp | weights |
    kv_cache | flash | batch, ``value`` (2, 'int8', 'on', 4) and the footprint per device it leaves (bytes)."""

    lever: str
    value: int | str
    total: float

    def describe(self) -> str:
        """'tp 2', 'int8 weights', 'int8 KV cache', 'fused attention (drop --unfused)', 'batch <= 4'."""
        return {"tp": f"tp {self.value}", "weights": f"{self.value} weights", "kv_cache": f"{self.value} KV cache",
                "flash": "fused attention (drop --unfused)", "batch": f"batch <= {self.value}"}[self.lever]


def fit_options(spec: LLMSpec, capacity: float) -> tuple[FitOption, ...]:
    """The single changes that make ``spec`` fit ``capacity`` bytes per device, each computed from the
    footprint model (:func:`footprint`): the smallest tp of :data:`FIT_TP` the model divides by, the widest
    weight and KV-cache precision of :data:`FIT_BITS` below the current one, fused attention (no s x s score
    tensor in memory) when the run is unfused, the largest smaller batch (:func:`max_batch`).  Empty when the
    run fits, or when no single change is enough.

    >>> from roofline.frontends.llm import make_spec
    >>> spec = make_spec("llama-2-7b", phase="decode", batch=64, context=4096)  # 13.48 GB weights + 137.4 GB KV cache
    >>> # tp 2: 6.74 + 68.7 GB fits 80 GB; int8 KV: 13.48 + 68.7 = 82.2 GB does not, int4 (0.516 B): 13.48 + 35.4 does;
    >>> # batch: (80 - 13.48) GB / 2.148 GB per sequence (KV 2 x 32 x 4096 x 4096 x 2 B + activations) = 30.97
    >>> [o.describe() for o in fit_options(spec, 80e9)]
    ['tp 2', 'int4 KV cache', 'batch <= 30']
    """
    if footprint(spec).total <= capacity:
        return ()
    out: list[FitOption] = []
    for tp in (t for t in FIT_TP if t > spec.tp):
        try:
            check_tp(spec.arch, tp)
        except RooflineError:
            continue
        need = footprint(spec.replace(tp=tp)).total
        if need <= capacity:
            out.append(FitOption("tp", tp, need))
            break
    p = spec.precisions
    for field in ("weights", "kv_cache"):
        for name in FIT_BITS:
            if BITS[name] >= BITS[getattr(p, field)]:
                continue
            q = replace(p, weights=name) if field == "weights" else replace(p, kv_cache=name)
            need = footprint(spec.replace(precisions=q)).total
            if need <= capacity:
                out.append(FitOption(field, name, need))
                break
    if not spec.flash and (need := footprint(spec.replace(flash=True)).total) <= capacity:
        out.append(FitOption("flash", "on", need))
    b = max_batch(spec, capacity) if spec.batch > 1 else 0
    if 1 <= b < spec.batch:
        out.append(FitOption("batch", b, footprint(spec.replace(batch=b)).total))
    return tuple(out)


def fitting_batch(spec: LLMSpec, device: Device) -> int:
    """The largest batch that fits ``device``; an error when none does (the user asked for one)."""
    cap = device.memory_capacity
    if cap is None:
        raise RooflineError(f"device {device.name!r} lists no memory capacity; give --batch explicitly")
    b = max_batch(spec, cap)
    if b < 1:
        fp = footprint(spec.replace(batch=1), device)
        raise RooflineError(f"{spec.arch.name} does not fit {device.name} even at batch 1: weights "
                            f"{fp.weights / 1e9:.1f} GB + KV cache {fp.kv_cache / 1e9:.2f} GB + activations "
                            f"{fp.activations / 1e9:.2f} GB > {cap / 1e9:.1f} GB (try --tp, lower --wbits or --kvbits)")
    return b


def ridge_batch(spec: LLMSpec, device: Device, *, limit: int = MAX_BATCH) -> int | None:
    """Smallest decode batch at which the decode GEMMs (projections, MLP, experts, router, lm_head),
    summed, spend at least as long computing as reading memory on ``device``; None below ``limit``."""
    ceilings = device_ceilings(device, spec.precisions)
    # GEMMs depend on neither the phase lengths nor the attention kernel: share the answer
    key = spec.replace(batch=1, phase="decode", prompt=1, context=1, gen=1, flash=False, kv_reads="shared")
    return _ridge_batch(key, tuple(sorted(ceilings.items())), limit)


@lru_cache(maxsize=256)
def _ridge_batch(spec: LLMSpec, ceilings: tuple[tuple[str, float], ...], limit: int) -> int | None:
    table = build_table(spec.arch, "decode", attention_tp(spec.tp, spec.layout), spec.flash, spec.all_logits,
                            spec.kv_reads, spec.fusions, spec.mtp)
    mask = np.asarray([k == "matmul" for k in table.kinds])
    peaks, bws = _roofs(dict(ceilings))
    eb = spec.precisions.bytes()

    def compute_bound(b: np.ndarray) -> np.ndarray:
        ct, mt = step_time(table, step_rows(spec.arch, basis(spec.arch, b, 1, spec.context, moe_routing=spec.moe_routing), spec.moe_routing, spec.layout), eb, peaks, bws,
                           mask=mask, split=True)
        return ct >= mt

    # a vectorised scan over powers of two, then every batch in the bracket
    coarse = 2 ** np.arange(int(math.log2(limit)) + 1)
    ok = compute_bound(coarse)
    if not ok.any():
        return None
    k = int(np.argmax(ok))
    if k == 0:
        return 1
    fine = np.arange(int(coarse[k - 1]) + 1, int(coarse[k]) + 1)
    return int(fine[int(np.argmax(compute_bound(fine)))])


# -- the batch sweep ----------------------------------------------------------------------
@dataclass(frozen=True)
class BatchSweep:
    """Per-token latency and throughput against batch (decode step; prefill for phase prefill)."""

    phase: str
    batch: np.ndarray
    latency: np.ndarray  # s per output token (decode / generate) or TTFT (prefill)
    tokens_per_s: np.ndarray
    footprint: np.ndarray  # bytes per device
    fits: np.ndarray  # bool (all True when the device lists no capacity)
    max_batch: int | None
    ridge_batch: int | None

    def shown(self) -> list[int]:
        """The indices of the rows a table shows: batches at powers of two, the last, the ridge batch."""
        last = len(self.batch) - 1
        return [i for i, b in enumerate(self.batch.tolist())
                if (b & (b - 1)) == 0 or i == last or b == self.ridge_batch]


#: Most batches one --sweep evaluates (``ROOFLINE_MAX_SWEEP_POINTS`` overrides it).
MAX_SWEEP_POINTS = 100_000
#: Batches evaluated at once: memory stays flat however long the sweep.
SWEEP_CHUNK = 4096
_SWEEP_USAGE = "use batch=1..256, batch=1..4096:*2 (powers of 2), batch=1..1000:+8, batch=1,8,64 or batch=1..max"


def max_sweep_points() -> int:
    from roofline.core.errors import env_limit

    return env_limit("ROOFLINE_MAX_SWEEP_POINTS", MAX_SWEEP_POINTS)


def _whole(text: str) -> int:
    """'256' or '1e7' -> an int (a finite whole number); ValueError otherwise."""
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        v = float(text)
        if not math.isfinite(v) or v != int(v):
            raise ValueError(text) from None
        return int(v)


def _step(text: str) -> int:
    """'' -> 0 (every batch), '*F' -> -F (geometric), '+S' -> S; ValueError otherwise."""
    text = text.strip()
    if not text:
        return 0
    value = _whole(text[1:])
    if text[0] == "*" and value >= 2:
        return -value
    if text[0] == "+" and value >= 1:
        return value
    raise ValueError(text)


def expand_range(lo: int, hi: int, step: int = 0, *, text: str = "") -> list[int]:
    """lo..hi with ``step`` (0: every batch; S > 0: every S-th; -F: lo, lo*F, ... and hi), capped in points."""
    if step < 0:
        out, b = [], lo
        while b < hi:
            out.append(b)
            b *= -step
        return [*out, hi]
    n = (hi - lo) // max(step, 1) + 1
    cap = max_sweep_points()
    if n > cap:
        coarse = max(2, int(math.ceil((hi / lo) ** (1 / max(cap - 1, 1)))))
        shown = text or f"batch={lo}..{hi}"
        raise RooflineError(f"--sweep {shown}: {n:,} batches exceed the limit of {cap:,} points (set "
                            f"ROOFLINE_MAX_SWEEP_POINTS to raise it); use a coarser grid, e.g. "
                            f"batch={lo}..{'max' if 'max' in shown else hi}:*{coarse}")
    r = range(lo, hi + 1, max(step, 1))
    out = list(r)
    return out if out[-1] == hi else [*out, hi]


def parse_range(text: str) -> tuple[str, list[int] | None]:
    """'batch=1..256' -> ('batch', [1, ..., 256]); 'batch=1,8,64'; 'batch=1..4096:*2' (1, 2, 4, ..., 4096);
    'batch=1..100:+10' (1, 11, ..., 91, 100); 'batch=1..max' or 'max' -> ('batch', [1, -1]) and
    'batch=1..max:*2' -> ('batch', [1, -1, -2]): the step code of :func:`expand_range`, expanded by
    :func:`batch_sweep` once the largest fitting batch is known.  At most ``ROOFLINE_MAX_SWEEP_POINTS``
    (default 100,000) batches; more is an error suggesting a coarser grid."""
    key, sep, value = text.partition("=")
    if not sep:
        key, value = "batch", text
    if value.strip() == "max":
        value = "1..max"
    key = key.strip()
    if key != "batch":
        raise RooflineError(f"--sweep: {key!r} cannot be swept; {_SWEEP_USAGE}")
    value = value.strip()
    try:
        if ".." in value:
            lo_s, hi_s = value.split("..", 1)
            hi_s, _, step_s = hi_s.partition(":")
            lo, step = _whole(lo_s), _step(step_s)
            if hi_s.strip() == "max":
                if lo < 1:
                    raise ValueError
                return key, [lo, -1] + ([step] if step else [])
            hi = _whole(hi_s)
            if lo < 1 or hi < lo:
                raise ValueError
            return key, expand_range(lo, hi, step, text=text)
        if len(value) > 1_000_000:
            raise ValueError
        values = sorted({_whole(v) for v in value.split(",") if v.strip()})
        if not values or values[0] < 1:
            raise ValueError
        if len(values) > max_sweep_points():
            raise RooflineError(f"--sweep: {len(values):,} batches exceed the limit of {max_sweep_points():,} points "
                                "(set ROOFLINE_MAX_SWEEP_POINTS to raise it)")
        return key, values
    except RooflineError:
        raise
    except (ValueError, OverflowError):
        raise RooflineError(f"--sweep: cannot read {text!r}; {_SWEEP_USAGE}") from None


def batch_sweep(spec: LLMSpec, device: Device, batches: Iterable[int] | None = None) -> BatchSweep:
    """Throughput vs per-token latency for each batch (default 1 .. the largest that fits), vectorised.

    ``batches`` = [lo, -1] means lo .. the largest fitting batch (an error when none fits); [lo, -1, step]
    the same with a step code of :func:`expand_range`.  Evaluated in chunks of ``SWEEP_CHUNK`` batches.
    """
    cap = device.memory_capacity
    mb = max_batch(spec, cap) if cap is not None else None
    blist = None if batches is None else list(batches)
    if blist is None or (len(blist) in (2, 3) and blist[1] == -1):
        lo = 1 if blist is None else blist[0]
        step = blist[2] if blist is not None and len(blist) == 3 else 0
        hi = fitting_batch(spec, device) if cap is not None else 256
        if hi < lo:
            raise RooflineError(f"--sweep: the largest batch that fits {device.name} is {hi}, below {lo}")
        blist = expand_range(lo, hi, step, text=f"batch={lo}..max")
    b = np.asarray(blist, dtype=float)
    ceilings = device_ceilings(device, spec.precisions)
    key = "prefill" if spec.phase == "prefill" else "decode"
    latency = np.concatenate([sweep_times(spec, batch=b[i:i + SWEEP_CHUNK], ceilings=ceilings)[key]
                              for i in range(0, len(b), SWEEP_CHUNK)]) + collective_latency(spec, device, key)
    tps = b * spec.prompt / latency if spec.phase == "prefill" else b / latency
    fp = weight_bytes_resident(spec) + kv_cache_bytes(spec, batch=b) + activation_bytes(spec, batch=b)
    fits = fp <= cap if cap is not None else np.ones(len(b), dtype=bool)
    rb = ridge_batch(spec, device)
    return BatchSweep(spec.phase, b.astype(int), latency, tps, np.asarray(fp), np.asarray(fits), mb, rb)
