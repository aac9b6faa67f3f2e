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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from roofline.costs import KIND_UNIT
from roofline.device import UNITS
from roofline.errors import RooflineError
from roofline.precision import PRECISIONS
from roofline.stats import OpTimings, Timing

if TYPE_CHECKING:
    from roofline.llm.spec import LLMSpec

WORKLOAD_SCHEMA = "roofline.workload/2"
#: Older versions that still load (migrated on load, :func:`migrate`).
WORKLOAD_SCHEMAS_READ = ("roofline.workload/1", WORKLOAD_SCHEMA)
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

    @property
    def bytes(self) -> float:
        return self.bytes_read + self.bytes_written


#: Every op field's default (absent columns and fields take these).
_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(Op)}


@dataclass(frozen=True)
class UnsupportedOp:
    """An op the frontend has no FLOP formula for; its bytes are still counted."""

    name: str
    count: int
    bytes: float = 0.0


@dataclass(frozen=True)
class PhaseTotals:
    """One phase of an LLM run (prefill or decode), all steps together: FLOPs, bytes, weight bytes, steps, tokens."""

    flops: float
    bytes: float
    weight_bytes: float
    steps: float
    tokens: float

    def to_dict(self) -> dict[str, float]:
        return {k: float(getattr(self, k)) for k in _PHASE_FIELDS}

    @classmethod
    def from_dict(cls, d: Any, field: str, where: str) -> PhaseTotals:
        from roofline.fileio import as_number, as_object

        as_object(d, field, where)
        return cls(*(as_number(d.get(k), f"{field}.{k}", where, minimum=0.0) for k in _PHASE_FIELDS))


_PHASE_FIELDS = ("flops", "bytes", "weight_bytes", "steps", "tokens")


@dataclass(frozen=True)
class MeasuredRun:
    """How a measured workload was timed: the whole run (median, quartiles), where, how, and per-op quartiles."""

    timing: Timing
    device_type: str = "cpu"
    method: str = ""
    profiled_runs: int = 0
    sum_of_op_times: float = 0.0
    ops: OpTimings | None = None
    profiled_seconds: float = 0.0  # median wall time of one profiled run (0: not recorded)

    def to_dict(self) -> dict[str, Any]:
        return {**self.timing.to_dict(), "device_type": self.device_type, "method": self.method,
                "profiled_runs": self.profiled_runs, "sum_of_op_times": self.sum_of_op_times,
                "ops": None if self.ops is None else self.ops.to_dict(), "profiled_seconds": self.profiled_seconds}

    @classmethod
    def from_dict(cls, d: Any, n: int, where: str) -> MeasuredRun:
        """``measured`` of a workload of ``n`` ops, checked field by field."""
        from roofline.fileio import as_int, as_number, as_object, as_str

        as_object(d, "measured", where)
        ops = d.get("ops")
        return cls(Timing.from_dict(d, "measured", where),
                   as_str(d.get("device_type") or "cpu", "measured.device_type", where),
                   as_str(d.get("method") or "", "measured.method", where),
                   as_int(d.get("profiled_runs") or 0, "measured.profiled_runs", where, minimum=0),
                   as_number(d.get("sum_of_op_times") or 0.0, "measured.sum_of_op_times", where, minimum=0.0),
                   None if ops is None else OpTimings.from_dict(as_object(ops, "measured.ops", where), n,
                                                                "measured.ops", where),
                   as_number(d.get("profiled_seconds") or 0.0, "measured.profiled_seconds", where, minimum=0.0))


@dataclass(frozen=True)
class Unmatched:
    """Time in a profiler trace that no op holds: an event name, why, its calls and seconds."""

    name: str
    reason: str
    calls: int
    seconds: float


@dataclass(frozen=True)
class RankFigures:
    """One rank of a multi-rank trace: busy time, the time its ops and its collectives hold, its op count."""

    rank: int
    file: str
    seconds: float
    op_seconds: float
    collective_seconds: float
    ops: int


@dataclass(frozen=True)
class TraceRecord:
    """What a profiler trace held (:func:`roofline.from_trace`): its file, whether its times are kernel
    (``cuda``) or CPU op times, its profiler steps and events, the time the placed ops hold of all op
    (CPU) or kernel (GPU) time, what is in no op (most first), and, read with other ranks, every rank's
    figures and the slowest."""

    file: str
    device_type: str = "cpu"
    steps: int = 0
    events: int = 0
    op_seconds: float = 0.0
    trace_seconds: float = 0.0
    unmatched: tuple[Unmatched, ...] = ()
    rank: int | None = None
    ranks: tuple[RankFigures, ...] = ()
    slowest_rank: int | None = None

    @property
    def unmatched_share(self) -> float:
        """The share of the trace's time in no op."""
        return max(0.0, 1 - self.op_seconds / self.trace_seconds) if self.trace_seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "device_type": self.device_type, "steps": self.steps, "events": self.events,
                "op_seconds": self.op_seconds, "trace_seconds": self.trace_seconds,
                "unmatched": [vars(u) for u in self.unmatched], "rank": self.rank,
                "ranks": [vars(r) for r in self.ranks], "slowest_rank": self.slowest_rank}

    @classmethod
    def from_dict(cls, d: Any, where: str) -> TraceRecord:
        from roofline.fileio import as_int, as_list, as_number, as_object, as_str

        as_object(d, "trace", where)

        def num(o: Mapping[str, Any], k: str, f: str) -> float:
            return as_number(o.get(k, 0.0), f"{f}.{k}", where, minimum=0.0)

        def opt_int(v: Any, f: str) -> int | None:
            return None if v is None else as_int(v, f, where)

        unmatched = []
        for i, u in enumerate(as_list(d.get("unmatched", []), "trace.unmatched", where)):
            f = f"trace.unmatched[{i}]"
            as_object(u, f, where)
            unmatched.append(Unmatched(as_str(u.get("name", ""), f"{f}.name", where),
                                       as_str(u.get("reason", ""), f"{f}.reason", where),
                                       as_int(u.get("calls", 0), f"{f}.calls", where), num(u, "seconds", f)))
        ranks = []
        for i, r in enumerate(as_list(d.get("ranks", []), "trace.ranks", where)):
            f = f"trace.ranks[{i}]"
            as_object(r, f, where)
            ranks.append(RankFigures(as_int(r.get("rank"), f"{f}.rank", where), as_str(r.get("file", ""), f"{f}.file", where),
                                     num(r, "seconds", f), num(r, "op_seconds", f), num(r, "collective_seconds", f),
                                     as_int(r.get("ops", 0), f"{f}.ops", where)))
        device_type = as_str(d.get("device_type", "cpu"), "trace.device_type", where)
        if device_type not in ("cpu", "cuda"):
            raise RooflineError(f"trace.device_type: expected 'cpu' or 'cuda', got {device_type!r}", where=where)
        return cls(as_str(d.get("file", ""), "trace.file", where), device_type,
                   as_int(d.get("steps", 0), "trace.steps", where), as_int(d.get("events", 0), "trace.events", where),
                   num(d, "op_seconds", "trace"), num(d, "trace_seconds", "trace"), tuple(unmatched),
                   opt_int(d.get("rank"), "trace.rank"), tuple(ranks), opt_int(d.get("slowest_rank"), "trace.slowest_rank"))


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
    llm: LLMSpec | None = None
    phases: Mapping[str, PhaseTotals] = field(default_factory=dict)
    measured: MeasuredRun | None = None
    trace: TraceRecord | None = None

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
                arr = np.full(n, _DEFAULTS[c]) if raw is None else _float_column(raw, c, where)
                _check_numeric(arr, c, where)
                columns[c] = arr
            else:
                default = _DEFAULTS[c]
                values: list[str]
                if raw is None:
                    values = [default] * n
                elif isinstance(raw, list) and set(map(type, raw)) == {str}:  # the common case: one C-speed scan
                    values = raw
                else:
                    values = [v if type(v) is str else default if v is None else str(v) for v in raw]
                if c == "unit":
                    values = _units_by_kind(values, tables["kind"], columns["kind"])
                if c in _ENUMS:
                    allowed = _ENUMS[c]
                    bad = set(values) - set(allowed)
                    if bad:
                        v = sorted(bad)[0]
                        i = values.index(v)
                        raise RooflineError(f"op {i} ({_shown(cols['name'][i])}): {c} {_shown(v)} is not one of "
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
        values: dict[str, Any] = {c: (self.strings(c, i) if c not in _NUMERIC else float(self.columns[c][i]))
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
        from roofline.text import one_line
        from roofline.units import format_bytes, format_flop

        n = len(self)
        extra = ", measured" if self.has_measurements else ""
        extra += f", {len(self.unsupported)} unsupported op type(s)" if self.unsupported else ""
        return (f"<Workload '{one_line(self.title, _REPR_NAME)}': {n:,} op{'' if n == 1 else 's'}, "
                f"{format_flop(self.total_flops)}, {format_bytes(self.total_bytes)}{extra}>")

    def _repr_html_(self) -> str:
        """Jupyter: a small table (totals, ops by kind, what produced them); a few hundred bytes whatever the size."""
        from html import escape

        from roofline.text import for_html
        from roofline.units import format_bytes, format_flop

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
                "info": self.info, "llm": None if self.llm is None else self.llm.to_dict(),
                "phases": {k: v.to_dict() for k, v in self.phases.items()},
                "measured": None if self.measured is None else self.measured.to_dict(),
                "trace": None if self.trace is None else self.trace.to_dict(), "ops": ops}

    @classmethod
    def from_dict(cls, d: Any, *, where: str = "workload") -> Workload:
        """Validate a ``roofline.workload/2`` object (or an older version, migrated) field by field and build it.

        ``ops`` is a list of op objects or an object of columns (lists).  Required per op: name,
        flops, bytes_read and bytes_written (or ``bytes``, taken as reads); every other field is
        optional, op by op: absent or null means its default (count 1, not measured, 0 bytes, ...).
        """
        from roofline.fileio import as_list, shown, wrong

        if not isinstance(d, Mapping):
            raise RooflineError(f"expected a JSON object, got {_json_kind(d)}", where=where)
        schema = d.get("schema")
        if schema not in WORKLOAD_SCHEMAS_READ:
            raise RooflineError(f"schema: expected {WORKLOAD_SCHEMA!r} (or an older {', '.join(WORKLOAD_SCHEMAS_READ[:-1])}"
                                f"), got {shown(schema)}", where=where)
        llm_field = "llm" if schema == WORKLOAD_SCHEMA else "info.llm"
        d = migrate(d, where)
        if "ops" not in d:
            raise RooflineError("missing field 'ops'", where=where)
        meta = _json_meta(d, where, llm_field)  # the document top-down: metadata, then ops
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
                raise RooflineError(f"{label(c, i)}: unknown field {_shown(c)}; known: {', '.join(COLUMNS)}",
                                    where=where)
        has_bytes = "bytes" in cols and "bytes_read" not in cols
        missing = [c for c in _REQUIRED if c not in cols and not (has_bytes and c in ("bytes_read", "bytes_written"))]
        if missing:
            raise RooflineError(f"ops: missing column(s) {', '.join(missing)}; required: {', '.join(_REQUIRED)}",
                                where=where)
        checked: dict[str, Any] = {}
        for c, values in cols.items():
            if c in _STRINGS or c in _ENUMS:
                checked[c] = _json_strings(values, c, where, label)
            else:
                checked[c] = _json_numbers(values, c, where, label)
        return cls.from_columns(where=where, **meta, **checked)

    def save(self, path: str | Path) -> None:
        from roofline.fileio import write_text_atomic

        write_text_atomic(path, json.dumps(self.to_dict()) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Workload:
        """A workload from JSON (``roofline.workload/2``; /1 is migrated) or CSV (by extension)."""
        from roofline.fileio import read_json, shown_path

        if str(path).lower().endswith(".csv"):
            return cls.from_csv(path)
        return cls.from_dict(read_json(path), where=shown_path(path))

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
        """A workload from CSV: a header row of op fields, one op per row; an optional first line
        ``# {...}`` holds the metadata as JSON.  An empty cell means the field's default."""
        from roofline.fileio import parse_json, read_text, shown_path

        where = shown_path(path)
        text = read_text(path)
        meta: Any = {}
        first = 1
        if text.startswith("#"):
            head, _, text = text.partition("\n")
            meta = parse_json(head[1:], f"{where}: line 1 (metadata comment)")
            if not isinstance(meta, dict):
                raise RooflineError(f"line 1: the metadata comment must be a JSON object, got {_json_kind(meta)}",
                                    where=where)
            first = 2
        checked_meta = _json_meta(meta, where)
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
        header = rows[0][1]
        unknown = [h for h in header if h not in COLUMNS and h != "bytes"]
        if unknown:
            raise RooflineError(f"header: unknown column {_shown(unknown[0])}; known: {', '.join(COLUMNS)}", where=where)
        for h in header:
            if header.count(h) > 1:
                raise RooflineError(f"header: column {h!r} given twice", where=where)
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
            if h in _NUMERIC or h == "bytes" or (h in _ENUMS):
                # an empty cell is the field's default; "nan"/"None" also mean 'not measured'
                empty = ("", "nan", "None", "NaN") if h == "measured_seconds" else ("",)
                cells = [None if v.strip() in empty else v for v in cells]
            if h in _NUMERIC or h == "bytes":
                cells = _csv_numbers(cells, h, where, lines)
            cols[h] = cells
        return cls._from_checked(checked_meta, cols, where, lambda c, i: f"line {lines[i]}: {c}")


#: Ranges of op figures (per run): beyond them a product or sum in the analysis could overflow to inf.
MAX_FIGURE = 1e30  # FLOPs or bytes of one run of one op
MAX_COUNT = 1e15
MIN_SECONDS, MAX_SECONDS = 1e-15, 1e9
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
            self._rows[c].append(fields.get(c, _DEFAULTS[c]))

    def extend(self, **columns: Any) -> None:
        """Append whole columns at once (sequences or arrays of one length; absent columns get defaults)."""
        n = len(columns["name"])
        for c in COLUMNS:
            self._rows[c].extend(columns[c] if c in columns else [_DEFAULTS[c]] * n)

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


def _check_numeric(arr: np.ndarray, c: str, where: str, label: Callable[[str, int], str] | None = None) -> None:
    """Every value of column ``c`` finite and in its range (the ranges keep every product and sum in
    the analysis finite: no FLOP or byte figure above 1e30, no count above 1e15)."""
    if c == "measured_seconds":
        bad = ~(np.isnan(arr) | ((arr >= MIN_SECONDS) & (arr <= MAX_SECONDS)))
        rule = f"a finite number > 0 from {MIN_SECONDS:g} to {MAX_SECONDS:g} (or empty when not measured)"
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


_REQUIRED = ("name", "flops", "bytes_read", "bytes_written")


def _json_kind(value: Any) -> str:
    from roofline.fileio import json_type

    return json_type(value)


def _json_numbers(values: list[Any], c: str, where: str, label: Callable[[str, int], str]) -> np.ndarray:
    """A numeric op field: JSON numbers only (not true/false, not strings); null/absent -> the default.

    The common case (all ints and floats) is one C-speed type scan and one array conversion.
    """
    from roofline.fileio import wrong

    required = c in _REQUIRED or c == "bytes"
    default = _DEFAULTS.get(c, 0.0)
    types = set(map(type, values))
    if types <= {int, float, type(None)} and not (required and type(None) in types):
        try:
            arr = np.asarray(values, dtype=np.float64)  # None -> nan
        except OverflowError:  # an integer beyond float range: found below
            pass
        else:
            if type(None) in types and not math.isnan(default):
                arr[[v is None for v in values]] = default
            _check_numeric(arr, c, where, label)
            return arr
    out = np.empty(len(values))
    for i, v in enumerate(values):
        if v is None:
            if required:
                raise RooflineError(f"{label(c, i)}: missing (required: {', '.join(_REQUIRED)})", where=where)
            out[i] = default
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise wrong(label(c, i), "a number", v, where)
        try:
            out[i] = float(v)
        except OverflowError:
            raise wrong(label(c, i), "a finite number", v, where, "too large") from None
    _check_numeric(out, c, where, label)
    return out


def _csv_numbers(cells: list[str | None], c: str, where: str, lines: list[int]) -> list[float | None]:
    """CSV cells (text) to numbers; None (empty) stays None for the default."""
    from roofline.fileio import shown

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


def _json_strings(values: list[Any], c: str, where: str, label: Callable[[str, int], str]) -> list[Any]:
    """A text op field: JSON strings only; null/absent -> the default (the name is required)."""
    from roofline.fileio import shown, wrong

    if not set(map(type, values)) <= {str}:
        for i, v in enumerate(values):
            if v is None:
                if c == "name":
                    raise RooflineError(f"{label(c, i)}: missing (required: {', '.join(_REQUIRED)})", where=where)
            elif type(v) is not str:
                raise wrong(label(c, i), "a string", v, where)
    allowed = _ENUMS.get(c)
    if allowed is not None:
        bad = set(values) - set(allowed) - {None}
        if bad:
            i = next(i for i, v in enumerate(values) if v in bad)
            raise RooflineError(f"{label(c, i)} {shown(values[i])} is not one of "
                                f"{', '.join(repr(a) for a in allowed)}", where=where)
    return values


def _json_meta(d: Mapping[str, Any], where: str, llm_field: str = "llm") -> dict[str, Any]:
    """The workload's metadata fields, each type-checked; absent or null -> the default.

    ``llm_field`` names the LLM run in messages as the file spells it (``info.llm`` in a /1 file).
    """
    from roofline.fileio import as_int, as_list, as_number, as_object, as_str, as_str_list

    def get(key: str, default: Any) -> Any:
        v = d.get(key)
        return default if v is None else v

    unsupported = []
    for i, u in enumerate(as_list(get("unsupported", []), "unsupported", where)):
        f = f"unsupported[{i}]"
        as_object(u, f, where)
        if "name" not in u:
            raise RooflineError(f"{f}: missing field 'name'", where=where)
        unsupported.append(UnsupportedOp(
            as_str(u["name"], f"{f}.name", where),
            as_int(u["count"] if u.get("count") is not None else 1, f"{f}.count", where, minimum=1),
            as_number(u["bytes"] if u.get("bytes") is not None else 0.0, f"{f}.bytes", where, minimum=0.0)))
    return {"title": as_str(get("title", "workload"), "title", where),
            "source": as_str(get("source", ""), "source", where),
            "bytes_model": as_str(get("bytes_model", UNFUSED), "bytes_model", where),
            "assumptions": as_str_list(get("assumptions", []), "assumptions", where),
            "warnings": as_str_list(get("warnings", []), "warnings", where),
            "unsupported": unsupported,
            "info": dict(as_object(get("info", {}), "info", where)),
            "llm": _read_field("llm", d.get("llm"), where, llm_field),
            "phases": {as_str(k, "phases", where): PhaseTotals.from_dict(v, f"phases.{k}", where)
                       for k, v in as_object(get("phases", {}), "phases", where).items()},
            "trace": None if d.get("trace") is None else TraceRecord.from_dict(d["trace"], where)}


def migrate(d: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """A workload object of an older schema, rewritten as the current one (as pyperf upgrades its JSON).

    /1 -> /2: the facts kept in ``info`` (``llm``, ``phases``, ``measured``) become top-level typed fields;
    /1 stored a measured run's 10th/90th percentiles, which become its spread (wider than the
    interquartile range /2 stores, so an op is flagged above its roof later rather than sooner).
    """
    if d.get("schema") == WORKLOAD_SCHEMA:
        return d
    from roofline.fileio import as_object

    out = dict(d)
    info = dict(as_object(d.get("info") if d.get("info") is not None else {}, "info", where))
    for key in ("llm", "phases"):
        if key in info:
            out[key] = info.pop(key)
    m = info.pop("measured", None)
    if isinstance(m, Mapping):
        m = {**m, **_spread_v1(m, "info.measured", where)}
        if isinstance(m.get("ops"), Mapping):
            m["ops"] = {**m["ops"], **_spread_v1(m["ops"], "info.measured.ops", where)}
    out["measured"] = m
    if "llm" in out:
        info.pop("memory_bytes", None)  # derived from the LLM run since /2 (roofline.llm.sizes.memory_bytes)
    out["info"], out["schema"] = info, WORKLOAD_SCHEMA
    return out


def _spread_v1(m: Mapping[str, Any], field: str, where: str) -> dict[str, Any]:
    """A /1 measured block's 10th/90th percentiles as the /2 spread (q1, q3); a missing one named as /1 names it."""
    for key in ("p10", "p90"):
        if key not in m:
            raise RooflineError(f"{field}: missing field {key!r}", where=where)
    return {"q1": m["p10"], "q3": m["p90"]}


#: Readers of the typed facts that a higher layer attaches to a workload, by field: ``llm`` (the run an LLM
#: workload models) is read by the LLM model, :func:`roofline.llm.spec.read_spec`.  Each takes (the JSON value,
#: where, the field as the file names it: ``info.llm`` in a /1 file) and returns the fact.  The layer that owns a
#: fact registers its reader (:func:`register_field_reader`; the root package does it for ``llm``), so a
#: workload reads its files without knowing what the facts are.
_FIELD_READERS: dict[str, Callable[[Any, str, str], Any]] = {}


def register_field_reader(field: str, reader: Callable[[Any, str, str], Any]) -> None:
    """Read the workload file's ``field`` (a typed fact, e.g. ``llm``) with ``reader(value, where, field)``."""
    _FIELD_READERS[field] = reader


def _read_field(key: str, raw: Any, where: str, field: str) -> Any:
    """A registered typed fact from its JSON value; absent or null is None."""
    return None if raw is None else _FIELD_READERS[key](raw, where, field)


def _units_by_kind(units: list[str], kinds: list[str], kind_codes: np.ndarray) -> list[str]:
    """Each op's unit; an empty one is its kind's (:data:`roofline.costs.KIND_UNIT`: matmul, conv and attention
    run on the matrix unit, everything else on the vector unit)."""
    if "" not in units:
        return units
    by_kind = np.asarray([KIND_UNIT.get(k, "vector") for k in kinds], dtype=object)[kind_codes]
    out = np.asarray(units, dtype=object)
    empty = out == ""
    out[empty] = by_kind[empty]
    return list(out.tolist())


def _shown(value: Any) -> str:
    from roofline.fileio import shown

    return shown(value)
