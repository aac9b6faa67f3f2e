"""The analytic transformer model's op table: every op of one step, symbolically, as coefficient rows.

Every op's FLOPs and traffic are linear in a few *terms* of the run's shape
(:data:`TERMS`): a constant (weights), the sequences ``b``, the tokens ``n = b*s``
processed in the step, the keys read ``b*S``, the visible (causal) query-key
pairs, the score-tensor size ``b*s*S``, the experts touched (:func:`roofline.llm.basis.experts_touched`:
by default the expected number under uniform top-k routing, ``E*(1-(1-k/E)^n)``) and
the sliding-window versions of keys and pairs.  An :class:`OpTable` holds, per
op, one coefficient row per quantity (FLOPs; weight elements, quantised and
not; activation, KV-cache elements read and written; raw bytes).  One
configuration is one row of the basis matrix (:mod:`roofline.llm.basis`); a sweep of 10,000
configurations is one matrix product, and a :class:`~roofline.work.workload.Workload`
(:mod:`roofline.llm.model`) is the same table evaluated at a single point, so the two can never disagree.

Everything is per device: with tensor parallelism ``tp`` the heads, the MLP
width, the experts' width and the vocabulary are split ``tp`` ways; norms,
residual adds, the router, the MLA down-projections and the MLA latent cache
are replicated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError
from roofline.engine.grouped_gemm import GROUPED_GEMM
from roofline.llm.config import Arch
from roofline.work.costs import (
    ELEMENTWISE_FLOPS,
    NORM_AFFINE_FLOPS,
    NORM_FLOPS,
    SOFTMAX_FLOPS,
    attention_flops,
    gemm_flops,
)

#: The basis columns: values of one step's shape that every coefficient multiplies
#: (``b`` sequences each adding ``s`` new tokens that see ``S`` keys; see :func:`roofline.llm.basis.basis`).
#:
#: * ``ONE`` (one): 1, per step whatever its size: weights read once.
#: * ``SEQ`` (seqs): ``b``, per sequence: lm_head on each sequence's last token.
#: * ``TOK`` (tokens): ``n = b*s``, per token processed: projections, norms, activations, the cache write.
#: * ``KEY`` (keys): ``b*S``, per key read: the K and V cache (MLA prefill: the latents decompressed).
#: * ``PAIR`` (pairs): ``b * aligned_causal_pairs(s, S)``, the visible (causal) query-key pairs: attention FLOPs.
#: * ``FULL`` (scores): ``b*s*S``, every query-key pair, masked or not: the unfused score tensor's size.
#: * ``EXP`` (experts): the routed experts the step's tokens touch (:func:`roofline.llm.basis.experts_touched`): their weights.
#: * ``KEYW`` / ``PAIRW`` (keys_window, pairs_window): ``KEY`` and ``PAIR`` for sliding-window layers,
#:   each query seeing at most the window's keys (equal to ``KEY``/``PAIR`` for a model without them).
TERMS = ("one", "seqs", "tokens", "keys", "pairs", "scores", "experts", "keys_window", "pairs_window")
ONE, SEQ, TOK, KEY, PAIR, FULL, EXP, KEYW, PAIRW = range(len(TERMS))
#: Which roof an op's FLOPs run on: the GEMM precision's matrix roof, the attention
#: precision's matrix roof, the fp32 vector roof, or the vector roof over the link.
ROLES = ("gemm", "attn", "vector", "link")
GEMM, ATTN, VEC, LINK = range(len(ROLES))
#: What an op's coefficient rows count, per basis term (:func:`roofline.llm.basis.evaluate` turns elements into bytes):
#:
#: * ``flops``: FLOPs (every coefficient from :mod:`roofline.work.costs`: ``gemm_flops``, ``attention_flops``,
#:   the per-element ``ELEMENTWISE_FLOPS``/``NORM_FLOPS``/``SOFTMAX_FLOPS``).
#: * ``wq``: weight elements read at the weights' precision (quantised: projections, MLP and expert GEMMs).
#: * ``wu``: weight elements read kept unquantised (16-bit under weight quantisation): the embedding rows
#:   gathered, lm_head, the router, norm scales/shifts and biases.
#: * ``ar`` / ``aw``: activation elements read / written (at the activations' precision), including the
#:   attention score tensor when unfused, MLA prefill's decompressed K and V, and the elements each device
#:   sends over the link in a collective (all-reduce, logits all-gather).
#: * ``kr`` / ``kw``: KV-cache elements read / written (at the KV cache's precision; MLA: the latent cache).
#: * ``xr``: bytes read as they are, not elements: the int64 token ids the embeddings gather with.
#:
#: Which activation precision an op's ``ar`` and ``aw`` elements take (:attr:`OpTable.stream`): a quantised GEMM
#: (weights in ``wq``) reads its input at the activations' precision (``abits``: FP8 under W8A8), and the op that
#: produces that input writes it there (the quantisation folded into the producer: the norm before the QKV and
#: gate/up projections, the attention before o_proj, the activation product before down_proj); every other
#: activation element (the residual stream, norm inputs, GEMM outputs, elementwise ops, attention's query, the
#: TP collectives, the unquantised lm_head's input) is at the *residual* precision
#: (:attr:`roofline.llm.spec.Precisions.residual`), which is the activations' own unless stated, so one
#: precision for every activation, as before.  TensorRT-LLM's FP8 recipe keeps a 16-bit residual stream: its
#: ``FP8Linear`` quantises the 16-bit input (``quantize(x, ..., 'fp8')`` when ``x.dtype != fp8``) and returns
#: the layer's dtype (NVIDIA/TensorRT-LLM tensorrt_llm/quantization/layers.py, FP8Linear.forward, at 2340c776).
QUANTITIES = ("flops", "wq", "wu", "ar", "aw", "kr", "kw", "xr")
INDEX_BYTES = 8  # token ids are int64
#: An op's GEMM dimensions, symbolically, one row ``(mode, term, k, n, batch)`` per op:
#:
#: * ``NO_DIMS``: none (norms, elementwise, collectives);
#: * ``GEMM_DIMS``: ``m`` = the value of basis ``term`` (tokens, or sequences for lm_head; keys for MLA's
#:   decompression), ``k``, ``n`` and ``batch`` as given;
#: * ``ATTN_DIMS``: ``batch`` = sequences x ``batch`` (heads), ``m`` = tokens / sequences (queries per sequence),
#:   ``n`` = basis ``term`` (keys) / sequences, ``k`` = the head dim;
#: * ``GROUPED_DIMS``: a grouped MoE expert GEMM, one group per routed expert the step touches (``batch`` = basis
#:   ``EXP``), ``m`` = the rows of the slowest group (:func:`roofline.llm.moe_load.tokens_per_expert`: tokens per
#:   expert, balanced or the expected maximum under ``--moe-load``), ``k`` and ``n`` as given (the row's ``batch``
#:   slot holds the top-k, the rows each token adds; :attr:`OpTable.experts` the routed experts).
NO_DIMS, GEMM_DIMS, ATTN_DIMS, GROUPED_DIMS = range(4)


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
    #: (ops, 5) GEMM dimensions, symbolically (:data:`DIMS`): mode, term, k, n, batch per op
    dims: np.ndarray | None = None
    #: (ops, 2) bool: whether the op's activation reads (``ar``) and writes (``aw``) are at the residual
    #: precision (True) or the activations' (False) (:data:`QUANTITIES`); None: all the activations'
    stream: np.ndarray | None = None
    #: the fusions applied to this table (:data:`FUSIONS` order): those asked for that the model and layout
    #: allow (reduce-norm needs tp > 1 and two norms a layer, gate-up a gated MLP, qkv separate Q, K, V)
    fusions: tuple[str, ...] = ()
    #: the routed experts of the model (0 without MoE): the groups of its grouped expert GEMMs (``GROUPED_DIMS``)
    experts: int = 0

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
        self.dims: list[tuple[float, float, float, float, float]] = []
        self.stream: list[tuple[bool, bool]] = []
        self.applied: set[str] = set()  # fusions an op of the table was built with
        self.experts = 0
        self.prefix = ""  # before every path: "mtp." for the MTP modules' ops

    def add(self, path: str, kind: str, role: int, count: float, *,
            dims: tuple[float, float, float, float, float] = (NO_DIMS, 0, 0, 0, 0),
            stream: tuple[bool, bool] = (True, True), module_type: str = "", **quantities: dict[int, float]) -> None:
        """One op; ``stream``: (reads, writes) of its activations at the residual precision (:data:`QUANTITIES`);
        ``module_type``: the path's last part unless given."""
        if count <= 0:
            return
        self.dims.append(dims)
        self.stream.append(stream)
        self.names.append(f"{self.phase}.{self.prefix}{path}")
        self.kinds.append(kind)
        self.mtypes.append(module_type or path.split(".")[-1])
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
                       {q: np.vstack(v) for q, v in self.coef.items()}, np.asarray(self.dims, dtype=float),
                       np.asarray(self.stream, dtype=bool).reshape(-1, 2),
                       tuple(f for f in FUSIONS if f in self.applied), self.experts)


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


#: How an attention kernel reads a KV head's cache that several query heads share (grouped-query and
#: multi-query attention; identical for multi-head attention, one query head per KV head):
#:
#: * ``shared``: once per sequence and layer for its whole group of query heads, the compulsory traffic
#:   (FlashAttention, FlashInfer, TensorRT-LLM's XQA kernel from v0.6.1 on);
#: * ``per-query-head``: once per query head, ``heads / kv_heads`` times the compulsory traffic: TensorRT-LLM
#:   v0.5's masked multi-head attention, "a single CUDA thread-block per head" (NVIDIA/TensorRT-LLM
#:   docs/source/gpt_attention.md, Generation Phase, commit 138f96d4), whose grid is (query head
#:   ``hi = blockIdx.x``, sequence ``blockIdx.y``) and whose block streams the cache of KV head
#:   ``hi_kv = hi / qhead_per_kv`` (cpp/tensorrt_llm/kernels/decoderMaskedMultiheadAttention/
#:   decoderMaskedMultiheadAttentionTemplate.h, commit 2a9abd95; XQA, which reads a group's KV once, came later).
#:   Every repeat is counted as memory traffic: no L2 reuse between the blocks of a group is credited (no cited
#:   hit rate for that kernel).  The variant applies to every attention op of the table (the serving step
#:   tables batch prefill and decode in one); context attention is compute-bound, where the extra reads barely count.
KV_READS = ("shared", "per-query-head")

#: Kernel fusions an engine runs, each merging rows of the op table (default: none, every op its own kernel):
#:
#: * ``qkv``: the Q, K and V projections as one GEMM of ``(heads + 2 kv_heads) x head_dim`` outputs, reading its
#:   input once (TensorRT-LLM's ``Attention.qkv``, one ColumnLinear: tensorrt_llm/layers/attention.py; vLLM's
#:   ``QKVParallelLinear``);
#: * ``gate-up``: a gated MLP's gate and up projections as one GEMM of twice the width, "followed by a separate
#:   SwiGLU kernel" that reads both halves and writes their product (TensorRT-LLM ``--use_fused_mlp``,
#:   "Horizontal Fusion in Gated-MLP", NVIDIA/TensorRT-LLM docs/source/performance/perf-best-practices.md at
#:   06255cb7; ``FusedGatedMLP.fc_gate``: ``fused_fc`` of ``2 x ffn_hidden_size`` then ``ACT2FN['swiglu']``,
#:   tensorrt_llm/layers/mlp.py at 04a2cacb);
#: * ``reduce-norm`` (tp > 1, two norms per layer): "fuse the ResidualAdd and LayerNorm kernels after AllReduce
#:   into a single kernel" (``--reduce_fusion enable`` with the custom all-reduce, "Reduce Norm Fusion", the same
#:   perf-best-practices.md): after each layer's attention all-reduce, the residual add and the MLP norm are one
#:   op, and after its MLP all-reduce, the residual add and the next layer's input norm (the last layer's stays
#:   unfused, as the first layer's input norm); the fused op reads the residual once and writes the new residual
#:   and the normed output (both 16-bit: no quantised output), the sum coming from the all-reduce without a
#:   round trip through memory.
FUSIONS = ("qkv", "gate-up", "reduce-norm")


def parse_fusions(value: object) -> tuple[str, ...]:
    """A tuple of :data:`FUSIONS` names, in that order, no repeats (from a comma-separated string or a sequence);
    a name not among them is a one-line error."""
    from roofline.core.arguments import option_for
    from roofline.core.fileio import shown

    flag = option_for("parse_fusions", "fusions")  # from the command line: --fusions 'x': ...
    said = f"{flag} {shown(value)}:" if flag else f"fusions {shown(value)}"
    items = value.split(",") if isinstance(value, str) else value
    if items is None:
        return ()
    if not isinstance(items, (list, tuple)) or not all(isinstance(x, str) for x in items):
        raise RooflineError(f"{said} is not a list of names among {', '.join(FUSIONS)}")
    if isinstance(value, str) and not value.strip():
        return ()  # '' clears: no fusion
    if any(not x.strip() for x in items):
        raise RooflineError(f"{said} holds an empty name (give '' for none)")
    names = {x.strip().lower() for x in items}
    bad = sorted(names - set(FUSIONS))
    if bad:
        raise RooflineError(f"{said + ' ' if flag else ''}fusion {shown(bad[0])} is not one of {', '.join(FUSIONS)}")
    return tuple(f for f in FUSIONS if f in names)


def parse_kv_reads(value: object) -> str:
    """``value`` if it names a :data:`KV_READS` variant; anything else is a one-line error."""
    if isinstance(value, str) and value.strip().lower() in KV_READS:
        return value.strip().lower()
    from roofline.core.fileio import shown

    raise RooflineError(f"kv_reads {shown(value)} is not one of {', '.join(KV_READS)}")


@lru_cache(maxsize=256)
def build_table(arch: Arch, phase: str, tp: int = 1, flash: bool = False, all_logits: bool = False,
                kv_reads: str = "shared", fusions: tuple[str, ...] = (), mtp: int = 0) -> OpTable:
    """The ops of one prefill or decode step of ``arch`` on one of ``tp`` devices (``kv_reads``: :data:`KV_READS`;
    ``fusions``: :data:`FUSIONS`; ``mtp``: multi-token prediction modules after the model, :func:`_mtp`)."""
    check_tp(arch, tp)
    r = _Layer(phase, arch, tp, parse_fusions(fusions))
    _embedding(r)
    _blocks(r, flash, kv_reads)
    _lm_head(r, all_logits)
    if mtp:
        _mtp(r, check_mtp(mtp), flash, kv_reads, all_logits)
    return r.table()


def _blocks(r: _Layer, flash: bool, kv_reads: str) -> None:
    """The transformer layers of ``r.arch``: attention, then the MLP (dense and MoE)."""
    # with reduce-norm, every layer's input norm after the first is fused into the previous layer's MLP residual
    r.norm("layers.attn.norm", 1 if r.reduce_norm else r.arch.layers, r.arch.hidden, to_gemm=True)
    if r.arch.mla:
        _mla_attention(r, flash)
    else:
        _attention(r, flash, parse_kv_reads(kv_reads))
    _attention_output(r)
    _mlp_block(r)


def check_mtp(value: object) -> int:
    """``value`` as a count of MTP modules (an integer >= 0, at most 16); anything else is a one-line error."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value <= 16:
        raise RooflineError(f"mtp must be an integer from 0 to 16 (multi-token prediction modules), got {value!r}")
    return int(value)


def _mtp(r: _Layer, n: int, flash: bool, kv_reads: str, all_logits: bool) -> None:
    """``n`` multi-token prediction modules (DeepSeek-V3's ``num_nextn_predict_layers``; DeepSeek-V3 Technical
    Report, arXiv:2412.19437, section 2.2): each embeds the next tokens with the shared embedding, RMS-normalises
    that embedding and the previous depth's hidden state, projects their concatenation from 2 x hidden to hidden
    (``eh_proj``, replicated over tp), runs one transformer block like the model's own (a MoE block in a MoE
    model), and predicts through the shared output head (its own norm, then the shared lm_head).  Their ops are
    named ``<phase>.mtp.*``, each counted ``n`` times; their weights are not in the model's parameter count."""
    import dataclasses

    arch, d = r.arch, r.arch.hidden
    block = dataclasses.replace(arch, layers=n, dense_layers=0, window_layers=0, nope_layers=0,
                                qk_norm_layers=n if arch.qk_norm_layers else 0)
    saved = (r.arch, r.reduce_norm)
    r.prefix = "mtp."
    r.add("embed.tokens", "embedding", VEC, n, wu={TOK: d / r.tp}, xr={TOK: INDEX_BYTES}, aw={TOK: d})
    r.all_reduce("embed.all_reduce", n, d)
    r.norm("enorm", n, d, to_gemm=True)
    r.norm("hnorm", n, d, to_gemm=True)
    r.gemm("eh_proj", n, 2 * d, d)
    r.arch, r.reduce_norm = block, False
    _blocks(r, flash, kv_reads)
    r.arch, r.reduce_norm = saved
    r.norm("head.norm", n, d)
    m = TOK if all_logits else SEQ
    r.gemm("head.lm_head", n, d, arch.vocab / r.tp, quantized=False, tokens=m)
    if r.tp > 1:
        r.add("head.all_gather", "collective", LINK, n, ar={m: (r.tp - 1) / r.tp * arch.vocab})
    r.prefix = ""


class _Layer(_Rows):
    """Rows of one step of ``arch`` on one of ``tp`` devices, with its recurring ops (norms, GEMMs, ...)."""

    def __init__(self, phase: str, arch: Arch, tp: int, fusions: tuple[str, ...] = ()) -> None:
        super().__init__(phase)
        self.arch, self.tp, self.fusions = arch, tp, fusions
        # the fused all-reduce + residual + norm kernel: only over a tp group, for pre-norm layers (two norms)
        self.reduce_norm = "reduce-norm" in fusions and tp > 1 and arch.norms_per_layer == 2
        self.heads = arch.heads // tp  # per device
        self.norm_flops = NORM_FLOPS[arch.norm] + NORM_AFFINE_FLOPS["scale_shift" if arch.norm_bias else "scale"]
        self.norm_weights = 2 if arch.norm_bias else 1

    def norm(self, path: str, count: float, width: float, *, to_gemm: bool = False) -> None:
        """A norm over the residual stream; ``to_gemm``: its output is a quantised GEMM's input."""
        self.add(path, "norm", VEC, count, flops={TOK: self.norm_flops * width}, wu={ONE: self.norm_weights * width},
                 ar={TOK: width}, aw={TOK: width}, stream=(True, not to_gemm))

    def gemm(self, path: str, count: float, k: float, n_out: float, *, bias: bool = False, quantized: bool = True,
             tokens: int = TOK) -> None:
        wq = {ONE: k * n_out} if quantized else {}
        wu = {} if quantized else {ONE: k * n_out}
        if bias:  # biases stay unquantised
            wu[ONE] = wu.get(ONE, 0.0) + n_out
        self.add(path, "matmul", GEMM, count, flops={tokens: gemm_flops(1, k, n_out)}, wq=wq, wu=wu,
                 ar={tokens: k}, aw={tokens: n_out}, dims=(GEMM_DIMS, tokens, k, n_out, 1),
                 stream=(not quantized, True))

    def elementwise(self, path: str, count: float, op: str, reads: float, width: float, term: int = TOK, *,
                    to_gemm: bool = False) -> None:
        """``width`` outputs per ``term`` of ``op`` (a key of ``ELEMENTWISE_FLOPS``) reading ``reads`` inputs each;
        ``to_gemm``: the output is a quantised GEMM's input."""
        self.add(path, "elementwise", VEC, count, flops={term: ELEMENTWISE_FLOPS[op] * width},
                 ar={term: reads * width}, aw={term: width}, stream=(True, not to_gemm))

    def residual_norm(self, path: str, count: float, width: float) -> None:
        """The residual add and the next norm as one kernel after an all-reduce (``reduce-norm``): reads the
        residual, writes the new residual and the normed output, both at the residual precision (the fused
        kernel has no quantised output; the quantisation of its output for the next GEMM is not counted)."""
        self.add(path, "norm", VEC, count, flops={TOK: (ELEMENTWISE_FLOPS["add"] + self.norm_flops) * width},
                 wu={ONE: self.norm_weights * width}, ar={TOK: width}, aw={TOK: 2 * width})

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


def _attention(r: _Layer, flash: bool, kv_reads: str = "shared") -> None:
    """Q, K, V projections, RoPE, the KV-cache write and attention (full layers, then sliding-window ones)."""
    arch, d, L, h = r.arch, r.arch.hidden, r.arch.layers, r.heads
    dh, dv = arch.head_dim, arch.v_head_dim
    kv = kv_heads_per_device(arch, r.tp)
    # KV heads whose cache the attention kernel reads per key: each KV head once, or once per query head
    reads = h if kv_reads == "per-query-head" else kv
    if "qkv" in r.fusions:
        r.gemm("layers.attn.qkv_proj", L, d, h * dh + kv * (dh + dv), bias=arch.qkv_bias)
        r.applied.add("qkv")
    else:
        r.gemm("layers.attn.q_proj", L, d, h * dh, bias=arch.qkv_bias)
        r.gemm("layers.attn.k_proj", L, d, kv * dh, bias=arch.qkv_bias)
        r.gemm("layers.attn.v_proj", L, d, kv * dv, bias=arch.qkv_bias)
    if arch.qk_norm_layers:  # Qwen3's RMSNorm of each head's q and k (scale dh each); Llama 4's, without scale
        per = NORM_FLOPS["rms"] + (NORM_AFFINE_FLOPS["scale"] if arch.qk_norm_weights else 0)
        r.add("layers.attn.qk_norm", "norm", VEC, arch.qk_norm_layers, flops={TOK: per * (h + kv) * dh},
              wu={ONE: 2 * dh} if arch.qk_norm_weights else {}, ar={TOK: (h + kv) * dh}, aw={TOK: (h + kv) * dh})
    if arch.positions == "rope":
        r.elementwise("layers.attn.rope", L - arch.nope_layers, "rope", 1, (h + kv) * dh)
    r.add("layers.attn.kv_cache_write", "memory", VEC, L, ar={TOK: kv * (dh + dv)}, kw={TOK: kv * (dh + dv)})
    full = L - arch.window_layers
    _attention_core(r, full, "", h, dh, dv, flash, KEY, PAIR, k_read=("kr", reads * dh), v_read=("kr", reads * dv))
    _attention_core(r, arch.window_layers, f"{arch.local_attention}.", h, dh, dv, flash, KEYW, PAIRW,
                    k_read=("kr", reads * dh), v_read=("kr", reads * dv))
    if arch.attention_sinks:  # gpt-oss: one learned logit per head, one more column in each query's softmax
        r.add("layers.attn.sinks", "softmax", VEC, L, flops={TOK: SOFTMAX_FLOPS * h}, wu={ONE: h})


def _mla_attention(r: _Layer, flash: bool) -> None:
    """Multi-head latent attention: naive (decompressed K, V) in prefill, absorbed over the latent cache in decode."""
    arch, d, L, h = r.arch, r.arch.hidden, r.arch.layers, r.heads
    dv = arch.v_head_dim
    C, R, N = arch.kv_lora_rank, arch.qk_rope_head_dim, arch.qk_nope_head_dim
    if arch.q_lora_rank:
        r.gemm("layers.attn.q_a_proj", L, d, arch.q_lora_rank)  # replicated
        r.norm("layers.attn.q_a_norm", L, arch.q_lora_rank, to_gemm=True)
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
              wq={ONE: C * h * (N + dv)}, kr={KEY: C}, aw={KEY: h * (N + dv)}, dims=(GEMM_DIMS, KEY, C, h * (N + dv), 1),
              stream=(False, True))
        _attention_core(r, L, "", h, N + R, dv, flash, KEY, PAIR,
                        k_read=("ar", h * (N + R)), v_read=("ar", h * dv))
    else:
        # absorbed MLA: W_uk folds into the query, W_uv into the output; attention runs over the latent cache
        # per token, h products (1 x N) @ (N x C), one per head: as many FLOPs as one (h x N) @ (N x C)
        r.add("layers.attn.q_absorb", "matmul", GEMM, L, flops={TOK: gemm_flops(h, N, C)}, wq={ONE: h * N * C},
              ar={TOK: h * N}, aw={TOK: h * C}, dims=(GEMM_DIMS, TOK, N, C, h), stream=(False, True))
        _attention_core(r, L, "", h, C + R, C, flash, KEY, PAIR, k_read=("kr", C + R), v_read=("kr", C),
                        shared_kv=True)
        r.add("layers.attn.v_absorb", "matmul", GEMM, L, flops={TOK: gemm_flops(h, C, dv)}, wq={ONE: h * C * dv},
              ar={TOK: h * C}, aw={TOK: h * dv}, dims=(GEMM_DIMS, TOK, C, dv, h), stream=(False, False))


def _attention_output(r: _Layer) -> None:
    arch, d, L = r.arch, r.arch.hidden, r.arch.layers
    r.gemm("layers.attn.o_proj", L, r.heads * arch.v_head_dim, d, bias=arch.o_bias)
    r.all_reduce("layers.attn.all_reduce", L, d)
    if r.reduce_norm:  # the residual add and the MLP's norm in one kernel (FUSIONS)
        r.residual_norm("layers.attn.residual_norm", L, d)
        r.applied.add("reduce-norm")
        return
    if arch.norms_per_layer == 4:
        r.norm("layers.attn.post_norm", L, d)
    r.elementwise("layers.attn.residual", L, "add", 2, d)


def _mlp_block(r: _Layer) -> None:
    """The MLP: dense layers, then MoE layers (router, routed experts, shared experts)."""
    arch, d, L, t, act = r.arch, r.arch.hidden, r.arch.layers, r.tp, r.arch.activation
    if not r.reduce_norm:  # else fused into the attention's residual add
        r.norm("layers.mlp.norm", L, d, to_gemm=True)
    dense = L - arch.moe_layers
    _mlp(r, "layers.mlp.", dense, d, arch.intermediate / t, arch.gated, act, arch.mlp_bias)
    if arch.moe_layers:
        _moe(r)
    r.all_reduce("layers.mlp.all_reduce", L, d)
    if r.reduce_norm:  # the residual add and the next layer's input norm in one kernel; the last layer's alone
        r.residual_norm("layers.mlp.residual_norm", L - 1, d)
        r.elementwise("layers.mlp.residual", 1, "add", 2, d)
        return
    if arch.norms_per_layer == 4:
        r.norm("layers.mlp.post_norm", L, d)
    r.elementwise("layers.mlp.residual", L, "add", 2, d)


def _moe(r: _Layer) -> None:
    """A MoE layer as its kernels (as Megatron-Core's dropless token dispatcher runs them): the router (gate GEMM,
    top-k), the permute (each token's row copied once per chosen expert into expert order, a gather by index, at
    the width the expert GEMMs read), the grouped expert GEMMs (one group per expert touched, ``GROUPED_DIMS``:
    rows per group from the tokens each expert receives), the shared experts, and the unpermute fused with the
    combine (the weighted sum of each token's k outputs back in token order), then the shared experts' add.

    FLOPs: n*k token-expert rows through each expert GEMM, whatever the load (``--moe-load`` sets the rows of
    the slowest group, :mod:`roofline.llm.moe_load`, not the total); weights of the experts touched (``EXP``)."""
    arch, d, t, act = r.arch, r.arch.hidden, r.tp, r.arch.activation
    E, k, M = arch.experts, arch.top_k, arch.moe_layers
    fe = arch.moe_intermediate / t
    r.experts = E
    r.gemm("layers.moe.router", M, d, E, quantized=False, bias=arch.expert_bias)
    r.add("layers.moe.topk", "softmax", VEC, M, flops={TOK: SOFTMAX_FLOPS * E}, ar={TOK: E}, aw={TOK: 2 * k})
    r.add("layers.moe.permute", "memory", VEC, M, ar={TOK: k * d}, aw={TOK: k * d}, xr={TOK: k * INDEX_BYTES},
          stream=(False, False))

    def grouped(proj: str, k_in: float, n_out: float) -> None:  # the experts' biases stay unquantised
        r.add(f"layers.moe.experts.{proj}", "matmul", GEMM, M, flops={TOK: gemm_flops(k, k_in, n_out)},
              wq={EXP: k_in * n_out}, wu={EXP: n_out} if arch.expert_bias else {}, ar={TOK: k * k_in},
              aw={TOK: k * n_out}, dims=(GROUPED_DIMS, TOK, k_in, n_out, k), stream=(False, True),
              module_type=GROUPED_GEMM)

    if arch.gated and "gate-up" in r.fusions:
        grouped("gate_up_proj", d, 2 * fe)
        r.add("layers.moe.experts.act_mul", "elementwise", VEC, M,
              flops={TOK: (ELEMENTWISE_FLOPS[act] + ELEMENTWISE_FLOPS["mul"]) * k * fe}, ar={TOK: 2 * k * fe},
              aw={TOK: k * fe}, stream=(True, False))
        r.applied.add("gate-up")
    else:
        for proj in (("gate_proj", "up_proj") if arch.gated else ("up_proj",)):
            grouped(proj, d, fe)
        r.elementwise("layers.moe.experts.act", M, act, 1, k * fe, to_gemm=not arch.gated)
        if arch.gated:
            r.elementwise("layers.moe.experts.mul", M, "mul", 2, k * fe, to_gemm=True)
    grouped("down_proj", fe, d)
    if arch.shared_experts:
        _mlp(r, "layers.moe.shared.", M, d, arch.moe_intermediate * arch.shared_experts / t, arch.gated, act, False)
    # unpermute + combine: read the k outputs in expert order, their indices and weights; write the weighted sum
    r.add("layers.moe.combine", "elementwise", VEC, M, flops={TOK: k * ELEMENTWISE_FLOPS["fma"] * d},
          ar={TOK: k * d + k}, aw={TOK: d}, xr={TOK: k * INDEX_BYTES})
    if arch.shared_experts:
        r.elementwise("layers.moe.shared_add", M, "add", 2, d)


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

    def reads(*parts: tuple[str, int, float]) -> dict[str, Any]:  # quantity -> {term: elements}
        out: dict[str, dict[int, float]] = {}
        for quantity, term, value in parts:
            row = out.setdefault(quantity, {})
            row[term] = row.get(term, 0.0) + value
        return out

    if flash:
        # MLA's V is the same latent already read as K: read once
        v_part = () if shared_kv else ((vq, keys, vn),)
        q = reads(("ar", TOK, h * dk), (kq, keys, kn), *v_part)
        r.add(path + "sdpa", "attention", ATTN, count, flops={pairs: attention_flops(1, h, dk, dv)}, aw={TOK: h * dv},
              dims=(ATTN_DIMS, keys, dk, 0, h), stream=(True, False), **q)
        r.add(path + "softmax", "softmax", VEC, count, flops={pairs: SOFTMAX_FLOPS * h})  # in registers: no bytes
        return
    r.add(path + "qk", "attention", ATTN, count, flops={pairs: attention_flops(1, h, dk, 0)}, aw={FULL: h},
          dims=(ATTN_DIMS, keys, dk, 0, h), **reads(("ar", TOK, h * dk), (kq, keys, kn)))
    r.add(path + "softmax", "softmax", VEC, count, flops={pairs: SOFTMAX_FLOPS * h}, ar={FULL: h}, aw={FULL: h})
    r.add(path + "pv", "attention", ATTN, count, flops={pairs: attention_flops(1, h, 0, dv)}, aw={TOK: h * dv},
          dims=(ATTN_DIMS, keys, dv, 0, h), stream=(True, False), **reads(("ar", FULL, h), (vq, keys, vn)))


def _mlp(r: _Layer, path: str, count: float, d: float, f: float, gated: bool, act: str, bias: bool) -> None:
    """A dense MLP of width ``f`` (per device): up (and gate) projection, activation ``act``, down projection."""
    if count <= 0:
        return
    if gated and "gate-up" in r.fusions:  # one GEMM of 2f outputs, then one kernel for act(gate) x up (FUSIONS)
        r.gemm(path + "gate_up_proj", count, d, 2 * f, bias=bias)
        r.add(path + "act_mul", "elementwise", VEC, count, flops={TOK: (ELEMENTWISE_FLOPS[act] + ELEMENTWISE_FLOPS["mul"]) * f},
              ar={TOK: 2 * f}, aw={TOK: f}, stream=(True, False))
        r.gemm(path + "down_proj", count, f, d, bias=bias)
        r.applied.add("gate-up")
        return
    for proj in (("gate_proj", "up_proj") if gated else ("up_proj",)):
        r.gemm(path + proj, count, d, f, bias=bias)
    r.elementwise(path + "act", count, act, 1, f, to_gemm=not gated)
    if gated:
        r.elementwise(path + "mul", count, "mul", 2, f, to_gemm=True)
    r.gemm(path + "down_proj", count, f, d, bias=bias)
