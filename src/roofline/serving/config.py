"""How a serving run is set up, as one frozen value: :class:`ServeConfig`, in six groups.

* :class:`Precision`  the model's number formats (``--wbits``, ``--abits``, ``--kvbits``, ``--rbits``);
* :class:`Kernels`    the kernels the engine runs (fused attention, KV reads, fusions, CUDA graphs);
* :class:`Batching`   the scheduler policy (:mod:`roofline.serving.schedulers`) and its limits;
* :class:`Memory`     the paged KV cache: block size and the share of memory it may take;
* :class:`Timing`     how an iteration is timed: forecast or bound, tabled or exact, CPU overhead;
* :class:`Parallel`   expert parallelism inside a replica (``--ep``, ``--dp-attention``).

Every field is checked where it is set: a wrong one is one :class:`~roofline.RooflineError` line naming the
group, the field (and its command-line option) and the value.  :mod:`roofline.serving.engines` gives the
cited configurations of the engines people run.

>>> c = ServeConfig(batching=Batching("chunked", max_tokens=512), timing=Timing(bound=True))
>>> c.batching.policy().describe()
'continuous batching (chunked prefill, 512 tokens per iteration)'
>>> Memory(block_size=0)
Traceback (most recent call last):
...
roofline.core.errors.RooflineError: Memory: block_size (--block-size) must be a whole number (int) >= 1, got int 0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from roofline.core import arguments as arg
from roofline.core.errors import RooflineError
from roofline.serving.schedulers import BLOCK_SIZE, GPU_MEMORY_UTILIZATION, Scheduler, get, names

#: who may set a run's batching limits (:attr:`Batching.tuning`)
TUNINGS = (None, "trtllm-bench")


def _opt(name: str) -> str:
    """The field and its command-line option, as a message names them."""
    return f"{name} (--{name.replace('_', '-')})"


@dataclass(frozen=True)
class Precision:
    """Weights, activations, KV cache and residual stream (None: the activations'), as ``--wbits`` etc. take
    them (16, 'bf16', 'fp8', 4 ...; :func:`roofline.llm.spec.parse_precision`)."""

    wbits: int | str = 16
    abits: int | str = 16
    kvbits: int | str = 16
    rbits: int | str | None = None

    def __post_init__(self) -> None:
        from roofline.llm.spec import parse_precision, parse_residual

        for name in ("wbits", "abits", "kvbits"):
            parse_precision(getattr(self, name), name)
        if self.rbits is not None:
            parse_residual(self.rbits, parse_precision(self.abits, "abits"))


@dataclass(frozen=True)
class Kernels:
    """``flash``: fused attention (``--unfused`` turns it off); ``kv_reads``: how attention reads a KV head
    shared by query heads (:data:`roofline.llm.table.KV_READS`); ``fusions``: the kernel fusions the engine runs
    (:data:`roofline.llm.table.FUSIONS`; a comma-separated string is split); ``cuda_graphs``: every iteration
    replays a CUDA graph (the device's ``cuda-graph`` overhead floor per kernel, not its launch floor);
    ``moe_load`` and ``mtp``: :attr:`roofline.llm.spec.LLMSpec.moe_load` and ``mtp`` (``--moe-load``, ``--mtp``)."""

    flash: bool = True
    kv_reads: str = "shared"
    fusions: tuple[str, ...] = ()
    cuda_graphs: bool = False
    moe_load: str = "balanced"
    mtp: int = 0

    def __post_init__(self) -> None:
        from roofline.llm.moe_load import parse_moe_load
        from roofline.llm.table import check_mtp, parse_fusions, parse_kv_reads

        object.__setattr__(self, "moe_load", parse_moe_load(self.moe_load))
        object.__setattr__(self, "mtp", check_mtp(self.mtp))

        arg.boolean(self.flash, "Kernels", "flash")
        arg.boolean(self.cuda_graphs, "Kernels", "cuda_graphs")
        object.__setattr__(self, "kv_reads", parse_kv_reads(self.kv_reads))
        object.__setattr__(self, "fusions", parse_fusions(self.fusions))


@dataclass(frozen=True)
class Batching:
    """``scheduler``: a policy name of :mod:`roofline.serving.schedulers` (``prefill-first``, ``chunked``,
    ``whole-prompts``); ``max_batch``: most running sequences; ``max_tokens``: the token budget per iteration
    (the policy's default when None: none for prefill-first, 2048 for the chunked ones); ``tuning``: who sets
    the limits not given, per run: ``'trtllm-bench'``, trtllm-bench's heuristic from the model, the devices and
    the requests' mean lengths (:mod:`roofline.serving.trtllm_bench`); None: nobody."""

    scheduler: str = "prefill-first"
    max_batch: int | None = None
    max_tokens: int | None = None
    tuning: str | None = None

    def __post_init__(self) -> None:
        arg.choice(self.scheduler, names(), "Batching", "scheduler")
        arg.optional_int(self.max_batch, "Batching", _opt("max_batch"))
        arg.optional_int(self.max_tokens, "Batching", _opt("max_tokens"))
        if self.tuning not in TUNINGS:
            raise arg.value_error("Batching", "tuning", f"one of {', '.join(map(repr, TUNINGS))}", self.tuning)

    def policy(self) -> Scheduler:
        """A fresh scheduler of this policy and limits (a scheduler holds no state between runs)."""
        return get(self.scheduler)(token_budget=self.max_tokens, max_batch=self.max_batch)


@dataclass(frozen=True)
class Memory:
    """The KV cache: blocks of ``block_size`` tokens in ``gpu_memory_utilization`` of the device's memory (of
    the total, vLLM's ``--gpu-memory-utilization``; with ``kv_of_free``, of what the weights and activations
    leave, TensorRT-LLM's ``kvcache_free_gpu_mem_frac``: :func:`roofline.serving.run.kv_blocks`)."""

    block_size: int = BLOCK_SIZE
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION
    kv_of_free: bool = False

    def __post_init__(self) -> None:
        arg.positive_int(self.block_size, "Memory", _opt("block_size"))
        u = arg.number(self.gpu_memory_utilization, "Memory", _opt("gpu_memory_utilization"))
        if not 0 < u <= 1:
            raise arg.value_error("Memory", _opt("gpu_memory_utilization"), "in (0, 1]",
                                  self.gpu_memory_utilization)
        arg.boolean(self.kv_of_free, "Memory", "kv_of_free")


@dataclass(frozen=True)
class Timing:
    """``bound``: iteration times from the roofline bound instead of the forecast; ``exact``: every iteration's
    whole op table evaluated (slow; else attention is interpolated in a table, within 2 %); ``overhead``: CPU
    seconds added to each iteration (``--iteration-overhead``; 0: none counted)."""

    bound: bool = False
    exact: bool = False
    overhead: float = 0.0

    def __post_init__(self) -> None:
        arg.boolean(self.bound, "Timing", "bound")
        arg.boolean(self.exact, "Timing", "exact")
        arg.number(self.overhead, "Timing", "overhead (--iteration-overhead)")


@dataclass(frozen=True)
class Parallel:
    """``ep``: expert-parallel ranks among a replica's tp devices; ``dp_attention``: attention data-parallel, the
    experts over all of them (:mod:`roofline.llm.expert_parallel`; checked against the model by the spec)."""

    ep: int = 1
    dp_attention: bool = False

    def __post_init__(self) -> None:
        arg.positive_int(self.ep, "Parallel", _opt("ep"))
        arg.boolean(self.dp_attention, "Parallel", "dp_attention")


@dataclass(frozen=True)
class ServeConfig:
    """Everything about a serving run but the model, the devices, the requests and the SLO (module docs)."""

    precision: Precision = field(default_factory=Precision)
    kernels: Kernels = field(default_factory=Kernels)
    batching: Batching = field(default_factory=Batching)
    memory: Memory = field(default_factory=Memory)
    timing: Timing = field(default_factory=Timing)
    parallel: Parallel = field(default_factory=Parallel)

    def __post_init__(self) -> None:
        for name, kind in (("precision", Precision), ("kernels", Kernels), ("batching", Batching),
                           ("memory", Memory), ("timing", Timing), ("parallel", Parallel)):
            arg.need(getattr(self, name), kind, "ServeConfig", name, f"a {kind.__name__}")

    def spec_options(self) -> dict[str, Any]:
        """The keywords of :func:`roofline.llm.spec.make_spec` this configuration sets."""
        p, k = self.precision, self.kernels
        return dict(wbits=p.wbits, abits=p.abits, kvbits=p.kvbits, rbits=p.rbits, flash=k.flash,
                    kv_reads=k.kv_reads, fusions=k.fusions, moe_load=k.moe_load, mtp=k.mtp, ep=self.parallel.ep,
                    dp_attention=self.parallel.dp_attention)


def check_config(config: Any, func: str) -> ServeConfig:
    """``config`` when it is a :class:`ServeConfig` (None: the defaults), else one line naming ``func``."""
    if config is None:
        return ServeConfig()
    if not isinstance(config, ServeConfig):
        raise RooflineError(f"{func}: config must be a roofline.serving.config.ServeConfig, got "
                            f"{arg.got(config)}")
    return config
