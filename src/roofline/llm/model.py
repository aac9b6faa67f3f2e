"""The analytic transformer inference model: a symbolic op table evaluated with numpy.

Every op's FLOPs and traffic are linear in a few *terms* of the run's shape
(:data:`TERMS`): a constant (weights), the sequences ``b``, the tokens ``n = b*s``
processed in the step, the keys read ``b*S``, the visible (causal) query-key
pairs, the score-tensor size ``b*s*S``, the experts touched (:func:`experts_touched`:
by default the expected number under uniform top-k routing, ``E*(1-(1-k/E)^n)``) and
the sliding-window versions of keys and pairs.  An :class:`OpTable` holds, per
op, one coefficient row per quantity (FLOPs; weight elements, quantised and
not; activation, KV-cache elements read and written; raw bytes).  One
configuration is one row of the basis matrix; a sweep of 10,000
configurations is one matrix product, and a :class:`~roofline.workload.Workload`
is the same table evaluated at a single point, so the two can never disagree.

Everything is per device: with tensor parallelism ``tp`` the heads, the MLP
width, the experts' width and the vocabulary are split ``tp`` ways; norms,
residual adds, the router, the MLA down-projections and the MLA latent cache
are replicated.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from roofline.costs import (
    ELEMENTWISE_FLOPS,
    NORM_AFFINE_FLOPS,
    NORM_FLOPS,
    SOFTMAX_FLOPS,
    aligned_causal_pairs,
    attention_flops,
    gemm_flops,
)
from roofline.errors import RooflineError
from roofline.limits import max_dim
from roofline.llm.config import Arch, load_arch
from roofline.precision import BITS, canonical, wider
from roofline.workload import PhaseTotals, Workload, WorkloadBuilder

#: The basis columns: values of one step's shape that every coefficient multiplies
#: (``b`` sequences each adding ``s`` new tokens that see ``S`` keys; see :func:`basis`).
#:
#: * ``ONE`` (one): 1, per step whatever its size: weights read once.
#: * ``SEQ`` (seqs): ``b``, per sequence: lm_head on each sequence's last token.
#: * ``TOK`` (tokens): ``n = b*s``, per token processed: projections, norms, activations, the cache write.
#: * ``KEY`` (keys): ``b*S``, per key read: the K and V cache (MLA prefill: the latents decompressed).
#: * ``PAIR`` (pairs): ``b * aligned_causal_pairs(s, S)``, the visible (causal) query-key pairs: attention FLOPs.
#: * ``FULL`` (scores): ``b*s*S``, every query-key pair, masked or not: the unfused score tensor's size.
#: * ``EXP`` (experts): the routed experts the step's tokens touch (:func:`experts_touched`): their weights.
#: * ``KEYW`` / ``PAIRW`` (keys_window, pairs_window): ``KEY`` and ``PAIR`` for sliding-window layers,
#:   each query seeing at most the window's keys (equal to ``KEY``/``PAIR`` for a model without them).
TERMS = ("one", "seqs", "tokens", "keys", "pairs", "scores", "experts", "keys_window", "pairs_window")
ONE, SEQ, TOK, KEY, PAIR, FULL, EXP, KEYW, PAIRW = range(len(TERMS))
#: Which roof an op's FLOPs run on: the GEMM precision's matrix roof, the attention
#: precision's matrix roof, the fp32 vector roof, or the vector roof over the link.
ROLES = ("gemm", "attn", "vector", "link")
GEMM, ATTN, VEC, LINK = range(len(ROLES))
#: What an op's coefficient rows count, per basis term (:func:`evaluate` turns elements into bytes):
#:
#: * ``flops``: FLOPs (every coefficient from :mod:`roofline.costs`: ``gemm_flops``, ``attention_flops``,
#:   the per-element ``ELEMENTWISE_FLOPS``/``NORM_FLOPS``/``SOFTMAX_FLOPS``).
#: * ``wq``: weight elements read at the weights' precision (quantised: projections, MLP and expert GEMMs).
#: * ``wu``: weight elements read kept unquantised (16-bit under weight quantisation): the embedding rows
#:   gathered, lm_head, the router, norm scales/shifts and biases.
#: * ``ar`` / ``aw``: activation elements read / written (at the activations' precision), including the
#:   attention score tensor when unfused, MLA prefill's decompressed K and V, and the elements each device
#:   sends over the link in a collective (all-reduce, logits all-gather).
#: * ``kr`` / ``kw``: KV-cache elements read / written (at the KV cache's precision; MLA: the latent cache).
#: * ``xr``: bytes read as they are, not elements: the int64 token ids the embeddings gather with.
QUANTITIES = ("flops", "wq", "wu", "ar", "aw", "kr", "kw", "xr")
PHASES = ("prefill", "decode", "generate")
#: How a step's tokens spread over the routed experts (see :func:`experts_touched`).
MOE_ROUTINGS = ("expected", "worst", "best")
#: Accepted precisions: bits -> name, and names (case-insensitive, a few spellings).
#: Precisions an LLM's weights, activations and KV cache may take (spellings: roofline.precision).
LLM_PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")
INDEX_BYTES = 8  # token ids are int64
SCALE_BYTES = 2  # one fp16 scale per group of int4 values


def parse_precision(value: Any, field: str) -> str:
    """16 / '16' / 'bf16' / 'int4' -> a precision name; anything else is a one-line error."""
    name = canonical(value)
    if name in LLM_PRECISIONS:
        return name
    raise RooflineError(f"{field}: {value!r} is not supported; use 32, 16, 8 or 4 bits, "
                        f"or one of {', '.join(LLM_PRECISIONS)}")


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
    wider of (activations, KV cache).  Embedding, lm_head, router, norms and
    biases stay 16-bit when weights are quantised below 16 bits.
    """

    weights: str = "bf16"
    activations: str = "bf16"
    kv_cache: str = "bf16"
    group_size: int = 128

    @property
    def gemm(self) -> str:
        return wider(self.activations, self.weights)

    @property
    def attention(self) -> str:
        return wider(self.activations, self.kv_cache)

    @property
    def unquantized(self) -> str:
        return self.weights if BITS[self.weights] >= 16 else "bf16"

    def bytes(self) -> dict[str, float]:
        g = self.group_size
        return {"wq": element_bytes(self.weights, g), "wu": element_bytes(self.unquantized, g),
                "a": element_bytes(self.activations, g), "kv": element_bytes(self.kv_cache, g)}

    def to_dict(self) -> dict[str, Any]:
        return {"weights": self.weights, "activations": self.activations, "kv_cache": self.kv_cache,
                "group_size": self.group_size, "gemm_compute": self.gemm, "attention_compute": self.attention}


# -- the op table ------------------------------------------------------------
@dataclass(frozen=True)
class OpTable:
    """Ops of one phase step, symbolically: coefficient rows over :data:`TERMS`."""

    phase: str
    names: tuple[str, ...]
    kinds: tuple[str, ...]
    module_types: tuple[str, ...]
    roles: np.ndarray  # (ops,) index into ROLES
    counts: np.ndarray  # (ops,) layers the op runs in
    coef: Mapping[str, np.ndarray]  # quantity -> (ops, terms)

    def __len__(self) -> int:
        return len(self.names)


class _Rows:
    def __init__(self, phase: str) -> None:
        self.phase = phase
        self.names: list[str] = []
        self.kinds: list[str] = []
        self.mtypes: list[str] = []
        self.roles: list[int] = []
        self.counts: list[float] = []
        self.coef: dict[str, list[np.ndarray]] = {q: [] for q in QUANTITIES}

    def add(self, path: str, kind: str, role: int, count: float, **quantities: dict[int, float]) -> None:
        if count <= 0:
            return
        self.names.append(f"{self.phase}.{path}")
        self.kinds.append(kind)
        self.mtypes.append(path.split(".")[-1])
        self.roles.append(role)
        self.counts.append(float(count))
        for q in QUANTITIES:
            row = np.zeros(len(TERMS))
            for term, value in quantities.get(q, {}).items():
                row[term] += value
            self.coef[q].append(row)

    def table(self) -> OpTable:
        return OpTable(self.phase, tuple(self.names), tuple(self.kinds), tuple(self.mtypes),
                       np.asarray(self.roles, dtype=np.int64), np.asarray(self.counts),
                       {q: np.vstack(v) for q, v in self.coef.items()})


def kv_heads_per_device(arch: Arch, tp: int) -> int:
    """KV heads each device holds: split when tp divides them, replicated when they divide tp."""
    if arch.kv_heads % tp == 0:
        return arch.kv_heads // tp
    if tp % arch.kv_heads == 0:
        return 1
    raise RooflineError(f"tp {tp} and num_key_value_heads {arch.kv_heads}: one must divide the other")


def check_tp(arch: Arch, tp: int) -> None:
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise RooflineError(f"tp must be an integer >= 1, got {tp!r}")
    if arch.heads % tp:
        raise RooflineError(f"tp {tp} does not divide num_attention_heads {arch.heads} of {arch.name}")
    widths = []
    if arch.layers > arch.moe_layers:
        widths.append(("intermediate_size", arch.intermediate))
    if arch.experts:
        widths.append(("moe_intermediate_size", arch.moe_intermediate))
    for label, width in widths:
        if width % tp:
            raise RooflineError(f"tp {tp} does not divide {label} {width} of {arch.name}")
    if not arch.mla:
        kv_heads_per_device(arch, tp)


@lru_cache(maxsize=256)
def build_table(arch: Arch, phase: str, tp: int = 1, flash: bool = False, all_logits: bool = False) -> OpTable:
    """The ops of one prefill or decode step of ``arch`` on one of ``tp`` devices."""
    check_tp(arch, tp)
    r = _Layer(phase, arch, tp)
    _embedding(r)
    r.norm("layers.attn.norm", arch.layers, arch.hidden)
    if arch.mla:
        _mla_attention(r, flash)
    else:
        _attention(r, flash)
    _attention_output(r)
    _mlp_block(r)
    _lm_head(r, all_logits)
    return r.table()


class _Layer(_Rows):
    """Rows of one step of ``arch`` on one of ``tp`` devices, with its recurring ops (norms, GEMMs, ...)."""

    def __init__(self, phase: str, arch: Arch, tp: int) -> None:
        super().__init__(phase)
        self.arch, self.tp = arch, tp
        self.heads = arch.heads // tp  # per device
        self.norm_flops = NORM_FLOPS[arch.norm] + NORM_AFFINE_FLOPS["scale_shift" if arch.norm_bias else "scale"]
        self.norm_weights = 2 if arch.norm_bias else 1

    def norm(self, path: str, count: float, width: float) -> None:
        self.add(path, "norm", VEC, count, flops={TOK: self.norm_flops * width}, wu={ONE: self.norm_weights * width},
                 ar={TOK: width}, aw={TOK: width})

    def gemm(self, path: str, count: float, k: float, n_out: float, *, bias: bool = False, quantized: bool = True,
             tokens: int = TOK) -> None:
        wq = {ONE: k * n_out} if quantized else {}
        wu = {} if quantized else {ONE: k * n_out}
        if bias:  # biases stay unquantised
            wu[ONE] = wu.get(ONE, 0.0) + n_out
        self.add(path, "matmul", GEMM, count, flops={tokens: gemm_flops(1, k, n_out)}, wq=wq, wu=wu,
                 ar={tokens: k}, aw={tokens: n_out})

    def elementwise(self, path: str, count: float, op: str, reads: float, width: float, term: int = TOK) -> None:
        """``width`` outputs per ``term`` of ``op`` (a key of ``ELEMENTWISE_FLOPS``) reading ``reads`` inputs each."""
        self.add(path, "elementwise", VEC, count, flops={term: ELEMENTWISE_FLOPS[op] * width},
                 ar={term: reads * width}, aw={term: width})

    def all_reduce(self, path: str, count: float, width: float) -> None:
        t = self.tp
        if t > 1:
            ring = 2 * (t - 1) / t  # ring all-reduce: bytes each device sends (and receives) per message byte
            # reduce-scatter: each device adds the (t-1) incoming shards of its 1/t of the message
            self.add(path, "collective", LINK, count, flops={TOK: ELEMENTWISE_FLOPS["add"] * (t - 1) / t * width},
                     ar={TOK: ring * width})


def _embedding(r: _Layer) -> None:
    """Token embedding (vocab-parallel: each device gathers the rows it owns, 1/tp of them on average)."""
    arch, d = r.arch, r.arch.hidden
    r.add("embed.tokens", "embedding", VEC, 1, wu={TOK: d / r.tp}, xr={TOK: INDEX_BYTES}, aw={TOK: d})
    r.all_reduce("embed.all_reduce", 1, d)
    if arch.positions == "learned":
        r.add("embed.positions", "embedding", VEC, 1, wu={TOK: d}, xr={TOK: INDEX_BYTES}, aw={TOK: d})
        r.elementwise("embed.add", 1, "add", 2, d)
    if arch.embed_scale:
        r.elementwise("embed.scale", 1, "mul", 1, d)


def _attention(r: _Layer, flash: bool) -> None:
    """Q, K, V projections, RoPE, the KV-cache write and attention (full layers, then sliding-window ones)."""
    arch, d, L, h = r.arch, r.arch.hidden, r.arch.layers, r.heads
    dh, dv = arch.head_dim, arch.v_head_dim
    kv = kv_heads_per_device(arch, r.tp)
    r.gemm("layers.attn.q_proj", L, d, h * dh, bias=arch.qkv_bias)
    r.gemm("layers.attn.k_proj", L, d, kv * dh, bias=arch.qkv_bias)
    r.gemm("layers.attn.v_proj", L, d, kv * dv, bias=arch.qkv_bias)
    if arch.positions == "rope":
        r.elementwise("layers.attn.rope", L, "rope", 1, (h + kv) * dh)
    r.add("layers.attn.kv_cache_write", "memory", VEC, L, ar={TOK: kv * (dh + dv)}, kw={TOK: kv * (dh + dv)})
    full = L - arch.window_layers
    _attention_core(r, full, "", h, dh, dv, flash, KEY, PAIR, k_read=("kr", kv * dh), v_read=("kr", kv * dv))
    _attention_core(r, arch.window_layers, "sliding.", h, dh, dv, flash, KEYW, PAIRW,
                    k_read=("kr", kv * dh), v_read=("kr", kv * dv))


def _mla_attention(r: _Layer, flash: bool) -> None:
    """Multi-head latent attention: naive (decompressed K, V) in prefill, absorbed over the latent cache in decode."""
    arch, d, L, h = r.arch, r.arch.hidden, r.arch.layers, r.heads
    dv = arch.v_head_dim
    C, R, N = arch.kv_lora_rank, arch.qk_rope_head_dim, arch.qk_nope_head_dim
    if arch.q_lora_rank:
        r.gemm("layers.attn.q_a_proj", L, d, arch.q_lora_rank)  # replicated
        r.norm("layers.attn.q_a_norm", L, arch.q_lora_rank)
        r.gemm("layers.attn.q_b_proj", L, arch.q_lora_rank, h * (N + R))
    else:
        r.gemm("layers.attn.q_proj", L, d, h * (N + R))
    r.gemm("layers.attn.kv_a_proj", L, d, C + R)  # replicated
    r.norm("layers.attn.kv_a_norm", L, C)
    r.elementwise("layers.attn.rope", L, "rope", 1, (h + 1) * R)
    r.add("layers.attn.kv_cache_write", "memory", VEC, L, ar={TOK: C + R}, kw={TOK: C + R})
    if r.phase == "prefill":
        # naive MLA: decompress every key's latent into per-head K and V, then ordinary attention
        r.add("layers.attn.kv_b_proj", "matmul", GEMM, L, flops={KEY: gemm_flops(1, C, h * (N + dv))},
              wq={ONE: C * h * (N + dv)}, kr={KEY: C}, aw={KEY: h * (N + dv)})
        _attention_core(r, L, "", h, N + R, dv, flash, KEY, PAIR,
                        k_read=("ar", h * (N + R)), v_read=("ar", h * dv))
    else:
        # absorbed MLA: W_uk folds into the query, W_uv into the output; attention runs over the latent cache
        # per token, h products (1 x N) @ (N x C), one per head: as many FLOPs as one (h x N) @ (N x C)
        r.add("layers.attn.q_absorb", "matmul", GEMM, L, flops={TOK: gemm_flops(h, N, C)}, wq={ONE: h * N * C},
              ar={TOK: h * N}, aw={TOK: h * C})
        _attention_core(r, L, "", h, C + R, C, flash, KEY, PAIR, k_read=("kr", C + R), v_read=("kr", C),
                        shared_kv=True)
        r.add("layers.attn.v_absorb", "matmul", GEMM, L, flops={TOK: gemm_flops(h, C, dv)}, wq={ONE: h * C * dv},
              ar={TOK: h * C}, aw={TOK: h * dv})


def _attention_output(r: _Layer) -> None:
    arch, d, L = r.arch, r.arch.hidden, r.arch.layers
    r.gemm("layers.attn.o_proj", L, r.heads * arch.v_head_dim, d, bias=arch.o_bias)
    r.all_reduce("layers.attn.all_reduce", L, d)
    if arch.norms_per_layer == 4:
        r.norm("layers.attn.post_norm", L, d)
    r.elementwise("layers.attn.residual", L, "add", 2, d)


def _mlp_block(r: _Layer) -> None:
    """The MLP: dense layers, then MoE layers (router, routed experts, shared experts)."""
    arch, d, L, t, act = r.arch, r.arch.hidden, r.arch.layers, r.tp, r.arch.activation
    r.norm("layers.mlp.norm", L, d)
    dense = L - arch.moe_layers
    _mlp(r, "layers.mlp.", dense, d, arch.intermediate / t, arch.gated, act, arch.mlp_bias)
    if arch.moe_layers:
        E, k, M = arch.experts, arch.top_k, arch.moe_layers
        fe = arch.moe_intermediate / t
        r.gemm("layers.moe.router", M, d, E, quantized=False)
        r.add("layers.moe.topk", "softmax", VEC, M, flops={TOK: SOFTMAX_FLOPS * E}, ar={TOK: E}, aw={TOK: 2 * k})
        # routed experts: n*k token-expert assignments, k rows per token; weights of the experts touched
        for proj in (("gate_proj", "up_proj") if arch.gated else ("up_proj",)):
            r.add(f"layers.moe.experts.{proj}", "matmul", GEMM, M, flops={TOK: gemm_flops(k, d, fe)},
                  wq={EXP: d * fe}, ar={TOK: k * d}, aw={TOK: k * fe})
        r.elementwise("layers.moe.experts.act", M, act, 1, k * fe)
        if arch.gated:
            r.elementwise("layers.moe.experts.mul", M, "mul", 2, k * fe)
        r.add("layers.moe.experts.down_proj", "matmul", GEMM, M, flops={TOK: gemm_flops(k, fe, d)},
              wq={EXP: fe * d}, ar={TOK: k * fe}, aw={TOK: k * d})
        shared = arch.shared_experts
        if shared:
            _mlp(r, "layers.moe.shared.", M, d, arch.moe_intermediate * shared / t, arch.gated, act, False)
        # weighted sum of the k expert outputs (k fused multiply-adds), plus the shared experts' output
        combine = k * ELEMENTWISE_FLOPS["fma"] + (ELEMENTWISE_FLOPS["add"] if shared else 0)
        r.add("layers.moe.combine", "elementwise", VEC, M, flops={TOK: combine * d},
              ar={TOK: (k + (1 if shared else 0)) * d}, aw={TOK: d})
    r.all_reduce("layers.mlp.all_reduce", L, d)
    if arch.norms_per_layer == 4:
        r.norm("layers.mlp.post_norm", L, d)
    r.elementwise("layers.mlp.residual", L, "add", 2, d)


def _lm_head(r: _Layer, all_logits: bool) -> None:
    """Final norm and lm_head (generation: the last token of each sequence; every token with ``all_logits``)."""
    d, V, t = r.arch.hidden, r.arch.vocab, r.tp
    r.norm("final_norm", 1, d)
    m = TOK if all_logits else SEQ
    r.gemm("lm_head", 1, d, V / t, quantized=False, tokens=m)
    if t > 1:
        r.add("lm_head.all_gather", "collective", LINK, 1, ar={m: (t - 1) / t * V})


def _attention_core(r: _Layer, count: float, tag: str, h: float, dk: float, dv: float, flash: bool,
                    keys: int, pairs: int, *, k_read: tuple[str, float], v_read: tuple[str, float],
                    shared_kv: bool = False) -> None:
    """QK^T, softmax, PV (unfused) or one fused op (FlashAttention-style: no score tensor in memory).

    ``k_read``/``v_read``: (quantity, elements per key) of the K and V tensors read.
    FLOPs count the visible pairs (causal); an unfused score tensor holds all b*s*S.
    """
    if count <= 0:
        return
    path = f"layers.attn.{tag}"
    kq, kn = k_read
    vq, vn = v_read

    def reads(*parts: tuple[str, int, float]) -> dict[str, dict[int, float]]:
        out: dict[str, dict[int, float]] = {}
        for quantity, term, value in parts:
            row = out.setdefault(quantity, {})
            row[term] = row.get(term, 0.0) + value
        return out

    if flash:
        # MLA's V is the same latent already read as K: read once
        v_part = () if shared_kv else ((vq, keys, vn),)
        r.add(path + "sdpa", "attention", ATTN, count, flops={pairs: attention_flops(1, h, dk, dv)}, aw={TOK: h * dv},
              **reads(("ar", TOK, h * dk), (kq, keys, kn), *v_part))
        r.add(path + "softmax", "softmax", VEC, count, flops={pairs: SOFTMAX_FLOPS * h})  # in registers: no bytes
        return
    r.add(path + "qk", "attention", ATTN, count, flops={pairs: attention_flops(1, h, dk, 0)}, aw={FULL: h},
          **reads(("ar", TOK, h * dk), (kq, keys, kn)))
    r.add(path + "softmax", "softmax", VEC, count, flops={pairs: SOFTMAX_FLOPS * h}, ar={FULL: h}, aw={FULL: h})
    r.add(path + "pv", "attention", ATTN, count, flops={pairs: attention_flops(1, h, 0, dv)}, aw={TOK: h * dv},
          **reads(("ar", FULL, h), (vq, keys, vn)))


def _mlp(r: _Layer, path: str, count: float, d: float, f: float, gated: bool, act: str, bias: bool) -> None:
    """A dense MLP of width ``f`` (per device): up (and gate) projection, activation ``act``, down projection."""
    if count <= 0:
        return
    for proj in (("gate_proj", "up_proj") if gated else ("up_proj",)):
        r.gemm(path + proj, count, d, f, bias=bias)
    r.elementwise(path + "act", count, act, 1, f)
    if gated:
        r.elementwise(path + "mul", count, "mul", 2, f)
    r.gemm(path + "down_proj", count, f, d, bias=bias)


# -- the basis: one row of term values per configuration ---------------------------
def _sum_min(lo: np.ndarray, hi: np.ndarray, w: float) -> np.ndarray:
    """sum_{x=lo..hi} min(x, w), vectorised (0 where hi < lo)."""
    m = np.clip(w, lo - 1, hi)
    return (m * (m + 1) - (lo - 1) * lo) / 2 + (hi - m) * w


def parse_moe_routing(value: Any) -> str:
    """'expected' / 'worst' / 'best' (case-insensitive); anything else is a one-line error."""
    if isinstance(value, str) and value.strip().lower() in MOE_ROUTINGS:
        return value.strip().lower()
    raise RooflineError(f"moe_routing: {value!r} is not one of {', '.join(MOE_ROUTINGS)}")


def experts_touched(experts: int, top_k: int, tokens: Any, routing: str = "expected") -> Any:
    """Distinct routed experts a step of ``tokens`` tokens reads, each token choosing ``top_k`` of ``experts``.

    * ``expected``: the mean under uniform, independent top-k routing.  Each token picks a
      given expert with probability k/E, so it stays unread with probability (1-k/E)^n:
      ``E * (1 - (1 - k/E)^n)``.  A router that favours some experts touches fewer.
    * ``worst``: ``min(E, n*k)``, every token on experts no other token uses (an upper bound).
    * ``best``: ``k``, every token on the same top-k (the only true lower bound).

    ``tokens`` may be an array (vectorised); 0 tokens touch 0 experts under every rule.

    >>> [round(float(experts_touched(8, 2, n)), 2) for n in (1, 2, 4, 64)]  # Mixtral
    [2.0, 3.5, 5.47, 8.0]
    >>> float(experts_touched(8, 2, 3, "worst")), float(experts_touched(8, 2, 3, "best"))
    (6.0, 2.0)
    """
    routing = parse_moe_routing(routing)
    n = np.asarray(tokens, dtype=float)
    E, k = float(experts), float(top_k)
    if not E:
        return np.zeros_like(n)
    if routing == "worst":
        return np.minimum(E, n * k)
    if routing == "best":
        return np.where(n > 0, k, 0.0)
    return E * (1.0 - (1.0 - k / E) ** n)


def basis(arch: Arch, batch: Any, new: Any, lo: Any, hi: Any | None = None,
          moe_routing: str = "expected") -> np.ndarray:
    """Term values, shape (configs, terms), for ``batch`` sequences each adding ``new`` tokens.

    Keys visible at the last new token run from ``lo`` to ``hi`` (a range of decode
    steps, averaged: a generate phase) or are just ``lo``.  The ``new`` tokens are
    the last ``new`` of the ``lo`` (prefill: new == lo).  The ``batch*new`` tokens
    touch :func:`experts_touched` experts under ``moe_routing``.
    """
    b = np.asarray(batch, dtype=float)
    s = np.asarray(new, dtype=float)
    S0 = np.asarray(lo, dtype=float)
    S1 = S0 if hi is None else np.asarray(hi, dtype=float)
    b, s, S0, S1 = np.broadcast_arrays(b, s, S0, S1)
    steps = S1 - S0 + 1
    S = (S0 + S1) / 2  # every term linear in S averages exactly at the midpoint
    n = b * s
    out = np.empty((*b.shape, len(TERMS)))
    out[..., ONE] = 1.0
    out[..., SEQ] = b
    out[..., TOK] = n
    out[..., KEY] = b * S
    out[..., PAIR] = b * aligned_causal_pairs(s, S)  # sum over the new queries of the keys at or before them
    out[..., FULL] = n * S
    out[..., EXP] = experts_touched(arch.experts, arch.top_k, n, moe_routing)
    w = arch.sliding_window or math.inf
    if arch.window_layers:
        keys_w = _sum_min(S0, S1, w) / steps  # mean over the steps of min(S, w)
        out[..., KEYW] = b * keys_w
        # pairs: sum over the new queries at positions S-s+1..S of min(pos, w); decode (s == 1): keys_w
        out[..., PAIRW] = b * np.where(s == 1, keys_w, _sum_min(S - s + 1, S, w))
    else:
        out[..., KEYW] = out[..., KEY]
        out[..., PAIRW] = out[..., PAIR]
    return out.reshape(-1, len(TERMS))


def evaluate(table: OpTable, B: np.ndarray, eb: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Per-op FLOPs, weight bytes, bytes read and written, shape (configs, ops); ``eb`` = bytes per element."""
    c = table.coef

    def mm(q: str) -> np.ndarray:
        return B @ c[q].T

    def col(x: Any) -> Any:
        x = np.asarray(x, dtype=float)
        return x.reshape(-1, 1) if x.ndim else x

    weight = mm("wq") * col(eb["wq"]) + mm("wu") * col(eb["wu"])
    read = weight + mm("ar") * col(eb["a"]) + mm("kr") * col(eb["kv"]) + mm("xr")
    written = mm("aw") * col(eb["a"]) + mm("kw") * col(eb["kv"])
    return {"flops": mm("flops"), "weight_bytes": weight, "bytes_read": read, "bytes_written": written}


# -- a fully specified run ---------------------------------------------------------
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
    flash: bool = False
    all_logits: bool = False
    moe_routing: str = "expected"

    @property
    def max_context(self) -> int:
        """KV-cache length the run needs to hold."""
        return {"prefill": self.prompt, "decode": self.context, "generate": self.prompt + self.gen}[self.phase]

    def replace(self, **changes: Any) -> LLMSpec:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {"arch": self.arch.to_dict(), "phase": self.phase, "batch": self.batch, "prompt": self.prompt,
                "context": self.context, "gen": self.gen, "precisions": self.precisions.to_dict(), "tp": self.tp,
                "flash": self.flash, "all_logits": self.all_logits, "moe_routing": self.moe_routing}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LLMSpec:
        p = d["precisions"]
        return cls(Arch.from_dict(d["arch"]), d["phase"], int(d["batch"]), int(d["prompt"]), int(d["context"]),
                   int(d["gen"]), Precisions(p["weights"], p["activations"], p["kv_cache"], int(p["group_size"])),
                   int(d["tp"]), bool(d["flash"]), bool(d["all_logits"]),
                   # files written before the option existed used the worst case
                   parse_moe_routing(d.get("moe_routing", "worst")))


def _positive_int(value: Any, field: str) -> int:
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


def make_spec(model: str | Mapping[str, Any] | Arch, phase: str = "generate", batch: int = 1,
              prompt: int | None = None, context: int | None = None, gen: int | None = None,
              wbits: int | str = 16, abits: int | str = 16, kvbits: int | str = 16, tp: int = 1,
              flash: bool = False, group_size: int = 128, all_logits: bool = False,
              moe_routing: str = "expected") -> LLMSpec:
    """Validate every knob (one-line errors) and resolve the model."""
    moe_routing = parse_moe_routing(moe_routing)
    if phase not in PHASES:
        raise RooflineError(f"phase {phase!r} is not one of {', '.join(PHASES)}")
    arch = load_arch(model)
    prompt = _positive_int(1024 if prompt is None else prompt, "prompt")
    context = _positive_int(prompt if context is None else context, "context")
    gen = _positive_int(256 if gen is None else gen, "gen")
    batch = _positive_int(batch, "batch")
    group_size = _positive_int(group_size, "group_size")
    precisions = Precisions(parse_precision(wbits, "wbits"), parse_precision(abits, "abits"),
                            parse_precision(kvbits, "kvbits"), group_size)
    if isinstance(tp, bool) or not isinstance(tp, (int, np.integer)) or tp < 1:
        raise RooflineError(f"tp must be an integer >= 1, got {tp!r}")
    check_tp(arch, int(tp))
    return LLMSpec(arch, phase, batch, prompt, context, gen, precisions, int(tp), bool(flash), bool(all_logits),
                   moe_routing)


# -- sizes -------------------------------------------------------------------------
@lru_cache(maxsize=64)
def param_counts(arch: Arch) -> tuple[float, float]:
    """(total, active) parameters, read off the op table's weight coefficients (tp = 1).

    Total counts every expert; active counts ``top_k`` routed experts per MoE layer.
    The embedding table is added whole (the ops read only the rows they gather)
    unless tied to lm_head, and a learned position table whole.
    """
    table = build_table(arch, "prefill")
    w = (table.coef["wq"] + table.coef["wu"]) * table.counts[:, None]
    base = float(w[:, ONE].sum())
    routed = float(w[:, EXP].sum())
    extra = (0 if arch.tie_embeddings else arch.vocab * arch.hidden) + arch.position_table * arch.hidden
    return base + routed * arch.experts + extra, base + routed * arch.top_k + extra


def kv_elements_per_token(arch: Arch, tp: int = 1) -> float:
    """KV-cache elements one token occupies across all layers on one device (full-attention layers)."""
    if arch.mla:
        return arch.layers * (arch.kv_lora_rank + arch.qk_rope_head_dim)  # latent, replicated over tp
    return arch.layers * kv_heads_per_device(arch, tp) * (arch.head_dim + arch.v_head_dim)


def kv_cache_bytes(spec: LLMSpec, batch: Any = None, context: Any = None) -> Any:
    """KV-cache bytes per device for ``batch`` sequences of ``context`` tokens (sliding-window layers cap at the window)."""
    a = spec.arch
    b = np.asarray(spec.batch if batch is None else batch, dtype=float)
    S = np.asarray(spec.max_context if context is None else context, dtype=float)
    per_layer = kv_elements_per_token(a, spec.tp) / a.layers
    tokens = (a.layers - a.window_layers) * S + a.window_layers * np.minimum(S, a.sliding_window or math.inf)
    return b * tokens * per_layer * spec.precisions.bytes()["kv"]


def weight_bytes_resident(spec: LLMSpec) -> float:
    """Weight bytes each device holds: every expert, the embedding shard and position table."""
    return _weights_resident(spec.arch, spec.tp, spec.precisions)


@lru_cache(maxsize=256)
def _weights_resident(a: Arch, tp: int, precisions: Precisions) -> float:
    eb = precisions.bytes()
    table = build_table(a, "prefill", tp)
    wq = table.coef["wq"] * table.counts[:, None]
    wu = table.coef["wu"] * table.counts[:, None]
    total = ((wq[:, ONE].sum() + wq[:, EXP].sum() * a.experts) * eb["wq"]
             + (wu[:, ONE].sum() + wu[:, EXP].sum() * a.experts) * eb["wu"])
    embed = (0 if a.tie_embeddings else a.vocab * a.hidden / tp) + a.position_table * a.hidden
    return float(total + embed * eb["wu"])


def activation_bytes(spec: LLMSpec, batch: Any = None) -> Any:
    """Transient activations per device: the largest one-op working set (its activation inputs and
    outputs) of the phase, plus the residual stream (batch x tokens x hidden).  Proportional to the
    batch (every activation term is), so computed once per sequence."""
    b = np.asarray(spec.batch if batch is None else batch, dtype=float)
    out = b * _activation_per_sequence(spec.replace(batch=1))
    return out if out.ndim else float(out)


@lru_cache(maxsize=256)
def _activation_per_sequence(spec: LLMSpec) -> float:
    eb = spec.precisions.bytes()
    steps = {"prefill": [("prefill", spec.prompt, spec.prompt)], "decode": [("decode", 1, spec.context)],
             "generate": [("prefill", spec.prompt, spec.prompt), ("decode", 1, spec.prompt + spec.gen)]}[spec.phase]
    out = 0.0
    for phase, s, S in steps:
        table = build_table(spec.arch, phase, spec.tp, spec.flash, spec.all_logits)
        B = basis(spec.arch, 1, s, S, moe_routing=spec.moe_routing)
        act = float((B @ (table.coef["ar"] + table.coef["aw"]).T).max()) * eb["a"]
        out = max(out, act + float(B[0, TOK]) * spec.arch.hidden * eb["a"])
    return out


# -- workload ----------------------------------------------------------------------
ASSUMPTIONS = (
    "per device: tp splits heads, MLP/expert width and vocabulary; norms, residual adds, router, MLA "
    "down-projections and the MLA latent cache are replicated",
    "tp all-reduce (ring): 2*(tp-1)/tp x (tokens x hidden x activation bytes) per device over the interconnect "
    "(per direction); logits all-gather: (tp-1)/tp x tokens x vocab x activation bytes",
    "prefill FLOPs count the causal triangle; decode reads the whole KV cache (context tokens, the new one included)",
    "generate = prefill + gen decode steps at contexts prompt+1 .. prompt+gen, evaluated at the mean over the "
    "steps with count x gen (FLOPs and bytes exact)",
    "lm_head on the last token of each sequence (all tokens with all_logits); embedding reads only the rows gathered",
    "int4 carries one fp16 scale per group; int8/fp8 scales ignored; embedding, lm_head, router, norms and biases "
    "stay 16-bit under weight quantisation",
    "norms, softmax, activations and adds compute in fp32 on the vector unit; scale and mask fold into softmax; "
    "RoPE 3 FLOPs per q/k element",
    "MLA: naive (decompressed KV) prefill, absorbed decode over the latent cache; sliding-window layers attend to "
    "and cache at most the window; logit soft-capping not counted",
)


#: What a step of n tokens reads of E routed experts, top-k each, per ``moe_routing``.
MOE_ASSUMPTIONS = {
    "expected": "MoE (moe_routing expected): a step of n tokens reads the weights of the experts it touches, "
                "E x (1 - (1 - top_k/E)^n) of the E, the expected number under uniform independent top-k routing "
                "(worst: min(E, n x top_k); best: top_k)",
    "worst": "MoE (moe_routing worst): a step of n tokens reads the weights of min(E, n x top_k) of the E experts, "
             "every token on experts no other token uses (an upper bound)",
    "best": "MoE (moe_routing best): a step reads the weights of top_k experts, every token on the same ones "
            "(a lower bound)",
}


def assumptions(spec: LLMSpec) -> list[str]:
    out = list(ASSUMPTIONS)
    out.insert(5, MOE_ASSUMPTIONS[spec.moe_routing])  # where the fixed MoE line stood
    return out


def _steps(spec: LLMSpec) -> list[tuple[OpTable, np.ndarray, float]]:
    """(table, basis row, multiplier) for each phase step of the run."""
    a, r = spec.arch, spec.moe_routing
    out = []
    if spec.phase in ("prefill", "generate"):
        table = build_table(a, "prefill", spec.tp, spec.flash, spec.all_logits)
        out.append((table, basis(a, spec.batch, spec.prompt, spec.prompt, moe_routing=r), 1.0))
    if spec.phase == "decode":
        table = build_table(a, "decode", spec.tp, spec.flash, spec.all_logits)
        out.append((table, basis(a, spec.batch, 1, spec.context, moe_routing=r), 1.0))
    if spec.phase == "generate":
        table = build_table(a, "decode", spec.tp, spec.flash, spec.all_logits)
        out.append((table, basis(a, spec.batch, 1, spec.prompt + 1, spec.prompt + spec.gen, moe_routing=r),
                    float(spec.gen)))
    return out


def role_columns(roles: list[int], precisions: Precisions) -> dict[str, list[str]]:
    """The precision, unit and level columns of ops with these roles: GEMM and attention on the matrix unit at
    their compute precisions, the rest fp32 on the vector unit, link ops over the interconnect."""
    prec = {GEMM: precisions.gemm, ATTN: precisions.attention, VEC: "fp32", LINK: "fp32"}
    return {"precision": [prec[x] for x in roles], "unit": ["matrix" if x in (GEMM, ATTN) else "vector" for x in roles],
            "level": ["interconnect" if x == LINK else "" for x in roles]}


def build_workload(spec: LLMSpec) -> Workload:
    """The per-op :class:`Workload` of ``spec`` (per device): the run in ``llm``, per-phase totals in ``phases``."""
    eb = spec.precisions.bytes()
    ops = WorkloadBuilder()
    phases: dict[str, PhaseTotals] = {}
    for table, B, mult in _steps(spec):
        v = evaluate(table, B, eb)
        counts = table.counts * mult
        roles = table.roles.tolist()
        ops.extend(name=table.names, group=table.names, kind=table.kinds, module_type=table.module_types,
                   **role_columns(roles, spec.precisions), flops=v["flops"][0].tolist(), bytes_read=v["bytes_read"][0].tolist(),
                   bytes_written=v["bytes_written"][0].tolist(), weight_bytes=v["weight_bytes"][0].tolist(),
                   count=counts.tolist())
        phases[table.phase] = PhaseTotals(
            flops=float(v["flops"][0] @ counts), bytes=float((v["bytes_read"][0] + v["bytes_written"][0]) @ counts),
            weight_bytes=float(v["weight_bytes"][0] @ counts), steps=mult, tokens=float(B[0, TOK] * mult))
    title = f"{spec.arch.name} {spec.phase} batch {spec.batch}" + (f" tp {spec.tp}" if spec.tp > 1 else "")
    return ops.build(
        title=title, source=f"roofline.llm ({spec.arch.source})", info=run_info(spec), llm=spec, phases=phases,
        bytes_model=("fused attention (FlashAttention-style, no score tensor in memory); other ops unfused"
                     if spec.flash else "unfused: compulsory traffic per op (every input read once, every output "
                     "written once), attention scores written and read back"),
        assumptions=assumptions(spec), warnings=list(spec.arch.warnings))


def memory_bytes(spec: LLMSpec | None) -> float:
    """What the run keeps in device memory (per device): resident weights + KV cache + activations; 0 for None."""
    if spec is None:
        return 0.0
    return weight_bytes_resident(spec) + float(kv_cache_bytes(spec)) + float(activation_bytes(spec))


def run_info(spec: LLMSpec) -> dict[str, Any]:
    """Sizes of the run, for printing: parameters, resident weights, KV cache and activations (per device)."""
    total, active = param_counts(spec.arch)
    weights = weight_bytes_resident(spec)
    kv = float(kv_cache_bytes(spec))
    act = float(activation_bytes(spec))
    return {"model": spec.arch.name, "model_source": spec.arch.source, "phase": spec.phase, "batch": spec.batch,
            "prompt": spec.prompt, "context": spec.context, "gen": spec.gen, "tp": spec.tp, "flash": spec.flash,
            "all_logits": spec.all_logits, "moe_routing": spec.moe_routing, "precisions": spec.precisions.to_dict(),
            "params": total, "active_params": active, "weight_bytes": weights, "kv_cache_bytes": kv,
            "activation_bytes": act, "memory_bytes": memory_bytes(spec)}
