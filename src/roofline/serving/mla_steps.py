"""Iteration times of models with multi-head latent attention (DeepSeek-V2/V3, Kimi K2): prefill and decode run
different attention, so an iteration's op table is the two tables' parts.

MLA prefills naively (every key's latent decompressed into per-head K and V, ``kv_b_proj`` over the keys, then
ordinary attention) and decodes absorbed (``W_uk`` folded into the query, ``W_uv`` into the output, attention
over the latent cache: :func:`roofline.llm.table._mla_attention`), as SGLang and vLLM run it (FlashMLA for the
decode).  One iteration of ``B`` decodes and prefill chunks is then:

* the token ops both tables share (projections, norms, MLP/experts, collectives) over all ``n`` tokens, and the
  sequence ops, from the prefill table, exactly as :class:`~roofline.serving.steps.StepModel` times them;
* the decode-only token ops (``q_absorb``, ``v_absorb``) over the ``B`` decode tokens, exact per ``B``;
* the prefill chunks' attention (the decompression included) from the prefill table, exactly per chunk set;
* the decodes' absorbed attention from the decode table, interpolated bilinearly on geometric grids of ``B``
  and keys per sequence (:data:`~roofline.serving.steps.GRID_RATIO`; its efficiency on H100/H200: FlashMLA's,
  catalog/calibrations).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from roofline.llm.basis import basis
from roofline.llm.expert_parallel import attention_tp
from roofline.llm.table import FULL, KEY, KEYW, ONE, PAIR, PAIRW, TERMS, TOK, build_table
from roofline.serving.steps import BLOCK, StepModel, geometric_grid, grid_axis

if TYPE_CHECKING:
    from roofline.hardware.device import Device
    from roofline.llm.spec import LLMSpec


class MLAStepModel(StepModel):
    """:class:`StepModel` for MLA models (module docs)."""

    absorbed_decode = True

    def __init__(self, spec: LLMSpec, device: Device, **kw: Any) -> None:
        super().__init__(spec, device, **kw)
        self.decode_table = build_table(spec.arch, "decode", attention_tp(spec.tp, self.layout), spec.flash,
                                        spec.all_logits, spec.kv_reads, spec.fusions)
        shared = {n.split(".", 1)[1] for n in self.table.names}
        c = self.decode_table.coef
        keys = np.zeros(len(self.decode_table), dtype=bool)
        for q in c:
            keys |= (c[q][:, [KEY, PAIR, FULL, KEYW, PAIRW]] != 0).any(axis=1)
        own = np.asarray([n.split(".", 1)[1] not in shared for n in self.decode_table.names])
        self.decode_attn_ops = np.flatnonzero(keys)
        self.decode_tok_ops = np.flatnonzero(own & ~keys)
        self._dtok: dict[int, np.ndarray] = {}
        self._dgrid: tuple[list[float], list[float], np.ndarray] | None = None

    def decode_token_time(self, b: int) -> float:
        """The decode-only token ops (absorptions) for ``b`` decode tokens, exact (blocks of integers)."""
        if len(self.decode_tok_ops) == 0 or b <= 0:
            return 0.0
        k = b // BLOCK
        arr = self._dtok.get(k)
        if arr is None:
            rows = np.zeros((BLOCK, len(TERMS)))
            rows[:, ONE] = 1.0
            rows[:, TOK] = np.arange(k * BLOCK, (k + 1) * BLOCK, dtype=float)
            arr = self._dtok[k] = self.times(rows, self.decode_tok_ops, self.decode_table)
        return float(arr[b - k * BLOCK])

    def build_attention_table(self, max_prefill: int, max_batch: int, max_context: int) -> None:
        """The decode attention grid over (B, keys per sequence) up to these sizes (prefill attention is exact)."""
        gb = geometric_grid(max(max_batch, 2)).astype(float)
        gm = geometric_grid(max(max_context, 2)).astype(float)
        B, M = (x.ravel() for x in np.meshgrid(gb, gm, indexing="ij"))
        rows = basis(self.spec.arch, B, 1, M)
        vals = self.times(rows, self.decode_attn_ops, self.decode_table)
        self._dgrid = (gb.tolist(), gm.tolist(), vals.reshape(len(gb), len(gm)))

    def decode_attention_time(self, b: int, kv_tokens: float) -> float:
        """The absorbed attention of ``b`` decodes reading ``kv_tokens`` keys in all, bilinear in the grid."""
        m = max(kv_tokens / b, 1.0)
        g = self._dgrid
        if g is None or b > g[0][-1] or m > g[1][-1]:
            self.build_attention_table(0, b if g is None else int(max(g[0][-1], 2 * b)),
                                       int(np.ceil(m)) if g is None else int(max(g[1][-1], 2 * m)))
            g = self._dgrid
        assert g is not None
        gb, gm, v = g
        i, u = grid_axis(gb, float(b))
        j, t = grid_axis(gm, m)
        return float((1 - u) * ((1 - t) * v[i, j] + t * v[i, j + 1]) + u * ((1 - t) * v[i + 1, j] + t * v[i + 1, j + 1]))

    def iteration_time(self, decode_batch: int, kv_tokens: float, chunks: list[tuple[int, int]]) -> float:
        """Seconds of one iteration (module docs): shared token and sequence ops, the chunks' naive attention,
        the decodes' absorptions and absorbed attention."""
        n = decode_batch + sum(c for c, _ in chunks)
        t = self.token_time(n) + self.seq_time(decode_batch + len(chunks))
        if chunks:
            t += self.exact_attention(self.row(0, 0.0, chunks))
        if decode_batch:
            t += self.decode_token_time(decode_batch) + self.decode_attention_time(decode_batch, kv_tokens)
        return t


def step_model(spec: LLMSpec, device: Device, **kw: Any) -> StepModel:
    """The step model of ``spec``'s model: :class:`MLAStepModel` for MLA, else :class:`StepModel`."""
    return (MLAStepModel if spec.arch.mla else StepModel)(spec, device, **kw)
