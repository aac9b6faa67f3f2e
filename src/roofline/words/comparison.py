"""Compare devices (and precisions) for one workload: the ranking behind ``roofline compare``.

>>> from roofline import Op, Workload, get_device
>>> from roofline.words.comparison import compare
>>> w = Workload.from_ops([Op("gemm", kind="matmul", flops=2e12, bytes_read=3e8, precision="bf16", unit="matrix")])
>>> [r.device for r in compare(w, [get_device("l4"), get_device("h100")])]
['NVIDIA H100 SXM5 80GB', 'NVIDIA L4']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from roofline.core import formats
from roofline.core.errors import RooflineError
from roofline.core.fileio import json_number
from roofline.core.precision import BITS, PRECISIONS
from roofline.engine.analysis import Analysis, analyze
from roofline.hardware.device import Device
from roofline.llm.metrics import footprint
from roofline.llm.spec import FORMAT_NAMES, LLM_PRECISIONS, as_spec
from roofline.words.advice import MATRIX_KINDS, llm_workload, tokens, with_matrix_precision
from roofline.words.summary import binding_roof
from roofline.work.workload import Workload


@dataclass
class CompareRow:
    """One (device, precision) of a comparison: roofline time, tokens/s (LLMs), binding roof, memory fit."""

    device: str
    precision: str
    time: float
    tokens_per_s: float
    binding: str
    analysis: Analysis
    memory: str = ""  # LLMs: footprint per device against the device's capacity
    runs_as: str = ""  # the asked precision has no roof on the device: what its ops ran at ("fp16"), else ""
    fits: bool | None = None  # LLMs: whether the run fits the device's memory (None: not an LLM, or no capacity)

    @property
    def label(self) -> str:
        """'NVIDIA H100 SXM5 80GB', or 'NVIDIA A100 SXM4 80GB (fp8->fp16)' for a precision asked for."""
        return self.device if self.precision == "as given" else f"{self.device} ({self.precision_label})"

    @property
    def forecast(self) -> float:
        """The forecast seconds (:mod:`roofline.engine.forecast`) when compared with ``forecast=True``, else NaN."""
        f = self.analysis.forecast
        return f.total_time if f is not None else math.nan

    @property
    def uncalibrated(self) -> str:
        """With a forecast on a device without a calibration, what that forecast is ('uncalibrated: forecast =
        bound ...', :attr:`Forecast.uncalibrated <roofline.engine.forecast.Forecast.uncalibrated>`), else ''."""
        f = self.analysis.forecast
        return f.uncalibrated if f is not None else ""

    def ranked_time(self, by: str) -> float:
        """The seconds the rows were ranked by (:func:`ranked_by`): the forecast, or the roofline time."""
        return self.forecast if by == "forecast" else self.time

    @property
    def precision_label(self) -> str:
        """'fp8', or 'fp8->fp16' when the device has no fp8 roof and the ops ran at fp16."""
        return f"{self.precision}->{self.runs_as}" if self.runs_as else self.precision

    @property
    def note(self) -> str:
        """'fp8 runs as fp16 on NVIDIA A100 SXM4 80GB (no fp8 roof)', or '' when the precision is native."""
        if not self.runs_as:
            return ""
        roof = formats.get(self.precision).roof if self.precision in FORMAT_NAMES else self.precision
        return f"{self.precision} runs as {self.runs_as} on {self.device} (no {roof} roof)"

    def to_dict(self, x_best: float | None) -> dict[str, Any]:
        """The row as JSON; ``x_best``: its time over the best row's, both on what the rows were ranked by
        (:func:`times_best`)."""
        return {"device": self.device, "precision": self.precision, "time_s": self.time,
                "tokens_per_s": json_number(self.tokens_per_s),
                "x_best": x_best, "binding_roof": self.binding, "memory": self.memory or None,
                "runs_as": self.runs_as or None, "note": self.note or None,
                "forecast_s": json_number(self.forecast),
                "uncalibrated": self.uncalibrated or None}


def runs_as(analysis: Analysis, precision: str) -> str:
    """What ops asked at ``precision`` ran at on a device with no ``precision`` roof: '' when it has one.

    The precisions of the ceilings those ops fell back to (:meth:`Analysis.fallback`), the one with the
    most roofline time first, joined by '/' ('fp16/fp32': matrix ops on fp16, vector ops on fp32).
    A device with a roof at ``precision`` on any unit runs it natively ('' even if, say, its
    elementwise ops have no fp8 vector roof: no device has one).

    >>> from roofline import Op, Workload, analyze, get_device
    >>> w = Workload.from_ops([Op("gemm", kind="matmul", flops=2e12, bytes_read=1e9, precision="fp8", unit="matrix")])
    >>> runs_as(analyze(w, get_device("a100")), "fp8"), runs_as(analyze(w, get_device("h100")), "fp8")
    ('fp16', '')
    """
    if precision in FORMAT_NAMES:  # a number format runs on its roof's precision
        precision = formats.get(precision).roof
    if precision == "as given" or any(c.precision == precision for c in analysis.device.compute):
        return ""
    asked = analysis.workload.column("precision") == precision
    index, op_time = analysis.ceiling_index[asked], analysis.total_op_time[asked]
    time: dict[str, float] = {}
    for ci in np.unique(index):  # per ceiling used: the fallback recorded for its ops (Analysis.fallback)
        if analysis.fallbacks[int(ci)]:
            ran = analysis.ceilings[int(ci)].precision
            time[ran] = time.get(ran, 0.0) + float(op_time[index == ci].sum())
    return "/".join(sorted(time, key=lambda p: (-time[p], p)))


def at_precision(workload: Workload, precision: str) -> Workload:
    """The workload re-run at ``precision`` (see the command's help); an LLM workload is rebuilt from its run."""
    fmt = formats.get(precision) if precision in FORMAT_NAMES else None  # a number format: its roof, its bytes
    if precision not in PRECISIONS and fmt is None:
        raise RooflineError(f"--precision: {precision!r} is not one of {', '.join(PRECISIONS)}, or a number format: "
                            f"{', '.join(FORMAT_NAMES)}")
    roof = fmt.roof if fmt else precision
    llm = as_spec(workload.llm)
    if llm is not None:
        if roof not in LLM_PRECISIONS and fmt is None:
            raise RooflineError(f"--precision: {precision!r} is not available for LLMs; use one of "
                                f"{', '.join(LLM_PRECISIONS)}, or a number format: {', '.join(FORMAT_NAMES)}")
        block = fmt.name if fmt and fmt.block_scaled else ""
        p = replace(llm.precisions, weights=roof, activations=roof, formats=(block, block, llm.precisions.formats[2]))
        return llm_workload(llm, precisions=p)
    mask = np.isin(workload.column("kind"), MATRIX_KINDS)
    w = with_matrix_precision(workload, roof, mask) if mask.any() else workload
    # the other ops store their data at that precision too (a format's element bits with its scales)
    bits = fmt.bits_per_element("activation") if fmt else BITS[roof]
    old = np.asarray([BITS[p] for p in w.tables["precision"]], dtype=float)[w.columns["precision"]]
    scale = np.where(~mask & (old > bits), bits / old, 1.0)
    return w.replace(bytes_read=w.columns["bytes_read"] * scale, bytes_written=w.columns["bytes_written"] * scale,
                     weight_bytes=w.columns["weight_bytes"] * scale,
                     precision=np.where(~mask, roof, w.column("precision")))


def memory_fit(workload: Workload, device: Device) -> str:
    """LLMs: 'fits (15.5 of 79.15 GiB)' or 'DOES NOT FIT (131.5 > 79.15 GiB)' per device; '' otherwise.
    The capacity is :attr:`Device.memory_capacity <roofline.hardware.device.Device.memory_capacity>` (the reported
    total less the reserve), in GiB as ``nvidia-smi`` counts.

    A ranking by roofline time alone would put a model that cannot be loaded first."""
    from roofline.core.units import format_gib

    spec = as_spec(workload.llm)
    cap = device.memory_capacity
    if spec is None or not cap:
        return ""
    need = footprint(spec).total
    if need <= cap:
        return f"fits ({need / 2**30:.1f} of {format_gib(cap)})"
    return f"DOES NOT FIT ({need / 2**30:.1f} > {format_gib(cap)})"


def _arguments(workload: Any, devices: Any, precisions: Any, forecast: Any) -> tuple[list[Device], list[str]]:
    """The API boundary (:mod:`roofline.core.arguments`): a Workload; a non-empty list of Devices or device names
    (one name or Device alone is a list of one); precisions a list of names (one name alone too)."""
    from roofline.bench.resolve import resolve_device
    from roofline.core import arguments as arg

    arg.need(workload, Workload, "compare", "workload", "a Workload")
    accepts = "a non-empty list of Devices or device names (str)"
    if isinstance(devices, (str, Device)):
        devices = [devices]
    if not isinstance(devices, Sequence) and not (hasattr(devices, "__iter__") and not isinstance(devices, dict)):
        raise arg.type_error("compare", "devices", accepts, devices)
    devs = list(devices)
    if not devs:
        raise arg.value_error("compare", "devices", accepts, devices)
    for i, d in enumerate(devs):
        arg.need(d, (str, Device), "compare", f"devices[{i}]", "a Device or a device name (str)")
    if isinstance(precisions, str):
        precisions = [precisions]
    if not isinstance(precisions, Sequence) or not precisions:
        raise arg.type_error("compare", "precisions", "a non-empty list of precision names (str)", precisions)
    for i, p in enumerate(precisions):
        arg.text(p, "compare", f"precisions[{i}]")
    arg.boolean(forecast, "compare", "forecast")
    return [resolve_device(d) if isinstance(d, str) else d for d in devs], list(precisions)


def compare(workload: Workload, devices: Sequence[Device | str], precisions: Sequence[str] = ("as given",), *,
            forecast: bool = False, tf32: str = "default") -> list[CompareRow]:
    """Every (device, precision) analysed, fastest first, each with its binding roof.

    A precision the device has no roof for is run at its fallback, and the row says so (:func:`runs_as`).

    ``precisions``: "as given", or precisions to re-run the workload at (:func:`at_precision`).
    ``forecast``: each row also carries the forecast beside its bound, and the rows are ranked by it
    (:func:`ranked_by` says which).
    An LLM workload (one with ``llm``) also gets tokens/s and whether it fits each device's memory.

    >>> from roofline import Op, Workload, get_device
    >>> w = Workload.from_ops([Op("gemv", kind="matmul", flops=2e9, bytes_read=2e9, precision="bf16", unit="matrix")])
    >>> [(r.device, r.binding) for r in compare(w, [get_device("h100")])]
    [('NVIDIA H100 SXM5 80GB', 'HBM 3.35 TB/s (memory, 100% of the time)')]
    """
    devices, precisions = _arguments(workload, devices, precisions, forecast)
    rows = []
    for prec in precisions:
        w = workload if prec == "as given" else at_precision(workload, prec)
        for d in devices:
            a = analyze(w, d, forecast=forecast, tf32=tf32)
            tps = tokens(w) / a.total_time if w.llm is not None and a.total_time > 0 else math.nan
            fp = footprint(run, d) if (run := as_spec(w.llm)) is not None else None
            rows.append(CompareRow(d.name, prec, a.total_time, tps, binding_roof(a).describe(), a, memory_fit(w, d),
                                   runs_as(a, prec), fp.fits if fp is not None else None))
    rows.sort(key=lambda r: (r.forecast, r.time) if forecast else (r.time,))
    return rows


def vs_best(rank: int, x_best: float | None) -> str:
    """'best' for the first row only, else how fast against it on what the rows were ranked by ('0.78x as fast',
    '1/480 as fast', 'as fast' for a tie; :func:`times_best` gives ``x_best``): read down the column, in rank
    order."""
    from roofline.core.units import format_speedup

    if rank == 1:
        return "best"
    return format_speedup(1 / x_best) if x_best else "-"


def ranked_by(rows: Sequence[CompareRow]) -> str:
    """What :func:`compare` ranked ``rows`` by: the forecast where they carry one, else the roofline time (bound)."""
    return "forecast" if rows and not math.isnan(rows[0].forecast) else "roofline time (the bound)"


def times_best(rows: Sequence[CompareRow]) -> list[float | None]:
    """Each row's time over the first (best) row's, both on what the rows were ranked by (:func:`ranked_by`): 1
    for the best, never below 1 after it, so the column reads in rank order.  An all-zero workload takes 0 s
    everywhere: every row is as fast as the best (1); None where a ratio has no meaning.

    >>> from roofline import Op, Workload, get_device
    >>> w = Workload.from_ops([Op("gemv", kind="matmul", flops=2e9, bytes_read=2e9, precision="bf16", unit="matrix")])
    >>> [round(x, 2) for x in times_best(compare(w, [get_device("h100"), get_device("a100")]))]  # 3.35 / 2.039 TB/s
    [1.0, 1.64]
    """
    if not rows:
        return []
    by = "forecast" if ranked_by(rows) == "forecast" else "bound"
    best = rows[0].ranked_time(by)
    out: list[float | None] = []
    for r in rows:
        t = r.ranked_time(by)
        out.append(t / best if best > 0 else (1.0 if t == best else None))
    return out


def calibration_mix(rows: Sequence[CompareRow]) -> str:
    """'' unless the rows are ranked by forecasts of unlike kinds; then the sentence that must lead the
    comparison: which devices have no calibration (their forecast is their bound) and, since the ranking then
    weighs a bound against calibrated forecasts, which device is fastest by the bound.

    >>> from roofline import get_device
    >>> from roofline.frontends.llm import from_llm
    >>> w = from_llm("llama-3-8b", phase="decode")
    >>> mix = calibration_mix(compare(w, [get_device("h100"), get_device("b200")], forecast=True))
    >>> mix.startswith("forecasts not alike: 1 of 2 devices uncalibrated (forecast = bound): NVIDIA B200")
    True
    """
    from roofline.core.text import display
    from roofline.core.units import format_seconds

    if ranked_by(rows) != "forecast":
        return ""
    bare = [r for r in rows if r.uncalibrated]
    if not bare or len(bare) == len(rows):
        return ""
    fitting = [r for r in rows if r.fits is not False] or list(rows)
    by_bound = min(fitting, key=lambda r: r.time)
    return (f"forecasts not alike: {len(bare)} of {len(rows)} devices uncalibrated (forecast = bound): "
            f"{', '.join(display(r.label) for r in bare)}; by the bound, {display(by_bound.label)} is the fastest "
            f"({format_seconds(by_bound.time)})")


def time_basis(workload: Workload) -> tuple[str, str, str]:
    """(the time column's header, the basis in a sentence, what that time is): every figure of a comparison
    is on this one basis.

    >>> from roofline.frontends.llm import from_llm
    >>> time_basis(from_llm("llama-2-7b", phase="generate"))[:2]
    ('run time', 'for the whole run (prompt 1,024 + 256 generated tokens, batch 1)')
    """
    spec = as_spec(workload.llm)
    if spec is None:
        return "time", "for one run of the workload", "the roofline bound of one run of the workload"
    if spec.phase == "generate":
        run = f"prompt {spec.prompt:,} + {spec.gen:,} generated tokens, batch {spec.batch:,}"
        return "run time", f"for the whole run ({run})", f"the bound of the whole run ({run}), not per token"
    if spec.phase == "decode":
        step = f"one decode step at context {spec.context:,}, batch {spec.batch:,}"
        return "per token", f"per output token ({step})", f"the bound of {step}: the time per output token"
    run = f"prompt {spec.prompt:,}, batch {spec.batch:,}"
    return "TTFT", f"to the first token ({run})", f"the bound of the prefill ({run}): the time to the first token"


def glossary(workload: Workload, rows: Sequence[CompareRow]) -> str:
    """The line under the ranking: what each time column is."""
    head, _, what = time_basis(workload)
    parts = [f"{head} = {what}"]
    if (run := as_spec(workload.llm)) is not None:
        kind = "prompt" if run.phase == "prefill" else "output"
        parts.append(f"tokens/s = {kind} tokens of the whole batch over the {head} bound")
    if rows and not math.isnan(rows[0].forecast):
        parts.append("forecast = the expected time on the same basis")
    return "times: " + "; ".join(parts)


def answer(workload: Workload, rows: Sequence[CompareRow]) -> str:
    """The comparison's first line, an answer sentence: the fastest device that fits (by what the rows were
    ranked by, on their one time basis), how much faster than the next, and which do not fit the model.  A
    ranking by forecasts of calibrated and uncalibrated devices says so first (:func:`calibration_mix`).

    >>> from roofline import get_device
    >>> from roofline.frontends.llm import from_llm
    >>> w = from_llm("llama-3-8b", phase="decode")
    >>> answer(w, compare(w, [get_device("a100"), get_device("h100")]))[:60]
    'NVIDIA H100 SXM5 80GB is the fastest: 4.52 ms bound per outp'
    """
    from roofline.core.text import display
    from roofline.core.units import format_count, format_seconds, format_speedup
    from roofline.words.llm_report import report

    if not rows:
        return "no device compared"
    fitting = [r for r in rows if r.fits is not False]
    pool = fitting or list(rows)
    best = pool[0]
    by = "forecast" if ranked_by(rows) == "forecast" else "bound"
    _, basis, _ = time_basis(workload)
    t = best.forecast if by == "forecast" else best.time
    text = f"{format_seconds(t)} {by} {basis}"
    spec = as_spec(workload.llm)
    if spec is not None:
        rate = best.tokens_per_s * best.time / t if t > 0 else math.nan  # the tokens over the same time
        text += f", {format_count(rate)} {'prompt' if spec.phase == 'prefill' else 'output'} tokens/s"
        tpot = report(best.analysis).tpot
        if spec.phase == "generate" and tpot is not None:
            text += f", {format_seconds(tpot)} bound per output token"
    if len(pool) > 1:
        o = pool[1]
        ratio = o.forecast / best.forecast if by == "forecast" else (o.time / best.time if best.time > 0 else 1.0)
        text += f"; {format_speedup(ratio)} than {display(o.label)}"
    out = [r for r in rows if r.fits is False]
    if not fitting:
        need = footprint(spec).total / 2**30 if spec is not None else 0.0
        mix = calibration_mix(rows)
        return ((f"{mix}. " if mix else "")
                + f"none of the {len(rows)} devices fits {display(workload.title)} in memory ({need:.1f} GiB needed); "
                f"if one did, {display(best.label)} would be the fastest: {text}")
    lead = f"{display(best.label)} is the fastest" + (" that fits" if out else "")
    if out:
        text += "; does not fit: " + ", ".join(display(r.label) for r in out)
    mix = calibration_mix(rows)
    return f"{mix}. By forecast, {lead}: {text}" if mix else f"{lead}: {text}"
