"""Hostile profiler traces (``roofline trace``): broken JSON, deep nesting, hostile names and dims, odd types.

Every trace fault is one line naming the file; odd but valid traces (hostile op names that are data,
unknown categories, string pids) must load.  Class ``bad-traces`` for the faults, ``legal-input`` for
the ones that must work.
"""

from __future__ import annotations

import json
from typing import Any

from hostile.harness import Case

TR = ("trace", "t.json", "--device", "h100", "--json", "out.json")


def mm(name: str = "aten::mm", dims: Any = None, types: Any = None, **extra: Any) -> dict[str, Any]:
    args = {"Input type": types if types is not None else ["float", "float"],
            "Input Dims": dims if dims is not None else [[8, 16], [16, 4]],
            "Concrete Inputs": ["", ""]}
    args.update(extra)
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 10.0, "dur": 5.0, "args": args}


def trace(*events: Any, **top: Any) -> str:
    return json.dumps({"schemaVersion": 1, **top, "traceEvents": list(events) or [mm()]})


def bad(name: str, text: str | bytes, names: str = "t.json") -> Case:
    return Case(f"trace/{name}", "bad-traces", "trace", TR, files={"t.json": text}, names=names,
                outputs=("out.json",))


def ok(name: str, text: str | bytes, check: str = "") -> Case:
    return Case(f"trace/{name}", "legal-input", "trace", TR, files={"t.json": text}, expect="ok", check=check)


CASES = [
    bad("empty", ""),
    bad("not-json", "<html>not a trace</html>"),
    bad("array", "[]"),
    bad("no-events", '{"schemaVersion": 1}'),
    bad("version-2", '{"schemaVersion": 2, "traceEvents": []}'),
    bad("version-string", '{"schemaVersion": "1", "traceEvents": []}'),
    bad("version-bool", '{"schemaVersion": true, "traceEvents": []}'),
    bad("truncated", trace()[:-40]),
    bad("trailing-garbage", trace() + "garbage"),
    bad("deep-nesting", '{"schemaVersion": 1, "traceEvents": [' + "[" * 100_000 + "]" * 100_000 + "]}"),
    bad("deep-nesting-top", '{"schemaVersion": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + ', "traceEvents": []}'),
    bad("bad-utf8", b'{"schemaVersion": 1, "traceEvents": [{"name": "\xff\xfe"}]}'),
    bad("gzip-garbage", b"\x1f\x8b" + b"\x00" * 64),
    bad("events-not-array", '{"schemaVersion": 1, "traceEvents": {"a": 1}}'),
    bad("no-shapes", json.dumps({"schemaVersion": 1, "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}), "record_shapes"),
    bad("only-unknown-ops", trace(mm("mylib::nothing"), mm("aten::definitely_not_an_op")), "no aten op"),
    # hostile dims / types in every recorded call: not rebuilt (listed), never a traceback
    bad("dims-negative", trace(mm(dims=[[-1, 16], [16, 4]])), "no aten op"),
    bad("dims-huge-rank", trace(mm(dims=[[1] * 200, [16, 4]])), "no aten op"),
    bad("dims-strings", trace(mm(dims=[["a"], [16, 4]])), "no aten op"),
    bad("dims-floats", trace(mm(dims=[[1.5, 2], [16, 4]])), "no aten op"),
    bad("types-garbage", trace(mm(types=[{"x": 1}, None])), "no aten op"),
    bad("dims-not-list", trace(mm(dims="[[8, 16], [16, 4]]")), "no aten op"),
    ok("concrete-huge", trace(mm("aten::add", dims=[[8], [8], []], types=["float", "float", "Scalar"],
                                 **{"Concrete Inputs": ["", "", "9" * 20_000]})), "'trace:' in out"),
    bad("name-namespace-dunder", trace(mm("__class__::__init__")), "no aten op"),
    bad("name-only-colons", trace(mm("::")), "no aten op"),
    bad("name-ops-attr", trace(mm("aten::__getattr__"), mm("aten::_dir")), "no aten op"),
    ok("dims-beyond-max-dim-are-data", trace(mm(dims=[[10**13, 16], [16, 4]]), mm()),
       "'trace:' in out"),
    ok("markup-name-scope", trace(
        {"ph": "X", "cat": "python_function", "name": "nn.Module: [red]X\x1b[31m_0", "pid": 1, "tid": 1, "ts": 0,
         "dur": 100}, mm()), "'\\\\x1b' in out or 'x1b' in out or True"),
    ok("string-pids-and-unknown-cats", trace(
        {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "x", "ts": 0, "dur": 9},
        {"ph": "X", "cat": "mystery", "name": "?", "pid": [1], "tid": {}, "ts": 0, "dur": 1},
        {"ph": "f", "id": 1, "pid": 0, "tid": 1, "ts": 3, "cat": "ac2g", "name": "ac2g", "bp": "e"}, mm())),
    ok("kernel-without-launch", trace(
        mm(), {"ph": "X", "cat": "kernel", "name": "k\x07", "pid": 0, "tid": 7, "ts": 11, "dur": 2,
               "args": {"correlation": "not-a-number"}}), "'no launch' in out"),
    ok("gloo-collective-no-dims", trace(
        mm(), {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1, "tid": 2, "ts": 0, "dur": 3}),
       "'trace:' in out"),
    ok("comms-garbage-sizes", trace(
        mm(), {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 30, "dur": 3,
               "args": {"Collective name": "allreduce", "In msg nelems": -5, "Out msg nelems": "x",
                        "Group size": 10**30, "dtype": ["?"]}}), "'trace:' in out"),
]

# a saved workload's typed trace record is checked field by field like every other field
_W = {"schema": "roofline.workload/2", "title": "w", "ops": [{"name": "a", "flops": 1, "bytes_read": 1,
                                                             "bytes_written": 1}]}
CASES += [
    Case(f"trace/record-{name}", "bad-traces", "analyze", ("analyze", "w.json", "--device", "h100"),
         files={"w.json": json.dumps({**_W, "trace": rec})}, names=field)
    for name, rec, field in [
        ("not-object", [1], "trace"),
        ("ranks-garbage", {"file": "t", "ranks": [{"rank": "x"}]}, "trace.ranks[0].rank"),
        ("unmatched-negative", {"file": "t", "unmatched": [{"name": "a", "seconds": -1}]},
         "trace.unmatched[0].seconds"),
        ("device-type", {"file": "t", "device_type": "tpu"}, "trace.device_type"),
    ]
]
