"""Iteration times: the forecast (or the bound) of one serving iteration's op table.

An iteration runs ``B`` decoding sequences (one new token each, ``K`` KV tokens read in all) and prefill
chunks (``c`` new tokens after ``o`` cached ones) as one batch: every GEMM, norm and collective over all
``n = B + sum c`` tokens at once (as vLLM, SGLang and TensorRT-LLM batch them), attention over every
sequence's keys.  Its op table is the LLM frontend's table (:func:`roofline.llm.table.build_table`, fused
attention by default) at the sum of the sequences' basis rows (:mod:`roofline.llm.basis`), the routed
experts recomputed from the total tokens.  Its time is that workload's ``forecast.total_time``
(:func:`roofline.engine.analysis.analyze` with ``forecast=True``), or its bound (``bound=True``).

The forecast of an op depends only on that op's own row, so the iteration's time is the sum over three
groups of ops, each a function of fewer numbers (a test checks the sum against the whole table):

* *token ops* (embedding, projections, MLP/expert GEMMs, norms, all-reduces): the tokens ``n`` only;
  exact, computed for whole blocks of integers at once and kept;
* *sequence ops* (lm_head and its all-gather): the sequences ``s`` only; exact, the same way;
* *attention ops* (fused SDPA and its softmax): the tokens, keys and visible query-key pairs.  Prefill-only
  iterations take them exactly (kept by their row); decode-bearing iterations interpolate them
  trilinearly in a table over (prefill tokens ``P``, decode batch ``B``, mean KV tokens per decode sequence
  ``K / B``) built once, on geometric grids (ratio :data:`GRID_RATIO`).  The table's prefill part is a
  fresh chunk of ``P`` tokens; a chunk after ``o`` cached tokens enters as the fresh chunk ``P'`` with the
  same visible pairs, its remaining keys added to ``K`` (FLOPs and KV bytes exact; the chunk's query and
  output bytes those of ``P'`` tokens).

``exact=True`` evaluates every iteration's whole table (slow; for tests and checks).  ``cuda_graphs=True``:
every iteration replays a CUDA graph, so each kernel pays the device's ``cuda-graph`` overhead floor instead of
its ``cuda-launch`` one (:func:`roofline.engine.forecast.compute_forecast` with that framework; the forecast's default
is the launch).  TensorRT-LLM's MLPerf harness runs eager (``use_graphs = False``).
"""

from __future__ import annotations

import bisect
import math
from typing import TYPE_CHECKING

import numpy as np

from roofline.core.errors import RooflineError
from roofline.llm.basis import basis, experts_touched
from roofline.llm.expert_parallel import attention_tp, device_rows, dispatch_combine_seconds
from roofline.llm.model import rows_workload
from roofline.llm.table import EXP, FULL, KEY, KEYW, ONE, PAIR, PAIRW, SEQ, TERMS, TOK, OpTable, build_table
from roofline.work.costs import aligned_causal_pairs

if TYPE_CHECKING:
    from roofline.hardware.device import Device
    from roofline.llm.spec import LLMSpec

#: Geometric step of the attention table's grids (a node every 25%; see tests for the 2% check).
GRID_RATIO = 1.25
#: Integers per block of the exact token and sequence tables.
BLOCK = 512
#: Widest run of consecutive prompts whose prefill attention is computed ahead (:meth:`StepModel.prefetch_windows`).
WINDOW = 8
#: The basis terms attention ops read: an exact attention time is kept by these values (integers and halves,
#: exact in floating point, so any route to the same iteration finds it).
_ATTN_KEY = [TOK, KEY, PAIR, FULL, KEYW, PAIRW, SEQ]


def geometric_grid(top: int, ratio: float = GRID_RATIO, *, zero: bool = False) -> np.ndarray:
    """Integers 1, 2, ... up to ``top`` (included), consecutive while the step is under ``ratio``."""
    out = [0] if zero else []
    x = 1
    while x < top:
        out.append(x)
        x = max(x + 1, int(math.floor(x * ratio)))
    out.append(int(top))
    return np.asarray(sorted(set(out)), dtype=np.int64)


class StepModel:
    """Times of serving iterations of ``spec``'s model (per device, ``spec.tp``) on ``device``."""

    #: whether this model times MLA's absorbed decode apart from its naive prefill (:mod:`roofline.serving.mla_steps`)
    absorbed_decode = False

    def __init__(self, spec: LLMSpec, device: Device, *, bound: bool = False, exact: bool = False,
                 cuda_graphs: bool = False) -> None:
        if spec.arch.mla and not self.absorbed_decode:
            raise RooflineError(f"{spec.arch.name}: multi-head latent attention runs different prefill and "
                                "decode tables; 'roofline serve' does not batch them together yet")
        self.spec, self.device, self.bound, self.exact = spec, device, bound, exact
        self.framework = "cuda-graph" if cuda_graphs else None  # None: the forecast's own choice (launch)
        self.layout = spec.layout  # expert parallelism (roofline.llm.expert_parallel): rows per device, EP comms
        self.table = build_table(spec.arch, "prefill", attention_tp(spec.tp, self.layout), spec.flash,
                                 spec.all_logits, spec.kv_reads, spec.fusions, spec.mtp)
        c = self.table.coef
        terms = np.zeros((len(self.table), len(TERMS)), dtype=bool)
        for q in c:
            terms |= c[q] != 0
        uses_seq = terms[:, SEQ]
        uses_keys = terms[:, [KEY, PAIR, KEYW, PAIRW]].any(axis=1) | terms[:, TERMS.index("scores")]
        self.seq_ops = np.flatnonzero(uses_seq & ~uses_keys)
        self.attn_ops = np.flatnonzero(uses_keys)
        self.tok_ops = np.flatnonzero(~uses_seq & ~uses_keys)
        self._tok: dict[int, np.ndarray] = {}
        self._seq: dict[int, np.ndarray] = {}
        self._memo: dict[tuple[float, ...], float] = {}
        self._attn: dict[tuple[float, ...], float] = {}
        self._grid: tuple[list[float], list[float], list[float], np.ndarray] | None = None
        self._decodes: dict[tuple[int, float], float] = {}  # decode-only iteration times (the step-time cache)
        self.evaluations = 0  # analyze calls made

    # -- the forecast of op subsets at basis rows ---------------------------------------------
    def times(self, rows: np.ndarray, ops: np.ndarray | None = None, table: OpTable | None = None) -> np.ndarray:
        """Seconds per config of ``rows`` (configs, terms): the ops ``ops`` (all by default), forecast or bound.
        ``rows`` are the replica's; under expert parallelism each is one device's share
        (:func:`roofline.llm.expert_parallel.device_rows`) and the token ops carry the EP dispatch and combine."""
        from roofline.engine.analysis import analyze
        from roofline.engine.forecast import compute_forecast

        rows = np.atleast_2d(rows)
        tokens = rows[:, TOK].copy()  # the replica's
        if self.layout.active:
            rows = device_rows(self.spec.arch, rows, self.spec.moe_routing, self.layout)
        w = rows_workload(self.spec, self.table if table is None else table, rows, ops)
        a = analyze(w, self.device)
        self.evaluations += 1
        t = a.time if self.bound else compute_forecast(a, framework=self.framework).time
        per_op = t * w.columns["count"]
        out = per_op.reshape(len(rows), -1).sum(axis=1)
        if ops is None or ops is self.tok_ops:  # the EP dispatch and combine go with the token ops
            out = out + dispatch_combine_seconds(self.spec.arch, tokens, self.layout)
        return out

    def row(self, decode_batch: int, kv_tokens: float, chunks: list[tuple[int, int]]) -> np.ndarray:
        """The iteration's basis row: ``decode_batch`` sequences reading ``kv_tokens`` keys in all (the new
        tokens included) and prefill ``chunks`` of (new tokens, cached tokens before them)."""
        a = self.spec.arch
        r = np.zeros(len(TERMS))
        if a.window_layers:
            if decode_batch:
                r += basis(a, decode_batch, 1, kv_tokens / decode_batch)[0]
            for new, cached in chunks:
                r += basis(a, 1, new, cached + new)[0]
        else:  # basis() in closed form: decode adds b seqs, b tokens, K keys and pairs; a chunk its causal pairs
            seqs, toks, keys, pairs, full = decode_batch, decode_batch, kv_tokens, kv_tokens, kv_tokens
            for new, cached in chunks:
                S = cached + new
                seqs, toks, keys, full = seqs + 1, toks + new, keys + S, full + new * S
                pairs += aligned_causal_pairs(new, S)
            r[[SEQ, TOK, KEY, PAIR, FULL, KEYW, PAIRW]] = seqs, toks, keys, pairs, full, keys, pairs
        r[ONE] = 1.0
        r[EXP] = float(experts_touched(a.experts, a.top_k, r[TOK], self.spec.moe_routing))
        return r

    def exact_time(self, r: np.ndarray) -> float:
        """The whole table at row ``r`` (kept by row)."""
        key = tuple(r.tolist())
        t = self._memo.get(key)
        if t is None:
            t = self._memo[key] = float(self.times(r)[0])
        return t

    # -- exact integer tables -----------------------------------------------------------------
    def _block(self, store: dict[int, np.ndarray], value: int, ops: np.ndarray, term: int) -> float:
        if len(ops) == 0 or value <= 0:
            return 0.0
        b = value // BLOCK
        arr = store.get(b)
        if arr is None:
            xs = np.arange(b * BLOCK, (b + 1) * BLOCK, dtype=float)
            rows = np.zeros((BLOCK, len(TERMS)))
            rows[:, ONE] = 1.0
            rows[:, term] = xs
            if term == TOK:
                a = self.spec.arch
                rows[:, EXP] = experts_touched(a.experts, a.top_k, xs, self.spec.moe_routing)
            arr = store[b] = self.times(rows, ops)
        return float(arr[value - b * BLOCK])

    def token_time(self, n: int) -> float:
        return self._block(self._tok, n, self.tok_ops, TOK)

    def seq_time(self, s: int) -> float:
        return self._block(self._seq, s, self.seq_ops, SEQ)

    # -- attention ------------------------------------------------------------------------------
    def build_attention_table(self, max_prefill: int, max_batch: int, max_context: int) -> None:
        """The attention table over (P, B, K/B) grids up to these sizes (decode-bearing iterations)."""
        a = self.spec.arch
        gp = geometric_grid(max(max_prefill, 1), zero=True)  # two nodes at least on every axis
        gb = geometric_grid(max(max_batch, 1), zero=True)
        gm = geometric_grid(max(max_context, 2))
        P, Bt, M = (x.ravel().astype(float) for x in np.meshgrid(gp, gb, gm, indexing="ij"))
        rows = basis(a, Bt, 1, M) * (Bt > 0)[:, None] + basis(a, 1, np.maximum(P, 1), np.maximum(P, 1)) * (P > 0)[:, None]
        rows[:, ONE] = 1.0
        vals = self.times(rows, self.attn_ops) if len(self.attn_ops) else np.zeros(len(rows))
        self._decodes.clear()  # times interpolated in the old table
        self._grid = (gp.astype(float).tolist(), gb.astype(float).tolist(), gm.astype(float).tolist(),
                      vals.reshape(len(gp), len(gb), len(gm)))

    def attention_time(self, decode_batch: int, kv_tokens: float, chunks: list[tuple[int, int]]) -> float:
        """Attention ops of a decode-bearing iteration, interpolated in the table (module docs)."""
        if len(self.attn_ops) == 0:
            return 0.0
        pairs = sum(c * o + c * (c + 1) / 2 for c, o in chunks)
        keys = sum(c + o for c, o in chunks)
        p = (math.sqrt(1 + 8 * pairs) - 1) / 2 if pairs else 0.0
        k = kv_tokens + keys - p
        g = self._grid
        if g is None or p > g[0][-1] or decode_batch > g[1][-1] or k / decode_batch > g[2][-1]:
            self.build_attention_table(max(int(math.ceil(p)), 1) if g is None else int(max(g[0][-1], 2 * p)),
                                       decode_batch if g is None else int(max(g[1][-1], 2 * decode_batch)),
                                       int(math.ceil(k / decode_batch)) if g is None
                                       else int(max(g[2][-1], 2 * k / decode_batch)))
            g = self._grid
        assert g is not None
        return _trilinear(g, p, float(decode_batch), max(k / decode_batch, 1.0))

    # -- one iteration --------------------------------------------------------------------------
    def iteration_time(self, decode_batch: int, kv_tokens: float, chunks: list[tuple[int, int]]) -> float:
        """Seconds of one iteration: ``decode_batch`` decodes reading ``kv_tokens`` keys in all, plus
        prefill ``chunks`` (new, cached) (module docs: exact for prefill-only, interpolated otherwise)."""
        if self.exact:
            return self.exact_time(self.row(decode_batch, kv_tokens, chunks))
        key = (decode_batch, kv_tokens) if decode_batch and not chunks else None
        cached = self._decodes.get(key) if key else None  # decode-only: kept until the attention table is rebuilt
        if cached is not None:
            return cached
        n = decode_batch + sum(c for c, _ in chunks)
        attn = (self.attention_time(decode_batch, kv_tokens, chunks) if decode_batch
                else self.exact_attention(self.row(0, 0.0, chunks)))
        t = self.token_time(n) + self.seq_time(decode_batch + len(chunks)) + attn
        if key:
            self._decodes[key] = t
        return t

    def exact_attention(self, r: np.ndarray) -> float:
        """The attention ops at row ``r``, exactly (kept by row)."""
        if len(self.attn_ops) == 0:
            return 0.0
        key = tuple(r[_ATTN_KEY].tolist())
        t = self._attn.get(key)
        if t is None:
            t = self._attn[key] = float(self.times(r, self.attn_ops)[0])
        return t

    def prefetch_windows(self, lengths: np.ndarray, widths: int = WINDOW) -> None:
        """Exact attention times, in one call, of prefill-only iterations of fresh prompts taken in arrival
        order: every run of 1 .. ``widths`` consecutive prompts of ``lengths`` (what a FIFO prefill-first
        scheduler batches when nothing is preempted).  Other prefill-only iterations are computed when met."""
        if self.exact or not len(self.attn_ops) or self.spec.arch.window_layers:
            return
        c = np.asarray(lengths, dtype=float)
        cum = {name: np.concatenate([[0.0], np.cumsum(x)]) for name, x in
               (("tok", c), ("pairs", c * (c + 1) / 2), ("full", c * c))}
        rows = []
        for k in range(1, min(widths, len(c)) + 1):
            r = np.zeros((len(c) - k + 1, len(TERMS)))
            tok = cum["tok"][k:] - cum["tok"][:-k]
            pairs = cum["pairs"][k:] - cum["pairs"][:-k]
            r[:, ONE], r[:, SEQ], r[:, TOK], r[:, KEY], r[:, KEYW] = 1.0, k, tok, tok, tok
            r[:, PAIR], r[:, PAIRW], r[:, FULL] = pairs, pairs, cum["full"][k:] - cum["full"][:-k]
            rows.append(r)
        allrows = np.vstack(rows)
        keys = list(map(tuple, allrows[:, _ATTN_KEY].tolist()))
        first = {key: i for i, key in reversed(list(enumerate(keys)))}  # one row per distinct key
        fresh = [i for key, i in first.items() if key not in self._attn]
        if fresh:
            vals = self.times(allrows[fresh], self.attn_ops)
            for i, v in zip(fresh, vals, strict=True):
                self._attn[keys[i]] = float(v)

    def prefetch_prompts(self, lengths: np.ndarray) -> None:
        """Exact times of single fresh prompts of these lengths, in one call (prefill-only iterations)."""
        a = self.spec.arch
        todo = [int(x) for x in np.unique(lengths)]
        rows = basis(a, 1, np.asarray(todo, dtype=float), np.asarray(todo, dtype=float))
        keys = [tuple(self.row(0, 0, [(x, 0)]).tolist()) for x in todo]
        store, ops = (self._memo, None) if self.exact else (self._attn, self.attn_ops)
        if not self.exact:
            keys = [tuple(r[_ATTN_KEY].tolist()) for r in rows]
        fresh = [i for i, k in enumerate(keys) if k not in store]
        if fresh and (ops is None or len(ops)):
            vals = self.times(rows[fresh], ops)
            for i, v in zip(fresh, vals, strict=True):
                store[keys[i]] = float(v)


def grid_axis(g: list[float], x: float) -> tuple[int, float]:
    """Left node index and weight of ``x`` on the sorted nodes ``g`` (two at least; clamped to the ends)."""
    if x <= g[0]:
        return 0, 0.0
    i = min(bisect.bisect_right(g, x) - 1, len(g) - 2)
    return i, min((x - g[i]) / (g[i + 1] - g[i]), 1.0)


def _trilinear(g: tuple[list[float], list[float], list[float], np.ndarray], p: float, b: float, m: float) -> float:
    gp, gb, gm, v = g
    i, u = grid_axis(gp, p)
    j, s = grid_axis(gb, b)
    k, t = grid_axis(gm, m)
    c = v[i:i + 2, j:j + 2, k:k + 2].tolist()  # 2 x 2 x 2 corners as floats
    out = 0.0
    for a, wa in ((0, 1 - u), (1, u)):
        for bb, wb in ((0, 1 - s), (1, s)):
            lo, hi = c[a][bb]
            out += wa * wb * (lo * (1 - t) + hi * t)
    return out
