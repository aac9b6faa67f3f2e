"""Model configs: Hugging Face style config.json -> :class:`Arch`, the shape facts the LLM model needs.

Bundled configs live in ``roofline/models/*.json`` (the HF config fields plus
``_source``, the model card / config URL, ``_hf_id`` and ``_aliases``).  Lookup
ignores case and punctuation and accepts Hugging Face ids::

    >>> load_arch("meta-llama/Llama-2-7b-hf").hidden
    4096
    >>> load_arch("LLaMA 2 7B").layers
    32

Any local config.json (a file, or a directory holding one) works too.  Families:
Llama 2/3, Mistral, Mixtral (MoE), Qwen2, Gemma/Gemma-2, GPT-2 and OPT
(LayerNorm, GELU/ReLU MLP without gate, learned positions), Phi-3,
DeepSeek-V2/V3 and Kimi K2 (MLA attention, shared + routed experts), Qwen3 and
Qwen3-MoE (QK-norm), gpt-oss (attention sinks, alternating sliding windows) and
Llama 4 (the language model of its ``text_config``: MoE interleaved with dense
layers, chunked local attention, NoPE layers).  An unknown
``model_type`` is read as Llama-style, with a warning.

Every size field is checked before anything is built (:func:`check_config`, also
used by the Hugging Face frontend): a finite whole number, of the right type, and
no larger than any real model needs.  The limits, each overridable by an
environment variable (a positive integer) for a model that really is that big:

=====================  ===========  ==============================================================
``ROOFLINE_MAX_LAYERS``     10,000  num_hidden_layers / n_layer / num_layers, first_k_dense_replace
``ROOFLINE_MAX_HIDDEN``  1,000,000  hidden_size, intermediate_size, head_dim, ranks and other widths
``ROOFLINE_MAX_VOCAB``  10,000,000  vocab_size
``ROOFLINE_MAX_HEADS``     100,000  num_attention_heads, num_key_value_heads
``ROOFLINE_MAX_EXPERTS``   100,000  num_local_experts, n_routed_experts, num_experts_per_tok, ...
``ROOFLINE_MAX_POSITIONS`` 10**8    max_position_embeddings, n_positions, sliding_window
=====================  ===========  ==============================================================

``rope_scaling`` / ``rope_parameters`` must be an object whose ``rope_type`` (or
``type``) is one of :data:`ROPE_TYPES`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from roofline.core import names
from roofline.core.errors import RooflineError
from roofline.core.fileio import shown
from roofline.core.names import normalize

#: HF activation names -> keys of roofline.work.costs.ELEMENTWISE_FLOPS.
ACTIVATIONS = {
    "silu": "silu", "swish": "silu", "gelu": "gelu", "gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh",
    "gelu_fast": "gelu_tanh", "gelu_python": "gelu", "relu": "relu",
}
LLAMA_LIKE = ("llama", "mistral", "mixtral", "qwen2", "gemma", "gemma2", "phi3", "deepseek_v2", "deepseek_v3",
              "kimi_k2", "qwen3", "qwen3_moe", "gpt_oss", "llama4", "llama4_text")
KNOWN_TYPES = (*LLAMA_LIKE, "gpt2", "opt")

#: limit name -> (default, environment variable overriding it, the config fields it bounds)
LIMITS: dict[str, tuple[int, str, tuple[str, ...]]] = {
    "layers": (10_000, "ROOFLINE_MAX_LAYERS", ("num_hidden_layers", "n_layer", "num_layers", "first_k_dense_replace",
                                               "interleave_moe_layer_step", "decoder_sparse_step",
                                               "no_rope_layer_interval")),
    "hidden": (10**6, "ROOFLINE_MAX_HIDDEN",
               ("hidden_size", "n_embd", "d_model", "intermediate_size", "ffn_dim", "n_inner", "head_dim",
                "moe_intermediate_size", "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                "v_head_dim", "word_embed_proj_dim", "intermediate_size_mlp")),
    "vocab": (10**7, "ROOFLINE_MAX_VOCAB", ("vocab_size",)),
    "heads": (10**5, "ROOFLINE_MAX_HEADS", ("num_attention_heads", "n_head", "num_key_value_heads")),
    "experts": (10**5, "ROOFLINE_MAX_EXPERTS", ("num_local_experts", "n_routed_experts", "num_experts",
                                                "num_experts_per_tok", "n_shared_experts")),
    "positions": (10**8, "ROOFLINE_MAX_POSITIONS", ("max_position_embeddings", "n_positions", "sliding_window",
                                                    "attention_chunk_size")),
}
#: flag fields that must be JSON booleans when present ("false" as a string would read as true)
BOOL_FIELDS = ("tie_word_embeddings", "attention_bias", "mlp_bias", "enable_bias", "use_sliding_window",
               "use_cache", "is_decoder", "use_qk_norm")
#: rope_scaling / rope_parameters ``rope_type`` values transformers knows
ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "su", "mrope", "proportional")


def limit(name: str) -> int:
    """The current value of limit ``name`` (:data:`LIMITS`): its environment variable, else the default."""
    from roofline.core.errors import env_limit

    default, env, _ = LIMITS[name]
    return env_limit(env, default)


def _whole(value: Any) -> bool:
    """A finite whole number (int, or a float like 4096.0), not a bool."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) and value == int(value)


def check_config(cfg: Mapping[str, Any], where: str, *, strict_int: bool = False) -> None:
    """Types, signs and size limits of every known size field, rope scaling and flags; one-line errors.

    ``strict_int``: integral floats (4096.0) are refused too (transformers needs real ints).
    """
    mt = cfg.get("model_type")
    if mt is not None and not isinstance(mt, str):
        raise RooflineError(f"model_type must be a string, got {mt!r}", where=where)
    for name, (_, env, keys) in LIMITS.items():
        for key in keys:
            value = cfg.get(key)
            if value is None:
                continue
            if not _whole(value) or value < 0 or (strict_int and not isinstance(value, int)):
                raise RooflineError(f"{key} must be a non-negative integer, got {value!r}", where=where)
            top = limit(name)
            if value > top:
                raise RooflineError(f"{key} {int(value):,} exceeds the limit of {top:,} (larger than any real model; "
                                    f"set {env} to raise it)", where=where)
    for key in BOOL_FIELDS:
        value = cfg.get(key)
        if value is not None and not isinstance(value, bool):
            raise RooflineError(f"{key} must be true or false, got {value!r}", where=where)
    for key in ("rope_scaling", "rope_parameters"):
        rope = cfg.get(key)
        if rope is None:
            continue
        if not isinstance(rope, Mapping):
            raise RooflineError(f"{key} must be an object, got {rope!r}", where=where)
        kind = rope.get("rope_type", rope.get("type"))
        if kind is not None and kind not in ROPE_TYPES:
            raise RooflineError(f"{key}.rope_type {kind!r} is not one of {', '.join(ROPE_TYPES)}", where=where)
        factor = rope.get("factor")
        if factor is not None and (isinstance(factor, bool) or not isinstance(factor, (int, float))
                                   or not math.isfinite(factor) or factor <= 0):
            raise RooflineError(f"{key}.factor must be a positive number, got {factor!r}", where=where)


@dataclass(frozen=True)
class Arch:
    """A decoder-only transformer, reduced to the shapes that cost FLOPs and bytes.

    ``head_dim`` is the query/key width per head and ``v_head_dim`` the value
    width (equal except for MLA).  ``window_layers`` of the ``layers`` use a
    sliding attention window of ``sliding_window`` tokens.  MoE: ``experts``
    routed experts (0 = dense), ``top_k`` per token, ``shared_experts`` always
    on, each of width ``moe_intermediate``; ``dense_layers`` of the layers (DeepSeek's first ones, or
    interleaved) keep a dense MLP of width ``intermediate``.  MLA: ``kv_lora_rank`` > 0.

    Which layers are dense is not kept, only how many (:func:`moe_layer_ids`): the op table counts each op
    once per layer it runs in, so MoE layers interleaved with dense ones (Llama 4 Maverick, a Qwen
    ``decoder_sparse_step``, a DeepSeek ``moe_layer_freq``) cost what the same counts cost in any order.
    ``local_attention``: how the ``window_layers`` attend locally: ``sliding`` (the last ``sliding_window``
    keys) or ``chunked`` (Llama 4: the keys of the query's own chunk of ``sliding_window`` tokens).
    ``qk_norm_layers`` layers normalise each head's q and k (Qwen3, Llama 4), with a learned scale when
    ``qk_norm_weights``; ``attention_sinks``: one learned logit per head joins each softmax (gpt-oss);
    ``nope_layers`` layers apply no RoPE (Llama 4); ``expert_bias``: the router and the experts' projections
    carry biases (gpt-oss).
    """

    name: str
    source: str
    model_type: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    v_head_dim: int
    intermediate: int
    vocab: int
    gated: bool = True
    activation: str = "silu"
    norm: str = "rms"
    norms_per_layer: int = 2
    positions: str = "rope"
    position_table: int = 0  # rows of a learned position table
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    norm_bias: bool = False
    tie_embeddings: bool = False
    embed_scale: bool = False
    sliding_window: int = 0
    window_layers: int = 0
    experts: int = 0
    top_k: int = 0
    shared_experts: int = 0
    moe_intermediate: int = 0
    dense_layers: int = 0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    local_attention: str = "sliding"
    nope_layers: int = 0
    qk_norm_layers: int = 0
    qk_norm_weights: bool = True
    attention_sinks: bool = False
    expert_bias: bool = False
    #: node-limited routing (DeepSeek-V3 ``n_group`` / ``topk_group``): the routed experts in ``expert_groups`` equal
    #: groups, a token's experts chosen within ``topk_groups`` of them (0: no limit)
    expert_groups: int = 0
    topk_groups: int = 0
    #: the routed experts' weight format as the checkpoint ships it ('mxfp4': gpt-oss), '' for the model's dtype
    expert_format: str = ""
    #: the config's context: max_position_embeddings (n_positions) and, when its rope scaling extends it past
    #: that (original_max_position_embeddings x factor), the positions it reaches and its type (0, '': none)
    max_positions: int = 0
    rope_positions: int = 0
    rope_type: str = ""
    warnings: tuple[str, ...] = ()

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.experts else 0

    @property
    def mla(self) -> bool:
        return self.kv_lora_rank > 0

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["warnings"] = list(self.warnings)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Arch:
        fields = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in d.items() if k in fields}
        kw["warnings"] = tuple(kw.get("warnings", ()))
        return cls(**kw)


# -- lookup ----------------------------------------------------------------
@lru_cache(maxsize=1)
def bundled() -> dict[str, dict[str, Any]]:
    """Every bundled config by its short name, in name order."""
    out: dict[str, dict[str, Any]] = {}
    folder = resources.files("roofline").joinpath("models")
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".json"):
            data = json.loads(entry.read_text(encoding="utf-8"))
            out[data.get("_name", entry.name[:-5])] = data
    return out


@lru_cache(maxsize=1)
def _index() -> dict[str, str]:
    index: dict[str, str] = {}
    for name, data in bundled().items():
        hf_id = data.get("_hf_id", "")
        keys = [name, hf_id, hf_id.split("/")[-1], *data.get("_aliases", [])]
        for key in keys:
            if key:
                k = normalize(key)
                index[k] = name
                # HF ids often end in -hf / -v0.1 / -instruct: accept them without
                index.setdefault(re.sub(r"(hf|v\d+|instruct)$", "", k), name)
    return index


def list_models() -> list[dict[str, str]]:
    """[{'name', 'hf_id', 'model_type', 'source'}] for every bundled config."""
    return [{"name": n, "hf_id": d.get("_hf_id", ""), "model_type": d.get("model_type", ""),
             "source": d.get("_source", "")} for n, d in bundled().items()]


def closest(name: str, n: int = 3) -> list[str]:
    """The (up to) ``n`` bundled model names closest to ``name`` (:func:`roofline.core.names.closest`)."""
    return names.closest(name, _index(), n, names.TYPO_CUTOFF)


def _config_path(spec: str) -> Path | None:
    """The config.json ``spec`` names (a file, or a folder holding one), or None for a model name."""
    p = Path(spec)
    if spec.endswith(".json"):
        return p
    try:
        if p.is_file() or (p.is_dir() and (p / "config.json").is_file()):
            return p / "config.json" if p.is_dir() else p
    except (OSError, ValueError):  # a name the OS cannot take as a path (too long, a NUL byte): a model name
        pass
    return None


def find_config(spec: str) -> tuple[dict[str, Any], str]:
    """(config dict, where) for a bundled name / HF id, a config.json path, or a folder holding one."""
    path = _config_path(spec)
    if path is not None:
        from roofline.core.fileio import read_json

        data = read_json(path)
        if not isinstance(data, dict):
            raise RooflineError(f"expected a JSON object, got {type(data).__name__}", where=str(path))
        return data, str(path)
    name = names.resolve(spec, _index(), "model", hint=" (see 'roofline llm --list', or give a config.json path)")
    return bundled()[name], name


def load_arch(spec: str | Mapping[str, Any] | Arch) -> Arch:
    """An :class:`Arch` from a bundled name, HF id, config.json path or config dict.

    A config file is read again once it changes (its modification time or size).
    """
    if isinstance(spec, Arch):
        return spec
    if isinstance(spec, Mapping):
        return parse_config(spec, where="config")
    if not isinstance(spec, str) or not spec.strip():
        raise RooflineError(f"model: expected a name, a config.json path or a dict, got {spec!r}")
    path = _config_path(spec)
    if path is None:
        return _load_cached(spec)
    try:
        st = path.stat()
    except OSError:
        return _load_cached(spec, None)  # not there: find_config says so in one line, and nothing is cached
    return _load_cached(spec, (str(path.resolve()), st.st_mtime_ns, st.st_size))


@lru_cache(maxsize=64)
def _load_cached(spec: str, file_key: tuple[str, int, int] | None = None) -> Arch:
    """``file_key`` (resolved path, mtime_ns, size) of a config file: an edited file is a new key."""
    data, where = find_config(spec)
    return parse_config(data, where=where)


# -- parsing ---------------------------------------------------------------
def parse_config(cfg: Mapping[str, Any], *, where: str = "config") -> Arch:
    """Validate a HF config dict and reduce it to an :class:`Arch` (errors name the field and value)."""
    check_config(cfg, where)
    mt = str(cfg.get("model_type", "") or "")
    warnings: list[str] = []
    if mt not in KNOWN_TYPES:
        warnings.append(f"model_type {mt!r} is not one roofline knows ({', '.join(KNOWN_TYPES)}); read as Llama-style")
    name = str(cfg.get("_name") or cfg.get("_name_or_path") or where)
    source = str(cfg.get("_source") or where)
    cfg, mt = _language_model(cfg, where, mt, warnings)
    fields = _Fields(cfg, where, mt)
    kw = _gpt2(fields) if mt == "gpt2" else _opt(fields) if mt == "opt" else _llama_like(fields)
    warnings.extend(kw.pop("notes", ()))
    kw.setdefault("head_dim", 0)
    d, heads, kv = kw["hidden"], kw["heads"], kw["kv_heads"]
    if not kw["head_dim"]:
        if d % heads:
            raise RooflineError(f"hidden size {d} is not divisible by num_attention_heads {heads}", where=where)
        kw["head_dim"] = d // heads
    kw.setdefault("v_head_dim", kw["head_dim"])
    if heads % kv:
        raise RooflineError(f"num_key_value_heads {kv} does not divide num_attention_heads {heads}", where=where)
    if kw.get("experts") and kw["top_k"] > kw["experts"]:
        raise RooflineError(f"num_experts_per_tok {kw['top_k']} exceeds the {kw['experts']} experts", where=where)
    return Arch(name=name, source=source, model_type=mt, warnings=tuple(warnings), **kw, **_context(cfg))


def _context(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """max_positions, rope_positions, rope_type of a checked config (:class:`Arch`): Llama 3.1 states its scaled
    context as max_position_embeddings (original 8,192 x factor 8 = 65,536 does not extend its 131,072); a
    YaRN Qwen states 32,768 and factor 4 (131,072 with the scaling)."""
    top = int(cfg.get("max_position_embeddings") or cfg.get("n_positions") or 0)
    rope = next((r for r in (cfg.get("rope_scaling"), cfg.get("rope_parameters")) if isinstance(r, Mapping)), None)
    factor = rope.get("factor") if rope is not None else None
    if not top or rope is None or not isinstance(factor, (int, float)) or isinstance(factor, bool):
        return {"max_positions": top}
    base = rope.get("original_max_position_embeddings")
    start = int(base) if isinstance(base, (int, float)) and _whole(base) and base > 0 else top
    reach = int(start * float(factor))
    if reach <= top:
        return {"max_positions": top}
    return {"max_positions": top, "rope_positions": reach, "rope_type": str(rope.get("rope_type", rope.get("type")))}


def _language_model(cfg: Mapping[str, Any], where: str, mt: str,
                    warnings: list[str]) -> tuple[Mapping[str, Any], str]:
    """A multimodal config's language model (Llama 4: its ``text_config``), with a warning; else ``cfg``."""
    text = cfg.get("text_config")
    if text is None:
        return cfg, mt
    if not isinstance(text, Mapping):
        raise RooflineError(f"text_config must be an object, got {shown(text)}", where=where)
    check_config(text, f"{where}: text_config")
    inner = {**text, "quantization_config": cfg.get("quantization_config", text.get("quantization_config"))}
    inner_mt = str(text.get("model_type") or mt)
    if "vision_config" in cfg:
        warnings.append("the language model only: the vision encoder and its projector are not modelled")
    return inner, inner_mt


class _Fields:
    """Typed reads of one config's fields; a missing or bad one is a one-line error naming it."""

    def __init__(self, cfg: Mapping[str, Any], where: str, model_type: str) -> None:
        self.cfg, self.where, self.model_type = cfg, where, model_type

    def need(self, key: str) -> Any:
        if key not in self.cfg or self.cfg[key] is None:
            raise RooflineError(f"missing field {key!r} (needed for model_type {self.model_type or 'unknown'!r})",
                                where=self.where)
        return self.cfg[key]

    def pos_int(self, key: str, value: Any) -> int:
        if not _whole(value) or value <= 0:
            raise RooflineError(f"{key} must be a positive integer, got {value!r}", where=self.where)
        return int(value)

    def need_int(self, key: str) -> int:
        return self.pos_int(key, self.need(key))

    def get_int(self, key: str, default: int = 0) -> int:
        v = self.cfg.get(key)
        return default if v is None else self.pos_int(key, v) if not (_whole(v) and v == 0) else 0

    def step(self, key: str, default: int = 1) -> int:
        """A layer stride (``decoder_sparse_step``, ``interleave_moe_layer_step``, ...): absent, ``default``; else
        a positive integer (0 would divide by zero in the model's own code)."""
        v = self.cfg.get(key)
        return default if v is None else self.pos_int(key, v)

    def activation(self, key: str, default: str) -> str:
        return _activation(self.cfg.get(key, default), key, self.where)


def _gpt2(f: _Fields) -> dict[str, Any]:
    d = f.need_int("n_embd")
    heads = f.need_int("n_head")
    return dict(hidden=d, layers=f.need_int("n_layer"), heads=heads, kv_heads=heads,
                intermediate=f.get_int("n_inner") or 4 * d, vocab=f.need_int("vocab_size"),
                gated=False, activation=f.activation("activation_function", "gelu_new"),
                norm="layer", norm_bias=True, positions="learned", position_table=f.get_int("n_positions", 1024),
                qkv_bias=True, o_bias=True, mlp_bias=True, tie_embeddings=bool(f.cfg.get("tie_word_embeddings", True)))


def _opt(f: _Fields) -> dict[str, Any]:
    d = f.need_int("hidden_size")
    proj = f.cfg.get("word_embed_proj_dim", d)
    if proj not in (None, d):
        raise RooflineError(f"word_embed_proj_dim {proj!r} != hidden_size {d}: OPT projections are not modelled",
                            where=f.where)
    heads = f.need_int("num_attention_heads")
    bias = bool(f.cfg.get("enable_bias", True))
    return dict(hidden=d, layers=f.need_int("num_hidden_layers"), heads=heads, kv_heads=heads,
                intermediate=f.need_int("ffn_dim"), vocab=f.need_int("vocab_size"),
                gated=False, activation=f.activation("activation_function", "relu"),
                norm="layer", norm_bias=True, positions="learned",
                # OPT's learned position table has 2 extra rows (padding offset)
                position_table=f.get_int("max_position_embeddings", 2048) + 2,
                qkv_bias=bias, o_bias=bias, mlp_bias=bias, tie_embeddings=bool(f.cfg.get("tie_word_embeddings", True)))


def _llama_like(f: _Fields) -> dict[str, Any]:
    """Llama and its relatives (gated MLP, RMSNorm, RoPE), with their MoE, MLA and sliding-window variants."""
    cfg, mt = f.cfg, f.model_type
    d = f.need_int("hidden_size")
    heads = f.need_int("num_attention_heads")
    layers = f.need_int("num_hidden_layers")
    kv = cfg.get("num_key_value_heads")
    kv = heads if kv is None else f.pos_int("num_key_value_heads", kv)
    act_name = cfg.get("hidden_activation") or cfg.get("hidden_act") or "silu"
    gemma = mt in ("gemma", "gemma2")
    attn_bias = bool(cfg.get("attention_bias", False))
    kw: dict[str, Any] = dict(
        hidden=d, layers=layers, heads=heads, kv_heads=kv, intermediate=f.need_int("intermediate_size"),
        vocab=f.need_int("vocab_size"), gated=True, activation=_activation(act_name, "hidden_act", f.where),
        qkv_bias=attn_bias or mt == "qwen2", o_bias=attn_bias, mlp_bias=bool(cfg.get("mlp_bias", False)),
        tie_embeddings=bool(cfg.get("tie_word_embeddings", gemma)),
        norms_per_layer=4 if mt == "gemma2" else 2, embed_scale=gemma)
    if cfg.get("head_dim") is not None and not cfg.get("kv_lora_rank"):
        kw["head_dim"] = f.pos_int("head_dim", cfg["head_dim"])
    moe = _moe(f, kw["intermediate"], layers)
    kw["intermediate"] = moe.pop("dense_intermediate", kw["intermediate"])
    kw.update(moe)
    if cfg.get("kv_lora_rank"):
        nope = f.need_int("qk_nope_head_dim")
        rope = f.need_int("qk_rope_head_dim")
        kw.update(kv_lora_rank=f.pos_int("kv_lora_rank", cfg["kv_lora_rank"]), q_lora_rank=f.get_int("q_lora_rank"),
                  qk_nope_head_dim=nope, qk_rope_head_dim=rope, head_dim=nope + rope, v_head_dim=f.need_int("v_head_dim"))
    kw.update(_windows(f, layers))
    kw.update(_attention_extras(f, layers))
    return kw


def _attention_extras(f: _Fields, layers: int) -> dict[str, Any]:
    """QK-norm (Qwen3: RMSNorm with a scale on each head's q and k; Llama 4: the same without a scale, on its
    RoPE layers), attention sinks (gpt-oss), Llama 4's NoPE layers and its chunked local attention."""
    cfg, mt = f.cfg, f.model_type
    kw: dict[str, Any] = {}
    if mt in ("qwen3", "qwen3_moe"):  # transformers Qwen3Attention: q_norm, k_norm = Qwen3RMSNorm(head_dim)
        kw.update(qk_norm_layers=layers)
    if mt == "gpt_oss":  # transformers GptOssAttention: self.sinks, one learned logit per head; the router's and
        kw.update(attention_sinks=True, expert_bias=True)  # the experts' projections carry biases (GptOssExperts)
    if mt in ("llama4", "llama4_text"):
        rope = _llama4_rope_layers(f, layers)
        kw["nope_layers"] = layers - rope
        if cfg.get("use_qk_norm"):  # Llama4TextL2Norm (no weight) on q and k of the RoPE layers
            kw.update(qk_norm_layers=rope, qk_norm_weights=False)
        chunk = cfg.get("attention_chunk_size")
        if chunk and rope:  # the RoPE layers attend within chunks, the NoPE ones globally
            kw.update(local_attention="chunked", window_layers=rope,
                      sliding_window=f.pos_int("attention_chunk_size", chunk))
    quant = cfg.get("quantization_config")
    if isinstance(quant, Mapping) and str(quant.get("quant_method", "")).lower() == "mxfp4":
        kw["expert_format"] = "mxfp4"  # the experts as shipped; served so (roofline.llm.spec.Precisions.experts)
    return kw


def _llama4_rope_layers(f: _Fields, layers: int) -> int:
    """Llama 4's RoPE layers (the others are NoPE, global): ``no_rope_layers`` (1 = RoPE), else every layer
    but each ``no_rope_layer_interval``-th (Llama4TextConfig: ``int((layer_idx + 1) % interval != 0)``)."""
    flags = f.cfg.get("no_rope_layers")
    if flags:
        if not isinstance(flags, list) or len(flags) != layers or any(x not in (0, 1) for x in flags):
            raise RooflineError(f"no_rope_layers must hold one 0 or 1 per layer ({layers}), got {shown(flags)}",
                                where=f.where)
        return sum(1 for x in flags if x)
    interval = f.step("no_rope_layer_interval", 4)
    return sum(1 for i in range(layers) if (i + 1) % interval != 0)


def _moe(f: _Fields, intermediate: int, layers: int) -> dict[str, Any]:
    """Routed experts: Mixtral / gpt-oss / Llama 4 style (``num_local_experts``), Qwen style (``num_experts``) or
    DeepSeek style (``n_routed_experts``, shared experts); which layers are MoE: :func:`moe_layer_ids`."""
    cfg = f.cfg
    top = cfg.get("num_experts_per_tok")
    spellings = ("num_local_experts", "n_routed_experts", "num_experts")
    for name in spellings:
        if name in cfg and not cfg[name] and top:  # 0 experts routed to top-k: not a dense model either
            raise RooflineError(f"{name} is {cfg[name]!r} but num_experts_per_tok is {top!r}: a mixture of experts "
                                "needs experts (a dense model gives neither)", where=f.where)
    found = [name for name in spellings if cfg.get(name)]
    if not found:
        return {}
    key = found[0]
    kw: dict[str, Any] = dict(experts=f.pos_int(key, cfg[key]), top_k=f.need_int("num_experts_per_tok"),
                              dense_layers=layers - len(moe_layer_ids(f, layers)))
    if f.model_type in ("llama4", "llama4_text"):
        # experts and the shared expert of intermediate_size; the dense layers' MLP of intermediate_size_mlp
        kw.update(moe_intermediate=intermediate, shared_experts=1,
                  dense_intermediate=f.get_int("intermediate_size_mlp") or intermediate)
    elif key == "num_local_experts":
        kw.update(moe_intermediate=intermediate)  # Mixtral, gpt-oss: every expert as wide as intermediate_size
    else:
        kw.update(moe_intermediate=f.need_int("moe_intermediate_size"), shared_experts=f.get_int("n_shared_experts"))
    if f.get_int("n_group") > 1 and 0 < f.get_int("topk_group") < f.get_int("n_group"):  # DeepSeek-V3's group limit
        kw.update(expert_groups=f.get_int("n_group"), topk_groups=f.get_int("topk_group"))
    return kw


def _layer_list(f: _Fields, key: str, layers: int) -> list[int]:
    """A config's list of layer indices (``mlp_only_layers``, ``moe_layers``), each checked."""
    value = f.cfg.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(_whole(x) and 0 <= x < layers for x in value):
        raise RooflineError(f"{key} must be a list of layer indices in 0..{layers - 1}, got {shown(value)}",
                            where=f.where)
    return [int(x) for x in value]


def moe_layer_ids(f: _Fields, layers: int) -> list[int]:
    """The indices of a MoE config's layers that route to experts, the others keeping a dense MLP:

    * DeepSeek: ``first_k_dense_replace`` dense layers first, then every ``moe_layer_freq``-th layer
      (transformers' DeepseekV3: ``layer_idx >= first_k_dense_replace and layer_idx % moe_layer_freq == 0``);
    * Qwen MoE: every ``decoder_sparse_step``-th layer, 1-based, not in ``mlp_only_layers`` (transformers'
      Qwen3MoeDecoderLayer: ``(layer_idx + 1) % decoder_sparse_step == 0``);
    * Llama 4: ``moe_layers``, else every ``interleave_moe_layer_step``-th layer, 1-based (Llama4TextConfig:
      ``range(interleave_moe_layer_step - 1, num_hidden_layers, interleave_moe_layer_step)``).
    """
    cfg = f.cfg
    if f.model_type in ("llama4", "llama4_text"):
        if cfg.get("moe_layers") is not None:
            return sorted(set(_layer_list(f, "moe_layers", layers)))
        step = f.step("interleave_moe_layer_step")
        return list(range(step - 1, layers, step))
    dense_first = min(layers, f.get_int("first_k_dense_replace"))
    freq = cfg.get("moe_layer_freq", 1)
    if isinstance(freq, list):  # one 0/1 flag per layer
        if len(freq) != layers or any(x not in (0, 1) or isinstance(x, bool) for x in freq):
            raise RooflineError(f"moe_layer_freq: a list must hold one 0 or 1 per layer ({layers}), got "
                                f"{shown(freq)}", where=f.where)
        return [i for i in range(dense_first, layers) if freq[i]]
    freq = 1 if freq is None else f.pos_int("moe_layer_freq", freq)
    step = f.step("decoder_sparse_step")
    dense = set(_layer_list(f, "mlp_only_layers", layers))
    return [i for i in range(dense_first, layers) if i % freq == 0 and (i + 1) % step == 0 and i not in dense]


def _windows(f: _Fields, layers: int) -> dict[str, Any]:
    """How many layers use a sliding attention window, and its width."""
    cfg = f.cfg
    window = cfg.get("sliding_window")
    types = cfg.get("layer_types")
    if window and isinstance(types, list) and len(types) == layers:
        window_layers = sum(1 for t in types if t == "sliding_attention")
    elif window and f.model_type == "gemma2":
        window_layers = (layers + 1) // 2  # even layers slide
    elif window and cfg.get("use_sliding_window", True):
        window_layers = layers
    else:
        return {}
    if not window_layers:
        return {"window_layers": 0}
    return {"window_layers": window_layers, "sliding_window": f.pos_int("sliding_window", window)}


def _activation(name: Any, key: str, where: str) -> str:
    act = ACTIVATIONS.get(str(name))
    if act is None:
        raise RooflineError(f"{key} {name!r} is not supported; known: {', '.join(ACTIVATIONS)}", where=where)
    return act
