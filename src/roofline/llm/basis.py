"""The basis: one row of the run's term values per configuration, and an op table evaluated at those rows.

A configuration (``b`` sequences each adding ``s`` new tokens that see ``S`` keys, the experts they
touch) is one row of :func:`basis`, over the terms of :data:`roofline.llm.table.TERMS`; :func:`evaluate`
turns an :class:`~roofline.llm.table.OpTable`'s coefficients into per-op FLOPs and bytes at every row
with one matrix product per quantity.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError
from roofline.llm.config import Arch
from roofline.llm.table import EXP, FULL, KEY, KEYW, ONE, PAIR, PAIRW, SEQ, TERMS, TOK, OpTable
from roofline.work.costs import aligned_causal_pairs


def _sum_min(lo: np.ndarray, hi: np.ndarray, w: float) -> np.ndarray:
    """sum_{x=lo..hi} min(x, w), vectorised (0 where hi < lo)."""
    m = np.clip(w, lo - 1, hi)
    return (m * (m + 1) - (lo - 1) * lo) / 2 + (hi - m) * w


def _sum_chunked(lo: np.ndarray, hi: np.ndarray, c: float) -> np.ndarray:
    """sum_{p=lo..hi} (((p-1) mod c) + 1), vectorised: the keys a query at position p (1-based) sees under
    chunked local attention (Llama 4: the keys of its own chunk of ``c`` tokens up to itself); 0 where hi < lo."""
    def upto(p: np.ndarray) -> np.ndarray:  # the sum over 1..p
        p = np.maximum(p, 0)
        q, r = np.floor_divide(p, c), np.mod(p, c)
        return q * c * (c + 1) / 2 + r * (r + 1) / 2

    return np.maximum(upto(hi) - upto(lo - 1), 0)


#: How a step's tokens spread over the routed experts (see :func:`experts_touched`).
MOE_ROUTINGS = ("expected", "worst", "best")


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
    if arch.window_layers and arch.local_attention == "chunked":
        # the query at position p sees ((p-1) mod w) + 1 keys: its chunk's, up to itself; the new queries
        # S-s+1..S together read the keys from the start of the first one's chunk to S (decode: its own
        # chunk's, averaged over the steps)
        keys_c = _sum_chunked(S0, S1, w) / steps
        out[..., KEYW] = b * np.where(s == 1, keys_c, S - np.floor_divide(np.maximum(S - s, 0), w) * w)
        out[..., PAIRW] = b * np.where(s == 1, keys_c, _sum_chunked(S - s + 1, S, w))
    elif arch.window_layers:
        keys_w = _sum_min(S0, S1, w) / steps  # mean over the steps of min(S, w)
        # the new queries S-s+1..S together read the keys from the first one's window start to S: every key
        # of a prefill within reach is read once (decode: the window's, averaged over the steps)
        out[..., KEYW] = b * np.where(s == 1, keys_w, np.minimum(S, s + w - 1))
        # pairs: sum over the new queries at positions S-s+1..S of min(pos, w); decode (s == 1): keys_w
        out[..., PAIRW] = b * np.where(s == 1, keys_w, _sum_min(S - s + 1, S, w))
    else:
        out[..., KEYW] = out[..., KEY]
        out[..., PAIRW] = out[..., PAIR]
    return out.reshape(-1, len(TERMS))


def activation_element_bytes(table: OpTable, eb: Mapping[str, Any]) -> tuple[Any, Any]:
    """Bytes per activation element of each op's reads and writes: the residual precision ``eb['r']`` (the
    activations' ``eb['a']`` when absent) where :attr:`OpTable.stream` says so, else ``eb['a']``; scalars or
    (configs, 1) columns when every op takes one size, else arrays broadcasting to (configs, ops)."""
    def col(x: Any) -> Any:
        x = np.asarray(x, dtype=float)
        return x.reshape(-1, 1) if x.ndim else x

    a = col(eb["a"])
    r = col(eb.get("r", eb["a"]))
    if table.stream is None or np.array_equal(a, r):
        return a, a
    return np.where(table.stream[:, 0], r, a), np.where(table.stream[:, 1], r, a)


def evaluate(table: OpTable, B: np.ndarray, eb: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Per-op FLOPs, weight bytes, bytes read and written, shape (configs, ops); ``eb`` = bytes per element."""
    c = table.coef

    def mm(q: str) -> np.ndarray:
        return B @ c[q].T

    def col(x: Any) -> Any:
        x = np.asarray(x, dtype=float)
        return x.reshape(-1, 1) if x.ndim else x

    # the routed experts' weights (read per expert touched: the EXP term) at their own format where they have one
    wq_exp = B[..., EXP:EXP + 1] * c["wq"][:, EXP]
    weight = (mm("wq") - wq_exp) * col(eb["wq"]) + wq_exp * col(eb.get("we", eb["wq"])) + mm("wu") * col(eb["wu"])
    a_read, a_write = activation_element_bytes(table, eb)
    read = weight + mm("ar") * a_read + mm("kr") * col(eb["kv"]) + mm("xr")
    written = mm("aw") * a_write + mm("kw") * col(eb["kv"])
    return {"flops": mm("flops"), "weight_bytes": weight, "bytes_read": read, "bytes_written": written}
