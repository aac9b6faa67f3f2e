"""The kept events of a trace, column-wise, and the rules that keep them (one place for every reader route).

:class:`Columns` is what both readers fill: the reference scanner
(:mod:`roofline.frontends.trace.events`) one decoded event at a time through
:meth:`Columns.add`, and the chunked route (:mod:`roofline.frontends.trace.chunked`)
a region of events at a time by the same rules.  :class:`TraceEvents` is the
finished, read-only result.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Event categories kept, by code (the ``cat`` column).
CATEGORIES = ("cpu_op", "user_annotation", "module", "runtime", "kernel")
CPU_OP, ANNOTATION, MODULE, RUNTIME, KERNEL = range(len(CATEGORIES))
#: a trace's ``cat`` -> the code kept (``python_function`` events are kept as MODULE only when ``nn.Module: ...``).
CATEGORY_OF = {"cpu_op": CPU_OP, "user_annotation": ANNOTATION, "cuda_runtime": RUNTIME, "cuda_driver": RUNTIME,
               "hip_runtime": RUNTIME, "kernel": KERNEL, "gpu_memcpy": KERNEL, "gpu_memset": KERNEL}
#: ``args`` keys kept for a cpu_op: the recorded call, and a collective's message.
SHAPE_KEYS = ("Input type", "Input Dims", "Input Strides", "Concrete Inputs")
COMMS_KEYS = ("Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype")
MAX_EVENT_CHARS = 64 << 20  # one event larger than this is not a profiler event


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

    def add(self, e: Any) -> None:
        self.seen += 1
        if not isinstance(e, dict) or e.get("ph") != "X":
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
        corr = args.get("correlation", -1)
        seq = args.get("Sequence number", -1)
        where = (e.get("pid"), e.get("tid"))
        try:
            thread = self.threads[where]
        except (KeyError, TypeError):  # an unhashable pid/tid is not a profiler event
            if not all(isinstance(x, (int, str)) for x in where):
                return
            thread = self.threads[where] = len(self.threads)
        self.cat.append(code)
        self.name.append(self.names.setdefault(name, len(self.names)))
        self.thread.append(thread)
        self.ts.append(float(ts))
        self.dur.append(float(dur))
        self.call.append(call)
        self.correlation.append(corr if isinstance(corr, int) and not isinstance(corr, bool) else -1)
        self.sequence.append(seq if isinstance(seq, int) and not isinstance(seq, bool) else -1)

