"""One LLM inference run, fully specified: the model, the phase and its sizes, the precisions, tp.

:func:`make_spec` validates every knob (one-line errors); :class:`LLMSpec` is what a workload built from
it carries in its ``llm`` field, and :func:`read_spec` reads that field back from a workload file,
type-checked field by field (the format of the ``llm`` object lives here, with the run it describes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from roofline.core import formats
from roofline.core.errors import RooflineError
from roofline.core.limits import max_dim
from roofline.core.precision import BITS, canonical, wider
from roofline.llm.basis import MOE_ROUTINGS, parse_moe_routing
from roofline.llm.config import Arch, load_arch
from roofline.llm.expert_parallel import ExpertParallel, check_ep
from roofline.llm.moe_load import parse_moe_load
from roofline.llm.table import FUSIONS, KV_READS, check_mtp, check_tp, parse_fusions, parse_kv_reads

if TYPE_CHECKING:
    from roofline.work.workload_facts import LLMRun

PHASES = ("prefill", "decode", "generate")
#: Accepted precisions: bits -> name, and names (case-insensitive, a few spellings).
#: Precisions an LLM's weights, activations and KV cache may take (spellings: roofline.core.precision).
LLM_PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")
#: precisions the residual stream may take: float formats only (an engine keeps the stream, norms and GEMM
#: outputs in floating point; integer formats are for quantised GEMM inputs and weights)
RESIDUAL_PRECISIONS = ("fp32", "bf16", "fp16", "fp8")
SCALE_BYTES = 2  # one fp16 scale per group of int4 values


#: Number formats (:mod:`roofline.core.formats`) a tensor may also be given as: the precision of the roof it runs on,
#: its block scales counted in its bytes (:func:`parse_format`).
FORMAT_NAMES = tuple(n for n in formats.FORMATS if n not in LLM_PRECISIONS)


def parse_precision(value: Any, field: str) -> str:
    """16 / '16' / 'bf16' / 'int4' / a format name ('mxfp8', 'nvfp4') -> a precision name (a format's: the roof it
    computes on, :func:`parse_format`); anything else is a one-line error."""
    name = canonical(value)
    if name in LLM_PRECISIONS:
        return name
    key = value.strip().lower() if isinstance(value, str) else None
    if key in FORMAT_NAMES:
        return formats.get(key).roof
    raise RooflineError(f"{field}: {value!r} is not supported; use 32, 16, 8 or 4 bits, "
                        f"one of {', '.join(LLM_PRECISIONS)}, or a number format: {', '.join(FORMAT_NAMES)}")


def parse_format(value: Any, field: str) -> str:
    """The block-scaled number format ``value`` names ('mxfp8', 'nvfp4', 'fp8-block', ...), whose scales a tensor's
    bytes count; '' for a plain precision or bit count (and a per-tensor scaled fp8, whose one scale per tensor is
    no per-element traffic).  Validates as :func:`parse_precision`.

    >>> parse_format("NVFP4", "wbits"), parse_format(8, "wbits"), parse_format("fp8-current", "abits")
    ('nvfp4', '', '')
    """
    parse_precision(value, field)
    key = value.strip().lower() if isinstance(value, str) else None
    return key if key in FORMAT_NAMES and formats.get(key).block_scaled else ""


def parse_residual(value: Any, activations: str) -> str:
    """``rbits``: a float format (fp32, bf16, fp16, fp8; a bare 16 or 32) no narrower than ``activations``;
    anything else is a one-line error (a bare 8 is int8, as for ``--abits``: give fp8)."""
    name = parse_precision(value, "rbits")
    if name not in RESIDUAL_PRECISIONS:
        hint = ": give fp8" if name == "int8" else ""
        raise RooflineError(f"rbits: {value!r} reads as {name}, an integer format; the residual stream takes a "
                            f"float format ({', '.join(RESIDUAL_PRECISIONS)}, or a bare 16 or 32){hint}")
    if BITS[name] < BITS[activations]:
        raise RooflineError(f"rbits: {name} is narrower than the activations' {activations} (abits): the residual "
                            "stream is at least as wide as the activations it adds up")
    return name


def element_bytes(precision: str, group_size: int) -> float:
    """Bytes per element; int4 adds one fp16 scale per ``group_size`` values (group-wise quantisation)."""
    if precision == "int4":
        return 0.5 + SCALE_BYTES / group_size
    return BITS[precision] / 8


@dataclass(frozen=True)
class Precisions:
    """Weights, activations and KV cache stored separately; compute precisions follow from them.

    A GEMM computes in the wider of (activations, weights): W4A16 dequantises
    4-bit weights and runs on the 16-bit matrix roof.  Attention computes in the
    wider of (its query, at the residual precision, and the KV cache).  Embedding, lm_head, router, norms and
    biases stay 16-bit when weights are quantised below 16 bits.

    ``residual``: the precision of every activation that is not a quantised GEMM's input (the residual
    stream, norms, GEMM outputs, elementwise ops, attention's query and output, the TP collectives:
    :data:`roofline.llm.table.QUANTITIES`); None (the default) means the activations' own, one precision
    for every activation.  An FP8 checkpoint of a float16 model (TensorRT-LLM ``--dtype float16 --qformat
    fp8``) is ``activations='fp8', residual='fp16'``.

    >>> p = Precisions("fp8", "fp8", "fp8", residual="fp16")
    >>> p.bytes()["a"], p.bytes()["r"], p.gemm, p.attention
    (1.0, 2.0, 'fp8', 'fp16')
    """

    weights: str = "bf16"
    activations: str = "bf16"
    kv_cache: str = "bf16"
    group_size: int = 128
    residual: str | None = None
    #: the block-scaled formats (:func:`parse_format`) of the weights, activations and KV cache, '' where plain:
    #: their bytes are the format's, scales included
    formats: tuple[str, str, str] = ("", "", "")
    #: the routed experts' weight format where it is not ``weights``: a block-scaled format of
    #: :mod:`roofline.core.formats` ('mxfp4': gpt-oss's checkpoint), its bytes with the scales; the expert GEMMs
    #: compute at the activations' precision after the upcast (no 4-bit GEMM counted); '' = the weights'
    experts: str = ""

    @property
    def stream(self) -> str:
        """The residual stream's precision: ``residual``, or the activations' when not stated."""
        return self.residual or self.activations

    @property
    def gemm(self) -> str:
        return wider(self.activations, self.weights)

    @property
    def attention(self) -> str:
        return wider(self.stream, self.kv_cache)

    @property
    def unquantized(self) -> str:
        return self.weights if BITS[self.weights] >= 16 else "bf16"

    def bytes(self) -> dict[str, float]:
        g = self.group_size
        fw, fa, fkv = (formats.get(f) if f else None for f in self.formats)
        wq = fw.bits_per_element("weight") / 8 if fw else element_bytes(self.weights, g)
        return {"wq": wq, "wu": element_bytes(self.unquantized, g),
                "a": fa.bits_per_element("activation") / 8 if fa else element_bytes(self.activations, g),
                "kv": fkv.bits_per_element("activation") / 8 if fkv else element_bytes(self.kv_cache, g),
                "r": element_bytes(self.stream, g), "we": expert_element_bytes(self.experts) if self.experts else wq}

    def to_dict(self) -> dict[str, Any]:
        out = {"weights": self.weights, "activations": self.activations, "kv_cache": self.kv_cache,
               "group_size": self.group_size, "gemm_compute": self.gemm, "attention_compute": self.attention}
        if self.residual is not None:  # written only when stated: files of one activation precision are as before
            out["residual"] = self.residual
        if any(self.formats):  # likewise
            out["formats"] = list(self.formats)
        if self.experts:
            out["experts"] = self.experts
        return out


@dataclass(frozen=True)
class LLMSpec:
    """Model and knobs of one LLM inference run (validated by :func:`make_spec`)."""

    arch: Arch
    phase: str = "generate"
    batch: int = 1
    prompt: int = 1024
    context: int = 1024
    gen: int = 256
    precisions: Precisions = Precisions()
    tp: int = 1
    #: fused attention (no score tensor in memory): the default of every command and of the API, as serving
    #: and training engines run it (FlashAttention, cuDNN fused attention); False: the unfused s x s scores
    flash: bool = True
    all_logits: bool = False
    moe_routing: str = "expected"
    #: how attention reads a KV head shared by query heads (:data:`roofline.llm.table.KV_READS`)
    kv_reads: str = "shared"
    #: kernel fusions the engine runs (:data:`roofline.llm.table.FUSIONS`; none by default)
    fusions: tuple[str, ...] = ()
    #: rows of the grouped expert GEMMs' slowest group (:data:`roofline.llm.moe_load.MOE_LOADS`)
    moe_load: str = "balanced"
    #: multi-token prediction modules run after the model (DeepSeek's ``num_nextn_predict_layers``; 0: none)
    mtp: int = 0
    #: expert-parallel ranks among the tp devices, and attention data-parallel (:mod:`roofline.llm.expert_parallel`)
    ep: int = 1
    dp_attention: bool = False

    @property
    def max_context(self) -> int:
        """KV-cache length the run needs to hold."""
        return {"prefill": self.prompt, "decode": self.context, "generate": self.prompt + self.gen}[self.phase]

    @property
    def layout(self) -> ExpertParallel:
        """The expert-parallel layout (:mod:`roofline.llm.expert_parallel`)."""
        return ExpertParallel(self.ep, self.dp_attention)

    def replace(self, **changes: Any) -> LLMSpec:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {"arch": self.arch.to_dict(), "phase": self.phase, "batch": self.batch, "prompt": self.prompt,
                "context": self.context, "gen": self.gen, "precisions": self.precisions.to_dict(), "tp": self.tp,
                "flash": self.flash, "all_logits": self.all_logits, "moe_routing": self.moe_routing,
                "kv_reads": self.kv_reads, **({"fusions": list(self.fusions)} if self.fusions else {}),
                **({"moe_load": self.moe_load} if self.moe_load != "balanced" else {}),
                **({"mtp": self.mtp} if self.mtp else {}),
                **({"ep": self.ep, "dp_attention": self.dp_attention} if self.ep > 1 or self.dp_attention else {})}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LLMSpec:
        p = d["precisions"]
        return cls(Arch.from_dict(d["arch"]), d["phase"], int(d["batch"]), int(d["prompt"]), int(d["context"]),
                   int(d["gen"]), Precisions(p["weights"], p["activations"], p["kv_cache"], int(p["group_size"]),
                                             p.get("residual"), tuple(p.get("formats", ("", "", ""))),
                                             str(p.get("experts", ""))),
                   int(d["tp"]), bool(d["flash"]), bool(d["all_logits"]),
                   # files written before the option existed used the worst case
                   parse_moe_routing(d.get("moe_routing", "worst")),
                   # and before this one, every KV head was read once per sequence
                   parse_kv_reads(d.get("kv_reads", "shared")),
                   # and before this one, no kernel fusion
                   parse_fusions(d.get("fusions") or ()),
                   # and before these, a balanced load and no MTP module
                   parse_moe_load(d.get("moe_load", "balanced")), check_mtp(d.get("mtp", 0)),
                   # and before this one, no expert parallelism
                   int(d.get("ep", 1)), bool(d.get("dp_attention", False)))


def check_moe_load(arch: Arch, moe_load: str) -> None:
    """A load other than the default on a model without routed experts is refused (one line): it would mean nothing."""
    if moe_load != "balanced" and not arch.experts:
        raise RooflineError(f"moe_load {moe_load!r}: {arch.name} is a dense model (no routed experts)")


def expert_element_bytes(name: str) -> float:
    """Bytes per routed-expert weight element in the block-scaled format ``name``, its scales included.

    >>> expert_element_bytes("mxfp4")  # 4 element bits + one 8-bit E8M0 scale per 32 (OCP MX v1.0)
    0.53125
    """
    from roofline.core.formats import get

    return get(name).bits_per_element("weight") / 8


def positive_int(value: Any, field: str) -> int:
    """``value`` as an int > 0, at most ``ROOFLINE_MAX_DIM`` (default 10**12; batch, tokens, group size)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        if isinstance(value, float) and value.is_integer() and value > 0:
            return _bounded(int(value), field)
        raise RooflineError(f"{field} must be an integer > 0, got {value!r}")
    return _bounded(int(value), field)


def _bounded(value: int, field: str) -> int:
    top = max_dim()
    if value > top:
        raise RooflineError(f"{field} {value} exceeds the limit of {top:,} (set ROOFLINE_MAX_DIM to raise it)")
    return value


#: the precisions a serving plan takes (``plan --serve --precision``): one format for weights, activations, KV
SERVE_PRECISIONS = ("bf16", "fp8")


@dataclass(frozen=True)
class ServingRun:
    """Inference: ``batch`` concurrent sequences per replica, each a ``prompt`` then ``gen`` generated tokens (what
    the planner lays out over a system: :mod:`roofline.planner.serve`)."""

    arch: Arch
    batch: int
    prompt: int
    gen: int
    precisions: Precisions = Precisions()

    @classmethod
    def of(cls, model: str | Arch, *, batch: int = 64, prompt: int = 1024, gen: int = 256,
           precision: str = "bf16") -> ServingRun:
        """``precision``: bf16, or fp8 for weights, activations and KV cache in fp8 (TensorRT-LLM's FP8
        checkpoints with an FP8 KV cache); the block-scaled formats are not yet serving precisions."""
        arch = model if isinstance(model, Arch) else load_arch(model)
        if precision not in SERVE_PRECISIONS:
            raise RooflineError(f"precision: {precision!r} is not a serving precision here; give one of "
                                f"{', '.join(SERVE_PRECISIONS)}")
        return cls(arch, positive_int(batch, "batch"), positive_int(prompt, "prompt"), positive_int(gen, "gen"),
                   Precisions(precision, precision, precision))


def make_spec(model: str | Mapping[str, Any] | Arch, phase: str = "generate", batch: int = 1,
              prompt: int | None = None, context: int | None = None, gen: int | None = None,
              wbits: int | str = 16, abits: int | str = 16, kvbits: int | str = 16, tp: int = 1,
              flash: bool = True, group_size: int = 128, all_logits: bool = False,
              moe_routing: str = "expected", kv_reads: str = "shared", rbits: int | str | None = None,
              fusions: str | tuple[str, ...] | list[str] = (), moe_load: str = "balanced", mtp: int = 0,
              ep: int = 1, dp_attention: bool = False) -> LLMSpec:
    """Validate every knob (one-line errors) and resolve the model; ``rbits``: the residual stream's precision
    (:class:`Precisions` ``residual``; None: the activations'); ``fusions``: :data:`roofline.llm.table.FUSIONS`;
    ``moe_load``: :data:`roofline.llm.moe_load.MOE_LOADS` (a MoE model's only); ``mtp``: MTP modules;
    ``ep``, ``dp_attention``: :func:`roofline.llm.expert_parallel.check_ep`."""
    moe_routing = parse_moe_routing(moe_routing)
    moe_load = parse_moe_load(moe_load)
    mtp = check_mtp(mtp)
    fused = parse_fusions(fusions)
    kv_reads = parse_kv_reads(kv_reads)
    if phase not in PHASES:
        raise RooflineError(f"phase {phase!r} is not one of {', '.join(PHASES)}")
    arch = load_arch(model)
    prompt = positive_int(1024 if prompt is None else prompt, "prompt")
    context = positive_int(prompt if context is None else context, "context")
    gen = positive_int(256 if gen is None else gen, "gen")
    batch = positive_int(batch, "batch")
    group_size = positive_int(group_size, "group_size")
    if group_size & (group_size - 1) or group_size < 2:  # GPTQ, AWQ and bitsandbytes group by 32, 64, 128...
        raise RooflineError(f"group_size must be a power of two >= 2 (int4 weights share one scale per group of "
                            f"32, 64, 128... values along a row), got {group_size}")
    activations = parse_precision(abits, "abits")
    precisions = Precisions(parse_precision(wbits, "wbits"), activations, parse_precision(kvbits, "kvbits"),
                            group_size, None if rbits is None else parse_residual(rbits, activations),
                            (parse_format(wbits, "wbits"), parse_format(abits, "abits"), parse_format(kvbits, "kvbits")),
                            arch.expert_format)  # the checkpoint's expert format (gpt-oss: MXFP4), as served
    if isinstance(tp, bool) or not isinstance(tp, (int, np.integer)) or tp < 1:
        raise RooflineError(f"tp must be an integer >= 1, got {tp!r}")
    check_tp(arch, int(tp))
    check_moe_load(arch, moe_load)
    layout = check_ep(arch, int(tp), ep, dp_attention)
    spec = LLMSpec(arch, phase, batch, prompt, context, gen, precisions, int(tp), bool(flash), bool(all_logits),
                   moe_routing, kv_reads, fused, moe_load, mtp, layout.ep, layout.dp_attention)
    context_note(spec)  # a prompt past the model's context is refused (within its rope scaling, noted)
    return spec


def context_note(spec: LLMSpec, *, refuse: bool = True) -> str:
    """'' when the run's prompt (decode: its context) is within the model's context, or the config states none;
    the note to lead its outputs with when only the config's rope scaling reaches that far; a RooflineError
    naming the limit when nothing does (``refuse=False``: that line as the note, for a run read from a file).

    >>> context_note(make_spec("llama-3-8b", phase="prefill", prompt=8192))
    ''
    >>> context_note(make_spec("llama-3-8b", phase="prefill", prompt=8193))
    Traceback (most recent call last):
    ...
    roofline.core.errors.RooflineError: prompt 8,193 tokens is longer than llama-3-8b's context: max_position_embeddings 8,192 (no rope scaling)
    """
    a = spec.arch
    what, n = ("context", spec.context) if spec.phase == "decode" else ("prompt", spec.prompt)
    if not a.max_positions or n <= a.max_positions:
        return ""
    if a.rope_positions >= n:
        return (f"{what} {n:,} tokens is past max_position_embeddings {a.max_positions:,}, within the config's rope "
                f"scaling ({a.rope_type}: {a.rope_positions:,})")
    reach = f"its rope scaling ({a.rope_type}) reaches {a.rope_positions:,}" if a.rope_positions else "no rope scaling"
    text = f"{what} {n:,} tokens is longer than {a.name}'s context: max_position_embeddings {a.max_positions:,} ({reach})"
    if refuse:
        raise RooflineError(text)
    return text


# -- the ``llm`` object of a workload file -------------------------------------------
#: ``llm`` (the LLM run, written by the LLM frontend, read back by the LLM report): its fields and JSON types.
_LLM_RUN = {"phase": "str", "batch": "int+", "prompt": "int+", "context": "int+", "gen": "int+", "tp": "int+",
            "flash": "bool", "all_logits": "bool"}
_LLM_PRECISIONS = {"weights": "str", "activations": "str", "kv_cache": "str", "group_size": "int+"}
_ARCH_POSITIVE = ("hidden", "layers", "heads", "kv_heads", "head_dim", "v_head_dim", "vocab")


def as_spec(run: LLMRun | None) -> LLMSpec | None:
    """A workload's ``llm`` field as the LLM model's own run: the work layer types it by what it reads of it
    (:class:`roofline.work.workload_facts.LLMRun`); every run a workload carries is an :class:`LLMSpec`."""
    if run is None or isinstance(run, LLMSpec):
        return run
    raise TypeError(f"a workload's llm field holds {type(run).__name__}, not an LLMSpec")


def read_spec(raw: Any, where: str, field: str = "llm") -> LLMSpec | None:
    """A workload file's ``llm`` object (``info.llm`` in /1 files, as ``field`` names it): the LLM run,
    checked field by field, or None."""
    if raw is None:
        return None
    _check_llm_info(raw, where, field)
    return LLMSpec.from_dict(raw)


def _check_typed(d: dict[str, Any], types: Mapping[str, str], field: str, where: str, *,
                 required: bool = True) -> None:
    from roofline.core.fileio import as_bool, as_int, as_str, as_str_list

    for key, kind in types.items():
        f = f"{field}.{key}"
        if key not in d or d[key] is None:
            if required:
                raise RooflineError(f"{field}: missing field {key!r}", where=where)
            continue
        v = d[key]
        if kind.startswith("int"):
            as_int(v, f, where, minimum=1 if kind == "int+" else 0, maximum=2**40)
        elif kind == "bool":
            as_bool(v, f, where)
        elif kind.startswith("tuple"):
            as_str_list(v, f, where)
        else:
            as_str(v, f, where)


def _check_llm_info(raw: Any, where: str, field: str = "llm") -> None:
    """The LLM run object (``llm``; ``info.llm`` in /1 files), every field type-checked."""
    from roofline.core.fileio import as_object, as_str, as_str_list, shown

    llm = as_object(raw, field, where)
    _check_typed(llm, _LLM_RUN, field, where)
    if llm["phase"] not in ("prefill", "decode", "generate"):
        raise RooflineError(f"{field}.phase {shown(llm['phase'])} is not one of prefill, decode, generate", where=where)
    if llm.get("moe_routing") is not None and as_str(llm["moe_routing"], f"{field}.moe_routing", where).strip().lower() \
            not in MOE_ROUTINGS:
        raise RooflineError(f"{field}.moe_routing {shown(llm['moe_routing'])} is not one of {', '.join(MOE_ROUTINGS)}",
                            where=where)
    if llm.get("kv_reads") is not None and as_str(llm["kv_reads"], f"{field}.kv_reads", where).strip().lower() \
            not in KV_READS:
        raise RooflineError(f"{field}.kv_reads {shown(llm['kv_reads'])} is not one of {', '.join(KV_READS)}",
                            where=where)
    if llm.get("fusions") is not None:
        names = as_str_list(llm["fusions"], f"{field}.fusions", where)
        bad = [x for x in names if x.strip().lower() not in FUSIONS]  # as --fusions: case and spaces ignored
        if bad:
            raise RooflineError(f"{field}.fusions {shown(bad[0])} is not one of {', '.join(FUSIONS)}", where=where)
    precisions = as_object(llm.get("precisions"), f"{field}.precisions", where)
    _check_typed(precisions, _LLM_PRECISIONS, f"{field}.precisions", where)
    for key in ("weights", "activations", "kv_cache", "residual"):
        if key == "residual" and precisions.get(key) is None:
            continue
        as_str(precisions[key], f"{field}.precisions.{key}", where)
        if precisions[key] not in LLM_PRECISIONS:
            raise RooflineError(f"{field}.precisions.{key} {shown(precisions[key])} is not one of "
                                f"{', '.join(LLM_PRECISIONS)}", where=where)
    arch = as_object(llm.get("arch"), f"{field}.arch", where)
    for f in dataclasses.fields(Arch):
        kind = {"int": "int+" if f.name in _ARCH_POSITIVE else "int"}.get(str(f.type), str(f.type))
        _check_typed(arch, {f.name: kind}, f"{field}.arch", where,
                     required=f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
    if arch.get("local_attention", "sliding") not in ("sliding", "chunked"):
        raise RooflineError(f"{field}.arch.local_attention {shown(arch['local_attention'])} is not one of sliding, "
                            "chunked", where=where)
    if (arch.get("top_k") or 0) > (arch.get("experts") or 0):
        raise RooflineError(f"{field}.arch.top_k {arch['top_k']} is more than {field}.arch.experts "
                            f"{arch.get('experts') or 0}", where=where)
