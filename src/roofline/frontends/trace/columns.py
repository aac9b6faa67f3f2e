"""The kept events of a trace, column-wise, and the rules that keep them (one place for every reader route).

:class:`Columns` is what both readers fill: the reference scanner
(:mod:`roofline.frontends.trace.events`) one decoded event at a time through
:meth:`Columns.add`, and the chunked route (:mod:`roofline.frontends.trace.chunked`)
a region of events at a time by the same rules.  :class:`TraceEvents` is the
finished, read-only result.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError
from roofline.core.limits import MAX_TRACE_MICROSECONDS, max_trace_events, max_trace_names
from roofline.frontends.trace.comms import GROUP_KEY, SEQ_KEY

#: Event categories kept, by code (the ``cat`` column).
CATEGORIES = ("cpu_op", "user_annotation", "module", "runtime", "kernel")
CPU_OP, ANNOTATION, MODULE, RUNTIME, KERNEL = range(len(CATEGORIES))
#: a trace's ``cat`` -> the code kept (``python_function`` events are kept as MODULE only when ``nn.Module: ...``).
CATEGORY_OF = {"cpu_op": CPU_OP, "user_annotation": ANNOTATION, "cuda_runtime": RUNTIME, "cuda_driver": RUNTIME,
               "hip_runtime": RUNTIME, "kernel": KERNEL, "gpu_memcpy": KERNEL, "gpu_memset": KERNEL}
#: ``args`` keys kept for a cpu_op: the recorded call, and a collective's message, process group and sequence number.
SHAPE_KEYS = ("Input type", "Input Dims", "Input Strides", "Concrete Inputs")
COMMS_KEYS = ("Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype", GROUP_KEY, SEQ_KEY)
#: Kineto's memory events (``profile_memory=True``): ``ph == "i"``, this name, and these ``args`` (all integers)
MEMORY_EVENT = "[memory]"
MEMORY_KEYS = ("Bytes", "Total Allocated", "Device Type", "Device Id")
MAX_EVENT_CHARS = 64 << 20  # one event larger than this is not a profiler event
INT64 = 2**63


def bad_number(where: str, index: int, field: str, value: Any, rule: str) -> RooflineError:
    """'<file>: event <i>: <field> <value> is not <rule>' (a number from the trace out of range)."""
    from roofline.core.fileio import shown

    return RooflineError(f"event {index:,}: {field} {shown(value, 40)} is not {rule}", where=where)


def check_times(where: str, index: int, ts: Any, dur: Any) -> tuple[float, float]:
    """An event's ts and dur as floats, each finite and within :data:`~roofline.core.limits.MAX_TRACE_MICROSECONDS`."""
    out = []
    for name, v in (("ts", ts), ("dur", dur)):
        try:
            x = float(v)
        except OverflowError:
            x = math.inf
        if not -MAX_TRACE_MICROSECONDS <= x <= MAX_TRACE_MICROSECONDS:  # NaN fails too
            raise bad_number(where, index, name, v, f"a finite number of microseconds within "
                             f"+-{MAX_TRACE_MICROSECONDS:.0e}")
        out.append(x)
    return out[0], out[1]


def check_id(where: str, index: int, field: str, v: int) -> int:
    """An integer id (correlation, sequence number) within int64."""
    if not -INT64 <= v < INT64:
        raise bad_number(where, index, field, v, "an integer within int64")
    return v


@dataclass
class TraceEvents:
    """The kept events of one trace, column-wise (times in microseconds, as the trace writes them)."""

    path: str
    meta: dict[str, Any]  # top-level keys other than traceEvents (schemaVersion, distributedInfo, ...)
    names: list[str]  # string table of event names
    calls: list[dict[str, Any]]  # distinct argument lists of cpu_ops (the SHAPE_KEYS / COMMS_KEYS present)
    threads: list[tuple[Any, Any]]  # (pid, tid) per thread code
    cat: np.ndarray  # int8, CATEGORIES code
    name: np.ndarray  # int32 into names
    thread: np.ndarray  # int32 into threads
    ts: np.ndarray  # float64 start, us
    dur: np.ndarray  # float64 duration, us
    call: np.ndarray  # int32 into calls, -1 without arguments
    correlation: np.ndarray  # int64, -1 without
    sequence: np.ndarray  # int64 autograd sequence number, -1 without
    events_seen: int = 0  # every event in the file, kept or not
    shapes: bool = False  # some cpu_op carried Input Dims
    # Kineto's "[memory]" instant events (profile_memory=True): time (us), the allocation's bytes (negative: a
    # free), the allocator's total allocated after it, and the device (-1: CPU, else the CUDA device id)
    mem_ts: np.ndarray = field(default_factory=lambda: np.zeros(0))
    mem_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    mem_total: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    mem_device: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.cat)


@dataclass
class Columns:
    """Events being kept, column by column (``array`` buffers, string tables for names, calls and threads)."""

    names: dict[str, int] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    call_list: list[dict[str, Any]] = field(default_factory=list)
    threads: dict[tuple[Any, Any], int] = field(default_factory=dict)
    cat: array = field(default_factory=lambda: array("b"))
    name: array = field(default_factory=lambda: array("i"))
    thread: array = field(default_factory=lambda: array("i"))
    ts: array = field(default_factory=lambda: array("d"))
    dur: array = field(default_factory=lambda: array("d"))
    call: array = field(default_factory=lambda: array("i"))
    correlation: array = field(default_factory=lambda: array("q"))
    sequence: array = field(default_factory=lambda: array("q"))
    seen: int = 0
    shapes: bool = False
    mem_ts: array = field(default_factory=lambda: array("d"))
    mem_bytes: array = field(default_factory=lambda: array("q"))
    mem_total: array = field(default_factory=lambda: array("q"))
    mem_device: array = field(default_factory=lambda: array("q"))
    where: str = "trace"
    max_events: int = field(default_factory=max_trace_events)
    max_names: int = field(default_factory=max_trace_names)

    def check_caps(self) -> None:
        """One line once the events kept or the distinct names interned pass their stated limits."""
        if len(self.cat) > self.max_events:
            raise RooflineError(f"more than {self.max_events:,} events kept (the limit; set "
                                "ROOFLINE_MAX_TRACE_EVENTS to raise it)", where=self.where)
        if len(self.names) > self.max_names or len(self.call_list) > self.max_names:
            what = "event names" if len(self.names) > self.max_names else "argument lists"
            raise RooflineError(f"more than {self.max_names:,} distinct {what} (the limit; set "
                                "ROOFLINE_MAX_TRACE_NAMES to raise it)", where=self.where)

    def add_memory(self, ts: Any, args: Any) -> None:
        """One ``[memory]`` instant event (its ``ts`` and ``args``), kept when its numbers are a profiler's."""
        if not isinstance(args, dict) or not isinstance(ts, (int, float)) or isinstance(ts, bool):
            return
        got = [args.get(k) for k in MEMORY_KEYS]
        if not all(isinstance(v, int) and not isinstance(v, bool) and -INT64 <= v < INT64 for v in got) \
                or not -MAX_TRACE_MICROSECONDS <= ts <= MAX_TRACE_MICROSECONDS:
            return
        nbytes, total, kind, device = got
        self.mem_ts.append(float(ts))
        self.mem_bytes.append(nbytes)
        self.mem_total.append(total)
        self.mem_device.append(device if kind == 1 else -1)

    def add(self, e: Any) -> None:
        self.seen += 1
        if not isinstance(e, dict) or e.get("ph") != "X":
            if isinstance(e, dict) and e.get("ph") == "i" and e.get("name") == MEMORY_EVENT:
                self.add_memory(e.get("ts"), e.get("args"))
            return
        c = e.get("cat")
        name = e.get("name")
        if not isinstance(name, str):
            return
        if c == "python_function":
            if not name.startswith("nn.Module: "):
                return
            code = MODULE
        else:
            code = CATEGORY_OF.get(c, -1) if isinstance(c, str) else -1
            if code < 0:
                return
        ts, dur = e.get("ts"), e.get("dur")
        if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)) or isinstance(ts, bool):
            return
        args = e.get("args")
        args = args if isinstance(args, dict) else {}
        call = -1
        if code in (CPU_OP, ANNOTATION):  # annotations: gloo's collectives carry their inputs
            kept = {k: args[k] for k in (*SHAPE_KEYS, *COMMS_KEYS) if k in args}
            if kept:
                self.shapes = self.shapes or "Input Dims" in kept
                key = repr(kept)
                call = self.calls.get(key, -1)
                if call < 0:
                    call = self.calls[key] = len(self.call_list)
                    self.call_list.append(kept)
                    if len(self.call_list) > self.max_names:
                        self.check_caps()
        corr = args.get("correlation", -1)
        seq = args.get("Sequence number", -1)
        where = (e.get("pid"), e.get("tid"))
        try:
            thread = self.threads[where]
        except (KeyError, TypeError):  # an unhashable pid/tid is not a profiler event
            if not all(isinstance(x, (int, str)) for x in where):
                return
            thread = self.threads[where] = len(self.threads)
        t, d = check_times(self.where, self.seen - 1, ts, dur)
        corr = check_id(self.where, self.seen - 1, "correlation", corr) if isinstance(corr, int) and not isinstance(
            corr, bool) else -1
        seq = check_id(self.where, self.seen - 1, "Sequence number", seq) if isinstance(seq, int) and not isinstance(
            seq, bool) else -1
        self.cat.append(code)
        self.name.append(self.names.setdefault(name, len(self.names)))
        self.thread.append(thread)
        self.ts.append(t)
        self.dur.append(d)
        self.call.append(call)
        self.correlation.append(corr)
        self.sequence.append(seq)
        if len(self.names) > self.max_names or len(self.cat) > self.max_events:
            self.check_caps()

