"""Hostile files that are not files (issue 33): outputs onto devices, fifos and symlinks; inputs that are fifos,
devices or folders; compressed traces that decompress to far more than the input limit.

Classes: ``special-outputs`` (an output path that is a character device, a fifo or a symlink: written in
place or refused with one line, never replaced), ``special-inputs`` (every input file that is a fifo, a
device or a folder: refused at once with one line, never a hang), ``decompression`` (a ``.json.gz`` trace
whose decompressed size, events or distinct names pass a stated limit: one line, fast).  Device nodes are
made in the case's own folder (``os.mknod``, root only; the test skips them otherwise), never in /dev.
"""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any

from hostile.harness import Case, Special

NULL, FULL, ZERO = Special("chr", 1, 3), Special("chr", 1, 7), Special("chr", 1, 5)
FIFO, DIR = Special("fifo"), Special("dir")

W = json.dumps({"schema": "roofline.workload/1", "title": "w", "ops": [
    {"name": "a", "kind": "matmul", "flops": 1e9, "bytes_read": 1e6, "bytes_written": 1e6}]})
EV = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10.0, "dur": 5.0,
      "args": {"Input type": ["float", "float"], "Input Dims": [[8, 16], [16, 4]], "Concrete Inputs": ["", ""]}}
TRACE = json.dumps({"schemaVersion": 1, "traceEvents": [EV]})
#: three distinct measured ops (what a calibration needs at least)
TRACE3 = json.dumps({"schemaVersion": 1, "traceEvents": [
    {**EV, "ts": 10.0 + 10 * k, "args": {**EV["args"], "Input Dims": [[8 << k, 16], [16, 4 << k]]}} for k in range(3)]})
SYSTEM = json.dumps({"schema": "roofline.system/1", "name": "s", "device": "h100", "devices_per_node": 8,
                     "nodes": 1, "tiers": [{"name": "nv", "scope": "node", "bandwidth": "450 GB/s",
                                            "latency": "1 us"}]})
DEVICE = json.dumps({"schema": "roofline.device/1", "name": "toy", "kind": "cpu", "compute": [
    {"unit": "vector", "precision": "fp32", "flops": 1e12, "provenance": {"kind": "user", "source": "t"}}],
    "memory": [{"level": "DRAM", "bandwidth": 1e11, "capacity": 1e10}]})
AN = ("analyze", "w.json", "--device", "h100")
TR = ("trace", "t.json", "--device", "h100")
PLAN = ("plan", "llama-2-7b", "--system", "dgx-h100", "--serve")


def _still(path: str, kind: str) -> str:
    test = {"chr": "is_char_device", "fifo": "is_fifo", "symlink": "is_symlink"}[kind]
    return f"Path(tmp, {path!r}).{test}()"


def out_ok(name: str, argv: tuple[str, ...], files: dict[str, Any], target: str, node: Special,
           extra: str = "") -> Case:
    """Writing onto ``target`` (a node or link made as ``node``) succeeds and leaves it what it was."""
    kind = node.kind
    check = _still(target, kind) + (f" and {extra}" if extra else "")
    return Case(f"special/out-{name}", "special-outputs", argv[0], argv, files={**files, target: node},
                expect="ok", check=check)


def out_bad(name: str, argv: tuple[str, ...], files: dict[str, Any], target: str, node: Special,
            names: str) -> Case:
    """Writing onto ``target`` fails with one line naming it, and leaves it what it was."""
    return Case(f"special/out-{name}", "special-outputs", argv[0], argv, files={**files, target: node},
                names=names, check=_still(target, node.kind))


def link(target: str) -> Special:
    return Special("symlink", target=target)


SPECIAL_OUTPUTS = [
    out_ok("analyze-json-null", (*AN, "--json", "o.json"), {"w.json": W}, "o.json", NULL),
    out_ok("analyze-csv-null", (*AN, "--csv", "o.csv"), {"w.json": W}, "o.csv", NULL),
    out_ok("analyze-html-null", (*AN, "--html", "o.html"), {"w.json": W}, "o.html", NULL),
    out_ok("analyze-png-null", (*AN, "-o", "o.png"), {"w.json": W}, "o.png", NULL),
    out_ok("trace-json-null", (*TR, "--json", "o.json"), {"t.json": TRACE}, "o.json", NULL),
    out_ok("trace-csv-null", (*TR, "--csv", "o.csv"), {"t.json": TRACE}, "o.csv", NULL),
    out_ok("plan-json-null", (*PLAN, "--json", "full.json"), {}, "full.json", NULL),
    out_ok("calibrate-out-null", ("calibrate", "--from-trace", "t.json", "--device", "h100", "--out", "c.json"),
           {"t.json": TRACE3}, "c.json", NULL),
    out_ok("llm-json-null", ("llm", "llama-2-7b", "--device", "h100", "--json", "o.json"), {}, "o.json", NULL),
    out_ok("compare-json-null", ("compare", "w.json", "--devices", "h100,a100", "--json", "o.json"),
           {"w.json": W}, "o.json", NULL),
    out_ok("report-json-null", ("report", "a.json", "--json", "o.json"), {}, "o.json", NULL),
    out_bad("analyze-json-full", (*AN, "--json", "full.json"), {"w.json": W}, "full.json", FULL, "full.json"),
    out_bad("plan-json-full", (*PLAN, "--json", "full.json"), {}, "full.json", FULL, "full.json"),
    out_bad("trace-csv-full", (*TR, "--csv", "full.csv"), {"t.json": TRACE}, "full.csv", FULL, "full.csv"),
    out_bad("calibrate-out-full", ("calibrate", "--from-trace", "t.json", "--device", "h100", "--out", "c.json"),
            {"t.json": TRACE3}, "c.json", FULL, "c.json"),
    out_bad("analyze-json-fifo-no-reader", (*AN, "--json", "o.json"), {"w.json": W}, "o.json", FIFO, "o.json"),
    out_bad("trace-json-fifo-no-reader", (*TR, "--json", "o.json"), {"t.json": TRACE}, "o.json", FIFO, "o.json"),
    out_bad("plan-json-fifo-no-reader", (*PLAN, "--json", "o.json"), {}, "o.json", FIFO, "o.json"),
    # the symlink rule (issue 53): a link is refused whatever it points to, its target untouched
    out_bad("analyze-json-symlink-to-file", (*AN, "--json", "o.json"), {"w.json": W, "real.json": "old"}, "o.json",
            link("real.json"), "symbolic link to 'real.json'"),
    out_bad("analyze-json-symlink-to-null", (*AN, "--json", "o.json"), {"w.json": W, "n": NULL}, "o.json",
            link("{tmp}/n"), "o.json"),
    out_bad("analyze-json-dangling-symlink", (*AN, "--json", "o.json"), {"w.json": W}, "o.json",
            link("{tmp}/nowhere/x.json"), "o.json"),
    out_bad("analyze-json-symlink-to-dir", (*AN, "--json", "o.json"), {"w.json": W, "d": DIR}, "o.json",
            link("{tmp}/d"), "o.json"),
]
# report reads a saved analysis: make one (the analysis of W on h100) for the report case
_A = None


def _analysis() -> str:
    global _A
    if _A is None:
        from roofline import Workload, analyze, get_device

        _A = analyze(Workload.from_dict(json.loads(W)), get_device("h100")).to_dict()
        _A = json.dumps(_A)
    return _A


SPECIAL_OUTPUTS = [c if c.name != "special/out-report-json-null" else
                   Case(c.name, c.cls, c.command, c.argv, files={**c.files, "a.json": _analysis()}, expect="ok",
                        check=c.check) for c in SPECIAL_OUTPUTS]


def inp(name: str, argv: tuple[str, ...], node: Special, path: str, files: dict[str, Any] | None = None,
        names: str = "") -> Case:
    return Case(f"special/in-{name}", "special-inputs", argv[0], argv, files={**(files or {}), path: node},
                names=names or path)


SPECIAL_INPUTS = [
    inp("workload-fifo", AN, FIFO, "w.json"),
    inp("workload-csv-fifo", ("analyze", "w.csv", "--device", "h100"), FIFO, "w.csv"),
    inp("workload-zero-device", AN, ZERO, "w.json"),
    inp("workload-dir", AN, DIR, "w.json"),
    inp("device-fifo", ("analyze", "w.json", "--device", "d.json"), FIFO, "d.json", {"w.json": W}),
    inp("device-zero", ("device", "d.json"), ZERO, "d.json"),
    inp("system-fifo", ("plan", "llama-2-7b", "--system", "s.json", "--serve"), FIFO, "s.json"),
    inp("system-zero", ("plan", "llama-2-7b", "--system", "s.json", "--serve"), ZERO, "s.json"),
    inp("system-dir", ("plan", "llama-2-7b", "--system", "s.json", "--serve"), DIR, "s.json"),
    inp("calibration-fifo", (*AN, "--forecast", "--calibration", "c.json"), FIFO, "c.json", {"w.json": W}),
    inp("calibration-zero", (*AN, "--forecast", "--calibration", "c.json"), ZERO, "c.json", {"w.json": W}),
    inp("calibration-dir", (*AN, "--forecast", "--calibration", "c.json"), DIR, "c.json", {"w.json": W}),
    inp("trace-fifo", TR, FIFO, "t.json"),
    inp("trace-zero", TR, ZERO, "t.json"),
    inp("trace-gz-zero", ("trace", "t.json.gz", "--device", "h100"), ZERO, "t.json.gz"),
    inp("calibrate-from-trace-fifo", ("calibrate", "--from-trace", "t.json", "--device", "h100", "--out", "c.json"), FIFO, "t.json"),
    inp("llm-config-fifo", ("llm", "config.json", "--device", "h100"), FIFO, "config.json"),
    inp("llm-config-zero", ("llm", "config.json", "--device", "h100"), ZERO, "config.json"),
    inp("onnx-fifo", ("onnx", "m.onnx", "--device", "h100"), FIFO, "m.onnx"),
    inp("onnx-zero", ("onnx", "m.onnx", "--device", "h100"), ZERO, "m.onnx"),
    inp("onnx-dir", ("onnx", "m.onnx", "--device", "h100"), DIR, "m.onnx"),
    inp("report-fifo", ("report", "a.json"), FIFO, "a.json"),
    inp("compare-workload-fifo", ("compare", "w.json", "--devices", "h100"), FIFO, "w.json"),
    inp("trace-ranks-file-fifo", ("trace", "t.json", "--device", "h100", "--ranks", "r.txt"), FIFO, "r.txt",
        {"t.json": TRACE}),
    inp("api-system-load-fifo", ("plan", "llama-2-7b", "--system", "s.json", "--serve"), link("{tmp}/f"), "s.json",
        {"f": FIFO}),
    Case("special/in-api-device-fifo", "special-inputs", "api", code="from roofline import Device\n"
         "Device.load('{tmp}/d.json')", files={"d.json": FIFO}, names="d.json"),
    Case("special/in-api-read-trace-fifo", "special-inputs", "api", code="import roofline\n"
         "roofline.read_trace('{tmp}/t.json')", files={"t.json": FIFO}, names="t.json"),
    Case("special/in-api-onnx-fifo", "special-inputs", "api", code="import roofline\n"
         "roofline.from_onnx('{tmp}/m.onnx')", files={"m.onnx": FIFO}, names="m.onnx"),
]


def _gz_whitespace(total: int, member: int = 64 << 20) -> bytes:
    """A gzip file of ``total`` bytes of spaces, as repeated members (each compressed once: fast to make)."""
    one = gzip.compress(b" " * member, compresslevel=9)
    return one * (total // member)


def _gz(text: str | bytes) -> bytes:
    return gzip.compress(text.encode() if isinstance(text, str) else text, compresslevel=6)


_BOMB: dict[str, bytes] = {}


def bomb() -> bytes:
    """2 GiB of whitespace, about 2 MB compressed."""
    if "b" not in _BOMB:
        _BOMB["b"] = _gz_whitespace(2 << 30)
    return _BOMB["b"]


def _events(n: int, distinct: bool = False) -> str:
    evs = [{**EV, "name": f"aten::mm_{i}" if distinct else "aten::mm", "ts": 10.0 + i} for i in range(n)]
    return json.dumps({"schemaVersion": 1, "traceEvents": evs})


def _env_cli(env: dict[str, str], argv: tuple[str, ...]) -> str:
    return (f"import os\nos.environ.update({env!r})\nfrom roofline import cli\n"
            f"rc = cli.main({list(argv)!r})\nif rc:\n    raise SystemExit(rc)\n")


def gzc(name: str, data: bytes, names: str = "t.json.gz", argv: tuple[str, ...] = ("trace", "t.json.gz",
        "--device", "h100", "--json", "o.json"), env: dict[str, str] | None = None, expect: str = "error",
        check: str = "") -> Case:
    if env:
        return Case(f"decompress/{name}", "decompression", "trace", code=_env_cli(env, argv),
                    files={argv[1]: data}, names=names, outputs=("o.json",), expect=expect, check=check)
    return Case(f"decompress/{name}", "decompression", "trace", argv, files={argv[1]: data}, names=names,
                outputs=("o.json",), expect=expect, check=check)


def _deflate_raw(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


DECOMPRESSION = [
    gzc("2gib-whitespace", bomb()),
    gzc("2gib-whitespace-after-header", _gz('{"schemaVersion": 1, "traceEvents": [') + bomb()),
    gzc("whitespace-between-events", _gz('{"schemaVersion": 1, "traceEvents": [' + json.dumps(EV) + ",")
        + bomb() + _gz(json.dumps(EV) + "]}")),
    gzc("whitespace-after-the-trace", _gz(TRACE) + bomb()),
    gzc("limit-env-small", _gz(_events(200)), "ROOFLINE_MAX_INPUT_BYTES", env={"ROOFLINE_MAX_INPUT_BYTES": "4096"}),
    gzc("limit-env-plain-file", _events(200).encode(), "ROOFLINE_MAX_INPUT_BYTES",
        argv=("trace", "t.json", "--device", "h100", "--json", "o.json"), env={"ROOFLINE_MAX_INPUT_BYTES": "4096"}),
    gzc("events-cap-env", _gz(_events(500)), "ROOFLINE_MAX_TRACE_EVENTS", env={"ROOFLINE_MAX_TRACE_EVENTS": "100"}),
    gzc("names-cap-env", _gz(_events(500, distinct=True)), "ROOFLINE_MAX_TRACE_NAMES",
        env={"ROOFLINE_MAX_TRACE_NAMES": "100"}),
    gzc("names-cap-env-plain", _events(500, distinct=True).encode(), "ROOFLINE_MAX_TRACE_NAMES",
        argv=("trace", "t.json", "--device", "h100", "--json", "o.json"), env={"ROOFLINE_MAX_TRACE_NAMES": "100"}),
    Case("decompress/events-cap-env-reference", "decompression", "api", code="import os\n"
         "os.environ['ROOFLINE_MAX_TRACE_EVENTS'] = '100'\n"
         "from roofline.frontends.trace.events import read_events\n"
         "read_events('{tmp}/t.json', parser='reference')", files={"t.json": _events(500)},
         names="ROOFLINE_MAX_TRACE_EVENTS"),
    Case("decompress/names-cap-env-stdlib", "decompression", "api", code="import os\n"
         "os.environ['ROOFLINE_MAX_TRACE_NAMES'] = '100'\n"
         "from roofline.frontends.trace.events import read_events\n"
         "read_events('{tmp}/t.json', parser='stdlib')", files={"t.json": _events(500, distinct=True)},
         names="ROOFLINE_MAX_TRACE_NAMES"),
    gzc("events-under-the-cap", _gz(_events(50)), env={"ROOFLINE_MAX_TRACE_EVENTS": "100"}, expect="ok",
        names="", check="Path(tmp, 'o.json').exists()"),
    gzc("gzip-of-gzip", _gz(_gz(TRACE))),
    gzc("gzip-truncated", _gz(TRACE)[:-12]),
    gzc("gzip-crc-wrong", _gz(TRACE)[:-8] + b"\0\0\0\0" + _gz(TRACE)[-4:]),
    gzc("gzip-then-garbage", _gz(TRACE) + b"garbage"),
    gzc("deflate-2gib-brackets", _deflate_raw(b"[" * (64 << 20))),
    gzc("calibrate-from-bomb", bomb(), argv=("calibrate", "--from-trace", "t.json.gz", "--device", "h100", "--out",
        "o.json")),
    Case("decompress/api-read-trace-bomb", "decompression", "api", code="import roofline\n"
         "roofline.read_trace('{tmp}/t.json.gz')", files={"t.json.gz": bomb()}, names="t.json.gz"),
]

CASES = SPECIAL_OUTPUTS + SPECIAL_INPUTS + DECOMPRESSION
