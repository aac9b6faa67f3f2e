"""The typed facts a workload carries beside its ops, and the metadata of a workload file.

Ops the frontend could not count (:class:`UnsupportedOp`), per-phase totals (:class:`PhaseTotals`), how a
measured workload was timed (:class:`MeasuredRun`), what a profiler trace held (:class:`TraceRecord`);
the file's metadata fields read and type-checked (:func:`json_meta`), older schemas migrated
(:func:`migrate`), and the readers of facts a higher layer owns (``llm``: :func:`register_field_reader`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from roofline.core.errors import RooflineError
from roofline.core.stats import OpTimings, Timing
from roofline.work.workload_columns import UNFUSED

WORKLOAD_SCHEMA = "roofline.workload/3"
#: Older versions that still load (migrated on load, :func:`migrate`).
WORKLOAD_SCHEMAS_READ = ("roofline.workload/1", "roofline.workload/2", WORKLOAD_SCHEMA)



class LLMRun(Protocol):
    """The LLM run a workload models (its ``llm`` field), as the work and engine layers read it: the
    tensor-parallel degree (the collectives' group) and its file form.  :class:`roofline.llm.spec.LLMSpec` is
    one; the LLM model sits above this layer, and reads its own run back with :func:`roofline.llm.spec.as_spec`."""

    @property
    def tp(self) -> int: ...

    def to_dict(self) -> dict[str, Any]: ...


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
        from roofline.core.fileio import as_number, as_object

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
        from roofline.core.fileio import as_int, as_number, as_object, as_str

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
        from roofline.core.fileio import as_int, as_list, as_number, as_object, as_str

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


def json_meta(d: Mapping[str, Any], where: str, llm_field: str = "llm") -> dict[str, Any]:
    """The workload's metadata fields, each type-checked; absent or null -> the default.

    ``llm_field`` names the LLM run in messages as the file spells it (``info.llm`` in a /1 file).
    """
    from roofline.core.fileio import as_int, as_list, as_number, as_object, as_str, as_str_list

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

    /2 -> /3: ops gain the optional GEMM dimensions ``m, n, k, batch``; a /2 file has none (not known),
    so only the schema tag changes.
    """
    if d.get("schema") == WORKLOAD_SCHEMA:
        return d
    if d.get("schema") == "roofline.workload/2":
        return {**d, "schema": WORKLOAD_SCHEMA}
    from roofline.core.fileio import as_object

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
