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
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError
from roofline.core.fileio import shown
from roofline.work.workload_columns import (
    COLUMNS,
    DEFAULTS,
    ENUMS,
    GEMM_DIMS,
    NUMERIC,
    REQUIRED,
    STRINGS,
    UNFUSED,
    Op,
    check_numeric,
    csv_numbers,
    encode,
    finite_or_null,
    float_column,
    json_kind,
    json_strings,
    read_json_numbers,
    units_by_kind,
)
from roofline.work.workload_facts import (
    WORKLOAD_SCHEMA,
    WORKLOAD_SCHEMAS_READ,
    LLMRun,
    MeasuredRun,
    PhaseTotals,
    TraceRecord,
    UnsupportedOp,
    json_meta,
    migrate,
)


def _no_empty_count(body: list[tuple[int, list[str]]], j: int, lines: list[int], where: str) -> None:
    """A count cell written empty is a fault, not a count of 1 (a short row's missing cells are defaults)."""
    hole = next((k for k, (_, r) in enumerate(body) if j < len(r) and not r[j].strip()), None)
    if hole is not None:
        raise RooflineError(f"line {lines[hole]}: count is empty (give a whole number, or drop the column for a "
                            "count of 1)", where=where)


@dataclass
class Workload:
    """Ops stored column-wise, plus what produced them.

    Build with :meth:`from_ops`, :meth:`from_columns` or a :class:`WorkloadBuilder`.
    Typed facts read back by the analysis and the reports: ``llm`` (the run an LLM
    workload models), ``phases`` (its per-phase totals), ``measured`` (how it was
    timed), ``trace`` (what the profiler trace it was read from held).  ``info`` holds facts for display only (parameter counts, sizes, ...).
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
    llm: LLMRun | None = None
    phases: Mapping[str, PhaseTotals] = field(default_factory=dict)
    measured: MeasuredRun | None = None
    trace: TraceRecord | None = None

    # -- construction ------------------------------------------------------
    @classmethod
    def from_ops(cls, ops: Iterable[Op], **meta: Any) -> Workload:
        from roofline.core import arguments as arg

        if isinstance(ops, (str, bytes, Mapping)) or not hasattr(ops, "__iter__"):
            raise arg.type_error("Workload.from_ops", "ops", "an iterable of Op", ops)
        b = WorkloadBuilder()
        for i, op in enumerate(ops):
            b.add_op(arg.need(op, Op, "Workload.from_ops", f"ops[{i}]", "an Op"))
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
            if c in NUMERIC:
                arr = np.full(n, DEFAULTS[c]) if raw is None else float_column(raw, c, where)
                check_numeric(arr, c, where)
                columns[c] = arr
            else:
                default = DEFAULTS[c]
                values: list[str]
                if raw is None:
                    values = [default] * n
                elif isinstance(raw, list) and set(map(type, raw)) == {str}:  # the common case: one C-speed scan
                    values = raw
                else:
                    values = [v if type(v) is str else default if v is None else str(v) for v in raw]
                if c == "unit":
                    values = units_by_kind(values, tables["kind"], columns["kind"])
                if c in ENUMS:
                    allowed = ENUMS[c]
                    bad = set(values) - set(allowed)
                    if bad:
                        v = sorted(bad)[0]
                        i = values.index(v)
                        raise RooflineError(f"op {i} ({shown(cols['name'][i])}): {c} {shown(v)} is not one of "
                                            f"{', '.join(repr(a) for a in allowed)}", where=where)
                table, codes = encode(values, list(ENUMS.get(c, ())))
                tables[c] = table
                columns[c] = codes
        return cls(columns, tables, **meta)

    # -- access ------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.columns["flops"])

    def column(self, name: str) -> np.ndarray:
        """A numeric column, or a string column decoded to an object array."""
        if name in NUMERIC:
            return self.columns[name]
        return np.asarray(self.tables[name], dtype=object)[self.columns[name]]

    def strings(self, name: str, i: int) -> str:
        return self.tables[name][int(self.columns[name][i])]

    def op(self, i: int) -> Op:
        values: dict[str, Any] = {c: (self.strings(c, i) if c not in NUMERIC else float(self.columns[c][i]))
                                  for c in COLUMNS}
        return Op(**values)

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
        cols: dict[str, Any] = {c: self.column(c) for c in COLUMNS}
        meta = self.meta()
        for k, v in changes.items():
            (meta if k in _META else cols)[k] = v
        return Workload.from_columns(**cols, **meta)

    def select(self, mask: np.ndarray) -> Workload:
        """The ops where ``mask`` is true (metadata kept)."""
        cols = {c: self.column(c)[mask] for c in COLUMNS}
        return Workload.from_columns(**cols, **self.meta())

    # -- display -----------------------------------------------------------
    def __repr__(self) -> str:
        """One line: ``<Workload 'resnet50': 161 ops, 8.2 GFLOP, 102 MB>`` (FLOPs and bytes x count).

        >>> Workload.from_ops([Op("app", flops=8e8, bytes_read=4e9)], title="seed")
        <Workload 'seed': 1 op, 800 MFLOP, 4 GB>
        """
        from roofline.core.text import one_line
        from roofline.core.units import format_bytes, format_flop

        n = len(self)
        extra = ", measured" if self.has_measurements else ""
        extra += f", {len(self.unsupported)} unsupported op type(s)" if self.unsupported else ""
        return (f"<Workload '{one_line(self.title, _REPR_NAME)}': {n:,} op{'' if n == 1 else 's'}, "
                f"{format_flop(self.total_flops)}, {format_bytes(self.total_bytes)}{extra}>")

    def _repr_html_(self) -> str:
        """Jupyter: a small table (totals, ops by kind, what produced them); a few hundred bytes whatever the size."""
        from html import escape

        from roofline.core.text import for_html
        from roofline.core.units import format_bytes, format_flop

        flops, nbytes = self.total_flops, self.total_bytes
        kinds = np.bincount(self.columns["kind"], weights=self.columns["flops"] * self.columns["count"],
                            minlength=len(self.tables["kind"]))
        counts = np.bincount(self.columns["kind"], minlength=len(self.tables["kind"]))
        by_kind = ", ".join(f"{self.tables['kind'][k]} {int(counts[k]):,}" for k in np.argsort(-kinds, kind="stable")
                            if counts[k])
        rows = [("ops", f"{len(self):,}"), ("by kind", f"{by_kind} (most FLOPs first)"), ("FLOPs", format_flop(flops)),
                ("bytes", format_bytes(nbytes)),
                ("intensity", f"{flops / nbytes:.3g} FLOP/B" if nbytes > 0 else "-"),
                ("bytes model", self.bytes_model)]
        if self.source:
            rows.append(("source", self.source))
        if self.has_measurements:
            rows.append(("measured", f"{int(np.isfinite(self.columns['measured_seconds']).sum()):,} ops"))
        if self.unsupported:
            rows.append(("unsupported", f"{len(self.unsupported)} op type(s), 0 FLOPs counted"))
        if self.warnings:
            rows.append(("warnings", f"{len(self.warnings)}"))
        body = "".join(f"<tr><th style='text-align:left'>{escape(k)}</th><td style='text-align:left'>"
                       f"{for_html(v)}</td></tr>" for k, v in rows)
        return f"<table><caption>Workload {for_html(self.title, _REPR_NAME)}</caption>{body}</table>"

    # -- (de)serialisation -------------------------------------------------
    def to_dict(self, lazy: bool = False) -> dict[str, Any]:
        """The ``roofline.work.workload`` object; ``lazy``: long numeric columns as
        :class:`~roofline.work.workload_columns.JsonNumbers` (for :func:`roofline.render.dumps_bytes`)."""
        ops = {}
        for c in self._written_columns():
            if c in NUMERIC:
                ops[c] = finite_or_null(self.columns[c], lazy)
            else:
                ops[c] = self.column(c).tolist()
        return {"schema": WORKLOAD_SCHEMA, "title": self.title, "source": self.source,
                "bytes_model": self.bytes_model, "assumptions": list(self.assumptions),
                "warnings": list(self.warnings),
                "unsupported": [{"name": u.name, "count": u.count, "bytes": u.bytes} for u in self.unsupported],
                "info": self.info, "llm": None if self.llm is None else self.llm.to_dict(),
                "phases": {k: v.to_dict() for k, v in self.phases.items()},
                "measured": None if self.measured is None else self.measured.to_dict(),
                "trace": None if self.trace is None else self.trace.to_dict(), "ops": ops}

    def _written_columns(self) -> tuple[str, ...]:
        """The columns a file holds: every one but GEMM dimensions no op knows (files without matmuls stay as
        they were)."""
        unknown = {c for c in GEMM_DIMS if not np.isfinite(self.columns[c]).any()}
        return tuple(c for c in COLUMNS if c not in unknown)

    @classmethod
    def from_dict(cls, d: Any, *, where: str = "workload") -> Workload:
        """Validate a ``roofline.workload/3`` object (or an older version, migrated) field by field and build it.

        ``ops`` is a list of op objects or an object of columns (lists).  Required per op: name,
        flops, bytes_read and bytes_written (or ``bytes``, taken as reads); every other field is
        optional, op by op: absent or null means its default (count 1, not measured, 0 bytes, ...).
        """
        from roofline.core.fileio import as_list, shown, wrong

        if not isinstance(d, Mapping):
            raise RooflineError(f"expected a JSON object, got {json_kind(d)}", where=where)
        schema = d.get("schema")
        if schema not in WORKLOAD_SCHEMAS_READ:
            raise RooflineError(f"schema: expected {WORKLOAD_SCHEMA!r} (or an older {', '.join(WORKLOAD_SCHEMAS_READ[:-1])}"
                                f"), got {shown(schema)}", where=where)
        llm_field = "info.llm" if schema == "roofline.workload/1" else "llm"
        d = migrate(d, where)
        if "ops" not in d:
            raise RooflineError("missing field 'ops'", where=where)
        meta = json_meta(d, where, llm_field)  # the document top-down: metadata, then ops
        ops = d["ops"]
        if isinstance(ops, list):  # a list of op objects
            if not ops:
                raise RooflineError("ops: the op list is empty", where=where)
            for i, o in enumerate(ops):
                if not isinstance(o, Mapping):
                    raise wrong(f"ops[{i}]", "an op object", o, where)
            keys = dict.fromkeys(k for o in ops for k in o)
            cols = {k: [o.get(k) for o in ops] for k in keys}

            def label(c: str, i: int) -> str:
                return f"ops[{i}].{c}"
        elif isinstance(ops, Mapping):  # an object of columns
            cols = {k: as_list(v, f"ops.{k}", where) for k, v in ops.items()}

            def label(c: str, i: int) -> str:
                return f"ops.{c}[{i}]"
        else:
            raise wrong("ops", "a list of op objects or an object of columns", ops, where)
        w = cls._from_checked(meta, cols, where, label)
        if d.get("measured") is not None:  # its per-op columns need the op count
            w = replace(w, measured=MeasuredRun.from_dict(d["measured"], len(w), where))
        return w

    @classmethod
    def _from_checked(cls, meta: dict[str, Any], cols: dict[str, list[Any]], where: str,
                      label: Callable[[str, int], str]) -> Workload:
        """Type-check every op column (``label(column, i)`` names a value), then build with checked ``meta``."""

        for c in cols:
            if c not in COLUMNS and c != "bytes":
                i = next((i for i, v in enumerate(cols[c]) if v is not None), 0)
                raise RooflineError(f"{label(c, i)}: unknown field {shown(c)}; known: {', '.join(COLUMNS)}",
                                    where=where)
        has_bytes = "bytes" in cols and "bytes_read" not in cols
        missing = [c for c in REQUIRED if c not in cols and not (has_bytes and c in ("bytes_read", "bytes_written"))]
        if missing:
            raise RooflineError(f"ops: missing column(s) {', '.join(missing)}; required: {', '.join(REQUIRED)}",
                                where=where)
        checked: dict[str, Any] = {}
        for c, values in cols.items():
            if c in STRINGS or c in ENUMS:
                checked[c] = json_strings(values, c, where, label)
            else:
                checked[c] = read_json_numbers(values, c, where, label)
        return cls.from_columns(where=where, **meta, **checked)

    def save(self, path: str | Path) -> None:
        from roofline.core.fileio import write_text_atomic

        write_text_atomic(path, json.dumps(self.to_dict()) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Workload:
        """A workload from JSON (``roofline.workload/3``; /1 and /2 are migrated) or CSV (by extension)."""
        from roofline.core.fileio import read_json
        from roofline.core.text import shown_path

        if str(path).lower().endswith(".csv"):
            return cls.from_csv(path)
        return cls.from_dict(read_json(path), where=shown_path(path))

    def to_csv(self) -> str:
        """CSV of the op columns; the first line is a comment holding the metadata."""
        buf = io.StringIO()
        meta = {k: v for k, v in self.to_dict().items() if k != "ops"}
        buf.write("# " + json.dumps(meta) + "\n")
        w = csv.writer(buf, lineterminator="\n")
        written = self._written_columns()
        w.writerow(written)
        cols = [self.column(c).tolist() for c in written]
        for row in zip(*cols, strict=True):
            w.writerow(["" if isinstance(v, float) and math.isnan(v) and c in GEMM_DIMS
                        else repr(v) if isinstance(v, float) else v for c, v in zip(written, row, strict=True)])
        return buf.getvalue()

    def save_csv(self, path: str | Path) -> None:
        from roofline.core.fileio import write_text_atomic

        write_text_atomic(path, self.to_csv())

    @classmethod
    def from_csv(cls, path: str | Path) -> Workload:
        """A workload from CSV: a header row of op fields, one op per row; an optional first line
        ``# {...}`` holds the metadata as JSON.  An empty cell means the field's default."""
        from roofline.core.fileio import parse_json, read_text
        from roofline.core.text import shown_path

        where = shown_path(path)
        text = read_text(path)
        meta: Any = {}
        first = 1
        if text.startswith("#"):
            head, _, text = text.partition("\n")
            meta = parse_json(head[1:], f"{where}: line 1 (metadata comment)")
            if not isinstance(meta, dict):
                raise RooflineError(f"line 1: the metadata comment must be a JSON object, got {json_kind(meta)}",
                                    where=where)
            if meta.get("schema") is not None and meta["schema"] not in WORKLOAD_SCHEMAS_READ:
                raise RooflineError(f"line 1: schema: expected {WORKLOAD_SCHEMA!r} (or an older "
                                    f"{', '.join(WORKLOAD_SCHEMAS_READ[:-1])}), got {shown(meta['schema'])}",
                                    where=where)
            first = 2
        checked_meta = json_meta(meta, where)
        reader = csv.reader(io.StringIO(text, newline=""))
        rows: list[tuple[int, list[str]]] = []
        try:
            for row in reader:
                if row:
                    rows.append((reader.line_num + first - 1, row))
        except csv.Error as exc:
            raise RooflineError(f"line {reader.line_num + first - 1}: not valid CSV: {exc}", where=where) from None
        if not rows:
            raise RooflineError("no header row", where=where)
        header = _csv_header(rows[0][1], where)
        body = rows[1:]
        if not body:
            raise RooflineError("no op rows below the header", where=where)
        for n, r in body:
            if len(r) > len(header):
                raise RooflineError(f"line {n}: {len(r)} cells, the header has {len(header)} (quote a name with a comma)",
                                    where=where)
        lines = [n for n, _ in body]
        cols: dict[str, list[Any]] = {}
        for j, h in enumerate(header):
            cells: list[Any] = [r[j] if j < len(r) else "" for _, r in body]
            if h in NUMERIC or h == "bytes" or (h in ENUMS):
                # an empty cell is the field's default; "nan"/"None" also mean 'not measured'
                empty = ("", "nan", "None", "NaN") if h == "measured_seconds" else ("",)
                cells = [None if v.strip() in empty else v for v in cells]
                if h == "count":
                    _no_empty_count(body, j, lines, where)
            if h in NUMERIC or h == "bytes":
                cells = csv_numbers(cells, h, where, lines)
            cols[h] = cells
        return cls._from_checked(checked_meta, cols, where, lambda c, i: f"line {lines[i]}: {c}")


def _csv_header(header: list[str], where: str) -> list[str]:
    """A workload CSV's header row, checked: known columns (and 'bytes'), each once."""
    unknown = [h for h in header if h not in COLUMNS and h != "bytes"]
    if unknown:
        raise RooflineError(f"header: unknown column {shown(unknown[0])}; known: {', '.join(COLUMNS)}", where=where)
    for h in header:
        if header.count(h) > 1:
            raise RooflineError(f"header: column {h!r} given twice", where=where)
    return header


#: names (titles, devices) in a repr are cut to this many characters, so every repr stays short
_REPR_NAME = 80
_META = ("title", "source", "bytes_model", "assumptions", "warnings", "unsupported", "info", "llm", "phases",
         "measured", "trace")



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

    def row(self, name: str, **fields: Any) -> None:
        """Append one op without building an :class:`Op` (the fast path for tracers); checked at :meth:`build`."""
        self._rows["name"].append(name)
        for c in COLUMNS[1:]:
            self._rows[c].append(fields.get(c, DEFAULTS[c]))

    def extend(self, **columns: Any) -> None:
        """Append whole columns at once (sequences or arrays of one length; absent columns get defaults)."""
        n = len(columns["name"])
        for c in COLUMNS:
            self._rows[c].extend(columns[c] if c in columns else [DEFAULTS[c]] * n)

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

    def column(self, name: str) -> list[Any]:
        """The values added so far of one column (read-only use)."""
        return self._rows[name]

    def build(self, **meta: Any) -> Workload:
        meta.setdefault("warnings", list(self.warnings))
        meta.setdefault("assumptions", list(self.assumptions))
        meta.setdefault("unsupported", list(self.unsupported.values()))
        columns: dict[str, Any] = self._rows
        return Workload.from_columns(**columns, **meta)
