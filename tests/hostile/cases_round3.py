"""Hostile input, third round (issue 53): unbounded work, serving request traces, warnings that break the one
line, values that were accepted, the newest API, symlinked outputs, names that look like patterns, nested
trace arguments, the GPU acceptance script and remote (Dask) engines.

Each class names the legality rule it holds the project to (docs: the closing note of issue 53):

* ``work-limits``: work sized by a count is refused past a stated limit, in one line naming the limit's
  environment variable (``ROOFLINE_MAX_REQUESTS`` 20,000, ``ROOFLINE_MAX_SERVE_WORK`` 200,000
  request-simulations, ``ROOFLINE_MAX_GLOBAL_BATCH`` 2**24 sequences, ``ROOFLINE_MAX_JOBS`` 256);
* ``request-traces``: a ``serve --trace`` file goes through the guarded reader: compressed or binary files,
  CSV fields past the csv module's limit, JSON nested too deeply, numbers too long are one line;
* ``resource-warnings``: with ResourceWarning shown, a failing input leaves no file open (one line, no warning);
* ``accepted-values``: values that used to be accepted (an infinite price, empty names, empty --layout items,
  a group size that is not a power of two, ``head_dim: 0``, a foreign schema in a CSV header);
* ``api-boundary``: the newest public functions name themselves and the parameter at fault;
* ``symlink-outputs``: an output path that is a symbolic link is refused, naming the link and its target,
  whatever it points to; neither is touched;
* ``names-not-patterns``: a trace path that exists is read as given (``[``, ``*``, ``?``, ``<`` or an escape
  sequence in its name); only a missing one is expanded as a glob; names are escaped wherever shown;
* ``nested-dims``: trace arguments nested past the parser's depth are one line, never a RecursionError;
* ``gpu-acceptance``: ``benchmarks/gpu_acceptance.py`` checks ``--fake``, ``--out`` (a regular file: never a
  folder, fifo, device or link), ``--budget`` before any step, in one line;
* ``remote-engines``: ``--dask ADDRESS`` / ``dask=``: the type first, then a connection with a timeout, a
  scheduler that never speaks or answers junk named in one line.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from hostile.cases_special import TRACE, TRACE3, W
from hostile.harness import Case, Special

M = "llama-2-7b"
SERVE = ("serve", M, "--device", "h100")
PLAN = ("plan", M, "--system", "dgx-h100", "--train")
TR = ("trace", "t.json", "--device", "h100")
FIFO, DIR = Special("fifo"), Special("dir")
REQS = "arrival,input,output\n0,128,16\n0.5,256,32\n"
BENCH = str(Path(__file__).resolve().parents[2] / "benchmarks")


def err(cls: str, name: str, argv: tuple[str, ...], names: str, files: dict[str, Any] | None = None,
        outputs: tuple[str, ...] = (), check: str = "") -> Case:
    return Case(f"r3/{cls}/{name}", cls, argv[0], argv, files=files or {}, names=names, outputs=outputs,
                check=check)


def code(cls: str, name: str, body: str, names: str, files: dict[str, Any] | None = None, check: str = "",
         expect: str = "error") -> Case:
    return Case(f"r3/{cls}/{name}", cls, "api", code=body, files=files or {}, names=names, check=check,
                expect=expect)


def _gz(text: str) -> bytes:
    return gzip.compress(text.encode(), mtime=0)


def _nested(depth: int, field: str = "Input Dims") -> str:
    args = {"Input type": ["float"], "Input Dims": [[8, 16]], "Concrete Inputs": [""]}
    text = json.dumps({"schemaVersion": 1, "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1.0, "dur": 2.0, "args": args}]})
    return text.replace(json.dumps(args[field]), "[" * depth + "1" + "]" * depth, 1)


# 1. work sized by a count
WL = "work-limits"
WORK = [
    err(WL, "serve-a-million-requests", (*SERVE, "--requests", "1000000", "--rate", "1000"), "ROOFLINE_MAX_REQUESTS"),
    err(WL, "serve-200k-requests", (*SERVE, "--requests", "200000", "--rate", "1000"), "ROOFLINE_MAX_REQUESTS"),
    err(WL, "serve-closed-loop-past-limit", (*SERVE, "--requests", "20001", "--concurrency", "4"),
        "ROOFLINE_MAX_REQUESTS"),
    err(WL, "serve-sweep-work", (*SERVE, "--sweep-rate", "--slo", "ttft=2s", "--requests", "20000", "--tp", "1,2"),
        "ROOFLINE_MAX_SERVE_WORK"),
    err(WL, "serve-sweep-many-tp", (*SERVE, "--sweep-rate", "--slo", "ttft=2s", "--tp", ",".join(["1"] * 20)),
        "ROOFLINE_MAX_SERVE_WORK"),
    err(WL, "serve-trace-past-limit", (*SERVE, "--trace", "r.csv"), "ROOFLINE_MAX_REQUESTS",
        {"r.csv": "arrival,input,output\n" + "0,8,8\n" * 20001}),
    err(WL, "plan-global-batch-1e12", (*PLAN, "--global-batch", str(10**12), "--json", "o.json"),
        "ROOFLINE_MAX_GLOBAL_BATCH", outputs=("o.json",)),
    err(WL, "plan-global-batch-past-limit", (*PLAN, "--global-batch", str(2**24 + 1)), "ROOFLINE_MAX_GLOBAL_BATCH"),
    err(WL, "trace-jobs-2-63", (*TR, "--jobs", str(2**63)), "ROOFLINE_MAX_JOBS", {"t.json": TRACE}),
    err(WL, "trace-jobs-257", (*TR, "--jobs", "257"), "ROOFLINE_MAX_JOBS", {"t.json": TRACE}),
    code(WL, "api-training-run-global-batch", "import roofline\nfrom roofline.llm.training import TrainingRun\n"
         f"TrainingRun.of({M!r}, global_batch=10**12)", "ROOFLINE_MAX_GLOBAL_BATCH"),
]

# 2. request-trace files for serve --trace
RT = "request-traces"


def rtrace(name: str, fname: str, content: str | bytes | Special, names: str) -> Case:
    return err(RT, name, (*SERVE, "--trace", fname, "--json", "o.json"), names, {fname: content},
               outputs=("o.json",))


REQUEST_TRACES = [
    rtrace("csv-400-digits", "r.csv", "arrival,input,output\n0," + "9" * 400 + ",5\n", "input"),
    rtrace("jsonl-400-digits", "r.jsonl", '{"arrival": 0, "input": ' + "9" * 400 + ', "output": 5}\n', "input"),
    rtrace("jsonl-5000-digits", "r.jsonl", '{"arrival": 0, "input": ' + "9" * 5000 + ', "output": 5}\n',
           "too long"),
    rtrace("jsonl-100k-brackets", "r.jsonl", "[" * 100_000 + "\n", "nested too deeply"),
    rtrace("jsonl-deep-object", "r.jsonl", '{"arrival": ' + "[" * 100_000 + "\n", "r.jsonl"),
    rtrace("csv-giant-field", "r.csv", "arrival,input,output\n0," + "x" * (2 << 20) + ",5\n", "field larger"),
    rtrace("csv-gzip", "r.csv", _gz(REQS), "gzip"),
    rtrace("jsonl-gzip", "r.jsonl", _gz('{"arrival": 0, "input": 8, "output": 8}\n'), "gzip"),
    rtrace("csv-binary", "r.csv", b"arrival,input,output\n\x00\x01\x02\x00", "binary"),
    rtrace("csv-fifo", "r.csv", FIFO, "r.csv"),
    rtrace("csv-dir", "r.csv", DIR, "r.csv"),
    rtrace("jsonl-arrival-1e400", "r.jsonl", '{"arrival": 1e400, "input": 8, "output": 8}\n', "arrival"),
    rtrace("jsonl-list-line", "r.jsonl", "[1, 2, 3]\n", "expected an object"),
    rtrace("csv-empty", "r.csv", "", "no requests"),
]

# 4. warnings that break the one line: ResourceWarning shown, the CLI run in this process
RW = "resource-warnings"


def warned(name: str, argv: tuple[str, ...], names: str, files: dict[str, Any]) -> Case:
    body = ("import gc, sys, warnings\nwarnings.simplefilter('always', ResourceWarning)\nfrom roofline import cli\n"
            f"rc = cli.main({list(argv)!r})\ngc.collect()\nsys.exit(rc)\n")
    return code(RW, name, body, names, files)


BAD_GZ = b"\x1f\x8b\x08\x00garbage"
CUT_GZ = _gz(TRACE * 50)[:200]
RESOURCE = [
    warned("trace-bad-gzip", ("trace", "t.json.gz", "--device", "h100"), "t.json.gz", {"t.json.gz": BAD_GZ}),
    warned("trace-cut-gzip", ("trace", "t.json.gz", "--device", "h100"), "t.json.gz", {"t.json.gz": CUT_GZ}),
    warned("trace-two-bad-ranks", ("trace", "a.json.gz", "b.json.gz", "--device", "h100"), "rank 0",
           {"a.json.gz": BAD_GZ, "b.json.gz": CUT_GZ}),
    warned("trace-gzip-empty", ("trace", "t.json.gz", "--device", "h100"), "t.json.gz", {"t.json.gz": _gz("")}),
    warned("calibrate-bad-gzip", ("calibrate", "--from-trace", "t.json.gz", "--device", "h100", "--out", "c.json"),
           "t.json.gz", {"t.json.gz": BAD_GZ}),
    warned("calibrate-cut-gzip", ("calibrate", "--from-trace", "t.json.gz", "--device", "h100", "--out", "c.json"),
           "t.json.gz", {"t.json.gz": CUT_GZ}),
    warned("trace-gzip-not-json", ("trace", "t.json.gz", "--device", "h100"), "t.json.gz",
           {"t.json.gz": _gz("not json at all")}),
    warned("serve-trace-gzip", (*SERVE, "--trace", "r.csv"), "gzip", {"r.csv": _gz(REQS)}),
    warned("serve-trace-binary", (*SERVE, "--trace", "r.csv"), "binary", {"r.csv": b"\x00" * 64}),
    warned("analyze-bad-workload", ("analyze", "w.json", "--device", "h100"), "w.json", {"w.json": "{"}),
    warned("trace-gzip-dir", ("trace", "t.json.gz", "--device", "h100"), "t.json.gz", {"t.json.gz": DIR}),
]

# 5. bad values accepted until now
AV = "accepted-values"
CAL = {"schema": "roofline.calibration/2", "device": "h100", "tables": [
    {"kind": "attention", "term": "compute", "axis": "keys", "head_dim": 0,
     "points": [{"x": 512, "efficiency": 0.5, "source": "s"}]}], "sources": {"s": "a paper"}}
ACCEPTED = [
    err(AV, "serve-price-inf", (*SERVE, "--rate", "1", "--requests", "4", "--price", "inf"), "--price"),
    err(AV, "serve-price-nan", (*SERVE, "--rate", "1", "--requests", "4", "--price", "nan"), "--price"),
    err(AV, "serve-engine-empty", (*SERVE, "--rate", "1", "--requests", "4", "--engine", ""), "--engine"),
    err(AV, "serve-engine-blank", (*SERVE, "--rate", "1", "--requests", "4", "--engine", "  "), "--engine"),
    err(AV, "serve-json-empty", (*SERVE, "--rate", "1", "--requests", "4", "--json", ""), "--json"),
    err(AV, "serve-html-empty", (*SERVE, "--rate", "1", "--requests", "4", "--html", ""), "--html"),
    err(AV, "plan-layout-commas", (*PLAN, "--layout", ",,"), "--layout"),
    err(AV, "plan-layout-trailing-comma", (*PLAN, "--layout", "tp=8,"), "--layout"),
    err(AV, "llm-group-size-3", ("llm", M, "--device", "h100", "--wbits", "4", "--group-size", "3"), "group_size"),
    err(AV, "llm-group-size-1", ("llm", M, "--device", "h100", "--wbits", "4", "--group-size", "1"), "group_size"),
    err(AV, "workload-csv-evil-schema", ("analyze", "w.csv", "--device", "h100"), "evil/9",
        {"w.csv": '# {"schema": "evil/9"}\nname,kind,flops,bytes_read,bytes_written\na,matmul,1e9,1e6,1e6\n'}),
]

# 6. the API boundary on the newest functions (class shared with cases_api.py)
API = "api-boundary"
SERV = ("import math, roofline\nfrom roofline.serving.figures import Slo, price_per_mtok\n"
        "from roofline.serving.requests import Traffic, read_trace\nfrom roofline.serving.sweep import sweep_rate\n"
        "from roofline.llm.training import TrainingRun\n")
API_CASES = [
    code(API, "read-trace-int", SERV + "read_trace(123)", "read_trace: path"),
    code(API, "read-trace-bytes", SERV + "read_trace(b'r.csv')", "read_trace: path"),
    code(API, "sweep-rate-slo-none", SERV + f"sweep_rate({M!r}, 'h100', tps=(1,), traffic=Traffic(), slo=None)",
         "sweep_rate: slo"),
    code(API, "sweep-rate-tps-empty", SERV + f"sweep_rate({M!r}, 'h100', tps=(), traffic=Traffic(), slo=Slo(1.0))",
         "sweep_rate: tps"),
    code(API, "sweep-rate-tps-string", SERV + f"sweep_rate({M!r}, 'h100', tps='8', traffic=Traffic(), "
         "slo=Slo(1.0))", "sweep_rate: tps"),
    code(API, "price-per-mtok-nan", SERV + "price_per_mtok(math.nan, 0, 0.0)", "price_per_mtok: price_per_device_hour"),
    code(API, "price-per-mtok-zero-tokens", SERV + "price_per_mtok(2.0, 8, 0.0)", "price_per_mtok: output_tokens_per_s"),
    code(API, "slo-negative", SERV + "Slo(-1.0, None)", "Slo: ttft"),
    code(API, "slo-string", SERV + "Slo(None, '200ms')", "Slo: tpot"),
    code(API, "training-run-seq-0", SERV + f"TrainingRun(roofline.llm.training.load_arch({M!r}), seq=0, "
         "global_batch=32)", "TrainingRun: seq"),
    code(API, "training-run-batch-negative", SERV + f"TrainingRun(roofline.llm.training.load_arch({M!r}), "
         "seq=4096, global_batch=-32)", "TrainingRun: global_batch"),
    code(API, "read-traces-dask-int", "import roofline\nroofline.read_traces(['t.json'], dask=7)",
         "read_traces: dask", {"t.json": TRACE}),
]

# 7. symlinked outputs
SL = "symlink-outputs"


def linked(name: str, argv: tuple[str, ...], files: dict[str, Any] | None = None) -> Case:
    """``argv``'s output ``o.EXT`` (its last argument) is a link to ``real.EXT``: refused, both untouched."""
    out = argv[-1]
    real = "real" + out[1:]
    keep = f"Path(tmp, {real!r}).read_text() == 'old' and Path(tmp, {out!r}).is_symlink()"
    return err(SL, name, argv, f"symbolic link to {real!r}",
               {**(files or {}), real: "old", out: Special("symlink", target=real)}, check=keep)


SYMLINKS = [
    linked("analyze-json", ("analyze", "w.json", "--device", "h100", "--json", "o.json"), {"w.json": W}),
    linked("analyze-csv", ("analyze", "w.json", "--device", "h100", "--csv", "o.csv"), {"w.json": W}),
    linked("analyze-html", ("analyze", "w.json", "--device", "h100", "--html", "o.html"), {"w.json": W}),
    linked("llm-json", ("llm", M, "--device", "h100", "--json", "o.json")),
    linked("trace-json", (*TR, "--json", "o.json"), {"t.json": TRACE}),
    linked("trace-csv", (*TR, "--csv", "o.csv"), {"t.json": TRACE}),
    linked("calibrate-out", ("calibrate", "--from-trace", "t.json", "--device", "h100", "--out", "o.json"),
           {"t.json": TRACE3}),
    linked("compare-json", ("compare", "w.json", "--devices", "h100,a100", "--json", "o.json"), {"w.json": W}),
    err(SL, "serve-json", (*SERVE, "--rate", "1", "--requests", "4", "--json", "o.json"), "symbolic link",
        {"real.json": "old", "o.json": Special("symlink", target="real.json")},
        check="Path(tmp, 'real.json').read_text() == 'old'"),
    err(SL, "plan-json", (*PLAN, "--json", "o.json"), "symbolic link",
        {"real.json": "old", "o.json": Special("symlink", target="real.json")},
        check="Path(tmp, 'real.json').read_text() == 'old'"),
    err(SL, "analyze-link-to-link", ("analyze", "w.json", "--device", "h100", "--json", "o.json"), "symbolic link",
        {"w.json": W, "real.json": "old", "mid.json": Special("symlink", target="real.json"),
         "o.json": Special("symlink", target="mid.json")}, check="Path(tmp, 'real.json').read_text() == 'old'"),
]

# 8. names are names, not patterns
NP = "names-not-patterns"
NOT_TRACE = "{}"


def named(name: str, fname: str, content: str, names: str, expect: str = "error") -> Case:
    c = err(NP, name, ("trace", fname, "--device", "h100"), names, {fname: content})
    return c if expect == "error" else Case(c.name, c.cls, c.command, c.argv, files=c.files, expect="ok")


NAMES = [
    named("bracket-read-as-given", "t[1].json", TRACE, "", expect="ok"),
    named("star-read-as-given", "t*.json", TRACE, "", expect="ok"),
    named("question-read-as-given", "t?.json", TRACE, "", expect="ok"),
    named("bracket-bad-content", "t[1].json", NOT_TRACE, "t[1].json"),
    named("angle-bad-content", "t<1>.json", NOT_TRACE, "t<1>.json"),
    named("escape-in-name", "t\x1b[31m.json", NOT_TRACE, "t\\x1b[31m.json"),
    named("escape-bracket-read-as-given", "t\x1b[2J.json", TRACE, "", expect="ok"),
    err(NP, "missing-bracket-is-a-pattern", ("trace", "nope[0-9].json", "--device", "h100"), "matches this pattern"),
    err(NP, "missing-escape-pattern", ("trace", "x\x1b[1m*.json", "--device", "h100"), "matches this pattern"),
    err(NP, "bracket-name-with-ranks", ("trace", "a[0].json", "a[1].json", "--device", "h100"), "a[1].json",
        {"a[0].json": TRACE, "a[1].json": NOT_TRACE}),
]

# 9. nested trace arguments
ND = "nested-dims"
NESTED = [
    err(ND, "dims-1000", (*TR, "--json", "o.json"), "t.json", {"t.json": _nested(1000)}, outputs=("o.json",)),
    err(ND, "dims-100000", (*TR, "--json", "o.json"), "t.json", {"t.json": _nested(100_000)}, outputs=("o.json",)),
    err(ND, "types-100000", TR, "t.json", {"t.json": _nested(100_000, "Input type")}),
    err(ND, "concrete-100000", TR, "t.json", {"t.json": _nested(100_000, "Concrete Inputs")}),
    err(ND, "dims-100000-gzip", ("trace", "t.json.gz", "--device", "h100"), "t.json.gz",
        {"t.json.gz": _gz(_nested(100_000))}),
    err(ND, "dims-1000-calibrate", ("calibrate", "--from-trace", "t.json", "--device", "h100", "--out", "c.json"),
        "t.json", {"t.json": _nested(1000)}, outputs=("c.json",)),
    err(ND, "dims-100000-two-ranks", ("trace", "a.json", "b.json", "--device", "h100"), "a.json",
        {"a.json": _nested(100_000), "b.json": TRACE}),
    code(ND, "api-reference-parser", "from roofline.frontends.trace.events import read_events\n"
         "read_events('t.json', parser='reference')", "t.json", {"t.json": _nested(100_000)}),
    code(ND, "api-stdlib-parser", "from roofline.frontends.trace.events import read_events\n"
         "read_events('t.json', parser='stdlib')", "t.json", {"t.json": _nested(100_000)}),
    code(ND, "api-read-events", "from roofline.frontends.trace.events import read_events\nread_events('t.json')",
         "t.json",
         {"t.json": _nested(100_000)}),
]

# 10. benchmarks/gpu_acceptance.py
GA = "gpu-acceptance"


def accept(name: str, args: list[str], names: str, files: dict[str, Any] | None = None, check: str = "") -> Case:
    body = (f"import sys\nsys.path.insert(0, {BENCH!r})\nimport gpu_acceptance\n"
            f"sys.exit(gpu_acceptance.main({args!r}))\n")
    return Case(f"r3/{GA}/{name}", GA, "gpu_acceptance", code=body, files=files or {}, names=names, check=check)


GPU_ACCEPTANCE = [
    accept("fake-bogus", ["--fake", "bogus"], "--fake"),
    accept("fake-escape", ["--fake", "\x1b[31mx"], "--fake"),
    accept("out-dir", ["--out", "d"], "d", {"d": DIR}),
    accept("out-fifo", ["--out", "f.json"], "f.json", {"f.json": FIFO}, check="Path(tmp, 'f.json').is_fifo()"),
    accept("out-symlink", ["--out", "o.json"], "symbolic link", {"real.json": "old",
           "o.json": Special("symlink", target="real.json")}, check="Path(tmp, 'real.json').read_text() == 'old'"),
    accept("out-missing-folder", ["--out", "no/such/x.json"], "does not exist"),
    accept("out-escape-missing-folder", ["--out", "\x1b[2Jno/x.json"], "does not exist"),
    accept("out-empty", ["--out", ""], "--out"),
    accept("budget-nan", ["--budget", "nan"], "--budget"),
    accept("budget-negative", ["--budget", "-1"], "--budget"),
    accept("only-bogus", ["--only", "bogus"], "bogus"),
    accept("unknown-option", ["--bogus"], "--bogus"),
]

# 3. remote engines: a local socket that accepts and never speaks, or answers junk (the connect timeout shortened)
RE = "remote-engines"
SERVER = """import socket, sys, threading
import roofline.frontends.trace.ranks as ranks
ranks.CONNECT_TIMEOUT_S = 1.0
srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(8)
PORT = srv.getsockname()[1]
held = []
def serve():
    while True:
        c, _ = srv.accept(); held.append(c)
        if ANSWER == 'close':
            c.close()
        elif ANSWER:
            c.sendall(ANSWER)
threading.Thread(target=serve, daemon=True).start()
ADDRESS = f'tcp://127.0.0.1:{PORT}'
"""


def remote(name: str, answer: bytes | str | None, call: str, names: str) -> Case:
    body = f"ANSWER = {answer!r}\n" + SERVER + "from roofline import cli\nimport roofline\n" + call
    return code(RE, name, body, names, {"t.json": TRACE})


REMOTE = [
    remote("cli-silent", None, "sys.exit(cli.main(['trace', 't.json', '--device', 'h100', '--dask', ADDRESS]))",
           "no Dask scheduler answered"),
    remote("api-silent", None, "roofline.read_traces(['t.json'], dask=ADDRESS)", "no Dask scheduler answered"),
    remote("cli-junk", b"\xff" * 4096, "sys.exit(cli.main(['trace', 't.json', '--device', 'h100', '--dask', ADDRESS]))",
           "not a Dask handshake"),
    remote("api-junk", b"\xff" * 4096, "roofline.read_traces(['t.json'], dask=ADDRESS)", "not a Dask handshake"),
    remote("api-closes", "close", "roofline.read_traces(['t.json'], dask=ADDRESS)", "127.0.0.1"),
    remote("cli-closes", "close", "sys.exit(cli.main(['trace', 't.json', '--device', 'h100', '--dask', ADDRESS]))",
           "127.0.0.1"),
    remote("api-dask-int", None, "roofline.read_traces(['t.json'], dask=7)", "read_traces: dask"),
    remote("api-dask-list", None, "roofline.read_traces(['t.json'], dask=[ADDRESS])", "read_traces: dask"),
    remote("cli-no-port", None, "sys.exit(cli.main(['trace', 't.json', '--device', 'h100', '--dask', "
           "'tcp://127.0.0.1']))", "--dask"),
    remote("cli-port-out-of-range", None, "sys.exit(cli.main(['trace', 't.json', '--device', 'h100', '--dask', "
           "'tcp://127.0.0.1:99999']))", "--dask"),
    remote("cli-escape-address", None, "sys.exit(cli.main(['trace', 't.json', '--device', 'h100', '--dask', "
           "'\\x1b[31m:1']))", "--dask"),
]

CASES = WORK + REQUEST_TRACES + RESOURCE + ACCEPTED + API_CASES + SYMLINKS + NAMES + NESTED + GPU_ACCEPTANCE + REMOTE
