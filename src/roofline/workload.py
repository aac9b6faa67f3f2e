"""Ops and workloads: the work side of the roofline.

An :class:`Op` is one kernel-sized piece of work: FLOPs (a multiply-add is 2
FLOPs), bytes read and written (the compulsory-traffic model: every input read
once from main memory, every output written once), precision, unit, how many
times it runs (``count``; all per-op figures are per single run) and where it
sits (``group``: a dotted module path).  A :class:`Workload` stores ops column
by column (numpy arrays and string tables) so 10^6 ops stay cheap.

>>> from roofline import Op, Workload
>>> w = Workload.from_ops([Op("gemm", kind="matmul", flops=2 * 4096**3,
...                           bytes_read=2 * 2 * 4096**2, bytes_written=2 * 4096**2,
...                           precision="bf16", unit="matrix")])
>>> len(w), w.total_flops
(1, 137438953472.0)
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from roofline.device import PRECISIONS, UNITS
from roofline.errors import RooflineError

WORKLOAD_SCHEMA = "roofline.workload/1"
OP_KINDS = ("matmul", "conv", "attention", "elementwise", "norm", "softmax", "reduction",
            "embedding", "memory", "collective", "other")
#: Memory levels an op may name; "" is main memory (HBM/DRAM), "interconnect" the device link.
LEVELS = ("", "L1", "L2", "L3", "interconnect")
UNFUSED = "unfused: compulsory traffic per op (every input read once, every output written once)"

#: Traffic at cache levels, on top of the op's main traffic (cache-aware / hierarchical roofline).
CACHE_BYTES = {"bytes_l1": "L1", "bytes_l2": "L2", "bytes_l3": "L3"}
_NUMERIC = ("flops", "bytes_read", "bytes_written", "weight_bytes", "count", "measured_seconds", *CACHE_BYTES)
_STRINGS = ("name", "group", "module_type")
_ENUMS = {"kind": OP_KINDS, "precision": PRECISIONS, "unit": UNITS, "level": LEVELS}
COLUMNS = ("name", "kind", "flops", "bytes_read", "bytes_written", "precision", "unit", "count",
           "group", "module_type", "level", "weight_bytes", "measured_seconds", *CACHE_BYTES)


@dataclass(frozen=True)
class Op:
    """One op.  FLOPs and bytes are per single run; ``count`` runs in total.

    ``weight_bytes`` is the part of ``bytes_read`` that is parameters.
    ``level`` names the memory level the bytes move through ("" = main memory,
    "interconnect" = device-to-device link).  ``bytes_l1/l2/l3`` optionally
    give the traffic the op also causes at each cache level (cache-aware
    roofline: its time is then the max over every level's bytes / bandwidth).
    ``measured_seconds`` is the measured time of one run (NaN when not measured).
    """

    name: str
    kind: str = "other"
    flops: float = 0.0
    bytes_read: float = 0.0
    bytes_written: float = 0.0
    precision: str = "fp32"
    unit: str = "vector"
    count: float = 1
    group: str = ""
    module_type: str = ""
    level: str = ""
    weight_bytes: float = 0.0
    measured_seconds: float = math.nan
    bytes_l1: float = 0.0
    bytes_l2: float = 0.0
    bytes_l3: float = 0.0

    @property
    def bytes(self) -> float:
        return self.bytes_read + self.bytes_written


@dataclass(frozen=True)
class UnsupportedOp:
    """An op the frontend has no FLOP formula for; its bytes are still counted."""

    name: str
    count: int
    bytes: float = 0.0


@dataclass
class Workload:
    """Ops stored column-wise, plus what produced them.

    Build with :meth:`from_ops`, :meth:`from_columns` or a :class:`WorkloadBuilder`.
    """

    columns: dict[str, np.ndarray]
    tables: dict[str, list[str]]
    title: str = "workload"
    source: str = ""
    bytes_model: str = UNFUSED
    assumptions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unsupported: list[UnsupportedOp] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    # -- construction ------------------------------------------------------
    @classmethod
    def from_ops(cls, ops: Iterable[Op], **meta: Any) -> Workload:
        b = WorkloadBuilder()
        for op in ops:
            b.add_op(op)
        return b.build(**meta)

    @classmethod
    def from_columns(cls, *, where: str = "workload", **cols: Any) -> Workload:
        """Build from whole columns (sequences or arrays); metadata keywords pass through.

        Required: name, flops, and bytes_read + bytes_written (or ``bytes``, taken as reads).
        """
        meta = {k: cols.pop(k) for k in list(cols) if k in _META}
        if "bytes" in cols and "bytes_read" not in cols:
            cols["bytes_read"] = cols.pop("bytes")
            cols.setdefault("bytes_written", np.zeros(len(cols["bytes_read"])))
        missing = [c for c in ("name", "flops", "bytes_read", "bytes_written") if c not in cols]
        if missing:
            raise RooflineError(f"missing column(s) {', '.join(missing)}; required: name, flops, bytes_read, bytes_written",
                                where=where)
        unknown = sorted(set(cols) - set(COLUMNS))
        if unknown:
            raise RooflineError(f"unknown column(s) {', '.join(unknown)}; known: {', '.join(COLUMNS)}", where=where)
        n = len(cols["name"])
        if n == 0:
            raise RooflineError("the op list is empty", where=where)
        columns: dict[str, np.ndarray] = {}
        tables: dict[str, list[str]] = {}
        for c in COLUMNS:
            raw = cols.get(c)
            if raw is not None and len(raw) != n:
                raise RooflineError(f"column {c!r} has {len(raw)} values, 'name' has {n}", where=where)
            if c in _NUMERIC:
                default = {"count": 1.0, "measured_seconds": math.nan}.get(c, 0.0)
                arr = np.full(n, default) if raw is None else _float_column(raw, c, where)
                _check_numeric(arr, c, where)
                columns[c] = arr
            else:
                default = {"kind": "other", "precision": "fp32", "unit": "vector"}.get(c, "")
                values = [default] * n if raw is None else [v if type(v) is str else default if v is None else str(v)
                                                           for v in raw]
                if c in _ENUMS:
                    allowed = _ENUMS[c]
                    bad = set(values) - set(allowed)
                    if bad:
                        v = sorted(bad)[0]
                        i = values.index(v)
                        raise RooflineError(f"op {i} ({cols['name'][i]!s}): {c} {v!r} is not one of "
                                            f"{', '.join(repr(a) for a in allowed)}", where=where)
                table, codes = _encode(values, list(_ENUMS.get(c, ())))
                tables[c] = table
                columns[c] = codes
        return cls(columns, tables, **meta)

    # -- access ------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.columns["flops"])

    def column(self, name: str) -> np.ndarray:
        """A numeric column, or a string column decoded to an object array."""
        if name in _NUMERIC:
            return self.columns[name]
        return np.asarray(self.tables[name], dtype=object)[self.columns[name]]

    def strings(self, name: str, i: int) -> str:
        return self.tables[name][int(self.columns[name][i])]

    def op(self, i: int) -> Op:
        return Op(**{c: (self.strings(c, i) if c not in _NUMERIC else float(self.columns[c][i])) for c in COLUMNS})

    def __iter__(self) -> Iterator[Op]:
        return (self.op(i) for i in range(len(self)))

    @property
    def bytes(self) -> np.ndarray:
        return self.columns["bytes_read"] + self.columns["bytes_written"]

    @property
    def total_flops(self) -> float:
        return float(np.dot(self.columns["flops"], self.columns["count"]))

    @property
    def total_bytes(self) -> float:
        return float(np.dot(self.bytes, self.columns["count"]))

    @property
    def has_measurements(self) -> bool:
        return bool(np.isfinite(self.columns["measured_seconds"]).any())

    def meta(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in _META}

    def replace(self, **changes: Any) -> Workload:
        """A copy with some columns (whole arrays/lists) or metadata replaced."""
        cols = {c: self.column(c) for c in COLUMNS}
        meta = self.meta()
        for k, v in changes.items():
            (meta if k in _META else cols)[k] = v
        return Workload.from_columns(**cols, **meta)

    def select(self, mask: np.ndarray) -> Workload:
        """The ops where ``mask`` is true (metadata kept)."""
        cols = {c: self.column(c)[mask] for c in COLUMNS}
        return Workload.from_columns(**cols, **self.meta())

    # -- (de)serialisation -------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        ops = {}
        for c in COLUMNS:
            if c in _NUMERIC:
                ops[c] = [None if not math.isfinite(v) else float(v) for v in self.columns[c].tolist()]
            else:
                ops[c] = self.column(c).tolist()
        return {"schema": WORKLOAD_SCHEMA, "title": self.title, "source": self.source,
                "bytes_model": self.bytes_model, "assumptions": list(self.assumptions),
                "warnings": list(self.warnings),
                "unsupported": [{"name": u.name, "count": u.count, "bytes": u.bytes} for u in self.unsupported],
                "info": self.info, "ops": ops}

    @classmethod
    def from_dict(cls, d: Any, *, where: str = "workload") -> Workload:
        if not isinstance(d, Mapping):
            raise RooflineError(f"expected a JSON object, got {type(d).__name__}", where=where)
        schema = d.get("schema")
        if schema != WORKLOAD_SCHEMA:
            raise RooflineError(f"schema: expected {WORKLOAD_SCHEMA!r}, got {schema!r}", where=where)
        if "ops" not in d:
            raise RooflineError("missing field 'ops'", where=where)
        ops = d["ops"]
        if isinstance(ops, list):  # also accept a list of op objects
            if not ops:
                raise RooflineError("the op list is empty", where=where)
            if not all(isinstance(o, Mapping) for o in ops):
                raise RooflineError("ops must be a list of objects or an object of columns", where=where)
            keys = sorted({k for o in ops for k in o})
            ops = {k: [o.get(k) for o in ops] for k in keys}
            for k in ("name", "flops", "bytes_read", "bytes_written", "bytes"):
                if k in ops and any(v is None for v in ops[k]):
                    i = ops[k].index(None)
                    raise RooflineError(f"op {i}: missing field {k!r}", where=where)
        if not isinstance(ops, Mapping):
            raise RooflineError("ops must be a list of objects or an object of columns", where=where)
        unsupported = []
        for u in d.get("unsupported", []):
            unsupported.append(UnsupportedOp(str(u["name"]), int(u.get("count", 1)), float(u.get("bytes", 0.0))))
        return cls.from_columns(
            where=where, title=str(d.get("title", "workload")), source=str(d.get("source", "")),
            bytes_model=str(d.get("bytes_model", UNFUSED)), assumptions=list(d.get("assumptions", [])),
            warnings=list(d.get("warnings", [])), unsupported=unsupported, info=dict(d.get("info", {})),
            **dict(ops))

    def save(self, path: str | Path) -> None:
        from roofline.fileio import write_text_atomic

        write_text_atomic(path, json.dumps(self.to_dict()) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Workload:
        """A workload from JSON (``roofline.workload/1``) or CSV (by extension)."""
        from roofline.fileio import read_json

        if str(path).lower().endswith(".csv"):
            return cls.from_csv(path)
        return cls.from_dict(read_json(path), where=str(path))

    def to_csv(self) -> str:
        """CSV of the op columns; the first line is a comment holding the metadata."""
        buf = io.StringIO()
        meta = {k: v for k, v in self.to_dict().items() if k != "ops"}
        buf.write("# " + json.dumps(meta) + "\n")
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(COLUMNS)
        cols = [self.column(c).tolist() for c in COLUMNS]
        for row in zip(*cols, strict=True):
            w.writerow([repr(v) if isinstance(v, float) else v for v in row])
        return buf.getvalue()

    def save_csv(self, path: str | Path) -> None:
        from roofline.fileio import write_text_atomic

        write_text_atomic(path, self.to_csv())

    @classmethod
    def from_csv(cls, path: str | Path) -> Workload:
        where = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise RooflineError(f"cannot read: {exc.strerror or exc}", where=where) from None
        meta: dict[str, Any] = {"schema": WORKLOAD_SCHEMA}
        lines = text.splitlines()
        if lines and lines[0].startswith("#"):
            try:
                meta.update(json.loads(lines[0][1:]))
            except json.JSONDecodeError:
                raise RooflineError("first-line metadata comment is not valid JSON", where=where) from None
            lines = lines[1:]
        rows = list(csv.reader(lines))
        if not rows:
            raise RooflineError("no header row", where=where)
        header, body = rows[0], [r for r in rows[1:] if r]
        cols: dict[str, list[Any]] = {h: [r[i] if i < len(r) else "" for r in body] for i, h in enumerate(header)}
        for c in list(cols):
            if c in _NUMERIC:
                cols[c] = [math.nan if v in ("", "nan", "None") and c == "measured_seconds" else v for v in cols[c]]
        meta["ops"] = cols
        return cls.from_dict(meta, where=where)


_META = ("title", "source", "bytes_model", "assumptions", "warnings", "unsupported", "info")


class WorkloadBuilder:
    """Collects ops row by row (for frontends), then builds the columnar Workload.

    Ops with the same (name, group, kind, shape-free figures) are *not* merged:
    merging is the frontend's choice via ``count``.
    """

    def __init__(self) -> None:
        self._rows: dict[str, list[Any]] = {c: [] for c in COLUMNS}
        self.unsupported: dict[str, UnsupportedOp] = {}
        self.warnings: list[str] = []
        self.assumptions: list[str] = []

    def add(self, name: str, **fields: Any) -> None:
        op = Op(name, **fields)
        self.add_op(op)

    def add_op(self, op: Op) -> None:
        for c in COLUMNS:
            self._rows[c].append(getattr(op, c))

    def add_unsupported(self, name: str, nbytes: float = 0.0) -> None:
        u = self.unsupported.get(name)
        self.unsupported[name] = UnsupportedOp(name, (u.count if u else 0) + 1, (u.bytes if u else 0.0) + nbytes)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def assume(self, message: str) -> None:
        if message not in self.assumptions:
            self.assumptions.append(message)

    def __len__(self) -> int:
        return len(self._rows["name"])

    def build(self, **meta: Any) -> Workload:
        meta.setdefault("warnings", list(self.warnings))
        meta.setdefault("assumptions", list(self.assumptions))
        meta.setdefault("unsupported", list(self.unsupported.values()))
        return Workload.from_columns(**self._rows, **meta)


def _encode(values: Sequence[str], seed: list[str]) -> tuple[list[str], np.ndarray]:
    """String table (``seed`` first, then new values in order of appearance) and int32 codes."""
    index = {v: i for i, v in enumerate(seed)}
    for v in dict.fromkeys(values):  # C-speed de-duplication, order kept
        index.setdefault(v, len(index))
    codes = np.fromiter(map(index.__getitem__, values), dtype=np.int32, count=len(values))
    return list(index), codes


def _float_column(raw: Any, c: str, where: str) -> np.ndarray:
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


def _check_numeric(arr: np.ndarray, c: str, where: str) -> None:
    if c == "measured_seconds":
        bad = ~(np.isnan(arr) | (np.isfinite(arr) & (arr > 0)))
        rule = "a finite number > 0 (or empty when not measured)"
    elif c == "count":
        bad = ~(np.isfinite(arr) & (arr > 0))
        rule = "a finite number > 0"
    else:
        bad = ~(np.isfinite(arr) & (arr >= 0))
        rule = "a finite number >= 0"
    if bad.any():
        i = int(np.argmax(bad))
        raise RooflineError(f"op {i}: {c} must be {rule}, got {arr[i]!r}", where=where)
