"""Read a torch.profiler Chrome trace as a stream: only the events a roofline needs, in compact columns.

A trace is one JSON object whose ``traceEvents`` array holds every event
(``export_chrome_trace`` / ``tensorboard_trace_handler``, ``.json`` or
``.json.gz``).  The array is decoded one event at a time, so memory grows with
the events kept (about 60 bytes each, and one entry per distinct name and
argument list, a few hundred bytes each), not with the file: a 1 GB trace never
becomes a 10 GB tree of dicts.  Both are capped (:func:`roofline.core.limits.max_trace_events`,
:func:`roofline.core.limits.max_trace_names`), and so is the input after decompression
(:func:`roofline.core.fileio.open_input`).

Kept (``ph == "X"``, complete events), by ``cat``:

* ``cpu_op``: aten ops and other dispatcher ops, with ``Input Dims``, ``Input type``,
  ``Input Strides`` and ``Concrete Inputs`` when the trace was recorded with
  ``record_shapes=True``; ``record_param_comms`` (collectives) with its message sizes;
* ``user_annotation`` (``record_function`` scopes, ``ProfilerStep#N``) and
  ``python_function`` events named ``nn.Module: Type_i`` (``with_stack=True``);
* ``cuda_runtime`` / ``cuda_driver`` (and ROCm's ``hip_runtime``): the launch calls;
* ``kernel``, ``gpu_memcpy``, ``gpu_memset``: device work, joined to a launch by ``args.correlation``.

Two routes, the same events for any file: the chunked one (:mod:`.chunked`: regions of events
decoded from bytes, by msgspec or the standard library) and the reference scanner below, which reads
any file the chunked route cannot vouch for.

Supported: ``schemaVersion`` 1 (what kineto writes since torch 1.13, torch >= 2.4 included).
"""

from __future__ import annotations

import io
import json
import os
import re
from array import array
from pathlib import Path
from typing import Any

import numpy as np

from roofline.core.errors import RooflineError
from roofline.core.text import shown_path
from roofline.frontends.trace.chunked import Fallback, Reader, too_much_space
from roofline.frontends.trace.columns import (
    ANNOTATION,
    CATEGORIES,
    COMMS_KEYS,
    CPU_OP,
    KERNEL,
    MAX_EVENT_CHARS,
    MODULE,
    RUNTIME,
    SHAPE_KEYS,
    Columns,
    TraceEvents,
)

#: ``schemaVersion`` values this reader understands.
SCHEMA_VERSIONS = (1,)
_NON_WS = re.compile(r"[^ \t\r\n]")
CHUNK = 1 << 18  # characters per read: the buffer, not the file, is what stays in memory
#: ways to decode a trace (``read_events(path, parser=...)``; ``auto``: msgspec when installed, else stdlib).
PARSERS = ("auto", "msgspec", "stdlib", "reference")


class _Scanner:
    """Decodes JSON values one at a time from a text stream, refilling a bounded buffer."""

    def __init__(self, f: Any, where: str) -> None:
        self.f, self.where = f, where
        self.buf, self.pos, self.eof, self.consumed = "", 0, False, 0
        self.decoder = json.JSONDecoder()

    def fill(self) -> bool:
        if self.eof:
            return False
        try:
            more = self.f.read(CHUNK)
        except (UnicodeDecodeError, OSError, EOFError) as exc:  # gzip: BadGzipFile is an OSError
            raise RooflineError(f"{self.where}: cannot read the trace: {exc}") from None
        if not more:
            self.eof = True
            return False
        self.consumed += self.pos
        self.buf = self.buf[self.pos:] + more
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next non-space character ('' at the end of the file); a longer run of whitespace than
        :data:`MAX_EVENT_CHARS` is one line (:func:`~.chunked.too_much_space`)."""
        run = 0
        while True:
            m = _NON_WS.search(self.buf, self.pos)
            if m is not None:
                self.pos = m.start()
                return self.buf[self.pos]
            run += len(self.buf) - self.pos
            self.pos = len(self.buf)
            if run > MAX_EVENT_CHARS:
                raise too_much_space(self.where, run)
            if not self.fill():
                return ""

    def expect(self, chars: str, what: str) -> str:
        c = self.peek()
        if not c or c not in chars:
            raise self.error(f"expected {what}", c)
        self.pos += 1
        return c

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                v, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if len(self.buf) - self.pos > MAX_EVENT_CHARS:
                    raise RooflineError(f"{self.where}: not a profiler trace: one value longer than "
                                        f"{MAX_EVENT_CHARS >> 20} MB near character {self.consumed + self.pos:,}") from None
                if self.fill():
                    continue
                raise self.error(f"not valid JSON ({exc.msg})", "") from None
            except RecursionError:
                raise RooflineError(f"{self.where}: not a profiler trace: JSON nested too deep near character "
                                    f"{self.consumed + self.pos:,}") from None
            if end == len(self.buf) and self.fill():  # a number may go on in the next chunk
                continue
            self.pos = end
            return v

    def error(self, what: str, got: str) -> RooflineError:
        if not got and self.eof:
            return RooflineError(f"{self.where}: the trace is truncated (the file ends inside the JSON, near character "
                                 f"{self.consumed + self.pos:,}); was it copied while the profiler was still writing?")
        return RooflineError(f"{self.where}: not a Chrome trace: {what} near character {self.consumed + self.pos:,}"
                             + (f", found {got!r}" if got else ""))


def _open_binary(path: Path) -> Any:
    """The trace's bytes, decompressed when gzip, through the one input reader (regular files only, the
    input limit counted after decompression: :func:`roofline.core.fileio.open_input`)."""
    from roofline.core.fileio import open_input

    return open_input(path, decompress=True)


def _open(path: Path) -> Any:
    return io.TextIOWrapper(_open_binary(path), encoding="utf-8")


def fast_parser() -> str:
    """The decoder ``parser="auto"`` uses: ``msgspec`` when installed (the ``trace`` extra), else ``stdlib``."""
    import importlib.util

    return "msgspec" if importlib.util.find_spec("msgspec") is not None else "stdlib"


def read_events(path: str | os.PathLike[str], parser: str = "auto") -> TraceEvents:
    """Stream ``path`` (a torch.profiler Chrome trace, plain or gzip) into :class:`TraceEvents`.

    ``parser``: ``auto`` (msgspec if installed, else the standard library), ``msgspec`` or ``stdlib``
    (both :mod:`.chunked`: regions of events decoded from bytes), or ``reference`` (the character
    scanner below, one event at a time; what the chunked route falls back to for any file it cannot
    vouch for).  All four give the same events for any file.

    Bad input is one :class:`RooflineError` line: not JSON, not a trace object, no ``traceEvents``,
    a ``schemaVersion`` other than :data:`SCHEMA_VERSIONS`, or a file that ends mid-event.
    """
    if parser not in PARSERS:
        raise RooflineError(f"trace parser {parser!r}: not one of {', '.join(PARSERS)}")
    p = Path(path)
    where = shown_path(p)
    _open_binary(p).close()  # missing, a fifo, a device, a folder: one line before any parsing
    if parser != "reference":
        try:
            return _read_chunked(p, where, fast_parser() if parser == "auto" else parser)
        except Fallback:
            pass
    return _read_reference(p, where)


def _read_chunked(p: Path, where: str, decoder: str) -> TraceEvents:
    """The chunked route (:mod:`.chunked`); :class:`~.chunked.Fallback` when it cannot vouch for the file."""
    f = _open_binary(p)
    import gc

    collecting = gc.isenabled()
    gc.disable()  # a region's events are a few MB of fresh objects, freed by reference counts: no cycles to find
    try:
        with f:
            r = Reader(f, decoder, where)
            meta = r.header()
            if "schemaVersion" in meta:
                _check_version(meta, where)
            r.events()
            tail = r.trailer()
    finally:
        if collecting:
            gc.enable()
    meta.update(tail)
    if "schemaVersion" in tail:
        _check_version(meta, where)
    return _finish(p, meta, True, r.cols, where)


def _read_reference(p: Path, where: str) -> TraceEvents:
    """The reference scanner: one JSON value at a time from a text stream (the reader before :mod:`.chunked`)."""
    cols = Columns(where=where)
    meta: dict[str, Any] = {}
    f = _open(p)
    with f:
        found = _scan_object(_Scanner(f, where), cols, meta, where)
    return _finish(p, meta, found, cols, where)


def _finish(p: Path, meta: dict[str, Any], found: bool, cols: Columns, where: str) -> TraceEvents:
    if not found:
        raise RooflineError(f"{where}: not a Chrome trace: no traceEvents (record one with torch.profiler and "
                            "prof.export_chrome_trace('trace.json'))")
    if "schemaVersion" not in meta:
        raise RooflineError(f"{where}: no schemaVersion: not a torch.profiler trace (supported: schemaVersion "
                            f"{', '.join(map(str, SCHEMA_VERSIONS))}, written by torch >= 1.13)")
    return TraceEvents(str(p), meta, list(cols.names), cols.call_list, list(cols.threads), _np(cols.cat),
                       _np(cols.name), _np(cols.thread), _np(cols.ts), _np(cols.dur), _np(cols.call),
                       _np(cols.correlation), _np(cols.sequence), cols.seen, cols.shapes, _np(cols.mem_ts),
                       _np(cols.mem_bytes), _np(cols.mem_total), _np(cols.mem_device))


def _scan_object(s: _Scanner, cols: Columns, meta: dict[str, Any], where: str) -> bool:
    """The trace's one JSON object: each traceEvents entry into ``cols``, every other key into ``meta``
    (schemaVersion checked as soon as it is read).  True when there was a traceEvents array."""
    found = False
    if s.peek() != "{":
        if s.peek() == "":
            raise RooflineError(f"{where}: the trace file is empty")
        raise s.error("a JSON object with traceEvents (torch.profiler's export_chrome_trace)", s.peek())
    s.pos += 1
    if s.peek() == "}":
        s.pos += 1
    else:
        while True:
            if s.peek() != '"':
                raise s.error("a key", s.peek())
            key = s.value()
            s.expect(":", "':'")
            if key == "traceEvents":
                found = True
                _scan_events(s, cols)
                if "schemaVersion" in meta:  # fail early on an unsupported file (kineto writes it first)
                    _check_version(meta, where)
            else:
                meta[key] = s.value()
                if key == "schemaVersion":
                    _check_version(meta, where)
            if s.expect(",}", "',' or '}'") == "}":
                break
    if s.peek():
        raise s.error("one JSON object, then the end of the file", s.peek())
    return found


def _scan_events(s: _Scanner, cols: Columns) -> None:
    """The traceEvents array, one event at a time (never the whole array in memory)."""
    s.expect("[", "the traceEvents array")
    if s.peek() == "]":
        s.pos += 1
        return
    while True:
        cols.add(s.value())
        if s.expect(",]", "',' or ']' between events") == "]":
            return


def _np(a: array) -> np.ndarray:
    return np.frombuffer(a, dtype=a.typecode)  # shares the array's memory: no copy, no object per element


def _check_version(meta: dict[str, Any], where: str) -> None:
    v = meta["schemaVersion"]
    if v not in SCHEMA_VERSIONS or isinstance(v, bool):
        raise RooflineError(f"{where}: unsupported trace schemaVersion {v!r} (supported: "
                            f"{', '.join(map(str, SCHEMA_VERSIONS))}, written by torch.profiler in torch >= 1.13)")


__all__ = ["ANNOTATION", "CATEGORIES", "COMMS_KEYS", "CPU_OP", "KERNEL", "MODULE", "PARSERS", "RUNTIME",
           "SCHEMA_VERSIONS", "SHAPE_KEYS", "TraceEvents", "fast_parser", "read_events"]
