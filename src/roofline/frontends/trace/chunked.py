"""The fast route of the trace reader: ``traceEvents`` decoded a few MB at a time, straight from bytes.

The events array is cut into regions that end at an event's closing brace
(``}`` followed by ``,`` or ``]``) and each region is decoded as one JSON
array, so memory stays flat (one region, about :data:`REGION` bytes, at a time)
whatever the file size.  A cut that falls inside an event cannot decode (a JSON
value's braces and strings close on their own, so only a cut between whole
events gives a valid array): the region is tried again up to an earlier cut.

Two decoders, the same results:

* ``msgspec`` (the ``trace`` extra): each event into a typed
  :class:`msgspec.Struct` that names only the fields the reader uses; msgspec
  skips every other key (``Python id``, ``External id``, ...) while scanning
  the bytes, and a recorded call's arguments stay raw bytes until a new one is
  seen.  An event whose fields have other types than a profiler writes (a
  string ``ts``, a ``true`` pid, an event that is not an object) fails the
  typed decode: that region is decoded again with the standard library and
  kept by exactly the rules of :class:`~roofline.frontends.trace.columns.Columns`.
* ``stdlib``: :func:`json.loads` per region, after a byte-level prefilter
  (:data:`PREFILTER`) that drops ``python_function`` events other than
  ``nn.Module: ...`` ones before decoding (they are half of a ``with_stack``
  trace's bytes); the rest is kept by :meth:`Columns.add`.

Whenever this route cannot vouch for a file (a header it cannot split, JSON it
cannot decode, a region with no cut, a file that ends early), it raises
:class:`Fallback` and :func:`~roofline.frontends.trace.events.read_events`
reads the file with the reference scanner, which gives today's results and
messages; so any file the reference accepts is accepted, with the same events.
"""

from __future__ import annotations

import json
import operator
import re
from array import array
from typing import Any

import numpy as np

from roofline.core.limits import MAX_TRACE_MICROSECONDS as MAX_US
from roofline.frontends.trace.columns import (
    ANNOTATION,
    CATEGORY_OF,
    COMMS_KEYS,
    CPU_OP,
    INT64,
    MAX_EVENT_CHARS,
    MEMORY_EVENT,
    MEMORY_KEYS,
    MODULE,
    SHAPE_KEYS,
    Columns,
    check_id,
    check_times,
)

#: the code of each kept ``cat`` (``python_function`` only for ``nn.Module: `` events, checked by name)
_CODE_OF = {**CATEGORY_OF, "python_function": MODULE}
_LISTED = frozenset(CATEGORY_OF)  # kept by category alone

REGION = 1 << 19  # bytes decoded at once (the peak: about 12x this, whatever the file size)
MAX_CUTS = 4  # cuts tried per region before the reference scanner takes the file
_MEMORY = re.compile(re.escape(f'"{MEMORY_EVENT}"'.encode()))
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_CUT = re.compile(rb"\s*[,\]]")
_NON_WS = re.compile(rb"[^ \t\r\n]")
#: a whole ``python_function`` event that is not an ``nn.Module: `` scope, with the ``,`` after it, as kineto and
#: ``json.dumps`` write one (``ph``, ``cat``, ``name`` first, in that order; no other ``ph``/``cat``/``name`` key, no
#: brace or escape in its name, one flat ``args`` object).  Only events the reader skips match; any other spelling is
#: decoded and skipped there.
PREFILTER = re.compile(
    rb'\{\s*"ph"\s*:\s*"X"\s*,\s*"cat"\s*:\s*"python_function"\s*,\s*"name"\s*:\s*"(?!nn\.Module: )[^"\\{}]*"'
    rb'(?:(?!"(?:ph|cat|name|args)")[^{}])*"args"\s*:\s*\{(?:(?!"(?:ph|cat|name)")[^{}])*\}\s*\}\s*,')


def too_much_space(where: str, run: int) -> Exception:
    """The error for a run of ``run`` whitespace characters (beyond :data:`MAX_EVENT_CHARS`)."""
    from roofline.core.errors import RooflineError

    return RooflineError(f"not a profiler trace: more than {MAX_EVENT_CHARS >> 20} MB of whitespace in a row "
                         f"({run:,} characters)", where=where)


def _AT_END(acc: bytearray, seen: int) -> bool:
    return False  # read to the end of the file


OVERLAP = 4096  # bytes searched again after each read (a key split across reads; a longer gap falls back)


class Fallback(Exception):
    """This route cannot vouch for the file: the reference scanner reads it."""


class BadRegion(Exception):
    """A region that does not decode as whole events (a cut inside an event, or not JSON)."""


#: an event's kept arguments as raw JSON texts, in the order of SHAPE_KEYS then COMMS_KEYS (one tuple, in C)
_RAW_ARGS = operator.attrgetter(*(f"a{k}" for k in range(len(SHAPE_KEYS) + len(COMMS_KEYS))))


def _msgspec_types() -> tuple[Any, Any]:
    import msgspec

    raw, none = msgspec.Raw, msgspec.Raw(b"")

    def f(key: str) -> Any:
        return msgspec.field(default=none, name=key)

    args_fields: list[tuple[str, Any, Any]] = [(f"a{k}", raw, f(key)) for k, key in enumerate((*SHAPE_KEYS, *COMMS_KEYS))]
    args_fields += [("correlation", int, -1), ("sequence", int, msgspec.field(default=-1, name="Sequence number"))]
    args_fields += [(f"m{k}", Any, msgspec.field(default=None, name=key)) for k, key in enumerate(MEMORY_KEYS)]
    Args = msgspec.defstruct("Args", args_fields, gc=False)
    text, thread, number = str | None, int | str | None, float | None
    Event = msgspec.defstruct("Event", [("ph", text, None), ("cat", text, None), ("name", text, None),
                                        ("pid", thread, None), ("tid", thread, None), ("ts", number, None),
                                        ("dur", number, None), ("args", Args | None, None)], gc=False)
    return msgspec, msgspec.json.Decoder(list[Event])  # type: ignore[valid-type]


class _Typed:
    """Regions decoded by msgspec into typed events, kept by the rules of ``Columns.add``."""

    def __init__(self, cols: Columns) -> None:
        self.msgspec, self.decoder = _msgspec_types()
        self.cols = cols
        self.raw_calls: dict[bytes, tuple[int, bool]] = {}

    def region(self, data: bytes) -> None:
        self._decode(b"[" + data + b"]", data)

    def region_in(self, buf: bytearray, start: int, end: int) -> None:
        """``buf[start:end]`` decoded where it lies, without a copy: the byte before it (already read: the array's
        ``[``, a ``,`` or a space) and the one after it (a ``,``, ``]`` or space: the reader cuts only there) are
        set to ``[`` and ``]`` for the decode, and put back after the region's events are kept.  The decoded
        raw arguments point into ``buf`` until then; nothing keeps them past this call (the reader resizes the
        buffer next)."""
        before, after = buf[start - 1], buf[end]
        buf[start - 1], buf[end] = 0x5B, 0x5D  # '[' and ']'
        try:
            self._decode(memoryview(buf)[start - 1:end + 1], memoryview(buf)[start:end])
        finally:
            buf[start - 1], buf[end] = before, after

    def _decode(self, text: Any, region: Any) -> None:
        """The events of ``text`` (a JSON array: the bytes of ``region`` in brackets) kept."""
        try:
            events = self.decoder.decode(text)
        except (self.msgspec.ValidationError, OverflowError):  # valid JSON, other types than a profiler writes
            _Plain(self.cols, prefilter=False).region(bytes(region))  # (or a number past int64 or float): the exact rules
            return
        except (self.msgspec.DecodeError, RecursionError):  # RecursionError: nested deeper than msgspec reads
            raise BadRegion from None
        if not self._keep_columns(events):
            self._keep(events)  # an odd value in the region (a time out of range, a missing pid): the exact loop
        if _MEMORY.search(region) is not None:  # Kineto's memory events (profile_memory=True): few regions hold any
            add = self.cols.add_memory
            for e in events:
                if e.ph == "i" and e.name == MEMORY_EVENT and e.args is not None:
                    a = e.args
                    add(e.ts, {k: v for k, v in zip(MEMORY_KEYS, (a.m0, a.m1, a.m2, a.m3), strict=True)
                               if v is not None})

    def _keep_columns(self, events: list[Any]) -> bool:
        """The rules of ``Columns.add`` a column at a time (list comprehensions over the region, no per-event
        branches): the same columns and tables as :meth:`_keep`, in the same order.  False, with nothing kept,
        when some kept event has a value the exact loop must see one at a time (a time or id out of range, a
        missing pid or tid): :meth:`_keep` then keeps the region and says what is wrong."""
        cols, code_of, listed = self.cols, _CODE_OF, _LISTED
        kept = [(e.cat, e.name, e.ts, e.dur, e.pid, e.tid, e.args) for e in events
                if ((c := e.cat) in listed or c == "python_function" and e.name is not None
                    and e.name.startswith("nn.Module: "))
                and e.ph == "X" and e.name is not None and e.ts is not None and e.dur is not None]
        cols.seen += len(events)
        if not kept:
            return True
        cats, event_names, t_list, d_list, pids, tids, args = zip(*kept, strict=True)
        ts, dur = array("d", t_list), array("d", d_list)
        t, d = np.frombuffer(ts), np.frombuffer(dur)
        if not (bool((np.abs(t) <= MAX_US).all()) and bool((np.abs(d) <= MAX_US).all())) \
                or None in pids or None in tids:  # NaN fails too; a missing pid or tid
            cols.seen -= len(events)
            return False
        try:
            corr = array("q", [-1 if a is None else a.correlation for a in args])
            seq = array("q", [-1 if a is None else a.sequence for a in args])
        except OverflowError:  # an id past int64: the exact loop names it
            cols.seen -= len(events)
            return False
        codes = [code_of[c] for c in cats]
        join, known, call, none = b"\0".join, self.raw_calls.get, self._call, (-1, False)
        raw_of = _RAW_ARGS
        got = [(known(join(raw_of(a))) or call(a))
               if c <= ANNOTATION and a is not None else none for c, a in zip(codes, args, strict=True)]
        cols.shapes = cols.shapes or any(g[1] and g[0] >= 0 for g in got)
        names, threads = cols.names, cols.threads
        cols.cat.fromlist(codes)
        cols.name.fromlist([names.setdefault(n, len(names)) for n in event_names])
        p0, t0 = pids[0], tids[0]
        if pids.count(p0) == len(pids) and tids.count(t0) == len(tids):  # one thread (a CPU trace's regions): in C
            cols.thread.fromlist([threads.setdefault((p0, t0), len(threads))] * len(pids))
        else:
            cols.thread.fromlist([threads.setdefault(w, len(threads)) for w in zip(pids, tids, strict=True)])
        cols.ts += ts
        cols.dur += dur
        cols.call.fromlist([g[0] for g in got])
        cols.correlation += corr
        cols.sequence += seq
        cols.check_caps()
        return True

    def _call(self, a: Any) -> tuple[int, bool]:
        """(call id, has Input Dims) for an event's raw arguments (decoded once per distinct raw text)."""
        raw = _RAW_ARGS(a)
        key = b"\0".join(raw)  # one hashable key; NUL cannot occur in a JSON value's text
        got = self.raw_calls.get(key)
        if got is not None:
            return got
        raw_key = tuple(bytes(r) for r in raw)
        kept = {}
        for name, text in zip((*SHAPE_KEYS, *COMMS_KEYS), raw_key, strict=True):
            if text:
                try:
                    kept[name] = json.loads(text)  # the standard library's values, as the reference keeps
                except (ValueError, RecursionError):
                    raise Fallback from None
        cols = self.cols
        call = -1
        if kept:
            r = repr(kept)
            call = cols.calls.get(r, -1)
            if call < 0:
                call = cols.calls[r] = len(cols.call_list)
                cols.call_list.append(kept)
        got = self.raw_calls[key] = (call, raw_key[1] != b"")
        return got

    def _keep(self, events: list[Any]) -> None:  # noqa: C901 - one pass, the rules of Columns.add in order
        cols = self.cols
        cols.seen += len(events)
        names, threads = cols.names, cols.threads
        a_cat, a_name, a_thread, a_ts, a_dur = cols.cat.append, cols.name.append, cols.thread.append, \
            cols.ts.append, cols.dur.append
        a_call, a_corr, a_seq = cols.call.append, cols.correlation.append, cols.sequence.append
        get_cat = CATEGORY_OF.get
        for k, e in enumerate(events):
            name = e.name
            if e.ph != "X" or name is None:
                continue
            c = e.cat
            if c == "python_function":
                if not name.startswith("nn.Module: "):
                    continue
                code = MODULE
            else:
                code = get_cat(c, -1) if c is not None else -1
                if code < 0:
                    continue
            ts, dur = e.ts, e.dur
            if ts is None or dur is None:
                continue
            if not (-MAX_US <= ts <= MAX_US and -MAX_US <= dur <= MAX_US):  # inf, NaN, 1e308: one line
                check_times(cols.where, cols.seen - len(events) + k, ts, dur)
            a = e.args
            call = -1
            if a is None:
                corr = seq = -1
            else:
                if code == CPU_OP or code == ANNOTATION:
                    call, dims = self._call(a)
                    cols.shapes = cols.shapes or (dims and call >= 0)
                corr, seq = a.correlation, a.sequence
                if not (-INT64 <= corr < INT64 and -INT64 <= seq < INT64):
                    check_id(cols.where, cols.seen - len(events) + k, "correlation", corr)
                    check_id(cols.where, cols.seen - len(events) + k, "Sequence number", seq)
            where = (e.pid, e.tid)
            thread = threads.get(where)
            if thread is None:
                if where[0] is None or where[1] is None:
                    continue
                thread = threads[where] = len(threads)
            a_cat(code)
            a_name(names.setdefault(name, len(names)))
            a_thread(thread)
            a_ts(ts)
            a_dur(dur)
            a_call(call)
            a_corr(corr)
            a_seq(seq)
        cols.check_caps()


class _Plain:
    """Regions decoded by the standard library (after the byte prefilter), kept by ``Columns.add``."""

    def __init__(self, cols: Columns, prefilter: bool = True) -> None:
        self.cols, self.prefilter = cols, prefilter

    def region(self, data: bytes) -> None:
        dropped = 0
        if self.prefilter:
            data, dropped = PREFILTER.subn(b"", data)
        try:
            events = json.loads(b"[" + data + b"]")
        except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise BadRegion from None
        self.cols.seen += dropped
        add = self.cols.add
        for e in events:
            add(e)
        self.cols.check_caps()


class Reader:
    """Splits a binary stream into header, event regions and trailer (see the module docstring)."""

    def __init__(self, f: Any, decoder: str, where: str = "trace") -> None:
        self.f, self.where = f, where
        self.buf: bytes | bytearray = b""
        self.pos, self.eof = 0, False
        self.cols = Columns(where=where)
        self.sink: _Typed | _Plain = _Typed(self.cols) if decoder == "msgspec" else _Plain(self.cols)

    def fill(self) -> bool:
        if self.eof:
            return False
        try:
            more = self.f.read(REGION)
        except (OSError, EOFError):  # a broken gzip stream: the reference scanner says what
            raise Fallback from None
        if not more:
            self.eof = True
            return False
        # the buffer from one byte before pos (room for the next region's '[': see _Typed.region_in), moved down
        # in place and extended; a buffer something still points into (never, once a region is kept) is copied
        keep = max(self.pos - 1, 0)
        try:
            if not isinstance(self.buf, bytearray):
                raise BufferError
            del self.buf[:keep]
            self.buf += more
        except BufferError:
            self.buf = bytearray(self.buf[keep:]) + more
        self.pos -= keep
        return True

    def next_char(self) -> int:
        """The next non-space byte (-1 at the end of the file), not consumed.  A run of whitespace longer
        than :data:`MAX_EVENT_CHARS` is not a profiler's (one line: a file padded to exhaust the reader)."""
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
                return -1

    def header(self) -> dict[str, Any]:
        """The top-level keys before ``traceEvents`` (decoded as one object); leaves pos inside the array."""
        if self.next_char() != ord("{"):
            raise Fallback
        self.buf, self.pos = self._grow(lambda acc, seen: _EVENTS_KEY.search(acc, max(0, seen - OVERLAP))), 0
        m = _EVENTS_KEY.search(self.buf)
        assert m is not None
        head = self.buf[:m.start()].strip()
        if head.count(b'"schemaVersion"') > 1 or not head.startswith(b"{"):
            raise Fallback
        if head == b"{":
            meta: Any = {}
        elif head.endswith(b","):
            try:
                meta = json.loads(head[:-1] + b"}")
            except (ValueError, RecursionError):
                raise Fallback from None
        else:
            raise Fallback
        if not isinstance(meta, dict) or "traceEvents" in meta:
            raise Fallback
        self.pos = m.end()
        return meta

    def events(self) -> None:
        """Decode the array's regions up to its closing ``]``."""
        if self.next_char() == ord("]"):
            self.pos += 1
            return
        while True:
            while len(self.buf) - self.pos < REGION and self.fill():
                pass
            self.pos = self._region()
            c = self.next_char()
            self.pos += 1
            if c == ord("]"):
                return
            if c != ord(","):
                raise Fallback

    def _region(self) -> int:
        """Decode the longest region of whole events from pos (it ends just after a ``}`` followed by ``,`` or
        ``]``; a cut inside an event does not decode, and an earlier one is tried); returns where it ends."""
        buf, start = self.buf, self.pos
        j, tries = len(buf), 0
        while tries < MAX_CUTS:
            j = buf.rfind(b"}", start, j)
            if j < 0:
                break
            if _CUT.match(buf, j + 1) is None:
                continue
            tries += 1
            try:
                if isinstance(buf, bytearray) and start >= 1 and isinstance(self.sink, _Typed):
                    self.sink.region_in(buf, start, j + 1)
                else:
                    self.sink.region(bytes(memoryview(buf)[start:j + 1]))  # one copy
            except BadRegion:
                continue
            return j + 1
        raise Fallback  # no cut in reach (an event longer than the buffer, or not events), or not JSON

    def _grow(self, found: Any) -> bytes:
        """The buffer from pos, read on (in place, never copied whole per read) until ``found(acc, seen)``
        (``seen``: the length already searched) or the end of the file; :class:`Fallback` past
        :data:`MAX_EVENT_CHARS` (a header or trailer no profiler writes: the reference scanner says why)."""
        acc = bytearray(self.buf[self.pos:])
        seen = 0
        while not found(acc, seen):
            if len(acc) > MAX_EVENT_CHARS:
                raise Fallback
            seen = len(acc)
            try:
                more = self.f.read(REGION)
            except (OSError, EOFError):
                raise Fallback from None
            if not more:
                self.eof = True
                if found is _AT_END:
                    break
                raise Fallback
            acc += more
        return bytes(acc)

    def trailer(self) -> dict[str, Any]:
        """The top-level keys after the array, up to the closing ``}`` and the end of the file."""
        rest = self._grow(_AT_END).strip()
        if rest == b"}":
            return {}
        if not rest.startswith(b","):
            raise Fallback
        try:
            tail = json.loads(b"{" + rest[1:])
        except (ValueError, RecursionError):
            raise Fallback from None
        if not isinstance(tail, dict) or "traceEvents" in tail or rest.count(b'"schemaVersion"') > 1:
            raise Fallback
        return tail
