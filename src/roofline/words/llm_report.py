"""What an analysed LLM run means on its device: TTFT, time per output token, tokens/s, memory fit, the
largest batch that fits, the ridge batch and the parameter counts, read once from an
:class:`~roofline.engine.analysis.Analysis` (the summary layer: renderers print these facts, they compute none).

>>> from roofline import Device, analyze
>>> from roofline.frontends.llm import from_llm
>>> from roofline.words.llm_report import report
>>> dev = Device.simple("a100ish", "312 TFLOP/s", "2.039 TB/s", precision="bf16", unit="matrix", kind="gpu")
>>> r = report(analyze(from_llm("llama-2-7b", phase="decode", context=1024), dev))
>>> round(r.tpot * 1e3, 2)  # ms/token: (13.21 GB weights (embedding: 1 row) + 0.54 GB KV cache) / 2.039 TB/s = 6.74,
6.75
>>> # + the activations' few MB (fused attention, the default: no score tensor)
>>> round(r.parameters / 1e9, 2)  # 32 layers x 202.4 M + 2 x 131.1 M (embedding and lm_head, untied) + norms
6.74
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from roofline.core.errors import RooflineError
from roofline.llm.metrics import FitOption, Footprint, fit_options, footprint, max_batch, ridge_batch
from roofline.llm.model import LLMSpec, param_counts
from roofline.llm.spec import as_spec, context_note

if TYPE_CHECKING:
    from roofline.engine.analysis import Analysis


@dataclass
class LLMReport:
    """Latency, throughput and memory of one LLM run on one device (per device with tp)."""

    spec: LLMSpec
    device: str
    phase_time: dict[str, float]  # 'prefill' / 'decode': total seconds of that phase
    phase_flops: dict[str, float]
    phase_bytes: dict[str, float]
    interconnect_time: float
    ttft: float | None  # seconds to the first token (prefill)
    tpot: float | None  # seconds per output token (one decode step; mean over the steps for generate)
    tokens_per_s: float  # decode/generate: output tokens/s over the batch; prefill: prompt tokens/s
    latency: float  # seconds of the whole phase (generate: TTFT + gen x TPOT)
    footprint: Footprint
    max_batch: int | None  # None when the device lists no capacity
    ridge_batch: int | None
    parameters: float  # the model's parameters, every expert counted (llm.model.param_counts)
    active_parameters: float  # the ones one token uses: top_k routed experts per MoE layer
    findings: list[str] = field(default_factory=list)
    fits_with: tuple[FitOption, ...] = ()  # does not fit: the single changes that make it fit (fit_options)
    forecast_phase_time: dict[str, float] = field(default_factory=dict)  # as phase_time, the forecast's seconds
    uncalibrated: str = ""  # with a forecast on a device without a calibration: what it is (Forecast.uncalibrated)
    context_note: str = ""  # the prompt past max_position_embeddings, within rope scaling (llm.spec.context_note)

    @property
    def fits(self) -> bool | None:
        """Whether the run fits the device's memory (None when the device lists no capacity)."""
        return self.footprint.fits

    @property
    def steps(self) -> int:
        """Decode steps of the run: ``gen`` for generate, 1 for decode, 0 for prefill."""
        return {"generate": self.spec.gen, "decode": 1}.get(self.spec.phase, 0)

    @property
    def forecast_ttft(self) -> float | None:
        """The forecast's seconds to the first token (None without a forecast or a prefill)."""
        return self.forecast_phase_time.get("prefill")

    @property
    def forecast_tpot(self) -> float | None:
        """The forecast's seconds per output token (one decode step; the mean over the steps for generate)."""
        t = self.forecast_phase_time.get("decode")
        return t / self.steps if t is not None and self.steps else None

    @property
    def forecast_latency(self) -> float | None:
        """The forecast's seconds of the whole phase (generate: its TTFT + gen x its time per token)."""
        return sum(self.forecast_phase_time.values()) if self.forecast_phase_time else None

    def decode_rate(self, tpot: float | None) -> float | None:
        """Output tokens/s over the batch while decoding: batch / (seconds per output token)."""
        return self.spec.batch / tpot if tpot else None

    def basis(self) -> str:
        """What the whole run is: 'prompt 1024 + 256 generated tokens, batch 16' (generate), 'one decode step at
        context 1024, batch 16' (decode), 'prompt 1024, batch 16' (prefill)."""
        s = self.spec
        what = {"generate": f"prompt {s.prompt:,} + {s.gen:,} generated tokens",
                "decode": f"one decode step at context {s.context:,}"}.get(s.phase, f"prompt {s.prompt:,}")
        return f"{what}, batch {s.batch:,}"


def report(analysis: Analysis) -> LLMReport:
    """Read an analysed LLM workload (from :func:`roofline.frontends.llm.from_llm`) as latency,
    throughput and memory facts.  A run that does not fit the device is a finding, not an error."""
    w = analysis.workload
    spec = as_spec(w.llm)
    if spec is None:
        raise RooflineError("workload was not built by the LLM frontend (it has no LLM run); use from_llm")
    dev = analysis.device
    names = w.tables["name"]
    phase_of = np.asarray([n.split(".", 1)[0] for n in names], dtype=object)[w.columns["name"]]
    times, flops, nbytes, forecast = {}, {}, {}, {}
    f = analysis.forecast
    count = w.columns["count"]
    for phase in ("prefill", "decode"):
        m = phase_of == phase
        if m.any():
            times[phase] = float(analysis.total_op_time[m].sum())
            flops[phase] = float(w.columns["flops"][m] @ count[m])
            nbytes[phase] = float(w.bytes[m] @ count[m])
            if f is not None:
                forecast[phase] = float(f.total_op_time[m].sum())
    link = float(analysis.total_op_time[analysis.level_index < 0].sum())
    ttft = times.get("prefill")
    steps = spec.gen if spec.phase == "generate" else 1
    tpot = times["decode"] / steps if "decode" in times else None
    if spec.phase == "prefill":
        latency = times["prefill"]
        tps = spec.batch * spec.prompt / latency
    elif spec.phase == "decode":
        latency = times["decode"]
        tps = spec.batch / latency
    else:
        latency = times["prefill"] + times["decode"]
        tps = spec.batch * spec.gen / latency
    fp = footprint(spec, dev)
    mb = max_batch(spec, fp.capacity) if fp.capacity is not None else None
    rb = ridge_batch(spec, dev)  # decode GEMMs: independent of the phase and the lengths
    total, active = param_counts(spec.arch)
    fits_with = fit_options(spec, fp.capacity) if fp.fits is False and fp.capacity is not None else ()
    return LLMReport(spec, dev.name, times, flops, nbytes, link, ttft, tpot, tps, latency, fp, mb, rb, total, active,
                     _findings(spec, dev.name, fp, mb, rb, link, analysis.total_time), fits_with, forecast,
                     f.uncalibrated if f is not None else "", context_note(spec, refuse=False))


def _findings(spec: LLMSpec, device: str, fp: Footprint, mb: int | None, rb: int | None, link: float,
              total_time: float) -> list[str]:
    """What the user should know about the run: it does not fit, the batch exceeds the largest that fits,
    the interconnect's share, which side of the ridge batch the decode GEMMs are."""
    findings = []
    if fp.fits is False and fp.capacity is not None:
        g = 2**30  # GiB, as the capacity (Device.memory_capacity) is printed
        findings.append(f"does not fit: needs {fp.total / g:.2f} GiB per device (weights {fp.weights / g:.2f} + "
                        f"KV cache {fp.kv_cache / g:.2f} + activations {fp.activations / g:.2f}) but "
                        f"{device} has {fp.capacity / g:.2f} GiB" + ("" if mb else "; no batch fits"))
    if mb and spec.batch > mb:
        findings.append(f"batch {spec.batch} exceeds the largest batch that fits ({mb})")
    if link > 0 and total_time > 0:
        findings.append(f"interconnect (tp {spec.tp}) takes {100 * link / total_time:.1f}% of the time")
    if rb is not None and spec.phase != "prefill":
        side = "compute-bound" if spec.batch >= rb else "memory-bound"
        findings.append(f"decode GEMMs are {side} at batch {spec.batch} (ridge batch {rb})")
    return findings
