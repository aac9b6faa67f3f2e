"""Hugging Face frontend: a local ``config.json`` -> meta-device model -> traced Workload.

The model is built by ``transformers.AutoModelForCausalLM.from_config`` under
``torch.device("meta")``: no weights are allocated or downloaded, nothing
touches the network.  The trace is :func:`roofline.frontends.torch.from_torch`.

* ``phase="prefill"``: one forward over ``batch x seq_len`` prompt tokens,
  writing the KV cache.
* ``phase="decode"``: one new token per sequence against a static KV cache
  already holding ``kv_len`` tokens (a ``StaticCache`` of meta tensors, so the
  step reads the cache inside attention and writes one slot; HF's
  ``DynamicCache`` would copy the whole cache every step).

Groups are module paths as in the checkpoint (``model.layers.0.self_attn.q_proj``).
MoE layers use transformers' grouped-matmul experts: every expert's weights
are read once per layer and the FLOPs are those of the routed tokens
(tokens x top-k), whatever the routing.

The config is validated before anything is built (:func:`roofline.llm.config.check_config`):
sizes must be whole numbers within the limits stated there (``ROOFLINE_MAX_LAYERS``,
``ROOFLINE_MAX_HIDDEN``, ``ROOFLINE_MAX_VOCAB``, ...), rope scaling a known type;
``batch``, ``seq_len`` and ``kv_len`` are at most ``ROOFLINE_MAX_DIM``
(:func:`roofline.core.limits.check_dims`).

>>> from roofline.frontends.hf import from_hf_config
>>> w = from_hf_config({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
...                     "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
...                     "vocab_size": 128}, phase="decode", batch=2, kv_len=32)
>>> "model.layers.0.self_attn.q_proj" in set(w.column("group"))
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roofline.core.errors import RooflineError, require
from roofline.core.limits import check_dims
from roofline.core.precision import TORCH_DTYPES
from roofline.work.workload import Workload

#: dtype names accepted on the command line and in the API (the model's float dtypes) -> torch dtype attribute.
DTYPES = {k: v for k, v in TORCH_DTYPES.items() if v in ("float32", "bfloat16", "float16", "float64")}

#: Each model needs one field of each tuple (families name them differently).
REQUIRED = (("hidden_size", "n_embd", "d_model"), ("num_hidden_layers", "n_layer", "num_layers"), ("vocab_size",))


def load_config_dict(config: str | Path | Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The config as a dict and a name for messages; validates the fields every model needs."""
    from roofline.core.fileio import read_json

    if isinstance(config, Mapping):
        data, where = dict(config), "config"
    else:
        path = Path(config)
        if path.is_dir():
            path = path / "config.json"
        data, where = read_json(path), str(path)
        if not isinstance(data, dict):
            raise RooflineError(f"expected a JSON object, got {type(data).__name__}", where=where)
    if "model_type" not in data:
        raise RooflineError("missing field 'model_type' (e.g. \"llama\")", where=where)
    for names in REQUIRED:
        if not any(n in data for n in names):
            raise RooflineError(f"missing field {names[0]!r}" + (f" (or {', '.join(map(repr, names[1:]))})"
                                                               if len(names) > 1 else ""), where=where)
        for n in names:
            v = data.get(n)
            if n in data and (isinstance(v, bool) or not isinstance(v, int) or v <= 0):
                raise RooflineError(f"field {n!r} must be a positive integer, got {v!r}", where=where)
    from roofline.llm.config import check_config

    check_config(data, where, strict_int=True)
    _check_heads(data, where)
    return data, where


def _first(data: Mapping[str, Any], *names: str) -> tuple[str, Any]:
    return next(((n, data[n]) for n in names if data.get(n) is not None), (names[0], None))


def _check_heads(data: Mapping[str, Any], where: str) -> None:
    """Head counts are positive and divide what they split (types and limits: check_config)."""
    for key in ("num_attention_heads", "n_head", "num_key_value_heads", "intermediate_size", "head_dim"):
        if data.get(key) == 0:
            raise RooflineError(f"{key} must be a positive integer, got 0", where=where)
    hkey, heads = _first(data, "num_attention_heads", "n_head")
    dkey, hidden = _first(data, "hidden_size", "n_embd", "d_model")
    if heads and hidden and data.get("head_dim") is None and hidden % heads:
        raise RooflineError(f"{dkey} {hidden} is not divisible by {hkey} {heads}", where=where)
    kv = data.get("num_key_value_heads")
    if heads and kv and heads % kv:
        raise RooflineError(f"num_key_value_heads {kv} does not divide {hkey} {heads}", where=where)


def build_config(data: Mapping[str, Any], where: str = "config") -> Any:
    """A transformers config object from a dict (``model_type`` picks the class)."""
    transformers = require("transformers", "hf")
    d = dict(data)
    model_type = d.pop("model_type")
    try:
        return transformers.AutoConfig.for_model(model_type, **d)
    except (ValueError, KeyError) as exc:
        raise RooflineError(f"model_type {model_type!r}: {str(exc).splitlines()[0]}", where=where) from None


def from_hf_config(config: str | Path | Mapping[str, Any], phase: str = "prefill", batch: int = 1,
                   seq_len: int | None = None, kv_len: int = 0, dtype: str = "bf16", *,
                   mode: str = "inference", title: str | None = None) -> Workload:
    """Trace a causal LM built from a local config on the meta device.

    ``phase``: ``"prefill"`` (``seq_len`` tokens, default 512; ``kv_len`` > 0 continues a
    cached prefix) or ``"decode"`` (one token against ``kv_len`` cached tokens).
    ``dtype``: bf16 (default), fp16, fp32.

    >>> from roofline.frontends.hf import from_hf_config
    >>> cfg = {"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 128, "n_positions": 64}
    >>> w = from_hf_config(cfg, phase="prefill", batch=1, seq_len=16)
    >>> w.info["phase"], w.info["tokens"]
    ('prefill', 16)
    """
    from roofline.core import arguments as arg
    from roofline.frontends.torch import from_torch

    if isinstance(config, bytes) or not isinstance(config, (str, os.PathLike, Mapping)):
        raise arg.type_error("from_hf_config", "config", "a config.json path (str or os.PathLike) or a config dict",
                             config)
    arg.choice(phase, ("prefill", "decode"), "from_hf_config", "phase")
    model, kwargs, info = prepare(config, phase, batch, seq_len, kv_len, dtype)
    w = from_torch(model, kwargs=kwargs, mode=mode, title=title or info.pop("title"))
    info.pop("title", None)
    assumptions = list(w.assumptions)
    if phase == "decode":
        assumptions.append(f"decode: static KV cache of {kv_len} tokens per sequence; the step writes one slot and "
                           "attention reads the whole cache (no mask skipping)")
    elif kv_len:
        assumptions.append(f"prefill after a cached prefix of {kv_len} tokens: transformers passes an explicit mask, "
                           "so attention counts every (query, key) pair of the static cache (an upper bound)")
    return w.replace(info=dict(w.info, **info), source=f"hf: {info['config']}", assumptions=assumptions)


def prepare(config: str | Path | Mapping[str, Any], phase: str = "prefill", batch: int = 1,
            seq_len: int | None = None, kv_len: int = 0, dtype: str = "bf16") -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """The meta-device model, its forward keyword arguments and an info dict (validated; nothing traced).

    Used by :func:`from_hf_config` and by benchmarks that run other counters on the same model.
    """
    data, where = load_config_dict(config)  # all input checked before importing torch / transformers
    if phase not in ("prefill", "decode"):
        raise RooflineError(f"phase must be 'prefill' or 'decode', got {phase!r}")
    if dtype not in DTYPES:
        raise RooflineError(f"unknown dtype {dtype!r}; use one of {', '.join(sorted(DTYPES))}")
    if phase == "prefill":
        seq_len = 512 if seq_len is None else seq_len
    for name, v, low in (("batch", batch, 1), ("seq_len", seq_len if phase == "prefill" else 1, 1),
                         ("kv_len", kv_len, 1 if phase == "decode" else 0)):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise RooflineError(f"{name} must be an integer >= {low}, got {v!r}")
        check_dims((v,), name)
    torch = require("torch", "hf")
    transformers = require("transformers", "hf")
    cfg = build_config(data, where)
    cfg._attn_implementation = "sdpa"
    torch_dtype = getattr(torch, DTYPES[dtype])
    try:
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch_dtype)
    except ValueError as exc:
        raise RooflineError(f"cannot build a causal LM from model_type {data['model_type']!r}: "
                            f"{str(exc).splitlines()[0]}", where=where) from None
    model.eval()
    new_tokens = seq_len if phase == "prefill" else 1
    assert new_tokens is not None
    ids = torch.zeros(batch, new_tokens, dtype=torch.long, device="meta")
    kwargs: dict[str, Any] = {"input_ids": ids, "use_cache": True}
    if kv_len:  # decode: the cache; prefill: an already-cached prefix
        import inspect

        cache = transformers.StaticCache(config=model.config, max_cache_len=kv_len + new_tokens)
        _fill_cache(torch, cache, model.config, batch, kv_len, torch_dtype)
        # transformers >= 5.24 names the argument ``cache`` (``past_key_values`` is deprecated)
        kwargs["cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"] = cache
        kwargs["cache_position"] = torch.arange(kv_len, kv_len + new_tokens, device="meta")
        kwargs["position_ids"] = torch.arange(kv_len, kv_len + new_tokens, device="meta").expand(batch, -1)
    name = data.get("_name_or_path") or data.get("architectures", [type(model).__name__])[0]
    title = f"{name} {phase} batch {batch} " + (f"seq {seq_len}" if phase == "prefill" else f"kv {kv_len}")
    info = {"frontend": "hf", "config": where, "model_type": data["model_type"], "phase": phase, "batch": batch,
            "seq_len": seq_len if phase == "prefill" else None, "kv_len": kv_len, "tokens": batch * new_tokens,
            "dtype": dtype, "title": title}
    return model, kwargs, info


def _fill_cache(torch: Any, cache: Any, config: Any, batch: int, kv_len: int, dtype: Any) -> None:
    """Initialise every layer of ``cache`` with meta K/V tensors (outside the trace: costs nothing)."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    heads = getattr(text, "num_attention_heads", None) or text.n_head
    kv_heads = getattr(text, "num_key_value_heads", None) or heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads
    for i, layer in enumerate(cache.layers):
        k = torch.empty(batch, kv_heads, 0, head_dim, dtype=dtype, device="meta")
        if hasattr(layer, "lazy_initialization"):
            layer.lazy_initialization(k, k)
        else:  # older/newer layouts: an empty update initialises the layer
            cache.update(k, k, i)
        if hasattr(layer, "cumulative_length"):
            # a real (CPU) scalar: positions and masks read it, and a meta one would only give assumed values
            layer.cumulative_length = torch.tensor(kv_len)
    if hasattr(cache, "get_query_offset"):
        # the mask code asks "is the cache empty (offset == 0)?" after moving the offset to the meta device, where
        # the answer is data-dependent and would be assumed True: a cached prefix would then be dropped (K/V cut to
        # the new tokens).  A plain int keeps the real answer for the whole forward.
        cache.get_query_offset = lambda layer_idx=0: kv_len
