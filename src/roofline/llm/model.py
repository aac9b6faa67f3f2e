"""An LLM run's per-op :class:`~roofline.work.workload.Workload`: its op table evaluated at the run's point.

The table (:mod:`roofline.llm.table`) evaluated at the basis row of each phase step
(:mod:`roofline.llm.basis`) of the run (:class:`~roofline.llm.spec.LLMSpec`): one op per table row, per
device, with the run in the workload's ``llm`` field and per-phase totals in ``phases``.  The same
table at many rows is a sweep (:mod:`roofline.llm.metrics`), so the two can never disagree.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from roofline.llm.basis import basis, evaluate
from roofline.llm.expert_parallel import attention_tp, step_rows
from roofline.llm.moe_load import tokens_per_expert
from roofline.llm.sizes import activation_bytes, kv_cache_bytes, memory_bytes, param_counts, weight_bytes_resident
from roofline.llm.spec import LLMSpec, Precisions
from roofline.llm.table import (
    ATTN,
    ATTN_DIMS,
    EXP,
    GEMM,
    GEMM_DIMS,
    GROUPED_DIMS,
    LINK,
    SEQ,
    TOK,
    VEC,
    OpTable,
    build_table,
)
from roofline.work.workload import Workload, WorkloadBuilder
from roofline.work.workload_facts import PhaseTotals

ASSUMPTIONS = (
    "per device: tp splits heads, MLP/expert width and vocabulary; norms, residual adds, router, MLA "
    "down-projections and the MLA latent cache are replicated",
    "tp all-reduce (ring): 2*(tp-1)/tp x (tokens x hidden x activation bytes) per device over the interconnect "
    "(per direction); logits all-gather: (tp-1)/tp x tokens x vocab x activation bytes",
    "prefill FLOPs count the causal triangle; decode reads the whole KV cache (context tokens, the new one included)",
    "generate = prefill + gen decode steps at contexts prompt+1 .. prompt+gen, evaluated at the mean over the "
    "steps with count x gen (FLOPs and bytes exact)",
    "lm_head on the last token of each sequence (all tokens with all_logits); embedding reads only the rows gathered",
    "parameters: both embedding tables (input and lm_head; one when tied) count in the total and in the active "
    "count; DeepSeek MTP modules (num_nextn_predict_layers) are modelled only with --mtp and never counted in the "
    "parameters, a multimodal config's vision encoder neither modelled nor counted",
    "int4 carries one fp16 scale per group; int8/fp8 scales ignored; embedding, lm_head, router, norms and biases "
    "stay 16-bit under weight quantisation",
    "norms, softmax, activations and adds compute in fp32 on the vector unit; scale and mask fold into softmax; "
    "RoPE 3 FLOPs per q/k element",
    "MLA: naive (decompressed KV) prefill, absorbed decode over the latent cache; sliding-window layers attend to "
    "and cache at most the window; chunked local layers (Llama 4) attend to their own chunk's keys and cache "
    "min(context, chunk) tokens (the chunk in progress holds fewer); logit soft-capping not counted",
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


#: The rows of a grouped expert GEMM's slowest group, per ``moe_load`` (:mod:`roofline.llm.moe_load`).
MOE_LOAD_ASSUMPTIONS = {
    "balanced": "MoE (moe_load balanced): a MoE layer runs router, permute, grouped expert GEMMs, shared experts, "
                "unpermute+combine; each expert touched receives n x top_k / touched tokens",
    "expected-max": "MoE (moe_load expected-max): a MoE layer runs router, permute, grouped expert GEMMs, shared "
                    "experts, unpermute+combine; the grouped GEMMs' time is set by the expected most loaded expert "
                    "under uniform top-k routing (the same FLOPs)",
}


def assumptions(spec: LLMSpec) -> list[str]:
    out = list(ASSUMPTIONS)
    out.insert(5, MOE_ASSUMPTIONS[spec.moe_routing])  # where the fixed MoE line stood
    if spec.arch.experts:
        out.insert(6, MOE_LOAD_ASSUMPTIONS[spec.moe_load])
    if spec.mtp:
        out.append(f"{spec.mtp} multi-token prediction module(s) (--mtp): shared embedding and head, eh_proj "
                   "2 x hidden -> hidden, one transformer block each, run in every step as ops named mtp.*")
    return out


def _steps(spec: LLMSpec) -> list[tuple[OpTable, np.ndarray, float]]:
    """(table, basis row, multiplier) for each phase step of the run."""
    a, r = spec.arch, spec.moe_routing
    out = []
    if spec.phase in ("prefill", "generate"):
        table = build_table(a, "prefill", attention_tp(spec.tp, spec.layout), spec.flash, spec.all_logits,
                            spec.kv_reads, spec.fusions, spec.mtp)
        out.append((table, step_rows(a, basis(a, spec.batch, spec.prompt, spec.prompt, moe_routing=r), r, spec.layout), 1.0))
    if spec.phase == "decode":
        table = build_table(a, "decode", attention_tp(spec.tp, spec.layout), spec.flash, spec.all_logits,
                            spec.kv_reads, spec.fusions, spec.mtp)
        out.append((table, step_rows(a, basis(a, spec.batch, 1, spec.context, moe_routing=r), r, spec.layout), 1.0))
    if spec.phase == "generate":
        table = build_table(a, "decode", attention_tp(spec.tp, spec.layout), spec.flash, spec.all_logits,
                            spec.kv_reads, spec.fusions, spec.mtp)
        out.append((table, step_rows(a, basis(a, spec.batch, 1, spec.prompt + 1, spec.prompt + spec.gen, moe_routing=r), r, spec.layout),
                    float(spec.gen)))
    return out


def role_columns(roles: list[int], precisions: Precisions) -> dict[str, list[str]]:
    """The precision, unit and level columns of ops with these roles: GEMM and attention on the matrix unit at
    their compute precisions, the rest fp32 on the vector unit, link ops over the interconnect."""
    prec = {GEMM: precisions.gemm, ATTN: precisions.attention, VEC: "fp32", LINK: "fp32"}
    return {"precision": [prec[x] for x in roles], "unit": ["matrix" if x in (GEMM, ATTN) else "vector" for x in roles],
            "level": ["interconnect" if x == LINK else "" for x in roles]}


def gemm_dims(table: OpTable, row: np.ndarray, moe_load: str = "balanced") -> dict[str, list[float]]:
    """The ``m, n, k, batch`` columns of the table's ops at one basis row (NaN where an op has none).

    A generate phase's decode averages the keys over its steps: the mean is rounded to a whole key count.  A
    grouped expert GEMM's ``m`` is its slowest group's rows under ``moe_load`` (:mod:`roofline.llm.moe_load`),
    rounded up to a whole row; its ``batch`` the experts touched."""
    return {c: v[0].tolist() for c, v in gemm_dims_rows(table, np.atleast_2d(row), moe_load).items()}


def gemm_dims_rows(table: OpTable, rows: np.ndarray, moe_load: str = "balanced") -> dict[str, np.ndarray]:
    """:func:`gemm_dims` at every basis row of ``rows`` at once: arrays of shape (rows, ops)."""
    shape = (len(rows), len(table))
    if table.dims is None:
        return {c: np.full(shape, np.nan) for c in ("m", "n", "k", "batch")}
    mode, term, k, n, batch = table.dims.T
    term_value = rows[:, np.clip(term.astype(np.int64), 0, rows.shape[1] - 1)]
    seqs = np.maximum(rows[:, SEQ], 1.0)[:, None]
    gemm, attn, grouped = mode == GEMM_DIMS, mode == ATTN_DIMS, mode == GROUPED_DIMS
    m_col = np.where(gemm, term_value, np.where(attn, rows[:, TOK][:, None] / seqs, np.nan))
    if grouped.any():  # rows of the slowest group, whole: top-k (the batch slot) assignments per token
        top_k = int(batch[grouped][0])
        per = np.ceil(np.round(tokens_per_expert(rows[:, TOK], top_k, table.experts, rows[:, EXP], moe_load), 6))
        m_col = np.where(grouped, per[:, None], m_col)
    n_col = np.where(gemm | grouped, n, np.where(attn, term_value / seqs, np.nan))
    k_col = np.broadcast_to(np.where(gemm | attn | grouped, k, np.nan), shape)
    b_col = np.where(gemm, batch, np.where(attn, batch * seqs, np.where(grouped, rows[:, EXP][:, None], np.nan)))
    return {c: np.round(v) for c, v in (("m", m_col), ("n", n_col), ("k", k_col), ("batch", b_col))}


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
                   count=counts.tolist(), **gemm_dims(table, B[0], spec.moe_load))
        phases[table.phase] = PhaseTotals(
            flops=float(v["flops"][0] @ counts), bytes=float((v["bytes_read"][0] + v["bytes_written"][0]) @ counts),
            weight_bytes=float(v["weight_bytes"][0] @ counts), steps=mult, tokens=float(B[0, TOK] * mult))
    title = f"{spec.arch.name} {spec.phase} batch {spec.batch}" + (f" tp {spec.tp}" if spec.tp > 1 else "")
    return ops.build(
        title=title, source=f"roofline.llm ({spec.arch.source})", info=run_info(spec), llm=spec, phases=phases,
        bytes_model=bytes_model(spec, applied_fusions(tab for tab, _, _ in _steps(spec))),
        assumptions=assumptions(spec), warnings=list(spec.arch.warnings))


#: what each applied fusion merges, for the bytes-model label (:data:`roofline.llm.table.FUSIONS`)
FUSION_WORDS = {"qkv": "QKV projection (qkv)", "gate-up": "gate and up projections (gate-up)",
                "reduce-norm": "residual add and norm after each all-reduce (reduce-norm)"}


def applied_fusions(tables: Any) -> tuple[str, ...]:
    """The fusions applied in any of ``tables`` (:attr:`OpTable.fusions`), in :data:`FUSIONS` order."""
    from roofline.llm.table import FUSIONS

    got = {f for t in tables for f in t.fusions}
    return tuple(f for f in FUSIONS if f in got)


def bytes_model(spec: LLMSpec, applied: tuple[str, ...]) -> str:
    """The bytes-model label of ``spec``'s tables: the kernels fused (attention when ``flash``, then the
    fusions ``applied`` in its op table, not merely asked for), every other op unfused; the fusions asked
    for that this model or layout leaves out; the KV reads and the residual precision when not the default."""
    fused = (["attention (FlashAttention-style, no score tensor in memory)"] if spec.flash else []) + \
        [FUSION_WORDS[f] for f in applied]
    if fused:
        text = f"fused kernels: {', '.join(fused)}; every other op unfused (compulsory traffic per op)"
    else:
        text = "unfused: compulsory traffic per op (every input read once, every output written once)"
    if not spec.flash:
        text += ", attention scores written and read back"
    idle = [f for f in spec.fusions if f not in applied]
    if idle:
        text += f"; not applicable to this model or tp: {', '.join(idle)}"
    if spec.kv_reads == "per-query-head" and spec.arch.heads != spec.arch.kv_heads and not spec.arch.mla:
        text += "; attention reads each KV head once per query head (TensorRT-LLM v0.5 masked MHA)"
    if spec.precisions.residual:
        text += f"; residual stream in {spec.precisions.residual}"
    return text


def run_info(spec: LLMSpec) -> dict[str, Any]:
    """Sizes of the run, for printing: parameters, resident weights, KV cache and activations (per device)."""
    total, active = param_counts(spec.arch)
    weights = weight_bytes_resident(spec)
    kv = float(kv_cache_bytes(spec))
    act = float(activation_bytes(spec))
    return {"model": spec.arch.name, "model_source": spec.arch.source, "phase": spec.phase, "batch": spec.batch,
            "prompt": spec.prompt, "context": spec.context, "gen": spec.gen, "tp": spec.tp, "flash": spec.flash,
            "all_logits": spec.all_logits, "moe_routing": spec.moe_routing, "kv_reads": spec.kv_reads,
            "moe_load": spec.moe_load, "mtp": spec.mtp,
            "precisions": spec.precisions.to_dict(),
            "params": total, "active_params": active, "weight_bytes": weights, "kv_cache_bytes": kv,
            "activation_bytes": act, "memory_bytes": memory_bytes(spec)}


def rows_workload(spec: LLMSpec, table: OpTable, rows: np.ndarray, ops: np.ndarray | None = None) -> Workload:
    """One workload holding ``table``'s ops (or the subset ``ops``, indices) at every basis row of ``rows``
    (configs, terms), config after config: a batch of steps forecast in one :func:`~roofline.engine.analysis.analyze`
    call (the serving simulator's step tables).  The op columns are those :func:`build_workload` writes."""
    import dataclasses

    sel = np.arange(len(table)) if ops is None else np.asarray(ops, dtype=np.int64)
    rows = np.atleast_2d(np.asarray(rows, dtype=float))
    sub = dataclasses.replace(table, names=tuple(table.names[i] for i in sel),
                              coef={q: c[sel] for q, c in table.coef.items()},
                              dims=None if table.dims is None else table.dims[sel],
                              stream=None if table.stream is None else table.stream[sel])
    v = evaluate(sub, rows, spec.precisions.bytes())
    k = len(rows)
    dims = {c: v.ravel() for c, v in gemm_dims_rows(sub, rows, spec.moe_load).items()}
    names = [table.names[i] for i in sel] * k
    roles = [int(table.roles[i]) for i in sel] * k
    cols: dict[str, Any] = dict(
        name=names, group=names, kind=[table.kinds[i] for i in sel] * k,
        module_type=[table.module_types[i] for i in sel] * k, **role_columns(roles, spec.precisions),
        flops=v["flops"].ravel(), bytes_read=v["bytes_read"].ravel(),
        bytes_written=v["bytes_written"].ravel(), weight_bytes=v["weight_bytes"].ravel(),
        count=np.tile(table.counts[sel], k), **dims, title=f"{spec.arch.name}: {k} step(s)",
        info={"collective_ranks": spec.tp},  # the tp group its collectives run over (their per-hop latency)
        source=f"roofline.llm ({spec.arch.source})")
    return Workload.from_columns(**cols)
