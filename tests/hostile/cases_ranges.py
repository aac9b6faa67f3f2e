"""Numbers beyond range and names from caches and system files (issue 33).

Classes: ``number-ranges`` (every number read from a file, trace fields included, is an int64 integer or a
finite float, and a range fault is one line: no OverflowError, no numpy warning on stderr) and
``hostile-caches`` (names from a cached device, a calibration, a system file or a model config reach the
terminal, charts and HTML only through the sanitiser: no raw control character, no applied markup).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hostile.harness import Case

ESC = "\x1b[2J\x1b]0;pwned\x07[bold red]X[/]"
MATH = "$\\frac{1}{0}$"
EV = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10.0, "dur": 5.0,
      "args": {"Input type": ["float", "float"], "Input Dims": [[8, 16], [16, 4]], "Concrete Inputs": ["", ""]}}
KERNEL = {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 11.0, "dur": 2.0,
          "args": {"correlation": 5}}
LAUNCH = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10.5, "dur": 1.0,
          "args": {"correlation": 5}}
TR = ("trace", "t.json", "--device", "h100", "--json", "o.json")
NO_WARNING = "'RuntimeWarning' not in err and 'OverflowError' not in err"


def trace_text(*events: Any) -> str:
    return json.dumps({"schemaVersion": 1, "traceEvents": list(events)})


def with_args(ev: dict[str, Any], **args: Any) -> dict[str, Any]:
    e = copy.deepcopy(ev)
    e["args"].update(args)
    return e


def raw_number(text: str, field: str, value: str) -> str:
    """``text`` with the JSON number of ``"field": <number>`` replaced by ``value`` verbatim (beyond what
    json.dumps writes: 400-digit integers, 1e400)."""
    import re

    return re.sub(rf'("{re.escape(field)}": )[-0-9.e+]+', lambda m: m.group(1) + value, text, count=1)


def rng(name: str, text: str, names: str = "t.json", argv: tuple[str, ...] = TR, path: str = "t.json",
        expect: str = "error", check: str = NO_WARNING) -> Case:
    return Case(f"ranges/{name}", "number-ranges", argv[0], argv, files={path: text}, names=names,
                outputs=("o.json",), expect=expect, check=check)


BASE = trace_text(EV, LAUNCH, KERNEL)
W = {"schema": "roofline.workload/1", "title": "w", "ops": [
    {"name": "a", "kind": "matmul", "flops": 1e9, "bytes_read": 1e6, "bytes_written": 1e6}]}
AN = ("analyze", "w.json", "--device", "h100", "--json", "o.json")


def wtext(**op: Any) -> str:
    d = copy.deepcopy(W)
    d["ops"][0].update(op)
    return json.dumps(d)


NUMBER_RANGES = [
    rng("trace-correlation-2e70", trace_text(EV, with_args(LAUNCH, correlation=2e70), with_args(KERNEL, correlation=2e70)),
        expect="ok"),
    rng("trace-correlation-71-digits", raw_number(BASE, "correlation", "2" + "0" * 70), "correlation"),
    rng("trace-sequence-71-digits", trace_text(with_args(EV, **{"Sequence number": 10**70})), "Sequence number"),
    rng("trace-correlation-minus-2e19", raw_number(BASE, "correlation", "-20000000000000000000"), "correlation"),
    rng("trace-duration-400-digits", raw_number(BASE, "dur", "9" * 400), "dur"),
    rng("trace-duration-1e400", raw_number(BASE, "dur", "1e400"), "dur"),
    rng("trace-duration-1e308", raw_number(BASE, "dur", "1e308"), "dur"),
    rng("trace-ts-1e308", raw_number(BASE, "ts", "1e308"), "ts"),
    rng("trace-ts-400-digits", raw_number(BASE, "ts", "-" + "9" * 400), "ts"),
    rng("trace-duration-negative", raw_number(BASE, "dur", "-5"), expect="ok"),
    rng("trace-dims-30-of-1e12", trace_text(with_args(EV, **{"Input Dims": [[10**12] * 30, [16, 4]]}), EV),
        expect="ok", check=NO_WARNING + " and 'trace:' in out"),
    rng("trace-comms-nelems-1e30", trace_text(EV, {**EV, "name": "record_param_comms", "args": {
        "Collective name": "allreduce", "In msg nelems": 10**30, "Out msg nelems": 10**30, "Group size": 8,
        "dtype": "Float"}}), expect="ok"),
    rng("trace-pid-400-digits", raw_number(trace_text({**EV, "pid": 7}), "pid", "7" * 400), expect="ok"),
    rng("workload-duration-inf", raw_number(wtext(measured_seconds=1.0), "measured_seconds", "1e400"),
        "measured_seconds", argv=AN, path="w.json"),
    rng("workload-duration-1e308", wtext(measured_seconds=1e308), "measured_seconds", argv=AN, path="w.json"),
    rng("workload-flops-1e30-count-1e9", wtext(flops=1e30, count=10**9), "", argv=AN, path="w.json",
        expect="ok"),
    rng("workload-count-2e70", wtext(count=2e70), "count", argv=AN, path="w.json"),
    rng("workload-csv-count-empty", "name,kind,flops,bytes_read,bytes_written,count\na,matmul,1e9,1e6,1e6,\n",
        "count", argv=("analyze", "w.csv", "--device", "h100"), path="w.csv"),
    rng("workload-csv-count-1e400", "name,kind,flops,bytes_read,bytes_written,count\na,matmul,1e9,1e6,1e6,1e400\n",
        "count", argv=("analyze", "w.csv", "--device", "h100"), path="w.csv"),
    rng("workload-csv-flops-1e308-count-huge",
        "name,kind,flops,bytes_read,bytes_written,count\na,matmul,1e308,1e6,1e6,1000000000\n", "flops",
        argv=("analyze", "w.csv", "--device", "h100"), path="w.csv"),
    rng("compare-all-zero-workload", wtext(flops=0, bytes_read=0, bytes_written=0), "",
        argv=("compare", "w.json", "--devices", "h100,a100"), path="w.json", expect="ok",
        check=NO_WARNING + " and 'ZeroDivisionError' not in err"),
    rng("compare-all-zero-json", wtext(flops=0, bytes_read=0, bytes_written=0), "",
        argv=("compare", "w.json", "--devices", "h100,a100", "--json", "o.json"), path="w.json", expect="ok",
        check=NO_WARNING),
]

DEVICE3: dict[str, Any] = {
    "schema": "roofline.device/3", "name": "cpu", "kind": "cpu",
    "compute": [{"unit": "vector", "precision": "fp32", "flops": 1e11,
                 "provenance": {"kind": "user", "source": "hand", "method": "m"}},
                {"unit": "matrix", "precision": "fp32", "flops": 2e11,
                 "provenance": {"kind": "user", "source": "hand", "method": "m"}}],
    "memory": [{"level": "L1", "bandwidth": 1e12, "capacity": 32768, "provenance": {"kind": "user", "source": "h"}},
               {"level": "DRAM", "bandwidth": 2e10, "capacity": 1e10, "provenance": {"kind": "user", "source": "h"}}],
    "bench": {"version": 3, "machine": "(this machine)", "isa": ["avx2"], "native": ["fp32"],
              "spec": [{"unit": "vector", "precision": "fp32", "flops": 1.2e11, "derivation": "4 x 3 GHz"}],
              "audit": [{"kernel": "gemm", "unit": "matrix", "precision": "fp32", "roof": "fp32 matrix", "level": "L1",
                         "flops": 1e9, "bytes": 1e6, "seconds": 0.01, "spread": [0.009, 0.011], "efficiency": 0.5,
                         "binding": "compute", "raised": ""}],
              "threads": 2,
              "sweep": {"working_set_bytes": [4096, 1e6, 1e8], "bytes_counting": "STREAM",
                        "curves": [{"kernel": "triad", "threads": 2, "median": [9e11, 1e11, 2e10]}]},
              "ert": {"flops_per_element": [1, 2], "intensity": [0.125, 0.25], "flops": [2e9, 4e9],
                      "spread": [[1.9e9, 2.1e9], [3.9e9, 4.1e9]], "working_set_bytes": 1e8, "threads": 2,
                      "model_flops": [2.5e9, 5e9], "note": "n"},
              "caches": [{"level": "L1", "size": 32768, "instances": 2, "capacity": 65536}]},
    "calibration": {"schema": "roofline.calibration/1", "device": "cpu", "machine": "", "framework": "torch-eager",
                    "date": "2026-01-01", "suite": "quick", "overhead": 5e-6,
                    "curves": [{"kind": "matmul", "term": "compute", "e_max": 0.8, "half": 1e7, "slope": 1.0,
                                "size_range": [1e5, 1e10], "points": 3, "error": 0.1}],
                    "points": [{"name": "mm 64", "kind": "matmul", "term": "compute", "precision": "fp32",
                                "shape": "64x64", "size": 5e5, "roof_seconds": 1e-6, "bound_seconds": 1e-6,
                                "measured": 2e-6, "spread": [1.9e-6, 2.1e-6], "forecast": 2e-6, "op": "aten::mm"}],
                    "failed": []},
}


def cache(**edits: Any) -> str:
    """The cached device with ``edits``: paths ('bench__native') -> value (list indices as numbers), measured
    on this machine (its fingerprint, so the cache is taken)."""
    from roofline.bench.machine import fingerprint

    d = copy.deepcopy(DEVICE3)
    d["bench"]["machine"] = fingerprint()
    for path, value in edits.items():
        keys = path.split("__")
        node: Any = d
        for k in keys[:-1]:
            node = node[int(k)] if k.isdigit() else node[k]
        last = keys[-1]
        node[int(last) if last.isdigit() else last] = value
    return json.dumps(d)


def env_cli(argv: tuple[str, ...]) -> str:
    return ("import os\nos.environ['ROOFLINE_CACHE_DIR'] = '{tmp}/cache'\nfrom roofline import cli\n"
            f"rc = cli.main({list(argv)!r})\nif rc:\n    raise SystemExit(rc)\n")


CLEAN = "'\\x1b' not in out and '\\x07' not in out"


def cached(name: str, argv: tuple[str, ...], text: str, expect: str = "ok", names: str = "",
           check: str = CLEAN, extra: dict[str, Any] | None = None, cls: str = "hostile-caches") -> Case:
    return Case(f"caches/{name}", cls, argv[0], code=env_cli(argv),
                files={"cache/local-device.json": text, **(extra or {})}, expect=expect, names=names, check=check)


SHOW = ("bench", "--show")
CAL = ("calibrate", "--show")
SYSTEM = {"schema": "roofline.system/1", "name": "s", "device": "h100", "devices_per_node": 8, "nodes": 1,
          "tiers": [{"name": "nv", "scope": "node", "bandwidth": "450 GB/s", "latency": "1 us"}]}
CONFIG = {"model_type": "llama", "hidden_size": 512, "intermediate_size": 1024, "num_attention_heads": 8,
          "num_hidden_layers": 2, "num_key_value_heads": 8, "vocab_size": 1000, "max_position_embeddings": 2048}

HOSTILE_CACHES = [
    cached("show-native-precision", SHOW, cache(bench__native=[ESC])),
    cached("show-spec-derivation", SHOW, cache(bench__spec__0__derivation=ESC)),
    cached("show-spec-precision", SHOW, cache(bench__spec__0__precision=ESC)),
    cached("show-audit-kernel", SHOW, cache(bench__audit__0__kernel=ESC)),
    cached("show-audit-roof-raised", SHOW, cache(bench__audit__0__roof=ESC, bench__audit__0__raised=ESC)),
    cached("show-provenance-source", SHOW, cache(compute__0__provenance__source=ESC)),
    cached("show-provenance-method", SHOW, cache(compute__0__provenance__method=ESC)),
    cached("show-device-name", SHOW, cache(name=ESC)),
    cached("show-cache-level", SHOW, cache(bench__caches__0__level=ESC)),
    cached("show-isa", SHOW, cache(bench__isa=[ESC])),
    cached("show-machine-other", SHOW, cache(bench__machine=ESC), expect="error", names="another machine",
           check="True"),
    cached("show-ert-note", SHOW, cache(bench__ert__note=ESC)),
    cached("show-sweep-kernel-plot", (*SHOW, "--plot", "plots"), cache(bench__sweep__curves__0__kernel=ESC + MATH),
           check=CLEAN),
    cached("show-plot-memory-capacity-1e308", (*SHOW, "--plot", "plots"), cache(memory__1__capacity=1e308),
           expect="error", names="capacity", check=NO_WARNING),
    cached("show-plot-caches-size-1e308", (*SHOW, "--plot", "plots"),
           cache(bench__caches__0__size=1e308, bench__caches__0__capacity=1e308), expect="error",
           names="bench.caches[0].size", check=NO_WARNING),
    cached("show-plot-sweep-1e308", (*SHOW, "--plot", "plots"), cache(bench__sweep__working_set_bytes=[4096, 1e6, 1e308]),
           expect="error", names="working_set_bytes[2]", check=NO_WARNING),
    cached("show-plot-ert-working-set-1e308", (*SHOW, "--plot", "plots"), cache(bench__ert__working_set_bytes=1e308),
           expect="error", names="bench.ert.working_set_bytes", check=NO_WARNING),
    cached("calibrate-show-curve-kind", CAL, cache(calibration__curves__0__kind=ESC)),
    cached("calibrate-show-point-name", CAL, cache(calibration__points__0__name=ESC)),
    cached("calibrate-show-failed", CAL, cache(calibration__failed=[ESC])),
    cached("calibrate-show-curve-half-huge", CAL, cache(calibration__curves__0__half=1e308), expect="error",
           names="half", cls="number-ranges"),
    cached("calibrate-show-curve-slope-huge", CAL, cache(calibration__curves__0__slope=1e308), expect="error",
           names="slope", cls="number-ranges"),
    cached("calibrate-show-device-suite", CAL, cache(calibration__device=ESC, calibration__suite=ESC,
                                                     calibration__framework=ESC)),
    cached("calibrate-show-point-term-shape", CAL, cache(calibration__points__0__shape=ESC)),
    cached("analyze-local-device-name", ("analyze", "w.json", "--device", "local"), cache(name=ESC),
           extra={"w.json": json.dumps(W)}),
    cached("analyze-local-html", ("analyze", "w.json", "--device", "local", "--html", "o.html"),
           cache(name=ESC, memory__1__level="<script>x</script>"), extra={"w.json": json.dumps(W)},
           check=CLEAN + " and '<script>x' not in Path(tmp, 'o.html').read_text()"),
    cached("device-local-show", ("device", "local"), cache(name=ESC, compute__0__provenance__source=ESC)),
    cached("analyze-calibration-file-curve-kind", ("analyze", "w.json", "--device", "h100", "--calibration",
           "c.json", "--forecast"), cache(), expect="error", names="c.json", check="True",
           extra={"w.json": json.dumps(W), "c.json": json.dumps({**DEVICE3["calibration"], "device": ESC})}),
    Case("caches/plan-system-name", "hostile-caches", "plan",
         ("plan", "llama-2-7b", "--system", "s.json", "--serve"), files={"s.json": json.dumps({**SYSTEM, "name": ESC})},
         expect="ok", check=CLEAN),
    Case("caches/plan-system-tier-name", "hostile-caches", "plan",
         ("plan", "llama-2-7b", "--system", "s.json", "--serve"),
         files={"s.json": json.dumps({**SYSTEM, "tiers": [{**SYSTEM["tiers"][0], "name": ESC}]})}, expect="ok",
         check=CLEAN),
    Case("caches/plan-model-name", "hostile-caches", "plan",
         ("plan", "config.json", "--system", "dgx-h100", "--serve", "--short-list", "1", "--disagg", "off"),
         files={"config.json": json.dumps({**CONFIG, "_name_or_path": ESC})}, expect="ok", check=CLEAN),
    Case("caches/plan-model-name-chart", "hostile-caches", "plan",
         ("plan", "config.json", "--system", "dgx-h100", "--serve", "--short-list", "1", "--disagg", "off", "-o",
          "p.svg"),
         files={"config.json": json.dumps({**CONFIG, "_name_or_path": ESC + MATH})}, expect="ok",
         check=CLEAN + " and '\\x1b' not in Path(tmp, 'p.svg').read_text()"),
    Case("caches/llm-system-name", "hostile-caches", "llm",
         ("llm", "llama-2-7b", "--system", "s.json", "--tp", "8"), files={"s.json": json.dumps({**SYSTEM, "name": ESC})},
         expect="ok", check=CLEAN),
    Case("caches/plan-system-device-name", "hostile-caches", "plan",
         ("plan", "llama-2-7b", "--system", "s.json", "--serve"),
         files={"s.json": json.dumps({**SYSTEM, "device": {**{k: v for k, v in DEVICE3.items() if k not in (
             "bench", "calibration")}, "name": ESC, "kind": "gpu", "memory": [{"level": "HBM", "bandwidth": 3e12,
                                                                             "capacity": 8e10}]}})},
         expect="ok", check=CLEAN),
]

CASES = NUMBER_RANGES + HOSTILE_CACHES
