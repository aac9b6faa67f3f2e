"""``roofline.serve``: a serving run set up (model, devices, KV cache, requests) and simulated.

``device`` with ``tp`` N is one replica of N devices over the device's interconnect.  A ``system`` runs
``system.devices // tp`` replicas (tp inside a node, over its node tier); a dispatcher sends request i to
replica i mod R (round robin: the replicas are identical), and a closed loop gives each replica C / R
clients.

The KV cache of each device holds what ``gpu_memory_utilization`` of its memory leaves after the resident
weights and the activations of the largest prefill step (one sequence of the token budget, or of the longest
prompt, at least 2048 tokens as vLLM profiles), in blocks of ``block_size`` tokens (vLLM's defaults: 0.9, 16).

>>> r = serve("llama-2-7b", "h100", traffic=Traffic(isl=128, osl=16, requests=4, concurrency=2))
>>> r.figures.requests, r.figures.preemptions
(4, 0)

How the engine runs (scheduler, precisions, kernels, KV cache, timing) is a :class:`ServeConfig`:

>>> cfg = ServeConfig(batching=Batching("chunked", max_batch=64), timing=Timing(bound=True))
>>> serve("llama-2-7b", "h100", traffic=Traffic(isl=128, osl=16, requests=4, rate=2.0), config=cfg).scheduler
'continuous batching (chunked prefill, 2048 tokens per iteration), max batch 64'

"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError
from roofline.core.units import format_bytes
from roofline.hardware.device import Device
from roofline.llm.sizes import activation_bytes, kv_cache_bytes, weight_bytes_resident
from roofline.llm.spec import LLMSpec, make_spec
from roofline.serving.config import Batching, ServeConfig, Timing, check_config
from roofline.serving.engine import ReplicaResult, simulate
from roofline.serving.figures import ServingFigures, Slo, figures, parse_slo, price_per_mtok
from roofline.serving.mla_steps import step_model
from roofline.serving.requests import Requests, Traffic, make_requests
from roofline.serving.schedulers import Scheduler
from roofline.serving.steps import StepModel

__all__ = ["Batching", "ServeConfig", "ServeResult", "Timing", "Traffic", "iteration_time", "kv_blocks", "serve"]

#: Preemptions above this share of the requests earn a note naming a scheduler that does not thrash (issue 52's
#: acceptance bound on published rows: preemptions <= 5% of requests).
PREEMPTION_NOTE = 0.05
#: Activations are sized for at least this many tokens (vLLM profiles a step of max_num_batched_tokens,
#: at least 2048 by default).
PROFILE_TOKENS = 2048


@dataclass(frozen=True)
class ServeResult:
    """A serving run: its setup in words and numbers, and its :class:`figures
    <roofline.serving.figures.ServingFigures>`.  ``render.serve`` draws it; :meth:`to_dict` is its JSON."""

    model: str
    device: str
    tp: int
    replicas: int
    scheduler: str
    ranked_by: str  # 'forecast' or 'bound'
    figures: ServingFigures
    memory: dict[str, float]
    requests: str
    notes: tuple[str, ...] = field(default=())
    #: the model that produced the figures (:func:`setup`): precisions, fusions applied, KV reads, attention,
    #: the length laws, the bytes-model label
    setup: dict[str, Any] = field(default_factory=dict)
    #: '' when the forecast's device has a calibration (or the run is timed by the bound); else what the
    #: forecast is: every op at its bound, so not alike with a calibrated device's (issue 48)
    uncalibrated: str = ""

    @property
    def devices(self) -> int:
        return self.tp * self.replicas

    def usd_per_mtok(self, price_per_device_hour: float) -> float:
        """US$ per million output tokens at this run's throughput (:func:`~roofline.serving.figures.price_per_mtok`)."""
        return price_per_mtok(price_per_device_hour, self.devices, self.figures.output_tokens_per_s)

    def to_dict(self, *, headline: str) -> dict[str, Any]:
        """The ``roofline.serve/1`` document, with the ``headline`` the report printed."""
        return {"schema": "roofline.serve/1", "model": self.model, "device": self.device, "tp": self.tp,
                "replicas": self.replicas, "devices": self.devices, "scheduler": self.scheduler,
                "ranked_by": self.ranked_by, "requests_model": self.requests, "memory_per_device": self.memory,
                "uncalibrated": self.uncalibrated or None, "headline": headline, **self.figures.to_dict(),
                "notes": list(self.notes), "setup": self.setup}


def kv_blocks(spec: LLMSpec, device: Device, *, block_size: int, utilization: float, act_tokens: int,
              of_free: bool = False) -> tuple[int, dict[str, float]]:
    """KV blocks per device and the memory split (bytes); a model that does not fit at all is one line.

    ``of_free=False`` (vLLM's ``--gpu-memory-utilization``): the KV cache is what ``utilization`` x capacity
    leaves after weights and activations.  ``of_free=True`` (TensorRT-LLM's ``kvcache_free_gpu_mem_frac``,
    ``KvCacheConfig.freeGpuMemoryFraction``): it is ``utilization`` x the memory left after them.
    """
    if not (0 < utilization <= 1):
        raise RooflineError(f"--gpu-memory-utilization must be in (0, 1], got {utilization!r}")
    cap = device.main_memory.capacity  # vLLM: --gpu-memory-utilization of the total the GPU reports
    if not cap:
        raise RooflineError(f"device {device.name!r} states no memory capacity: the KV cache cannot be sized")
    weights = weight_bytes_resident(spec)
    act = float(activation_bytes(spec.replace(phase="prefill", prompt=max(act_tokens, 1), batch=1)))
    usable = utilization * cap
    per_token = float(kv_cache_bytes(spec, 1, 1))  # a device's share of one token (attention data-parallel: 1/tp)
    free = utilization * (cap - weights - act) if of_free else usable - weights - act
    share = (f"{utilization:g} x what they leave of {format_bytes(cap)}" if of_free
             else f"of {format_bytes(usable)} ({utilization:g} x {format_bytes(cap)})")
    if free < block_size * per_token:
        raise RooflineError(f"{spec.arch.name} does not fit on {device.name} (tp {spec.tp}): weights "
                            f"{format_bytes(weights)} + activations {format_bytes(act)} per device leave "
                            f"{format_bytes(max(free, 0.0))} {share} for the KV cache, less than one block of "
                            f"{block_size} tokens ({format_bytes(block_size * per_token)})")
    if of_free:
        usable = weights + act + free  # the memory the engine holds: all but (1 - fraction) of the free
    blocks = int(free // (block_size * per_token))
    return blocks, {"capacity": float(cap), "usable": usable, "weights": weights, "activations": act,
                    "kv_cache": blocks * block_size * per_token, "kv_bytes_per_token": per_token}


def _arguments(model: Any, device: Any, system: Any, tp: Any, func: str = "serve") -> None:
    """The API boundary (:mod:`roofline.core.arguments`) of :func:`serve`: types and ranges before any work."""
    from collections.abc import Mapping

    from roofline.core import arguments as arg
    from roofline.llm.config import Arch

    arg.need(model, (str, Mapping, Arch), func, "model", "a model name or config path (str), a config (dict) or an Arch")
    if device is not None:
        arg.need(device, (str, Device), func, "device", "a Device or a device name (str)")
    if system is not None:
        arg.text(system, func, "system")
    arg.positive_int(tp, func, "tp")


def _traffic(traffic: Any) -> Traffic:
    from roofline.core import arguments as arg

    return Traffic() if traffic is None else arg.need(traffic, Traffic, "serve", "traffic",
                                                      "a roofline.serving.requests.Traffic")


def _slo(slo: Any) -> Slo | None:
    from roofline.core import arguments as arg

    if slo is None or isinstance(slo, Slo):
        return slo
    return parse_slo(arg.need(slo, str, "serve", "slo", "a Slo or a text such as 'ttft=2s,tpot=200ms'"))


def serve(model: Any, device: str | Device | None = None, *, system: str | None = None, tp: int = 1,
          traffic: Traffic | None = None, config: ServeConfig | None = None,
          slo: str | Slo | None = None) -> ServeResult:
    """Simulate serving ``model`` on ``device`` (``tp`` devices per replica) or ``system`` (module docs): the
    requests of ``traffic`` (:class:`~roofline.serving.requests.Traffic`), the engine as ``config`` sets it up
    (:class:`~roofline.serving.config.ServeConfig`: precisions, kernels, scheduler policy and limits, KV cache,
    timing), judged against ``slo`` (``'ttft=2s,tpot=200ms'`` or a :class:`~roofline.serving.figures.Slo`).
    :mod:`roofline.serving.engines` holds cited configurations of the engines people run.
    """
    cfg, traffic_, slo_ = check_config(config, "serve"), _traffic(traffic), _slo(slo)
    _arguments(model, device, system, tp)
    dev, replicas, name = _devices(device, system, tp)
    spec = make_spec(model, phase="prefill", tp=tp, **cfg.spec_options())
    reqs = make_requests(traffic_)
    cfg = tuned(cfg, spec, dev, reqs)
    sched, mem, timing = cfg.batching.policy(), cfg.memory, cfg.timing
    act_tokens = max(int(reqs.isl.max() + reqs.osl.max()), sched.token_budget or 0, PROFILE_TOKENS)
    blocks, memory = kv_blocks(spec, dev, block_size=mem.block_size, utilization=mem.gpu_memory_utilization,
                               act_tokens=act_tokens, of_free=mem.kv_of_free)
    longest = int((reqs.isl + reqs.osl).max())
    if longest > blocks * mem.block_size:
        raise RooflineError(f"a request of {longest} tokens needs more KV cache than the {blocks * mem.block_size:,} "
                            f"tokens ({format_bytes(memory['kv_cache'])} per device) left on {dev.name} (tp {tp})")
    steps = step_model(spec, dev, bound=timing.bound, exact=timing.exact, cuda_graphs=cfg.kernels.cuda_graphs)
    steps.prefetch_prompts(reqs.isl)
    if not timing.exact:
        top_batch = min(cfg.batching.max_batch or blocks, blocks, len(reqs.isl))
        steps.build_attention_table(sched.mixed_prefill_tokens, top_batch, longest)
    results = _replicas(steps, sched, reqs, replicas, blocks, mem.block_size, timing.overhead)
    figs = figures(results, tp * replicas, slo_, reqs.rate)
    notes = ["prefix caching, disaggregated prefill/decode and speculative decoding are not modelled"]
    if figs.preemptions > PREEMPTION_NOTE * figs.requests:
        notes.append(f"{figs.preemptions:,} preemptions, {figs.preemptions / figs.requests:.0%} of the requests: "
                     "the KV cache thrashes (admitted prompts outgrow it); --scheduler trtllm (or prefill-first) "
                     "reserves each request's whole output at admission and never preempts")
    if timing.overhead == 0:
        notes.append("no per-iteration CPU overhead counted (scheduling, sampling, detokenization)")
    return ServeResult(spec.arch.name, name, tp, replicas, sched.describe(), "bound" if timing.bound else "forecast",
                       figs, memory, reqs.text, tuple(notes), setup(spec, steps.table, reqs, cfg.kernels.cuda_graphs),
                       uncalibrated=_uncalibrated(dev, timing.bound))


def tuned(cfg: ServeConfig, spec: LLMSpec, dev: Device, reqs: Requests) -> ServeConfig:
    """``cfg`` with the batching limits its :attr:`~roofline.serving.config.Batching.tuning` sets for this run
    (those given are kept): ``'trtllm-bench'``, the max batch and max num tokens of trtllm-bench's heuristic
    (:mod:`roofline.serving.trtllm_bench`) for this model and precision on ``spec.tp`` of ``dev``, its KV
    cache fraction the run's ``gpu_memory_utilization`` (as trtllm-bench passes ``kv_cache_free_gpu_mem_fraction``
    to it), the requests' mean input and output lengths and their longest input."""
    from dataclasses import replace

    from roofline.serving.trtllm_bench import limits

    b = cfg.batching
    if b.tuning != "trtllm-bench" or (b.max_batch is not None and b.max_tokens is not None):
        return cfg
    bs, tokens = limits(spec, dev, isl=float(reqs.isl.mean()), osl=float(reqs.osl.mean()),
                        max_isl=int(reqs.isl.max()), fraction=cfg.memory.gpu_memory_utilization)
    return replace(cfg, batching=replace(b, max_batch=b.max_batch or bs, max_tokens=b.max_tokens or tokens))


def _uncalibrated(dev: Device, bound: bool) -> str:
    """What a serving forecast on ``dev`` is when no calibration gives its efficiencies ('' otherwise)."""
    from roofline.engine.forecast import effective_calibration

    if bound or effective_calibration(dev) is not None:
        return ""
    return "uncalibrated: ops at their bound"


def setup(spec: LLMSpec, table: Any, reqs: Requests, cuda_graphs: bool) -> dict[str, Any]:
    """The model behind a run's figures, for its JSON and report: the precisions as --wbits, --abits, --kvbits
    and --rbits name them (``rbits`` the residual stream's, the activations' when not given), the fusions
    applied in the op table (and those asked for), KV reads, attention fused or not, CUDA graphs, the length
    laws and the workload's bytes-model label."""
    from roofline.llm.expert_parallel import describe as describe_ep
    from roofline.llm.model import applied_fusions, bytes_model

    p = spec.precisions
    applied = applied_fusions([table])
    return {"wbits": p.weights, "abits": p.activations, "kvbits": p.kv_cache, "rbits": p.stream,
            "group_size": p.group_size, "fusions": list(applied), "fusions_asked": list(spec.fusions),
            "kv_reads": spec.kv_reads, "flash": spec.flash, "cuda_graphs": cuda_graphs, "isl": reqs.isl_law,
            "osl": reqs.osl_law, "bytes_model": bytes_model(spec, applied), "ep": spec.ep,
            "dp_attention": spec.dp_attention, "parallel": describe_ep(spec.layout, spec.tp), "experts": p.experts}


def iteration_time(model: Any, device: str | Device, *, tp: int = 1, decode_batch: int = 0,
                   kv_tokens: float = 0.0, chunks: tuple[tuple[int, int], ...] = (),
                   config: ServeConfig | None = None) -> float:
    """Seconds of one serving iteration as :func:`serve` times it, exactly (every op of its table): a decode
    batch of ``decode_batch`` sequences reading ``kv_tokens`` keys in all, and prefill ``chunks`` of (new
    tokens, cached tokens before them), on one replica of ``tp`` devices.  A check of the step model at a
    chosen operating point (e.g. one a published run states through Little's law), apart from any queueing.
    ``config`` gives the precisions, kernels and ``timing.bound`` (its scheduler, memory and the rest of its
    timing do not enter one iteration).

    One decode of one sequence is bound by HBM: every weight but the embedding table (read a row at a time)
    and 128 tokens' keys and values, 16-bit, at 3.35 TB/s; activations and norms add under 1 %:

    >>> t = iteration_time("llama-2-7b", "h100", decode_batch=1, kv_tokens=128,
    ...                    config=ServeConfig(timing=Timing(bound=True)))
    >>> w = 2 * (32 * (4 * 4096**2 + 3 * 4096 * 11008) + 32000 * 4096)  # 32 layers + lm_head, 2 bytes each
    >>> kv = 2 * 128 * 32 * 2 * 4096  # 2 bytes x 128 tokens x 32 layers x (K, V) x 4096
    >>> 1.0 < t / ((w + kv) / 3.35e12) < 1.01
    True
    >>> iteration_time("llama-2-7b", "h100", decode_batch=1, kv_tokens=128) > t  # the forecast is above it
    True
    """
    cfg = check_config(config, "iteration_time")
    _arguments(model, device, None, tp, "iteration_time")
    decode_batch, kv_tokens, chunks = _iteration_arguments(decode_batch, kv_tokens, chunks)
    dev, _, _ = _devices(device, None, tp)
    spec = make_spec(model, phase="prefill", tp=tp, **cfg.spec_options())
    steps = step_model(spec, dev, bound=cfg.timing.bound, exact=True, cuda_graphs=cfg.kernels.cuda_graphs)
    return steps.iteration_time(decode_batch, kv_tokens, list(chunks))


def _iteration_arguments(decode_batch: Any, kv_tokens: Any, chunks: Any
                         ) -> tuple[int, float, tuple[tuple[int, int], ...]]:
    """The operating point of :func:`iteration_time` checked: whole numbers >= 0 within the length limit
    (:func:`~roofline.serving.requests.max_length`), ``kv_tokens`` a finite number of keys, at least one per
    decoding sequence (its own) and at most ``ROOFLINE_MAX_DIM``; else one line naming the argument."""
    from roofline.core import arguments as arg
    from roofline.core.limits import max_dim
    from roofline.serving.requests import max_length

    f = "iteration_time"

    def whole(v: Any, name: str, top: int) -> int:
        rule = f"a whole number (int) >= 0 and <= {top:,}"
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise arg.type_error(f, name, rule, v)
        if not 0 <= v <= top:
            raise arg.value_error(f, name, rule, v)
        return int(v)

    batch = whole(decode_batch, "decode_batch", max_dim())
    keys = arg.number(kv_tokens, f, "kv_tokens", minimum=0.0)
    if keys > max_dim():
        raise arg.value_error(f, "kv_tokens", f"a number of keys <= {max_dim():,}", kv_tokens)
    if keys < batch:
        raise RooflineError(f"{f}: kv_tokens {keys:g} is fewer than decode_batch {batch}: each decoding sequence "
                            "reads at least its own key")
    pair = "a sequence of (new tokens, cached tokens) pairs of whole numbers >= 0"
    if isinstance(chunks, (str, bytes)) or not isinstance(chunks, (tuple, list)):
        raise arg.type_error(f, "chunks", pair, chunks)
    out = []
    for k, c in enumerate(chunks):
        if isinstance(c, (str, bytes)) or not isinstance(c, (tuple, list)) or len(c) != 2:
            raise arg.type_error(f, f"chunks[{k}]", "a (new tokens, cached tokens) pair", c)
        out.append((whole(c[0], f"chunks[{k}] new tokens", max_length()),
                    whole(c[1], f"chunks[{k}] cached tokens", max_length())))
    if not batch and not any(c for c, _ in out):
        raise RooflineError(f"{f}: give decode_batch >= 1 or a prefill chunk of >= 1 token")
    return batch, keys, tuple(out)


def _devices(device: str | Device | None, system: str | None, tp: int) -> tuple[Device, int, str]:
    if (device is None) == (system is None):
        raise RooflineError("give --device or --system (one of them)")
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise RooflineError(f"--tp must be an integer >= 1, got {tp!r}")
    if system is None:
        from roofline.bench.resolve import resolve_device

        dev = device if isinstance(device, Device) else resolve_device(str(device))
        return dev, 1, dev.name
    from roofline.catalog import resolve_system

    s = resolve_system(system)
    if tp > s.devices_per_node or s.devices % tp:
        raise RooflineError(f"--tp {tp} must divide the {s.devices} devices of {s.name!r} and fit in a node of "
                            f"{s.devices_per_node}")
    return (s.device_on("node") if tp > 1 else s.device), s.devices // tp, s.device.name


def _replicas(steps: StepModel, sched: Scheduler, reqs: Requests, replicas: int, blocks: int, block_size: int,
              overhead: float) -> list[ReplicaResult]:
    out = []
    for k in range(replicas):
        idx = np.arange(k, len(reqs.isl), replicas)
        if not len(idx):
            continue
        steps.prefetch_windows(reqs.isl[idx])
        conc = None
        if reqs.concurrency is not None:
            conc = max(reqs.concurrency // replicas + (1 if k < reqs.concurrency % replicas else 0), 1)
        out.append(simulate(steps, sched, reqs.arrival[idx], reqs.isl[idx], reqs.osl[idx], blocks=blocks,
                            block_size=block_size, concurrency=conc, overhead=overhead))
    return out
