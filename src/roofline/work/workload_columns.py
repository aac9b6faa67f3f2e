"""The op columns of a workload: what each holds, its default, its allowed values and range, and their checks.

An :class:`Op` is one kernel-sized piece of work; a :class:`~roofline.work.workload.Workload` stores the same
fields column by column (:data:`COLUMNS`).  The checks here take a column from arrays, JSON values or
CSV cells and refuse what could not be a figure (a one-line error naming the op and the field), so every
product and sum in the analysis stays finite.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from numbers import Real
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError
from roofline.core.fileio import json_numbers
from roofline.core.precision import PRECISIONS
from roofline.hardware.device import UNITS
from roofline.work.costs import KIND_UNIT

OP_KINDS = ("matmul", "conv", "attention", "elementwise", "norm", "softmax", "reduction",
            "embedding", "memory", "collective", "other")
#: Memory levels an op may name; "" is main memory (HBM/DRAM), "interconnect" the device link.
LEVELS = ("", "L1", "L2", "L3", "interconnect")
UNFUSED = "unfused: compulsory traffic per op (every input read once, every output written once)"

#: Traffic at cache levels, on top of the op's main traffic (cache-aware / hierarchical roofline).
CACHE_BYTES = {"bytes_l1": "L1", "bytes_l2": "L2", "bytes_l3": "L3"}
#: GEMM dimensions of a matmul-like op (C[batch, m, n] = A[batch, m, k] @ B[batch, k, n]; attention: batch =
#: sequences x heads, m = queries, n = keys, k = head dim): optional integers >= 0, NaN where not known.
#: They feed the forecast's tile and wave quantization (:mod:`roofline.engine.gemm_shape`), never the bound.
GEMM_DIMS = ("m", "n", "k", "batch")
NUMERIC = ("flops", "bytes_read", "bytes_written", "weight_bytes", "count", "measured_seconds", *CACHE_BYTES,
            *GEMM_DIMS)
STRINGS = ("name", "group", "module_type")
ENUMS = {"kind": OP_KINDS, "precision": PRECISIONS, "unit": UNITS, "level": LEVELS}
COLUMNS = ("name", "kind", "flops", "bytes_read", "bytes_written", "precision", "unit", "count",
           "group", "module_type", "level", "weight_bytes", "measured_seconds", *CACHE_BYTES, *GEMM_DIMS)


_OP_NUMBERS = ("flops", "bytes_read", "bytes_written", "count", "weight_bytes", "measured_seconds", "bytes_l1",
               "bytes_l2", "bytes_l3")
_OP_TEXT = ("name", "kind", "precision", "unit", "group", "module_type", "level")


@dataclass(frozen=True)
class Op:
    """One op.  FLOPs and bytes are per single run; ``count`` runs in total.

    ``weight_bytes`` is the part of ``bytes_read`` that is parameters.
    ``level`` names the memory level the bytes move through ("" = main memory,
    "interconnect" = device-to-device link).  ``bytes_l1/l2/l3`` optionally
    give the traffic the op also causes at each cache level (cache-aware
    roofline: its time is then the max over every level's bytes / bandwidth).
    ``measured_seconds`` is the measured time of one run (NaN when not measured).
    ``m, n, k, batch`` are a matmul-like op's GEMM dimensions (:data:`GEMM_DIMS`; NaN when not known).
    """

    name: str
    kind: str = "other"
    flops: float = 0.0
    bytes_read: float = 0.0
    bytes_written: float = 0.0
    precision: str = "fp32"
    unit: str = ""  # '': by kind (matmul, conv, attention: the matrix unit; everything else: the vector unit)
    count: float = 1
    group: str = ""
    module_type: str = ""
    level: str = ""
    weight_bytes: float = 0.0
    measured_seconds: float = math.nan
    bytes_l1: float = 0.0
    bytes_l2: float = 0.0
    bytes_l3: float = 0.0
    m: float = math.nan
    n: float = math.nan
    k: float = math.nan
    batch: float = math.nan

    def __post_init__(self) -> None:
        """The API boundary (:mod:`roofline.core.arguments`): text fields strings, figures real numbers (their
        ranges are checked where the op joins a workload, with the op named)."""
        for f in _OP_NUMBERS:
            v = getattr(self, f)
            if type(v) is not float and type(v) is not int and (isinstance(v, bool) or not isinstance(v, Real)):
                from roofline.core.arguments import type_error

                raise type_error("Op", f, "a real number", v)
        for f in _OP_TEXT:
            if type(getattr(self, f)) is not str:
                from roofline.core.arguments import type_error

                raise type_error("Op", f, "a string", getattr(self, f))

    @property
    def bytes(self) -> float:
        return self.bytes_read + self.bytes_written


#: Every op field's default (absent columns and fields take these).
DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(Op)}

#: Ranges of op figures (per run): beyond them a product or sum in the analysis could overflow to inf.
MAX_FIGURE = 1e30  # FLOPs or bytes of one run of one op
MAX_COUNT = 1e15
MIN_SECONDS, MAX_SECONDS = 1e-15, 1e9
MAX_DIM = 2.0 ** 53  # a GEMM dimension: integers beyond this are not exact as floats


@dataclass(frozen=True, eq=False)
class JsonNumbers:
    """A long per-op column on its way to JSON, left as its float array: the list :func:`finite_or_null` would
    make (floats, NaN and infinity as null), written by :func:`roofline.render.dumps_bytes` a slice at a time
    instead of as one Python float object per op (a 250k-op analysis has ~10M of them).  Only ``to_dict(lazy=True)``
    makes one; :meth:`tolist` is the list itself."""

    values: np.ndarray

    def tolist(self) -> list[float | None]:
        return finite_or_null(self.values)


#: Columns shorter than this stay lists even when ``lazy``; render.dumps_bytes splices lists of this length or
#: more through msgspec and writes shorter ones with json (the one threshold for both).
LAZY_MIN = 256


def finite_or_null(values: Any, lazy: bool = False) -> Any:
    """Numbers as a JSON list: floats, with NaN and infinity as None (null).  An all-finite column (the common
    case) is converted in one C-speed call.  ``lazy``: a column of :data:`LAZY_MIN` values or more is returned as
    a :class:`JsonNumbers` instead (the JSON renderer's route)."""
    arr = np.asarray(values, dtype=float)
    if lazy and arr.ndim == 1 and len(arr) >= LAZY_MIN:
        return JsonNumbers(arr)
    return json_numbers(arr)


def encode(values: Sequence[str], seed: list[str]) -> tuple[list[str], np.ndarray]:
    """String table (``seed`` first, then new values in order of appearance) and int32 codes."""
    index = {v: i for i, v in enumerate(seed)}
    for v in dict.fromkeys(values):  # C-speed de-duplication, order kept
        index.setdefault(v, len(index))
    codes = np.fromiter(map(index.__getitem__, values), dtype=np.int32, count=len(values))
    return list(index), codes


def float_column(raw: Any, c: str, where: str) -> np.ndarray:
    try:
        return np.asarray([math.nan if v is None else v for v in raw] if not isinstance(raw, np.ndarray) else raw,
                          dtype=np.float64)
    except (TypeError, ValueError):
        for i, v in enumerate(raw):
            try:
                float(v)
            except (TypeError, ValueError):
                raise RooflineError(f"op {i}: {c} must be a number, got {v!r}", where=where) from None
        raise


def check_numeric(arr: np.ndarray, c: str, where: str, label: Callable[[str, int], str] | None = None) -> None:
    """Every value of column ``c`` finite and in its range (the ranges keep every product and sum in
    the analysis finite: no FLOP or byte figure above 1e30, no count above 1e15)."""
    if c == "measured_seconds":
        bad = ~(np.isnan(arr) | ((arr >= MIN_SECONDS) & (arr <= MAX_SECONDS)))
        rule = f"a finite number > 0 from {MIN_SECONDS:g} to {MAX_SECONDS:g} (or empty when not measured)"
    elif c in GEMM_DIMS:
        bad = ~(np.isnan(arr) | ((arr >= 0) & (arr <= MAX_DIM) & (arr == np.floor(arr))))
        rule = f"a whole number >= 0 and <= {MAX_DIM:g} (or empty when not known)"
    elif c == "count":
        bad = ~((arr > 0) & (arr <= MAX_COUNT))
        rule = f"a finite number > 0 and <= {MAX_COUNT:g}"
    else:
        bad = ~((arr >= 0) & (arr <= MAX_FIGURE))
        rule = f"a finite number >= 0 and <= {MAX_FIGURE:g}"
    if bad.any():
        i = int(np.argmax(bad))
        if label is not None:
            raise RooflineError(f"{label(c, i)} must be {rule}, got {float(arr[i])!r}", where=where)
        raise RooflineError(f"op {i}: {c} must be {rule}, got {float(arr[i])!r}", where=where)


REQUIRED = ("name", "flops", "bytes_read", "bytes_written")


def json_kind(value: Any) -> str:
    from roofline.core.fileio import json_type

    return json_type(value)


def read_json_numbers(values: list[Any], c: str, where: str, label: Callable[[str, int], str]) -> np.ndarray:
    """A numeric op field: JSON numbers only (not true/false, not strings); null/absent -> the default.

    The common case (all ints and floats) is one C-speed type scan and one array conversion.
    """
    from roofline.core.fileio import wrong

    required = c in REQUIRED or c == "bytes"
    default = DEFAULTS.get(c, 0.0)
    types = set(map(type, values))
    if types <= {int, float, type(None)} and not (required and type(None) in types):
        try:
            arr = np.asarray(values, dtype=np.float64)  # None -> nan
        except OverflowError:  # an integer beyond float range: found below
            pass
        else:
            if type(None) in types and not math.isnan(default):
                arr[[v is None for v in values]] = default
            check_numeric(arr, c, where, label)
            return arr
    out = np.empty(len(values))
    for i, v in enumerate(values):
        if v is None:
            if required:
                raise RooflineError(f"{label(c, i)}: missing (required: {', '.join(REQUIRED)})", where=where)
            out[i] = default
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise wrong(label(c, i), "a number", v, where)
        try:
            out[i] = float(v)
        except OverflowError:
            raise wrong(label(c, i), "a finite number", v, where, "too large") from None
    check_numeric(out, c, where, label)
    return out


def csv_numbers(cells: list[str | None], c: str, where: str, lines: list[int]) -> list[float | None]:
    """CSV cells (text) to numbers; None (empty) stays None for the default."""
    from roofline.core.fileio import shown

    out: list[float | None] = []
    for i, v in enumerate(cells):
        if v is None:
            out.append(None)
            continue
        try:
            out.append(float(v))
        except ValueError:
            raise RooflineError(f"line {lines[i]}: {c} must be a number, got {shown(v)}", where=where) from None
    return out


def json_strings(values: list[Any], c: str, where: str, label: Callable[[str, int], str]) -> list[Any]:
    """A text op field: JSON strings only; null/absent -> the default (the name is required)."""
    from roofline.core.fileio import shown, wrong

    if not set(map(type, values)) <= {str}:
        for i, v in enumerate(values):
            if v is None:
                if c == "name":
                    raise RooflineError(f"{label(c, i)}: missing (required: {', '.join(REQUIRED)})", where=where)
            elif type(v) is not str:
                raise wrong(label(c, i), "a string", v, where)
    allowed = ENUMS.get(c)
    if allowed is not None:
        bad = set(values) - set(allowed) - {None}
        if bad:
            i = next(i for i, v in enumerate(values) if v in bad)
            raise RooflineError(f"{label(c, i)} {shown(values[i])} is not one of "
                                f"{', '.join(repr(a) for a in allowed)}", where=where)
    return values


def units_by_kind(units: list[str], kinds: list[str], kind_codes: np.ndarray) -> list[str]:
    """Each op's unit; an empty one is its kind's (:data:`roofline.work.costs.KIND_UNIT`: matmul, conv and attention
    run on the matrix unit, everything else on the vector unit)."""
    if "" not in units:
        return units
    by_kind = np.asarray([KIND_UNIT.get(k, "vector") for k in kinds], dtype=object)[kind_codes]
    out = np.asarray(units, dtype=object)
    empty = out == ""
    out[empty] = by_kind[empty]
    return list(out.tolist())


